//! `clawrl robot check` and `clawrl robot new`, as a user with their own MJCF runs them.
mod common;

use std::path::Path;

use common::{clawrl, fails, ok, repo, run, text, tmp};

fn shipped() -> String {
    std::fs::read_to_string(repo().join("robots/claw_quadruped/robot.toml")).unwrap()
}

/// The shipped description in `dir`, naming the MJCF by its absolute path, after `edit`.
fn copy_with(dir: &Path, edit: impl Fn(String) -> String) {
    let mjcf = repo()
        .join("sim/models/quadruped.xml")
        .canonicalize()
        .unwrap();
    let text = shipped().replace(
        "mjcf = \"../../sim/models/quadruped.xml\"",
        &format!("mjcf = {:?}", mjcf.display().to_string()),
    );
    std::fs::write(dir.join("robot.toml"), edit(text)).unwrap();
}

#[test]
fn check_prints_the_shipped_robot_servo_by_servo() {
    let (out, _) = ok(clawrl(&["robot", "check", "robots/claw_quadruped"]).current_dir(repo()));
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
    // Header, 16 servos, header, 4 feet.
    assert_eq!(rows.len(), 22, "{out}");
    assert!(
        out.contains("| 3 | FR_hip_abd | 4 | FR_hip_abd | leg | -1 | 0 | [-0.6, 0.6] | 0 | 0 |"),
        "{out}"
    );
    assert!(
        out.contains("| 15 | RR_claw | 16 | RR_claw | claw | +1 |"),
        "{out}"
    );
    assert!(
        out.contains("| FL | FL_foot | FL_foot | FL_contact | FL_claw | FL_grip |"),
        "{out}"
    );
    assert!(out.contains("OK:"), "{out}");
}

/// A change to the shipped description's text.
type Edit = fn(String) -> String;

#[test]
fn check_names_the_servo_and_both_values_where_file_and_mjcf_disagree() {
    let cases: [(&str, Edit, &[&str]); 4] = [
        (
            "wider",
            |t| t.replacen("rest = -2.4\n", "rest = -2.4\nlimits = [-2.8, -0.6]\n", 1),
            &["servo FL_knee", "[-2.8, -0.6]", "[-2.6, -0.6]"],
        ),
        (
            "joint",
            |t| t.replacen("joint = \"RL_knee\"", "joint = \"RL_kne\"", 1),
            &["servo RL_knee", "`RL_kne`", "no joint"],
        ),
        (
            "twice",
            |t| t.replacen("id = 16\n", "id = 4\n", 1),
            &["servo.RR_claw.id", "bus ID 4 is also servo FR_hip_abd's"],
        ),
        (
            "nofoot",
            |t| {
                t.replacen(
                    "contact_sensor = \"RL_contact\"",
                    "contact_sensor = \"RL_touch\"",
                    1,
                )
            },
            &["foot RL", "no sensor named `RL_touch`"],
        ),
    ];
    for (name, edit, words) in cases {
        let dir = tmp(&format!("robot-check-{name}"));
        copy_with(&dir, edit);
        let err = fails(&mut clawrl(&["robot", "check", dir.to_str().unwrap()]));
        for w in words {
            assert!(err.contains(w), "{name}: {w:?} not in\n{err}");
        }
        assert!(
            err.contains(&dir.join("robot.toml").display().to_string()),
            "{err}"
        );
    }
}

#[test]
fn new_scaffolds_a_description_that_check_accepts_once_the_todos_are_done() {
    let dir = tmp("robot-new");
    let out = dir.join("robots/quad");
    let mjcf = repo().join("sim/models/quadruped.xml");
    let args = [
        "robot",
        "new",
        "--mjcf",
        mjcf.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&mut clawrl(&args));
    // Not ready while the TODO list is there: the table, then what is left, and exit 1.
    let o = run(&mut clawrl(&["robot", "check", out.to_str().unwrap()]));
    let (stdout, _) = text(&o);
    assert!(!o.status.success());
    assert!(
        stdout.contains("not ready") && stdout.contains("bus ID"),
        "{stdout}"
    );
    // The MJCF's servos in its actuator order, ranges and stand keyframe read from it.
    assert!(
        stdout.contains("| 0 | FL_hip_abd | 1 | FL_hip_abd | leg | +1 | 0 | [-0.6, 0.6] | 0 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| 12 | FL_claw | 13 | FL_claw | claw |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| FR | FR_foot | FR_foot | FR_contact | FR_claw | FR_grip |"),
        "{stdout}"
    );
    // The user measures and empties the list: then it checks.
    let file = out.join("robot.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("todo = [").unwrap();
    let end = start + text[start..].find("]\n").unwrap() + 2;
    std::fs::write(&file, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let (stdout, _) = ok(&mut clawrl(&["robot", "check", out.to_str().unwrap()]));
    assert!(stdout.contains("OK:"), "{stdout}");
    // A second `new` never overwrites it.
    let err = fails(&mut clawrl(&args));
    assert!(err.contains("refusing to overwrite"), "{err}");
}

#[test]
fn new_says_what_an_mjcf_lacks() {
    let dir = tmp("robot-new-cartpole");
    let mjcf = repo().join("sim/models/cartpole.xml");
    let out = dir.join("cp");
    let err = fails(&mut clawrl(&[
        "robot",
        "new",
        "--mjcf",
        mjcf.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        err.contains("no keyframe") || err.contains("no actuator"),
        "{err}"
    );
    let err = fails(&mut clawrl(&[
        "robot",
        "new",
        "--mjcf",
        "/nonexistent/x.xml",
    ]));
    assert!(err.contains("/nonexistent/x.xml"), "{err}");
}

/// Every robot shipped under robots/ checks clean: a description that stops fitting its MJCF
/// (or keeps a TODO) fails here, not on a user's machine.
#[test]
fn every_shipped_robot_checks() {
    let mut robots: Vec<_> = std::fs::read_dir(repo().join("robots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    robots.sort();
    assert!(robots.len() >= 2, "{robots:?}");
    for dir in &robots {
        let (out, _) = ok(&mut clawrl(&["robot", "check", dir.to_str().unwrap()]));
        assert!(out.contains("OK:"), "{}: {out}", dir.display());
    }
    // pup12's bus is numbered FR, FL, RR, RL: the wiring order, by ID.
    let (out, _) = ok(clawrl(&["robot", "check", "robots/pup12"]).current_dir(repo()));
    assert!(
        out.contains("bus IDs: 1 FR_hip_abd, 2 FR_hip_pitch, 3 FR_knee, 4 FL_hip_abd,"),
        "{out}"
    );
    // Which board drives it, said: the virtual board takes pup12's 12 servos, the MCU image
    // is generated for 16-servo descriptions only.
    assert!(
        out.contains("board: the virtual board (HIL) drives it as described, 12 of its 16 slots"),
        "{out}"
    );
    let (out, _) = ok(clawrl(&["robot", "check", "robots/claw_quadruped"]).current_dir(repo()));
    assert!(
        out.contains("board: the clawrl servo board drives it as described"),
        "{out}"
    );
}
