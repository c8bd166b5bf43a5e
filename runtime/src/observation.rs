//! The network's input, built from raw sensor values with nothing but the bundle's manifest:
//! the onboard frame (`clawrl_robot`, the function the simulator calls), rounded to f32 as the
//! simulator rounds it, stacked with the past frames (`clawrl_robot::History`), then
//! normalised and clipped with the bundle's statistics, in f64 as the policy crate does.
//! `hil-tests/tests/runtime_parity.rs` checks the result against the simulator's bit for bit.
//!
//! Every buffer is allocated once in [`ObservationBuilder::from_manifest`]; [`build`] only
//! writes into them.
//!
//! [`build`]: ObservationBuilder::build
use clawrl_bundle::Manifest;
use clawrl_robot::observation::{Offsets, offsets};
use clawrl_robot::{History, OnboardLayout, OnboardSensors};

/// The most servos one board drives (the controller's `MAX_SERVOS`).
const MAX_SERVOS: usize = clawrl_protocol::units::ids::SERVO_COUNT;

/// Length of the longest onboard frame, a robot of the board's most servos (the claw-foot
/// quadruped's): a robot of fewer servos fills the first [`ObservationBuilder::dim`] entries.
pub const FRAME_DIM: usize = offsets::DIM;

#[derive(Debug, Clone)]
pub struct ObservationBuilder {
    layout: OnboardLayout,
    history: History,
    mean: Vec<f64>,
    /// `1 / sqrt(var + epsilon)`, per stacked entry.
    scale: Vec<f64>,
    clip: f32,
    /// This robot's frame, before rounding to f32.
    values: Vec<f64>,
    frame: [f32; FRAME_DIM],
    normalised: Vec<f32>,
    /// True until the first frame of an episode: it fills the whole history.
    new_episode: bool,
}

impl ObservationBuilder {
    /// Refuses a manifest whose layout is not a legged robot's onboard frame of at most the
    /// board's servos, or whose normaliser does not cover the stacked vector.
    pub fn from_manifest(m: &Manifest) -> Result<Self, String> {
        let o = &m.observation;
        let servos = o.layout.servo_count();
        let legged = Offsets::for_servos(servos).dim;
        if servos == 0 || servos > MAX_SERVOS || o.layout.dim() != legged {
            return Err(format!(
                "observation.layout has {} entries and {servos} joint offsets; a legged robot's \
                 frame has {legged} for that many servos, and a board drives 1 to {MAX_SERVOS}",
                o.layout.dim(),
            ));
        }
        let n = o.stacked_dim();
        let s = &o.normalizer;
        if s.mean.len() != n || s.var.len() != n {
            return Err(format!(
                "observation.normalizer has {} means and {} variances for {n} stacked values",
                s.mean.len(),
                s.var.len()
            ));
        }
        if s.var.iter().chain(&s.mean).any(|v| !v.is_finite())
            || s.var.iter().any(|v| *v + s.epsilon <= 0.0)
            || s.clip.is_nan()
            || s.clip <= 0.0
        {
            return Err("observation.normalizer holds a non-finite or non-positive value".into());
        }
        Ok(Self {
            layout: o.layout.clone(),
            history: History::new(1, legged, o.history),
            mean: s.mean.clone(),
            // The policy crate's normaliser computes exactly this, in this order.
            scale: s.var.iter().map(|v| 1.0 / (v + s.epsilon).sqrt()).collect(),
            clip: s.clip,
            values: vec![0.0; legged],
            frame: [0.0; FRAME_DIM],
            normalised: vec![0.0; n],
            new_episode: true,
        })
    }

    /// The next frame fills the whole history, as at the start of a simulated episode.
    pub fn restart(&mut self) {
        self.new_episode = true;
    }

    /// Builds the frame for these readings and returns the normalised stacked vector.
    pub fn build(
        &mut self,
        sensors: &OnboardSensors,
        last_action: &[f32],
        command: [f64; 3],
    ) -> &[f32] {
        self.layout
            .quadruped_values(sensors, last_action, command, &mut self.values);
        for (f, v) in self.frame.iter_mut().zip(&self.values) {
            *f = *v as f32;
        }
        let dim = self.values.len();
        self.history.push(&self.frame[..dim], &[self.new_episode]);
        self.new_episode = false;
        let stacked = self.history.as_slice();
        let terms = stacked.iter().zip(&self.mean).zip(&self.scale);
        for (n, ((x, m), s)) in self.normalised.iter_mut().zip(terms) {
            let z = ((f64::from(*x) - m) * s) as f32;
            *n = z.clamp(-self.clip, self.clip);
        }
        &self.normalised
    }

    /// Entries of this robot's frame (the rest of [`ObservationBuilder::frame`] is zero).
    pub fn dim(&self) -> usize {
        self.values.len()
    }

    /// The raw (unnormalised) frame the last [`ObservationBuilder::build`] produced.
    pub fn frame(&self) -> &[f32; FRAME_DIM] {
        &self.frame
    }

    /// The normalised stacked vector the last [`ObservationBuilder::build`] produced.
    pub fn normalised(&self) -> &[f32] {
        &self.normalised
    }

    pub fn stacked_dim(&self) -> usize {
        self.normalised.len()
    }
}
