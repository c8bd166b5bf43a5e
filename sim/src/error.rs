//! Errors of the simulation layer.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The MJCF file did not load; `reason` is MuJoCo's own message.
    #[error("cannot load MuJoCo model {file}: {reason}")]
    ModelLoad { file: PathBuf, reason: String },
    /// The model loaded but lacks something the task needs (a joint, sensor, keyframe...).
    #[error("model {file} does not match the task: {reason}")]
    ModelMismatch { file: PathBuf, reason: String },
    #[error("action has {got} values, the task takes {expected}")]
    ActionLength { expected: usize, got: usize },
    /// A NaN or infinite action is refused before it reaches the physics.
    #[error("action[{index}] is {value}: actions must be finite")]
    NonFiniteAction { index: usize, value: f32 },
    #[error("task `{task}` takes no command")]
    NoCommand { task: String },
    #[error("task `{task}` does not steer by heading (its command.heading_gain is 0)")]
    NoHeading { task: String },
    #[error("command has {got} values, the task takes {expected}")]
    CommandLength { expected: usize, got: usize },
    #[error("step called before reset")]
    NotReset,
    /// A robot description that does not load or does not fit its MJCF.
    #[error(transparent)]
    Description(clawrl_robot::description::DescriptionError),
    #[error(transparent)]
    Config(#[from] clawrl_config::ConfigError),
}
