//! `noise.board_sensor_path`: the onboard observation through the servo board's own sensor
//! path (clawrl_robot::board, the code the firmware runs), against MuJoCo's clean values.
use clawrl_robot::board::{BoardSensorPath, TICK_US};
use clawrl_robot::observation::{gravity_in_body, offsets};
use clawrl_robot::quadruped::DEFAULT_POSE;
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, ObsSource};

/// One position tick (4096 per turn) and one velocity unit (0.229 rpm), rad and rad/s.
const TICK: f64 = std::f64::consts::TAU / 4096.0;
const VELOCITY_UNIT: f64 = 0.229 * std::f64::consts::TAU / 60.0;

fn task(overrides: &[&str]) -> TaskConfig {
    let mut o: Vec<String> = [
        "noise.scale=[0.0, 0.0]",
        "randomization.push_velocity=0.0",
        "noise.board_sensor_path=false",
    ]
    .map(String::from)
    .to_vec();
    o.extend(overrides.iter().map(|s| s.to_string()));
    TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &o,
    )
    .unwrap()
}

fn action(t: usize) -> [f32; NUM_SERVOS] {
    std::array::from_fn(|i| 0.6 * ((t * 7 + i * 3) as f32 * 0.05).sin())
}

fn onboard(env: &QuadrupedEnv) -> Vec<f32> {
    let mut o = vec![0.0f32; env.spec().onboard_dim];
    env.observe(ObsSource::Onboard, &mut o);
    o
}

/// Whole multiples of `unit`, up to the f32 rounding of the observation.
fn on_grid(x: f64, unit: f64, tolerance: f64) -> bool {
    let k = x / unit;
    (k - k.round()).abs() < tolerance
}

fn gravity_gap(on: &[f32], truth: [f64; 3]) -> f64 {
    (0..3)
        .map(|k| (f64::from(on[offsets::GRAVITY + k]) - truth[k]).abs())
        .fold(0.0, f64::max)
}

#[test]
fn the_board_path_is_the_firmware_path_tick_for_tick() {
    // One physics step per board tick and per control step: the test can run the board
    // itself on MuJoCo's clean readings (an identical episode with the option off) and
    // compare every value.
    let fine = [
        "env.physics_dt=0.001",
        "env.decimation=1",
        "randomization.latency_substeps=[0, 0]",
    ];
    let mut on_cfg = fine.map(String::from).to_vec();
    on_cfg.push("noise.board_sensor_path=true".into());
    let on_cfg: Vec<&str> = on_cfg.iter().map(String::as_str).collect();
    let mut on = QuadrupedEnv::new(&task(&on_cfg)).unwrap();
    let mut off = QuadrupedEnv::new(&task(&fine)).unwrap();
    on.reset_in_place(4);
    off.reset_in_place(4);
    assert_eq!(TICK_US, 1000);
    let mut board = BoardSensorPath::settled(&off.read_sensors());
    let mut velocity = [0.0f32; NUM_SERVOS];
    let mut position = off.read_sensors().joint_pos.map(|p| p as f32);
    let mut max_gap = 0.0f64;
    for t in 0..600 {
        if t == 300 {
            on.push_base([0.6, -0.3]);
            off.push_base([0.6, -0.3]);
        }
        let a = action(t);
        on.step_in_place(&a).unwrap();
        off.step_in_place(&a).unwrap();
        // The option changes what the robot reads, never the physics.
        assert_eq!(
            on.telemetry().base_pos,
            off.telemetry().base_pos,
            "step {t}"
        );
        let truth = off.read_sensors();
        board.tick(&truth);
        let got = on.onboard_sensors();
        assert_eq!(got, board.reading(), "step {t}");
        let obs = onboard(&on);
        for i in 0..NUM_SERVOS {
            // Positions: whole ticks from the firmware's 0 (2048 ticks) ...
            assert!(
                on_grid(got.joint_pos[i], TICK, 1e-3),
                "servo {i}: {}",
                got.joint_pos[i]
            );
            let seen = f64::from(obs[offsets::JOINT_POS + i]) + DEFAULT_POSE[i];
            assert!(
                on_grid(seen, TICK, 1e-2),
                "servo {i} in the observation: {seen}"
            );
            assert!((got.joint_pos[i] - truth.joint_pos[i]).abs() <= 0.5 * TICK + 1e-6);
            // ... velocities: the position's change over the 1 ms tick, low-passed as the
            // firmware does, in whole 0.229 rpm units.
            let p = truth.joint_pos[i] as f32;
            let raw = (p - position[i]) / 1e-3;
            velocity[i] += 0.3 * (raw - velocity[i]);
            position[i] = p;
            assert!(on_grid(got.joint_vel[i], VELOCITY_UNIT, 1e-3), "servo {i}");
            assert!(
                (got.joint_vel[i] - f64::from(velocity[i])).abs() <= 0.5 * VELOCITY_UNIT + 1e-6,
                "servo {i} at step {t}: {} against {}",
                got.joint_vel[i],
                velocity[i]
            );
        }
        // Orientation: the board's filter, not MuJoCo's quaternion.
        max_gap = max_gap.max(gravity_gap(&obs, gravity_in_body(truth.quat)));
    }
    assert!(max_gap > 1e-3, "the orientation is MuJoCo's: gap {max_gap}");
    assert!(
        max_gap < 0.1,
        "the filter lost the orientation: gap {max_gap}"
    );
}

#[test]
fn at_the_shipped_rates_positions_are_ticks_and_the_orientation_is_filtered() {
    // 4 ms physics, 50 Hz control: four board ticks per physics step. The start this was
    // measured from (the body moving at reset, Playground's command shares): the shipped
    // defaults changed for the teacher, and the filter's error after the push is a property of
    // the filter on one trajectory, not of the command distribution.
    let start = [
        "randomization.init_base_velocity=0.3",
        "command.keep_probability=[0.9, 0.25, 0.5]",
    ];
    let mut on = QuadrupedEnv::new(&task(
        &[&start[..], &["noise.board_sensor_path=true"]].concat(),
    ))
    .unwrap();
    let mut off = QuadrupedEnv::new(&task(&start)).unwrap();
    on.reset_in_place(7);
    off.reset_in_place(7);
    let (mut before, mut after) = (0.0f64, 0.0f64);
    for t in 0..100 {
        if t == 50 {
            on.push_base([0.5, 0.4]);
            off.push_base([0.5, 0.4]);
        }
        on.step_in_place(&action(t)).unwrap();
        off.step_in_place(&action(t)).unwrap();
        let (got, truth) = (on.onboard_sensors(), off.onboard_sensors());
        assert_eq!(
            on.read_sensors(),
            off.read_sensors(),
            "the physics moved apart"
        );
        for i in 0..NUM_SERVOS {
            assert!(on_grid(got.joint_pos[i], TICK, 1e-3), "servo {i}");
            assert!((got.joint_pos[i] - truth.joint_pos[i]).abs() <= 0.5 * TICK + 1e-6);
            assert!(on_grid(got.joint_vel[i], VELOCITY_UNIT, 1e-3), "servo {i}");
        }
        let gap = gravity_gap(&onboard(&on), gravity_in_body(truth.quat));
        if t < 50 {
            before = before.max(gap);
        } else {
            after = after.max(gap);
        }
    }
    assert!(
        after > 1e-3,
        "after the push the orientation is MuJoCo's: {after}"
    );
    assert!(
        after < 0.1,
        "after the push the filter lost the orientation: {after}"
    );
    assert!(before < 0.1, "{before}");
}

#[test]
fn without_the_key_the_observation_is_what_it_was() {
    // A task file from before the key loads with it off.
    let flat = clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml");
    let older: String = std::fs::read_to_string(&flat)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("board_sensor_path"))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = std::env::temp_dir().join(format!("board-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("older.toml"), older).unwrap();
    let cfg = TaskConfig::load(dir.join("older.toml"), &[]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !cfg.noise.board_sensor_path,
        "older configs load with it off"
    );
    let run = |cfg: &TaskConfig| {
        let mut env = QuadrupedEnv::new(cfg).unwrap();
        let mut out = env.reset(3).onboard;
        for t in 0..40 {
            out.extend(env.step(&action(t)).unwrap().observation.onboard);
        }
        assert!(env.board().is_none());
        out
    };
    assert_eq!(run(&task(&[])), run(&cfg_quiet(cfg)));
}

#[test]
fn the_board_path_needs_whole_board_ticks_per_physics_step() {
    let err = TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &[
            "noise.board_sensor_path=true".to_string(),
            "env.physics_dt=0.0025".to_string(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("noise.board_sensor_path"), "{err}");
}

/// `cfg` with the test's quiet overrides (no noise, no pushes).
fn cfg_quiet(mut cfg: TaskConfig) -> TaskConfig {
    cfg.noise.scale = [0.0, 0.0];
    cfg.randomization.push_velocity = 0.0;
    cfg
}

/// `with_sensor_noise`, the HIL reference's noise: each sensor within the task's amplitude
/// times the episode's scale, in the sensors' own units (the accelerometer's in m/s^2, the
/// task's in g), gravity's orientation untouched, and nothing at a zero scale.
#[test]
fn sensor_noise_in_the_sensors_own_units_within_the_amplitudes() {
    let mut env = QuadrupedEnv::new(&task(&["noise.scale=[1.0, 1.0]"])).unwrap();
    env.reset(3);
    let clean = env.sensors_as_read();
    let n = task(&[]).noise;
    let g = clawrl_robot::quadruped::G;
    let groups = |s: &clawrl_robot::OnboardSensors| {
        [
            s.gyro.to_vec(),
            s.acc.to_vec(),
            s.joint_pos.to_vec(),
            s.joint_vel.to_vec(),
        ]
    };
    let amplitudes = [n.gyro, n.accelerometer * g, n.joint_pos, n.joint_vel];
    let mut rng = clawrl_sim::rng::rng(7);
    let mut widest = [0.0f64; 4];
    for _ in 0..200 {
        let noisy = env.with_sensor_noise(clean, &mut rng);
        assert_eq!(noisy.quat, clean.quat);
        for (k, (a, b)) in groups(&noisy).iter().zip(groups(&clean)).enumerate() {
            for (x, y) in a.iter().zip(&b) {
                let d = (x - y).abs();
                assert!(
                    d <= amplitudes[k] * (1.0 + 1e-9),
                    "group {k}: {d} > {}",
                    amplitudes[k]
                );
                widest[k] = widest[k].max(d);
            }
        }
    }
    // 200 uniform draws per value reach past 90 % of each amplitude.
    for k in 0..4 {
        assert!(
            widest[k] > 0.9 * amplitudes[k],
            "group {k}: widest {}",
            widest[k]
        );
    }
    let mut quiet = QuadrupedEnv::new(&task(&[])).unwrap();
    quiet.reset(3);
    let s = quiet.sensors_as_read();
    assert_eq!(groups(&quiet.with_sensor_noise(s, &mut rng)), groups(&s));
}
