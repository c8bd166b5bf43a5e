//! The distiller on small fixed inputs: which teachers it accepts, the divergence it reports
//! and adds to PPO's loss, the EMA teacher step and its condition, and exact resume. Every
//! expected number is computed here from the teacher's and the student's own Gaussians.
use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use clawrl_policy::distribution::kl_row;
use clawrl_policy::{Activation, GaussianMlp, ObsSource, Policy, PolicyConfig, Registry, Rng};
use clawrl_sim::{Batch, EpisodeLog};
use clawrl_trainer::algorithms::distill::{Teacher, check_pair};
use clawrl_trainer::algorithms::{Algorithm, Distill, LossContext, NoHooks, TrainHooks};
use clawrl_trainer::config::{DistillConfig, PpoConfig};
use rand::SeedableRng;

use super::{
    PullMeansDown, choice, close, named, policy_with_actions, ppo_config, ppo_with_actions,
    random_batch, rollout, section, set, values,
};

const NA: usize = 2;

fn distill_config(mode: &str, teacher_update: &str, ppo: PpoConfig) -> DistillConfig {
    DistillConfig {
        teacher: "teacher.safetensors".into(),
        endpoint: String::new(),
        teacher_sha256: String::new(),
        mode: choice(mode),
        loss: choice("kl"),
        kl_direction: choice("forward"),
        alpha: 0.7,
        alpha_schedule: choice("constant"),
        alpha_final: 0.7,
        alpha_decay_iterations: 1,
        teacher_update: choice(teacher_update),
        ema_rate: 0.25,
        ema_window: 3,
        ema_margin: 1.0,
        rollout_noise: 1.0,
        ppo,
    }
}

/// A learning rate of 0: the student stays exactly as it acted, through every minibatch.
fn still() -> PpoConfig {
    PpoConfig {
        num_steps_per_env: 2,
        num_learning_epochs: 2,
        num_mini_batches: 2,
        learning_rate: 0.0,
        schedule: choice("fixed"),
        ..ppo_config()
    }
}

/// A teacher with the student's architecture (2-D privileged input, [8] hidden, 2 actions),
/// its own weights, a mean head and log-std away from the student's initial ones (both start
/// near zero), and its own normaliser.
fn teacher(seed: u64) -> Box<dyn Policy> {
    let mut rng = Rng::seed_from_u64(seed);
    let mut t = policy_with_actions(&section("gaussian_mlp", vec![]), NA, &mut rng);
    set_param(t.as_ref(), "actor.1.bias", &[0.5, -0.3]);
    set_param(t.as_ref(), "actor.log_std", &[-0.5, 0.2]);
    // A normaliser away from its initial (0, 1), as a trained teacher's is.
    let n = t.normalizer_mut();
    n.mean = vec![0.3, -0.2];
    n.var = vec![2.0, 0.5];
    t
}

fn set_param(p: &dyn Policy, name: &str, v: &[f32]) {
    let (_, var) = p.params().into_iter().find(|(n, _)| n == name).unwrap();
    var.set(&Tensor::from_slice(v, var.shape(), &Device::Cpu).unwrap())
        .unwrap();
}

/// A distiller over `n` environments: the student is `ppo_with_actions(.., seed 5)`, the
/// teacher `teacher(9)`, whose task return is 10.
fn distiller(cfg: DistillConfig, n: usize) -> Distill {
    let student = ppo_with_actions(cfg.ppo.clone(), NA, n, 5);
    Distill::new(cfg, student, Teacher::Local(teacher(9)), n, Some(10.0)).unwrap()
}

/// Episode returns that finish at this step, one per environment (None: still running).
fn with_returns(mut b: Batch, totals: &[Option<f64>]) -> Batch {
    b.finished = totals
        .iter()
        .map(|t| {
            t.map(|total| EpisodeLog {
                steps: 10,
                total,
                terms: Vec::new(),
                stats: Vec::new(),
            })
        })
        .collect();
    b
}

fn stat(stats: &[(&str, f64)], name: &str) -> f64 {
    stats
        .iter()
        .find(|(k, _)| *k == name)
        .unwrap_or_else(|| panic!("no stat {name}"))
        .1
}

fn vals64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// Tensors under `prefix`, by the name after it.
fn under(t: &HashMap<String, Tensor>, prefix: &str) -> HashMap<String, Vec<f64>> {
    t.iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k.to_string(), vals64(v))))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Which teachers can label this student

fn config(kind: &str, obs_dim: usize, history: usize) -> PolicyConfig {
    PolicyConfig {
        kind: kind.into(),
        obs_dim,
        action_dim: NA,
        obs_source: ObsSource::Privileged,
        hidden: vec![8],
        activation: Activation::Elu,
        init_std: 1.0,
        obs_clip: 10.0,
        history,
        conv_channels: 0,
    }
}

fn build(c: PolicyConfig) -> Box<dyn Policy> {
    let mut registry = Registry::default();
    // A kind that differs from gaussian_mlp by its name only.
    registry.register("gaussian_mlp_twin", |c, rng| {
        Ok(Box::new(GaussianMlp::new(c, false, false, rng)?))
    });
    registry.build(&c, &mut Rng::seed_from_u64(1)).unwrap()
}

#[test]
fn check_pair_accepts_a_matching_teacher_and_names_each_mismatch() {
    let student = build(config("gaussian_mlp", 2, 0));
    let check = |update: &str, t: PolicyConfig, frame: usize| {
        let cfg = distill_config("opd", update, ppo_config());
        check_pair(&cfg, build(t).as_ref(), student.as_ref(), frame).map_err(|e| e.to_string())
    };
    let base = || config("gaussian_mlp", 2, 0);
    for update in ["frozen", "ema"] {
        assert_eq!(check(update, base(), 2), Ok(()), "{update}");
    }
    let err = |update: &str, t: PolicyConfig, frame: usize| check(update, t, frame).unwrap_err();

    let three_actions = PolicyConfig {
        action_dim: 3,
        ..base()
    };
    assert!(err("frozen", three_actions, 2).contains("has 3 actions, the task has 2"));
    assert!(
        err("frozen", base(), 5)
            .contains("reads 2 values of `Privileged` observation per frame, the task gives 5")
    );
    let squashed = config("squashed_gaussian_mlp", 2, 0);
    assert!(err("frozen", squashed, 2).contains("unsquashed"));
    let squashed_student = build(config("squashed_gaussian_mlp", 2, 0));
    let cfg = distill_config("opd", "frozen", ppo_config());
    let e = check_pair(&cfg, build(base()).as_ref(), squashed_student.as_ref(), 2).unwrap_err();
    assert!(e.to_string().contains("unsquashed"), "{e}");

    // EMA needs the same architecture; a frozen teacher may differ in every one of these.
    let differing = [
        ("kind", config("gaussian_mlp_twin", 2, 0), 2),
        ("obs_dim", config("gaussian_mlp", 4, 0), 4),
        (
            "obs_source",
            PolicyConfig {
                obs_source: ObsSource::Onboard,
                ..base()
            },
            2,
        ),
        (
            "hidden",
            PolicyConfig {
                hidden: vec![16],
                ..base()
            },
            2,
        ),
        (
            "activation",
            PolicyConfig {
                activation: Activation::Tanh,
                ..base()
            },
            2,
        ),
        ("history", config("gaussian_mlp", 2, 1), 1),
        (
            "conv_channels",
            PolicyConfig {
                conv_channels: 4,
                ..base()
            },
            2,
        ),
    ];
    for (what, t, frame) in differing {
        assert_eq!(check("frozen", t.clone(), frame), Ok(()), "frozen, {what}");
        let e = err("ema", t, frame);
        assert!(e.contains("needs the same architecture"), "{what}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// The divergence

/// The teacher's and the student's Gaussians on `obs`, before the student acts on them.
fn gaussians_of(d: &Distill, obs: &[f32]) -> [Vec<f32>; 4] {
    let t = d.teacher().gaussians(obs).unwrap();
    let s = d.policy().gaussians(obs).unwrap();
    [t.mean, t.log_std, s.mean, s.log_std]
}

/// Runs one iteration with a still student and returns its stats and the expected means of
/// forward KL, reverse KL and the squared mean distance over all collected rows.
fn still_iteration(mut cfg: DistillConfig) -> (Vec<(&'static str, f64)>, [f64; 3]) {
    cfg.ppo = still();
    let n = 3;
    let mut d = distiller(cfg, n);
    // Identity normaliser for the student: its Gaussians on the raw observations are the
    // ones the update sees.
    let mut t = named(d.save().unwrap());
    set(&mut t, "obs_normalizer.count", &[1e15]);
    d.load(&t).unwrap();
    let mut rng = Rng::seed_from_u64(6);
    let mut b = random_batch(n, &mut rng);
    let (mut fwd, mut rev, mut mse) = (0.0, 0.0, 0.0);
    for _ in 0..2 {
        let [tm, tls, sm, sls] = gaussians_of(&d, &b.privileged);
        for r in 0..n {
            let q = r * NA..(r + 1) * NA;
            let (tm, tls, sm, sls) = (&tm[q.clone()], &tls[q.clone()], &sm[q.clone()], &sls[q]);
            fwd += kl_row(tm, tls, sm, sls);
            rev += kl_row(sm, sls, tm, tls);
            mse += sm
                .iter()
                .zip(tm)
                .map(|(s, t)| f64::from(s - t).powi(2))
                .sum::<f64>();
        }
        d.act(&b, &mut rng).unwrap();
        b = random_batch(n, &mut rng);
        d.process_env_step(&b).unwrap();
    }
    d.compute_returns(&b).unwrap();
    let stats = d.update(&mut rng, &mut NoHooks, 0).unwrap();
    let rows = (2 * n) as f64;
    (stats, [fwd / rows, rev / rows, mse / rows])
}

#[test]
fn the_reported_divergence_is_the_mean_over_every_collected_row() {
    // Learning rate 0, 2 epochs of 2 minibatches of 3 rows: every minibatch sees the same
    // networks, so the mean over the 4 minibatches is the mean over the 6 collected rows.
    let base = distill_config("opd", "frozen", still());
    let (stats, [fwd, rev, mse]) = still_iteration(base.clone());
    assert!(fwd > 0.01 && rev > 0.01 && mse > 0.01, "{fwd} {rev} {mse}");
    let tol = |x: f64| 1e-5 * x.max(1.0);
    let got = |name: &str| stat(&stats, name);
    assert!(
        close(got("distill_loss"), fwd, tol(fwd)),
        "{stats:?} vs {fwd}"
    );
    assert!(
        close(got("kl_teacher"), fwd, tol(fwd)),
        "{stats:?} vs {fwd}"
    );
    assert_eq!((got("distill_alpha"), got("ema_updates")), (0.7, 0.0));

    let reverse = DistillConfig {
        kl_direction: choice("reverse"),
        ..base.clone()
    };
    let (stats, [fwd, rev, _]) = still_iteration(reverse);
    assert!(
        close(stat(&stats, "distill_loss"), rev, tol(rev)),
        "{stats:?} vs {rev}"
    );
    assert!(close(stat(&stats, "kl_teacher"), fwd, tol(fwd)));

    let mse_loss = DistillConfig {
        loss: choice("mse"),
        ..base.clone()
    };
    let (stats, [fwd, _, mse]) = still_iteration(mse_loss);
    assert!(
        close(stat(&stats, "distill_loss"), mse, tol(mse)),
        "{stats:?} vs {mse}"
    );
    assert!(close(stat(&stats, "kl_teacher"), fwd, tol(fwd)));

    // In `rl` mode the divergence is measured but not applied, and alpha is reported as 0.
    let (stats, [fwd, _, _]) = still_iteration(distill_config("rl", "frozen", still()));
    assert!(close(stat(&stats, "distill_loss"), fwd, tol(fwd)));
    assert_eq!(stat(&stats, "distill_alpha"), 0.0);
}

#[test]
fn act_answers_the_students_actions_and_in_rl_mode_the_update_is_ppos() {
    // The same student, seed and batches: as plain PPO, as a distiller in `rl` mode (the
    // divergence is not in the loss) and in `opd` mode (it is).
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        schedule: choice("fixed"),
        ..ppo_config()
    };
    let n = 3;
    let run = |alg: &mut dyn Algorithm| {
        let mut rng = Rng::seed_from_u64(6);
        let actions = rollout(alg, n, &mut rng);
        alg.update(&mut rng, &mut NoHooks, 0).unwrap();
        let t = named(alg.save().unwrap());
        (actions, under(&t, "actor."), under(&t, "critic."))
    };
    let mut ppo = ppo_with_actions(cfg.clone(), NA, n, 5);
    let (a_ppo, actor_ppo, critic_ppo) = run(&mut ppo);
    let mut rl = distiller(distill_config("rl", "frozen", cfg.clone()), n);
    assert_eq!((rl.name(), rl.num_steps_per_env()), ("distill", 2));
    let (a_rl, actor_rl, critic_rl) = run(&mut rl);
    assert_eq!(a_rl.len(), 2 * n * NA);
    assert_eq!(a_rl, a_ppo, "the distiller's actions are not its student's");
    assert_eq!(
        actor_rl, actor_ppo,
        "rl mode added something to the actor's loss"
    );
    assert_eq!(critic_rl, critic_ppo);
    let mut opd = distiller(distill_config("opd", "frozen", cfg), n);
    let (a_opd, actor_opd, _) = run(&mut opd);
    assert_eq!(
        a_opd, a_ppo,
        "before its first update the student acts as PPO's"
    );
    assert_ne!(actor_opd, actor_ppo, "opd mode did not add the divergence");
}

/// Pure distillation (`mode = "distill"`, so PPO's RL terms are off) for one update with
/// `alpha` and the outer `hooks`: the student's mean-head bias before and after. The teacher's
/// mean head is set 5 above anything the student outputs.
fn distill_step(alpha: f64, hooks: &mut dyn TrainHooks) -> (Vec<f32>, Vec<f32>) {
    let cfg = DistillConfig {
        alpha,
        alpha_final: alpha,
        ..distill_config(
            "distill",
            "frozen",
            PpoConfig {
                num_steps_per_env: 2,
                schedule: choice("fixed"),
                learning_rate: 1e-3,
                ..ppo_config()
            },
        )
    };
    let n = 4;
    let t = teacher(9);
    set_param(t.as_ref(), "actor.1.bias", &[5.0, 5.0]);
    let student = ppo_with_actions(cfg.ppo.clone(), NA, n, 5);
    let mut d = Distill::new(cfg, student, Teacher::Local(t), n, None).unwrap();
    let head = |d: &Distill| values(&named(d.save().unwrap())["actor.1.bias"]);
    let before = head(&d);
    let mut rng = Rng::seed_from_u64(6);
    rollout(&mut d, n, &mut rng);
    d.update(&mut rng, hooks, 0).unwrap();
    (before, head(&d))
}

#[test]
fn pure_distillation_moves_the_actor_by_alpha_times_the_divergence_plus_the_outer_loss() {
    // Adam's first step moves each parameter by exactly the learning rate against the sign of
    // its gradient. The divergence pulls the student's means up towards the teacher's.
    let lr = 1e-3;
    let (b0, b1) = distill_step(1.0, &mut NoHooks);
    for j in 0..NA {
        assert!(
            close(f64::from(b1[j] - b0[j]), lr, 1e-6),
            "{b0:?} -> {b1:?}"
        );
    }
    // Alpha 0: no gradient reaches the actor at all.
    let (b0, b1) = distill_step(0.0, &mut NoHooks);
    assert_eq!(b0, b1, "the actor moved with alpha 0 and no RL loss");
    // Alpha 0 and an outer hook that pulls the means down: its loss is added, not subtracted
    // or multiplied.
    let (b0, b1) = distill_step(0.0, &mut PullMeansDown);
    for j in 0..NA {
        assert!(
            close(f64::from(b1[j] - b0[j]), -lr, 1e-6),
            "{b0:?} -> {b1:?}"
        );
    }
}

/// An outer hook that counts its calls.
struct Counting(usize, usize);
impl TrainHooks for Counting {
    fn extra_loss(&mut self, _: &LossContext<'_>) -> anyhow::Result<Option<Tensor>> {
        self.0 += 1;
        Ok(None)
    }
    fn after_update(&mut self, _: usize, _: &dyn Policy) -> anyhow::Result<()> {
        self.1 += 1;
        Ok(())
    }
}

#[test]
fn the_outer_hooks_are_called_through_the_distiller() {
    let mut d = distiller(distill_config("opd", "frozen", still()), 3);
    let mut rng = Rng::seed_from_u64(6);
    rollout(&mut d, 3, &mut rng);
    let mut hooks = Counting(0, 0);
    d.update(&mut rng, &mut hooks, 0).unwrap();
    // 2 epochs of 2 minibatches.
    assert_eq!(hooks.0, 4);
    assert!(hooks.1 >= 1, "after_update never reached the outer hooks");
}

// ---------------------------------------------------------------------------------------------
// The EMA teacher

/// Runs one iteration in which the given episode returns finish (one per step, in env 0).
fn iteration_with_returns(
    d: &mut Distill,
    totals: &[f64],
    rng: &mut Rng,
) -> Vec<(&'static str, f64)> {
    let n = 3;
    let mut b = random_batch(n, rng);
    for i in 0..d.num_steps_per_env() {
        d.act(&b, rng).unwrap();
        let finished: Vec<Option<f64>> = (0..n)
            .map(|e| (e == 0).then(|| totals.get(i).copied()).flatten())
            .collect();
        b = with_returns(random_batch(n, rng), &finished);
        d.process_env_step(&b).unwrap();
    }
    d.compute_returns(&b).unwrap();
    d.update(rng, &mut NoHooks, 0).unwrap()
}

fn ema_cfg(teacher_update: &str) -> DistillConfig {
    let ppo = PpoConfig {
        num_steps_per_env: 4,
        schedule: choice("fixed"),
        learning_rate: 1e-2,
        ..ppo_config()
    };
    distill_config("opd", teacher_update, ppo)
}

#[test]
fn the_window_keeps_the_last_episode_returns() {
    let mut d = distiller(ema_cfg("ema"), 3);
    let mut rng = Rng::seed_from_u64(6);
    // Window 3: of 0, 20, 20, 20 the first drops out; the mean 20 beats the teacher's 10 by
    // more than the margin of 1, so the teacher moves.
    let stats = iteration_with_returns(&mut d, &[0.0, 20.0, 20.0, 20.0], &mut rng);
    let recent = vals64(&named(d.save().unwrap())["distill.recent_returns"]);
    assert_eq!(recent, [20.0, 20.0, 20.0]);
    assert_eq!((stat(&stats, "ema_updates"), d.ema_updates()), (1.0, 1));
    // 20, 0, 0 (mean 6.7) does not: the old 20s have left the window.
    let stats = iteration_with_returns(&mut d, &[0.0, 0.0], &mut rng);
    let recent = vals64(&named(d.save().unwrap())["distill.recent_returns"]);
    assert_eq!(recent, [20.0, 0.0, 0.0]);
    assert_eq!((stat(&stats, "ema_updates"), d.ema_updates()), (1.0, 1));
}

#[test]
fn an_ema_teacher_moves_ema_rate_of_the_way_to_the_updated_student() {
    let mut d = distiller(ema_cfg("ema"), 3);
    let mut rng = Rng::seed_from_u64(6);
    let before = under(&named(d.save().unwrap()), "teacher.");
    let stats = iteration_with_returns(&mut d, &[20.0, 20.0, 20.0], &mut rng);
    assert_eq!(stat(&stats, "ema_updates"), 1.0);
    let t = named(d.save().unwrap());
    let after = under(&t, "teacher.");
    let r = 0.25;
    assert!(!before.is_empty());
    for (name, t0) in &before {
        let t1 = &after[name];
        if name.ends_with(".count") || name.ends_with(".clip") {
            assert_eq!(t0, t1, "{name}");
            continue;
        }
        // The student's weights (and normaliser) after its update, under the same name.
        let s = vals64(&t[name.as_str()]);
        assert!(t0 != &s, "{name}: teacher and student start equal");
        for ((t0, s), t1) in t0.iter().zip(&s).zip(t1) {
            let want = t0 + r * (s - t0);
            assert!(close(*t1, want, 1e-5), "{name}: {t0} -> {t1}, want {want}");
        }
    }
    // The condition still holds: the next update moves it again.
    let stats = iteration_with_returns(&mut d, &[], &mut rng);
    assert_eq!((stat(&stats, "ema_updates"), d.ema_updates()), (2.0, 2));
}

#[test]
fn a_frozen_teacher_never_moves_even_when_the_student_beats_it() {
    let mut d = distiller(ema_cfg("frozen"), 3);
    let mut rng = Rng::seed_from_u64(6);
    let before = under(&named(d.save().unwrap()), "teacher.");
    let stats = iteration_with_returns(&mut d, &[20.0, 20.0, 20.0], &mut rng);
    assert_eq!(stat(&stats, "ema_updates"), 0.0);
    assert_eq!(under(&named(d.save().unwrap()), "teacher."), before);
}

// ---------------------------------------------------------------------------------------------
// Resume

#[test]
fn a_saved_distiller_loads_back_exactly() {
    let mut a = distiller(ema_cfg("ema"), 3);
    let mut rng = Rng::seed_from_u64(6);
    iteration_with_returns(&mut a, &[20.0, 20.0, 20.0], &mut rng);
    let saved = named(a.save().unwrap());
    for k in [
        "distill.recent_returns",
        "distill.ema_updates",
        "teacher.actor.1.bias",
        "actor.1.bias",
    ] {
        assert!(saved.contains_key(k), "{k} not saved");
    }
    // Another student and teacher, from other seeds.
    let cfg = ema_cfg("ema");
    let student = ppo_with_actions(cfg.ppo.clone(), NA, 3, 50);
    let mut b = Distill::new(cfg, student, Teacher::Local(teacher(90)), 3, Some(10.0)).unwrap();
    b.load(&saved).unwrap();
    assert_eq!(b.ema_updates(), 1);
    let reloaded = named(b.save().unwrap());
    assert_eq!(reloaded.len(), saved.len());
    for (k, v) in &saved {
        assert_eq!(vals64(&reloaded[k]), vals64(v), "{k}");
    }
}

#[test]
fn rollout_noise_scales_the_students_exploration_in_pure_distillation() {
    // One batch of observations, acted on with noise drawn from the rng `seed`.
    let batch = random_batch(3, &mut Rng::seed_from_u64(7));
    let act = |noise: f64, seed: u64| {
        let cfg = DistillConfig {
            rollout_noise: noise,
            ..distill_config("distill", "frozen", still())
        };
        let mut d = distiller(cfg, 3);
        d.act(&batch, &mut Rng::seed_from_u64(seed))
            .unwrap()
            .to_vec()
    };
    // At 0 the noise plays no part: the action is the student's mean.
    assert_eq!(act(0.0, 1), act(0.0, 2));
    assert_ne!(act(1.0, 1), act(1.0, 2));
    // In between, the actions leave the mean in proportion to the scale.
    let (mean, full, half) = (act(0.0, 1), act(1.0, 1), act(0.5, 1));
    let mut moved = 0.0f32;
    for ((m, f), h) in mean.iter().zip(&full).zip(&half) {
        assert!(
            (h - m - 0.5 * (f - m)).abs() < 1e-5,
            "mean {m} full {f} half {h}"
        );
        moved += (f - m).abs();
    }
    assert!(
        moved > 0.1,
        "sampled actions should leave the mean ({moved})"
    );
}
