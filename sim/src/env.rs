//! The environment API shared by every task.
use crate::SimError;

pub use clawrl_robot::{ActionMap, ObsSource, OnboardLayout};

/// Shapes and timing of a task, fixed for its lifetime.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSpec {
    pub name: String,
    pub action_dim: usize,
    pub onboard_dim: usize,
    pub privileged_dim: usize,
    /// Names of the observation entries, privileged layout (onboard is its prefix).
    pub obs_names: Vec<String>,
    pub action_names: Vec<String>,
    /// Seconds between two `step` calls.
    pub control_dt: f64,
    /// Seconds per physics step (MuJoCo's timestep); `control_dt` is a whole number of them.
    pub physics_dt: f64,
    /// Steps after which an episode is truncated.
    pub max_episode_steps: usize,
    /// Names of the reward terms, in the order of [`EpisodeLog::terms`].
    pub reward_terms: Vec<String>,
    /// Names of the feet, in the order of [`Telemetry::foot_contact`] (empty without feet).
    pub foot_names: Vec<String>,
    /// How the onboard observation is built from sensors (what a policy bundle records).
    pub onboard_layout: OnboardLayout,
    /// Action -> servo target (robots with servos; cart-pole pushes a cart).
    pub action_map: Option<ActionMap>,
    /// The MJCF file of the model (a bundle records its hash).
    pub model_file: std::path::PathBuf,
}

impl EnvSpec {
    pub fn obs_dim(&self, layout: ObsSource) -> usize {
        match layout {
            ObsSource::Onboard => self.onboard_dim,
            ObsSource::Privileged => self.privileged_dim,
        }
    }
}

/// Both observation layouts of one state. Privileged starts with the onboard vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub onboard: Vec<f32>,
    pub privileged: Vec<f32>,
}

/// What `step` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub observation: Observation,
    pub reward: f32,
    /// The episode ended in a state the task forbids (a fall): no bootstrapping past it.
    pub terminated: bool,
    /// The episode hit its time limit: the value of `observation` still counts.
    pub truncated: bool,
}

/// Per-episode sums of each named reward term, for logging.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeLog {
    pub steps: usize,
    pub total: f64,
    /// (term name, sum of weighted reward over the episode)
    pub terms: Vec<(&'static str, f64)>,
    /// (name, value) of what the episode was, not what it earned: the quadruped's floor tilt
    /// and terrain level. The trainer logs their means as `ep_NAME` columns.
    pub stats: Vec<(&'static str, f64)>,
}

/// A task. Implementations hold their own MuJoCo data and random stream.
pub trait Env: Send {
    fn spec(&self) -> &EnvSpec;

    /// Starts a new episode; everything random in it derives from `seed`.
    fn reset(&mut self, seed: u64) -> Observation {
        self.reset_in_place(seed);
        self.observation()
    }

    /// Advances one control step. Refuses (and does not touch the physics) an action of the
    /// wrong length or with a non-finite entry.
    fn step(&mut self, action: &[f32]) -> Result<Transition, SimError> {
        let (reward, terminated, truncated) = self.step_in_place(action)?;
        Ok(Transition {
            observation: self.observation(),
            reward,
            terminated,
            truncated,
        })
    }

    /// Allocation-free reset used by [`crate::VecEnv`].
    fn reset_in_place(&mut self, seed: u64);

    /// Allocation-free step used by [`crate::VecEnv`]: returns (reward, terminated, truncated).
    fn step_in_place(&mut self, action: &[f32]) -> Result<(f32, bool, bool), SimError>;

    /// Writes the current observation in `layout` into `out` (length `spec().obs_dim(layout)`).
    fn observe(&self, layout: ObsSource, out: &mut [f32]);

    /// The current observation in both layouts.
    fn observation(&self) -> Observation {
        let spec = self.spec();
        let mut onboard = vec![0.0; spec.onboard_dim];
        let mut privileged = vec![0.0; spec.privileged_dim];
        self.observe(ObsSource::Onboard, &mut onboard);
        self.observe(ObsSource::Privileged, &mut privileged);
        Observation {
            onboard,
            privileged,
        }
    }

    /// Reward terms of the episode so far.
    fn episode_log(&self) -> EpisodeLog;

    /// Physical state for evaluation and plots (speeds, joints, contacts). Tasks without a
    /// body to report return the default.
    fn telemetry(&self) -> Telemetry {
        Telemetry::default()
    }

    /// What an environment carries from one episode to the next (the quadruped's terrain
    /// curriculum level), for the trainer to keep when it rebuilds its environments and in
    /// its checkpoints. Empty for tasks that carry nothing.
    fn carried(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Takes back what [`carried`](Self::carried) gave, before the first reset.
    fn carry(&mut self, _state: &[f64]) {}

    /// Fixes the task command (for a velocity task: forward, lateral, yaw rate) until the next
    /// reset, for evaluation at chosen commands. Tasks without a command refuse.
    fn set_command(&mut self, command: &[f32]) -> Result<(), SimError> {
        let _ = command;
        Err(SimError::NoCommand {
            task: self.spec().name.clone(),
        })
    }

    /// After [`set_command`](Self::set_command): the yaw command holds the body's present
    /// heading instead (the task's heading command, legged_gym's), as an operator steering
    /// back would, until the next reset. Tasks that do not steer by heading refuse.
    fn hold_heading(&mut self) -> Result<(), SimError> {
        Err(SimError::NoHeading {
            task: self.spec().name.clone(),
        })
    }
}

/// Physical state of the robot, for evaluation (tracking error, distance, falls) and gait plots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Simulated seconds since the episode began.
    pub time: f64,
    /// The task command in force (empty for tasks without one).
    pub command: Vec<f32>,
    /// Base linear velocity in the heading frame (forward, left, up), m/s.
    pub base_lin_vel: [f64; 3],
    /// Base yaw rate, rad/s.
    pub yaw_rate: f64,
    /// Base position in the world, m.
    pub base_pos: [f64; 3],
    /// Joint angles in actuator order, rad.
    pub joint_pos: Vec<f64>,
    /// Whether each foot touches the ground.
    pub foot_contact: Vec<bool>,
    /// Whether each foot touched the ground after each physics step of the last control step,
    /// oldest first (empty before the first step, and for tasks without feet). A trot's stride
    /// is 7-8 control steps at 50 Hz, too coarse to tell phases 0.1 cycle apart; at the physics
    /// rate it is 5 times finer.
    pub foot_contact_substeps: Vec<Vec<bool>>,
    /// Claw grip in [0, 1] per foot.
    pub grip: Vec<f64>,
}

/// Lets `VecEnv<Box<dyn Env>>` hold any task chosen at run time.
impl<E: Env + ?Sized> Env for Box<E> {
    fn spec(&self) -> &EnvSpec {
        (**self).spec()
    }
    fn reset_in_place(&mut self, seed: u64) {
        (**self).reset_in_place(seed)
    }
    fn step_in_place(&mut self, action: &[f32]) -> Result<(f32, bool, bool), SimError> {
        (**self).step_in_place(action)
    }
    fn observe(&self, layout: ObsSource, out: &mut [f32]) {
        (**self).observe(layout, out)
    }
    fn episode_log(&self) -> EpisodeLog {
        (**self).episode_log()
    }
    fn telemetry(&self) -> Telemetry {
        (**self).telemetry()
    }
    fn carried(&self) -> Vec<f64> {
        (**self).carried()
    }
    fn carry(&mut self, state: &[f64]) {
        (**self).carry(state)
    }
    fn set_command(&mut self, command: &[f32]) -> Result<(), SimError> {
        (**self).set_command(command)
    }
    fn hold_heading(&mut self) -> Result<(), SimError> {
        (**self).hold_heading()
    }
}

/// Checks an action's length and finiteness before it reaches the physics.
pub fn check_action(action: &[f32], expected: usize) -> Result<(), SimError> {
    if action.len() != expected {
        return Err(SimError::ActionLength {
            expected,
            got: action.len(),
        });
    }
    match action.iter().position(|a| !a.is_finite()) {
        Some(index) => Err(SimError::NonFiniteAction {
            index,
            value: action[index],
        }),
        None => Ok(()),
    }
}
