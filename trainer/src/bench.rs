//! Throughput benchmark (`clawrl bench`): raw environment stepping (physics only, same envs and
//! threads) against the whole training loop, with the loop's time split into physics, policy
//! (forward passes, sampling, storage) and update; the loop is measured under several
//! `RAYON_NUM_THREADS` settings in the same process (candle reads the variable on every matmul),
//! and candle's forward and forward+backward costs are timed per activation.
use std::time::Instant;

use anyhow::Result;
use candle_core::{Device, Tensor};
use clawrl_policy::{Activation, Mlp, Rng};
use clawrl_sim::VecEnv;
use rand::{RngExt, SeedableRng};

use crate::algorithms::NoHooks;
use crate::config::{AlgoConfig, TrainConfig};
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

/// Mean seconds of one candle forward pass (and of forward + backward when `backward`) of an
/// MLP `dims` at `batch` rows.
pub fn net_time(
    dims: &[usize],
    activation: Activation,
    batch: usize,
    reps: usize,
    backward: bool,
) -> Result<f64> {
    let net = Mlp::new("b", dims, activation, 1.0, &mut Rng::seed_from_u64(0))?;
    let x = Tensor::ones((batch, dims[0]), candle_core::DType::F32, &Device::Cpu)?;
    let once = || -> Result<()> {
        if backward {
            let y = net.forward(&x)?.sqr()?.mean_all()?;
            let _ = y.backward()?;
        } else {
            let _ = net.forward_detached(&x)?.flatten_all()?.to_vec1::<f32>()?;
        }
        Ok(())
    };
    once()?;
    let t = Instant::now();
    for _ in 0..reps {
        once()?;
    }
    Ok(t.elapsed().as_secs_f64() / reps as f64)
}

/// GFLOP/s of one `[m, k] x [k, n]` candle matmul.
pub fn matmul_gflops(m: usize, k: usize, n: usize, reps: usize) -> Result<f64> {
    let a = Tensor::ones((m, k), candle_core::DType::F32, &Device::Cpu)?;
    let b = Tensor::ones((k, n), candle_core::DType::F32, &Device::Cpu)?;
    let _ = a.matmul(&b)?;
    let t = Instant::now();
    for _ in 0..reps {
        let _ = a.matmul(&b)?;
    }
    Ok(2.0 * (m * k * n * reps) as f64 / t.elapsed().as_secs_f64() / 1e9)
}

fn set_rayon(value: Option<&str>) {
    // SAFETY: the benchmark is single-threaded between measurements (the environment threads
    // are scoped and have ended); candle reads the variable on the calling thread.
    unsafe {
        match value {
            Some(v) => std::env::set_var("RAYON_NUM_THREADS", v),
            None => std::env::remove_var("RAYON_NUM_THREADS"),
        }
    }
}

struct LoopStats {
    raw: f64,
    rate: f64,
    phys: f64,
    pol: f64,
    upd: f64,
    /// Shares of the update: forward + loss, backward, clip + optimiser (PPO only).
    upd_split: [f64; 3],
}

fn measure_loop(
    cfg: &TrainConfig,
    iterations: usize,
    rep: usize,
    rayon: Option<&str>,
) -> Result<LoopStats> {
    let r = &cfg.run.run;
    let steps_per_iter = cfg.algo.num_steps_per_env();
    let raw = raw_env_rate(cfg, steps_per_iter * iterations.max(1))?;
    let mut c = cfg.clone();
    c.run.run.max_iterations = iterations + 1;
    c.run.run.checkpoint_every = 1_000_000;
    c.run.run.plot_every = 0;
    let dir = std::env::temp_dir().join(format!("clawrl-bench-{}-{rep}", std::process::id()));
    let mut runner = Runner::new(c, &dir)?;
    // Runner::new sets the variable when it is unset; restore the setting under test.
    set_rayon(rayon);
    runner.train(&mut NoHooks)?;
    let m = &runner.metrics;
    // The first iteration is a warm-up.
    let col = |k: &str| {
        m.column(k)
            .unwrap_or_default()
            .into_iter()
            .skip(1)
            .sum::<f64>()
    };
    let (tp, tq, tu) = (col("t_physics"), col("t_policy"), col("t_update"));
    let total = tp + tq + tu;
    let upd_split = [
        col("t_update_loss") / tu,
        col("t_update_backward") / tu,
        col("t_update_optim") / tu,
    ];
    let _ = std::fs::remove_dir_all(&dir);
    Ok(LoopStats {
        raw,
        rate: (iterations * r.num_envs * steps_per_iter) as f64 / total,
        phys: tp / total,
        pol: tq / total,
        upd: tu / total,
        upd_split,
    })
}

pub fn run(cfg: &TrainConfig, iterations: usize, repeats: usize) -> Result<String> {
    let r = &cfg.run.run;
    let configured = r.candle_threads.to_string();
    let settings: Vec<(String, Option<&str>)> = vec![
        ("unset".into(), None),
        ("2".into(), Some("2")),
        (
            format!("{configured} (run.candle_threads)"),
            Some(configured.as_str()),
        ),
    ];
    let mut out = format!(
        "task {} / {} | {} envs, {} env threads | {} measured iterations (+1 warm-up), median of {}\n\n",
        r.task,
        r.algorithm,
        r.num_envs,
        r.env_threads,
        iterations,
        repeats.max(1)
    );
    out += "| RAYON_NUM_THREADS | raw env steps/s (physics only) | training loop env steps/s | loop / raw | physics / policy / update share of loop | update: forward+loss / backward / clip+Adam |\n|---|---|---|---|---|---|\n";
    for (label, value) in &settings {
        set_rayon(*value);
        let mut runs = Vec::new();
        for rep in 0..repeats.max(1) {
            runs.push(measure_loop(cfg, iterations, rep, *value)?);
        }
        let med = |f: &dyn Fn(&LoopStats) -> f64| median(runs.iter().map(f).collect());
        let (raw, rate) = (med(&|s| s.raw), med(&|s| s.rate));
        out += &format!(
            "| {label} | {raw:.0} | {rate:.0} | {:.0} % | {:.0} % / {:.0} % / {:.0} % | {:.0} % / {:.0} % / {:.0} % |\n",
            100.0 * rate / raw,
            100.0 * med(&|s| s.phys),
            100.0 * med(&|s| s.pol),
            100.0 * med(&|s| s.upd),
            100.0 * med(&|s| s.upd_split[0]),
            100.0 * med(&|s| s.upd_split[1]),
            100.0 * med(&|s| s.upd_split[2])
        );
    }
    set_rayon(Some(&configured));
    let p = &cfg.run.policy;
    let spec = crate::task::spec(cfg)?;
    let mut dims = vec![spec.obs_dim(p.actor_obs)];
    dims.extend(&p.actor_hidden);
    dims.push(spec.action_dim);
    let mb = match &cfg.algo {
        AlgoConfig::Ppo(c) => r.num_envs * c.num_steps_per_env / c.num_mini_batches,
        _ => 256,
    };
    out += &format!(
        "\ncandle, RAYON_NUM_THREADS={configured}: actor {dims:?}\n\n| activation | forward, batch {} (rollout) | forward + backward, batch {mb} (minibatch) |\n|---|---|---|\n",
        r.num_envs
    );
    for act in [Activation::Elu, Activation::Relu, Activation::Tanh] {
        let f = net_time(&dims, act, r.num_envs, 200, false)?;
        let b = net_time(&dims, act, mb, 30, true)?;
        out += &format!("| {act:?} | {:.0} us | {:.0} us |\n", f * 1e6, b * 1e6);
    }
    let h = p.actor_hidden[0];
    out += &format!(
        "\nmatmul [{mb} x {h}] x [{h} x {h}]: {:.1} GFLOP/s; [{} x {}] x [{} x {h}]: {:.1} GFLOP/s; [4096 x 256] x [256 x 256]: {:.1} GFLOP/s\n",
        matmul_gflops(mb, h, h, 200)?,
        r.num_envs,
        dims[0],
        dims[0],
        matmul_gflops(r.num_envs, dims[0], h, 500)?,
        matmul_gflops(4096, 256, 256, 10)?
    );
    Ok(out)
}

/// Inference cost of one policy on the robot's batch of one: median seconds per deterministic
/// action (normalise, forward, read back) over `reps` calls, and the parameter count.
pub fn inference_time(policy: &dyn clawrl_policy::Policy, reps: usize) -> Result<(f64, usize)> {
    let d = policy.config().obs_dim;
    let obs: Vec<f32> = (0..d).map(|i| (i as f32 * 0.37).sin()).collect();
    for _ in 0..reps.min(100) {
        policy.deterministic(&obs)?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        std::hint::black_box(policy.deterministic(std::hint::black_box(&obs))?);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let params = policy
        .params()
        .iter()
        .map(|(_, v)| v.as_tensor().elem_count())
        .sum();
    Ok((times[times.len() / 2], params))
}
