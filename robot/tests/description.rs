//! A robot description against an MJCF's facts: what resolves, and errors that name the servo
//! and both values. The facts are written by hand here (the simulator crate's tests read a
//! real MJCF); the file goes through the real loader.
use std::path::{Path, PathBuf};

use clawrl_robot::description::{
    ActuatorFact, DescriptionError, DescriptionFile, JointFact, JointKind, MjcfFacts,
};

/// A one-leg robot: hip, knee and a claw.
const FILE: &str = r#"
[robot]
name = "one_leg"
mjcf = "one_leg.xml"
stand_keyframe = "stand"
rest_keyframe = "rest"

[action_scale]
leg = 0.3
claw = 0.6

[servo_model.sts]
ticks_per_turn = 4096
center_ticks = 2048
max_speed_rad_s = 5.0

[[servo]]
name = "hip"
id = 7
joint = "hip_j"
kind = "leg"
direction = -1
offset_rad = 0.05
rest = 1.0
model = "sts"

[[servo]]
name = "knee"
id = 3
joint = "knee_j"
kind = "leg"
direction = 1
offset_rad = 0.0
limits = [-2.0, -0.5]
rest = -1.8
model = "sts"

[[servo]]
name = "claw"
id = 9
joint = "claw_j"
kind = "claw"
direction = 1
offset_rad = 0.0
rest = 0.0
model = "sts"

[[foot]]
name = "F"
body = "foot"
geom = "foot"
contact_sensor = "foot_touch"
claw = "claw"

[imu]
site = "imu"
quat_sensor = "q"
gyro_sensor = "g"
acc_sensor = "a"
mount_rpy_deg = [0.0, 0.0, 0.0]

[trunk]
body = "torso"
geom = "torso"
contact_sensor = "torso_touch"
velocity_sensor = "v"
"#;

fn facts() -> MjcfFacts {
    let joint = |lo, hi, adr| JointFact {
        range: Some([lo, hi]),
        one_dof: true,
        qpos_adr: adr,
    };
    let act = |n: &str, j: Option<&str>| ActuatorFact {
        name: n.into(),
        joint: j.map(str::to_string),
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    MjcfFacts {
        file: "one_leg.xml".into(),
        joints: [
            ("hip_j".to_string(), joint(-1.0, 1.5, 7)),
            ("knee_j".to_string(), joint(-2.6, -0.4, 8)),
            ("claw_j".to_string(), joint(0.0, 1.2, 9)),
        ]
        .into(),
        actuators: vec![
            act("hip_a", Some("hip_j")),
            act("knee_a", Some("knee_j")),
            act("claw_a", Some("claw_j")),
            act("grip", None),
        ],
        keyframes: [("stand".to_string(), {
            let mut q = vec![0.0; 10];
            q[7] = 0.8;
            q[8] = -1.5;
            q
        })]
        .into(),
        bodies: s(&["world", "torso", "foot"]),
        geoms: s(&["torso", "foot"]),
        sites: s(&["imu"]),
        sensors: s(&["q", "g", "a", "foot_touch", "torso_touch", "v"]),
        free_body: Some("torso".into()),
    }
}

fn parse(text: &str) -> Result<DescriptionFile, DescriptionError> {
    Ok(clawrl_config::from_str(
        text,
        "robots/one_leg/robot.toml",
        &[],
    )?)
}

fn resolve(
    text: &str,
    f: &MjcfFacts,
) -> Result<clawrl_robot::description::RobotDescription, String> {
    let d = parse(text).map_err(|e| e.to_string())?;
    d.resolve(Path::new("robots/one_leg/robot.toml"), f)
        .map_err(|e| e.to_string())
}

fn err(text: &str, f: &MjcfFacts) -> String {
    match resolve(text, f) {
        Ok(_) => panic!("resolved, and should not have"),
        Err(e) => e,
    }
}

#[test]
fn a_description_resolves_against_its_mjcf_in_the_files_servo_order() {
    let r = resolve(FILE, &facts()).unwrap();
    assert_eq!(r.servo_names(), ["hip", "knee", "claw"]);
    let hip = r.servo("hip").unwrap();
    // The MJCF's range and keyframe, the file's ID, direction, offset and rest.
    assert_eq!(hip.limits, [-1.0, 1.5]);
    assert_eq!(hip.stand, 0.8);
    assert_eq!(hip.rest, 1.0);
    assert_eq!((hip.id, hip.direction, hip.offset_rad), (7, -1, 0.05));
    // A narrower limit from the file.
    assert_eq!(r.servo("knee").unwrap().limits, [-2.0, -0.5]);
    assert_eq!(r.servo("claw").unwrap().kind, JointKind::Claw);
    assert_eq!(r.index_of_id(3), Some(1));
    assert_eq!(r.stand_pose(), [0.8, -1.5, 0.0]);
    // Direction and offset: the servo's angle from the joint's and back.
    let a = hip.servo_angle(0.3);
    assert!((a - -0.35).abs() < 1e-12);
    assert!((hip.joint_angle(a) - 0.3).abs() < 1e-12);
}

#[test]
fn limits_wider_than_the_mjcf_name_the_servo_and_both_ranges() {
    let text = FILE.replace("limits = [-2.0, -0.5]", "limits = [-2.7, -0.5]");
    let e = err(&text, &facts());
    assert!(e.contains("servo knee"), "{e}");
    assert!(
        e.contains("[-2.7, -0.5]") && e.contains("[-2.6, -0.4]"),
        "{e}"
    );
    assert!(
        e.contains("one_leg.xml") && e.contains("robots/one_leg/robot.toml"),
        "{e}"
    );
}

#[test]
fn a_rest_pose_typed_twice_and_different_names_both_values() {
    let mut f = facts();
    let mut rest = vec![0.0; 10];
    rest[7] = 1.2;
    rest[8] = -1.8;
    f.keyframes.insert("rest".into(), rest);
    let e = err(FILE, &f);
    assert!(
        e.contains("servo hip") && e.contains("1.2") && e.contains("rest is 1"),
        "{e}"
    );
    // With the same value it is only typed twice, not wrong; without it the keyframe's.
    let same = FILE.replacen("rest = 1.0", "rest = 1.2", 1);
    assert_eq!(resolve(&same, &f).unwrap().servo("hip").unwrap().rest, 1.2);
    let none = FILE.replacen("rest = 1.0\n", "", 1);
    assert_eq!(resolve(&none, &f).unwrap().servo("hip").unwrap().rest, 1.2);
}

#[test]
fn a_keyframe_outside_a_narrowed_limit_names_the_servo_and_the_value() {
    let text = FILE.replace("limits = [-2.0, -0.5]", "limits = [-1.4, -0.5]");
    let e = err(&text, &facts());
    assert!(
        e.contains("servo knee") && e.contains("stand") && e.contains("-1.5"),
        "{e}"
    );
    assert!(e.contains("[-1.4, -0.5]"), "{e}");
}

#[test]
fn no_rest_and_no_rest_keyframe_is_an_error_naming_the_servo() {
    let text = FILE.replace("rest = -1.8\n", "");
    let e = err(&text, &facts());
    assert!(
        e.contains("servo knee") && e.contains("keyframe `rest`"),
        "{e}"
    );
}

#[test]
fn the_file_checks_itself_and_names_the_key() {
    let cases = [
        (
            "id = 3",
            "id = 7",
            "servo.knee.id",
            "bus ID 7 is also servo hip's",
        ),
        (
            "direction = -1",
            "direction = 2",
            "servo.hip.direction",
            "neither 1 nor -1",
        ),
        ("id = 9", "id = 0", "servo.claw.id", "not a bus ID"),
        (
            "offset_rad = 0.05",
            "offset_rad = 4.0",
            "servo.hip.offset_rad",
            "[-pi, pi]",
        ),
        (
            "joint = \"claw_j\"",
            "joint = \"knee_j\"",
            "servo.claw.joint",
            "knee",
        ),
        (
            "model = \"sts\"\n\n[[servo]]\nname = \"claw\"",
            "model = \"xl\"\n\n[[servo]]\nname = \"claw\"",
            "servo.knee.model",
            "servo_model.xl",
        ),
        (
            "claw = 0.6\n",
            "",
            "servo.claw.kind",
            "action_scale has no claw",
        ),
        (
            "claw = \"claw\"",
            "claw = \"knee\"",
            "foot.F.claw",
            "no servo of kind claw",
        ),
    ];
    for (from, to, key, words) in cases {
        assert!(FILE.contains(from), "{from}");
        let e = parse(&FILE.replacen(from, to, 1)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("key `{key}`")) && e.contains(words),
            "{from} -> {to}: {e}"
        );
        assert!(e.contains("robots/one_leg/robot.toml"), "{e}");
    }
    // A misspelt key is refused, never ignored.
    let e = parse(&FILE.replacen("offset_rad = 0.0", "ofset_rad = 0.0", 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("ofset_rad"), "{e}");
}

#[test]
fn servos_and_actuators_are_one_to_one() {
    let mut f = facts();
    f.joints.remove("claw_j");
    let e = err(FILE, &f);
    assert!(
        e.contains("servo claw") && e.contains("no joint") && e.contains("claw_j"),
        "{e}"
    );

    let mut f = facts();
    f.actuators.push(ActuatorFact {
        name: "hip_b".into(),
        joint: Some("hip_j".into()),
    });
    let e = err(FILE, &f);
    assert!(e.contains("servo hip") && e.contains("hip_a, hip_b"), "{e}");

    let mut f = facts();
    f.joints.insert(
        "tail_j".into(),
        JointFact {
            range: Some([-1.0, 1.0]),
            one_dof: true,
            qpos_adr: 0,
        },
    );
    f.actuators.push(ActuatorFact {
        name: "tail".into(),
        joint: Some("tail_j".into()),
    });
    let e = err(FILE, &f);
    assert!(
        e.contains("actuator `tail`") && e.contains("no servo"),
        "{e}"
    );

    let mut f = facts();
    f.actuators.retain(|a| a.name != "knee_a");
    let e = err(FILE, &f);
    assert!(e.contains("servo knee") && e.contains("no actuator"), "{e}");
}

#[test]
fn feet_imu_and_trunk_name_what_is_missing() {
    for (list, name, words) in [
        ("geoms", "foot", "foot F: the MJCF has no geom named `foot`"),
        ("sensors", "g", "imu: the MJCF has no sensor named `g`"),
        (
            "bodies",
            "torso",
            "trunk: the MJCF has no body named `torso`",
        ),
    ] {
        let mut f = facts();
        let v = match list {
            "geoms" => &mut f.geoms,
            "sensors" => &mut f.sensors,
            _ => &mut f.bodies,
        };
        v.retain(|n| n != name);
        let e = err(FILE, &f);
        assert!(e.contains(words), "{e}");
    }
}

#[test]
fn load_takes_a_folder_or_its_robot_toml() {
    let dir = std::env::temp_dir().join(format!("clawrl-desc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("robot.toml"), FILE).unwrap();
    let (d, path) = DescriptionFile::load(&dir).unwrap();
    assert_eq!(path, dir.join("robot.toml"));
    assert_eq!(d.mjcf_path(&path), dir.join("one_leg.xml"));
    let (_, p2) = DescriptionFile::load(&dir.join("robot.toml")).unwrap();
    assert_eq!(p2, path);
    let missing: PathBuf = dir.join("nope");
    let e = DescriptionFile::load(&missing).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("cannot read"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The bundle's description (resolved from FILE) against a robot whose file is FILE edited.
fn difference(edit: impl Fn(&str) -> String) -> Option<String> {
    let bundle = resolve(FILE, &facts()).unwrap();
    let robot = parse(&edit(FILE)).unwrap();
    clawrl_robot::description::first_difference(&bundle, &robot)
}

#[test]
fn a_bundle_for_another_robot_names_the_first_servo_that_differs() {
    assert_eq!(difference(|t| t.to_string()), None);
    let cases: [(&str, &str, &str); 6] = [
        (
            "direction = -1",
            "direction = 1",
            "servo hip: direction -1 in the bundle, +1 on this robot",
        ),
        (
            "offset_rad = 0.05",
            "offset_rad = 0.1",
            "servo hip: zero offset 0.05 rad in the bundle, 0.1 rad",
        ),
        (
            "id = 3",
            "id = 4",
            "servo knee: bus ID 3 in the bundle, 4 on this robot",
        ),
        (
            "limits = [-2.0, -0.5]",
            "limits = [-1.9, -0.5]",
            "servo knee: limits [-2, -0.5] in the bundle, [-1.9, -0.5]",
        ),
        (
            "name = \"one_leg\"",
            "name = \"two_legs\"",
            "robot \"one_leg\", this robot is \"two_legs\"",
        ),
        (
            "claw = 0.6",
            "claw = 0.5",
            "action_scale.claw is 0.6 in the bundle, 0.5",
        ),
    ];
    for (from, to, words) in cases {
        assert!(FILE.contains(from), "{from}");
        let d = difference(|t| t.replacen(from, to, 1));
        let d = d.unwrap_or_else(|| panic!("{from} -> {to}: no difference found"));
        assert!(d.contains(words), "{from} -> {to}: {d}");
    }
}

#[test]
fn two_servos_swapped_are_named_as_a_pair() {
    // The hip and knee tables exchanged: the policy's action 0 would move the knee.
    let d = difference(|t| {
        let blocks: Vec<&str> = t.split("[[servo]]\n").collect();
        let (hip, knee) = (blocks[1], blocks[2]);
        t.replacen(
            &format!("[[servo]]\n{hip}[[servo]]\n{knee}"),
            &format!("[[servo]]\n{knee}[[servo]]\n{hip}"),
            1,
        )
    })
    .unwrap();
    assert!(
        d.contains(
            "servos hip and knee are swapped: the bundle's action 0 is hip, this robot's is knee"
        ),
        "{d}"
    );
}

#[test]
fn a_missing_claw_is_named() {
    // This robot has no claw servo (and its foot no claw): the bundle drives one.
    let d = difference(|t| {
        let start = t.find("[[servo]]\nname = \"claw\"").unwrap();
        let end = start + t[start..].find("[[foot]]").unwrap();
        format!("{}{}", &t[..start], &t[end..]).replace("claw = \"claw\"\n", "")
    })
    .unwrap();
    assert!(
        d.contains("the bundle drives servo claw, which this robot does not have"),
        "{d}"
    );
}
