//! A bundle's robot description against the robot's own file: the first difference, named by
//! servo. The MJCF's numbers (ranges, keyframes) are covered by the MJCF hash the bundle also
//! carries; this compares what the description file holds.
use super::{DescriptionFile, RobotDescription, Servo, ServoSpec};

/// The first way `bundle` (what the policy was trained on) differs from `robot` (this robot's
/// description file), in words that name the servo; `None` when they agree.
pub fn first_difference(bundle: &RobotDescription, robot: &DescriptionFile) -> Option<String> {
    if bundle.name != robot.robot.name {
        return Some(format!(
            "the bundle is for robot {:?}, this robot is {:?}",
            bundle.name, robot.robot.name
        ));
    }
    if let Some(d) = servo_set_difference(bundle, robot) {
        return Some(d);
    }
    if let Some(d) = order_difference(bundle, robot) {
        return Some(d);
    }
    for s in &robot.servo {
        let b = bundle.servo(&s.name).expect("same servo names");
        if let Some(d) = servo_difference(b, s) {
            return Some(format!("servo {}: {d}", s.name));
        }
    }
    for (kind, scale) in &robot.action_scale {
        match bundle.action_scale.get(kind) {
            Some(b) if b == scale => {}
            Some(b) => {
                return Some(format!(
                    "action_scale.{} is {b} in the bundle, {scale} on this robot",
                    kind.as_str()
                ));
            }
            None => {
                return Some(format!(
                    "action_scale.{} is missing in the bundle, {scale} on this robot",
                    kind.as_str()
                ));
            }
        }
    }
    if bundle.imu.mount_rpy_deg != robot.imu.mount_rpy_deg {
        return Some(format!(
            "the IMU is mounted at roll/pitch/yaw {:?} deg in the bundle, {:?} on this robot",
            bundle.imu.mount_rpy_deg, robot.imu.mount_rpy_deg
        ));
    }
    None
}

/// A servo one side has and the other has not (a robot without claws, a renamed joint).
fn servo_set_difference(bundle: &RobotDescription, robot: &DescriptionFile) -> Option<String> {
    if let Some(b) = bundle
        .servos
        .iter()
        .find(|b| !robot.servo.iter().any(|s| s.name == b.name))
    {
        return Some(format!(
            "the bundle drives servo {}, which this robot does not have",
            b.name
        ));
    }
    robot
        .servo
        .iter()
        .find(|s| bundle.servo(&s.name).is_none())
        .map(|s| {
            format!(
                "this robot has servo {}, which the bundle does not drive",
                s.name
            )
        })
}

/// The same servos in another order: the policy's action i would move another joint.
fn order_difference(bundle: &RobotDescription, robot: &DescriptionFile) -> Option<String> {
    let i = bundle
        .servos
        .iter()
        .zip(&robot.servo)
        .position(|(b, s)| b.name != s.name)?;
    let here = &robot.servo[i].name;
    let j = bundle.servos.iter().position(|b| &b.name == here)?;
    let (a, b) = (&bundle.servos[i].name, here);
    if robot.servo.get(j).map(|s| &s.name) == Some(a) {
        Some(format!(
            "servos {a} and {b} are swapped: the bundle's action {i} is {a}, this robot's is {b}"
        ))
    } else {
        Some(format!(
            "the servo order differs from action {i}: the bundle's is {a}, this robot's is {b}"
        ))
    }
}

fn servo_difference(b: &Servo, s: &ServoSpec) -> Option<String> {
    if b.id != s.id {
        return Some(format!(
            "bus ID {} in the bundle, {} on this robot",
            b.id, s.id
        ));
    }
    if b.direction != s.direction {
        return Some(format!(
            "direction {:+} in the bundle, {:+} on this robot (a servo mounted the other way)",
            b.direction, s.direction
        ));
    }
    if b.offset_rad != s.offset_rad {
        return Some(format!(
            "zero offset {} rad in the bundle, {} rad on this robot",
            b.offset_rad, s.offset_rad
        ));
    }
    if b.joint != s.joint || b.kind != s.kind {
        return Some(format!(
            "joint `{}` ({}) in the bundle, `{}` ({}) on this robot",
            b.joint,
            b.kind.as_str(),
            s.joint,
            s.kind.as_str()
        ));
    }
    if let Some(l) = s.limits
        && l != b.limits
    {
        return Some(format!(
            "limits [{}, {}] in the bundle, [{}, {}] on this robot",
            b.limits[0], b.limits[1], l[0], l[1]
        ));
    }
    if let Some(r) = s.rest
        && r != b.rest
    {
        return Some(format!("rest {} in the bundle, {r} on this robot", b.rest));
    }
    if b.model != s.model || b.pwm != s.pwm {
        return Some(format!(
            "servo model {} {:?} in the bundle, {} {:?} on this robot",
            b.model, b.pwm, s.model, s.pwm
        ));
    }
    None
}
