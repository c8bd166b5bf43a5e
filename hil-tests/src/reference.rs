//! The pure-simulation result a HIL run is measured against: the same bundle, seed, command
//! and events, and the runtime's own controller (stand-up, fade-in, the student, the rate and
//! joint limits) reading the simulator's sensors and setting its servo targets directly: no
//! board, no wire. It runs in the conditions the student trained in: the episode's drawn
//! actuation latency and sensor noise, through the task's model of the board's sensor path.
//! Without them the reference walked 10 % slower than the loop and stood on 2 of the turn's 4
//! seeds, because the loop has latency and its sensors differ from the exact ones
//! (BENCHMARKS.md, "The reference's conditions"). What differs from the HIL run is then the
//! board itself (its servo slew, pulse and sensor quantisation, its IMU filter) and the wire
//! (its real latency, faults), which is the sim-to-HIL gap. Also: the walking figures both
//! are reduced to.
use anyhow::Result;
use clawrl_bundle::Bundle;
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::controller::{Input, Output, Phase};
use clawrl_runtime::run::controller_for;
use clawrl_runtime::wire::BoardState;
use clawrl_sim::Env;
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};
use clawrl_sim::rng::{derive_seed, rng};

use crate::line::Event;

/// The torso at one control step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub t: f64,
    pub base_pos: [f64; 3],
    pub base_lin_vel: [f64; 3],
    pub yaw_rate: f64,
    pub fallen: bool,
}

impl From<&crate::line::Sample> for Pose {
    fn from(s: &crate::line::Sample) -> Self {
        Self {
            t: s.t,
            base_pos: s.base_pos,
            base_lin_vel: s.base_lin_vel,
            yaw_rate: s.yaw_rate,
            fallen: s.fallen,
        }
    }
}

/// The reference's sensor-noise stream, apart from the episode's own draws.
const NOISE_STREAM: u64 = 0x5e45;

/// The operator's part of one control cycle as a driven run logged it: the stop, and the live
/// command (`None`: the config's).
pub type OperatorInput = (bool, Option<[f64; 3]>);

/// `until_s` seconds of the runtime's controller on the simulator from the seed's initial
/// state, with pushes at their (absolute) times, and `operator[k]` as cycle k's stop and
/// command (a driven run's, replayed; empty: none); one pose per control step.
pub fn simulate(
    bundle: &Bundle,
    task: &TaskConfig,
    seed: u64,
    runtime: &RuntimeConfig,
    until_s: f64,
    events: &[(f64, Event)],
    operator: &[OperatorInput],
) -> Result<Vec<Pose>> {
    let mut ctl = controller_for(runtime, bundle)?.controller;
    let mut env = QuadrupedEnv::new(task)?;
    env.reset_in_place(seed);
    // The sensor noise the policy trained with, from a stream of the seed's own.
    let mut noise = rng(derive_seed(seed, NOISE_STREAM));
    let latency = env.params().latency_substeps;
    let decimation = (env.spec().control_dt / env.physics_dt()).round() as usize;
    let mut out = Output::default();
    // Servos without pulses until the controller first sends goals.
    let mut targets: [Option<f64>; NUM_SERVOS] = [None; NUM_SERVOS];
    let mut pending: Vec<(f64, [f64; 2])> = events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Push(dv) => Some((*t, *dv)),
            _ => None,
        })
        .collect();
    let mut poses = Vec::new();
    let mut tick = 0u32;
    while env.telemetry().time < until_s {
        let t = env.telemetry().time;
        let state = BoardState {
            // As the student was trained: through the board's sensor path when the task has it.
            sensors: env.with_sensor_noise(env.sensors_as_read(), &mut noise),
            current_ma: [0; NUM_SERVOS],
            tick,
            uptime_us: (t * 1e6) as u32,
            alert: false,
        };
        let (stop, command) = operator
            .get(tick as usize / decimation)
            .copied()
            .unwrap_or((false, None));
        ctl.step(
            &Input {
                state: Some(state),
                stop,
                command,
                estop: false,
            },
            &mut out,
        );
        let before = targets;
        match (out.goals, out.phase) {
            (Some(g), _) => targets = g.map(Some),
            // The board damps or lets go once the runtime has stopped commanding it.
            (None, Phase::EStop | Phase::Off | Phase::TorqueOff) => targets = [None; NUM_SERVOS],
            (None, _) => {}
        }
        // New targets reach the servos after the episode's latency, as in training.
        // A robot of fewer servos than the board's maximum uses the first `n`.
        let n = env.robot().layout.servo_count();
        for k in 0..decimation {
            env.step_servos(if k < latency {
                &before[..n]
            } else {
                &targets[..n]
            });
        }
        tick = tick.wrapping_add(decimation as u32);
        let now = env.telemetry().time;
        pending.retain(|&(at, dv)| {
            let due = at <= now;
            if due {
                env.push_base(dv);
            }
            !due
        });
        let tel = env.telemetry();
        poses.push(Pose {
            t: tel.time,
            base_pos: tel.base_pos,
            base_lin_vel: tel.base_lin_vel,
            yaw_rate: tel.yaw_rate,
            fallen: env.has_fallen(),
        });
    }
    Ok(poses)
}

/// Walking figures over a stretch of poses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Walk {
    pub seconds: f64,
    /// Straight-line distance the torso covered on the ground, m.
    pub distance: f64,
    /// Mean torso velocity in its own frame (forward, lateral), m/s.
    pub velocity: [f64; 2],
    /// Mean |v - command| on the ground plane, m/s.
    pub velocity_error: f64,
    pub yaw_rate: f64,
    pub yaw_rate_error: f64,
    pub fell: bool,
}

impl Walk {
    /// Over the poses in `[from, from + seconds)`.
    pub fn of(poses: &[Pose], from: f64, seconds: f64, command: [f64; 3]) -> Option<Self> {
        let part: Vec<&Pose> = poses
            .iter()
            .filter(|p| p.t >= from && p.t < from + seconds)
            .collect();
        let (first, last) = (part.first()?, part.last()?);
        let n = part.len() as f64;
        let mean = |f: &dyn Fn(&Pose) -> f64| part.iter().map(|p| f(p)).sum::<f64>() / n;
        let dx = last.base_pos[0] - first.base_pos[0];
        let dy = last.base_pos[1] - first.base_pos[1];
        Some(Self {
            seconds: last.t - first.t,
            distance: dx.hypot(dy),
            velocity: [mean(&|p| p.base_lin_vel[0]), mean(&|p| p.base_lin_vel[1])],
            velocity_error: mean(&|p| {
                (p.base_lin_vel[0] - command[0]).hypot(p.base_lin_vel[1] - command[1])
            }),
            yaw_rate: mean(&|p| p.yaw_rate),
            yaw_rate_error: mean(&|p| (p.yaw_rate - command[2]).abs()),
            fell: part.iter().any(|p| p.fallen),
        })
    }
}

/// |a - b| / |b|, the gap of a HIL figure to its pure-simulation one.
pub fn relative_gap(hil: f64, sim: f64) -> f64 {
    (hil - sim).abs() / sim.abs().max(1e-9)
}
