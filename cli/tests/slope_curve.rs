//! `clawrl slope-curve` (issue 31): the grid, the success rule and what it writes, on the
//! shipped flat teacher: it walks on a flat floor and cannot walk up 25 degrees at friction
//! 0.4 with its claws forced open (it slides: sim/tests/quadruped.rs measures the physics).
mod common;

use common::*;

#[test]
fn the_curve_of_the_flat_teacher_walks_flat_and_slides_on_a_steep_slippery_floor() {
    let out = tmp("slope-curve");
    let teacher = repo().join("assets/pretrained/quadruped_flat_ppo");
    let (stdout, _) = ok(&mut clawrl(&[
        "slope-curve",
        "--policy",
        teacher.to_str().unwrap(),
        "--episodes",
        "4",
        "--tilts",
        "0,25",
        "--frictions",
        "0.4",
        "--out",
        out.to_str().unwrap(),
    ]));
    let csv = std::fs::read_to_string(out.join("curve.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // 2 tilts x 1 friction x 2 directions x 2 claw modes.
    assert_eq!(rows.len(), 8, "{csv}");
    let success = |tilt: &str, dir: &str, claws: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[0] == tilt && r[2] == dir && r[3] == claws)
            .unwrap_or_else(|| panic!("no row {tilt} {dir} {claws}:\n{csv}"));
        r[5].parse().unwrap()
    };
    // Flat: "uphill" is any heading; the teacher walks at 0.3 m/s.
    for dir in ["uphill", "downhill"] {
        assert!(success("0", dir, "free") >= 0.75, "{csv}");
    }
    assert_eq!(success("25", "uphill", "open"), 0.0, "{csv}");
    assert!(
        stdout.contains("| up, friction 0.4, claws open | "),
        "{stdout}"
    );
    let png = std::fs::read(out.join("curve.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "curve.png is not a PNG");
    assert!(out.join("curve.md").exists());
}

#[test]
fn a_cartpole_policy_is_refused() {
    let dir = tmp("slope-curve-cartpole");
    train_cartpole(&dir, 1);
    let err = fails(&mut clawrl(&[
        "slope-curve",
        "--policy",
        dir.to_str().unwrap(),
        "--out",
        dir.join("curve").to_str().unwrap(),
    ]));
    assert!(err.contains("no floor to tilt"), "{err}");
}

/// A tilt or friction outside the task's bounds is refused by the flag's own name, before any
/// policy is loaded.
#[test]
fn an_out_of_range_tilt_or_friction_names_its_flag() {
    for (flag, value, words) in [
        ("--tilts", "10,50", "--tilts: 50 is outside [0, 45] degrees"),
        (
            "--frictions",
            "0.01",
            "--frictions: 0.01 is outside [0.05, 3]",
        ),
    ] {
        let err = fails(&mut clawrl(&[
            "slope-curve",
            "--policy",
            "assets/pretrained/quadruped_slopes_ppo",
            flag,
            value,
        ]));
        assert!(err.contains(words), "{err}");
    }
}
