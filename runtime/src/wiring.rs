//! Is the robot wired as its description says? What each servo reads, by name and bus ID,
//! against what it must read: inside its limits always (`run` checks that before the torque
//! goes on), and near the angle of a known pose (`clawrl-runtime check-wiring`): lying folded
//! as `run` leaves it (the resting pose), or held in its standing pose.
//!
//! A servo's own feedback cannot tell, while it follows its goal, that it sits on another
//! joint's channel or turns the other way: it reads back what it was told. Where the mistake
//! shows is the pose the robot lies in. A knee servo mounted reversed reads +2.4 rad where the
//! folded knee is at -2.4 (the board reads `-angle - 2 x offset`); a hip servo on a knee's
//! channel reads the knee's angle, and the knee's servo the hip's. Joints that rest at 0 (hip
//! abduction, claws) and pairs that rest at the same angle (the left and right knees) look the
//! same either way: telling those apart needs a motion the IMU sees, not built yet (issue 41).
use std::fmt::Write as _;

use anyhow::Context;
#[cfg(test)]
use clawrl_robot::quadruped;

use crate::config::RuntimeConfig;
use crate::controller::{MAX_SERVOS, SafetyConfig};
use crate::link::Link;

/// How far from the pose's angle a servo may read and still fit (rad): legs settle a few
/// degrees off the keyframe under the robot's weight (0.1 rad measured in HIL).
pub const POSE_TOLERANCE: f64 = 0.3;

/// The pose the robot is in while it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pose {
    /// Lying folded, as `run` leaves it (the MJCF's `rest` keyframe).
    Rest,
    /// Standing, or held, in the default pose (the `stand` keyframe).
    Stand,
}

impl Pose {
    fn angles(self, safety: &SafetyConfig) -> [f64; MAX_SERVOS] {
        match self {
            Pose::Rest => safety.poses.rest,
            Pose::Stand => safety.poses.stand,
        }
    }
}

/// How far outside its limits a servo may read before `run` refuses to start (rad): the
/// board's own implausible-feedback margin.
pub const LIMIT_MARGIN: f64 = 0.5;

/// One servo as the check sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Servo {
    pub name: String,
    pub id: u8,
    pub limits: [f64; 2],
    /// Its angle in the pose the robot is checked in.
    pub expect: f64,
    /// The description's zero offset (rad); 0 without a description.
    pub offset: f64,
}

/// What one servo's reading says about its wiring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Finding {
    /// Near its angle in the pose.
    Fits,
    /// Where its angle would read with the servo turning the other way.
    Reversed,
    /// Reads servo `j`'s angle while servo `j` reads this one's: the two are on each other's
    /// channels (or IDs).
    SwappedWith(usize),
    /// Outside its limits, and none of the above.
    Outside,
    /// Inside its limits but away from the pose: an offset, or the robot not in the pose.
    AwayFromPose,
}

impl Finding {
    pub fn fits(self) -> bool {
        self == Finding::Fits
    }
}

/// The robot's servos in action order: names, the description's IDs and offsets, and from
/// `safety` (the robot's, [`RuntimeConfig::safety`]) their limits and angles in `pose`.
pub fn servos(cfg: &RuntimeConfig, safety: &SafetyConfig, pose: Pose) -> Vec<Servo> {
    let names = cfg.servo_names();
    let ids = cfg.servo_ids();
    let limits = safety.joint_limits;
    let offset = |name: &str| {
        cfg.robot
            .description_file
            .as_ref()
            .and_then(|d| d.servo.iter().find(|s| s.name == name))
            .map_or(0.0, |s| s.offset_rad)
    };
    let angles = pose.angles(safety);
    (0..names.len())
        .map(|i| Servo {
            offset: offset(&names[i]),
            name: names[i].clone(),
            id: ids[i],
            limits: limits[i],
            expect: angles[i],
        })
        .collect()
}

/// Each servo's finding for a robot that should be in the pose of `servos`' `expect`.
pub fn against_pose(servos: &[Servo], read: &[f64]) -> Vec<Finding> {
    let near = |a: f64, b: f64| (a - b).abs() <= POSE_TOLERANCE;
    (0..servos.len())
        .map(|i| {
            let s = &servos[i];
            if near(read[i], s.expect) {
                return Finding::Fits;
            }
            let swapped = (0..servos.len())
                .find(|&j| j != i && near(read[i], servos[j].expect) && near(read[j], s.expect));
            if let Some(j) = swapped {
                return Finding::SwappedWith(j);
            }
            if near(read[i], -s.expect - 2.0 * s.offset) {
                return Finding::Reversed;
            }
            if outside(s, read[i], 0.0) {
                Finding::Outside
            } else {
                Finding::AwayFromPose
            }
        })
        .collect()
}

fn outside(s: &Servo, read: f64, margin: f64) -> bool {
    !(read >= s.limits[0] - margin && read <= s.limits[1] + margin)
}

/// Why the torque must not go on: the first servo that reads beyond its limits (by more than
/// [`LIMIT_MARGIN`]), named, with what it most likely means.
pub fn refuse_outside_limits(servos: &[Servo], read: &[f64]) -> Option<String> {
    let i = (0..servos.len()).find(|&i| outside(&servos[i], read[i], LIMIT_MARGIN))?;
    let s = &servos[i];
    let mirrored = -read[i] - 2.0 * s.offset;
    let hint = if !outside(s, mirrored, 0.0) {
        "mounted the other way round from its description's `direction`, or another joint's servo on its channel"
    } else {
        "another joint's servo on its channel or ID, or a wrong `offset_rad`"
    };
    Some(format!(
        "servo {} (ID {}) reads {:+.2} rad, outside its limits [{:.2}, {:.2}]: {hint}? \
         The torque stays off; `clawrl-runtime check-wiring` names the wiring",
        s.name, s.id, read[i], s.limits[0], s.limits[1]
    ))
}

/// The check's table: one row per servo, in bus-ID order (the order to look along the
/// cable), and the verdict.
pub fn report(servos: &[Servo], read: &[f64], findings: &[Finding]) -> String {
    let mut order: Vec<usize> = (0..servos.len()).collect();
    order.sort_by_key(|&i| servos[i].id);
    let mut t = String::from(
        "| bus ID | servo | reads (rad) | pose (rad) | wiring |\n|---|---|---|---|---|\n",
    );
    for i in order {
        let s = &servos[i];
        let what = match findings[i] {
            Finding::Fits => "ok".to_string(),
            Finding::Reversed => "**reversed**: turns the other way from its `direction`".into(),
            Finding::SwappedWith(j) => format!(
                "**swapped with {} (ID {})**: each reads the other's angle",
                servos[j].name, servos[j].id
            ),
            Finding::Outside => format!(
                "**outside its limits [{:.2}, {:.2}]**: another joint's servo, or its offset",
                s.limits[0], s.limits[1]
            ),
            Finding::AwayFromPose => {
                "**away from the pose**: its `offset_rad`, or the robot not in the pose".into()
            }
        };
        let _ = writeln!(
            t,
            "| {} | {} | {:+.3} | {:+.3} | {what} |",
            s.id, s.name, read[i], s.expect
        );
    }
    let bad = findings.iter().filter(|f| !f.fits()).count();
    let away = findings
        .iter()
        .filter(|f| **f == Finding::AwayFromPose)
        .count();
    if bad > 0 && bad == away {
        let _ = write!(
            t,
            "wiring: {away} servo(s) away from the pose and none miswired by its reading: put the \
             robot in the pose (--pose rest: lying folded; stand: in its default pose), or check \
             their `offset_rad`"
        );
    } else if bad == 0 {
        let _ = write!(
            t,
            "wiring: every servo answers at its ID and reads its angle in the pose ({} servos; \
             joints at 0 in the pose and mirrored pairs cannot be told apart this way)",
            servos.len()
        );
    } else {
        let _ = write!(t, "wiring: {bad} servo(s) not as described");
    }
    t
}

/// The check on a connected board (`crate::run::check_wiring` connects as `run` does: every
/// servo of the description PINGed at its ID, a silent one named, torque off): each servo's
/// position read at its own ID, and each against its angle in the pose of `servos`. Returns
/// the report and whether every servo fits. Nothing moves.
pub fn check(link: &mut Link, servos: &[Servo]) -> anyhow::Result<(String, bool)> {
    let read = link
        .read_servo_positions()
        .context("reading the servos' positions")?;
    let findings = against_pose(servos, &read);
    let ok = findings.iter().all(|f| f.fits());
    Ok((report(servos, &read, &findings), ok))
}

/// A servo that did not answer its PING at start-up, by name.
pub fn silent_servo(servos: &[Servo], id: u8) -> Option<String> {
    let s = servos.iter().find(|s| s.id == id)?;
    Some(format!(
        "servo {} (ID {id}) does not answer: its cable, its power, or an `id` in the \
         description that is not the one set in the servo",
        s.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn robot() -> Vec<Servo> {
        quadruped::servo_names()
            .into_iter()
            .enumerate()
            .map(|(i, name)| Servo {
                name,
                id: i as u8 + 1,
                limits: quadruped::JOINT_LIMITS[i],
                expect: quadruped::REST_POSE[i],
                offset: 0.0,
            })
            .collect()
    }

    #[test]
    fn a_robot_at_rest_fits() {
        let s = robot();
        let read: Vec<f64> = s.iter().map(|s| s.expect + 0.05).collect();
        assert!(against_pose(&s, &read).iter().all(|f| f.fits()));
        assert!(refuse_outside_limits(&s, &read).is_none());
    }

    #[test]
    fn a_reversed_knee_and_a_swapped_hip_and_knee_are_named() {
        let s = robot();
        let mut read: Vec<f64> = s.iter().map(|s| s.expect).collect();
        read[2] = -read[2]; // FL_knee reversed
        read.swap(4, 5); // FR_hip_pitch and FR_knee on each other's channels
        let f = against_pose(&s, &read);
        assert_eq!(f[2], Finding::Reversed);
        assert_eq!(f[4], Finding::SwappedWith(5));
        assert_eq!(f[5], Finding::SwappedWith(4));
        assert_eq!(f.iter().filter(|f| !f.fits()).count(), 3);
        let text = report(&s, &read, &f);
        assert!(text.contains("| 3 | FL_knee | +2.400"), "{text}");
        assert!(text.contains("swapped with FR_knee (ID 6)"), "{text}");
        let refused = refuse_outside_limits(&s, &read).unwrap();
        assert!(
            refused.starts_with("servo FL_knee (ID 3) reads +2.40 rad"),
            "{refused}"
        );
        assert!(refused.contains("mounted the other way round"), "{refused}");
    }

    #[test]
    fn an_offset_reversed_servo_reads_minus_angle_minus_twice_the_offset() {
        let mut s = robot();
        s[1].offset = 0.1;
        let mut read: Vec<f64> = s.iter().map(|s| s.expect).collect();
        read[1] = -1.4 - 0.2;
        assert_eq!(against_pose(&s, &read)[1], Finding::Reversed);
    }
}
