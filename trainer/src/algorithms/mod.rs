//! Learning algorithms behind one trait, so the runner does not care which one it drives
//! (rsl_rl's verbs: act, process_env_step, compute_returns, update, save, load): PPO, SAC and
//! the distiller (PPO's loop plus a teacher), sharing the actor-critic pieces of [`model`].
pub mod bn_critic;
pub mod distill;
pub mod model;
pub mod ppo;
pub mod sac;

use std::collections::HashMap;

use anyhow::Result;
use candle_core::Tensor;
use clawrl_policy::{GaussianOut, Policy, Rng};
use clawrl_sim::Batch;

pub use distill::Distill;
pub use ppo::Ppo;
pub use sac::Sac;

/// Named scalar diagnostics of one update, in a fixed order (they become CSV columns).
pub type Stats = Vec<(&'static str, f64)>;

/// What an extra-loss hook sees for one minibatch.
pub struct LossContext<'a> {
    pub iteration: usize,
    pub policy: &'a dyn Policy,
    /// Normalised actor observations of the minibatch, `[batch, obs_dim]`.
    pub actor_obs: &'a Tensor,
    /// The policy's current distribution on them (with graph).
    pub dist: &'a GaussianOut,
    /// Which collected samples the minibatch holds (indices into the rollout, `step * num_envs
    /// + env`; SAC: into the replay buffer), so a hook can pair them with its own records.
    pub rows: &'a [usize],
}

/// Extension points of a training iteration: the distiller adds its loss in `extra_loss` and
/// refreshes its teacher (EMA) in `after_update`.
pub trait TrainHooks {
    /// A loss term added to the algorithm's actor loss before the backward pass.
    fn extra_loss(&mut self, ctx: &LossContext<'_>) -> Result<Option<Tensor>> {
        let _ = ctx;
        Ok(None)
    }
    /// Called after each optimiser update, with the updated policy.
    fn after_update(&mut self, iteration: usize, policy: &dyn Policy) -> Result<()> {
        let _ = (iteration, policy);
        Ok(())
    }
}

/// No hooks.
pub struct NoHooks;
impl TrainHooks for NoHooks {}

/// A loss went NaN or infinite: the run stops before the optimiser applies it.
#[derive(Debug, thiserror::Error)]
#[error(
    "non-finite {what} ({value}) at iteration {iteration}: training stopped, the last checkpoint is kept"
)]
pub struct NonFiniteLoss {
    pub what: &'static str,
    pub value: f64,
    pub iteration: usize,
}

pub fn check_finite(what: &'static str, value: f64, iteration: usize) -> Result<()> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(NonFiniteLoss {
            what,
            value,
            iteration,
        }
        .into())
    }
}

pub trait Algorithm: Send {
    fn name(&self) -> &'static str;
    /// Environment steps per environment in one iteration.
    fn num_steps_per_env(&self) -> usize;
    fn policy(&self) -> &dyn Policy;
    /// Actions `[num_envs, action_dim]` for the observations in `obs`.
    fn act(&mut self, obs: &Batch, rng: &mut Rng) -> Result<&[f32]>;
    /// Records the outcome of the step just taken.
    fn process_env_step(&mut self, batch: &Batch) -> Result<()>;
    /// Returns/advantages after the rollout (`batch` holds the observations after it).
    fn compute_returns(&mut self, batch: &Batch) -> Result<()>;
    fn update(
        &mut self,
        rng: &mut Rng,
        hooks: &mut dyn TrainHooks,
        iteration: usize,
    ) -> Result<Stats>;
    /// Everything needed to resume exactly (weights, optimiser state, normalisers, buffers).
    fn save(&self) -> Result<Vec<(String, Tensor)>>;
    fn load(&mut self, tensors: &HashMap<String, Tensor>) -> Result<()>;
    /// The policy and the critic alone (weights and normalisers) from a checkpoint's tensors:
    /// a new run that fine-tunes another one keeps its own optimiser and bookkeeping.
    fn load_networks(&mut self, tensors: &HashMap<String, Tensor>) -> Result<()>;
}

/// Standard-normal noise from the run's RNG (candle's CPU device cannot be seeded).
pub fn normal_noise(rng: &mut Rng, n: usize) -> Vec<f32> {
    use rand::RngExt;
    (0..n)
        .map(|_| rng.sample::<f32, _>(rand_distr::StandardNormal))
        .collect()
}

/// `other()` on a second thread while this one runs `here()`. The updates use it for the two
/// halves of a loss that share no parameter (PPO's actor and critic, the twin critics), so an
/// update keeps both cores busy; `here` may hold what cannot cross threads (the hooks).
pub fn join<A: Send, B>(other: impl FnOnce() -> A + Send, here: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|scope| {
        let other = scope.spawn(other);
        let here = here();
        (other.join().expect("an update thread panicked"), here)
    })
}
