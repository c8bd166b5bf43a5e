//! clawrl desktop trainer: PPO and SAC teachers and the distiller (online policy distillation
//! into an onboard student) in candle behind one [`algorithms::Algorithm`] trait, experience
//! storage, the training loop ([`runner`]), atomic checkpoints with exact resume, metrics (CSV
//! and PNG curves), evaluation, teacher/student comparison ([`compare`]) and the export of a
//! student as a policy bundle ([`export`]); any of them can read a policy served over HTTP
//! ([`remote`]).
pub mod algorithms;
pub mod bench;
pub mod checkpoint;
pub mod compare;
pub mod config;
pub mod endpoint_check;
pub mod eval;
pub mod export;
pub mod gait;
pub mod lock;
pub mod metrics;
pub mod optim;
pub mod remote;
pub mod runner;
pub mod slope_curve;
pub mod source;
pub mod storage;
pub mod sweep;
pub mod task;
pub mod tracking;
pub mod video;

pub use config::{TrainConfig, load_train_config};
pub use runner::{ResumeOptions, Runner, Summary};
