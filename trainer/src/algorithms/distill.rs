//! Online policy distillation (OPD): the student acts in the environments (on-policy) and
//! learns from its own PPO loss plus `alpha` times a divergence to a teacher's action
//! distribution on the very states it visited. The teacher reads its own observation (for
//! example `privileged`) of the same state and is never differentiated.
//!
//! One iteration is PPO's (collect, GAE, update with the divergence as the hook's extra loss,
//! clipped optimiser step) followed by the teacher update: nothing for a `frozen` teacher, an
//! EMA step towards the student for `ema` (self-distillation) while its condition holds.
//! `mode = "distill"` turns the RL terms off (pure distillation, DAgger-style) and
//! `mode = "rl"` turns the divergence off (PPO from scratch; the divergence is still measured).
//!
//! The teacher's distribution is recorded when each sample is collected: during the update the
//! teacher is exactly the one that labelled the rollout, for both update modes. A teacher
//! served over HTTP ([`Teacher::Remote`]) labels each control step of all environments with
//! one request; its weights stay on the server, so it is always frozen.
use std::collections::{HashMap, VecDeque};

use anyhow::{Result, bail};
use candle_core::{DType, Device, Tensor};
use clawrl_policy::distribution::{self, kl_row};
use clawrl_policy::{ActionSource, Policy, Rng};
use clawrl_sim::Batch;

use super::model::{ActorInput, load_policy, save_policy};
use super::{Algorithm, LossContext, Ppo, Stats, TrainHooks};
use crate::config::{
    AlphaSchedule, DistillConfig, DistillMode, Divergence, KlDirection, TeacherUpdate,
};
use crate::storage::gather;

/// Tensor-name prefix of the teacher in a checkpoint (it changes under EMA).
pub const TEACHER: &str = "teacher.";

/// The distiller's teacher: a local network (frozen or EMA) or a served policy (frozen).
pub enum Teacher {
    Local(Box<dyn Policy>),
    /// Served over HTTP (`remote:teacher`): it labels by request, its weights stay there.
    Remote(Box<dyn ActionSource>),
}

impl Teacher {
    pub fn source(&self) -> &dyn ActionSource {
        match self {
            Teacher::Local(p) => p.as_ref(),
            Teacher::Remote(r) => r.as_ref(),
        }
    }
}

pub struct Distill {
    cfg: DistillConfig,
    ppo: Ppo,
    teacher: Teacher,
    teacher_input: ActorInput,
    /// The teacher's Gaussian on every collected sample, `[step * num_envs + env][action]`.
    teacher_mean: Vec<f32>,
    teacher_log_std: Vec<f32>,
    num_envs: usize,
    action_dim: usize,
    /// The student's returns of its most recent episodes (the EMA condition).
    recent: VecDeque<f64>,
    /// The teacher's mean return on the task, measured before training (EMA only).
    teacher_return: Option<f64>,
    ema_updates: usize,
}

/// Alpha at `iteration` under the configured schedule.
pub fn alpha_at(c: &DistillConfig, iteration: usize) -> f64 {
    let f = (iteration as f64 / c.alpha_decay_iterations as f64).min(1.0);
    match c.alpha_schedule {
        AlphaSchedule::Linear => c.alpha + (c.alpha_final - c.alpha) * f,
        AlphaSchedule::Cosine => {
            c.alpha_final
                + (c.alpha - c.alpha_final) * 0.5 * (1.0 + (std::f64::consts::PI * f).cos())
        }
        AlphaSchedule::Constant => c.alpha,
    }
}

/// Whether an EMA teacher update may happen: a full window of student episodes whose mean
/// return beats the teacher's by the margin.
pub fn ema_condition(
    c: &DistillConfig,
    recent: &VecDeque<f64>,
    teacher_return: Option<f64>,
) -> bool {
    let Some(teacher) = teacher_return else {
        return false;
    };
    if recent.len() < c.ema_window {
        return false;
    }
    let student = recent.iter().sum::<f64>() / recent.len() as f64;
    student > teacher + c.ema_margin
}

/// Refuses a teacher that cannot label this student: a different action size, an observation
/// that does not fit the task, a squashed (SAC) head, or, for EMA, a different architecture.
pub fn check_pair(
    c: &DistillConfig,
    teacher: &dyn ActionSource,
    student: &dyn Policy,
    teacher_obs_frame: usize,
) -> Result<()> {
    let (t, s) = (teacher.policy_config(), student.config());
    if t.action_dim != s.action_dim {
        bail!(
            "teacher {} has {} actions, the task has {}",
            c.teacher,
            t.action_dim,
            s.action_dim
        );
    }
    if t.frame_dim() != teacher_obs_frame {
        bail!(
            "teacher {} reads {} values of `{:?}` observation per frame, the task gives {}",
            c.teacher,
            t.frame_dim(),
            t.obs_source,
            teacher_obs_frame
        );
    }
    if teacher.is_squashed() || student.squashed() {
        bail!(
            "distillation compares Gaussians before any tanh: use unsquashed kinds (gaussian_mlp, temporal_conv)"
        );
    }
    if c.teacher_update == TeacherUpdate::Ema {
        let same = t.kind == s.kind
            && t.obs_dim == s.obs_dim
            && t.obs_source == s.obs_source
            && t.hidden == s.hidden
            && t.activation == s.activation
            && t.history == s.history
            && t.conv_channels == s.conv_channels;
        if !same {
            bail!(
                "distill.teacher_update = \"ema\" moves the teacher's weights towards the student's, which needs the same \
                 architecture: teacher {} is {} {:?} on {:?} (history {}), the student is {} {:?} on {:?} (history {})",
                c.teacher,
                t.kind,
                t.hidden,
                t.obs_source,
                t.history,
                s.kind,
                s.hidden,
                s.obs_source,
                s.history
            );
        }
    }
    Ok(())
}

impl Distill {
    pub fn new(
        cfg: DistillConfig,
        mut ppo: Ppo,
        mut teacher: Teacher,
        num_envs: usize,
        teacher_return: Option<f64>,
    ) -> Result<Self> {
        if cfg.mode == DistillMode::Distill {
            ppo.set_rl_coef(0.0);
            ppo.set_noise_scale(cfg.rollout_noise as f32);
        }
        if let Teacher::Local(t) = &mut teacher {
            t.normalizer_mut().training = false;
        }
        let action_dim = teacher.source().policy_config().action_dim;
        let rows = cfg.ppo.num_steps_per_env * num_envs * action_dim;
        Ok(Self {
            teacher_input: ActorInput::new(teacher.source(), num_envs),
            teacher,
            teacher_mean: vec![0.0; rows],
            teacher_log_std: vec![0.0; rows],
            num_envs,
            action_dim,
            recent: VecDeque::new(),
            teacher_return,
            ema_updates: 0,
            cfg,
            ppo,
        })
    }

    pub fn teacher(&self) -> &dyn ActionSource {
        self.teacher.source()
    }

    pub fn ema_updates(&self) -> usize {
        self.ema_updates
    }

    /// Moves the teacher `ema_rate` of the way to the student (weights and normaliser).
    fn ema_step(&mut self) -> Result<()> {
        let Teacher::Local(teacher) = &mut self.teacher else {
            bail!(
                "an EMA step needs the teacher's weights, and a remote teacher keeps them on its server"
            );
        };
        let r = self.cfg.ema_rate;
        super::sac::soft_update(&teacher.params(), &self.ppo.policy().params(), r)?;
        let s = self.ppo.policy().normalizer().clone();
        let t = teacher.normalizer_mut();
        for (tm, sm) in t.mean.iter_mut().zip(&s.mean) {
            *tm += r * (sm - *tm);
        }
        for (tv, sv) in t.var.iter_mut().zip(&s.var) {
            *tv += r * (sv - *tv);
        }
        self.ema_updates += 1;
        Ok(())
    }
}

/// The divergence term, added to PPO's loss for each minibatch.
struct DivergenceLoss<'a> {
    outer: &'a mut dyn TrainHooks,
    cfg: &'a DistillConfig,
    alpha: f64,
    mean: &'a [f32],
    log_std: &'a [f32],
    action_dim: usize,
    /// Sums over minibatches: the divergence and KL(teacher || student), and their count.
    sum_div: f64,
    sum_kl: f64,
    count: usize,
    buf: [Vec<f32>; 2],
}

impl TrainHooks for DivergenceLoss<'_> {
    fn extra_loss(&mut self, ctx: &LossContext<'_>) -> Result<Option<Tensor>> {
        let na = self.action_dim;
        let b = ctx.rows.len();
        gather(self.mean, na, ctx.rows, &mut self.buf[0]);
        gather(self.log_std, na, ctx.rows, &mut self.buf[1]);
        let tm = Tensor::from_slice(&self.buf[0], (b, na), &Device::Cpu)?;
        let tls = Tensor::from_slice(&self.buf[1], (b, na), &Device::Cpu)?;
        let (sm, sls) = (&ctx.dist.mean, &ctx.dist.log_std);
        let kl_forward = distribution::kl(&tm, &tls, sm, sls)?.mean_all()?;
        let div = match (self.cfg.loss, self.cfg.kl_direction) {
            (Divergence::Mse, _) => (sm - &tm)?.sqr()?.sum(1)?.mean_all()?,
            (Divergence::Kl, KlDirection::Reverse) => {
                distribution::kl(sm, sls, &tm, &tls)?.mean_all()?
            }
            (Divergence::Kl, KlDirection::Forward) => kl_forward.clone(),
        };
        self.sum_div += f64::from(div.to_scalar::<f32>()?);
        self.sum_kl += f64::from(kl_forward.to_scalar::<f32>()?);
        self.count += 1;
        let mine = (self.cfg.mode != DistillMode::Rl)
            .then(|| div * self.alpha)
            .transpose()?;
        Ok(match (mine, self.outer.extra_loss(ctx)?) {
            (Some(a), Some(b)) => Some((a + b)?),
            (a, b) => a.or(b),
        })
    }

    fn after_update(&mut self, iteration: usize, policy: &dyn Policy) -> Result<()> {
        self.outer.after_update(iteration, policy)
    }
}

impl Algorithm for Distill {
    fn name(&self) -> &'static str {
        "distill"
    }

    fn num_steps_per_env(&self) -> usize {
        self.ppo.num_steps_per_env()
    }

    fn policy(&self) -> &dyn Policy {
        self.ppo.policy()
    }

    fn act(&mut self, obs: &Batch, rng: &mut Rng) -> Result<&[f32]> {
        let (n, na) = (self.num_envs, self.action_dim);
        let t = self.ppo.storage().step;
        let raw = self.teacher_input.observe(obs);
        // One call (one request for a remote teacher) labels every environment's state.
        let g = self.teacher.source().gaussians(raw)?;
        let rows = t * n * na..(t + 1) * n * na;
        anyhow::ensure!(
            g.mean.len() == rows.len() && g.log_std.len() == rows.len(),
            "the teacher answered {} action values for {n} environments of {na} actions",
            g.mean.len()
        );
        self.teacher_mean[rows.clone()].copy_from_slice(&g.mean);
        self.teacher_log_std[rows].copy_from_slice(&g.log_std);
        self.ppo.act(obs, rng)
    }

    fn process_env_step(&mut self, batch: &Batch) -> Result<()> {
        for log in batch.finished.iter().flatten() {
            self.recent.push_back(log.total);
            if self.recent.len() > self.cfg.ema_window {
                self.recent.pop_front();
            }
        }
        self.ppo.process_env_step(batch)
    }

    fn compute_returns(&mut self, batch: &Batch) -> Result<()> {
        self.ppo.compute_returns(batch)
    }

    fn update(
        &mut self,
        rng: &mut Rng,
        hooks: &mut dyn TrainHooks,
        iteration: usize,
    ) -> Result<Stats> {
        let alpha = alpha_at(&self.cfg, iteration);
        let mut loss = DivergenceLoss {
            outer: hooks,
            cfg: &self.cfg,
            alpha,
            mean: &self.teacher_mean,
            log_std: &self.teacher_log_std,
            action_dim: self.action_dim,
            sum_div: 0.0,
            sum_kl: 0.0,
            count: 0,
            buf: [Vec::new(), Vec::new()],
        };
        let mut stats = self.ppo.update(rng, &mut loss, iteration)?;
        let k = loss.count.max(1) as f64;
        let (div, kl) = (loss.sum_div / k, loss.sum_kl / k);
        let fired = self.cfg.teacher_update == TeacherUpdate::Ema
            && ema_condition(&self.cfg, &self.recent, self.teacher_return);
        if fired {
            self.ema_step()?;
        }
        stats.extend([
            (
                "distill_alpha",
                if self.cfg.mode == DistillMode::Rl {
                    0.0
                } else {
                    alpha
                },
            ),
            ("distill_loss", div),
            ("kl_teacher", kl),
            ("ema_updates", self.ema_updates as f64),
        ]);
        Ok(stats)
    }

    fn save(&self) -> Result<Vec<(String, Tensor)>> {
        let mut t = self.ppo.save()?;
        if let Teacher::Local(teacher) = &self.teacher {
            t.extend(save_policy(teacher.as_ref(), TEACHER)?);
        }
        let recent: Vec<f64> = self.recent.iter().copied().collect();
        t.push((
            "distill.recent_returns".into(),
            Tensor::from_vec(recent.clone(), recent.len(), &Device::Cpu)?,
        ));
        t.push((
            "distill.ema_updates".into(),
            Tensor::new(&[self.ema_updates as f64], &Device::Cpu)?,
        ));
        Ok(t)
    }

    fn load(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        self.ppo.load(t)?;
        if let Teacher::Local(teacher) = &mut self.teacher {
            load_policy(teacher.as_mut(), TEACHER, t)?;
        }
        if let Some(r) = t.get("distill.recent_returns") {
            self.recent = r.to_dtype(DType::F64)?.to_vec1::<f64>()?.into();
        }
        if let Some(e) = t.get("distill.ema_updates") {
            self.ema_updates = e.to_dtype(DType::F64)?.to_vec1::<f64>()?[0] as usize;
        }
        Ok(())
    }

    /// The student and its critic; the teacher stays the one this run was given.
    fn load_networks(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        self.ppo.load_networks(t)
    }
}

/// Per-joint KL(teacher || student) of one row, for reports.
pub fn per_joint_kl(tm: &[f32], tls: &[f32], sm: &[f32], sls: &[f32]) -> Vec<f64> {
    (0..tm.len())
        .map(|j| kl_row(&tm[j..=j], &tls[j..=j], &sm[j..=j], &sls[j..=j]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DistillConfig, PpoConfig};

    fn cfg(schedule: AlphaSchedule) -> DistillConfig {
        let ppo: PpoConfig = toml::from_str::<toml::Table>(
            &std::fs::read_to_string(clawrl_sim::repo_root().join("configs/algo/ppo.toml"))
                .unwrap(),
        )
        .unwrap()["ppo"]
            .clone()
            .try_into()
            .unwrap();
        DistillConfig {
            teacher: "t".into(),
            teacher_sha256: String::new(),
            endpoint: String::new(),
            mode: DistillMode::Opd,
            loss: Divergence::Kl,
            kl_direction: KlDirection::Forward,
            alpha: 2.0,
            alpha_schedule: schedule,
            alpha_final: 0.5,
            alpha_decay_iterations: 100,
            teacher_update: TeacherUpdate::Ema,
            ema_rate: 0.1,
            ema_window: 3,
            ema_margin: 1.0,
            rollout_noise: 1.0,
            ppo,
        }
    }

    #[test]
    fn alpha_schedules_start_at_alpha_and_end_at_alpha_final() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(alpha_at(&cfg(AlphaSchedule::Constant), 50), 2.0));
        let l = cfg(AlphaSchedule::Linear);
        assert!(close(alpha_at(&l, 0), 2.0) && close(alpha_at(&l, 50), 1.25));
        assert!(close(alpha_at(&l, 100), 0.5) && close(alpha_at(&l, 1000), 0.5));
        let c = cfg(AlphaSchedule::Cosine);
        assert!(close(alpha_at(&c, 0), 2.0) && close(alpha_at(&c, 50), 1.25));
        assert!(close(alpha_at(&c, 100), 0.5) && alpha_at(&c, 25) > 1.25 + 0.375);
    }

    #[test]
    fn ema_condition_needs_a_full_window_that_beats_the_teacher_by_the_margin() {
        let c = cfg(AlphaSchedule::Constant);
        let w = |v: &[f64]| v.iter().copied().collect::<VecDeque<f64>>();
        assert!(
            !ema_condition(&c, &w(&[20.0, 20.0]), Some(10.0)),
            "window not full"
        );
        assert!(
            !ema_condition(&c, &w(&[11.0, 11.0, 11.0]), Some(10.0)),
            "margin not beaten"
        );
        assert!(ema_condition(&c, &w(&[11.5, 11.0, 11.5]), Some(10.0)));
        assert!(
            !ema_condition(&c, &w(&[99.0, 99.0, 99.0]), None),
            "no teacher figure"
        );
    }

    #[test]
    fn per_joint_kl_is_zero_for_identical_policies_and_the_closed_form_otherwise() {
        let m = [0.3f32, -1.0];
        let ls = [-0.5f32, 0.2];
        assert!(
            per_joint_kl(&m, &ls, &m, &ls)
                .iter()
                .all(|&k| k.abs() < 1e-12)
        );
        // KL(N(0, 1) || N(1, 2^2)) = ln 2 + (1 + 1) / 8 - 1/2.
        let k = per_joint_kl(&[0.0], &[0.0], &[1.0], &[2f32.ln()]);
        assert!((k[0] - (2f64.ln() + 0.25 - 0.5)).abs() < 1e-6, "{k:?}");
    }
}
