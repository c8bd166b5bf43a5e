//! clawrl policy layer, usable at inference without the trainer.
//!
//! - [`mlp`]: multi-layer perceptrons in candle, initialised from a seeded RNG (candle's CPU
//!   device cannot be seeded).
//! - [`normalizer`]: running mean/variance of observations, saved with the weights.
//! - [`distribution`]: diagonal Gaussian log-prob, entropy and KL, on tensors and on slices.
//! - [`policy`]: the [`Policy`] trait and the Gaussian-MLP policies.
//! - [`temporal`]: the `temporal_conv` student (1-D convolution over its history).
//! - [`registry`]: policy kind name -> constructor; save/load of a policy to one safetensors file.
//! - [`bundle`]: a policy to and from the network part of a policy bundle.
//! - [`source`]: [`ActionSource`], a policy as evaluation and distillation ask it (local or
//!   remote).
//! - [`io`]: safetensors read/write with string metadata.
pub mod bundle;
pub mod distribution;
pub mod elu;
pub mod fault;
pub mod io;
pub mod mlp;
pub mod normalizer;
pub mod policy;
pub mod registry;
pub mod source;
pub mod temporal;

pub use mlp::{Activation, Mlp};
pub use normalizer::Normalizer;
pub use policy::{GaussianMlp, GaussianOut, ObsSource, Policy, PolicyConfig};
pub use registry::Registry;
pub use source::{ActionSource, Gaussians};

/// The random stream used for initial weights and exploration noise.
pub type Rng = rand_chacha::ChaCha8Rng;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    #[error("safetensors: {0}")]
    SafeTensors(String),
    /// The message holds the OS error's text, so the OS error is a field, not the `source()`:
    /// a source would be printed a second time by an error chain (`{:#}`).
    #[error("io error on {}: {err}", path.display())]
    Io {
        path: std::path::PathBuf,
        err: std::io::Error,
    },
    #[error("unknown policy kind `{0}` (registered: {1})")]
    UnknownKind(String, String),
    #[error("bad policy file {path}: {reason}")]
    BadFile {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("invalid policy config: {0}")]
    Config(String),
    /// A policy served over HTTP did not answer (the message is the endpoint's diagnosis).
    #[error("{0}")]
    Remote(String),
}

pub type Result<T> = std::result::Result<T, PolicyError>;

/// Sets `RAYON_NUM_THREADS` (read by candle on every matmul) to `threads` when it is unset.
/// Call before any candle op, while the program is still single-threaded.
pub fn init_candle_threads(threads: usize) {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // SAFETY: called at start-up before other threads read the environment.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads.max(1).to_string()) };
    }
}
