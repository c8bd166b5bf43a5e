//! Soft actor-critic: replay buffer, twin Q networks with Polyak-averaged targets, tanh-squashed
//! Gaussian actor (state-dependent log-std) and automatic entropy tuning. Same trait as PPO.
//!
//! CrossQ (`Sac::crossq`) is the same learner with other critics: batch-normalised twin Q
//! networks ([`super::bn_critic`]) that see the current and the next state-action pairs in one
//! batch, no target networks, and the actor updated every `policy_delay` critic updates.
use std::collections::HashMap;

use anyhow::Result;
use candle_core::{Device, Tensor, Var};
use clawrl_policy::distribution;
use clawrl_policy::{Mlp, Normalizer, Policy, Rng};
use clawrl_sim::Batch;
use rand::RngExt;

use super::bn_critic::BnQ;
use super::model::{Critic, load_policy, save_policy};
use super::{Algorithm, LossContext, Stats, TrainHooks, check_finite, join, normal_noise};
use crate::config::{CrossqConfig, PolicySection, SacConfig};
use crate::optim::{Adam, clip_grad_norm, load_params, merge_grads};
use crate::storage::replay::Transition;
use crate::storage::{ReplayBuffer, gather};

const DEV: Device = Device::Cpu;

/// CrossQ's critics and their update count (the actor's delay counts critic updates).
struct CrossQ {
    q: [BnQ; 2],
    policy_delay: usize,
    updates: usize,
}

pub struct Sac {
    cfg: SacConfig,
    /// CrossQ's critics; `None`: SAC's, in `critic.nets`.
    crossq: Option<CrossQ>,
    policy: Box<dyn Policy>,
    /// Twin Q networks then their targets: `q1, q2, q1_target, q2_target`.
    critic: Critic,
    buffer: ReplayBuffer,
    actor_opt: Adam,
    critic_opt: Adam,
    alpha_opt: Adam,
    log_alpha: Var,
    target_entropy: f64,
    num_envs: usize,
    actions: Vec<f32>,
    prev_a: Vec<f32>,
    prev_c: Vec<f32>,
}

impl Sac {
    /// SAC: twin Q networks with Polyak-averaged targets.
    pub fn new(
        cfg: SacConfig,
        policy: Box<dyn Policy>,
        pcfg: &PolicySection,
        critic_dim: usize,
        num_envs: usize,
        rng: &mut Rng,
    ) -> Result<Self> {
        check_policy(policy.as_ref())?;
        let dims = q_dims(critic_dim, policy.as_ref(), pcfg);
        let mk = |name: &str, rng: &mut Rng| Mlp::new(name, &dims, pcfg.activation, 1.0, rng);
        let nets = vec![
            mk("q1", rng)?,
            mk("q2", rng)?,
            mk("q1_target", rng)?,
            mk("q2_target", rng)?,
        ];
        for i in 0..2 {
            clawrl_policy::mlp::copy_params(&nets[2 + i].params(), &nets[i].params())?;
        }
        let mut critic_params = nets[0].params();
        critic_params.extend(nets[1].params());
        let critics = (nets, critic_params, None);
        Self::assemble(cfg, policy, pcfg, critic_dim, num_envs, critics)
    }

    /// CrossQ: SAC's actor and temperature, batch-normalised critics without targets.
    pub fn crossq(
        cfg: &CrossqConfig,
        policy: Box<dyn Policy>,
        pcfg: &PolicySection,
        critic_dim: usize,
        num_envs: usize,
        rng: &mut Rng,
    ) -> Result<Self> {
        check_policy(policy.as_ref())?;
        let dims = q_dims(critic_dim, policy.as_ref(), pcfg);
        let mk = |name: &str, rng: &mut Rng| {
            BnQ::new(name, &dims, pcfg.activation, cfg.bn_momentum, rng)
        };
        let q = [mk("q1", rng)?, mk("q2", rng)?];
        let mut params = q[0].params();
        params.extend(q[1].params());
        let crossq = CrossQ {
            q,
            policy_delay: cfg.policy_delay,
            updates: 0,
        };
        let critics = (Vec::new(), params, Some(crossq));
        let mut sac = Self::assemble(cfg.sac(), policy, pcfg, critic_dim, num_envs, critics)?;
        sac.critic_opt.beta1 = cfg.adam_beta1;
        sac.actor_opt.beta1 = cfg.adam_beta1;
        Ok(sac)
    }

    /// The learner around its critics: SAC's networks (or none) in `critic.nets`, the
    /// parameters the critic optimiser trains, and CrossQ's critics when it is CrossQ.
    fn assemble(
        cfg: SacConfig,
        policy: Box<dyn Policy>,
        pcfg: &PolicySection,
        critic_dim: usize,
        num_envs: usize,
        (nets, critic_params, crossq): (Vec<Mlp>, Vec<(String, Var)>, Option<CrossQ>),
    ) -> Result<Self> {
        let pc = policy.config().clone();
        let log_alpha =
            Var::from_tensor(&Tensor::from_slice(&[cfg.init_alpha.ln() as f32], 1, &DEV)?)?;
        Ok(Self {
            buffer: ReplayBuffer::new(cfg.buffer_size, pc.obs_dim, critic_dim, pc.action_dim),
            actor_opt: Adam::new(policy.params(), cfg.actor_learning_rate),
            critic_opt: Adam::new(critic_params, cfg.critic_learning_rate),
            alpha_opt: Adam::new(
                vec![("log_alpha".into(), log_alpha.clone())],
                cfg.alpha_learning_rate,
            ),
            log_alpha,
            target_entropy: -cfg.target_entropy_scale * pc.action_dim as f64,
            critic: Critic {
                nets,
                normalizer: Normalizer::new(critic_dim, pcfg.obs_clip),
                source: pcfg.critic_obs,
            },
            policy,
            num_envs,
            actions: vec![0.0; num_envs * pc.action_dim],
            prev_a: Vec::new(),
            prev_c: Vec::new(),
            cfg,
            crossq,
        })
    }

    /// The replay buffer (time-outs are stored as non-terminal, with the final observation).
    pub fn buffer(&self) -> &ReplayBuffer {
        &self.buffer
    }

    fn alpha(&self) -> Result<f64> {
        Ok(f64::from(self.log_alpha.as_tensor().to_vec1::<f32>()?[0]).exp())
    }

    /// Reparameterised squashed sample: (tanh(u), log π(tanh(u))) with the change-of-variables term.
    fn squashed_sample(
        &self,
        dist: &clawrl_policy::GaussianOut,
        noise: Vec<f32>,
    ) -> Result<(Tensor, Tensor)> {
        let eps = Tensor::from_vec(noise, dist.mean.shape(), &DEV)?;
        let u = (&dist.mean + (dist.log_std.exp()? * eps)?)?;
        let a = u.tanh()?;
        let logp = distribution::squashed_log_prob(&dist.mean, &dist.log_std, &u)?;
        Ok((a, logp))
    }

    /// The actor's Q: SAC's twin critics, or CrossQ's with their running statistics.
    fn q_pi(&self, obs_c: &Tensor, a: &Tensor) -> Result<Tensor> {
        match &self.crossq {
            None => self.q_min(&self.critic.nets[..2], obs_c, a, false),
            Some(x) => {
                let sa = Tensor::cat(&[obs_c, a], 1)?;
                let (q1, q2) = (x.q[0].forward(&sa, false)?, x.q[1].forward(&sa, false)?);
                Ok(q1.minimum(&q2)?.squeeze(1)?)
            }
        }
    }

    /// The two critics' losses (with graph) and the first critic's mean Q: SAC's against its
    /// target networks, or CrossQ's on the current and next pairs in one batch-normalised batch.
    #[allow(clippy::too_many_arguments)]
    fn critic_loss(
        &self,
        xc: &Tensor,
        act: &Tensor,
        rew: Tensor,
        nxc: &Tensor,
        not_done: Tensor,
        next_a: &Tensor,
        next_logp: Tensor,
        alpha: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let gamma = self.cfg.gamma;
        let x = Tensor::cat(&[xc, act], 1)?;
        let (q1, q2, q_next) = match &self.crossq {
            None => {
                let q_next = self.q_min(&self.critic.nets[2..4], nxc, next_a, true)?;
                let q1 = self.critic.nets[0].forward(&x)?.squeeze(1)?;
                let q2 = self.critic.nets[1].forward(&x)?.squeeze(1)?;
                (q1, q2, q_next)
            }
            Some(cq) => {
                let b = xc.dim(0)?;
                let both = Tensor::cat(&[x, Tensor::cat(&[nxc, next_a], 1)?], 0)?;
                // The twin critics share no parameter: each forward on its own core.
                let q =
                    |i: usize| -> Result<Tensor> { Ok(cq.q[i].forward(&both, true)?.squeeze(1)?) };
                let (q1, q2) = join(|| q(0), || q(1));
                let (q1, q2) = (q1?, q2?);
                let q_next = q1.narrow(0, b, b)?.minimum(&q2.narrow(0, b, b)?)?.detach();
                (q1.narrow(0, 0, b)?, q2.narrow(0, 0, b)?, q_next)
            }
        };
        let soft = (q_next - (next_logp * alpha)?)?;
        let y = (rew + ((not_done * soft)? * gamma)?)?.detach();
        Ok((
            (&q1 - &y)?.sqr()?.mean_all()?,
            (&q2 - &y)?.sqr()?.mean_all()?,
            q1.mean_all()?,
        ))
    }

    fn q_min(&self, nets: &[Mlp], obs_c: &Tensor, a: &Tensor, detached: bool) -> Result<Tensor> {
        let x = Tensor::cat(&[obs_c, a], 1)?;
        let (q1, q2) = if detached {
            (nets[0].forward_detached(&x)?, nets[1].forward_detached(&x)?)
        } else {
            (nets[0].forward(&x)?, nets[1].forward(&x)?)
        };
        Ok(q1.minimum(&q2)?.squeeze(1)?)
    }
}

/// SAC and CrossQ act with a squashed Gaussian and store single observations.
fn check_policy(policy: &dyn Policy) -> Result<()> {
    anyhow::ensure!(
        policy.squashed(),
        "SAC and CrossQ need a squashed policy kind (`squashed_gaussian_mlp`), got `{}`",
        policy.config().kind
    );
    anyhow::ensure!(
        policy.config().history == 0,
        "SAC's and CrossQ's replay buffer stores single observations: policy.history must be 0"
    );
    Ok(())
}

/// A Q network's layer sizes: the critic observation and the action in, one value out.
fn q_dims(critic_dim: usize, policy: &dyn Policy, pcfg: &PolicySection) -> Vec<usize> {
    let mut dims = vec![critic_dim + policy.config().action_dim];
    dims.extend(&pcfg.critic_hidden);
    dims.push(1);
    dims
}

/// Polyak averaging: every target parameter becomes `tau * source + (1 - tau) * target`
/// (parameters paired in order).
pub fn soft_update(target: &[(String, Var)], source: &[(String, Var)], tau: f64) -> Result<()> {
    anyhow::ensure!(
        target.len() == source.len(),
        "soft update of {} target parameters from {} source parameters",
        target.len(),
        source.len()
    );
    for ((_, t), (_, s)) in target.iter().zip(source) {
        let mixed = ((s.as_tensor() * tau)? + (t.as_tensor() * (1.0 - tau))?)?;
        t.set(&mixed)?;
    }
    Ok(())
}

impl Algorithm for Sac {
    fn name(&self) -> &'static str {
        if self.crossq.is_some() {
            "crossq"
        } else {
            "sac"
        }
    }

    fn num_steps_per_env(&self) -> usize {
        self.cfg.num_steps_per_env
    }

    fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    fn act(&mut self, obs: &Batch, rng: &mut Rng) -> Result<&[f32]> {
        let n = self.num_envs;
        let raw_a = obs.obs(self.policy.config().obs_source);
        let raw_c = obs.obs(self.critic.source);
        self.policy.normalizer_mut().update(raw_a);
        self.critic.normalizer.update(raw_c);
        self.prev_a.clear();
        self.prev_a.extend_from_slice(raw_a);
        self.prev_c.clear();
        self.prev_c.extend_from_slice(raw_c);
        if self.buffer.len < self.cfg.learning_starts {
            for a in &mut self.actions {
                *a = rng.random_range(-1.0f32..=1.0);
            }
        } else {
            let d = self.policy.config().obs_dim;
            let x = Tensor::from_vec(self.policy.normalizer().normalize(raw_a), (n, d), &DEV)?;
            let dist = self.policy.distribution_detached(&x)?;
            let noise = normal_noise(rng, self.actions.len());
            let (a, _) = self.squashed_sample(&dist, noise)?;
            self.actions = a.flatten_all()?.to_vec1()?;
        }
        Ok(&self.actions)
    }

    fn process_env_step(&mut self, batch: &Batch) -> Result<()> {
        let (da, dc, na) = (
            self.buffer.actor_dim,
            self.buffer.critic_dim,
            self.buffer.action_dim,
        );
        let la = self.policy.config().obs_source;
        let lc = self.critic.source;
        let final_of = |l| match l {
            clawrl_sim::ObsSource::Onboard => &batch.final_onboard,
            clawrl_sim::ObsSource::Privileged => &batch.final_privileged,
        };
        for e in 0..self.num_envs {
            let (next_a, next_c) = if batch.done(e) {
                (
                    &final_of(la)[e * da..(e + 1) * da],
                    &final_of(lc)[e * dc..(e + 1) * dc],
                )
            } else {
                (
                    &batch.obs(la)[e * da..(e + 1) * da],
                    &batch.obs(lc)[e * dc..(e + 1) * dc],
                )
            };
            self.buffer.push(Transition {
                actor_obs: &self.prev_a[e * da..(e + 1) * da],
                critic_obs: &self.prev_c[e * dc..(e + 1) * dc],
                action: &self.actions[e * na..(e + 1) * na],
                reward: batch.rewards[e],
                next_actor_obs: next_a,
                next_critic_obs: next_c,
                // Time-outs keep bootstrapping; only real terminations stop it.
                terminal: batch.terminated[e],
            });
        }
        Ok(())
    }

    fn compute_returns(&mut self, _batch: &Batch) -> Result<()> {
        Ok(())
    }

    fn update(
        &mut self,
        rng: &mut Rng,
        hooks: &mut dyn TrainHooks,
        iteration: usize,
    ) -> Result<Stats> {
        let c = self.cfg.clone();
        let b = c.batch_size;
        let (da, dc, na) = (
            self.buffer.actor_dim,
            self.buffer.critic_dim,
            self.buffer.action_dim,
        );
        let (mut sq, mut sa, mut se, mut sqv, mut count) = (0.0, 0.0, 0.0, 0.0, 0usize);
        let mut actor_count = 0usize;
        if self.buffer.len >= c.learning_starts.max(b) {
            let mut buf = vec![Vec::new(); 7];
            let critic_params = self.critic_opt.params().to_vec();
            let actor_params = self.actor_opt.params().to_vec();
            for _ in 0..c.updates_per_iteration {
                let idx = self.buffer.sample_indices(b, rng);
                let rb = &self.buffer;
                gather(&rb.actor_obs, da, &idx, &mut buf[0]);
                gather(&rb.critic_obs, dc, &idx, &mut buf[1]);
                gather(&rb.actions, na, &idx, &mut buf[2]);
                gather(&rb.rewards, 1, &idx, &mut buf[3]);
                gather(&rb.next_actor_obs, da, &idx, &mut buf[4]);
                gather(&rb.next_critic_obs, dc, &idx, &mut buf[5]);
                gather(&rb.terminals, 1, &idx, &mut buf[6]);
                let pn = self.policy.normalizer();
                let xa = Tensor::from_vec(pn.normalize(&buf[0]), (b, da), &DEV)?;
                let xc =
                    Tensor::from_vec(self.critic.normalizer.normalize(&buf[1]), (b, dc), &DEV)?;
                let act = Tensor::from_slice(&buf[2], (b, na), &DEV)?;
                let rew = Tensor::from_slice(&buf[3], b, &DEV)?;
                let nxa = Tensor::from_vec(pn.normalize(&buf[4]), (b, da), &DEV)?;
                let nxc =
                    Tensor::from_vec(self.critic.normalizer.normalize(&buf[5]), (b, dc), &DEV)?;
                let not_done = (Tensor::from_slice(&buf[6], b, &DEV)?.neg()? + 1.0)?;
                let alpha = self.alpha()?;

                // Critic: y = r + γ (1 − d) (min Q'(s', a') − α log π(a'|s')), a' ~ π(s').
                let nd = self.policy.distribution_detached(&nxa)?;
                let (na_t, nlogp) = self.squashed_sample(&nd, normal_noise(rng, b * na))?;
                let (l1, l2, q1_mean) =
                    self.critic_loss(&xc, &act, rew, &nxc, not_done, &na_t, nlogp, alpha)?;
                let qv = f64::from(l1.to_scalar::<f32>()? + l2.to_scalar::<f32>()?);
                check_finite("critic loss", qv, iteration)?;
                // Each critic's loss reads only its own parameters: the two backwards run at
                // once, and the gradients are those of one backward of the sum.
                let (g1, g2) = join(|| l1.backward(), || l2.backward());
                let mut grads = g1?;
                merge_grads(&mut grads, &g2?, &critic_params);
                clip_grad_norm(&mut grads, &critic_params, c.max_grad_norm)?;
                self.critic_opt.step(&grads)?;
                sq += qv;
                sqv += f64::from(q1_mean.to_scalar::<f32>()?);
                count += 1;
                // CrossQ updates the actor every `policy_delay` critic updates.
                if let Some(cq) = &mut self.crossq {
                    cq.updates += 1;
                    if cq.updates % cq.policy_delay != 0 {
                        continue;
                    }
                }

                // Actor: minimise α log π(a|s) − min Q(s, a), a reparameterised.
                let dist = self.policy.distribution(&xa)?;
                let (a, logp) = self.squashed_sample(&dist, normal_noise(rng, b * na))?;
                let q_pi = self.q_pi(&xc, &a)?;
                let mut actor_loss = ((&logp * alpha)? - q_pi)?.mean_all()?;
                let ctx = LossContext {
                    iteration,
                    policy: self.policy.as_ref(),
                    actor_obs: &xa,
                    dist: &dist,
                    rows: &idx,
                };
                if let Some(extra) = hooks.extra_loss(&ctx)? {
                    actor_loss = (actor_loss + extra)?;
                }
                let av = f64::from(actor_loss.to_scalar::<f32>()?);
                check_finite("actor loss", av, iteration)?;
                let mut grads = actor_loss.backward()?;
                clip_grad_norm(&mut grads, &actor_params, c.max_grad_norm)?;
                self.actor_opt.step(&grads)?;

                // Temperature: d/d log α of −log α (log π + H̄) averaged = −(mean log π + H̄).
                let mean_logp = f64::from(logp.mean_all()?.to_scalar::<f32>()?);
                if c.alpha_learning_rate > 0.0 {
                    self.alpha_opt
                        .step_with(&[Some(vec![-(mean_logp + self.target_entropy) as f32])])?;
                }
                // Polyak averaging of the targets (CrossQ has none).
                if self.crossq.is_none() {
                    let nets = &self.critic.nets;
                    for i in 0..2 {
                        soft_update(&nets[2 + i].params(), &nets[i].params(), c.tau)?;
                    }
                }
                sa += av;
                se -= mean_logp;
                actor_count += 1;
            }
            hooks.after_update(iteration, self.policy.as_ref())?;
        }
        let avg = |s: f64, n: usize| if n == 0 { f64::NAN } else { s / n as f64 };
        Ok(vec![
            ("q_loss", avg(sq, count)),
            ("actor_loss", avg(sa, actor_count)),
            ("entropy", avg(se, actor_count)),
            ("alpha", self.alpha()?),
            ("q_mean", avg(sqv, count)),
            ("buffer_size", self.buffer.len as f64),
        ])
    }

    fn save(&self) -> Result<Vec<(String, Tensor)>> {
        let mut t = save_policy(self.policy.as_ref(), "")?;
        t.extend(self.critic.save("")?);
        if let Some(cq) = &self.crossq {
            for q in &cq.q {
                t.extend(q.save()?);
            }
        }
        t.push(("log_alpha".into(), self.log_alpha.as_tensor().clone()));
        t.extend(self.actor_opt.state_tensors("sac.actor_adam")?);
        t.extend(self.critic_opt.state_tensors("sac.critic_adam")?);
        t.extend(self.alpha_opt.state_tensors("sac.alpha_adam")?);
        t.extend(self.buffer.to_tensors("replay")?);
        if let Some(cq) = &self.crossq {
            t.push((
                "crossq.updates".into(),
                Tensor::new(&[cq.updates as u32], &DEV)?,
            ));
        }
        Ok(t)
    }

    fn load(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        self.load_networks(t)?;
        load_params(&[("log_alpha".into(), self.log_alpha.clone())], t)?;
        self.actor_opt.load_state("sac.actor_adam", t)?;
        self.critic_opt.load_state("sac.critic_adam", t)?;
        self.alpha_opt.load_state("sac.alpha_adam", t)?;
        self.buffer.load_tensors("replay", t)?;
        if let Some(cq) = &mut self.crossq {
            let n = t
                .get("crossq.updates")
                .ok_or_else(|| anyhow::anyhow!("checkpoint has no `crossq.updates`"))?;
            cq.updates = n.to_vec1::<u32>()?[0] as usize;
        }
        Ok(())
    }

    fn load_networks(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        load_policy(self.policy.as_mut(), "", t)?;
        if let Some(cq) = &mut self.crossq {
            for q in &mut cq.q {
                q.load(t)?;
            }
        }
        self.critic.load("", t)
    }
}
