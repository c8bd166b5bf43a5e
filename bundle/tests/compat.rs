//! `check_fits`: every way a valid quadruped manifest can fail to fit the quadruped, each named
//! by its own error, and the ways it may differ and still fit (narrower limits, an uppercase
//! hash, a smaller action scale).
mod common;

use clawrl_bundle::*;
use clawrl_robot::description::{DescriptionFile, RobotDescription};
use clawrl_robot::{OnboardLayout, quadruped};
use common::*;

/// The quadruped as a robot declares it (the runtime builds this from its config).
fn robot() -> RobotSpec {
    RobotSpec {
        model: quadruped::MODEL_NAME.into(),
        mjcf_sha256: QUADRUPED_MJCF.into(),
        joint_names: quadruped::servo_names(),
        joint_limits: quadruped::JOINT_LIMITS.to_vec(),
        default_pose: quadruped::DEFAULT_POSE.to_vec(),
        layout: OnboardLayout::quadruped(),
        control_rate_hz: 50.0,
        max_action_scale: 1.0,
        max_joint_speed: 6.0,
        network_kinds: vec!["mlp".into(), "gaussian_mlp".into()],
        description: Some(shipped_description().0),
    }
}

/// The shipped robot's description file, and its resolution as a bundle would carry it (the
/// MJCF's numbers filled in from the robot constants, which equal them: see
/// hil-tests/tests/robot_description.rs).
fn shipped_description() -> (DescriptionFile, RobotDescription) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../robots/claw_quadruped/robot.toml");
    let (file, _) = DescriptionFile::load(&path).unwrap();
    let servos = file
        .servo
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (stand, rest) = (quadruped::DEFAULT_POSE[i], quadruped::REST_POSE[i]);
            s.resolved(quadruped::JOINT_LIMITS[i], stand, rest)
        })
        .collect();
    let resolved = file.with_servos(servos);
    (file, resolved)
}

#[test]
fn a_bundle_with_a_description_is_checked_servo_by_servo() {
    let (_, resolved) = shipped_description();
    let with = |edit: fn(&mut RobotDescription)| {
        fits(|m| {
            let mut d = resolved.clone();
            edit(&mut d);
            m.robot.description = Some(d);
        })
    };
    with(|_| {}).unwrap();
    let reversed = with(|d| d.servos[4].direction = -1)
        .unwrap_err()
        .to_string();
    assert!(
        reversed.starts_with(
            "robot.description: servo FR_hip_pitch: direction -1 in the bundle, +1 on this robot"
        ),
        "{reversed}"
    );
    let swapped = with(|d| d.servos.swap(2, 5)).unwrap_err().to_string();
    assert!(
        swapped.contains("servos FR_knee and FL_knee are swapped"),
        "{swapped}"
    );
    let id = with(|d| d.servos[0].id = 40).unwrap_err().to_string();
    assert!(
        id.contains("servo FL_hip_abd: bus ID 40 in the bundle, 1 on this robot"),
        "{id}"
    );
    let no_claw = with(|d| d.servos.truncate(12)).unwrap_err().to_string();
    assert!(
        no_claw.contains("this robot has servo FL_claw, which the bundle does not drive"),
        "{no_claw}"
    );
    // A robot without a description file checks by names, limits and pose only.
    let (mut m, _) = quadruped();
    let mut d = resolved.clone();
    d.servos[4].direction = -1;
    m.robot.description = Some(d);
    let bare = RobotSpec {
        description: None,
        ..robot()
    };
    check_fits(&m, &bare).unwrap();
}

fn fits(edit: impl FnOnce(&mut Manifest)) -> Result<(), Incompatible> {
    let (mut m, _) = quadruped();
    edit(&mut m);
    check_fits(&m, &robot())
}

/// A change to a manifest.
type Edit = Box<dyn Fn(&mut Manifest)>;

fn map(m: &mut Manifest) -> &mut clawrl_robot::ActionMap {
    m.action.map.as_mut().unwrap()
}

#[test]
fn a_bundle_made_for_the_robot_fits_and_may_be_stricter() {
    fits(|_| {}).unwrap();
    fits(|m| m.robot.mjcf_sha256 = QUADRUPED_MJCF.to_uppercase()).unwrap();
    fits(|m| map(m).joint_limits[2] = [-2.0, -1.0]).unwrap();
    fits(|m| map(m).scale[0] = -1.0).unwrap();
}

#[test]
fn each_difference_is_refused_with_its_own_error_naming_both_sides() {
    let zeros = "0".repeat(64);
    let cases: Vec<(Edit, Incompatible)> = vec![
        (
            Box::new(|m| m.robot.model = "biped".into()),
            Incompatible::Model {
                bundle: "biped".into(),
                robot: "claw_quadruped".into(),
            },
        ),
        (
            Box::new(move |m| m.robot.mjcf_sha256 = "0".repeat(64)),
            Incompatible::MjcfHash {
                bundle: zeros,
                robot: QUADRUPED_MJCF.into(),
            },
        ),
        (
            Box::new(|m| {
                m.action.names.swap(0, 1);
                map(m).joint_names.swap(0, 1);
            }),
            Incompatible::JointName {
                index: 0,
                bundle: "FL_hip_pitch".into(),
                robot: "FL_hip_abd".into(),
            },
        ),
        (
            // The map's names alone out of order (a bundle `read` refuses, checked anyway).
            Box::new(|m| map(m).joint_names.swap(3, 4)),
            Incompatible::JointName {
                index: 3,
                bundle: "FR_hip_pitch".into(),
                robot: "FR_hip_abd".into(),
            },
        ),
        (
            Box::new(|m| m.action.names.pop().map(drop).unwrap()),
            Incompatible::JointCount {
                bundle: 15,
                robot: 16,
            },
        ),
        (
            Box::new(|m| map(m).joint_limits[2] = [-3.0, -0.6]),
            Incompatible::JointLimits {
                index: 2,
                joint: "FL_knee".into(),
                bundle: [-3.0, -0.6],
                robot: quadruped::JOINT_LIMITS[2],
            },
        ),
        (
            Box::new(|m| map(m).joint_limits[12] = [0.0, 1.3]),
            Incompatible::JointLimits {
                index: 12,
                joint: "FL_claw".into(),
                bundle: [0.0, 1.3],
                robot: quadruped::JOINT_LIMITS[12],
            },
        ),
        (
            Box::new(|m| map(m).default_pose[1] = 0.9),
            Incompatible::DefaultPose {
                index: 1,
                joint: "FL_hip_pitch".into(),
                bundle: 0.9,
                robot: quadruped::DEFAULT_POSE[1],
            },
        ),
        (
            Box::new(|m| map(m).scale[5] = 100.0),
            Incompatible::ActionScale {
                index: 5,
                joint: "FR_knee".into(),
                scale: 100.0,
                max: 1.0,
            },
        ),
        (
            Box::new(|m| map(m).scale[0] = -1.5),
            Incompatible::ActionScale {
                index: 0,
                joint: "FL_hip_abd".into(),
                scale: -1.5,
                max: 1.0,
            },
        ),
        (
            Box::new(|m| m.control_rate_hz = 100.0),
            Incompatible::ControlRate {
                bundle: 100.0,
                robot: 50.0,
            },
        ),
        (
            Box::new(|m| m.network.kind = "transformer".into()),
            Incompatible::NetworkKind {
                kind: "transformer".into(),
                supported: vec!["mlp".into(), "gaussian_mlp".into()],
            },
        ),
        (Box::new(|m| m.action.map = None), Incompatible::NoActionMap),
    ];
    for (edit, want) in cases {
        assert_eq!(fits(|m| edit(m)), Err(want));
    }
}

#[test]
fn messages_say_what_differs_in_words() {
    let e = fits(|m| {
        m.action.names.swap(0, 1);
        map(m).joint_names.swap(0, 1);
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "action.names[0] is \"FL_hip_pitch\", this robot's servo 0 is \"FL_hip_abd\""
    );
    let e = fits(|m| map(m).scale[5] = 100.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "action.map.scale[5] (FR_knee) is 100 rad per unit, this robot allows at most 1"
    );
    let e = fits(|m| map(m).joint_limits[2] = [-3.0, -0.6]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "action.map.joint_limits[2] (FL_knee) is [-3, -0.6], outside this robot's limits [-2.6, -0.6]"
    );
}

#[test]
fn a_nan_scale_is_refused() {
    let e = fits(|m| map(m).scale[0] = f64::NAN).unwrap_err();
    assert!(
        matches!(e, Incompatible::ActionScale { index: 0, .. }),
        "{e}"
    );
}

/// The rate limit a policy was trained under travels with it: a bundle recorded with another
/// limit than the robot's `safety.max_joint_speed` is refused, naming both; the same limit, or
/// none recorded (a bundle made before it was), fits.
#[test]
fn a_bundle_trained_under_another_rate_limit_is_refused() {
    fits(|m| m.action.max_target_speed = Some(6.0)).unwrap();
    fits(|m| m.action.max_target_speed = None).unwrap();
    let e = fits(|m| m.action.max_target_speed = Some(3.0)).unwrap_err();
    assert_eq!(
        e,
        Incompatible::TargetSpeed {
            bundle: 3.0,
            robot: 6.0
        }
    );
    let text = e.to_string();
    assert!(
        text.contains("action.max_target_speed is 3 rad/s")
            && text.contains("safety.max_joint_speed is 6 rad/s"),
        "{text}"
    );
}

/// The control rate travels with the policy: a robot whose `control.rate_hz` is not the rate
/// the bundle was trained at is refused, naming both keys and values; changing the robot side
/// (not the bundle) is enough. The physics rate has no robot-side counterpart and is not
/// compared: a bundle with any (or none, made before it was recorded) fits.
#[test]
fn a_robot_running_at_another_control_rate_is_refused() {
    let (m, _) = common::quadruped();
    assert_eq!(m.control_rate_hz, 50.0);
    check_fits(&m, &robot()).unwrap();
    let fast = RobotSpec {
        control_rate_hz: 100.0,
        ..robot()
    };
    let e = check_fits(&m, &fast).unwrap_err();
    assert_eq!(
        e,
        Incompatible::ControlRate {
            bundle: 50.0,
            robot: 100.0
        }
    );
    let text = e.to_string();
    assert!(
        text.contains("control_rate_hz is 50 Hz") && text.contains("control.rate_hz is 100 Hz"),
        "{text}"
    );
    fits(|m| m.physics_rate_hz = None).unwrap();
    fits(|m| m.physics_rate_hz = Some(500.0)).unwrap();
}

/// A layout edited by `edit`, refused: the field and the detail of the `Layout` error.
fn layout_refused(edit: impl FnOnce(&mut OnboardLayout)) -> (String, String) {
    match fits(|m| edit(&mut m.observation.layout)) {
        Err(Incompatible::Layout { field, detail }) => (field, detail),
        other => panic!("not a layout error: {other:?}"),
    }
}

/// The observation must be one the robot computer builds: onboard, and its layout the
/// robot's field by field, the first difference named with both sides.
#[test]
fn an_observation_the_robot_cannot_build_is_refused_naming_the_field() {
    use clawrl_robot::ObsSource;
    assert_eq!(
        fits(|m| m.observation.source = ObsSource::Privileged),
        Err(Incompatible::ObservationSource(ObsSource::Privileged))
    );
    let n = OnboardLayout::quadruped().entries.len();
    let (field, detail) = layout_refused(|l| l.robot = "biped".into());
    assert_eq!(field, "robot");
    assert_eq!(detail, "is \"biped\", this robot is \"claw_quadruped\"");
    let (field, detail) = layout_refused(|l| {
        l.entries.pop();
    });
    assert_eq!(field, "entries");
    assert_eq!(
        detail,
        format!("has {} entries, this robot's observation has {n}", n - 1)
    );
    let (field, _) = layout_refused(|l| {
        let e = l.entries[0].clone();
        l.entries.push(e);
    });
    assert_eq!(field, "entries");
    let (field, detail) = layout_refused(|l| l.entries[3].unit = "deg".into());
    assert_eq!(field, "entries[3]");
    assert!(detail.contains("\"deg\""), "{detail}");
    let (field, _) = layout_refused(|l| l.entries.swap(0, 1));
    assert_eq!(field, "entries[0]");
    let (field, _) = layout_refused(|l| l.joint_offset[5] += 0.1);
    assert_eq!(field, "joint_offset");
    let (field, detail) = layout_refused(|l| l.accelerometer_scale *= 2.0);
    assert_eq!(field, "accelerometer_scale");
    assert!(detail.starts_with("is "), "{detail}");
}

/// The control rate and the rate limit are compared to a relative 1e-9 (1e-9 absolute at most
/// under 1): a difference within it fits, one of exactly it too, one beyond is refused.
#[test]
fn rates_match_within_a_relative_tolerance_that_includes_its_bound() {
    // 1e-8 Hz off 50 Hz is within 5e-8 Hz; 1e-9 rad/s off 6 rad/s within 6e-9 rad/s.
    fits(|m| m.control_rate_hz = 50.0 + 1e-8).unwrap();
    fits(|m| m.action.max_target_speed = Some(6.0 + 1e-9)).unwrap();
    assert!(matches!(
        fits(|m| m.control_rate_hz = 50.0 + 1e-7),
        Err(Incompatible::ControlRate { .. })
    ));
    assert!(matches!(
        fits(|m| m.action.max_target_speed = Some(6.0 + 1e-8)),
        Err(Incompatible::TargetSpeed { .. })
    ));
    // Exactly the bound: 1e-9 against 0 differs by exactly 1e-9 * max(|0|, 1).
    let (mut m, _) = quadruped();
    m.control_rate_hz = 1e-9;
    m.action.max_target_speed = Some(1e-9);
    let zero = RobotSpec {
        control_rate_hz: 0.0,
        max_joint_speed: 0.0,
        ..robot()
    };
    assert_eq!(check_fits(&m, &zero), Ok(()));
}

#[test]
fn a_description_must_name_the_servos_the_action_map_drives() {
    let (_, resolved) = shipped_description();
    let (mut m, tensors) = quadruped();
    m.robot.description = Some(resolved.clone());
    m.check(&tensors).unwrap();
    let mut swapped = resolved.clone();
    swapped.servos.swap(0, 1);
    m.robot.description = Some(swapped);
    let e = m.check(&tensors).unwrap_err().to_string();
    assert!(
        e.contains("robot.description.servos") && e.contains("action.map.joint_names"),
        "{e}"
    );
    let mut twice = resolved.clone();
    twice.servos[1].name = twice.servos[0].name.clone();
    m.robot.description = Some(twice);
    let e = m.check(&tensors).unwrap_err().to_string();
    assert!(e.contains("servo FL_hip_abd is named twice"), "{e}");
    let mut other = resolved;
    other.name = "biped".into();
    m.robot.description = Some(other);
    let e = m.check(&tensors).unwrap_err().to_string();
    assert!(e.contains("robot.description.name"), "{e}");
}
