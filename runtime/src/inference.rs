//! The student network, for inference only: a bundle's tensors as plain candle tensors (no
//! `Var`, no random stream, no autograd, no normaliser statistics to update), and one call,
//! [`Student::act`], that maps the normalised stacked observation to the deterministic action.
//!
//! The maths repeats the policy crate's forward pass op for op (`x.matmul(w) + b`, the same
//! activation, the same convolution), so the robot computes bit for bit what the desktop
//! evaluated; `hil-tests/tests/runtime_parity.rs` checks it on every kind.
use candle_core::{Device, Tensor};
use clawrl_bundle::Bundle;
use serde::Deserialize;

/// The network kinds the runtime can run (the policy registry's built-in kinds).
pub const SUPPORTED_KINDS: [&str; 4] = [
    "gaussian_mlp",
    "gaussian_mlp_state_std",
    "squashed_gaussian_mlp",
    "temporal_conv",
];

#[derive(Debug, thiserror::Error)]
pub enum InferenceError {
    #[error("bundle {path}: network: {reason}")]
    Bundle { path: String, reason: String },
    #[error("observation has {got} values, the network reads {expected}")]
    ObsLength { expected: usize, got: usize },
    #[error("action buffer has {got} values, the network writes {expected}")]
    ActionLength { expected: usize, got: usize },
    /// Candle's text is in the message, so it is not also the `source()` (which an error
    /// chain, `{:#}`, would print again); hence the hand-written `From`.
    #[error("candle: {0}")]
    Candle(candle_core::Error),
}

impl From<candle_core::Error> for InferenceError {
    fn from(e: candle_core::Error) -> Self {
        Self::Candle(e)
    }
}

/// The part of the policy crate's `PolicyConfig` that shapes the forward pass. Other keys
/// (initial noise, clip) are the trainer's and are ignored here.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NetworkConfig {
    pub kind: String,
    pub obs_dim: usize,
    pub action_dim: usize,
    pub hidden: Vec<usize>,
    pub activation: Activation,
    #[serde(default)]
    pub history: usize,
    #[serde(default)]
    pub conv_channels: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Elu,
    Relu,
    Tanh,
}

impl Activation {
    fn apply(self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Activation::Elu => x.elu(1.0),
            Activation::Relu => x.relu(),
            Activation::Tanh => x.tanh(),
        }
    }
}

/// The network body in front of the MLP layers.
#[derive(Debug, Clone)]
enum Body {
    /// The stacked observation goes straight into the MLP.
    Flat,
    /// A 1-D convolution over the history: kernel `[channels, frame, k]`, bias `[channels]`.
    TemporalConv { kernel: Tensor, bias: Tensor },
}

/// How the MLP's output becomes the action.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Head {
    /// The output is the mean.
    Mean,
    /// The first half is the mean (the second half, log-std, is unused at inference).
    MeanOfTwo,
    /// `tanh` of the first half (SAC's squashed Gaussian).
    TanhMeanOfTwo,
}

/// A student network ready to run.
#[derive(Debug, Clone)]
pub struct Student {
    config: NetworkConfig,
    body: Body,
    /// `(weight [in, out], bias [out])`, input to output.
    layers: Vec<(Tensor, Tensor)>,
    head: Head,
}

impl Student {
    /// Builds the network the bundle describes, checking every tensor's shape.
    pub fn from_bundle(bundle: &Bundle) -> Result<Self, InferenceError> {
        let bad = |reason: String| InferenceError::Bundle {
            path: bundle.path.display().to_string(),
            reason,
        };
        let m = &bundle.manifest;
        let config: NetworkConfig = toml::from_str(&m.network.policy_config)
            .map_err(|e| bad(format!("policy_config: {e}")))?;
        if config.kind != m.network.kind {
            return Err(bad(format!(
                "kind {:?} disagrees with policy_config's {:?}",
                m.network.kind, config.kind
            )));
        }
        if config.obs_dim != m.observation.stacked_dim() || config.history != m.observation.history
        {
            return Err(bad(format!(
                "the network reads {} values with history {}, the observation spec gives {} with history {}",
                config.obs_dim,
                config.history,
                m.observation.stacked_dim(),
                m.observation.history
            )));
        }
        let tensor = |name: &str, shape: &[usize]| -> Result<Tensor, InferenceError> {
            let t = bundle
                .tensor(name)
                .ok_or_else(|| bad(format!("no tensor `{name}`")))?;
            if t.shape != shape {
                return Err(bad(format!(
                    "tensor `{name}` has shape {:?}, the network needs {shape:?}",
                    t.shape
                )));
            }
            Ok(Tensor::from_slice(&t.data, shape, &Device::Cpu)?)
        };
        let a = config.action_dim;
        let frames = config.history + 1;
        let (body, input, head) = match config.kind.as_str() {
            "gaussian_mlp" => (Body::Flat, config.obs_dim, Head::Mean),
            "gaussian_mlp_state_std" => (Body::Flat, config.obs_dim, Head::MeanOfTwo),
            "squashed_gaussian_mlp" => (Body::Flat, config.obs_dim, Head::TanhMeanOfTwo),
            "temporal_conv" => {
                let (c, d) = (config.conv_channels, config.obs_dim / frames);
                if c == 0 {
                    return Err(bad("temporal_conv needs conv_channels > 0".into()));
                }
                // The policy crate's kernel width: 3 frames, or fewer when the history is short.
                let k = 3.min(frames);
                let body = Body::TemporalConv {
                    kernel: tensor("actor.conv.weight", &[c, d, k])?,
                    bias: tensor("actor.conv.bias", &[c])?.reshape((1, c, 1))?,
                };
                (body, c * (frames - k + 1), Head::Mean)
            }
            other => {
                return Err(bad(format!(
                    "kind {other:?} is not one the runtime runs ({})",
                    SUPPORTED_KINDS.join(", ")
                )));
            }
        };
        let out = if head == Head::Mean { a } else { 2 * a };
        let mut dims = vec![input];
        dims.extend(&config.hidden);
        dims.push(out);
        let layers = dims
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                Ok((
                    tensor(&format!("actor.{i}.weight"), &[w[0], w[1]])?,
                    tensor(&format!("actor.{i}.bias"), &[w[1]])?,
                ))
            })
            .collect::<Result<Vec<_>, InferenceError>>()?;
        Ok(Self {
            config,
            body,
            layers,
            head,
        })
    }

    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    pub fn obs_dim(&self) -> usize {
        self.config.obs_dim
    }

    pub fn action_dim(&self) -> usize {
        self.config.action_dim
    }

    /// The deterministic action for one normalised stacked observation, written into `out`.
    /// Non-finite values pass through: judging them is the safety layer's job.
    pub fn act(&self, obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
        let (d, a) = (self.config.obs_dim, self.config.action_dim);
        if obs.len() != d {
            return Err(InferenceError::ObsLength {
                expected: d,
                got: obs.len(),
            });
        }
        if out.len() != a {
            return Err(InferenceError::ActionLength {
                expected: a,
                got: out.len(),
            });
        }
        let x = Tensor::from_slice(obs, (1, d), &Device::Cpu)?;
        let mut h = match &self.body {
            Body::Flat => x,
            Body::TemporalConv { kernel, bias } => {
                let frames = self.config.history + 1;
                let seq = x
                    .reshape((1, frames, d / frames))?
                    .transpose(1, 2)?
                    .contiguous()?;
                let features = seq.conv1d(kernel, 0, 1, 1, 1)?.broadcast_add(bias)?;
                self.config.activation.apply(&features)?.flatten_from(1)?
            }
        };
        for (i, (w, b)) in self.layers.iter().enumerate() {
            h = h.matmul(w)?.broadcast_add(b)?;
            if i + 1 < self.layers.len() {
                h = self.config.activation.apply(&h)?;
            }
        }
        if self.head != Head::Mean {
            h = h.narrow(1, 0, a)?;
        }
        if self.head == Head::TanhMeanOfTwo {
            h = h.tanh()?;
        }
        // One copy out of the tensor's storage, no Vec.
        let h = h.contiguous()?;
        let (s, layout) = h.storage_and_layout();
        match &*s {
            candle_core::Storage::Cpu(cpu) => {
                let data = cpu.as_slice::<f32>()?;
                out.copy_from_slice(&data[layout.start_offset()..layout.start_offset() + a]);
            }
            _ => unreachable!("the runtime only builds CPU tensors"),
        }
        Ok(())
    }
}
