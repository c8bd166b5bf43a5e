//! Throughput benchmark (`clawrl bench`): raw environment stepping (physics only, same envs and
//! threads) against the whole training loop, with the loop's time split into physics, policy
//! (forward passes, sampling, storage) and update, plus candle forward timings per activation.
use std::time::Instant;

use anyhow::Result;
use candle_core::{Device, Tensor};
use clawrl_policy::{Activation, Mlp, Rng};
use clawrl_sim::VecEnv;
use rand::{RngExt, SeedableRng};

use crate::algorithms::NoHooks;
use crate::config::TrainConfig;
use crate::runner::Runner;
use crate::task::make_envs;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// Raw stepping rate of the run's environments (env steps/s), random actions in [-1, 1].
pub fn raw_env_rate(cfg: &TrainConfig, steps: usize) -> Result<f64> {
    let r = &cfg.run.run;
    let envs = make_envs(cfg, r.num_envs)?;
    let na = envs[0].spec().action_dim;
    let mut venv = VecEnv::new(envs, r.env_threads, r.seed);
    venv.reset();
    let mut rng = Rng::seed_from_u64(0);
    let actions: Vec<Vec<f32>> = (0..16)
        .map(|_| {
            (0..r.num_envs * na)
                .map(|_| rng.random_range(-1.0f32..=1.0))
                .collect()
        })
        .collect();
    let t = Instant::now();
    for k in 0..steps {
        venv.step(&actions[k % actions.len()])?;
    }
    Ok((steps * r.num_envs) as f64 / t.elapsed().as_secs_f64())
}

/// Mean seconds of one candle forward pass of an MLP `dims` at `batch` rows.
pub fn forward_time(
    dims: &[usize],
    activation: Activation,
    batch: usize,
    reps: usize,
) -> Result<f64> {
    let net = Mlp::new("b", dims, activation, 1.0, &mut Rng::seed_from_u64(0))?;
    let x = Tensor::ones((batch, dims[0]), candle_core::DType::F32, &Device::Cpu)?;
    let _ = net.forward_detached(&x)?.to_vec2::<f32>()?;
    let t = Instant::now();
    for _ in 0..reps {
        let _ = net.forward_detached(&x)?.flatten_all()?.to_vec1::<f32>()?;
    }
    Ok(t.elapsed().as_secs_f64() / reps as f64)
}

pub fn run(cfg: &TrainConfig, iterations: usize, repeats: usize) -> Result<String> {
    clawrl_policy::init_candle_threads(cfg.run.run.candle_threads);
    let r = &cfg.run.run;
    let steps_per_iter = cfg
        .ppo
        .as_ref()
        .map(|p| p.num_steps_per_env)
        .or(cfg.sac.as_ref().map(|s| s.num_steps_per_env))
        .unwrap_or(24);
    let mut raw = Vec::new();
    let mut loop_rates = Vec::new();
    let (mut phys, mut pol, mut upd) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..repeats.max(1) {
        raw.push(raw_env_rate(cfg, steps_per_iter * iterations.max(1))?);
        let mut c = cfg.clone();
        c.run.run.max_iterations = iterations + 1;
        c.run.run.checkpoint_every = 1_000_000;
        c.run.run.plot_every = 0;
        let dir = std::env::temp_dir().join(format!("clawrl-bench-{}-{rep}", std::process::id()));
        let mut runner = Runner::new(c, &dir)?;
        runner.train(&mut NoHooks)?;
        let m = &runner.metrics;
        let col = |k: &str| {
            m.column(k)
                .unwrap_or_default()
                .into_iter()
                .skip(1)
                .collect::<Vec<f64>>()
        };
        let steps: f64 = (iterations * r.num_envs * steps_per_iter) as f64;
        let (tp, tq, tu) = (
            col("t_physics").iter().sum::<f64>(),
            col("t_policy").iter().sum::<f64>(),
            col("t_update").iter().sum::<f64>(),
        );
        loop_rates.push(steps / (tp + tq + tu));
        phys.push(tp / (tp + tq + tu));
        pol.push(tq / (tp + tq + tu));
        upd.push(tu / (tp + tq + tu));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (raw_m, loop_m) = (median(raw), median(loop_rates));
    let mut out = format!(
        "task {} / {} | {} envs, {} env threads, RAYON_NUM_THREADS={} | {} iterations x {} steps/env, median of {}\n\n",
        r.task,
        r.algorithm,
        r.num_envs,
        r.env_threads,
        std::env::var("RAYON_NUM_THREADS").unwrap_or_default(),
        iterations,
        steps_per_iter,
        repeats
    );
    out += "| measure | value |\n|---|---|\n";
    out += &format!("| raw env stepping (physics only) | {raw_m:.0} env steps/s |\n");
    out += &format!("| full training loop | {loop_m:.0} env steps/s |\n");
    out += &format!("| loop / raw | {:.0} % |\n", 100.0 * loop_m / raw_m);
    out += &format!(
        "| loop time: physics / policy / update | {:.0} % / {:.0} % / {:.0} % |\n",
        100.0 * median(phys),
        100.0 * median(pol),
        100.0 * median(upd)
    );
    let p = &cfg.run.policy;
    let spec = crate::task::spec(cfg)?;
    let mut dims = vec![spec.obs_dim(crate::algorithms::layout(p.actor_obs))];
    dims.extend(&p.actor_hidden);
    dims.push(spec.action_dim);
    for act in [Activation::Elu, Activation::Relu, Activation::Tanh] {
        let t = forward_time(&dims, act, r.num_envs, 200)?;
        out += &format!(
            "| candle actor forward {dims:?} {act:?}, batch {} | {:.1} us |\n",
            r.num_envs,
            t * 1e6
        );
    }
    Ok(out)
}
