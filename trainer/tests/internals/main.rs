//! The learning algorithms' internals on small fixed inputs, with the arithmetic worked by hand
//! in the comments (in the style of rsl_rl's GAE test): a broken loss, learning-rate schedule,
//! target update or time-out bootstrap changes a number here even when cart-pole still balances.
use std::collections::HashMap;
use std::f64::consts::PI;

use candle_core::{DType, Device, Tensor, Var};
use clawrl_policy::{Activation, ObsSource, Policy, PolicyConfig, Registry, Rng};
use clawrl_sim::Batch;
use clawrl_trainer::algorithms::ppo::{
    adaptive_learning_rate, clipped_surrogate_loss, clipped_value_loss,
};
use clawrl_trainer::algorithms::sac::soft_update;
use clawrl_trainer::algorithms::{Algorithm, NoHooks, Ppo, Sac};
use clawrl_trainer::config::{PolicySection, PpoConfig, SacConfig};
use rand::{RngExt, SeedableRng};

mod distill;
mod gait;
mod tracking;

const DEV: Device = Device::Cpu;

/// A closed config choice (`ppo.schedule`, `distill.mode`, ...) from its spelling in a config
/// file.
pub fn choice<T: serde::de::DeserializeOwned>(spelling: &str) -> T {
    toml::Value::String(spelling.into()).try_into().unwrap()
}

fn t1(v: &[f32]) -> Tensor {
    Tensor::from_slice(v, v.len(), &DEV).unwrap()
}

fn scalar(t: &Tensor) -> f64 {
    f64::from(t.to_scalar::<f32>().unwrap())
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

fn ppo_config() -> PpoConfig {
    PpoConfig {
        num_steps_per_env: 1,
        num_learning_epochs: 1,
        num_mini_batches: 1,
        clip_param: 0.2,
        gamma: 0.5,
        lam: 0.95,
        value_loss_coef: 1.0,
        entropy_coef: 0.0,
        learning_rate: 1e-3,
        max_grad_norm: 1.0,
        use_clipped_value_loss: true,
        schedule: choice("adaptive"),
        desired_kl: 0.01,
        min_learning_rate: 1e-5,
        max_learning_rate: 1e-2,
        normalize_advantage_per_mini_batch: false,
    }
}

fn sac_config() -> SacConfig {
    SacConfig {
        num_steps_per_env: 1,
        updates_per_iteration: 1,
        buffer_size: 64,
        batch_size: 8,
        learning_starts: 8,
        gamma: 0.5,
        tau: 0.25,
        actor_learning_rate: 1e-2,
        critic_learning_rate: 1e-2,
        alpha_learning_rate: 1e-2,
        init_alpha: 0.5,
        target_entropy_scale: 1.0,
        max_grad_norm: 10.0,
    }
}

/// Networks over 2-D privileged observations and 1-D actions; the critic is linear when
/// `critic_hidden` is empty.
fn section(kind: &str, critic_hidden: Vec<usize>) -> PolicySection {
    PolicySection {
        kind: kind.into(),
        actor_hidden: vec![8],
        critic_hidden,
        activation: Activation::Elu,
        init_std: 1.0,
        actor_obs: ObsSource::Privileged,
        critic_obs: ObsSource::Privileged,
        obs_clip: 10.0,
        history: 0,
        conv_channels: 0,
    }
}

const OBS: usize = 2;

fn policy(p: &PolicySection, rng: &mut Rng) -> Box<dyn Policy> {
    policy_with_actions(p, 1, rng)
}

fn policy_with_actions(p: &PolicySection, action_dim: usize, rng: &mut Rng) -> Box<dyn Policy> {
    clawrl_policy::init_candle_threads(1);
    Registry::default()
        .build(
            &PolicyConfig {
                kind: p.kind.clone(),
                obs_dim: OBS,
                action_dim,
                obs_source: p.actor_obs,
                hidden: p.actor_hidden.clone(),
                activation: p.activation,
                init_std: p.init_std,
                obs_clip: p.obs_clip,
                history: 0,
                conv_channels: 0,
            },
            rng,
        )
        .unwrap()
}

fn ppo(cfg: PpoConfig, critic_hidden: Vec<usize>, num_envs: usize, seed: u64) -> Ppo {
    let mut rng = Rng::seed_from_u64(seed);
    let p = section("gaussian_mlp", critic_hidden);
    let pol = policy(&p, &mut rng);
    Ppo::new(cfg, pol, &p, OBS, num_envs, &mut rng).unwrap()
}

/// PPO with `action_dim` actions and a linear critic.
fn ppo_with_actions(cfg: PpoConfig, action_dim: usize, num_envs: usize, seed: u64) -> Ppo {
    let mut rng = Rng::seed_from_u64(seed);
    let p = section("gaussian_mlp", vec![]);
    let pol = policy_with_actions(&p, action_dim, &mut rng);
    Ppo::new(cfg, pol, &p, OBS, num_envs, &mut rng).unwrap()
}

/// The outcome of one vectorised step, observations in the privileged layout only.
fn batch(
    obs: Vec<f32>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    final_obs: Vec<f32>,
) -> Batch {
    let n = rewards.len();
    Batch {
        onboard: Vec::new(),
        privileged: obs,
        rewards,
        terminated,
        truncated,
        final_privileged: final_obs,
        final_onboard: Vec::new(),
        finished: vec![None; n],
        new_episode: vec![false; n],
    }
}

fn random_batch(n: usize, rng: &mut Rng) -> Batch {
    let obs = (0..n * OBS).map(|_| rng.random_range(-1.0..1.0)).collect();
    let rewards = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    batch(
        obs,
        rewards,
        vec![false; n],
        vec![false; n],
        vec![0.0; n * OBS],
    )
}

/// One rollout of `num_steps_per_env` random steps of `n` environments, returns computed;
/// returns the actions taken, step by step.
fn rollout(alg: &mut dyn Algorithm, n: usize, rng: &mut Rng) -> Vec<f32> {
    let mut actions = Vec::new();
    let mut b = random_batch(n, rng);
    for _ in 0..alg.num_steps_per_env() {
        actions.extend_from_slice(alg.act(&b, rng).unwrap());
        b = random_batch(n, rng);
        alg.process_env_step(&b).unwrap();
    }
    alg.compute_returns(&b).unwrap();
    actions
}

/// Saved tensors by name, as copies: a saved tensor shares its storage with the live
/// parameter, which later updates overwrite in place.
fn named(t: Vec<(String, Tensor)>) -> HashMap<String, Tensor> {
    t.into_iter().map(|(k, v)| (k, v.copy().unwrap())).collect()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

// ---------------------------------------------------------------------------------------------
// PPO losses

#[test]
fn clipped_surrogate_loss_on_known_ratios_and_advantages() {
    // ε = 0.2; per sample the loss is max(−A r, −A clamp(r, 0.8, 1.2)):
    //   r = 1.5, A = +1: max(−1.5, −1.2) = −1.2   (gain clipped: no credit beyond 1 + ε)
    //   r = 0.5, A = +1: max(−0.5, −0.8) = −0.5   (the unclipped, pessimistic term)
    //   r = 1.1, A = −1: max( 1.1,  1.1) =  1.1   (inside the trust region)
    //   r = 0.7, A = −1: max( 0.7,  0.8) =  0.8   (loss clipped: no credit below 1 − ε)
    // mean = (−1.2 − 0.5 + 1.1 + 0.8) / 4 = 0.05.
    // (Unclipped: −0.05; with min instead of max: −0.125.)
    let loss = clipped_surrogate_loss(
        &t1(&[1.5, 0.5, 1.1, 0.7]),
        &t1(&[1.0, 1.0, -1.0, -1.0]),
        0.2,
    )
    .unwrap();
    assert!(close(scalar(&loss), 0.05, 1e-6), "{}", scalar(&loss));
    // Ratio 1 everywhere: the loss is −mean(A).
    let loss = clipped_surrogate_loss(&t1(&[1.0, 1.0]), &t1(&[2.0, 4.0]), 0.2).unwrap();
    assert!(close(scalar(&loss), -3.0, 1e-6));
}

#[test]
fn clipped_value_loss_on_known_values() {
    // ε = 0.2; V_clip = V_old + clamp(V − V_old, ±0.2); per sample max((V − R)², (V_clip − R)²):
    //   V = 1.0, V_old = 0.5, R = 2.0: V_clip = 0.7;  max(1.00, 1.69) = 1.69
    //   V = 0.0, V_old = 0.1, R = 0.0: V_clip = 0.0;  max(0.00, 0.00) = 0.00
    //   V = 3.0, V_old = 1.0, R = 3.0: V_clip = 1.2;  max(0.00, 3.24) = 3.24
    //   V = −1,  V_old = 0.0, R = 1.0: V_clip = −0.2; max(4.00, 1.44) = 4.00
    // mean = (1.69 + 0 + 3.24 + 4) / 4 = 2.2325.
    // (With min instead of max: (1 + 0 + 0 + 1.44) / 4 = 0.61; unclipped: 1.25.)
    let loss = clipped_value_loss(
        &t1(&[1.0, 0.0, 3.0, -1.0]),
        &t1(&[0.5, 0.1, 1.0, 0.0]),
        &t1(&[2.0, 0.0, 3.0, 1.0]),
        0.2,
    )
    .unwrap();
    assert!(close(scalar(&loss), 2.2325, 1e-5), "{}", scalar(&loss));
}

// ---------------------------------------------------------------------------------------------
// PPO's KL-adaptive learning rate

#[test]
fn kl_adaptive_learning_rate_on_known_kls() {
    // desired_kl = 0.01, limits [1e-5, 1e-2].
    let c = ppo_config();
    let lr = 1e-3;
    // KL 0.03 > 2 × 0.01: lr / 1.5 = 6.6667e-4.
    assert!(close(
        adaptive_learning_rate(lr, 0.03, &c),
        1e-3 / 1.5,
        1e-15
    ));
    // KL 0.004 < 0.01 / 2: lr × 1.5 = 1.5e-3.
    assert!(close(adaptive_learning_rate(lr, 0.004, &c), 1.5e-3, 1e-15));
    // Inside [0.005, 0.02], at both edges, at zero (no measurement) and NaN: unchanged.
    for kl in [0.01, 0.02, 0.005, 0.0, f64::NAN, f64::INFINITY] {
        assert_eq!(adaptive_learning_rate(lr, kl, &c), lr, "kl = {kl}");
    }
    // The limits hold: 1.2e-5 / 1.5 = 8e-6 stops at 1e-5; 8e-3 × 1.5 = 1.2e-2 stops at 1e-2.
    assert_eq!(adaptive_learning_rate(1.2e-5, 0.03, &c), 1e-5);
    assert_eq!(adaptive_learning_rate(8e-3, 0.001, &c), 1e-2);
}

/// One PPO iteration (4 steps of 8 environments, 4 epochs of 1 minibatch) with `desired_kl`;
/// returns the learning rate after it.
fn ppo_learning_rate_after_update(desired_kl: f64, schedule: &str) -> f64 {
    let cfg = PpoConfig {
        num_steps_per_env: 4,
        num_learning_epochs: 4,
        learning_rate: 1e-2,
        desired_kl,
        min_learning_rate: 1e-6,
        max_learning_rate: 1.0,
        schedule: choice(schedule),
        ..ppo_config()
    };
    let n = 8;
    let mut alg = ppo(cfg, vec![8], n, 7);
    let mut rng = Rng::seed_from_u64(11);
    let mut b = random_batch(n, &mut rng);
    for _ in 0..4 {
        alg.act(&b, &mut rng).unwrap();
        b = random_batch(n, &mut rng);
        alg.process_env_step(&b).unwrap();
    }
    alg.compute_returns(&b).unwrap();
    let stats = alg.update(&mut rng, &mut NoHooks, 0).unwrap();
    let kl = stats.iter().find(|(k, _)| *k == "approx_kl").unwrap().1;
    assert!(kl > 0.0 && kl.is_finite(), "the policy moved: KL {kl}");
    alg.learning_rate()
}

/// `lr / lr0` as a power of 1.5.
fn steps_of_1_5(lr: f64, lr0: f64) -> f64 {
    (lr / lr0).ln() / 1.5f64.ln()
}

#[test]
fn ppo_update_adapts_its_learning_rate_to_the_measured_kl() {
    // The first minibatch measures KL ≈ 0 (the policy has not moved yet); each later one sees
    // the KL of the steps taken so far.
    // desired_kl = 1e-9: every KL after a step is above 2e-9, so the rate is divided by 1.5
    // per minibatch after the first: 1e-2 / 1.5^3 (the first may add one × 1.5 if its KL is
    // a rounding error above zero).
    let lr0 = 1e-2;
    let down = ppo_learning_rate_after_update(1e-9, "adaptive");
    let k = steps_of_1_5(down, lr0);
    assert!(
        close(k, k.round(), 1e-9) && (-3.0..=-2.0).contains(&k.round()),
        "lr {down}: {k} steps of 1.5"
    );
    // desired_kl = 10: every KL is below 5, so the rate is multiplied by 1.5 each time.
    let up = ppo_learning_rate_after_update(10.0, "adaptive");
    let k = steps_of_1_5(up, lr0);
    assert!(
        close(k, k.round(), 1e-9) && (3.0..=4.0).contains(&k.round()),
        "lr {up}: {k} steps of 1.5"
    );
    // A fixed schedule keeps it.
    assert_eq!(ppo_learning_rate_after_update(1e-9, "fixed"), lr0);
}

// ---------------------------------------------------------------------------------------------
// Acting

#[test]
fn ppo_act_samples_mean_plus_std_times_noise_and_stores_every_row() {
    // 3 environments, 2 actions, 2 steps: in the second step every row sits where an index
    // slip (t·n + e, t·n·na, e·na) would move it. The critic is V(s) = 2 s₀ − s₁ + 0.25 on
    // the normalised critic observation.
    let (n, na) = (3, 2);
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        ..ppo_config()
    };
    let mut alg = ppo_with_actions(cfg, na, n, 3);
    assert_eq!((alg.name(), alg.num_steps_per_env()), ("ppo", 2));
    let mut t = named(alg.save().unwrap());
    set(&mut t, "critic.0.weight", &[2.0, -1.0]);
    set(&mut t, "critic.0.bias", &[0.25]);
    alg.load(&t).unwrap();
    let mut obs_rng = Rng::seed_from_u64(1);
    let mut rng = Rng::seed_from_u64(9);
    for step in 0..2 {
        let b = random_batch(n, &mut obs_rng);
        // Acting draws nothing from the RNG but the noise, so a copy replays it.
        let noise = clawrl_trainer::algorithms::normal_noise(&mut rng.clone(), n * na);
        let actions = alg.act(&b, &mut rng).unwrap().to_vec();
        let s = alg.storage();
        let rows = step * n..(step + 1) * n;
        let obs = &s.actor_obs[rows.start * OBS..rows.end * OBS];
        let d = alg
            .policy()
            .distribution_detached(&Tensor::from_slice(obs, (n, OBS), &DEV).unwrap())
            .unwrap();
        let (mean, log_std) = (values(&d.mean), values(&d.log_std));
        for e in 0..n {
            let row = step * n + e;
            let mut log_prob = 0.0;
            for k in 0..na {
                let (j, stored) = (e * na + k, row * na + k);
                assert_eq!(
                    actions[j],
                    mean[j] + log_std[j].exp() * noise[j],
                    "action {j}"
                );
                assert_eq!(s.actions[stored], actions[j]);
                assert_eq!(s.means[stored], mean[j]);
                assert_eq!(s.log_stds[stored], log_std[j]);
                let z = f64::from(noise[j]);
                log_prob += -0.5 * z * z - f64::from(log_std[j]) - 0.5 * (2.0 * PI).ln();
            }
            let lp = f64::from(s.log_probs[row]);
            assert!(close(lp, log_prob, 1e-4), "row {row}: {lp} vs {log_prob}");
            let c = &s.critic_obs[row * OBS..(row + 1) * OBS];
            let v = 2.0 * c[0] - c[1] + 0.25;
            assert!(
                close(f64::from(s.values[row]), f64::from(v), 1e-5),
                "value {row}"
            );
        }
        let mut next = random_batch(n, &mut obs_rng);
        next.terminated[1] = true;
        alg.process_env_step(&next).unwrap();
        let s = alg.storage();
        for e in 0..n {
            assert_eq!(
                s.rewards[step * n + e],
                next.rewards[e],
                "reward {step}, {e}"
            );
            assert_eq!(s.dones[step * n + e], f32::from(e == 1), "done {step}, {e}");
        }
    }
}

/// The actor's and the critic's parameters after one PPO update with RL weight `rl_coef`.
fn ppo_params_after_update(rl_coef: f64) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let cfg = PpoConfig {
        num_steps_per_env: 4,
        entropy_coef: 0.01,
        ..ppo_config()
    };
    let n = 8;
    let mut alg = ppo(cfg, vec![8], n, 7);
    alg.set_rl_coef(rl_coef);
    let split = |alg: &Ppo| {
        let t = named(alg.save().unwrap());
        let mut keys: Vec<&String> = t.keys().collect();
        keys.sort();
        let (mut actor, mut critic) = (Vec::new(), Vec::new());
        for k in keys {
            if k.starts_with("actor.") {
                actor.extend(values(&t[k]));
            } else if k.starts_with("critic.") {
                critic.extend(values(&t[k]));
            }
        }
        (actor, critic)
    };
    let (actor0, critic0) = split(&alg);
    let mut rng = Rng::seed_from_u64(11);
    rollout(&mut alg, n, &mut rng);
    alg.update(&mut rng, &mut NoHooks, 0).unwrap();
    let (actor1, critic1) = split(&alg);
    (actor0, actor1, critic0, critic1)
}

#[test]
fn with_the_rl_weight_at_zero_ppo_trains_only_the_critic() {
    // Pure distillation's set-up (its hook adds the only actor loss): without a hook the
    // actor's gradient is zero and Adam leaves it exactly where it was.
    let (a0, a1, c0, c1) = ppo_params_after_update(0.0);
    assert!(!a0.is_empty() && !c0.is_empty());
    assert_eq!(a0, a1, "the actor moved with rl_coef 0");
    assert_ne!(c0, c1, "the critic did not learn");
    let (a0, a1, _, _) = ppo_params_after_update(1.0);
    assert_ne!(a0, a1, "the actor did not learn with rl_coef 1");
}

// ---------------------------------------------------------------------------------------------
// Time-outs

/// Sets `name` in `t` to `values` with the stored tensor's shape and dtype.
fn set(t: &mut HashMap<String, Tensor>, name: &str, values: &[f64]) {
    let old = t.get(name).unwrap_or_else(|| panic!("no tensor `{name}`"));
    let new = Tensor::new(values, &DEV)
        .unwrap()
        .to_dtype(old.dtype())
        .unwrap()
        .reshape(old.shape())
        .unwrap();
    t.insert(name.into(), new);
}

#[test]
fn ppo_bootstraps_time_outs_with_the_value_of_the_final_observation() {
    // A linear critic V(s) = s₀ + 0.5 on an identity normaliser (count 1e15: the batches seen
    // while acting do not move it), γ = 0.5, one step of four environments, reward 1 each:
    //   env 0 timed out in s_T = (3, 9):      r = 1 + γ V(s_T) = 1 + 0.5 × 3.5 = 2.75
    //   env 1 terminated in (5, 0):            r = 1, no bootstrap
    //   env 2 terminated and timed out (7, 0): r = 1 (termination wins)
    //   env 3 still running, next s = (1, 0):  r = 1
    // All next observations (after the automatic reset) are (1, 0), V = 1.5. Done steps do
    // not bootstrap from the next observation; the running one does:
    //   returns = (2.75, 1, 1, 1 + 0.5 × 1.5 = 1.75).
    // (Without the time-out bootstrap env 0's return is 1; bootstrapping it from the reset
    // observation instead of s_T gives 1.75.)
    let mut alg = ppo(ppo_config(), vec![], 4, 3);
    let mut t = named(alg.save().unwrap());
    set(&mut t, "critic.0.weight", &[1.0, 0.0]);
    set(&mut t, "critic.0.bias", &[0.5]);
    set(&mut t, "critic_normalizer.mean", &[0.0, 0.0]);
    set(&mut t, "critic_normalizer.var", &[1.0, 1.0]);
    set(&mut t, "critic_normalizer.count", &[1e15]);
    alg.load(&t).unwrap();

    let mut rng = Rng::seed_from_u64(5);
    let before = batch(
        vec![0.2, -0.1, 0.4, 0.3, -0.6, 0.0, 0.1, 0.9],
        vec![0.0; 4],
        vec![false; 4],
        vec![false; 4],
        vec![0.0; 8],
    );
    alg.act(&before, &mut rng).unwrap();
    let after = batch(
        vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
        vec![1.0; 4],
        vec![false, true, true, false],
        vec![true, false, true, false],
        vec![3.0, 9.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0],
    );
    alg.process_env_step(&after).unwrap();
    alg.compute_returns(&after).unwrap();
    let s = alg.storage();
    let want_rewards = [2.75, 1.0, 1.0, 1.0];
    let want_returns = [2.75, 1.0, 1.0, 1.75];
    for e in 0..4 {
        assert!(
            close(f64::from(s.rewards[e]), want_rewards[e], 1e-5),
            "rewards {:?}",
            s.rewards
        );
        assert!(
            close(f64::from(s.returns[e]), want_returns[e], 1e-5),
            "returns {:?}",
            s.returns
        );
    }
    assert_eq!(s.dones, vec![1.0, 1.0, 1.0, 0.0]);
}

fn sac(cfg: SacConfig, num_envs: usize, seed: u64) -> Sac {
    let mut rng = Rng::seed_from_u64(seed);
    let p = section("squashed_gaussian_mlp", vec![8]);
    let pol = policy(&p, &mut rng);
    Sac::new(cfg, pol, &p, OBS, num_envs, &mut rng).unwrap()
}

#[test]
fn sac_stores_time_outs_as_bootstrapping_transitions_from_the_final_observation() {
    // Same four outcomes as above. A time-out is not terminal (its target keeps
    // γ min Q'(s_T, a')) and its next observation is s_T, not the reset observation.
    let mut alg = sac(sac_config(), 4, 3);
    let mut rng = Rng::seed_from_u64(5);
    let before = random_batch(4, &mut rng);
    alg.act(&before, &mut rng).unwrap();
    let after = batch(
        vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
        vec![1.0; 4],
        vec![false, true, true, false],
        vec![true, false, true, false],
        vec![3.0, 9.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0],
    );
    alg.process_env_step(&after).unwrap();
    let b = alg.buffer();
    assert_eq!(b.len, 4);
    assert_eq!(&b.terminals[..4], &[0.0, 1.0, 1.0, 0.0]);
    assert_eq!(
        &b.next_critic_obs[..8],
        &[3.0, 9.0, 5.0, 0.0, 7.0, 0.0, 1.0, 0.0]
    );
    assert_eq!(&b.next_actor_obs[..8], &b.next_critic_obs[..8]);
    assert_eq!(&b.rewards[..4], &[1.0; 4]);
}

// ---------------------------------------------------------------------------------------------
// SAC's target networks

fn var(v: &[f32]) -> Var {
    Var::from_tensor(&t1(v)).unwrap()
}

#[test]
fn one_soft_target_update_step_on_known_weights() {
    // τ = 0.1: target ← 0.1 source + 0.9 target.
    //   0.1 × 1 + 0.9 × 0 = 0.1;  0.1 × 20 + 0.9 × 10 = 11;  0.1 × 4 + 0.9 × (−4) = −3.2
    // (τ and 1 − τ swapped: 0.9, 19, 3.2.)
    let target = vec![("t".to_string(), var(&[0.0, 10.0, -4.0]))];
    let source = vec![("s".to_string(), var(&[1.0, 20.0, 4.0]))];
    soft_update(&target, &source, 0.1).unwrap();
    let got = values(target[0].1.as_tensor());
    for (g, w) in got.iter().zip([0.1f32, 11.0, -3.2]) {
        assert!((g - w).abs() < 1e-5, "{got:?}");
    }
    // The source is untouched.
    assert_eq!(values(source[0].1.as_tensor()), vec![1.0, 20.0, 4.0]);
    // A second step moves the remaining gap by another 10 %: 0.1 + 0.1 × (1 − 0.1) = 0.19.
    soft_update(&target, &source, 0.1).unwrap();
    assert!((values(target[0].1.as_tensor())[0] - 0.19).abs() < 1e-6);
}

#[test]
fn sac_update_moves_targets_a_fraction_tau_towards_the_critics() {
    // At construction the targets equal the critics (Q_old). One gradient step gives Q_new;
    // then target = τ Q_new + (1 − τ) Q_old, τ = 0.25, for every parameter of both critics.
    let mut alg = sac(sac_config(), 8, 9);
    let mut rng = Rng::seed_from_u64(13);
    let mut b = random_batch(8, &mut rng);
    for _ in 0..2 {
        alg.act(&b, &mut rng).unwrap();
        b = random_batch(8, &mut rng);
        alg.process_env_step(&b).unwrap();
    }
    let old = named(alg.save().unwrap());
    let stats = alg.update(&mut rng, &mut NoHooks, 0).unwrap();
    let q_loss = stats.iter().find(|(k, _)| *k == "q_loss").unwrap().1;
    assert!(q_loss.is_finite(), "one update ran: {stats:?}");
    let new = named(alg.save().unwrap());
    let mut checked = 0;
    let mut moved = 0.0f32;
    for q in ["q1", "q2"] {
        for layer in 0..2 {
            for p in ["weight", "bias"] {
                let key = format!("{q}.{layer}.{p}");
                let tkey = format!("{q}_target.{layer}.{p}");
                let (q_old, t_old) = (values(&old[&key]), values(&old[&tkey]));
                assert_eq!(q_old, t_old, "targets start as copies");
                let (q_new, t_new) = (values(&new[&key]), values(&new[&tkey]));
                for i in 0..q_old.len() {
                    let want = 0.25 * q_new[i] + 0.75 * q_old[i];
                    assert!(
                        (t_new[i] - want).abs() < 1e-6,
                        "{tkey}[{i}]: {} vs {want}",
                        t_new[i]
                    );
                    moved = moved.max((q_new[i] - q_old[i]).abs());
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 8);
    assert!(
        moved > 1e-4,
        "the critics moved ({moved}), so the check has teeth"
    );
}

#[test]
fn the_soft_update_pairs_parameters_of_equal_count() {
    let target = vec![("t".to_string(), var(&[0.0]))];
    assert!(soft_update(&target, &[], 0.5).is_err());
    let z = Var::from_tensor(&Tensor::zeros(1, DType::F32, &DEV).unwrap()).unwrap();
    soft_update(&target, &[("s".into(), z)], 0.5).unwrap();
}

// ---------------------------------------------------------------------------------------------
// One SAC update, worked through on known weights

/// SAC over 2-D observations and `action_dim` actions with linear critics.
fn sac_linear(cfg: SacConfig, action_dim: usize, num_envs: usize, seed: u64) -> Sac {
    let mut rng = Rng::seed_from_u64(seed);
    let p = section("squashed_gaussian_mlp", vec![]);
    let pol = policy_with_actions(&p, action_dim, &mut rng);
    Sac::new(cfg, pol, &p, OBS, num_envs, &mut rng).unwrap()
}

/// Identity normalisers that the batches seen while acting do not move.
fn freeze_normalizers(t: &mut HashMap<String, Tensor>) {
    let keys: Vec<String> = t.keys().cloned().collect();
    for k in keys {
        if k.ends_with("normalizer.mean") {
            set(t, &k, &[0.0; OBS]);
        } else if k.ends_with("normalizer.var") {
            set(t, &k, &[1.0; OBS]);
        } else if k.ends_with("normalizer.count") {
            set(t, &k, &[1e15]);
        }
    }
}

/// log π of a tanh-squashed Gaussian sample u (per row: the Gaussian's log density minus
/// Σ ln(1 − tanh²u + 1e-6)), in f64.
fn squashed_logp(mean: &[f32], log_std: &[f32], u: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..u.len() {
        let (m, ls) = (f64::from(mean[k]), f64::from(log_std[k]));
        let z = (u[k] - m) / ls.exp();
        s += -0.5 * z * z - ls - 0.5 * (2.0 * PI).ln() - (1.0 - u[k].tanh().powi(2) + 1e-6).ln();
    }
    s
}

/// A hook adding a constant to the actor loss.
struct Plus(f32);

impl clawrl_trainer::algorithms::TrainHooks for Plus {
    fn extra_loss(
        &mut self,
        _: &clawrl_trainer::algorithms::LossContext<'_>,
    ) -> anyhow::Result<Option<Tensor>> {
        Ok(Some(Tensor::new(self.0, &DEV)?))
    }
}

#[test]
fn one_sac_update_on_known_weights_gives_the_worked_losses_and_steps() {
    // Two environments, two actions. Warm-up actions are uniform in [-1, 1]; once the buffer
    // holds learning_starts transitions the policy acts: tanh(μ + σ ε).
    let (n, na) = (2, 2);
    let cfg = SacConfig {
        batch_size: 1,
        learning_starts: 2,
        max_grad_norm: 1e6,
        ..sac_config()
    };
    let (gamma, tau_lr, alpha0) = (cfg.gamma, cfg.critic_learning_rate, cfg.init_alpha);
    let mut alg = sac_linear(cfg.clone(), na, n, 4);
    assert_eq!((alg.name(), alg.num_steps_per_env()), ("sac", 1));
    let mut t = named(alg.save().unwrap());
    freeze_normalizers(&mut t);
    // Q1 = (1, −1, 2, 0.5)·[s, a] + 0.5, Q2 = (0.5, 0.5, 1, −1)·[s, a] − 0.25, and targets
    // Q1' = (2, 0, 1, 1)·[s, a], Q2' = (1, 1, 1, 1)·[s, a] + 1.
    let w = [
        [1.0, -1.0, 2.0, 0.5, 0.5],
        [0.5, 0.5, 1.0, -1.0, -0.25],
        [2.0, 0.0, 1.0, 1.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0],
    ];
    for (name, w) in ["q1", "q2", "q1_target", "q2_target"].iter().zip(&w) {
        set(&mut t, &format!("{name}.0.weight"), &w[..4]);
        set(&mut t, &format!("{name}.0.bias"), &w[4..]);
    }
    alg.load(&t).unwrap();
    let q = |w: &[f64; 5], s: &[f64], a: &[f64]| {
        w[0] * s[0] + w[1] * s[1] + w[2] * a[0] + w[3] * a[1] + w[4]
    };

    let mut rng = Rng::seed_from_u64(21);
    let s = [0.5f32, -1.0, 0.3, 0.8];
    let warm = alg
        .act(
            &batch(
                s.to_vec(),
                vec![0.0; n],
                vec![false; n],
                vec![false; n],
                vec![0.0; 4],
            ),
            &mut rng,
        )
        .unwrap()
        .to_vec();
    assert!(warm.iter().all(|a| (-1.0..=1.0).contains(a)), "{warm:?}");
    assert!(
        warm.iter().any(|a| *a < 0.0) && warm.iter().any(|a| *a > 0.0),
        "{warm:?}"
    );
    let s2 = [0.2f32, 0.3, -0.4, 0.1];
    alg.process_env_step(&batch(
        s2.to_vec(),
        vec![1.0, -0.5],
        vec![false; n],
        vec![false; n],
        vec![0.0; 4],
    ))
    .unwrap();
    // Every environment's row holds its own action.
    assert_eq!(&alg.buffer().actions[..n * na], &warm[..]);

    // Once learning starts, actions come from the policy.
    let noise = clawrl_trainer::algorithms::normal_noise(&mut rng.clone(), n * na);
    let acted = alg
        .act(
            &batch(
                s2.to_vec(),
                vec![0.0; n],
                vec![false; n],
                vec![false; n],
                vec![0.0; 4],
            ),
            &mut rng,
        )
        .unwrap()
        .to_vec();
    let d = alg
        .policy()
        .distribution_detached(&Tensor::from_slice(&s2, (n, OBS), &DEV).unwrap())
        .unwrap();
    let (m, ls) = (values(&d.mean), values(&d.log_std));
    for j in 0..n * na {
        let want = (f64::from(m[j]) + f64::from(ls[j]).exp() * f64::from(noise[j])).tanh();
        assert!(
            close(f64::from(acted[j]), want, 1e-5),
            "action {j}: {} vs {want}",
            acted[j]
        );
    }

    // The update replays the RNG: the batch row, then ε' for a' ~ π(s'), then ε for the actor.
    let mut replay = rng.clone();
    let row = alg.buffer().sample_indices(1, &mut replay)[0];
    let eps_next = clawrl_trainer::algorithms::normal_noise(&mut replay, na);
    let eps_pi = clawrl_trainer::algorithms::normal_noise(&mut replay, na);
    let b = alg.buffer();
    let f = |v: &[f32]| v.iter().map(|x| f64::from(*x)).collect::<Vec<f64>>();
    let (so, a) = (
        f(&b.critic_obs[row * OBS..][..OBS]),
        f(&b.actions[row * na..][..na]),
    );
    let (sn, r) = (
        f(&b.next_critic_obs[row * OBS..][..OBS]),
        f64::from(b.rewards[row]),
    );
    let dist_of = |alg: &Sac, s: &[f64]| {
        let x: Vec<f32> = s.iter().map(|v| *v as f32).collect();
        let d = alg
            .policy()
            .distribution_detached(&Tensor::from_slice(&x, (1, OBS), &DEV).unwrap())
            .unwrap();
        (values(&d.mean), values(&d.log_std))
    };
    // y = r + γ (min Q'(s', a') − α log π(a'|s')).
    let (mn, lsn) = dist_of(&alg, &sn);
    let u_next: Vec<f64> = (0..na)
        .map(|k| f64::from(mn[k]) + f64::from(lsn[k]).exp() * f64::from(eps_next[k]))
        .collect();
    let a_next: Vec<f64> = u_next.iter().map(|u| u.tanh()).collect();
    let q_next = q(&w[2], &sn, &a_next).min(q(&w[3], &sn, &a_next))
        - alpha0 * squashed_logp(&mn, &lsn, &u_next);
    let y = r + gamma * q_next;
    let (q1, q2) = (q(&w[0], &so, &a), q(&w[1], &so, &a));
    // The actor's distribution before its own step (the critics step first).
    let (mp, lsp) = dist_of(&alg, &so);

    let stats = alg.update(&mut rng, &mut Plus(0.25), 0).unwrap();
    let stat = |k: &str| stats.iter().find(|(n, _)| *n == k).unwrap().1;
    assert!(
        close(stat("q_loss"), (q1 - y).powi(2) + (q2 - y).powi(2), 1e-4),
        "q_loss {} vs {}",
        stat("q_loss"),
        (q1 - y).powi(2) + (q2 - y).powi(2)
    );
    assert!(close(stat("q_mean"), q1, 1e-5));
    // Adam's first step moves every parameter by the learning rate against its gradient's
    // sign: ∂/∂w of (Q − y)² is 2 (Q − y) x.
    let after = named(alg.save().unwrap());
    let x = [so[0], so[1], a[0], a[1], 1.0];
    let mut stepped = [[0.0; 5]; 2];
    for (c, (name, qv)) in [("q1", q1), ("q2", q2)].iter().enumerate() {
        let got: Vec<f32> = values(&after[&format!("{name}.0.weight")])
            .into_iter()
            .chain(values(&after[&format!("{name}.0.bias")]))
            .collect();
        for j in 0..5 {
            let grad = 2.0 * (qv - y) * x[j];
            stepped[c][j] = w[c][j] - tau_lr * grad.signum();
            assert!(
                close(f64::from(got[j]), stepped[c][j], 1e-5),
                "{name}[{j}]: {} vs {}",
                got[j],
                stepped[c][j]
            );
        }
    }
    // Actor: α log π(a|s) − min Q(s, a) on the stepped critics, a = tanh(μ + σ ε), plus the
    // hook's 0.25.
    let u: Vec<f64> = (0..na)
        .map(|k| f64::from(mp[k]) + f64::from(lsp[k]).exp() * f64::from(eps_pi[k]))
        .collect();
    let a_pi: Vec<f64> = u.iter().map(|u| u.tanh()).collect();
    let logp = squashed_logp(&mp, &lsp, &u);
    let q_pi = q(&stepped[0], &so, &a_pi).min(q(&stepped[1], &so, &a_pi));
    let actor_loss = alpha0 * logp - q_pi + 0.25;
    assert!(
        close(stat("actor_loss"), actor_loss, 1e-4),
        "actor_loss {} vs {actor_loss}",
        stat("actor_loss")
    );
    assert!(
        close(stat("entropy"), -logp, 1e-4),
        "entropy {} vs {}",
        stat("entropy"),
        -logp
    );
    // Temperature: the gradient on log α is −(log π + H̄), H̄ = −2 (two actions).
    let g = -(logp - 2.0);
    let alpha = (alpha0.ln() - cfg.alpha_learning_rate * g.signum()).exp();
    assert!(
        close(stat("alpha"), alpha, 1e-5),
        "alpha {} vs {alpha}",
        stat("alpha")
    );
}

// ---------------------------------------------------------------------------------------------
// What one PPO update reports, worked through

/// An update's stats, the shifted log-std and the stored rollout columns.
type PpoStats = (Vec<(&'static str, f64)>, Vec<f32>, Vec<Vec<f32>>);

/// One rollout of 3 environments × 2 steps with 2 actions and the critic V(s) = s₀ − 2 s₁ + 1;
/// then the actor's log-std is moved by `shift` (so the update's policy differs from the one
/// that acted, as after earlier minibatches) and one update runs with `cfg`'s learning rate.
/// Returns the update's stats, the storage as the update saw it and the shifted log-std.
fn ppo_stats(cfg: PpoConfig, shift: [f64; 2]) -> PpoStats {
    let (n, na) = (3, 2);
    let mut alg = ppo_with_actions(cfg, na, n, 8);
    let mut t = named(alg.save().unwrap());
    set(&mut t, "critic.0.weight", &[1.0, -2.0]);
    set(&mut t, "critic.0.bias", &[1.0]);
    alg.load(&t).unwrap();
    let mut rng = Rng::seed_from_u64(4);
    let mut b = random_batch(n, &mut rng);
    for _ in 0..2 {
        alg.act(&b, &mut rng).unwrap();
        b = random_batch(n, &mut rng);
        alg.process_env_step(&b).unwrap();
    }
    alg.compute_returns(&b).unwrap();
    let s = alg.storage();
    let rows = [
        s.actor_obs.clone(),
        s.actions.clone(),
        s.log_probs.clone(),
        s.advantages.clone(),
        s.returns.clone(),
        s.values.clone(),
        s.means.clone(),
        s.log_stds.clone(),
        s.critic_obs.clone(),
    ];
    let mut t = named(alg.save().unwrap());
    let ls = values(&t["actor.log_std"]);
    let moved: Vec<f64> = ls
        .iter()
        .zip(shift)
        .map(|(l, d)| f64::from(*l) + d)
        .collect();
    set(&mut t, "actor.log_std", &moved);
    alg.load(&t).unwrap();
    let stats = alg.update(&mut rng, &mut NoHooks, 0).unwrap();
    (
        stats,
        moved.iter().map(|v| *v as f32).collect(),
        rows.to_vec(),
    )
}

#[test]
fn a_ppo_update_reports_the_losses_kl_and_clip_fraction_of_its_minibatches() {
    // Learning rate 0 (fixed): both minibatches of 3 rows see the same networks, so every
    // reported mean is a mean over all 6 rows, worked here from the stored rollout:
    //   ratio r = exp(log π_new(a) − log π_old(a)), with π_new's log-std shifted;
    //   policy loss = mean max(−A r, −A clamp(r, 0.8, 1.2)); clip fraction = share |r − 1| > 0.2;
    //   KL(old ‖ new) per row = Σ_k ln(σ'/σ) + σ²/(2σ'²) − 1/2 (the means did not move);
    //   entropy = Σ_k (1/2 + ln √(2π) + ln σ'); value loss = mean (V − R)² (V = V_old).
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        num_mini_batches: 2,
        learning_rate: 0.0,
        schedule: choice("fixed"),
        ..ppo_config()
    };
    let shift = [0.35, -0.3];
    for clipped in [true, false] {
        let cfg = PpoConfig {
            use_clipped_value_loss: clipped,
            ..cfg.clone()
        };
        let (stats, ls_new, r) = ppo_stats(cfg, shift);
        let stat = |k: &str| stats.iter().find(|(n, _)| *n == k).unwrap().1;
        let (na, rows) = (2, 6);
        let (mut pl, mut clip, mut kl, mut ent, mut vl) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for i in 0..rows {
            let (mut logp, mut row_kl) = (0.0, 0.0);
            for (k, &l_new) in ls_new.iter().enumerate().take(na) {
                let j = i * na + k;
                let (m, a) = (f64::from(r[6][j]), f64::from(r[1][j]));
                let (l_old, l_new) = (f64::from(r[7][j]), f64::from(l_new));
                let z = (a - m) / l_new.exp();
                logp += -0.5 * z * z - l_new - 0.5 * (2.0 * PI).ln();
                row_kl += l_new - l_old + (2.0 * l_old).exp() / (2.0 * (2.0 * l_new).exp()) - 0.5;
                ent += 0.5 + 0.5 * (2.0 * PI).ln() + l_new;
            }
            let ratio = (logp - f64::from(r[2][i])).exp();
            let adv = f64::from(r[3][i]);
            pl += (-adv * ratio).max(-adv * ratio.clamp(0.8, 1.2));
            clip += f64::from(u8::from((ratio - 1.0).abs() > 0.2));
            kl += row_kl;
            vl += (f64::from(r[5][i]) - f64::from(r[4][i])).powi(2);
        }
        let n = rows as f64;
        let want = [
            ("policy_loss", pl / n),
            ("clip_fraction", clip / n),
            ("approx_kl", kl / n),
            ("entropy", ent / n),
            ("value_loss", vl / n),
            ("learning_rate", 0.0),
            (
                "action_std",
                (ls_new[0].exp() + ls_new[1].exp()) as f64 / 2.0,
            ),
        ];
        assert!(
            clip > 0.0 && clip < n,
            "some ratios clipped, not all: {clip}"
        );
        for (k, w) in want {
            assert!(
                close(stat(k), w, 1e-4 * w.abs().max(1.0)),
                "{k} (clipped value loss {clipped}): {} vs {w}",
                stat(k)
            );
        }
        assert!(stat("grad_norm") > 0.0);
        for k in ["t_update_loss", "t_update_backward", "t_update_optim"] {
            assert!(stat(k) > 0.0, "{k} = {}: time spent must add up", stat(k));
        }
    }
}

#[test]
fn advantages_are_normalised_once_over_the_rollout_unless_per_minibatch() {
    for per_minibatch in [false, true] {
        let cfg = PpoConfig {
            num_steps_per_env: 2,
            normalize_advantage_per_mini_batch: per_minibatch,
            ..ppo_config()
        };
        let mut alg = ppo(cfg, vec![], 4, 2);
        let mut rng = Rng::seed_from_u64(3);
        let mut b = random_batch(4, &mut rng);
        for _ in 0..2 {
            alg.act(&b, &mut rng).unwrap();
            b = random_batch(4, &mut rng);
            alg.process_env_step(&b).unwrap();
        }
        alg.compute_returns(&b).unwrap();
        let s = alg.storage();
        let raw: Vec<f64> = s
            .returns
            .iter()
            .zip(&s.values)
            .map(|(r, v)| f64::from(*r - *v))
            .collect();
        let adv: Vec<f64> = s.advantages.iter().map(|a| f64::from(*a)).collect();
        let mean = adv.iter().sum::<f64>() / adv.len() as f64;
        if per_minibatch {
            // Left for each minibatch: still returns − values.
            for (a, r) in adv.iter().zip(&raw) {
                assert!(close(*a, *r, 1e-5), "{adv:?} vs {raw:?}");
            }
        } else {
            assert!(close(mean, 0.0, 1e-5), "mean {mean}");
            assert!(adv.iter().zip(&raw).any(|(a, r)| !close(*a, *r, 1e-3)));
        }
    }
}

/// A hook that pulls every action mean down: its loss is 1000 × the sum of the means.
struct PullMeansDown;

impl clawrl_trainer::algorithms::TrainHooks for PullMeansDown {
    fn extra_loss(
        &mut self,
        ctx: &clawrl_trainer::algorithms::LossContext<'_>,
    ) -> anyhow::Result<Option<Tensor>> {
        Ok(Some((ctx.dist.mean.sum_all()? * 1000.0)?))
    }
}

#[test]
fn the_hooks_loss_joins_the_actors_and_the_value_coefficient_scales_the_critics() {
    // Pure distillation's arithmetic: RL weight 0, value-loss coefficient 0, one minibatch.
    // The only gradient is the hook's: Adam's first step moves the mean head's bias by
    // exactly the learning rate, down; the critic does not move.
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        value_loss_coef: 0.0,
        learning_rate: 1e-3,
        schedule: choice("fixed"),
        ..ppo_config()
    };
    let mut alg = ppo(cfg, vec![], 4, 5);
    alg.set_rl_coef(0.0);
    let before = named(alg.save().unwrap());
    let mut rng = Rng::seed_from_u64(6);
    rollout(&mut alg, 4, &mut rng);
    alg.update(&mut rng, &mut PullMeansDown, 0).unwrap();
    let after = named(alg.save().unwrap());
    let head = "actor.1.bias";
    let (b0, b1) = (values(&before[head]), values(&after[head]));
    assert!(
        close(f64::from(b1[0]), f64::from(b0[0]) - 1e-3, 1e-6),
        "{head}: {b0:?} -> {b1:?}"
    );
    for k in ["critic.0.weight", "critic.0.bias"] {
        assert_eq!(
            values(&before[k]),
            values(&after[k]),
            "{k} moved with value_loss_coef 0"
        );
    }
}

/// PPO's actor and critic, by name, before and after one update on two steps of four
/// environments whose every reward is `reward`.
fn ppo_update_with(
    cfg: PpoConfig,
    rl_coef: f64,
    reward: f32,
) -> (HashMap<String, Tensor>, HashMap<String, Tensor>) {
    let n = 4;
    let mut alg = ppo(cfg, vec![], n, 5);
    alg.set_rl_coef(rl_coef);
    let before = named(alg.save().unwrap());
    let mut rng = Rng::seed_from_u64(6);
    let mut b = random_batch(n, &mut rng);
    for _ in 0..2 {
        alg.act(&b, &mut rng).unwrap();
        b = random_batch(n, &mut rng);
        b.rewards = vec![reward; n];
        alg.process_env_step(&b).unwrap();
    }
    alg.compute_returns(&b).unwrap();
    alg.update(&mut rng, &mut NoHooks, 0).unwrap();
    (before, named(alg.save().unwrap()))
}

#[test]
fn a_large_entropy_bonus_widens_the_policy() {
    // The actor loss is surrogate − c·H with H = Σ log σ + const: at c = 1000 its gradient on
    // log σ is −c against a surrogate's of order 1, so Adam's first step raises log σ by
    // exactly the learning rate. A bonus with the wrong sign, or added to c instead of
    // multiplying it, lowers it.
    let lr = 1e-3;
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        entropy_coef: 1000.0,
        value_loss_coef: 0.0,
        learning_rate: lr,
        schedule: choice("fixed"),
        ..ppo_config()
    };
    let log_std_step = |entropy_coef: f64| {
        let cfg = PpoConfig {
            entropy_coef,
            ..cfg.clone()
        };
        let (before, after) = ppo_update_with(cfg, 1.0, 0.0);
        let (l0, l1) = (
            values(&before["actor.log_std"]),
            values(&after["actor.log_std"]),
        );
        f64::from(l1[0] - l0[0])
    };
    let up = log_std_step(1000.0);
    assert!(close(up, lr, 1e-6), "log σ moved {up}, want +{lr}");
    // A negative coefficient (a penalty on entropy) narrows it: the coefficient multiplies.
    let down = log_std_step(-1000.0);
    assert!(close(down, -lr, 1e-6), "log σ moved {down}, want -{lr}");
}

#[test]
fn the_critic_descends_its_value_loss() {
    // RL weight 0, value coefficient 1, every reward 10: the returns lie far above the
    // near-zero values of a fresh critic, so d/db of mean((V − R)²) is negative and Adam's first
    // step raises the critic's bias by exactly the learning rate.
    let lr = 1e-3;
    let cfg = PpoConfig {
        num_steps_per_env: 2,
        value_loss_coef: 1.0,
        learning_rate: lr,
        schedule: choice("fixed"),
        ..ppo_config()
    };
    let (before, after) = ppo_update_with(cfg, 0.0, 10.0);
    let (b0, b1) = (
        values(&before["critic.0.bias"]),
        values(&after["critic.0.bias"]),
    );
    assert!(
        close(f64::from(b1[0] - b0[0]), lr, 1e-6),
        "critic bias: {b0:?} -> {b1:?}"
    );
}

#[test]
fn sac_acts_uniformly_until_learning_starts_then_by_its_policy() {
    // A policy whose every action is tanh(50 ± e⁻⁵ ε) = 1 against warm-up actions uniform in
    // [−1, 1]: two environments, learning starts after 4 stored transitions (two steps).
    let cfg = SacConfig {
        num_steps_per_env: 3,
        learning_starts: 4,
        ..sac_config()
    };
    let mut alg = sac_linear(cfg, 1, 2, 4);
    assert_eq!(alg.num_steps_per_env(), 3);
    let mut t = named(alg.save().unwrap());
    set(&mut t, "actor.1.weight", &[0.0; 16]);
    set(&mut t, "actor.1.bias", &[50.0, -5.0]);
    alg.load(&t).unwrap();
    let mut rng = Rng::seed_from_u64(8);
    let mut b = random_batch(2, &mut rng);
    let mut warm = Vec::new();
    for _ in 0..2 {
        warm.extend_from_slice(alg.act(&b, &mut rng).unwrap());
        b = random_batch(2, &mut rng);
        alg.process_env_step(&b).unwrap();
    }
    let acting = alg.act(&b, &mut rng).unwrap().to_vec();
    assert!(warm.iter().all(|a| (-1.0..=1.0).contains(a)), "{warm:?}");
    assert!(
        warm.iter().any(|a| *a < 0.9),
        "warm-up by the policy: {warm:?}"
    );
    assert_eq!(acting, [1.0, 1.0], "after warm-up not by the policy");
}

#[test]
fn sac_reports_the_mean_of_its_updates() {
    // Learning rates 0, so every update sees the same networks, and every stored transition
    // is the same observation with (nearly) the same action: the policy's mean is 0.3 and its
    // log σ sits at the floor (−5). q_mean of one update and the mean over two then agree.
    let q_mean = |updates: usize| {
        let cfg = SacConfig {
            updates_per_iteration: updates,
            learning_starts: 0,
            actor_learning_rate: 0.0,
            critic_learning_rate: 0.0,
            alpha_learning_rate: 0.0,
            ..sac_config()
        };
        let mut alg = sac_linear(cfg, 1, 2, 4);
        let mut t = named(alg.save().unwrap());
        set(&mut t, "actor.1.weight", &[0.0; 16]);
        set(&mut t, "actor.1.bias", &[0.3, -5.0]);
        alg.load(&t).unwrap();
        let mut rng = Rng::seed_from_u64(8);
        let b = batch(
            vec![0.5, -0.2, 0.5, -0.2],
            vec![1.0; 2],
            vec![false; 2],
            vec![false; 2],
            vec![0.0; 4],
        );
        for _ in 0..8 {
            alg.act(&b, &mut rng).unwrap();
            alg.process_env_step(&b).unwrap();
        }
        let stats = alg.update(&mut rng, &mut NoHooks, 0).unwrap();
        stats.iter().find(|(k, _)| *k == "q_mean").unwrap().1
    };
    let (one, two) = (q_mean(1), q_mean(2));
    assert!(one.abs() > 0.01, "q_mean {one}");
    assert!(
        close(two, one, 1e-3),
        "mean of two updates {two} vs one {one}"
    );
}
