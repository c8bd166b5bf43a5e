//! Cart-pole balancing in MuJoCo: a cheap task for the trainer's learning tests.
//!
//! Observation: onboard = cart position, cos and sin of the pole angle (no velocities, as a
//! robot without encoders on the rates would see it); privileged = onboard followed by cart
//! velocity and pole angular velocity. Action: one push in [-1, 1] (10 N). Reward: 1 per step while the pole
//! is within 0.2 rad of upright and the cart within 2.4 m of the centre; leaving either
//! terminates the episode. 200 steps at 50 Hz make an episode.
use std::path::PathBuf;
use std::sync::Arc;

use mujoco_rs::prelude::*;

use crate::env::{EpisodeLog, check_action};
use crate::rng::{rng, uniform};
use crate::{Env, EnvSpec, ObsSource, OnboardLayout, SimError, model};

const DECIMATION: usize = 2;
/// Onboard: cart position and the pole's angle as cos/sin, no velocities (a student must infer
/// them from its history). Privileged adds the cart and pole velocities.
const ONBOARD_DIM: usize = 3;
const MAX_STEPS: usize = 200;
const ANGLE_LIMIT: f64 = 0.2;
const CART_LIMIT: f64 = 2.4;

pub struct CartPole {
    spec: EnvSpec,
    data: MjData<Arc<MjModel>>,
    steps: usize,
    episode_return: f64,
    started: bool,
}

impl CartPole {
    pub fn model_path() -> PathBuf {
        crate::models_dir().join("cartpole.xml")
    }

    /// Loads the shared model once; pass it to [`CartPole::with_model`] for each environment.
    pub fn load_model() -> Result<Arc<MjModel>, SimError> {
        model::load(Self::model_path()).map(Arc::new)
    }

    pub fn new() -> Result<Self, SimError> {
        Ok(Self::with_model(Self::load_model()?))
    }

    pub fn with_model(model: Arc<MjModel>) -> Self {
        let names = [
            "cart_pos",
            "cos_angle",
            "sin_angle",
            "cart_vel",
            "angle_vel",
        ];
        let spec = EnvSpec {
            name: "cartpole".into(),
            action_dim: 1,
            onboard_dim: ONBOARD_DIM,
            privileged_dim: 5,
            obs_names: names.iter().map(|s| s.to_string()).collect(),
            action_names: vec!["push".into()],
            control_dt: model.opt().timestep * DECIMATION as f64,
            physics_dt: model.opt().timestep,
            max_episode_steps: MAX_STEPS,
            reward_terms: vec!["alive".into()],
            foot_names: Vec::new(),
            onboard_layout: OnboardLayout::cartpole(),
            action_map: None,
            model_file: Self::model_path(),
        };
        Self {
            spec,
            data: MjData::new(model),
            steps: 0,
            episode_return: 0.0,
            started: false,
        }
    }

    fn angle(&self) -> f64 {
        self.data.qpos()[1]
    }
}

impl Env for CartPole {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset_in_place(&mut self, seed: u64) {
        let mut r = rng(seed);
        self.data.reset();
        for q in self.data.qpos_mut() {
            *q = uniform(&mut r, [-0.05, 0.05]);
        }
        for v in self.data.qvel_mut() {
            *v = uniform(&mut r, [-0.05, 0.05]);
        }
        self.data.forward();
        self.steps = 0;
        self.episode_return = 0.0;
        self.started = true;
    }

    fn step_in_place(&mut self, action: &[f32]) -> Result<(f32, bool, bool), SimError> {
        check_action(action, 1)?;
        if !self.started {
            return Err(SimError::NotReset);
        }
        self.data.ctrl_mut()[0] = f64::from(action[0]).clamp(-1.0, 1.0);
        for _ in 0..DECIMATION {
            self.data.step();
        }
        self.data.forward();
        self.steps += 1;
        let fell = self.angle().abs() > ANGLE_LIMIT || self.data.qpos()[0].abs() > CART_LIMIT;
        let reward = if fell { 0.0 } else { 1.0 };
        self.episode_return += reward;
        Ok((reward as f32, fell, !fell && self.steps >= MAX_STEPS))
    }

    fn observe(&self, source: ObsSource, out: &mut [f32]) {
        let (q, v) = (self.data.qpos(), self.data.qvel());
        let obs = [q[0], q[1].cos(), q[1].sin(), v[0], v[1]];
        let n = match source {
            ObsSource::Onboard => ONBOARD_DIM,
            ObsSource::Privileged => obs.len(),
        };
        for (o, x) in out[..n].iter_mut().zip(obs) {
            *o = x as f32;
        }
    }

    fn episode_log(&self) -> EpisodeLog {
        EpisodeLog {
            steps: self.steps,
            total: self.episode_return,
            terms: vec![("alive", self.episode_return)],
            stats: Vec::new(),
        }
    }
}
