//! [`ActionSource`]: what evaluation, comparison and a distiller's teacher need of a policy,
//! and nothing more: its configuration and its Gaussians on raw observations. Every local
//! [`Policy`] is one (the blanket impl below); so is a policy served over HTTP
//! (`clawrl_endpoint::RemotePolicy`), which is how `remote:teacher` reaches every command that
//! accepts a policy without the trainer knowing where the weights live.
use candle_core::{Device, Tensor};

use crate::{Policy, PolicyConfig, Result};

/// A batch of diagonal Gaussians as plain rows: `mean` and `log_std` are both
/// `[batch * action_dim]`, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaussians {
    pub mean: Vec<f32>,
    pub log_std: Vec<f32>,
}

/// A policy that can be asked for actions: a local network or a remote endpoint. Observations
/// are raw (unnormalised), row-major `[batch, obs_dim]`; the source applies its own normaliser.
///
/// The method names differ from [`Policy`]'s so both traits can be in scope at once.
pub trait ActionSource: Send + Sync {
    /// Shapes and observation source (as saved with the weights).
    fn policy_config(&self) -> &PolicyConfig;
    /// Whether actions are `tanh` of the Gaussian (SAC heads).
    fn is_squashed(&self) -> bool;
    /// The action distribution for a batch of raw observations, without gradients.
    fn gaussians(&self, raw_obs: &[f32]) -> Result<Gaussians>;
    /// Deterministic actions: the mean, through `tanh` when squashed.
    fn actions(&self, raw_obs: &[f32]) -> Result<Vec<f32>> {
        let mut a = self.gaussians(raw_obs)?.mean;
        if self.is_squashed() {
            a.iter_mut().for_each(|x| *x = x.tanh());
        }
        Ok(a)
    }
}

impl<P: Policy> ActionSource for P {
    fn policy_config(&self) -> &PolicyConfig {
        self.config()
    }

    fn is_squashed(&self) -> bool {
        self.squashed()
    }

    fn gaussians(&self, raw_obs: &[f32]) -> Result<Gaussians> {
        let d = self.config().obs_dim;
        let x = Tensor::from_vec(
            self.normalizer().normalize(raw_obs),
            (raw_obs.len() / d, d),
            &Device::Cpu,
        )?;
        let g = self.distribution_detached(&x)?;
        Ok(Gaussians {
            mean: g.mean.flatten_all()?.to_vec1()?,
            log_std: g.log_std.flatten_all()?.to_vec1()?,
        })
    }

    // candle's tanh, as training and the exporter's checks use, not f32::tanh: evaluations of
    // a local policy stay bit for bit what they were.
    fn actions(&self, raw_obs: &[f32]) -> Result<Vec<f32>> {
        self.deterministic(raw_obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, ObsSource, Registry, Rng};
    use rand::SeedableRng;

    fn policy(kind: &str) -> Box<dyn Policy> {
        let cfg = PolicyConfig {
            kind: kind.into(),
            obs_dim: 3,
            action_dim: 2,
            obs_source: ObsSource::Privileged,
            hidden: vec![8],
            activation: Activation::Tanh,
            init_std: 0.5,
            obs_clip: 10.0,
            history: 0,
            conv_channels: 0,
        };
        let mut p = Registry::default()
            .build(&cfg, &mut Rng::seed_from_u64(7))
            .unwrap();
        p.normalizer_mut().update(&[1.0, 2.0, 3.0, -1.0, 0.0, 5.0]);
        p
    }

    #[test]
    fn a_local_policy_answers_its_own_distribution_on_raw_observations() {
        for kind in ["gaussian_mlp", "squashed_gaussian_mlp"] {
            let p = policy(kind);
            let raw = [0.5f32, -1.0, 2.0, 3.0, 0.25, -4.0];
            let src: &dyn ActionSource = p.as_ref();
            let g = src.gaussians(&raw).unwrap();
            let x = Tensor::from_vec(p.normalizer().normalize(&raw), (2, 3), &Device::Cpu).unwrap();
            let d = p.distribution_detached(&x).unwrap();
            assert_eq!(
                g.mean,
                d.mean.flatten_all().unwrap().to_vec1::<f32>().unwrap()
            );
            assert_eq!(
                g.log_std,
                d.log_std.flatten_all().unwrap().to_vec1::<f32>().unwrap()
            );
            assert_eq!(src.actions(&raw).unwrap(), p.deterministic(&raw).unwrap());
            assert_eq!(src.is_squashed(), kind.starts_with("squashed"));
            assert_eq!(src.policy_config().action_dim, 2);
        }
    }

    /// A source known only by its answers (as a served policy is).
    struct Fixed(PolicyConfig, bool);
    impl ActionSource for Fixed {
        fn policy_config(&self) -> &PolicyConfig {
            &self.0
        }
        fn is_squashed(&self) -> bool {
            self.1
        }
        fn gaussians(&self, raw_obs: &[f32]) -> Result<Gaussians> {
            let mean: Vec<f32> = raw_obs.iter().map(|x| 2.0 * x).collect();
            Ok(Gaussians {
                log_std: vec![0.0; mean.len()],
                mean,
            })
        }
    }

    #[test]
    fn actions_are_the_mean_and_tanh_of_it_when_squashed() {
        let cfg = policy("gaussian_mlp").config().clone();
        let raw = [0.25f32, -1.0];
        assert_eq!(
            Fixed(cfg.clone(), false).actions(&raw).unwrap(),
            [0.5, -2.0]
        );
        assert_eq!(
            Fixed(cfg, true).actions(&raw).unwrap(),
            [0.5f32.tanh(), (-2.0f32).tanh()]
        );
    }
}
