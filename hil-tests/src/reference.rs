//! The pure-simulation result a HIL run is measured against: the same bundle, seed and
//! command in the simulator alone (the runtime's own observation builder and student, no
//! board, no wire, no stand-up), and the walking figures both are reduced to.
use anyhow::{Context, Result};
use clawrl_bundle::Bundle;
use clawrl_runtime::inference::Student;
use clawrl_runtime::observation::ObservationBuilder;
use clawrl_sim::Env;
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};

/// The torso at one control step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub t: f64,
    pub base_pos: [f64; 3],
    pub base_lin_vel: [f64; 3],
    pub yaw_rate: f64,
    pub fallen: bool,
}

impl From<&crate::bridge::Sample> for Pose {
    fn from(s: &crate::bridge::Sample) -> Self {
        Self {
            t: s.t,
            base_pos: s.base_pos,
            base_lin_vel: s.base_lin_vel,
            yaw_rate: s.yaw_rate,
            fallen: s.fallen,
        }
    }
}

/// `seconds` of the bundle's policy in the simulator from the seed's initial state.
pub fn simulate(
    bundle: &Bundle,
    task: &TaskConfig,
    seed: u64,
    command: [f64; 3],
    seconds: f64,
) -> Result<Vec<Pose>> {
    let student = Student::from_bundle(bundle)?;
    let mut obs = ObservationBuilder::from_manifest(&bundle.manifest)
        .map_err(|e| anyhow::anyhow!("bundle {}: {e}", bundle.path.display()))?;
    let mut env = QuadrupedEnv::new(task)?;
    env.reset_in_place(seed);
    let c = command.map(|v| v as f32);
    env.set_command(&c)?;
    let steps = (seconds / env.spec().control_dt).round() as usize;
    let mut action = [0.0f32; NUM_SERVOS];
    let mut poses = Vec::with_capacity(steps);
    for _ in 0..steps {
        let x = obs.build(&env.onboard_sensors(), &env.last_action(), command);
        student.act(x, &mut action).context("the student")?;
        let (_, terminated, _) = env.step_in_place(&action)?;
        let tel = env.telemetry();
        poses.push(Pose {
            t: tel.time,
            base_pos: tel.base_pos,
            base_lin_vel: tel.base_lin_vel,
            yaw_rate: tel.yaw_rate,
            fallen: terminated,
        });
        if terminated {
            break;
        }
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
