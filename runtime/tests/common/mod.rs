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

/// Overrides of the shipped config for a run on the virtual board at `port` in a test's folder
/// `dir`: short start-up, stop and lowering (0.5 s each), no real-time priority or pinned CPU,
/// the telemetry and the A/B root under `dir`.
pub fn quick_overrides(port: &str, dir: &Path) -> Vec<String> {
    vec![
        format!("serial.port={port:?}"),
        // A loaded 2-core CI machine runs the board and the tests side by side.
        "serial.answer_timeout_ms=100".into(),
        "control.realtime_priority=0".into(),
        "control.cpu=-1".into(),
        "safety.stand_s=0.5".into(),
        "safety.fade_s=0.5".into(),
        "safety.halt_s=0.5".into(),
        "safety.lower_s=0.5".into(),
        format!("telemetry.dir={:?}", dir.join("log").display().to_string()),
        format!("install.root={:?}", dir.join("root").display().to_string()),
    ]
}

/// A synthetic student of the shipped shape (its manifest changed by `edit`), marked as
/// trained on `cfg`'s robot and installed into the A/B root under `dir`: the bundle `run` takes.
pub fn installed_bundle_with(
    cfg: &clawrl_runtime::config::RuntimeConfig,
    dir: &Path,
    edit: impl FnOnce(&mut Manifest),
) -> PathBuf {
    use clawrl_runtime::{install, synthetic};
    let b = dir.join("student.clawrl");
    let (mut m, t) =
        synthetic::quadruped_parts(&synthetic::SHIPPED_HIDDEN, synthetic::SHIPPED_HISTORY, 7);
    m.robot.mjcf_sha256 = cfg.robot.mjcf_sha256.clone();
    edit(&mut m);
    clawrl_bundle::write(&b, &m, &t, None).unwrap();
    let root = dir.join("root");
    install::install(
        &root,
        &b,
        &clawrl_bundle::Trust::default(),
        &cfg.robot_spec(),
    )
    .unwrap();
    install::current_bundle(&root).unwrap()
}

/// [`installed_bundle_with`] the manifest as made.
pub fn installed_bundle(cfg: &clawrl_runtime::config::RuntimeConfig, dir: &Path) -> PathBuf {
    installed_bundle_with(cfg, dir, |_| {})
}

/// Writes the shipped config with a `[command]` section of `base` lines, each case's line in
/// place of the line with its key, and checks that loading names the file, the key and why.
pub fn assert_command_keys_named(base: &[&str], cases: &[(&str, &str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("robot.toml");
    for (line, key, why) in cases {
        let mut section = base.to_vec();
        let k = line.split(' ').next().unwrap();
        section.retain(|l| !l.starts_with(&format!("{k} ")));
        section.push(line);
        let text = format!(
            "{}\n[command]\n{}\n",
            shipped_config_text(),
            section.join("\n")
        );
        std::fs::write(&path, text).unwrap();
        let e = clawrl_runtime::config::RuntimeConfig::load(&path, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&path.display().to_string()) && e.contains(key) && e.contains(why),
            "{line}: {e}"
        );
    }
}
