//! The robot runtime computes exactly what the simulator and the trainer compute, bit for bit:
//!
//! - its observation builder (driven by nothing but a bundle's manifest) against the
//!   simulator's onboard observation, stacked and normalised the trainer's way
//!   (`clawrl_robot::History` + the policy crate's `Normalizer`);
//! - its student (plain candle tensors loaded from a bundle) against the policy crate's
//!   `Policy::deterministic`, for every kind the runtime runs.
//!
//! Each check also runs a deliberately wrong copy of the reference (a history that ignores
//! episode starts, another clip, frames in the wrong order) and requires it to be caught, so a
//! comparison that could never fail does not pass silently.
use candle_core::{Device, Tensor};
use clawrl_bundle::{
    ActionSpec, Bundle, FORMAT_VERSION, Manifest, NormalizerStats, ObservationSpec, Provenance,
    RobotInfo, Trust,
};
use clawrl_policy::bundle::{BundleParts, to_bundle_parts};
use clawrl_policy::{Activation, Normalizer, ObsSource, Policy, PolicyConfig, Registry, Rng};
use clawrl_robot::{History, OnboardSensors};
use clawrl_runtime::inference::{SUPPORTED_KINDS, Student};
use clawrl_runtime::observation::{FRAME_DIM, ObservationBuilder};
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, EnvSpec, VecEnv};
use rand::{RngExt, SeedableRng};

/// Past frames the student reads (the shipped student's).
const HISTORY: usize = 2;
const STACKED: usize = FRAME_DIM * (HISTORY + 1);

/// Index and values of the first entry whose bits differ, if any.
fn first_mismatch(a: &[f32], b: &[f32]) -> Option<(usize, f32, f32)> {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x.to_bits() != y.to_bits())
        .map(|(i, (x, y))| (i, *x, *y))
}

#[track_caller]
fn assert_bits_eq(what: &str, got: &[f32], want: &[f32]) {
    if let Some((i, g, w)) = first_mismatch(got, want) {
        panic!(
            "{what}: entry {i} is {g:e} ({:#010x}), expected {w:e} ({:#010x})",
            g.to_bits(),
            w.to_bits()
        );
    }
}

fn uniform(rng: &mut Rng, lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// Non-trivial normaliser statistics for `n` stacked values.
fn stats(rng: &mut Rng, n: usize, clip: f32) -> NormalizerStats {
    NormalizerStats {
        mean: uniform(rng, -0.5, 0.5, n),
        var: uniform(rng, 0.02, 2.0, n),
        epsilon: clawrl_policy::normalizer::EPS,
        clip,
    }
}

/// The policy crate's normaliser holding `s`, frozen.
fn normalizer(s: &NormalizerStats) -> Normalizer {
    Normalizer {
        mean: s.mean.clone(),
        var: s.var.clone(),
        count: 1.0,
        clip: s.clip,
        training: false,
    }
}

/// A bundle manifest as `clawrl export` writes it (trainer/src/export.rs), for the quadruped
/// task's spec.
fn manifest(spec: &EnvSpec, history: usize, parts: &BundleParts) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        robot: RobotInfo {
            model: spec.onboard_layout.robot.clone(),
            mjcf_sha256: clawrl_bundle::file_sha256(&spec.model_file).unwrap(),
            description: None,
        },
        observation: ObservationSpec {
            source: ObsSource::Onboard,
            layout: spec.onboard_layout.clone(),
            history,
            normalizer: parts.normalizer.clone(),
            command_ranges: None,
        },
        action: ActionSpec {
            names: spec.action_names.clone(),
            map: spec.action_map.clone(),
            max_target_speed: None,
        },
        control_rate_hz: 1.0 / spec.control_dt,
        physics_rate_hz: Some(1.0 / spec.physics_dt),
        network: parts.network.clone(),
        provenance: Provenance {
            train_config: String::new(),
            seed: 0,
            source_revision: "runtime_parity".into(),
            teacher_sha256: String::new(),
            clawrl_version: env!("CARGO_PKG_VERSION").into(),
            created_unix_s: 0,
            evaluation: None,
        },
    }
}

/// The flat task with sensor noise off (so the onboard observation is a function of the raw
/// sensors alone) and short episodes (so 200 steps cross several resets).
fn noiseless_task() -> TaskConfig {
    let overrides: Vec<String> = [
        "noise.gyro=0.0",
        "noise.gravity=0.0",
        "noise.accelerometer=0.0",
        "noise.joint_pos=0.0",
        "noise.joint_vel=0.0",
        "env.episode_seconds=1.5",
    ]
    .map(String::from)
    .to_vec();
    TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &overrides,
    )
    .unwrap()
}

#[test]
fn observation_builder_matches_the_simulator_and_the_trainer_bit_for_bit() {
    const STEPS: usize = 200;
    let cfg = noiseless_task();
    let clip_action = cfg.env.action_clip as f32;
    let env = QuadrupedEnv::new(&cfg).unwrap();
    let spec = env.spec().clone();
    let mut envs = VecEnv::new(vec![env], 1, 7);
    let mut rng = Rng::seed_from_u64(11);

    // A manifest whose normaliser shifts, scales and clips (clip 2: the joint velocities and
    // some others exceed it).
    let obs_stats = stats(&mut rng, STACKED, 2.0);
    let parts = BundleParts {
        network: clawrl_bundle::NetworkSpec {
            kind: "gaussian_mlp".into(),
            policy_config: String::new(),
            parameters: 0,
        },
        normalizer: obs_stats.clone(),
        tensors: Vec::new(),
    };
    let m = manifest(&spec, HISTORY, &parts);
    let mut builder = ObservationBuilder::from_manifest(&m).unwrap();
    assert_eq!(builder.stacked_dim(), STACKED);

    // The trainer's route (trainer/src/algorithms/model.rs, ActorInput): the batch's onboard
    // frame into a History restarted by `new_episode`, then the policy's normaliser.
    let norm = normalizer(&obs_stats);
    let mut history = History::new(1, FRAME_DIM, HISTORY);
    // Wrong copies the comparison must catch.
    let mut stale_history = History::new(1, FRAME_DIM, HISTORY);
    let other_clip = normalizer(&NormalizerStats {
        clip: obs_stats.clip + 0.5,
        ..obs_stats.clone()
    });
    let (mut stale_caught, mut clip_caught) = (0, 0);

    let (mut episodes, mut clipped, mut inside) = (0, 0, 0);
    let mut sent = [0.0f32; NUM_SERVOS];
    envs.reset();
    for step in 0..=STEPS {
        let batch = envs.batch();
        let env = envs.envs().next().unwrap();
        let new_episode = batch.new_episode[0];
        episodes += usize::from(new_episode);

        // What the robot has: raw sensors, its last action, the command.
        let last_action = env.last_action();
        let want_action = if new_episode {
            [0.0; NUM_SERVOS]
        } else {
            sent.map(|a| a.clamp(-clip_action, clip_action))
        };
        assert_bits_eq("env.last_action()", &last_action, &want_action);
        if new_episode {
            builder.restart();
        }
        let got = builder
            .build(&env.onboard_sensors(), &last_action, env.command())
            .to_vec();
        assert_bits_eq(
            &format!("step {step}: raw frame vs the simulator's onboard observation"),
            builder.frame(),
            &batch.onboard,
        );

        history.push(&batch.onboard, &batch.new_episode);
        let want = norm.normalize(history.as_slice());
        assert_bits_eq(
            &format!("step {step}: normalised stacked observation vs the trainer's"),
            &got,
            &want,
        );
        assert_bits_eq("normalised()", builder.normalised(), &want);

        stale_history.push(&batch.onboard, &[step == 0]);
        stale_caught +=
            usize::from(first_mismatch(&got, &norm.normalize(stale_history.as_slice())).is_some());
        clip_caught +=
            usize::from(first_mismatch(&got, &other_clip.normalize(history.as_slice())).is_some());
        clipped += want.iter().filter(|z| z.abs() == obs_stats.clip).count();
        inside += want.iter().filter(|z| z.abs() < obs_stats.clip).count();

        if step == STEPS {
            break;
        }
        // Wild actions, some beyond the action clip: the robot falls or times out.
        sent = std::array::from_fn(|_| rng.random_range(-6.0f32..6.0));
        envs.step(&sent).unwrap();
    }
    assert!(episodes >= 3, "only {episodes} episodes in {STEPS} steps");
    assert!(
        clipped > 0 && inside > 0,
        "the clip must bind on some entries and not all ({clipped} clipped, {inside} inside)"
    );
    assert!(
        stale_caught > 0,
        "a history that ignores episode starts went unnoticed"
    );
    assert!(clip_caught > 0, "another clip went unnoticed");
}

/// A student config of `kind` over the quadruped's stacked frame.
fn student_config(kind: &str, activation: Activation) -> PolicyConfig {
    PolicyConfig {
        kind: kind.into(),
        obs_dim: STACKED,
        action_dim: NUM_SERVOS,
        obs_source: ObsSource::Onboard,
        hidden: vec![48, 32],
        activation,
        init_std: 0.5,
        obs_clip: 3.0,
        history: HISTORY,
        conv_channels: if kind == "temporal_conv" { 8 } else { 0 },
    }
}

/// Random weights and biases (the registry's biases start at zero and its output layer near
/// zero, which would hide errors), and non-trivial normaliser statistics.
fn randomise(policy: &mut dyn Policy, rng: &mut Rng) {
    for (name, var) in policy.params() {
        let dims = var.dims().to_vec();
        let n: usize = dims.iter().product();
        // Linear weights are [in, out], the convolution's [channels, frame, kernel].
        let fan_in = match dims.as_slice() {
            [i, _] => *i,
            [_, d, k] => d * k,
            _ => 1,
        };
        let scale = if name.ends_with("bias") {
            0.3
        } else {
            1.5 / (fan_in as f64).sqrt()
        };
        let values: Vec<f32> = uniform(rng, -scale, scale, n)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        var.set(&Tensor::from_vec(values, dims, &Device::Cpu).unwrap())
            .unwrap();
    }
    let s = stats(rng, STACKED, 3.0);
    let n = policy.normalizer_mut();
    n.mean = s.mean;
    n.var = s.var;
    n.clip = s.clip;
    n.training = false;
}

/// Random readings of every sensor, in and beyond their usual ranges.
fn random_sensors(rng: &mut Rng) -> OnboardSensors {
    let mut q: [f64; 4] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
    let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    q.iter_mut().for_each(|v| *v /= norm);
    OnboardSensors {
        gyro: std::array::from_fn(|_| rng.random_range(-4.0..4.0)),
        quat: q,
        acc: std::array::from_fn(|_| rng.random_range(-20.0..20.0)),
        joint_pos: std::array::from_fn(|i| {
            clawrl_robot::quadruped::DEFAULT_POSE[i] + rng.random_range(-1.0..1.0)
        }),
        joint_vel: std::array::from_fn(|_| rng.random_range(-15.0..15.0)),
    }
}

/// Writes the policy as a bundle and reads it back, as `clawrl export` and the runtime do.
fn round_trip(policy: &dyn Policy, spec: &EnvSpec, dir: &std::path::Path) -> Bundle {
    let parts = to_bundle_parts(policy).unwrap();
    let m = manifest(spec, policy.config().history, &parts);
    let path = dir.join(format!(
        "{}-{:?}.clawrl",
        policy.config().kind,
        policy.config().activation
    ));
    clawrl_bundle::write(&path, &m, &parts.tensors, None).unwrap();
    clawrl_bundle::read(&path, &Trust::default()).unwrap()
}

#[test]
fn student_matches_the_policy_crate_bit_for_bit_on_every_kind() {
    const OBSERVATIONS: usize = 50;
    let spec = QuadrupedEnv::new(&TaskConfig::flat().unwrap())
        .unwrap()
        .spec()
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    let mut rng = Rng::seed_from_u64(3);
    let mut covered = Vec::new();
    for kind in SUPPORTED_KINDS {
        for activation in [Activation::Elu, Activation::Relu, Activation::Tanh] {
            let what = format!("{kind} ({activation:?})");
            let cfg = student_config(kind, activation);
            let mut policy = registry.build(&cfg, &mut rng).unwrap();
            randomise(policy.as_mut(), &mut rng);
            let bundle = round_trip(policy.as_ref(), &spec, dir.path());
            let s = &bundle.manifest.observation.normalizer;
            assert_eq!(
                (&s.mean, &s.var),
                (&policy.normalizer().mean, &policy.normalizer().var)
            );
            let student = Student::from_bundle(&bundle).unwrap();
            let a = student.action_dim();
            let mut out = vec![0.0f32; a];
            let mut reversed_caught = false;

            // 1. Raw stacked observations, normalised by the policy crate's normaliser.
            for i in 0..OBSERVATIONS {
                let raw: Vec<f32> = uniform(&mut rng, -4.0, 4.0, STACKED)
                    .into_iter()
                    .map(|v| v as f32)
                    .collect();
                let want = policy.deterministic(&raw).unwrap();
                let z = policy.normalizer().normalize(&raw);
                student.act(&z, &mut out).unwrap();
                assert_bits_eq(&format!("{what}, observation {i}"), &out, &want);
                // Wrong copy: the frames oldest first.
                let reversed: Vec<f32> = z.chunks(FRAME_DIM).rev().flatten().copied().collect();
                student.act(&reversed, &mut out).unwrap();
                reversed_caught |= first_mismatch(&out, &want).is_some();
            }
            assert!(
                reversed_caught,
                "{what}: frames in the wrong order went unnoticed"
            );

            // 2. End to end: sensor readings through the runtime's builder (from the bundle's
            //    manifest) and student, against the layout + History + Policy::deterministic.
            let mut builder = ObservationBuilder::from_manifest(&bundle.manifest).unwrap();
            let layout = &bundle.manifest.observation.layout;
            let mut history = History::new(1, FRAME_DIM, HISTORY);
            for i in 0..OBSERVATIONS {
                let sensors = random_sensors(&mut rng);
                let last: Vec<f32> = uniform(&mut rng, -2.0, 2.0, NUM_SERVOS)
                    .into_iter()
                    .map(|v| v as f32)
                    .collect();
                let command = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
                let restart = i % 20 == 0;
                if restart {
                    builder.restart();
                }
                let z = builder.build(&sensors, &last, command);
                student.act(z, &mut out).unwrap();

                let mut values = [0.0f64; FRAME_DIM];
                layout.quadruped_values(&sensors, &last, command, &mut values);
                let frame = values.map(|v| v as f32);
                history.push(&frame, &[restart]);
                let want = policy.deterministic(history.as_slice()).unwrap();
                assert_bits_eq(&format!("{what}, sensors {i}"), &out, &want);
            }
            covered.push(what);
        }
    }
    assert_eq!(covered.len(), SUPPORTED_KINDS.len() * 3);
}
