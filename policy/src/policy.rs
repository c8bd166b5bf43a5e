//! The [`Policy`] trait (what the trainer, distiller and exporter use) and the Gaussian-MLP
//! policies behind it.
use candle_core::{Device, Tensor, Var};

use crate::distribution;
use crate::mlp::{Activation, Mlp};
use crate::normalizer::Normalizer;
use crate::{PolicyError, Result, Rng};

pub use clawrl_robot::ObsSource;

/// Everything needed to rebuild a policy (saved in its file's metadata).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Registered kind name (see [`crate::Registry`]).
    pub kind: String,
    pub obs_dim: usize,
    pub action_dim: usize,
    pub obs_source: ObsSource,
    pub hidden: Vec<usize>,
    pub activation: Activation,
    /// Initial standard deviation of the action noise.
    pub init_std: f64,
    /// Normalised observations are clamped to ±obs_clip.
    pub obs_clip: f32,
    /// Past frames stacked after the current observation, newest first (students; 0 = none):
    /// `obs_dim = frame size * (history + 1)`, see `clawrl_robot::History`.
    #[serde(default)]
    pub history: usize,
    /// Channels of the temporal convolution (`temporal_conv` kind only; 0 for other kinds).
    #[serde(default)]
    pub conv_channels: usize,
}

impl PolicyConfig {
    /// Size of one observation frame (the stacked input holds `history + 1` of them).
    pub fn frame_dim(&self) -> usize {
        self.obs_dim / (self.history + 1)
    }

    pub fn check(&self) -> Result<()> {
        if self.obs_dim == 0 || self.action_dim == 0 {
            return Err(PolicyError::Config(
                "obs_dim and action_dim must be positive".into(),
            ));
        }
        if self.hidden.contains(&0) {
            return Err(PolicyError::Config(
                "hidden layer sizes must be positive".into(),
            ));
        }
        if !self.obs_dim.is_multiple_of(self.history + 1) {
            return Err(PolicyError::Config(format!(
                "obs_dim {} is not a whole number of frames for history {}",
                self.obs_dim, self.history
            )));
        }
        if !(self.init_std.is_finite() && self.init_std > 0.0) {
            return Err(PolicyError::Config(format!(
                "init_std {} must be positive",
                self.init_std
            )));
        }
        Ok(())
    }
}

/// A batch of diagonal Gaussians: `mean` and `log_std` are both `[batch, action_dim]`.
#[derive(Debug, Clone)]
pub struct GaussianOut {
    pub mean: Tensor,
    pub log_std: Tensor,
}

/// A stochastic policy over continuous actions. Observations handed to the tensor methods are
/// already normalised (see [`Policy::normalizer`]); [`Policy::deterministic`] takes raw ones.
pub trait Policy: crate::ActionSource + Send + Sync {
    fn config(&self) -> &PolicyConfig;
    /// Trainable parameters, named, in a fixed order.
    fn params(&self) -> Vec<(String, Var)>;
    fn normalizer(&self) -> &Normalizer;
    fn normalizer_mut(&mut self) -> &mut Normalizer;
    /// Action distribution for normalised observations `[batch, obs_dim]`, recording the graph.
    fn distribution(&self, obs: &Tensor) -> Result<GaussianOut>;
    /// The same without building a graph (rollouts, inference).
    fn distribution_detached(&self, obs: &Tensor) -> Result<GaussianOut>;
    /// Whether actions are `tanh` of the Gaussian sample (SAC); log-probs then need the
    /// change-of-variables term, which the algorithm applies.
    fn squashed(&self) -> bool {
        false
    }

    fn log_prob(&self, dist: &GaussianOut, actions: &Tensor) -> Result<Tensor> {
        distribution::log_prob(&dist.mean, &dist.log_std, actions)
    }

    fn entropy(&self, dist: &GaussianOut) -> Result<Tensor> {
        distribution::entropy(&dist.log_std)
    }

    /// Deterministic actions for a row-major batch of raw observations: normalise, mean, and
    /// `tanh` when squashed.
    fn deterministic(&self, raw_obs: &[f32]) -> Result<Vec<f32>> {
        let d = self.config().obs_dim;
        let n = raw_obs.len() / d;
        let x = Tensor::from_vec(self.normalizer().normalize(raw_obs), (n, d), &Device::Cpu)?;
        let mut mean = self.distribution_detached(&x)?.mean;
        if self.squashed() {
            mean = mean.tanh()?;
        }
        Ok(mean.flatten_all()?.to_vec1()?)
    }
}

/// MLP mean with either a learnt state-independent log-std vector (rsl_rl's PPO head) or a
/// state-dependent log-std head (second half of the output, clamped to [-5, 2]; SAC's head),
/// optionally tanh-squashed.
pub struct GaussianMlp {
    config: PolicyConfig,
    net: Mlp,
    log_std: Option<Var>,
    squash: bool,
    normalizer: Normalizer,
}

pub const LOG_STD_MIN: f64 = -5.0;
pub const LOG_STD_MAX: f64 = 2.0;

impl GaussianMlp {
    pub fn new(
        config: &PolicyConfig,
        state_dependent_std: bool,
        squash: bool,
        rng: &mut Rng,
    ) -> Result<Self> {
        config.check()?;
        let a = config.action_dim;
        let out = if state_dependent_std { 2 * a } else { a };
        let mut dims = vec![config.obs_dim];
        dims.extend(&config.hidden);
        dims.push(out);
        let net = Mlp::new("actor", &dims, config.activation, 0.01, rng)?;
        if state_dependent_std {
            // Start the state-dependent head at log(init_std) through the output bias.
            let b = &net.params()[dims.len() * 2 - 3].1;
            let mut bias = vec![0.0f32; 2 * a];
            bias[a..]
                .iter_mut()
                .for_each(|x| *x = config.init_std.ln() as f32);
            b.set(&Tensor::from_vec(bias, 2 * a, &Device::Cpu)?)?;
        }
        let log_std = if state_dependent_std {
            None
        } else {
            Some(Var::from_tensor(&Tensor::full(
                config.init_std.ln() as f32,
                a,
                &Device::Cpu,
            )?)?)
        };
        Ok(Self {
            config: config.clone(),
            net,
            log_std,
            squash,
            normalizer: Normalizer::new(config.obs_dim, config.obs_clip),
        })
    }

    fn head(&self, out: Tensor) -> Result<GaussianOut> {
        let a = self.config.action_dim;
        match &self.log_std {
            Some(ls) => {
                let b = out.dim(0)?;
                let log_std = ls.as_tensor().unsqueeze(0)?.broadcast_as((b, a))?;
                Ok(GaussianOut { mean: out, log_std })
            }
            None => {
                let mean = out.narrow(1, 0, a)?;
                let log_std = out.narrow(1, a, a)?.clamp(LOG_STD_MIN, LOG_STD_MAX)?;
                Ok(GaussianOut { mean, log_std })
            }
        }
    }
}

impl Policy for GaussianMlp {
    fn config(&self) -> &PolicyConfig {
        &self.config
    }

    fn params(&self) -> Vec<(String, Var)> {
        let mut p = self.net.params();
        if let Some(ls) = &self.log_std {
            p.push(("actor.log_std".into(), ls.clone()));
        }
        p
    }

    fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    fn normalizer_mut(&mut self) -> &mut Normalizer {
        &mut self.normalizer
    }

    fn distribution(&self, obs: &Tensor) -> Result<GaussianOut> {
        self.head(self.net.forward(obs)?)
    }

    fn distribution_detached(&self, obs: &Tensor) -> Result<GaussianOut> {
        let d = self.head(self.net.forward_detached(obs)?)?;
        Ok(GaussianOut {
            mean: d.mean,
            log_std: d.log_std.detach(),
        })
    }

    fn squashed(&self) -> bool {
        self.squash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> PolicyConfig {
        PolicyConfig {
            kind: "gaussian_mlp".into(),
            obs_dim: 6,
            action_dim: 2,
            obs_source: ObsSource::Onboard,
            hidden: vec![8],
            activation: crate::Activation::Elu,
            init_std: 0.5,
            obs_clip: 10.0,
            history: 2,
            conv_channels: 0,
        }
    }

    #[test]
    fn check_refuses_each_impossible_shape_and_spread() {
        assert!(good().check().is_ok());
        let bad: [(&str, PolicyConfig); 7] = [
            (
                "no inputs",
                PolicyConfig {
                    obs_dim: 0,
                    ..good()
                },
            ),
            (
                "no actions",
                PolicyConfig {
                    action_dim: 0,
                    ..good()
                },
            ),
            (
                "an empty layer",
                PolicyConfig {
                    hidden: vec![8, 0],
                    ..good()
                },
            ),
            (
                "frames that do not divide",
                PolicyConfig {
                    obs_dim: 7,
                    ..good()
                },
            ),
            (
                "zero spread",
                PolicyConfig {
                    init_std: 0.0,
                    ..good()
                },
            ),
            (
                "negative spread",
                PolicyConfig {
                    init_std: -0.5,
                    ..good()
                },
            ),
            (
                "infinite spread",
                PolicyConfig {
                    init_std: f64::INFINITY,
                    ..good()
                },
            ),
        ];
        for (what, c) in bad {
            assert!(c.check().is_err(), "{what} accepted");
        }
    }
}
