//! Test helpers: a cart-pole-like and a quadruped bundle, and a way to rewrite a bundle's
//! metadata as an attacker or a broken tool would.
#![allow(dead_code)]
use std::collections::HashMap;
use std::path::Path;

use clawrl_bundle::*;
use clawrl_robot::{ActionMap, ObsSource, OnboardLayout};
use safetensors::SafeTensors;

pub const CARTPOLE_MJCF: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
pub const QUADRUPED_MJCF: &str = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9";

/// Deterministic awkward numbers: random bit patterns (finite ones), subnormals, -0.0, values
/// with no short decimal form.
pub fn awkward_f64(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let specials = [
        -0.0,
        5e-324,
        f64::MIN_POSITIVE,
        1.0 / 3.0,
        0.1 + 0.2,
        1e300,
        f64::MAX,
    ];
    (0..n)
        .map(|i| {
            if i < specials.len() {
                return specials[i];
            }
            loop {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = f64::from_bits(s ^ (s >> 29));
                if v.is_finite() {
                    return v;
                }
            }
        })
        .collect()
}

pub fn awkward_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let specials = [
        -0.0,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        1.0 / 3.0,
        f32::MAX,
    ];
    (0..n)
        .map(|i| {
            if i < specials.len() {
                return specials[i];
            }
            loop {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = f32::from_bits((s >> 32) as u32);
                if v.is_finite() {
                    return v;
                }
            }
        })
        .collect()
}

/// An MLP's parameters, `sizes[0] -> sizes[1] -> ...`, named like candle's `actor.{i}.weight`.
pub fn mlp(sizes: &[usize], seed: u64) -> Vec<Tensor> {
    let mut out = Vec::new();
    for (i, w) in sizes.windows(2).enumerate() {
        let (inp, outp) = (w[0], w[1]);
        let seed = seed + i as u64;
        out.push(Tensor::new(
            format!("actor.{}.weight", 2 * i),
            vec![outp, inp],
            awkward_f32(outp * inp, seed),
        ));
        out.push(Tensor::new(
            format!("actor.{}.bias", 2 * i),
            vec![outp],
            awkward_f32(outp, seed + 100),
        ));
    }
    out
}

fn manifest(
    layout: OnboardLayout,
    mjcf: &str,
    history: usize,
    names: Vec<String>,
    map: Option<ActionMap>,
    tensors: &[Tensor],
) -> Manifest {
    let dim = layout.dim() * (history + 1);
    Manifest {
        format_version: 1,
        robot: RobotInfo {
            model: layout.robot.clone(),
            mjcf_sha256: mjcf.into(),
            description: None,
        },
        observation: ObservationSpec {
            source: ObsSource::Onboard,
            layout,
            history,
            normalizer: NormalizerStats {
                mean: awkward_f64(dim, 1),
                var: awkward_f64(dim, 2).into_iter().map(f64::abs).collect(),
                epsilon: 1e-8,
                clip: 5.0,
            },
            command_ranges: None,
        },
        action: ActionSpec {
            names,
            map,
            max_target_speed: None,
        },
        control_rate_hz: 50.0,
        physics_rate_hz: Some(250.0),
        network: NetworkSpec {
            kind: "mlp".into(),
            policy_config: "hidden = [32]\nactivation = \"elu\"\n".into(),
            parameters: tensors.iter().map(|t| t.data.len()).sum(),
        },
        provenance: Provenance {
            train_config: "[ppo]\nlr = 3e-4\n# \"quoted\" \\ and ünïcode\n".into(),
            seed: u64::MAX,
            source_revision: "4f4d91d".into(),
            teacher_sha256: "ab".repeat(32),
            clawrl_version: "0.1.0".into(),
            created_unix_s: 1_800_000_000,
            evaluation: Some(Evaluation {
                episodes: 64,
                mean_return: 0.1 + 0.2,
                fall_rate: 1.0 / 64.0,
                teacher_mean_return: Some(-1e-310),
                teacher_fall_rate: None,
            }),
        },
    }
}

/// Cart-pole: 3 positions, 4 past frames, one action, no servos.
pub fn cartpole() -> (Manifest, Vec<Tensor>) {
    let tensors = mlp(&[15, 8, 1], 10);
    let m = manifest(
        OnboardLayout::cartpole(),
        CARTPOLE_MJCF,
        4,
        vec!["force".into()],
        None,
        &tensors,
    );
    (m, tensors)
}

/// The claw-foot quadruped: 60 onboard entries, 2 past frames, 16 servos.
pub fn quadruped() -> (Manifest, Vec<Tensor>) {
    let tensors = mlp(&[180, 32, 16], 20);
    let map = ActionMap::quadruped(0.3, 0.6, 5.0);
    let m = manifest(
        OnboardLayout::quadruped(),
        QUADRUPED_MJCF,
        2,
        map.joint_names.clone(),
        Some(map),
        &tensors,
    );
    (m, tensors)
}

/// Rewrites a bundle file's metadata (tensors unchanged), as another tool would.
pub fn rewrite_metadata(path: &Path, edit: impl FnOnce(&mut HashMap<String, String>)) {
    let bytes = std::fs::read(path).unwrap();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let mut meta = header.metadata().clone().unwrap_or_default();
    edit(&mut meta);
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let out = safetensors::serialize(st.tensors(), Some(meta)).unwrap();
    std::fs::write(path, out).unwrap();
}

/// Bit patterns of a manifest's floats that `PartialEq` would not tell apart (-0.0 vs 0.0).
pub fn normalizer_bits(m: &Manifest) -> Vec<u64> {
    let n = &m.observation.normalizer;
    n.mean
        .iter()
        .chain(&n.var)
        .chain([&n.epsilon])
        .map(|v| v.to_bits())
        .collect()
}

pub fn tensor_bits(t: &[Tensor]) -> Vec<(String, Vec<usize>, Vec<u32>)> {
    t.iter()
        .map(|t| {
            (
                t.name.clone(),
                t.shape.clone(),
                t.data.iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect()
}
