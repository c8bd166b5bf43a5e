//! `temporal_conv`: a student that reads its history as a sequence. A 1-D convolution slides
//! over time (kernel 3, `conv_channels` filters, shared across time steps), then an MLP maps
//! the flattened features to the action mean; log-std is a learnt vector (as PPO's head).
//!
//! The plain MLP sees the same stacked frames as one flat vector and must learn per time step
//! what the convolution shares: the convolution needs fewer weights for a long history.
use candle_core::{Device, Tensor, Var};
use rand::RngExt;

use crate::mlp::Mlp;
use crate::normalizer::Normalizer;
use crate::policy::{GaussianOut, Policy, PolicyConfig};
use crate::{PolicyError, Result, Rng};

/// Time steps each filter spans (fewer when the history is shorter).
pub const KERNEL: usize = 3;

pub struct TemporalConv {
    config: PolicyConfig,
    /// `[channels, frame_dim, kernel]`.
    kernel: Var,
    bias: Var,
    head: Mlp,
    log_std: Var,
    normalizer: Normalizer,
}

impl TemporalConv {
    pub fn new(config: &PolicyConfig, rng: &mut Rng) -> Result<Self> {
        config.check()?;
        if config.conv_channels == 0 {
            return Err(PolicyError::Config(
                "temporal_conv needs conv_channels > 0".into(),
            ));
        }
        let (d, frames, c) = (config.frame_dim(), config.history + 1, config.conv_channels);
        let k = KERNEL.min(frames);
        let bound = 1.0 / ((d * k) as f64).sqrt();
        let values: Vec<f32> = (0..c * d * k)
            .map(|_| rng.random_range(-bound..=bound) as f32)
            .collect();
        let kernel = Var::from_tensor(&Tensor::from_vec(values, (c, d, k), &Device::Cpu)?)?;
        let bias = Var::from_tensor(&Tensor::zeros(c, candle_core::DType::F32, &Device::Cpu)?)?;
        let mut dims = vec![c * (frames - k + 1)];
        dims.extend(&config.hidden);
        dims.push(config.action_dim);
        let head = Mlp::new("actor", &dims, config.activation, 0.01, rng)?;
        let log_std = Var::from_tensor(&Tensor::full(
            config.init_std.ln() as f32,
            config.action_dim,
            &Device::Cpu,
        )?)?;
        Ok(Self {
            config: config.clone(),
            kernel,
            bias,
            head,
            log_std,
            normalizer: Normalizer::new(config.obs_dim, config.obs_clip),
        })
    }

    fn forward(&self, obs: &Tensor, detach: bool) -> Result<GaussianOut> {
        let (b, d, frames) = (
            obs.dim(0)?,
            self.config.frame_dim(),
            self.config.history + 1,
        );
        let (kernel, bias) = if detach {
            (
                self.kernel.as_tensor().detach(),
                self.bias.as_tensor().detach(),
            )
        } else {
            (
                self.kernel.as_tensor().clone(),
                self.bias.as_tensor().clone(),
            )
        };
        // [b, frames * d] (newest first) -> [b, d channels, frames long].
        let seq = obs.reshape((b, frames, d))?.transpose(1, 2)?.contiguous()?;
        let features = seq
            .conv1d(&kernel, 0, 1, 1, 1)?
            .broadcast_add(&bias.reshape((1, (), 1))?)?;
        let features = self.config.activation.apply(&features)?.flatten_from(1)?;
        let mean = if detach {
            self.head.forward_detached(&features)?
        } else {
            self.head.forward(&features)?
        };
        let a = self.config.action_dim;
        let log_std = self
            .log_std
            .as_tensor()
            .unsqueeze(0)?
            .broadcast_as((b, a))?;
        let log_std = if detach { log_std.detach() } else { log_std };
        Ok(GaussianOut { mean, log_std })
    }
}

impl Policy for TemporalConv {
    fn config(&self) -> &PolicyConfig {
        &self.config
    }

    fn params(&self) -> Vec<(String, Var)> {
        let mut p = vec![
            ("actor.conv.weight".to_string(), self.kernel.clone()),
            ("actor.conv.bias".to_string(), self.bias.clone()),
        ];
        p.extend(self.head.params());
        p.push(("actor.log_std".into(), self.log_std.clone()));
        p
    }

    fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    fn normalizer_mut(&mut self) -> &mut Normalizer {
        &mut self.normalizer
    }

    fn distribution(&self, obs: &Tensor) -> Result<GaussianOut> {
        self.forward(obs, false)
    }

    fn distribution_detached(&self, obs: &Tensor) -> Result<GaussianOut> {
        self.forward(obs, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, ObsSource};
    use rand::SeedableRng;

    fn cfg(history: usize) -> PolicyConfig {
        PolicyConfig {
            kind: "temporal_conv".into(),
            obs_dim: 2 * (history + 1),
            action_dim: 1,
            obs_source: ObsSource::Onboard,
            hidden: vec![8],
            activation: Activation::Elu,
            init_std: 0.5,
            obs_clip: 10.0,
            history,
            conv_channels: 4,
        }
    }

    #[test]
    fn convolution_shares_its_filter_across_time() {
        let p = TemporalConv::new(&cfg(4), &mut Rng::seed_from_u64(0)).unwrap();
        // 3 output steps x 4 channels feed the head.
        assert_eq!(p.head.input_dim(), 12);
        // Shifting the whole sequence by one frame shifts the features: the first conv output
        // of the shifted input equals the second of the original.
        let x: Vec<f32> = (0..10).map(|i| i as f32 * 0.1).collect();
        let seq = |v: &[f32]| {
            Tensor::from_slice(v, (1, 5, 2), &Device::Cpu)
                .unwrap()
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap()
                .conv1d(p.kernel.as_tensor(), 0, 1, 1, 1)
                .unwrap()
                .to_vec3::<f32>()
                .unwrap()
        };
        let a = seq(&x);
        let b = seq(&x[2..].iter().copied().chain([9.0, 9.0]).collect::<Vec<_>>());
        for ch in 0..4 {
            assert!((a[0][ch][1] - b[0][ch][0]).abs() < 1e-6);
        }
    }

    #[test]
    fn gradients_reach_the_filter() {
        let p = TemporalConv::new(&cfg(2), &mut Rng::seed_from_u64(1)).unwrap();
        let x = Tensor::ones((3, 6), candle_core::DType::F32, &Device::Cpu).unwrap();
        let loss = p
            .distribution(&x)
            .unwrap()
            .mean
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap();
        let grads = loss.backward().unwrap();
        let g = grads.get(p.kernel.as_tensor()).expect("kernel gradient");
        let norm: f32 = g.sqr().unwrap().sum_all().unwrap().to_scalar().unwrap();
        assert!(norm > 0.0);
    }

    #[test]
    fn its_parameters_are_the_filter_the_head_and_the_log_std() {
        let p = TemporalConv::new(&cfg(4), &mut Rng::seed_from_u64(0)).unwrap();
        let names: Vec<String> = p.params().into_iter().map(|(n, _)| n).collect();
        assert_eq!(&names[..2], ["actor.conv.weight", "actor.conv.bias"]);
        assert_eq!(names.len(), 2 + p.head.params().len() + 1, "{names:?}");
        assert!(names.contains(&"actor.log_std".to_string()), "{names:?}");
    }
}
