//! The policy bundle from the trainer's side: export -> load gives bit-identical actions, and
//! only an onboard policy may leave the desktop.
mod common;

use clawrl_bundle::Trust;
use clawrl_trainer::Runner;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};
use clawrl_trainer::export::{ExportOptions, export};
use clawrl_trainer::source::load_bundle;
use clawrl_trainer::source::load_source;
use rand::{RngExt, SeedableRng};

/// A cart-pole run folder of `config` trained for a few iterations.
fn run(config: &str, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let mut o = vec!["run.max_iterations=3"];
    o.extend_from_slice(extra);
    let cfg = common::config(config, &o);
    let dir = common::tmp(name);
    Runner::new(cfg, &dir).unwrap().train(&mut NoHooks).unwrap();
    dir
}

#[test]
fn export_then_load_gives_bit_identical_actions() {
    let teacher = run("cartpole_ppo.toml", "export-teacher", &[]);
    let t = format!(
        "distill.teacher={}",
        teacher.join("policy.safetensors").display()
    );
    for kind in ["gaussian_mlp", "temporal_conv"] {
        let k = format!("policy.kind={kind}");
        let student = run(
            "cartpole_distill.toml",
            &format!("export-{kind}"),
            &[&t, &k, "policy.conv_channels=4"],
        );
        let path = student.join("student.clawrl");
        export(
            &load_source(&student).unwrap(),
            &path,
            &ExportOptions::default(),
        )
        .unwrap();
        let (bundle, loaded, cfg) = load_bundle(&path, &Trust::default()).unwrap();
        let original = load_source(&student).unwrap();
        assert_eq!(bundle.manifest.observation.history, 3);
        assert_eq!(loaded.config(), original.policy.config());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let obs: Vec<f32> = (0..12 * 64).map(|_| rng.random_range(-3.0..3.0)).collect();
        let a = original.policy.deterministic(&obs).unwrap();
        let b = loaded.deterministic(&obs).unwrap();
        assert_eq!(
            a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{kind}"
        );
        // The same episodes, step for step.
        let opts = EvalOptions {
            episodes: 4,
            num_envs: 2,
            threads: 1,
            gait_seconds: 0.0,
            ..Default::default()
        };
        let ra = evaluate(&cfg, original.policy.as_ref(), &opts).unwrap();
        let rb = evaluate(&cfg, loaded.as_ref(), &opts).unwrap();
        let returns = |r: &clawrl_trainer::eval::EvalReport| {
            r.episodes.iter().map(|e| e.ret).collect::<Vec<_>>()
        };
        assert_eq!(returns(&ra), returns(&rb), "{kind}");
    }
}

#[test]
fn a_privileged_policy_is_not_exported() {
    let teacher = run("cartpole_ppo.toml", "export-privileged", &[]);
    let path = teacher.join("t.clawrl");
    let e = export(
        &load_source(&teacher).unwrap(),
        &path,
        &ExportOptions::default(),
    )
    .err()
    .unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("privileged") && msg.contains("onboard"),
        "{msg}"
    );
    assert!(!path.exists());
}

#[test]
fn the_manifest_describes_the_quadruped_student() {
    // An untrained quadruped student: the manifest alone must describe its inputs and outputs.
    let cfg = common::config(
        "quadruped_distill.toml",
        &[
            "run.max_iterations=1",
            "run.num_envs=2",
            "distill.ppo.num_steps_per_env=2",
        ],
    );
    let spec = clawrl_trainer::task::spec(&cfg).unwrap();
    let pcfg = clawrl_trainer::runner::policy_config(&cfg, &spec);
    let policy = clawrl_policy::Registry::default()
        .build(&pcfg, &mut rand_chacha::ChaCha8Rng::seed_from_u64(0))
        .unwrap();
    let parts = clawrl_policy::bundle::to_bundle_parts(policy.as_ref()).unwrap();
    let m = clawrl_trainer::export::manifest(&cfg, policy.as_ref(), &parts, None).unwrap();
    assert_eq!(m.robot.model, "claw_quadruped");
    assert_eq!(m.control_rate_hz, 50.0);
    // env.physics_dt = 0.004 s, decimation 5: 250 Hz physics under the 50 Hz policy.
    let physics = m.physics_rate_hz.expect("the physics rate is recorded");
    assert!((physics - 250.0).abs() < 1e-9, "{physics}");
    m.check(&parts.tensors).unwrap();
    assert_eq!(m.observation.layout.dim(), 60);
    // The task's command ranges, for the runtime to clip live commands to.
    assert_eq!(
        m.observation.command_ranges,
        Some([[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]])
    );
    // The current frame and the config's history (15 past frames in the shipped student).
    assert_eq!(m.observation.stacked_dim(), 60 * (pcfg.history + 1));
    let map = m.action.map.as_ref().unwrap();
    assert_eq!(map.joint_names.len(), 16);
    assert_eq!(map.scale[0], 0.3);
    assert_eq!(map.scale[12], 0.6);
    assert_eq!(
        m.robot.mjcf_sha256,
        clawrl_bundle::file_sha256(&spec.model_file).unwrap()
    );
    // The robot description beside the MJCF, resolved: servos by name in the action order.
    let d = m
        .robot
        .description
        .as_ref()
        .expect("the bundle carries its robot");
    assert_eq!(d.name, "claw_quadruped");
    assert_eq!(d.servo_names(), map.joint_names);
    assert_eq!(d.stand_pose(), map.default_pose);
    assert_eq!(d.servo("FR_hip_abd").unwrap().direction, -1);
}

#[test]
fn onnx_export_matches_candle_within_1e_5() {
    use tract_onnx::prelude::*;
    let teacher = run("cartpole_ppo.toml", "onnx-teacher", &[]);
    let t = format!(
        "distill.teacher={}",
        teacher.join("policy.safetensors").display()
    );
    let student = run("cartpole_distill.toml", "onnx-student", &[&t]);
    let src = load_source(&student).unwrap();
    let p = clawrl_trainer::export::onnx_policy(src.policy.as_ref()).unwrap();
    let bytes = clawrl_onnx::to_onnx_bytes(&p).unwrap();
    let plan = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let n = 50;
    // Observations inside and far outside the normaliser's clip range.
    let obs: Vec<f32> = (0..n * 12)
        .map(|i| rng.random_range(-3.0..3.0) * if i % 7 == 0 { 1e3 } else { 1.0 })
        .collect();
    let out = plan
        .run(tvec!(Tensor::from_shape(&[n, 12], &obs).unwrap().into()))
        .unwrap();
    let onnx: Vec<f32> = out[0]
        .to_plain_array_view::<f32>()
        .unwrap()
        .iter()
        .copied()
        .collect();
    let candle = src.policy.deterministic(&obs).unwrap();
    assert_eq!(onnx.len(), candle.len());
    let worst = onnx
        .iter()
        .zip(&candle)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "max |onnx - candle| = {worst}");
    // The convolution kind is refused with a reason, not exported wrongly.
    let mut cfg = src.policy.config().clone();
    cfg.kind = "temporal_conv".into();
    cfg.conv_channels = 2;
    let conv = clawrl_policy::Registry::default()
        .build(&cfg, &mut rand_chacha::ChaCha8Rng::seed_from_u64(0))
        .unwrap();
    let e = clawrl_trainer::export::onnx_policy(conv.as_ref())
        .err()
        .unwrap();
    assert!(e.to_string().contains("temporal_conv"), "{e}");
}
