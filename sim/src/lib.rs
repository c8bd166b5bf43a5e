//! The claw-foot quadruped in MuJoCo: robot model, tasks, rewards, domain randomisation and
//! vectorised environments.
//!
//! - [`Env`] is the environment API every task implements: `reset(seed)` and
//!   `step(action) -> observation, reward, terminated, truncated`, with named observation
//!   sources ([`ObsSource::Onboard`] for what the robot computer sees, [`ObsSource::Privileged`]
//!   for onboard plus simulation-only quantities).
//! - [`quadruped::QuadrupedEnv`] is the claw-foot robot (flat-ground velocity tracking and slopes).
//! - [`cartpole::CartPole`] is a cheap MuJoCo task for learning tests of the trainer.
//! - [`VecEnv`] steps N environments across threads, identically for a seed whatever the
//!   thread count.
pub mod cartpole;
pub mod env;
pub mod error;
pub mod model;
pub mod quadruped;
pub mod rng;
pub mod vec_env;

pub use env::{
    ActionMap, Env, EnvSpec, EpisodeLog, ObsSource, Observation, OnboardLayout, Telemetry,
    Transition,
};
pub use error::SimError;
pub use vec_env::{Batch, VecEnv};

/// The repository root (the parent of this crate), against which config paths resolve.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ has a parent")
        .to_path_buf()
}

/// Directory of the MJCF models shipped with the crate.
pub fn models_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}
