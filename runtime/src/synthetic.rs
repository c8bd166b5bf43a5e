//! A synthetic student of the shipped shape, for the self-test and the benchmark on a robot
//! computer that has no trained bundle yet (and CI's aarch64 run under qemu). Its weights are
//! deterministic pseudo-random numbers: it does not walk, it only exercises the same code and
//! the same arithmetic as a trained student of that size.
use std::path::Path;

use clawrl_bundle::{
    ActionSpec, FORMAT_VERSION, Manifest, NetworkSpec, NormalizerStats, ObservationSpec,
    Provenance, RobotInfo, Tensor,
};
use clawrl_robot::{ActionMap, ObsSource, OnboardLayout, quadruped};

/// The shipped student (configs/run/quadruped_distill.toml): an MLP of 128 x 128 over the
/// onboard frame with 15 past frames.
pub const SHIPPED_HIDDEN: [usize; 2] = [128, 128];
pub const SHIPPED_HISTORY: usize = 15;

/// Deterministic values in [-scale, scale) (an LCG: no random crate on the robot).
pub fn values(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Manifest and tensors of a `gaussian_mlp` student for the quadruped.
pub fn quadruped_parts(hidden: &[usize], history: usize, seed: u64) -> (Manifest, Vec<Tensor>) {
    let layout = OnboardLayout::quadruped();
    let (obs, act) = (layout.dim() * (history + 1), quadruped::NUM_SERVOS);
    let mut dims = vec![obs];
    dims.extend(hidden);
    dims.push(act);
    let mut tensors = Vec::new();
    for (i, w) in dims.windows(2).enumerate() {
        let scale = 1.0 / (w[0] as f32).sqrt();
        let s = seed + 10 * i as u64;
        tensors.push(Tensor::new(
            format!("actor.{i}.weight"),
            vec![w[0], w[1]],
            values(s, w[0] * w[1], scale),
        ));
        tensors.push(Tensor::new(
            format!("actor.{i}.bias"),
            vec![w[1]],
            values(s + 1, w[1], 0.1),
        ));
    }
    tensors.push(Tensor::new("actor.log_std", vec![act], vec![-1.0; act]));
    let hidden_toml = hidden
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let policy_config = format!(
        "kind = \"gaussian_mlp\"\nobs_dim = {obs}\naction_dim = {act}\nobs_source = \"onboard\"\n\
         hidden = [{hidden_toml}]\nactivation = \"elu\"\ninit_std = 0.5\nobs_clip = 5.0\n\
         history = {history}\nconv_channels = 0\n"
    );
    let parameters = tensors.iter().map(|t| t.data.len()).sum();
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        robot: RobotInfo {
            model: quadruped::MODEL_NAME.into(),
            mjcf_sha256: "0".repeat(64),
            description: None,
        },
        observation: ObservationSpec {
            source: ObsSource::Onboard,
            layout,
            history,
            normalizer: NormalizerStats {
                mean: values(seed + 100, obs, 0.1)
                    .into_iter()
                    .map(f64::from)
                    .collect(),
                var: values(seed + 101, obs, 0.5)
                    .into_iter()
                    .map(|v| 1.0 + f64::from(v))
                    .collect(),
                epsilon: 1e-8,
                clip: 5.0,
            },
            command_ranges: None,
        },
        action: ActionSpec {
            names: quadruped::servo_names(),
            map: Some(ActionMap::quadruped(0.3, 0.6, 5.0)),
            // Not trained: no rate limit to hold the robot to.
            max_target_speed: None,
        },
        control_rate_hz: 50.0,
        physics_rate_hz: None,
        network: NetworkSpec {
            kind: "gaussian_mlp".into(),
            policy_config,
            parameters,
        },
        provenance: Provenance {
            train_config: String::new(),
            seed,
            source_revision: "synthetic".into(),
            teacher_sha256: String::new(),
            clawrl_version: env!("CARGO_PKG_VERSION").into(),
            created_unix_s: 0,
            evaluation: None,
        },
    };
    (manifest, tensors)
}

/// Writes a synthetic student of the shipped shape to `path`.
pub fn write_shipped_shape(path: &Path, seed: u64) -> Result<(), clawrl_bundle::BundleError> {
    let (m, t) = quadruped_parts(&SHIPPED_HIDDEN, SHIPPED_HISTORY, seed);
    clawrl_bundle::write(path, &m, &t, None).map(|_| ())
}

/// The bundle's MLP layers in order, `(actor.{i}.weight [in, out], actor.{i}.bias)`, for the
/// plain-Rust references of the self-test and the benchmark.
pub fn mlp_layers(bundle: &clawrl_bundle::Bundle) -> Vec<(&Tensor, &Tensor)> {
    (0..)
        .map_while(|i| {
            Some((
                bundle.tensor(&format!("actor.{i}.weight"))?,
                bundle.tensor(&format!("actor.{i}.bias"))?,
            ))
        })
        .collect()
}
