//! What PPO, SAC and the distiller share (rsl_rl's `modules`): the actor (any registered
//! policy) fed its observation, with its history of past frames when it has one, and the
//! critic networks with their own observation normaliser; save and load under a prefix.
use std::collections::HashMap;

use anyhow::Result;
use candle_core::{Device, Tensor};
use clawrl_policy::registry::NORMALIZER;
use clawrl_policy::{ActionSource, Mlp, Normalizer, ObsSource, Policy};
use clawrl_robot::History;
use clawrl_sim::Batch;

use crate::optim::{load_params, param_tensors};

/// Tensor-name prefix of the critic's normaliser in a checkpoint.
pub const CRITIC_NORMALIZER: &str = "critic_normalizer";

/// A policy's parameters and normaliser as named tensors, each name behind `prefix` (empty for
/// the model being trained, `teacher.` for a distiller's teacher). The tensors are copies, so
/// later updates of the policy do not change them.
pub fn save_policy(policy: &dyn Policy, prefix: &str) -> Result<Vec<(String, Tensor)>> {
    let mut t: Vec<(String, Tensor)> = param_tensors(&policy.params())
        .into_iter()
        .map(|(n, t)| Ok((format!("{prefix}{n}"), t.copy()?)))
        .collect::<Result<_>>()?;
    t.extend(
        policy
            .normalizer()
            .to_tensors(&format!("{prefix}{NORMALIZER}"))?,
    );
    Ok(t)
}

/// Inverse of [`save_policy`].
pub fn load_policy(
    policy: &mut dyn Policy,
    prefix: &str,
    t: &HashMap<String, Tensor>,
) -> Result<()> {
    let params: Vec<_> = policy
        .params()
        .into_iter()
        .map(|(n, v)| (format!("{prefix}{n}"), v))
        .collect();
    load_params(&params, t)?;
    policy
        .normalizer_mut()
        .load_tensors(&format!("{prefix}{NORMALIZER}"), &|k| t.get(k).cloned())?;
    Ok(())
}

/// The actor's input for a batch of environments: its observation source, stacked with past
/// frames when the policy reads a history.
pub struct ActorInput {
    source: ObsSource,
    history: Option<History>,
}

impl ActorInput {
    pub fn new(policy: &dyn ActionSource, num_envs: usize) -> Self {
        let c = policy.policy_config();
        Self {
            source: c.obs_source,
            history: (c.history > 0).then(|| History::new(num_envs, c.frame_dim(), c.history)),
        }
    }

    /// Raw (unnormalised) actor observations of the batch, `[num_envs, obs_dim]`. Call once
    /// per environment step: it advances the history.
    pub fn observe<'a>(&'a mut self, batch: &'a Batch) -> &'a [f32] {
        let frame = batch.obs(self.source);
        match &mut self.history {
            Some(h) => {
                h.push(frame, &batch.new_episode);
                h.as_slice()
            }
            None => frame,
        }
    }
}

/// Value or Q networks reading one observation source through their own normaliser.
pub struct Critic {
    pub nets: Vec<Mlp>,
    pub normalizer: Normalizer,
    pub source: ObsSource,
}

impl Critic {
    /// Normalises `raw` (`[n, dim]`) into a tensor.
    pub fn input(&self, raw: &[f32]) -> Result<Tensor> {
        let d = self.normalizer.dim();
        let n = raw.len() / d.max(1);
        Ok(Tensor::from_vec(
            self.normalizer.normalize(raw),
            (n, d),
            &Device::Cpu,
        )?)
    }

    pub fn save(&self, prefix: &str) -> Result<Vec<(String, Tensor)>> {
        let mut t = Vec::new();
        for net in &self.nets {
            t.extend(
                param_tensors(&net.params())
                    .into_iter()
                    .map(|(n, x)| (format!("{prefix}{n}"), x)),
            );
        }
        t.extend(
            self.normalizer
                .to_tensors(&format!("{prefix}{CRITIC_NORMALIZER}"))?,
        );
        Ok(t)
    }

    pub fn load(&mut self, prefix: &str, t: &HashMap<String, Tensor>) -> Result<()> {
        for net in &self.nets {
            let params: Vec<_> = net
                .params()
                .into_iter()
                .map(|(n, v)| (format!("{prefix}{n}"), v))
                .collect();
            load_params(&params, t)?;
        }
        self.normalizer
            .load_tensors(&format!("{prefix}{CRITIC_NORMALIZER}"), &|k| {
                t.get(k).cloned()
            })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawrl_policy::{Activation, PolicyConfig, Registry, Rng};
    use rand::SeedableRng;

    fn policy(seed: u64) -> Box<dyn Policy> {
        let cfg = PolicyConfig {
            kind: "gaussian_mlp".into(),
            obs_dim: 3,
            action_dim: 2,
            obs_source: ObsSource::Privileged,
            hidden: vec![8],
            activation: Activation::Elu,
            init_std: 0.5,
            obs_clip: 10.0,
            history: 0,
            conv_channels: 0,
        };
        Registry::default()
            .build(&cfg, &mut Rng::seed_from_u64(seed))
            .unwrap()
    }

    #[test]
    fn a_saved_policy_loads_back_under_its_prefix() {
        let mut a = policy(1);
        a.normalizer_mut().update(&[1.0, 2.0, 3.0, -1.0, 0.5, 4.0]);
        let saved: HashMap<String, Tensor> = save_policy(a.as_ref(), "teacher.")
            .unwrap()
            .into_iter()
            .collect();
        assert!(
            saved.keys().all(|k| k.starts_with("teacher.")),
            "{:?}",
            saved.keys()
        );
        let mut b = policy(2);
        let obs = [0.3f32, -0.7, 1.1];
        assert_ne!(
            a.deterministic(&obs).unwrap(),
            b.deterministic(&obs).unwrap()
        );
        load_policy(b.as_mut(), "teacher.", &saved).unwrap();
        assert_eq!(
            a.deterministic(&obs).unwrap(),
            b.deterministic(&obs).unwrap()
        );
        assert_eq!(a.normalizer().mean, b.normalizer().mean);
        // Under another prefix nothing matches: refused, not silently skipped.
        assert!(load_policy(b.as_mut(), "student.", &saved).is_err());
    }
}
