//! The claw-foot quadruped task: model, standing, falling, seeds, randomisation, bad input.
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig, servo_names};
use clawrl_sim::{Env, ObsSource, SimError, VecEnv};
use mujoco_rs::mujoco_c::_mjtObjBase::*;

fn task(file: &str, overrides: &[&str]) -> TaskConfig {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task").join(file),
        &overrides,
    )
    .unwrap()
}

/// Flat ground without pushes: nothing but the robot's own servos decides whether it stands.
fn calm() -> TaskConfig {
    task("quadruped_flat.toml", &["randomization.push_velocity=0.0"])
}

/// A fixed 25 degree slope with the slipperiest floor the randomisation draws.
fn steep(claw: f32) -> (TaskConfig, [f32; NUM_SERVOS]) {
    let cfg = task(
        "quadruped_slopes.toml",
        &[
            "terrain.slope_probability=1.0",
            "terrain.slope_degrees=[25.0, 25.0]",
            "randomization.friction=[0.4, 0.4]",
            "randomization.push_velocity=0.0",
            // Claw physics alone: claws at their goal from the first step, no settled start.
            "env.max_target_speed=0.0",
            "randomization.settled_start_probability=0.0",
        ],
    );
    let mut action = [0.0f32; NUM_SERVOS];
    action[12..].fill(claw);
    (cfg, action)
}

#[test]
fn model_has_the_expected_joints_actuators_and_sensors() {
    let env = QuadrupedEnv::new(&calm()).unwrap();
    let m = &*env.robot().model;
    let f = m.ffi();
    assert_eq!(
        (f.nq, f.nv, f.nu),
        (7 + 16, 6 + 16, 20),
        "free base + 16 servo joints; 16 servos + 4 grips"
    );
    for name in servo_names() {
        let j = m
            .name_to_id(mjOBJ_JOINT, &name)
            .unwrap_or_else(|| panic!("joint {name}"));
        let [lo, hi] = m.jnt_range()[j];
        assert!(lo < hi, "{name} has limits");
        assert!(
            m.name_to_id(mjOBJ_ACTUATOR, &name).is_some(),
            "servo {name}"
        );
        for s in ["pos", "vel"] {
            assert!(
                m.name_to_id(mjOBJ_SENSOR, &format!("{name}_{s}")).is_some(),
                "{name}_{s}"
            );
        }
    }
    for leg in ["FL", "FR", "RL", "RR"] {
        assert!(
            m.name_to_id(mjOBJ_ACTUATOR, &format!("{leg}_grip"))
                .is_some()
        );
        assert!(
            m.name_to_id(mjOBJ_SENSOR, &format!("{leg}_contact"))
                .is_some()
        );
    }
    for s in [
        "imu_quat",
        "imu_gyro",
        "imu_acc",
        "base_linvel",
        "torso_contact",
    ] {
        assert!(m.name_to_id(mjOBJ_SENSOR, s).is_some(), "sensor {s}");
    }
    assert!(m.name_to_id(mjOBJ_KEY, "stand").is_some());
    // Every servo's torque is capped (30 kg-cm class: 2.94 N m for the legs).
    for a in 0..12 {
        assert_eq!(m.actuator_forcerange()[a], [-2.94, 2.94]);
    }
    let spec = env.spec();
    assert_eq!(spec.action_dim, 16);
    assert_eq!(spec.obs_names.len(), spec.privileged_dim);
    assert!(spec.onboard_dim < spec.privileged_dim);
    assert!(
        (spec.control_dt - 0.02).abs() < 1e-12,
        "50 Hz control over 500 Hz physics"
    );
}

#[test]
fn stands_on_its_servos_from_the_default_pose() {
    let mut env = QuadrupedEnv::new(&calm()).unwrap();
    env.reset(7);
    let zero = [0.0f32; NUM_SERVOS];
    for _ in 0..250 {
        let t = env.step(&zero).unwrap();
        assert!(!t.terminated, "fell while standing");
    }
    let tel = env.telemetry();
    assert!(
        tel.base_pos[2] > 0.16,
        "torso sagged to {:.3} m",
        tel.base_pos[2]
    );
    assert!(
        tel.base_pos[0].hypot(tel.base_pos[1]) < 0.05,
        "drifted {:?}",
        tel.base_pos
    );
    assert!(
        tel.foot_contact.iter().all(|c| *c),
        "all four feet on the ground"
    );
}

#[test]
fn falls_and_terminates_with_servos_off() {
    let mut env = QuadrupedEnv::new(&calm()).unwrap();
    env.reset(7);
    env.disable_servos();
    let zero = [0.0f32; NUM_SERVOS];
    let fell_at = (0..250).find(|_| env.step(&zero).unwrap().terminated);
    assert!(fell_at.is_some(), "a limp robot must collapse within 5 s");
    assert!(
        env.episode_log()
            .terms
            .iter()
            .any(|(n, v)| *n == "termination" && *v < 0.0)
    );
}

fn trace(cfg: &TaskConfig, seed: u64) -> Vec<f32> {
    let mut env = QuadrupedEnv::new(cfg).unwrap();
    let mut out = env.reset(seed).privileged;
    for t in 0..100 {
        let a: Vec<f32> = (0..NUM_SERVOS)
            .map(|i| ((t * 7 + i * 3) as f32 * 0.1).sin())
            .collect();
        let step = env.step(&a).unwrap();
        out.extend(step.observation.privileged);
        out.push(step.reward);
    }
    out
}

#[test]
fn a_seed_reproduces_an_episode_exactly() {
    let cfg = task("quadruped_slopes.toml", &[]);
    assert_eq!(trace(&cfg, 11), trace(&cfg, 11));
    assert_ne!(trace(&cfg, 11), trace(&cfg, 12));
}

#[test]
fn vectorised_quadrupeds_match_across_thread_counts() {
    let cfg = task("quadruped_flat.toml", &[]);
    let run = |threads| {
        let mut v = VecEnv::new(QuadrupedEnv::many(&cfg, 4).unwrap(), threads, 5);
        v.reset();
        let mut out = Vec::new();
        for t in 0..40 {
            let a: Vec<f32> = (0..4 * NUM_SERVOS)
                .map(|i| ((t + i) as f32 * 0.3).sin())
                .collect();
            out.extend_from_slice(&v.step(&a).unwrap().privileged);
        }
        out
    };
    assert_eq!(run(1), run(2));
    assert_eq!(run(1), run(4));
}

#[test]
fn randomised_parameters_stay_inside_their_ranges() {
    let cfg = task("quadruped_slopes.toml", &[]);
    let d = &cfg.randomization;
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    let within = |x: f64, [lo, hi]: [f64; 2]| x >= lo && x <= hi;
    let (mut sloped, mut flat) = (0, 0);
    for seed in 0..200 {
        env.reset(seed);
        let p = env.params().clone();
        assert!(within(p.friction, d.friction));
        assert!(within(p.link_mass_scale, d.link_mass_scale));
        assert!(within(p.torso_added_mass, d.torso_added_mass));
        assert!(within(p.servo_strength, d.servo_strength));
        assert!(
            p.latency_substeps >= d.latency_substeps[0]
                && p.latency_substeps <= d.latency_substeps[1]
        );
        assert!(p.joint_offset.iter().all(|o| o.abs() <= d.joint_offset));
        assert!(
            p.com_offset
                .iter()
                .zip(d.com_offset)
                .all(|(o, r)| o.abs() <= r)
        );
        if p.slope > 0.0 {
            sloped += 1;
            let deg = p.slope.to_degrees();
            assert!(
                deg >= cfg.terrain.slope_degrees[0] - 1e-9
                    && deg <= cfg.terrain.slope_degrees[1] + 1e-9
            );
        } else {
            flat += 1;
        }
        // What was drawn is what the physics uses.
        let m = env.data().model();
        let torso = env.robot().layout.torso_body;
        let base = &env.robot().model;
        assert_eq!(
            m.geom_friction()[env.robot().layout.floor_geom][0],
            p.friction
        );
        let expected = (base.body_mass()[torso] * p.link_mass_scale + p.torso_added_mass).max(0.1);
        assert!((m.body_mass()[torso] - expected).abs() < 1e-12);
        let a = env.robot().layout.servo_actuator[0];
        assert!((m.actuator_forcerange()[a][1] - 2.94 * p.servo_strength).abs() < 1e-12);
    }
    // slope_probability = 0.8: both kinds of episode occur.
    assert!(sloped > 120 && flat > 15, "sloped {sloped}, flat {flat}");
}

#[test]
fn bad_actions_are_refused_and_never_reach_the_physics() {
    let mut env = QuadrupedEnv::new(&calm()).unwrap();
    assert!(matches!(
        env.step(&[0.0; NUM_SERVOS]),
        Err(SimError::NotReset)
    ));
    env.reset(3);
    let time = env.data().time();
    let qpos = env.data().qpos().to_vec();
    assert!(matches!(
        env.step(&[0.0; 15]),
        Err(SimError::ActionLength {
            expected: 16,
            got: 15
        })
    ));
    let mut nan = [0.0f32; NUM_SERVOS];
    nan[4] = f32::NAN;
    assert!(matches!(
        env.step(&nan),
        Err(SimError::NonFiniteAction { index: 4, .. })
    ));
    nan[4] = f32::NEG_INFINITY;
    assert!(matches!(
        env.step(&nan),
        Err(SimError::NonFiniteAction { index: 4, .. })
    ));
    assert_eq!(env.data().time(), time);
    assert_eq!(env.data().qpos(), &qpos[..]);
}

#[test]
fn huge_actions_are_held_to_the_joint_limits() {
    let mut env = QuadrupedEnv::new(&calm()).unwrap();
    env.reset(3);
    let layout = env.robot().layout.clone();
    for sign in [1.0f32, -1.0] {
        env.step(&[sign * 1e6; NUM_SERVOS]).unwrap();
        let ctrl = env.data().ctrl();
        for (i, &a) in layout.servo_actuator.iter().enumerate() {
            let [lo, hi] = layout.servo_range[i];
            assert!(
                ctrl[a] >= lo && ctrl[a] <= hi,
                "servo {i} target {} outside [{lo}, {hi}]",
                ctrl[a]
            );
        }
    }
}

#[test]
fn a_model_that_fails_to_load_names_the_file_and_the_reason() {
    let dir = std::env::temp_dir().join(format!("clawrl-bad-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.xml");
    std::fs::write(
        &bad,
        "<mujoco><worldbody><body><geom type=\"sphere\"/></body></worldbody>",
    )
    .unwrap();
    let cfg = task(
        "quadruped_flat.toml",
        &[&format!("env.model=\"{}\"", bad.display())],
    );
    let err = QuadrupedEnv::new(&cfg)
        .err()
        .expect("a truncated file must not load");
    let msg = err.to_string();
    assert!(matches!(err, SimError::ModelLoad { .. }));
    assert!(msg.contains("broken.xml"), "{msg}");
    assert!(
        msg.to_lowercase().contains("xml") || msg.contains("error"),
        "MuJoCo's reason: {msg}"
    );

    // A model that loads but that no robot description names: the error says how to write one.
    let other = clawrl_sim::models_dir().join("cartpole.xml");
    let cfg = task(
        "quadruped_flat.toml",
        &[&format!("env.model=\"{}\"", other.display())],
    );
    let msg = QuadrupedEnv::new(&cfg).err().unwrap().to_string();
    assert!(
        msg.contains("cartpole.xml") && msg.contains("clawrl robot new --mjcf"),
        "{msg}"
    );
}

#[test]
fn a_config_error_names_the_file_and_the_key() {
    let path = clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml");
    let e = TaskConfig::load(&path, &["randomization.friction=[0.9, 0.4]".into()]).unwrap_err();
    assert_eq!(e.key, "randomization.friction");
    assert!(e.to_string().contains("quadruped_flat.toml"), "{e}");
    let e =
        TaskConfig::load(&path, &["randomization.latency_substeps=[0, 50]".into()]).unwrap_err();
    assert_eq!(e.key, "randomization.latency_substeps");
}

#[test]
fn observation_layouts_are_consistent() {
    let mut env = QuadrupedEnv::new(&calm()).unwrap();
    let obs = env.reset(1);
    let spec = env.spec().clone();
    assert_eq!(obs.onboard.len(), spec.onboard_dim);
    assert_eq!(obs.privileged.len(), spec.privileged_dim);
    assert_eq!(
        &obs.privileged[..spec.onboard_dim],
        &obs.onboard[..],
        "privileged starts with onboard"
    );
    // Standing level: gravity points down the body's z axis (within the noise).
    let g = spec
        .obs_names
        .iter()
        .position(|n| n == "gravity_z")
        .unwrap();
    assert!(obs.onboard[g] < -0.9);
    env.set_command(&[0.3, 0.0, 0.1]).unwrap();
    let mut out = vec![0.0; spec.onboard_dim];
    env.observe(ObsSource::Onboard, &mut out);
    let c = spec
        .obs_names
        .iter()
        .position(|n| n == "command_forward")
        .unwrap();
    assert_eq!(&out[c..c + 3], &[0.3, 0.0, 0.1]);
    assert!(env.set_command(&[0.3]).is_err());
}

/// `env.privileged_friction = false`: the privileged observation reports one constant
/// whatever was drawn (a teacher that cannot grip by friction); by default it reports the draw.
#[test]
fn a_teacher_can_be_kept_from_seeing_the_friction() {
    let seen = |overrides: &[&str]| -> Vec<(f64, f32)> {
        let cfg = task("quadruped_slopes.toml", overrides);
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        let f = env
            .spec()
            .obs_names
            .iter()
            .position(|n| n == "friction")
            .unwrap();
        (0..6)
            .map(|seed| {
                let obs = env.reset(seed);
                (env.params().friction, obs.privileged[f])
            })
            .collect()
    };
    for (drawn, obs) in seen(&["env.privileged_friction=true"]) {
        assert_eq!(obs, drawn as f32);
    }
    let hidden = seen(&[
        "env.privileged_friction=false",
        "randomization.friction=[0.3, 0.6]",
    ]);
    assert!(
        hidden.iter().any(|(d, _)| (d - 0.7).abs() > 0.05),
        "{hidden:?}"
    );
    for (_, obs) in hidden {
        assert_eq!(obs, 0.7, "HIDDEN_FRICTION");
    }
}

/// On a 25 degree slope of the slipperiest floor, closed claws hold the robot where open
/// claws let it slide: the grip is something a policy can learn to use.
#[test]
fn claws_hold_the_robot_on_a_steep_slope() {
    let slide = |claw: f32| {
        let (cfg, action) = steep(claw);
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        env.reset(21);
        let start = env.telemetry().base_pos;
        for _ in 0..150 {
            if env.step(&action).unwrap().terminated {
                return f64::INFINITY;
            }
        }
        let end = env.telemetry().base_pos;
        ((end[0] - start[0]).powi(2) + (end[1] - start[1]).powi(2)).sqrt()
    };
    let (open, closed) = (slide(0.0), slide(2.0));
    println!(
        "slide over 3 s on 25 deg, friction 0.4: claws open {open:.3} m, closed {closed:.3} m"
    );
    // Closed: a few centimetres of settling as the robot lands. Open: it slides away.
    assert!(closed < 0.15, "closed claws slid {closed:.3} m");
    assert!(
        open > 1.0 && open > 10.0 * closed,
        "open {open:.3} m vs closed {closed:.3} m"
    );
}

#[test]
fn servo_targets_move_no_faster_than_the_rate_limit() {
    // 2 rad/s at a 20 ms control step: 0.04 rad per step, however far the action asks.
    let step = |speed: &str| {
        let cfg = task(
            "quadruped_flat.toml",
            &[
                "randomization.push_velocity=0.0",
                &format!("env.max_target_speed={speed}"),
            ],
        );
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        env.reset_in_place(4);
        let before = env.servo_targets();
        env.step_in_place(&[5.0; NUM_SERVOS]).unwrap();
        let after = env.servo_targets();
        before
            .iter()
            .zip(after)
            .map(|(b, a)| (a - b).abs())
            .fold(0.0f64, f64::max)
    };
    let limited = step("2.0");
    assert!(
        (limited - 0.04).abs() < 1e-9,
        "largest target change {limited} rad, want 0.04"
    );
    let free = step("0.0");
    assert!(free > 0.5, "without the limit the targets jump: {free} rad");
}

#[test]
fn a_settled_start_stands_still_at_the_default_pose_before_the_first_observation() {
    let start = |p: &str| {
        let cfg = task(
            "quadruped_flat.toml",
            &[
                "randomization.push_velocity=0.0",
                &format!("randomization.settled_start_probability={p}"),
                "randomization.settle_seconds=1.0",
            ],
        );
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        env.reset_in_place(2);
        let s = env.onboard_sensors();
        let speed = s.joint_vel.iter().map(|v| v.abs()).fold(0.0f64, f64::max);
        (env.params().settled_start, env.telemetry().time, speed)
    };
    let (settled, t, speed) = start("1.0");
    assert!(settled);
    assert!((t - 1.0).abs() < 1e-6, "the settle took {t} s");
    assert!(speed < 0.05, "still moving after the settle: {speed} rad/s");
    let (settled, t, _) = start("0.0");
    assert!(!settled);
    assert_eq!(t, 0.0);
}

#[test]
fn the_noise_scale_can_make_an_episode_noiseless() {
    // The onboard observation against the same readings without noise.
    let gap = |scale: &str| {
        let cfg = task("quadruped_flat.toml", &[&format!("noise.scale={scale}")]);
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        env.reset_in_place(5);
        let mut noisy = vec![0.0f32; env.spec().onboard_dim];
        env.observe(ObsSource::Onboard, &mut noisy);
        let mut clean = vec![0.0f64; noisy.len()];
        env.spec().onboard_layout.quadruped_values(
            &env.onboard_sensors(),
            &env.last_action(),
            env.command(),
            &mut clean,
        );
        noisy
            .iter()
            .zip(clean)
            .map(|(n, c)| (f64::from(*n) - c).abs())
            .fold(0.0f64, f64::max)
    };
    assert!(gap("[0.0, 0.0]") < 1e-6);
    assert!(gap("[1.0, 1.0]") > 0.1, "full-scale noise is missing");
}

#[test]
fn the_physics_rate_is_a_task_setting() {
    // 250 Hz physics under the same 50 Hz control: the model's timestep is the config's.
    let cfg = task(
        "quadruped_flat.toml",
        &["env.physics_dt=0.004", "env.decimation=5"],
    );
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    assert_eq!(env.physics_dt(), 0.004);
    assert!((env.spec().control_dt - 0.02).abs() < 1e-12);
    assert_eq!(env.spec().max_episode_steps, 1000);
    env.reset_in_place(3);
    let a = vec![0.0f32; NUM_SERVOS];
    for _ in 0..50 {
        let (_, terminated, _) = env.step_in_place(&a).unwrap();
        assert!(!terminated, "the robot should stand at 250 Hz");
    }
    assert!(
        (env.data().time() - 1.0).abs() < 1e-9,
        "{}",
        env.data().time()
    );
    let e = TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &["env.physics_dt=0.5".to_string()],
    )
    .unwrap_err();
    assert_eq!(e.key, "env.physics_dt");
}

/// The field's command distribution (Playground's Go1): each axis zeroed on its own, plus a
/// stand-still share; measured over 4 000 resets.
#[test]
fn command_axes_are_zeroed_with_their_own_probabilities() {
    let cfg = task(
        "quadruped_flat.toml",
        &[
            "randomization.settled_start_probability=0.0",
            "command.zero_probability=0.1",
            "command.keep_probability=[0.9, 0.25, 0.5]",
        ],
    );
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    let n = 4000;
    let (mut zero_axis, mut all_zero) = ([0usize; 3], 0usize);
    for seed in 0..n {
        env.reset_in_place(seed);
        let c = env.command();
        for (z, v) in zero_axis.iter_mut().zip(c) {
            *z += usize::from(v == 0.0);
        }
        all_zero += usize::from(c == [0.0; 3]);
    }
    let share = |k: usize| k as f64 / n as f64;
    // P(axis zero) = stand-still + (1 - stand-still) * (1 - keep).
    for (axis, keep) in [0.9, 0.25, 0.5].into_iter().enumerate() {
        let expected = 0.1 + 0.9 * (1.0 - keep);
        let got = share(zero_axis[axis]);
        assert!(
            (got - expected).abs() < 0.03,
            "axis {axis}: {got} against {expected}"
        );
    }
    let expected = 0.1 + 0.9 * 0.1 * 0.75 * 0.5;
    assert!(
        (share(all_zero) - expected).abs() < 0.03,
        "{} against {expected}",
        share(all_zero)
    );
}

/// An unsettled start begins with the base moving (`init_base_velocity`), a settled one at rest.
#[test]
fn unsettled_resets_start_the_base_moving() {
    let speed = |cfg: &TaskConfig| {
        let mut env = QuadrupedEnv::new(cfg).unwrap();
        (0..20)
            .map(|seed| {
                env.reset_in_place(seed);
                env.data().qvel()[..6]
                    .iter()
                    .map(|v| v.abs())
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max)
    };
    let moving = &[
        "randomization.settled_start_probability=0.0",
        "randomization.init_base_velocity=0.5",
    ];
    assert!(speed(&task("quadruped_flat.toml", moving)) > 0.3);
    let settled = &[
        "randomization.settled_start_probability=1.0",
        "randomization.init_base_velocity=0.5",
    ];
    assert!(speed(&task("quadruped_flat.toml", settled)) < 0.1);
}

/// Gait metrics read contacts at the physics rate: every control step reports one row per
/// physics step, the last of which is the step's own contact, and feet land between control
/// steps too (what 50 Hz sampling rounds to the next step).
#[test]
fn contacts_are_reported_at_the_physics_rate() {
    let cfg = calm();
    let decimation = cfg.env.decimation;
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    env.reset(3);
    assert!(env.telemetry().foot_contact_substeps.is_empty());
    let mut rng = 12345u64;
    let mut changes_at = std::collections::BTreeSet::new();
    let mut last: Option<Vec<bool>> = None;
    for step in 0..300 {
        // Big random leg targets held for 5 steps: feet lift and land at varying moments.
        let action: [f32; NUM_SERVOS] = std::array::from_fn(|_| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if step % 5 == 0 {
                ((rng >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            } else {
                0.0
            }
        });
        let t = env.step(&action).unwrap();
        let tel = env.telemetry();
        assert_eq!(tel.foot_contact_substeps.len(), decimation);
        assert_eq!(tel.foot_contact_substeps.last(), Some(&tel.foot_contact));
        for (k, row) in tel.foot_contact_substeps.iter().enumerate() {
            if last.as_ref().is_some_and(|l| l != row) {
                changes_at.insert(k);
            }
            last = Some(row.clone());
        }
        if t.terminated || t.truncated {
            env.reset(step as u64);
            last = None;
        }
    }
    assert!(
        changes_at.len() >= 3,
        "contacts changed only at substeps {changes_at:?} of {decimation}"
    );
}

/// `terrain.heading` turns the robot on the slope: facing uphill its nose is up
/// (gravity in the body frame points back), facing downhill down, and at 90 degrees uphill is
/// on its left. The seed's other draws stay as they were.
#[test]
fn a_fixed_heading_faces_the_robot_up_down_or_across_the_slope() {
    let s = 20f64.to_radians().sin();
    let cases = [
        ("uphill", [-s, 0.0]),
        ("downhill", [s, 0.0]),
        ("across", [0.0, -s]),
    ];
    for seed in [1, 2, 3] {
        let base = [
            "terrain.slope_probability=1.0",
            "terrain.slope_degrees=[20.0, 20.0]",
            "randomization.settled_start_probability=0.0",
            "randomization.init_joint_noise=0.0",
        ];
        let mut free = QuadrupedEnv::new(&task("quadruped_slopes.toml", &base)).unwrap();
        free.reset(seed);
        for (h, want) in cases {
            let set = format!("terrain.heading={h}");
            let cfg = task(
                "quadruped_slopes.toml",
                &[&base[..], &[set.as_str()]].concat(),
            );
            let mut env = QuadrupedEnv::new(&cfg).unwrap();
            env.reset(seed);
            let g = clawrl_robot::observation::gravity_in_body(env.read_sensors().quat);
            // The stand pitches the torso a little against its feet: 0.05 of slack.
            assert!(
                (g[0] - want[0]).abs() < 0.05 && (g[1] - want[1]).abs() < 0.05,
                "seed {seed}, heading {h}: gravity in the body {g:?}, want {want:?}"
            );
            assert_eq!(env.params().friction, free.params().friction);
            assert_eq!(env.params().slope, free.params().slope);
        }
    }
    let err = TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_slopes.toml"),
        &["terrain.heading=sideways".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("terrain.heading") || err.contains("sideways"),
        "{err}"
    );
}

/// The terrain curriculum: a fresh environment draws from the lowest band, a carried level from
/// its own band, and an episode that stood still under a walking command moves it down a level
/// (`curriculum.rs` has the ladder's rules; this is the environment using them).
#[test]
fn the_terrain_curriculum_draws_each_level_from_its_band_and_demotes_a_stand() {
    let cfg = task(
        "quadruped_slopes.toml",
        &[
            "terrain.slope_probability=1.0",
            "terrain.slope_degrees=[5.0, 30.0]",
            "terrain.curriculum_levels=5",
            "randomization.push_velocity=0.0",
            "env.episode_seconds=4.0",
        ],
    );
    let degrees = |env: &QuadrupedEnv| env.params().slope.to_degrees();
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    for seed in 1..=5 {
        env.reset(seed);
        let d = degrees(&env);
        assert!(
            (5.0..=10.0).contains(&d),
            "level 0, seed {seed}: {d:.1} deg"
        );
        assert_eq!(env.carried(), vec![0.0], "no episode finished yet");
    }
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    env.carry(&[3.0]);
    env.reset(7);
    let d = degrees(&env);
    assert!((20.0..=25.0).contains(&d), "level 3: {d:.1} deg");
    // Told to walk at 0.3 m/s, it holds its stand (zero actions, claws open): no progress.
    env.set_command(&[0.3, 0.0, 0.0]).unwrap();
    loop {
        let t = env.step(&[0.0; NUM_SERVOS]).unwrap();
        if t.terminated || t.truncated {
            break;
        }
    }
    env.reset(8);
    assert_eq!(
        env.carried(),
        vec![2.0],
        "a stand under a walking command demotes"
    );
    let d = degrees(&env);
    assert!((15.0..=20.0).contains(&d), "level 2: {d:.1} deg");
    env.carry(&[99.0]);
    assert_eq!(
        env.carried(),
        vec![4.0],
        "a carried level is clamped to the ladder"
    );
}

/// `randomization.settle_grip`: a settled start stands with its claws at the runtime's stand
/// grip. On 20 degrees at friction 0.4 the shut claws hold the robot where it was put; open,
/// it slides away during the settle (the HIL slope scenarios' first run, BENCHMARKS.md).
#[test]
fn a_settled_start_with_shut_claws_holds_on_a_slope_and_open_ones_slide() {
    let moved = |grip: f64| {
        let set = format!("randomization.settle_grip={grip}");
        let cfg = task(
            "quadruped_slopes.toml",
            &[
                "terrain.slope_probability=1.0",
                "terrain.slope_degrees=[20.0, 20.0]",
                "terrain.curriculum_levels=0",
                "randomization.friction=[0.4, 0.4]",
                "randomization.settled_start_probability=1.0",
                "randomization.settle_seconds=2.0",
                &set,
            ],
        );
        let mut env = QuadrupedEnv::new(&cfg).unwrap();
        env.reset(3);
        let claws = env.read_sensors().joint_pos[12..].to_vec();
        let p = env.telemetry().base_pos;
        (p[0].hypot(p[1]), claws)
    };
    let (held, claws) = moved(1.2);
    let (slid, open) = moved(0.0);
    assert!(
        claws.iter().all(|c| (c - 1.2).abs() < 0.1),
        "shut: {claws:?}"
    );
    assert!(open.iter().all(|c| c.abs() < 0.1), "open: {open:?}");
    // The torso starts 0.07 m off the origin (placed along the tilted floor's normal): 0.09 m
    // shut is where it was put; open it slid 0.5 m in the 2 s settle.
    assert!(
        held < 0.12,
        "shut claws: {held:.3} m from the origin after the settle"
    );
    assert!(
        slid > held + 0.25,
        "open claws {slid:.3} m, shut {held:.3} m"
    );
}

/// legged_gym's heading command (`command.heading_gain`): every step the yaw command is the
/// gain times the error to the target heading, so a body kicked off its heading is steered back;
/// a resample that keeps no yaw holds the heading it has.
#[test]
fn the_heading_command_steers_back_to_the_target_heading() {
    use clawrl_sim::quadruped::heading_yaw;
    let cfg = task(
        "quadruped_flat.toml",
        &[
            "command.heading_gain=0.5",
            "command.zero_probability=0.0",
            "randomization.settled_start_probability=0.0",
            "randomization.init_base_velocity=0.5",
        ],
    );
    let range = cfg.command.yaw_rate;
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    let (mut turned, mut moved) = (0, 0.0f64);
    for seed in 0..4 {
        env.reset_in_place(seed);
        let start = env.heading();
        turned += usize::from((env.target_heading() - start).abs() > 0.1);
        for _ in 0..50 {
            env.step_in_place(&[0.0; NUM_SERVOS]).unwrap();
            let want = heading_yaw(0.5, env.target_heading(), env.heading(), range);
            assert!(
                (env.command()[2] - want).abs() < 1e-12,
                "{} against {want}",
                env.command()[2]
            );
        }
        moved = moved.max((env.heading() - start).abs());
    }
    assert!(turned > 0, "no resample asked for a new heading");
    assert!(
        moved > 0.01,
        "the kicks never turned the body ({moved} rad)"
    );

    let cfg = task(
        "quadruped_flat.toml",
        &[
            "command.heading_gain=0.5",
            "command.keep_probability=[1.0, 1.0, 0.0]",
        ],
    );
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    for seed in 0..4 {
        env.reset_in_place(seed);
        assert!(
            env.command()[2].abs() < 1e-9,
            "seed {seed}: {:?}",
            env.command()
        );
    }
}

/// `hold_heading` after a fixed command: the yaw command steers back to the heading the body
/// had when it was set (an evaluation holding its course), where the bare fixed command keeps
/// its yaw rate of 0. A task that does not steer by heading refuses.
#[test]
fn a_fixed_command_can_hold_its_heading() {
    use clawrl_sim::quadruped::heading_yaw;
    let cfg = task(
        "quadruped_flat.toml",
        &[
            "command.heading_gain=0.5",
            "randomization.settled_start_probability=0.0",
            "randomization.init_base_velocity=0.5",
        ],
    );
    let range = cfg.command.yaw_rate;
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    let mut steered = 0.0f64;
    for seed in 0..4 {
        env.reset_in_place(seed);
        env.set_command(&[0.3, 0.0, 0.0]).unwrap();
        env.hold_heading().unwrap();
        let held = env.heading();
        for _ in 0..50 {
            env.step_in_place(&[0.0; NUM_SERVOS]).unwrap();
            assert_eq!(env.target_heading(), held);
            let want = heading_yaw(0.5, held, env.heading(), range);
            assert!((env.command()[2] - want).abs() < 1e-12);
            assert_eq!(&env.command()[..2], &[0.3f32 as f64, 0.0]);
            steered = steered.max(env.command()[2].abs());
        }
        // The bare fixed command: yaw rate 0 however the body turns.
        env.reset_in_place(seed);
        env.set_command(&[0.3, 0.0, 0.0]).unwrap();
        for _ in 0..50 {
            env.step_in_place(&[0.0; NUM_SERVOS]).unwrap();
            assert_eq!(env.command()[2], 0.0);
        }
    }
    assert!(
        steered > 0.005,
        "the kicks never turned the body ({steered})"
    );
    let mut flat = QuadrupedEnv::new(&task("quadruped_flat.toml", &[])).unwrap();
    flat.reset_in_place(1);
    flat.set_command(&[0.3, 0.0, 0.0]).unwrap();
    let e = flat.hold_heading().unwrap_err().to_string();
    assert!(e.contains("heading_gain"), "{e}");
}

/// The task reads the robot by the names its description gives, sizes itself from it, and
/// refuses a description of another shape than a quadruped's, naming what differs.
#[test]
fn the_layout_follows_the_description_and_refuses_another_shape() {
    use clawrl_sim::quadruped::Layout;
    let robot =
        clawrl_sim::description::load(clawrl_sim::description::CLAW_QUADRUPED.as_ref()).unwrap();
    let model = clawrl_sim::model::load(&robot.mjcf).unwrap();
    let l = Layout::new(&model, &robot).unwrap();
    assert_eq!(l.servo_range[2], [-2.6, -0.6]);
    assert_eq!(l.leg_servos, (0..12).collect::<Vec<_>>());
    assert_eq!(
        l.claw.map(|c| c.map(|c| c.servo)),
        [12, 13, 14, 15].map(Some)
    );
    assert!(l.is_claw(15) && !l.is_claw(11));

    // A narrower limit in the description is the limit the task clamps to.
    let mut narrow = robot.clone();
    narrow.description.servos[2].limits = [-2.0, -0.8];
    assert_eq!(
        Layout::new(&model, &narrow).unwrap().servo_range[2],
        [-2.0, -0.8]
    );

    // Twelve servos while the feet still name their claws: refused, naming the foot and claw.
    let mut no_claws = robot.clone();
    no_claws.description.servos.truncate(12);
    let e = Layout::new(&model, &no_claws).unwrap_err().to_string();
    assert!(e.contains("foot FL: claw `FL_claw` is no servo"), "{e}");
    // The same robot with plain feet is a 12-servo quadruped.
    for f in &mut no_claws.description.feet {
        (f.claw, f.grip_actuator) = (None, None);
    }
    let l = Layout::new(&model, &no_claws).unwrap();
    assert_eq!((l.servo_count(), l.leg_servos.len()), (12, 12));
    assert_eq!(l.claw, [None; 4]);

    // A foot whose claw is a leg joint.
    let mut moved = robot.clone();
    moved.description.feet[0].claw = Some("FL_knee".into());
    let e = Layout::new(&model, &moved).unwrap_err().to_string();
    assert!(
        e.contains("foot FL: its claw FL_knee is leg, not a claw"),
        "{e}"
    );

    // A fifth foot: not a quadruped.
    let mut five = robot.clone();
    five.description.feet.push(five.description.feet[0].clone());
    let e = Layout::new(&model, &five).unwrap_err().to_string();
    assert!(
        e.contains("has 16 servos and 5 feet") && e.contains("at most 16 servos on 4 feet"),
        "{e}"
    );

    // A renamed IMU sensor is looked up by its description's name.
    let mut imu = robot;
    imu.description.imu.gyro_sensor = "gyro".into();
    let e = Layout::new(&model, &imu).unwrap_err().to_string();
    assert!(e.contains("`gyro`"), "{e}");
}

/// `rewards.gait_frequency_hz` (issue 39's clock lever): the privileged observation ends in the
/// clock's sine and cosine, 0 at zero command (the clock stops) and on the unit circle while
/// the command moves; without it the layout is unchanged.
#[test]
fn the_gait_clock_joins_the_privileged_observation_and_stops_at_a_stand() {
    let plain = QuadrupedEnv::new(&TaskConfig::flat().unwrap()).unwrap();
    let mut cfg = TaskConfig::flat().unwrap();
    cfg.rewards.gait_frequency_hz = 5.0;
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    let spec = env.spec().clone();
    assert_eq!(spec.privileged_dim, plain.spec().privileged_dim + 2);
    assert_eq!(spec.obs_names.len(), spec.privileged_dim);
    assert_eq!(
        spec.obs_names[spec.privileged_dim - 2..],
        ["gait_clock_sin", "gait_clock_cos"]
    );
    env.reset(3);
    let action = vec![0.0f32; spec.action_dim];
    let mut obs = vec![0.0; spec.privileged_dim];
    let clock = |env: &QuadrupedEnv, obs: &mut Vec<f32>| {
        env.observe(ObsSource::Privileged, obs);
        (obs[obs.len() - 2], obs[obs.len() - 1])
    };
    env.set_command(&[0.0, 0.0, 0.0]).unwrap();
    env.step(&action).unwrap();
    assert_eq!(clock(&env, &mut obs), (0.0, 0.0));
    env.set_command(&[0.3, 0.0, 0.0]).unwrap();
    let mut seen = Vec::new();
    for _ in 0..5 {
        env.step(&action).unwrap();
        let (s, c) = clock(&env, &mut obs);
        assert!((s * s + c * c - 1.0).abs() < 1e-5, "{s} {c}");
        seen.push((s, c));
    }
    // 5 strides a second at 50 Hz: a tenth of a turn a step, so the clock moves every step.
    assert!(seen.windows(2).all(|w| w[0] != w[1]), "{seen:?}");
}
