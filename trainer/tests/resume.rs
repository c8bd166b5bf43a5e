//! Checkpoints: exact resume, atomic writes, and a non-finite loss stopping the run while the
//! last good checkpoint survives.
mod common;

use std::collections::HashMap;

use candle_core::Tensor;
use clawrl_trainer::algorithms::{LossContext, NoHooks, NonFiniteLoss, TrainHooks};
use clawrl_trainer::{ResumeOptions, Runner, checkpoint};

fn extend(overrides: &[String]) -> ResumeOptions {
    ResumeOptions {
        overrides: overrides.to_vec(),
        ..Default::default()
    }
}

fn state(r: &Runner) -> HashMap<String, Vec<f32>> {
    r.algorithm()
        .save()
        .unwrap()
        .into_iter()
        .filter(|(_, t)| t.dtype() == candle_core::DType::F32)
        .map(|(n, t)| (n, t.flatten_all().unwrap().to_vec1::<f32>().unwrap()))
        .collect()
}

fn exact_resume(config: &str, overrides: &[&str], n: usize, k: usize) {
    let mut o: Vec<&str> = overrides.to_vec();
    let total = format!("run.max_iterations={n}");
    o.push(&total);
    // Uninterrupted: N iterations.
    let dir_a = common::tmp(&format!("resume-a-{config}"));
    let mut a = Runner::new(common::config(config, &o), &dir_a).unwrap();
    a.train(&mut NoHooks).unwrap();
    // Interrupted: k iterations, then a new process-like start from the checkpoint to N.
    let dir_b = common::tmp(&format!("resume-b-{config}"));
    let first = format!("run.max_iterations={k}");
    o.pop();
    o.push(&first);
    let mut b = Runner::new(common::config(config, &o), &dir_b).unwrap();
    b.train(&mut NoHooks).unwrap();
    drop(b);
    let mut c = Runner::resume(&dir_b, &extend(std::slice::from_ref(&total))).unwrap();
    assert_eq!(c.iteration, k);
    c.train(&mut NoHooks).unwrap();
    assert_eq!(c.iteration, n);
    let (sa, sc) = (state(&a), state(&c));
    assert_eq!(sa.len(), sc.len());
    for (name, va) in &sa {
        assert_eq!(va, &sc[name], "`{name}` differs after resume");
    }
    // Same metrics rows except wall-clock columns.
    let cols = [
        "iteration",
        "env_steps",
        "mean_return",
        "mean_episode_length",
    ];
    for col in cols {
        // Debug strings so that NaN (no episode finished yet) compares equal to NaN.
        assert_eq!(
            format!("{:?}", a.metrics.column(col)),
            format!("{:?}", c.metrics.column(col)),
            "{col}"
        );
    }
    let csv = std::fs::read_to_string(dir_b.join("metrics.csv")).unwrap();
    assert_eq!(csv.lines().count(), n + 1, "{csv}");
    // A third run from a different seed does differ (the comparison above can fail).
    let mut o2 = o.clone();
    o2.pop();
    o2.push(&total);
    o2.push("run.seed=99");
    let dir_d = common::tmp(&format!("resume-d-{config}"));
    let mut d = Runner::new(common::config(config, &o2), &dir_d).unwrap();
    d.train(&mut NoHooks).unwrap();
    assert_ne!(state(&d)["actor.0.weight"], sa["actor.0.weight"]);
    for dir in [dir_a, dir_b, dir_d] {
        std::fs::remove_dir_all(dir).ok();
    }
}

#[test]
fn ppo_resume_is_exact() {
    exact_resume("cartpole_ppo.toml", &["run.checkpoint_every=2"], 5, 2);
}

#[test]
fn sac_resume_is_exact() {
    exact_resume(
        "cartpole_sac.toml",
        &[
            "run.checkpoint_every=3",
            "sac.learning_starts=64",
            "sac.batch_size=32",
            "sac.updates_per_iteration=4",
        ],
        8,
        3,
    );
}

#[test]
fn crossq_resume_is_exact() {
    // 4 critic updates per iteration and an actor delay of 3: the resume lands between two
    // actor updates, so the delay's count must come back with the checkpoint, as must the
    // batch norms' running statistics.
    exact_resume(
        "cartpole_crossq.toml",
        &[
            "run.checkpoint_every=3",
            // Learning from the second iteration: 8 critic updates by the checkpoint, not a
            // multiple of the delay.
            "crossq.learning_starts=128",
            "crossq.batch_size=32",
            "crossq.updates_per_iteration=4",
        ],
        8,
        3,
    );
}

/// Injects a NaN into the loss from iteration `from` on.
struct NanFrom(usize);
impl TrainHooks for NanFrom {
    fn extra_loss(&mut self, ctx: &LossContext<'_>) -> anyhow::Result<Option<Tensor>> {
        if ctx.iteration >= self.0 {
            Ok(Some((ctx.dist.mean.mean_all()? * f64::NAN)?))
        } else {
            Ok(None)
        }
    }
}

#[test]
fn non_finite_loss_stops_and_keeps_last_good_checkpoint() {
    let dir = common::tmp("nan");
    let cfg = common::config(
        "cartpole_ppo.toml",
        &["run.max_iterations=10", "run.checkpoint_every=2"],
    );
    let mut r = Runner::new(cfg, &dir).unwrap();
    let err = r.train(&mut NanFrom(3)).unwrap_err();
    let nf = err
        .downcast_ref::<NonFiniteLoss>()
        .expect("a NonFiniteLoss error");
    assert_eq!(nf.iteration, 3);
    assert!(err.to_string().contains("non-finite"), "{err}");
    // Iterations 1-3 ran; only the checkpoint of iteration 2 exists and it is finite and loadable.
    let its: Vec<usize> = checkpoint::list(&dir).into_iter().map(|(i, _)| i).collect();
    assert_eq!(its, vec![2]);
    let (t, _) = checkpoint::load(&checkpoint::path_for(&dir, 2)).unwrap();
    let w = t["actor.0.weight"]
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert!(w.iter().all(|x| x.is_finite()));
    // A fresh run refuses the directory; the run continues from the checkpoint. (The first
    // runner holds the folder's lock until it is dropped.)
    drop(r);
    let again = common::config("cartpole_ppo.toml", &[]);
    let e = Runner::new(again, &dir).err().unwrap().to_string();
    assert!(e.contains("--resume"), "{e}");
    let mut resumed = Runner::resume(&dir, &extend(&["run.max_iterations=4".to_string()])).unwrap();
    assert_eq!(resumed.iteration, 2);
    resumed.train(&mut NoHooks).unwrap();
    assert_eq!(checkpoint::list(&dir).last().unwrap().0, 4);
    std::fs::remove_dir_all(dir).ok();
}

/// A fine-tune (`--init-from`): a new run with its own settings whose policy and critic start
/// from another run's checkpoint, with a fresh optimiser and its own iteration count.
#[test]
fn a_new_run_starts_from_another_runs_networks() {
    let dir_a = common::tmp("init-from-a");
    let mut a = Runner::new(
        common::config("cartpole_ppo.toml", &["run.max_iterations=3"]),
        &dir_a,
    )
    .unwrap();
    a.train(&mut NoHooks).unwrap();
    drop(a);
    let (saved, _) = checkpoint::load(&checkpoint::path_for(&dir_a, 3)).unwrap();
    let tuned = [
        "run.max_iterations=2",
        "run.seed=7",
        "ppo.learning_rate=1e-4",
    ];
    let dir_b = common::tmp("init-from-b");
    let b = Runner::init_from(common::config("cartpole_ppo.toml", &tuned), &dir_b, &dir_a).unwrap();
    assert_eq!(b.iteration, 0);
    let sb = state(&b);
    let vec = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    for (name, v) in &sb {
        if name.contains("adam") {
            // The optimiser is the new run's own: no moments carried over.
            assert!(v.iter().all(|x| *x == 0.0), "`{name}` was carried over");
        } else {
            assert_eq!(v, &vec(&saved[name]), "`{name}` is not the checkpoint's");
        }
    }
    // A fresh run of the same config does differ (the comparison above can fail).
    let dir_c = common::tmp("init-from-c");
    let c = Runner::new(common::config("cartpole_ppo.toml", &tuned), &dir_c).unwrap();
    assert_ne!(state(&c)["actor.0.weight"], sb["actor.0.weight"]);
    let mut b = b;
    b.train(&mut NoHooks).unwrap();
    assert_eq!(checkpoint::list(&dir_b).last().unwrap().0, 2);
    // Networks of another shape are refused, naming the checkpoint.
    let dir_d = common::tmp("init-from-d");
    let other = common::config("cartpole_ppo.toml", &["policy.actor_hidden=[8]"]);
    let e = format!(
        "{:#}",
        Runner::init_from(other, &dir_d, &dir_a).err().unwrap()
    );
    assert!(e.contains("same algorithm and policy"), "{e}");
    for dir in [dir_a, dir_b, dir_c, dir_d] {
        std::fs::remove_dir_all(dir).ok();
    }
}
