//! Domain randomisation: per-episode physical parameters drawn from the environment's seeded
//! stream and written into the environment's own copy of the model. Every draw starts again
//! from the pristine model, so episodes never compound each other's changes.
use mujoco_rs::prelude::*;

use super::config::TaskConfig;
use super::layout::Layout;
use super::math::{Quat, Vec3, axis_angle, rotate};
use crate::rng::{SimRng, uniform};

/// What was drawn for one episode. The privileged observation reports some of it.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeParams {
    pub friction: f64,
    pub link_mass_scale: f64,
    pub torso_added_mass: f64,
    pub com_offset: Vec3,
    pub servo_strength: f64,
    /// Physics steps before a new action reaches the servos.
    pub latency_substeps: usize,
    /// Servo calibration error per servo: the servo reads (and holds) angle + offset.
    pub joint_offset: Vec<f64>,
    /// Orientation of the floor (identity when flat) and its normal in the world.
    pub floor_quat: Quat,
    pub floor_normal: Vec3,
    pub slope: f64,
    /// The yaw, in the floor's frame, that faces uphill (the floor tilts about the horizontal
    /// axis at `direction`; uphill is a quarter turn from it).
    pub uphill_yaw: f64,
    /// This episode starts settled at the default pose (`settled_start_probability`).
    pub settled_start: bool,
    /// Every sensor-noise amplitude times this (`noise.scale`), so some episodes are as quiet
    /// as a robot's sensors can be.
    pub noise_scale: f64,
}

impl EpisodeParams {
    /// Draws every parameter for a robot of `servos` servos. The order of draws is fixed, so
    /// a seed means the same episode whatever the config's ranges.
    pub fn draw(cfg: &TaskConfig, rng: &mut SimRng, servos: usize) -> Self {
        Self::draw_on(cfg, rng, cfg.terrain.slope_degrees, servos)
    }

    /// As [`draw`](Self::draw), a sloped floor's tilt drawn from `slope_degrees` (the terrain
    /// curriculum's band) instead of the config's whole range.
    pub fn draw_on(
        cfg: &TaskConfig,
        rng: &mut SimRng,
        slope_degrees: [f64; 2],
        servos: usize,
    ) -> Self {
        use rand::RngExt;
        let d = &cfg.randomization;
        let friction = uniform(rng, d.friction);
        let link_mass_scale = uniform(rng, d.link_mass_scale);
        let torso_added_mass = uniform(rng, d.torso_added_mass);
        let com_offset = d.com_offset.map(|r| uniform(rng, [-r, r]));
        let servo_strength = uniform(rng, d.servo_strength);
        let [lo, hi] = d.latency_substeps;
        let latency_substeps = rng.random_range(lo..=hi);
        let joint_offset = (0..servos)
            .map(|_| uniform(rng, [-d.joint_offset, d.joint_offset]))
            .collect();
        let sloped = rng.random::<f64>() < cfg.terrain.slope_probability;
        let slope = uniform(rng, slope_degrees).to_radians();
        let direction = uniform(rng, [0.0, std::f64::consts::TAU]);
        let slope = if sloped { slope } else { 0.0 };
        let floor_quat = axis_angle([direction.cos(), direction.sin(), 0.0], slope);
        Self {
            friction,
            link_mass_scale,
            torso_added_mass,
            com_offset,
            servo_strength,
            latency_substeps,
            joint_offset,
            floor_quat,
            floor_normal: rotate(floor_quat, [0.0, 0.0, 1.0]),
            slope,
            uphill_yaw: direction + std::f64::consts::FRAC_PI_2,
            settled_start: false,
            noise_scale: 1.0,
        }
    }

    /// Draws how the episode starts (settled or not) and its noise scale from a stream of
    /// their own, so every other draw of a seed, and so the episodes of configs without
    /// these keys, stay what they were.
    pub fn draw_start(&mut self, cfg: &TaskConfig, seed: u64) {
        use rand::RngExt;
        let mut start = crate::rng::rng(crate::rng::derive_seed(seed, u64::MAX));
        let p = cfg.randomization.settled_start_probability;
        self.settled_start = p > 0.0 && start.random::<f64>() < p;
        self.noise_scale = uniform(&mut start, cfg.noise.scale);
    }

    /// Writes the parameters into `model`, starting from `base` (the pristine model).
    pub fn apply(&self, base: &MjModel, model: &mut MjModel, layout: &Layout) {
        // Masses: every link scaled, the torso also carries the payload; inertia follows mass.
        let nbody = base.ffi().nbody as usize;
        for b in 1..nbody {
            let mut mass = base.body_mass()[b] * self.link_mass_scale;
            if b == layout.torso_body {
                mass = (mass + self.torso_added_mass).max(0.1);
            }
            let ratio = mass / base.body_mass()[b];
            model.body_mass_mut()[b] = mass;
            model.body_inertia_mut()[b] = base.body_inertia()[b].map(|i| i * ratio);
        }
        let ipos = base.body_ipos()[layout.torso_body];
        model.body_ipos_mut()[layout.torso_body] =
            std::array::from_fn(|k| ipos[k] + self.com_offset[k]);

        // Friction of the floor and the feet (MuJoCo takes the larger of the two).
        for g in layout.foot_geom.iter().chain([&layout.floor_geom]) {
            model.geom_friction_mut()[*g][0] = self.friction;
        }

        // Servo strength: position gain (and its bias twin) and torque limit.
        for &a in &layout.servo_actuator {
            let (gain, bias, range) = (
                base.actuator_gainprm()[a],
                base.actuator_biasprm()[a],
                base.actuator_forcerange()[a],
            );
            // SAFETY: only parameter values change, never sizes or addresses.
            unsafe {
                model.actuator_gainprm_mut()[a][0] = gain[0] * self.servo_strength;
            }
            model.actuator_biasprm_mut()[a][1] = bias[1] * self.servo_strength;
            model.actuator_forcerange_mut()[a] = range.map(|f| f * self.servo_strength);
        }
    }
}
