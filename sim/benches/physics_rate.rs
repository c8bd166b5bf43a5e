//! Does the physics rate matter? The servo response and the stand at 500 Hz (the model's 2 ms)
//! and at 250 Hz (4 ms, MuJoCo Playground's Go1 rate), and what each costs.
//!
//! `cargo bench -p clawrl-sim --bench physics_rate`
//!
//! The robot stands settled on the flat task with every randomisation at its nominal value
//! (friction 0.8, no latency, no calibration error, no pushes), then:
//! - a knee step: the front-left knee's target 0.3 rad up; rise time (10-90 %), overshoot, and
//!   the error 0.4 s later;
//! - a hip sine: all four hip-pitch targets swing +-0.25 rad at 2.5 Hz (a trot's stride
//!   frequency) for 2 s; the front-left hip's RMS tracking error and the torso's height range;
//! - the two rates' knee trajectories against each other on the common 4 ms grid;
//! - the cost: MuJoCo steps per second of the standing robot, and wall time per simulated
//!   second (median of 5).
use std::time::Instant;

use clawrl_sim::Env;
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};

const NOMINAL: [&str; 11] = [
    "randomization.friction=[0.8, 0.8]",
    "randomization.link_mass_scale=[1.0, 1.0]",
    "randomization.torso_added_mass=[0.0, 0.0]",
    "randomization.com_offset=[0.0, 0.0, 0.0]",
    "randomization.servo_strength=[1.0, 1.0]",
    "randomization.latency_substeps=[0, 0]",
    "randomization.joint_offset=0.0",
    "randomization.init_joint_noise=0.0",
    "randomization.settled_start_probability=1.0",
    "randomization.push_velocity=0.0",
    "randomization.settle_seconds=1.0",
];
const KNEE: usize = 2;
const HIP_PITCH: [usize; 4] = [1, 4, 7, 10];

fn env_at(dt: f64) -> QuadrupedEnv {
    let decimation = (0.02 / dt).round() as usize;
    let mut overrides: Vec<String> = NOMINAL.iter().map(|s| s.to_string()).collect();
    overrides.push(format!("env.physics_dt={dt}"));
    overrides.push(format!("env.decimation={decimation}"));
    let cfg = TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &overrides,
    )
    .unwrap();
    let mut env = QuadrupedEnv::new(&cfg).unwrap();
    env.reset_in_place(1);
    env
}

fn targets(env: &QuadrupedEnv) -> Vec<Option<f64>> {
    env.servo_targets().into_iter().map(Some).collect()
}

struct Response {
    /// (time s, knee angle - start) at every physics step.
    knee: Vec<(f64, f64)>,
    rise_s: f64,
    overshoot: f64,
    final_error: f64,
    hip_rms: f64,
    height_range: [f64; 2],
    stand_height: f64,
}

fn respond(dt: f64) -> Response {
    let mut env = env_at(dt);
    let stand_height = env.telemetry().base_pos[2];
    let mut t = targets(&env);
    let q0 = env.read_sensors().joint_pos[KNEE];
    let step = 0.3;
    t[KNEE] = t[KNEE].map(|x| x + step);
    let mut knee = vec![(0.0, 0.0)];
    let steps = (0.4 / dt).round() as usize;
    for k in 1..=steps {
        env.step_servos(&t);
        knee.push((k as f64 * dt, env.read_sensors().joint_pos[KNEE] - q0));
    }
    let first = |frac: f64| {
        knee.iter()
            .find(|(_, q)| *q >= frac * step)
            .map_or(f64::NAN, |(t, _)| *t)
    };
    let peak = knee.iter().map(|(_, q)| *q).fold(f64::MIN, f64::max);
    let final_error = step - knee.last().unwrap().1;
    // Back to the stand, then the hip sine.
    t[KNEE] = t[KNEE].map(|x| x - step);
    for _ in 0..(0.5 / dt).round() as usize {
        env.step_servos(&t);
    }
    let base = t.clone();
    let (mut sq, mut n) = (0.0, 0usize);
    let mut height = [f64::MAX, f64::MIN];
    for k in 0..(2.0 / dt).round() as usize {
        let s = 0.25 * (std::f64::consts::TAU * 2.5 * k as f64 * dt).sin();
        for &h in &HIP_PITCH {
            t[h] = base[h].map(|x| x + s);
        }
        env.step_servos(&t);
        let err = env.read_sensors().joint_pos[HIP_PITCH[0]] - t[HIP_PITCH[0]].unwrap();
        sq += err * err;
        n += 1;
        let z = env.telemetry().base_pos[2];
        height = [height[0].min(z), height[1].max(z)];
    }
    Response {
        rise_s: first(0.9) - first(0.1),
        overshoot: (peak - step).max(0.0) / step,
        final_error,
        hip_rms: (sq / n as f64).sqrt(),
        height_range: height,
        stand_height,
        knee,
    }
}

/// MuJoCo steps per second of the standing robot, and wall seconds per simulated second.
fn cost(dt: f64) -> (f64, f64) {
    let mut rates = Vec::new();
    for _ in 0..5 {
        let mut env = env_at(dt);
        let t = targets(&env);
        let steps = (2.0 / dt).round() as usize;
        let start = Instant::now();
        for _ in 0..steps {
            env.step_servos(&t);
        }
        rates.push(steps as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let r = rates[2];
    (r, 1.0 / (r * dt))
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average at start: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:<8} {:>10} {:>9} {:>10} {:>11} {:>10} {:>16} {:>11} {:>13}",
        "physics",
        "stand (m)",
        "rise (ms)",
        "overshoot",
        "err@0.4 s",
        "hip RMS",
        "height (m)",
        "mj_step/s",
        "wall/sim s"
    );
    let mut knees = Vec::new();
    for dt in [0.002, 0.004] {
        let r = respond(dt);
        let (rate, wall) = cost(dt);
        println!(
            "{:<8} {:>10.4} {:>9.1} {:>9.1}% {:>8.4} rad {:>6.4} rad {:>7.4}-{:<7.4} {:>11.0} {:>13.4}",
            format!("{:.0} Hz", 1.0 / dt),
            r.stand_height,
            1e3 * r.rise_s,
            100.0 * r.overshoot,
            r.final_error,
            r.hip_rms,
            r.height_range[0],
            r.height_range[1],
            rate,
            wall
        );
        knees.push(r.knee);
    }
    // The 2 ms trajectory at the 4 ms samples.
    let diff = knees[1]
        .iter()
        .map(|(t, q)| {
            let k = (t / 0.002).round() as usize;
            (q - knees[0][k].1).abs()
        })
        .fold(0.0, f64::max);
    println!(
        "knee step, 250 Hz against 500 Hz: largest difference {diff:.4} rad ({:.1} % of the step)",
        100.0 * diff / 0.3
    );
}
