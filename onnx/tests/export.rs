//! Exported graphs run in tract-onnx and match a plain-Rust forward pass.

use clawrl_onnx::{Activation, Dense, MlpPolicy, OnnxError, to_onnx_bytes, write_onnx};
use tract_onnx::prelude::*;

/// SplitMix64: reproducible numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_policy(
    rng: &mut Rng,
    sizes: &[usize],
    activation: Activation,
    action_dim: usize,
    squash: bool,
) -> MlpPolicy {
    let obs_dim = sizes[0];
    let layers = sizes
        .windows(2)
        .map(|w| {
            let (inputs, outputs) = (w[0], w[1]);
            let scale = 1.5 / (inputs as f64).sqrt();
            Dense {
                weight: (0..inputs * outputs)
                    .map(|_| rng.uniform(-scale, scale) as f32)
                    .collect(),
                bias: (0..outputs)
                    .map(|_| rng.uniform(-0.5, 0.5) as f32)
                    .collect(),
                inputs,
                outputs,
            }
        })
        .collect();
    MlpPolicy {
        obs_dim,
        mean: (0..obs_dim).map(|_| rng.uniform(-3.0, 3.0)).collect(),
        var: (0..obs_dim).map(|_| rng.uniform(0.01, 4.0)).collect(),
        epsilon: 1e-8,
        clip: rng.uniform(2.0, 10.0) as f32,
        layers,
        activation,
        action_dim,
        squash,
    }
}

/// A batch of `n` observations: most within a few standard deviations of the mean, some far
/// outside the clip range (both signs), and exact means.
fn observations(rng: &mut Rng, p: &MlpPolicy, n: usize) -> Vec<f32> {
    let mut obs = Vec::with_capacity(n * p.obs_dim);
    for row in 0..n {
        for j in 0..p.obs_dim {
            let std = p.var[j].sqrt();
            let k = match row % 4 {
                0 => rng.uniform(-3.0, 3.0),
                1 => rng.uniform(-1e3, 1e3),
                2 => {
                    if rng.uniform(0.0, 1.0) < 0.5 {
                        -1e6
                    } else {
                        1e6
                    }
                }
                _ => 0.0,
            };
            obs.push((p.mean[j] + k * std) as f32);
        }
    }
    obs
}

/// The reference: f64 normalisation cast to f32, then f32 layers.
fn reference(p: &MlpPolicy, obs: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for x in obs.chunks(p.obs_dim) {
        let mut h: Vec<f32> = (0..p.obs_dim)
            .map(|j| {
                let z = (f64::from(x[j]) - p.mean[j]) / (p.var[j] + p.epsilon).sqrt();
                (z as f32).clamp(-p.clip, p.clip)
            })
            .collect();
        for (i, l) in p.layers.iter().enumerate() {
            h = (0..l.outputs)
                .map(|o| {
                    let row = &l.weight[o * l.inputs..(o + 1) * l.inputs];
                    let y = l.bias[o] + row.iter().zip(&h).map(|(w, v)| w * v).sum::<f32>();
                    if i + 1 == p.layers.len() {
                        y
                    } else {
                        match p.activation {
                            Activation::Elu => {
                                if y > 0.0 {
                                    y
                                } else {
                                    y.exp_m1()
                                }
                            }
                            Activation::Relu => y.max(0.0),
                            Activation::Tanh => y.tanh(),
                        }
                    }
                })
                .collect();
        }
        out.extend(
            h[..p.action_dim]
                .iter()
                .map(|&a| if p.squash { a.tanh() } else { a }),
        );
    }
    out
}

fn run_tract(bytes: &[u8], obs: &[f32], n: usize, obs_dim: usize) -> (Vec<usize>, Vec<f32>) {
    let plan = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .expect("tract loads the model")
        .into_optimized()
        .expect("tract optimises the model")
        .into_runnable()
        .expect("tract plans the model");
    let input = Tensor::from_shape(&[n, obs_dim], obs).unwrap();
    let out = plan.run(tvec!(input.into())).expect("tract runs the model");
    let view = out[0].to_plain_array_view::<f32>().unwrap();
    (view.shape().to_vec(), view.iter().copied().collect())
}

/// Exports, runs in tract for two batch sizes, compares with the reference.
fn check(seed: u64, sizes: &[usize], activation: Activation, action_dim: usize, squash: bool) {
    let mut rng = Rng(seed);
    let p = random_policy(&mut rng, sizes, activation, action_dim, squash);
    let bytes = to_onnx_bytes(&p).unwrap();
    for n in [1, 37] {
        let obs = observations(&mut rng, &p, n);
        let want = reference(&p, &obs);
        let (shape, got) = run_tract(&bytes, &obs, n, p.obs_dim);
        assert_eq!(shape, [n, action_dim]);
        let max_diff = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            max_diff <= 1e-5,
            "{sizes:?} {activation:?} batch {n}: max |diff| {max_diff}"
        );
    }
}

#[test]
fn elu_student_matches_reference() {
    check(1, &[48, 256, 128, 12], Activation::Elu, 12, false);
}

#[test]
fn relu_sac_policy_with_mean_and_log_std_head_matches_reference() {
    check(2, &[30, 64, 64, 2 * 6], Activation::Relu, 6, true);
}

#[test]
fn tanh_policy_matches_reference() {
    check(3, &[7, 16, 3], Activation::Tanh, 3, false);
}

#[test]
fn elu_squashed_with_wide_head_matches_reference() {
    check(4, &[20, 32, 2 * 5], Activation::Elu, 5, true);
}

#[test]
fn single_linear_layer_matches_reference() {
    check(5, &[5, 2 * 3], Activation::Relu, 3, false);
}

#[test]
fn graph_has_named_io_dynamic_batch_and_opset_13() {
    use onnx_rs::ast::{Dimension, OpType};
    let p = random_policy(&mut Rng(6), &[4, 8, 2 * 2], Activation::Elu, 2, true);
    let bytes = to_onnx_bytes(&p).unwrap();
    let model = onnx_rs::parse(&bytes).unwrap();
    assert!(
        model
            .opset_import
            .iter()
            .any(|o| o.domain.is_empty() && o.version >= 13)
    );
    let graph = model.graph.as_ref().unwrap();
    fn dims<'a>(v: &onnx_rs::ast::ValueInfo<'a>) -> Vec<Dimension<'a>> {
        v.tensor_shape()
            .unwrap()
            .dim
            .iter()
            .map(|d| d.value.clone())
            .collect()
    }
    assert_eq!(graph.non_init_inputs().len(), 1);
    assert_eq!(graph.input[0].name, "obs");
    assert_eq!(
        dims(&graph.input[0]),
        [Dimension::Param("N"), Dimension::Value(4)]
    );
    assert_eq!(graph.output[0].name, "actions");
    assert_eq!(
        dims(&graph.output[0]),
        [Dimension::Param("N"), Dimension::Value(2)]
    );
    let ops: Vec<_> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(
        ops,
        ["Sub", "Mul", "Clip", "Gemm", "Elu", "Gemm", "Slice", "Tanh"]
    );
    assert_eq!(graph.node.last().unwrap().output, ["actions"]);
    assert_eq!(graph.node[4].op_type, OpType::Elu);
    for name in [
        "obs_mean",
        "obs_inv_std",
        "layers.0.weight",
        "layers.1.bias",
    ] {
        assert!(
            graph.get_initializer(name).is_some(),
            "no initializer {name}"
        );
    }
    assert_eq!(
        graph.get_initializer("layers.0.weight").unwrap().dims(),
        [8, 4]
    );
}

#[test]
fn write_onnx_writes_the_same_bytes_and_leaves_no_temp_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("clawrl-onnx-write");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = random_policy(&mut Rng(7), &[6, 8, 3], Activation::Tanh, 3, false);
    let path = dir.join("policy.onnx");
    write_onnx(&path, &p).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), to_onnx_bytes(&p).unwrap());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["policy.onnx"]);
    // A bad policy leaves the existing file alone.
    let mut bad = p.clone();
    bad.layers[0].bias.pop();
    assert!(write_onnx(&path, &bad).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), to_onnx_bytes(&p).unwrap());
}

fn refused(p: &MlpPolicy) -> String {
    match to_onnx_bytes(p) {
        Err(e @ OnnxError::Invalid(_)) => e.to_string(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn refuses_mismatched_layer_sizes() {
    let good = random_policy(&mut Rng(8), &[6, 8, 4], Activation::Relu, 4, false);
    let mut p = good.clone();
    p.layers[1].inputs = 7;
    p.layers[1].weight.truncate(7 * 4);
    assert!(
        refused(&p).contains("layer 1 takes 7 inputs but receives 8"),
        "{}",
        refused(&p)
    );
    let mut p = good.clone();
    p.layers[0].weight.pop();
    assert!(
        refused(&p).contains("layer 0 weight has 47 values"),
        "{}",
        refused(&p)
    );
    let mut p = good.clone();
    p.action_dim = 5;
    assert!(
        refused(&p).contains("fewer than action_dim 5"),
        "{}",
        refused(&p)
    );
    let mut p = good.clone();
    p.mean.pop();
    assert!(refused(&p).contains("5 means"), "{}", refused(&p));
    let mut p = good;
    p.layers.clear();
    assert!(refused(&p).contains("no layers"));
}

#[test]
fn refuses_non_finite_values() {
    let good = random_policy(&mut Rng(9), &[6, 8, 4], Activation::Elu, 4, false);
    let mut p = good.clone();
    p.layers[1].weight[3] = f32::NAN;
    assert!(
        refused(&p).contains("layer 1 weight[3] = NaN is not finite"),
        "{}",
        refused(&p)
    );
    let mut p = good.clone();
    p.layers[0].bias[2] = f32::INFINITY;
    assert!(refused(&p).contains("layer 0 bias[2]"), "{}", refused(&p));
    let mut p = good.clone();
    p.mean[1] = f64::NAN;
    assert!(refused(&p).contains("mean[1]"), "{}", refused(&p));
    let mut p = good.clone();
    p.var[0] = -1.0;
    assert!(
        refused(&p).contains("var[0] is negative"),
        "{}",
        refused(&p)
    );
    let mut p = good.clone();
    (p.var[0], p.epsilon) = (0.0, 0.0);
    assert!(
        refused(&p).contains("1/sqrt(var + epsilon)[0]"),
        "{}",
        refused(&p)
    );
    let mut p = good;
    p.clip = f32::NAN;
    assert!(refused(&p).contains("clip"), "{}", refused(&p));
}
