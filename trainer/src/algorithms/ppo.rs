//! PPO as in rsl_rl: GAE, clipped surrogate, clipped value loss, entropy bonus, advantage
//! normalisation, global grad-norm clipping, adaptive learning rate from the measured KL and
//! bootstrapping on time-outs. The actor and the critic may read different observations
//! (asymmetric actor-critic: both read `privileged` for the teacher).
use std::collections::HashMap;

use anyhow::Result;
use candle_core::backprop::GradStore;
use candle_core::{Device, Tensor};
use clawrl_policy::distribution::{self, log_prob_row};
use clawrl_policy::{Mlp, Normalizer, ObsSource, Policy, Rng};
use clawrl_sim::Batch;
use rand::RngExt;

use super::model::{ActorInput, Critic, load_policy, save_policy};
use super::{Algorithm, LossContext, Stats, TrainHooks, check_finite, join, normal_noise};
use crate::config::{PolicySection, PpoConfig};
use crate::optim::{Adam, clip_grad_norm, merge_grads};
use crate::storage::{RolloutStorage, gather, rollout::normalize};

pub struct Ppo {
    cfg: PpoConfig,
    policy: Box<dyn Policy>,
    input: ActorInput,
    /// One value network.
    critic: Critic,
    storage: RolloutStorage,
    /// Weight of the RL terms (surrogate and entropy) in the actor loss: 1 for PPO, 0 for pure
    /// distillation, where only the hook's loss trains the actor.
    rl_coef: f64,
    /// Scale on the policy's standard deviation when acting (1 = sample the policy).
    noise_scale: f32,
    opt: Adam,
    num_envs: usize,
    actions: Vec<f32>,
    scratch_a: Vec<f32>,
    scratch_c: Vec<f32>,
}

const DEV: Device = Device::Cpu;

impl Ppo {
    pub fn new(
        cfg: PpoConfig,
        policy: Box<dyn Policy>,
        pcfg: &PolicySection,
        critic_dim: usize,
        num_envs: usize,
        rng: &mut Rng,
    ) -> Result<Self> {
        let mut dims = vec![critic_dim];
        dims.extend(&pcfg.critic_hidden);
        dims.push(1);
        let critic = Critic {
            nets: vec![Mlp::new("critic", &dims, pcfg.activation, 1.0, rng)?],
            normalizer: Normalizer::new(critic_dim, pcfg.obs_clip),
            source: pcfg.critic_obs,
        };
        let pc = policy.config().clone();
        let storage = RolloutStorage::new(
            num_envs,
            cfg.num_steps_per_env,
            pc.obs_dim,
            critic_dim,
            pc.action_dim,
        );
        let mut params = policy.params();
        params.extend(critic.nets[0].params());
        let opt = Adam::new(params, cfg.learning_rate);
        Ok(Self {
            cfg,
            input: ActorInput::new(policy.as_ref(), num_envs),
            policy,
            critic,
            rl_coef: 1.0,
            noise_scale: 1.0,
            storage,
            opt,
            num_envs,
            actions: vec![0.0; num_envs * pc.action_dim],
            scratch_a: Vec::new(),
            scratch_c: Vec::new(),
        })
    }

    /// Scales the RL terms of the actor loss (0 turns PPO into pure distillation by its hook).
    pub fn set_rl_coef(&mut self, c: f64) {
        self.rl_coef = c;
    }

    /// Scales the exploration noise of the actions taken (0: the mean action). Only for pure
    /// distillation: PPO's ratio assumes actions sampled from the policy itself.
    pub fn set_noise_scale(&mut self, s: f32) {
        self.noise_scale = s;
    }

    pub fn learning_rate(&self) -> f64 {
        self.opt.lr
    }

    /// The rollout collected so far (rewards with time-outs bootstrapped, returns and
    /// advantages after [`Algorithm::compute_returns`]).
    pub fn storage(&self) -> &RolloutStorage {
        &self.storage
    }

    /// Critic values of raw observations (normalised here), detached.
    fn values_of(&self, raw: &[f32]) -> Result<Vec<f32>> {
        let x = self.critic.input(raw)?;
        Ok(self.critic.nets[0]
            .forward_detached(&x)?
            .flatten_all()?
            .to_vec1()?)
    }
}

/// One mini-batch gathered from the rollout storage, row by row in the shuffled order: the
/// buffers are reused across mini-batches and epochs.
#[derive(Default)]
struct MiniBatch {
    actor_obs: Vec<f32>,
    critic_obs: Vec<f32>,
    actions: Vec<f32>,
    log_probs: Vec<f32>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
    values: Vec<f32>,
    /// The policy's mean and log std when it acted: the old distribution of the measured KL.
    means: Vec<f32>,
    log_stds: Vec<f32>,
}

impl MiniBatch {
    fn gather(&mut self, s: &RolloutStorage, idx: &[usize]) {
        let (da, dc, na) = (s.actor_dim, s.critic_dim, s.action_dim);
        gather(&s.actor_obs, da, idx, &mut self.actor_obs);
        gather(&s.critic_obs, dc, idx, &mut self.critic_obs);
        gather(&s.actions, na, idx, &mut self.actions);
        gather(&s.log_probs, 1, idx, &mut self.log_probs);
        gather(&s.advantages, 1, idx, &mut self.advantages);
        gather(&s.returns, 1, idx, &mut self.returns);
        gather(&s.values, 1, idx, &mut self.values);
        gather(&s.means, na, idx, &mut self.means);
        gather(&s.log_stds, na, idx, &mut self.log_stds);
    }
}

/// rsl_rl's KL-adaptive learning rate: a measured KL above twice `desired_kl` divides the
/// rate by 1.5 (not below `min_learning_rate`), one below half of it (and above zero)
/// multiplies it by 1.5 (not above `max_learning_rate`); otherwise, or for a non-finite KL, the
/// rate stays.
pub fn adaptive_learning_rate(lr: f64, kl: f64, c: &PpoConfig) -> f64 {
    if !kl.is_finite() {
        lr
    } else if kl > 2.0 * c.desired_kl {
        (lr / 1.5).max(c.min_learning_rate)
    } else if kl < c.desired_kl / 2.0 && kl > 0.0 {
        (lr * 1.5).min(c.max_learning_rate)
    } else {
        lr
    }
}

/// PPO's clipped surrogate loss, averaged: `mean(max(−A r, −A clamp(r, 1 − ε, 1 + ε)))` for
/// probability ratios `r` and advantages `A` (both `[batch]`).
pub fn clipped_surrogate_loss(ratio: &Tensor, adv: &Tensor, clip: f64) -> Result<Tensor> {
    let surrogate = (adv.neg()? * ratio)?;
    let clipped = (adv.neg()? * ratio.clamp(1.0 - clip, 1.0 + clip)?)?;
    Ok(surrogate.maximum(&clipped)?.mean_all()?)
}

/// PPO's clipped value loss, averaged: the larger of `(V − R)²` and `(V_clip − R)²`, where
/// `V_clip = V_old + clamp(V − V_old, −ε, ε)` (all `[batch]`).
pub fn clipped_value_loss(
    values: &Tensor,
    old_values: &Tensor,
    returns: &Tensor,
    clip: f64,
) -> Result<Tensor> {
    let v_clip = (old_values + (values - old_values)?.clamp(-clip, clip)?)?;
    let l1 = (values - returns)?.sqr()?;
    let l2 = (v_clip - returns)?.sqr()?;
    Ok(l1.maximum(&l2)?.mean_all()?)
}

/// The critic's half of PPO's loss (`value_loss_coef` times the value loss, clipped or plain)
/// and its gradients. Returns the gradients, the weighted loss and the unweighted value loss.
fn critic_loss_and_grads(
    critic: &Mlp,
    obs: &Tensor,
    old_values: &Tensor,
    returns: &Tensor,
    c: &PpoConfig,
) -> Result<(GradStore, f32, Tensor)> {
    let values = critic.forward(obs)?.squeeze(1)?;
    let value_loss = if c.use_clipped_value_loss {
        clipped_value_loss(&values, old_values, returns, c.clip_param)?
    } else {
        (&values - returns)?.sqr()?.mean_all()?
    };
    let weighted = (&value_loss * c.value_loss_coef)?;
    let grads = weighted.backward()?;
    Ok((grads, weighted.to_scalar::<f32>()?, value_loss))
}

impl Algorithm for Ppo {
    fn name(&self) -> &'static str {
        "ppo"
    }

    fn num_steps_per_env(&self) -> usize {
        self.cfg.num_steps_per_env
    }

    fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    fn act(&mut self, obs: &Batch, rng: &mut Rng) -> Result<&[f32]> {
        let n = self.num_envs;
        let (da, dc, na) = (
            self.storage.actor_dim,
            self.storage.critic_dim,
            self.storage.action_dim,
        );
        let raw_a = self.input.observe(obs);
        let raw_c = obs.obs(self.critic.source);
        self.policy.normalizer_mut().update(raw_a);
        self.critic.normalizer.update(raw_c);
        self.policy
            .normalizer()
            .normalize_into(raw_a, &mut self.scratch_a);
        self.critic
            .normalizer
            .normalize_into(raw_c, &mut self.scratch_c);
        // One batched forward of each network for all environments.
        let xa = Tensor::from_slice(&self.scratch_a, (n, da), &DEV)?;
        let xc = Tensor::from_slice(&self.scratch_c, (n, dc), &DEV)?;
        let dist = self.policy.distribution_detached(&xa)?;
        let mean: Vec<f32> = dist.mean.flatten_all()?.to_vec1()?;
        let log_std: Vec<f32> = dist.log_std.flatten_all()?.to_vec1()?;
        let values: Vec<f32> = self.critic.nets[0]
            .forward_detached(&xc)?
            .flatten_all()?
            .to_vec1()?;
        let noise = normal_noise(rng, n * na);
        let s = &mut self.storage;
        let t = s.step;
        for (e, &value) in values.iter().enumerate() {
            let r = e * na..(e + 1) * na;
            for j in r.clone() {
                self.actions[j] = mean[j] + self.noise_scale * log_std[j].exp() * noise[j];
            }
            let row = t * n + e;
            s.log_probs[row] = log_prob_row(
                &mean[r.clone()],
                &log_std[r.clone()],
                &self.actions[r.clone()],
            );
            s.values[row] = value;
        }
        let (a0, a1) = (t * n * na, (t + 1) * n * na);
        s.actions[a0..a1].copy_from_slice(&self.actions);
        s.means[a0..a1].copy_from_slice(&mean);
        s.log_stds[a0..a1].copy_from_slice(&log_std);
        s.actor_obs[t * n * da..(t + 1) * n * da].copy_from_slice(&self.scratch_a);
        s.critic_obs[t * n * dc..(t + 1) * n * dc].copy_from_slice(&self.scratch_c);
        Ok(&self.actions)
    }

    fn process_env_step(&mut self, batch: &Batch) -> Result<()> {
        let n = self.num_envs;
        let t = self.storage.step;
        let gamma = self.cfg.gamma as f32;
        // Bootstrap on time-outs: r += γ V(final observation), one forward for all of them.
        let timeouts: Vec<usize> = (0..n)
            .filter(|&e| batch.truncated[e] && !batch.terminated[e])
            .collect();
        let mut boot = vec![0.0f32; n];
        if !timeouts.is_empty() {
            let dc = self.storage.critic_dim;
            let finals = match self.critic.source {
                ObsSource::Onboard => &batch.final_onboard,
                ObsSource::Privileged => &batch.final_privileged,
            };
            let mut rows = Vec::new();
            gather(finals, dc, &timeouts, &mut rows);
            let v = self.values_of(&rows)?;
            for (k, &e) in timeouts.iter().enumerate() {
                boot[e] = gamma * v[k];
            }
        }
        for (e, b) in boot.iter().enumerate() {
            self.storage.rewards[t * n + e] = batch.rewards[e] + b;
            self.storage.dones[t * n + e] = if batch.done(e) { 1.0 } else { 0.0 };
        }
        self.storage.step += 1;
        Ok(())
    }

    fn compute_returns(&mut self, batch: &Batch) -> Result<()> {
        let last = self.values_of(batch.obs(self.critic.source))?;
        self.storage
            .compute_returns(&last, self.cfg.gamma, self.cfg.lam);
        if !self.cfg.normalize_advantage_per_mini_batch {
            self.storage.normalize_advantages();
        }
        Ok(())
    }

    fn update(
        &mut self,
        rng: &mut Rng,
        hooks: &mut dyn TrainHooks,
        iteration: usize,
    ) -> Result<Stats> {
        let c = self.cfg.clone();
        let explained_variance = self.storage.explained_variance();
        let s = &self.storage;
        let total = s.len();
        let mb = total / c.num_mini_batches;
        let (da, dc, na) = (s.actor_dim, s.critic_dim, s.action_dim);
        let params = self.opt.params().to_vec();
        let (mut sum_pl, mut sum_vl, mut sum_ent, mut sum_kl, mut sum_clip, mut sum_gn) =
            (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let mut count = 0usize;
        // Seconds spent in forward + loss, backward, and clipping + optimiser step.
        let (mut t_loss, mut t_backward, mut t_optim) = (0.0, 0.0, 0.0);
        let mut buf = MiniBatch::default();
        for _epoch in 0..c.num_learning_epochs {
            // Fisher-Yates permutation from the run's RNG.
            let mut perm: Vec<usize> = (0..total).collect();
            for i in (1..total).rev() {
                perm.swap(i, rng.random_range(0..=i));
            }
            for k in 0..c.num_mini_batches {
                let idx = &perm[k * mb..(k + 1) * mb];
                buf.gather(&self.storage, idx);
                if c.normalize_advantage_per_mini_batch {
                    normalize(&mut buf.advantages);
                }
                let obs_a = Tensor::from_slice(&buf.actor_obs, (mb, da), &DEV)?;
                let obs_c = Tensor::from_slice(&buf.critic_obs, (mb, dc), &DEV)?;
                let actions = Tensor::from_slice(&buf.actions, (mb, na), &DEV)?;
                let old_logp = Tensor::from_slice(&buf.log_probs, mb, &DEV)?;
                let adv = Tensor::from_slice(&buf.advantages, mb, &DEV)?;
                let returns = Tensor::from_slice(&buf.returns, mb, &DEV)?;
                let old_values = Tensor::from_slice(&buf.values, mb, &DEV)?;

                let t0 = std::time::Instant::now();
                // The critic's term of the loss reads only the critic's parameters and the
                // actor's terms only the actor's, so the two halves of the graph are built and
                // differentiated on two threads at once (otherwise one of the two cores waits
                // through the whole update). The gradients are the same numbers as one backward
                // of the sum: each parameter receives its gradient from one half only.
                let critic_net = &self.critic.nets[0];
                let (critic_half, actor_half) = join(
                    || critic_loss_and_grads(critic_net, &obs_c, &old_values, &returns, &c),
                    || -> Result<_> {
                        let dist = self.policy.distribution(&obs_a)?;
                        // Measured KL(old || new) on this minibatch; adapts the learning rate
                        // (rsl_rl).
                        let new_mean: Vec<f32> = dist.mean.flatten_all()?.to_vec1()?;
                        let new_ls: Vec<f32> = dist.log_std.flatten_all()?.to_vec1()?;
                        let mut kl = 0.0;
                        for r in 0..mb {
                            let q = r * na..(r + 1) * na;
                            kl += distribution::kl_row(
                                &buf.means[q.clone()],
                                &buf.log_stds[q.clone()],
                                &new_mean[q.clone()],
                                &new_ls[q],
                            );
                        }
                        kl /= mb as f64;
                        if c.schedule == crate::config::LrSchedule::Adaptive {
                            self.opt.lr = adaptive_learning_rate(self.opt.lr, kl, &c);
                        }

                        let logp = self.policy.log_prob(&dist, &actions)?;
                        let ratio = (logp - &old_logp)?.exp()?;
                        let policy_loss = clipped_surrogate_loss(&ratio, &adv, c.clip_param)?;
                        let entropy = self.policy.entropy(&dist)?.mean_all()?;
                        let mut loss =
                            ((&policy_loss - (&entropy * c.entropy_coef)?)? * self.rl_coef)?;
                        let ctx = LossContext {
                            iteration,
                            policy: self.policy.as_ref(),
                            actor_obs: &obs_a,
                            dist: &dist,
                            rows: idx,
                        };
                        if let Some(extra) = hooks.extra_loss(&ctx)? {
                            loss = (loss + extra)?;
                        }
                        let loss_value = loss.to_scalar::<f32>()?;
                        let t1 = std::time::Instant::now();
                        let grads = loss.backward()?;
                        Ok((grads, loss_value, kl, ratio, policy_loss, entropy, t1))
                    },
                );
                let (mut grads, actor_loss, kl, ratio, policy_loss, entropy, t1) = actor_half?;
                let (critic_grads, critic_loss, value_loss) = critic_half?;
                check_finite("PPO loss", f64::from(actor_loss + critic_loss), iteration)?;
                merge_grads(&mut grads, &critic_grads, &self.critic.nets[0].params());
                let t2 = std::time::Instant::now();
                let grad_norm = clip_grad_norm(&mut grads, &params, c.max_grad_norm)?;
                check_finite("gradient norm", grad_norm, iteration)?;
                self.opt.step(&grads)?;
                t_loss += (t1 - t0).as_secs_f64();
                t_backward += (t2 - t1).as_secs_f64();
                t_optim += t2.elapsed().as_secs_f64();

                let ratio_v: Vec<f32> = ratio.to_vec1()?;
                let clip_frac = ratio_v
                    .iter()
                    .filter(|r| (*r - 1.0).abs() as f64 > c.clip_param)
                    .count() as f64
                    / mb as f64;
                sum_pl += f64::from(policy_loss.to_scalar::<f32>()?);
                sum_vl += f64::from(value_loss.to_scalar::<f32>()?);
                sum_ent += f64::from(entropy.to_scalar::<f32>()?);
                sum_kl += kl;
                sum_clip += clip_frac;
                sum_gn += grad_norm;
                count += 1;
            }
        }
        self.storage.clear();
        hooks.after_update(iteration, self.policy.as_ref())?;
        let k = count.max(1) as f64;
        let std = self
            .policy
            .params()
            .iter()
            .find(|(n, _)| n == "actor.log_std")
            .map(|(_, v)| {
                let ls: Vec<f32> = v.as_tensor().to_vec1().unwrap_or_default();
                ls.iter().map(|x| f64::from(x.exp())).sum::<f64>() / ls.len().max(1) as f64
            });
        Ok(vec![
            ("value_loss", sum_vl / k),
            ("policy_loss", sum_pl / k),
            ("entropy", sum_ent / k),
            ("approx_kl", sum_kl / k),
            ("clip_fraction", sum_clip / k),
            ("grad_norm", sum_gn / k),
            ("learning_rate", self.opt.lr),
            ("explained_variance", explained_variance),
            ("action_std", std.unwrap_or(f64::NAN)),
            ("t_update_loss", t_loss),
            ("t_update_backward", t_backward),
            ("t_update_optim", t_optim),
        ])
    }

    fn save(&self) -> Result<Vec<(String, Tensor)>> {
        let mut t = save_policy(self.policy.as_ref(), "")?;
        t.extend(self.critic.save("")?);
        t.extend(self.opt.state_tensors("ppo.adam")?);
        Ok(t)
    }

    fn load(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        self.load_networks(t)?;
        self.opt.load_state("ppo.adam", t)?;
        Ok(())
    }

    fn load_networks(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        load_policy(self.policy.as_mut(), "", t)?;
        self.critic.load("", t)
    }
}
