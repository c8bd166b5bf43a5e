//! clawrl desktop trainer: PPO and SAC teachers in candle behind one [`algorithms::Algorithm`]
//! trait, experience storage, the training loop ([`runner`]), atomic checkpoints with exact
//! resume, metrics (CSV + PNG curves) and evaluation.
pub mod algorithms;
pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod eval;
pub mod lock;
pub mod metrics;
pub mod optim;
pub mod runner;
pub mod storage;
pub mod task;

pub use config::{TrainConfig, load_train_config};
pub use runner::{ResumeOptions, Runner, Summary};
