//! Test bundles for the runtime's tests: a small, valid quadruped student written with
//! `clawrl_bundle::write`, no trainer needed. (`cli/tests/flash.rs` includes this file too.)
#![allow(dead_code)]
use std::path::{Path, PathBuf};

use clawrl_bundle::{
    ActionSpec, Evaluation, FORMAT_VERSION, Manifest, NetworkSpec, NormalizerStats,
    ObservationSpec, Provenance, RobotInfo, SigningKey, Tensor,
};
use clawrl_robot::{ActionMap, ObsSource, OnboardLayout, quadruped};

/// Hidden units of the test network.
pub const HIDDEN: usize = 8;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Deterministic values in [-0.5, 0.5) from a seed (an LCG; no rand needed).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

/// A valid quadruped manifest and its tensors: a `gaussian_mlp` with one hidden layer of
/// [`HIDDEN`] units over the onboard observation (no history). `seed` changes the weights, the
/// normaliser and the provenance, so two seeds give two different bundles.
pub fn quadruped_parts(seed: u64) -> (Manifest, Vec<Tensor>) {
    let layout = OnboardLayout::quadruped();
    let (obs, act) = (layout.dim(), quadruped::NUM_SERVOS);
    let tensors = vec![
        Tensor::new(
            "actor.0.weight",
            vec![obs, HIDDEN],
            values(seed, obs * HIDDEN),
        ),
        Tensor::new("actor.0.bias", vec![HIDDEN], values(seed + 1, HIDDEN)),
        Tensor::new(
            "actor.1.weight",
            vec![HIDDEN, act],
            values(seed + 2, HIDDEN * act),
        ),
        Tensor::new("actor.1.bias", vec![act], values(seed + 3, act)),
        Tensor::new("actor.log_std", vec![act], vec![-1.0; act]),
    ];
    let policy_config = format!(
        "kind = \"gaussian_mlp\"\nobs_dim = {obs}\naction_dim = {act}\nobs_source = \"onboard\"\n\
         hidden = [{HIDDEN}]\nactivation = \"elu\"\ninit_std = 0.5\nobs_clip = 5.0\nhistory = 0\n\
         conv_channels = 0\n"
    );
    let mjcf = clawrl_bundle::file_sha256(repo().join("sim/models/quadruped.xml"))
        .unwrap_or_else(|_| "0".repeat(64));
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        robot: RobotInfo {
            model: quadruped::MODEL_NAME.into(),
            mjcf_sha256: mjcf,
            description: None,
        },
        observation: ObservationSpec {
            source: ObsSource::Onboard,
            layout,
            history: 0,
            normalizer: NormalizerStats {
                mean: values(seed + 4, obs)
                    .iter()
                    .map(|&v| f64::from(v) * 0.1)
                    .collect(),
                var: values(seed + 5, obs)
                    .iter()
                    .map(|&v| 1.0 + f64::from(v))
                    .collect(),
                epsilon: 1e-8,
                clip: 5.0,
            },
            command_ranges: None,
        },
        action: ActionSpec {
            names: quadruped::servo_names(),
            map: Some(ActionMap::quadruped(0.3, 0.6, 5.0)),
            max_target_speed: None,
        },
        control_rate_hz: 50.0,
        physics_rate_hz: Some(250.0),
        network: NetworkSpec {
            kind: "gaussian_mlp".into(),
            policy_config,
            parameters: tensors.iter().map(|t| t.data.len()).sum(),
        },
        provenance: Provenance {
            train_config: "[run]\nname = \"test\"\n".into(),
            seed,
            source_revision: format!("test-rev-{seed}"),
            teacher_sha256: String::new(),
            clawrl_version: "0.1.0".into(),
            created_unix_s: 1_700_000_000 + seed,
            evaluation: Some(Evaluation {
                episodes: 10,
                mean_return: 1.5 + seed as f64,
                fall_rate: 0.1,
                teacher_mean_return: None,
                teacher_fall_rate: None,
            }),
        },
    };
    (manifest, tensors)
}

/// Writes a bundle and returns its path.
pub fn write_bundle(
    path: &Path,
    manifest: &Manifest,
    tensors: &[Tensor],
    key: Option<&SigningKey>,
) -> PathBuf {
    clawrl_bundle::write(path, manifest, tensors, key).unwrap();
    path.to_path_buf()
}

/// An unsigned quadruped bundle `dir/quadruped-SEED.clawrl`.
pub fn quadruped_bundle(dir: &Path, seed: u64) -> PathBuf {
    let (m, t) = quadruped_parts(seed);
    write_bundle(&dir.join(format!("quadruped-{seed}.clawrl")), &m, &t, None)
}

/// A quadruped bundle `dir/NAME` signed by `key`.
pub fn signed_quadruped_bundle(dir: &Path, name: &str, seed: u64, key: &SigningKey) -> PathBuf {
    let (m, t) = quadruped_parts(seed);
    write_bundle(&dir.join(name), &m, &t, Some(key))
}

/// The shipped runtime config's text for a copy in another folder: its relative path to the
/// robot description made absolute (the copy's own relative paths are the test's business).
pub fn shipped_config_text() -> String {
    let text = std::fs::read_to_string(repo().join("configs/runtime/robot.toml")).unwrap();
    let rel = "\"../../robots/claw_quadruped/robot.toml\"";
    assert!(
        text.contains(rel),
        "the shipped config names no description"
    );
    let abs = repo().join("robots/claw_quadruped/robot.toml");
    text.replace(rel, &format!("{:?}", abs.display().to_string()))
}
