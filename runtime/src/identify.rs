//! `clawrl-runtime identify`: with the robot on a stand, legs free, the excitation of
//! [`clawrl_robot::excitation`] played through the normal loop: the same safety machine
//! (stand-up, fade, joint and speed limits, the stop at any moment), link and telemetry as
//! `run`, the student replaced by the plan. The telemetry log is what `clawrl sysid` fits.
use std::cell::Cell;

use anyhow::Result;
use clawrl_bundle::Bundle;
use clawrl_robot::excitation::{ExcitationSpec, ExcitedServo, Plan, group_by_joint};

use crate::config::RuntimeConfig;
use crate::controller::Act;
use crate::inference::InferenceError;
use crate::run::ControlLoop;

/// The plan as a policy: each call is the next cycle's goals, written as the action that the
/// action map turns back into them (`goal = default + scale x action`).
pub struct Excitation {
    plan: Plan,
    default: Vec<f64>,
    scale: Vec<f64>,
    cycle: Cell<usize>,
}

impl Act for Excitation {
    fn act(&self, _obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
        let k = self.cycle.get();
        self.cycle.set(k + 1);
        let goal = self.plan.goal(k);
        for (i, a) in out.iter_mut().enumerate() {
            *a = ((goal[i] - self.default[i]) / self.scale[i]) as f32;
        }
        Ok(())
    }
}

/// The plan for the robot the bundle describes: its servos grouped by joint, centred on the
/// default pose, inside the runtime's joint limits, at 80 % of its speed limit (at most the
/// excitation's own 4 rad/s).
pub fn plan(
    cfg: &RuntimeConfig,
    bundle: &Bundle,
) -> Result<(Plan, Vec<ExcitedServo>, Vec<String>)> {
    let map = bundle
        .manifest
        .action
        .map
        .clone()
        .ok_or_else(|| anyhow::anyhow!("bundle {}: no action map", bundle.path.display()))?;
    let safety = cfg
        .safety(Some(&bundle.manifest))
        .map_err(|e| anyhow::anyhow!("bundle {}: {e}", bundle.path.display()))?;
    let (groups, of_servo) = group_by_joint(&map.joint_names);
    let servos: Vec<ExcitedServo> = (0..map.len())
        .map(|i| ExcitedServo {
            name: map.joint_names[i].clone(),
            group: of_servo[i],
            default: map.default_pose[i],
            limits: safety.joint_limits[i],
        })
        .collect();
    let spec = ExcitationSpec {
        max_speed: ExcitationSpec::default()
            .max_speed
            .min(0.8 * safety.max_joint_speed),
        ..ExcitationSpec::default()
    };
    Ok((
        Plan::new(&servos, cfg.control.rate_hz, &spec),
        servos,
        groups,
    ))
}

/// What the plan will move and for how long: printed before anything moves.
pub fn describe(plan: &Plan, servos: &[ExcitedServo], groups: &[String]) -> String {
    let mut s = format!(
        "identify: {:.0} s of excitation after the stand-up, every group at once (chirp, steps, \
         PRBS); the robot must be on a stand with its legs free\n",
        plan.seconds()
    );
    for (g, name) in groups.iter().enumerate() {
        let members: Vec<usize> = (0..servos.len())
            .filter(|&i| servos[i].group == g)
            .collect();
        let (lo, hi) = members.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &i| {
            plan.goals.iter().fold((lo, hi), |(lo, hi), goal| {
                (lo.min(goal[i]), hi.max(goal[i]))
            })
        });
        let names: Vec<&str> = members.iter().map(|&i| servos[i].name.as_str()).collect();
        s += &format!(
            "  {name:<10} {} servos ({}): goals {lo:+.2} to {hi:+.2} rad\n",
            members.len(),
            names.join(", ")
        );
    }
    s
}

/// The control loop that plays `plan` on the bundle's robot.
pub fn controller(
    cfg: &RuntimeConfig,
    bundle: &Bundle,
    plan: Plan,
) -> Result<ControlLoop<Excitation>> {
    crate::run::controller_with(cfg, bundle, |map| {
        Ok(Excitation {
            plan,
            default: map.default_pose.clone(),
            scale: map.scale.clone(),
            cycle: Cell::new(0),
        })
    })
}

/// What an identify run's telemetry log holds for a fit, cycle by cycle from the first cycle
/// the plan ran (the fade-in) to the last while it ran: the goals sent and the angles read.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurements {
    /// Servos of the robot that logged it.
    pub servos: usize,
    pub rate_hz: f64,
    /// Per cycle, the goals sent (rad, from the ticks that went on the wire), `None` when the
    /// cycle sent none.
    pub goals: Vec<Option<Vec<f64>>>,
    /// Per cycle, the newest angles read (rad); a cycle without a new reading repeats the last.
    pub measured: Vec<Vec<f64>>,
    /// The largest body rate the IMU read while the plan played (rad/s, the gyro's norm): a
    /// robot on a stand reads next to none; a walking one, a log not of `identify`, much more.
    pub max_body_rate: f64,
}

/// Above this body rate (rad/s) a log was not made on a stand: the fit, which holds the torso
/// still, would explain the body's motion with the servos' parameters.
pub const STAND_BODY_RATE: f64 = 0.3;

impl Measurements {
    /// An error naming the log when the body moved more than a stand allows.
    pub fn check_on_stand(&self, log: &std::path::Path) -> Result<()> {
        if self.max_body_rate > STAND_BODY_RATE {
            anyhow::bail!(
                "{}: the body turned at up to {:.2} rad/s while the servos moved (a stand holds \
                 it under {STAND_BODY_RATE}): not a log of `clawrl-runtime identify` with the \
                 robot on a stand",
                log.display(),
                self.max_body_rate
            );
        }
        Ok(())
    }
}

/// Reads `log` (a telemetry log of `clawrl-runtime identify`).
pub fn measurements(log: &std::path::Path) -> Result<Measurements> {
    let mut reader = crate::telemetry::LogReader::open(log).map_err(anyhow::Error::msg)?;
    let n = reader.header.safety.poses.count;
    let rate_hz = reader.header.safety.rate_hz;
    let mut m = Measurements {
        servos: n,
        rate_hz,
        goals: Vec::new(),
        measured: Vec::new(),
        max_body_rate: 0.0,
    };
    let mut last: Option<Vec<f64>> = None;
    while let Some(r) = reader
        .next_record()
        .map_err(|e| anyhow::anyhow!("telemetry log {}: {e}", log.display()))?
    {
        if let Some(s) = &r.input.state {
            last = Some(s.sensors.joint_pos[..n].to_vec());
        }
        let playing = r.output.policy_ran
            && matches!(
                r.output.phase,
                crate::controller::Phase::FadeIn | crate::controller::Phase::Running
            );
        if !playing {
            if m.goals.is_empty() {
                continue;
            }
            break;
        }
        let Some(measured) = last.clone() else {
            continue;
        };
        if let Some(st) = &r.input.state {
            let g = st.sensors.gyro;
            let rate = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
            m.max_body_rate = m.max_body_rate.max(rate);
        }
        // The goals as they went on the wire: in whole ticks.
        let sent = |_| {
            (r.ticks[..n].iter())
                .map(|&t| f64::from(clawrl_protocol::units::ticks_to_rad(t)))
                .collect()
        };
        m.goals.push(r.output.goals.map(sent));
        m.measured.push(measured);
    }
    Ok(m)
}
