//! Environment throughput against raw MuJoCo stepping on the same model, in one run.
//!
//! `cargo bench -p clawrl-sim --bench env_throughput [-- --envs N --seconds S]`
//!
//! Raw: `mj_step` on bare MjData of the quadruped model standing in its default pose (the same
//! number of data as environments, split over the same threads), no control logic: the ceiling
//! for these cores. Env: `VecEnv` of `QuadrupedEnv` (domain randomisation, noise, rewards,
//! observations) holding the default pose, so that both step the same kind of physics; the
//! ratio is the cost of the environment layer. A third column steps the env with random
//! actions (a flailing, often falling robot makes more contacts, so MuJoCo itself is slower).
//! All report physics steps per second (env steps x decimation), medians of 5 repeats.
use std::sync::Arc;
use std::time::Instant;

use clawrl_sim::VecEnv;
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, Robot, TaskConfig};
use mujoco_rs::prelude::*;

const REPEATS: usize = 5;

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Raw physics rate: `n` data stepped by `threads` threads for `physics_steps` steps each.
fn raw(model: &Arc<MjModel>, key: usize, n: usize, threads: usize, physics_steps: usize) -> f64 {
    let mut datas: Vec<MjData<Arc<MjModel>>> = (0..n)
        .map(|_| {
            let mut d = MjData::new(model.clone());
            d.reset_keyframe(key).unwrap();
            d
        })
        .collect();
    let chunk = n.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in datas.chunks_mut(chunk) {
            s.spawn(move || {
                for _ in 0..physics_steps {
                    for d in part.iter_mut() {
                        d.step();
                    }
                }
            });
        }
    });
    (n * physics_steps) as f64 / start.elapsed().as_secs_f64()
}

/// Environment rate in physics steps per second; `amplitude` 0 holds the default pose.
fn env(cfg: &TaskConfig, n: usize, threads: usize, control_steps: usize, amplitude: f32) -> f64 {
    let mut v = VecEnv::new(QuadrupedEnv::many(cfg, n).unwrap(), threads, 1);
    v.reset();
    let actions: Vec<Vec<f32>> = (0..16)
        .map(|k| {
            (0..n * NUM_SERVOS)
                .map(|i| (((i * 31 + k * 17) % 97) as f32 / 97.0 - 0.5) * amplitude)
                .collect()
        })
        .collect();
    let start = Instant::now();
    for t in 0..control_steps {
        v.step(&actions[t % actions.len()]).unwrap();
    }
    (n * control_steps * cfg.env.decimation) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n_big = arg("--envs", 64.0) as usize;
    let seconds = arg("--seconds", 1.0);
    // Pushes off: the raw baseline is not pushed either.
    let overrides = ["randomization.push_velocity=0.0".to_string()];
    let cfg = TaskConfig::load(
        clawrl_sim::repo_root().join("configs/task/quadruped_flat.toml"),
        &overrides,
    )
    .unwrap();
    let robot = Robot::load(&cfg).unwrap();
    let decimation = cfg.env.decimation;
    // Size each measurement to about `seconds` at ~20k physics steps/s per core.
    let control_steps = |n: usize, threads: usize| {
        ((seconds * 20_000.0 * threads as f64) / (n * decimation) as f64)
            .ceil()
            .max(5.0) as usize
    };

    println!(
        "quadruped model {}, {cores} cores, decimation {decimation}",
        robot.file.display()
    );
    println!(
        "{:<28} {:>14} {:>12} {:>14} {:>8} {:>24}",
        "case",
        "raw mj_step/s",
        "env steps/s",
        "env physics/s",
        "env/raw",
        "random actions: phys/s"
    );
    let mut cases = vec![(1, 1), (2, 2)];
    if cores > 2 {
        cases.push((cores, cores));
    }
    cases.push((n_big, cores));
    for (n, threads) in cases {
        let steps = control_steps(n, threads);
        let mut raws = Vec::new();
        let mut envs = Vec::new();
        let mut random = Vec::new();
        for _ in 0..REPEATS {
            // Interleaved, so that all see the same machine load.
            raws.push(raw(
                &robot.model,
                robot.layout.stand_key,
                n,
                threads,
                steps * decimation,
            ));
            envs.push(env(&cfg, n, threads, steps, 0.0));
            random.push(env(&cfg, n, threads, steps, 0.6));
        }
        let (r, e, a) = (median(raws), median(envs), median(random));
        let label = format!("{n} env(s), {threads} thread(s)");
        let env_steps = e / decimation as f64;
        println!(
            "{label:<28} {r:>14.0} {env_steps:>12.0} {e:>14.0} {:>7.1}% {a:>24.0}",
            100.0 * e / r
        );
    }
}
