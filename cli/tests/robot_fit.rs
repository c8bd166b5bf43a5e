//! What `clawrl verify --robot` passes, the robot accepts, and the reverse: the same tampered
//! bundles through the library check and the four entry points that judge a bundle against a
//! robot (`clawrl verify`, `clawrl flash`, `clawrl-runtime install`, `clawrl-runtime run`'s
//! bundle load), all with the shipped runtime config. A good bundle passes all five.
#[path = "../../runtime/tests/common/mod.rs"]
mod bundles;
mod common;

use std::path::{Path, PathBuf};

use clawrl_bundle::Manifest;
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::install::{self, InstallArgs};
use common::{clawrl, fails, ok, tmp};

fn robot_toml() -> PathBuf {
    common::repo().join("configs/runtime/robot.toml")
}

/// A change to a quadruped manifest that makes it unfit for the shipped robot.
type Tamper = fn(&mut Manifest);

/// Each tamper, the words the refusal must hold (the field and what differs).
fn tampers() -> Vec<(&'static str, Tamper, &'static str)> {
    vec![
        (
            "another-model",
            |m| {
                m.robot.model = "biped".into();
                // The manifest check ties the layout's robot to the model.
                m.observation.layout.robot = "biped".into();
            },
            "robot.model is \"biped\", this robot is \"claw_quadruped\"",
        ),
        (
            "widened-limits",
            |m| {
                m.action.map.as_mut().unwrap().joint_limits[2] = [-3.0, -0.6];
            },
            "action.map.joint_limits[2] (FL_knee) is [-3, -0.6], outside this robot's limits",
        ),
        (
            "swapped-names",
            |m| {
                m.action.names.swap(0, 1);
                m.action.map.as_mut().unwrap().joint_names.swap(0, 1);
            },
            "action.names[0] is \"FL_hip_pitch\", this robot's servo 0 is \"FL_hip_abd\"",
        ),
        (
            "100-hz",
            |m| {
                m.control_rate_hz = 100.0;
                // Still a whole number of physics steps per control step.
                m.physics_rate_hz = Some(500.0);
            },
            "control_rate_hz is 100 Hz (the rate it was trained at), this robot's control.rate_hz is 50 Hz",
        ),
        (
            "action-scale-100",
            |m| {
                m.action.map.as_mut().unwrap().scale[0] = 100.0;
            },
            "action.map.scale[0] (FL_hip_abd) is 100 rad per unit, this robot allows at most 1",
        ),
        (
            "zero-mjcf-hash",
            |m| m.robot.mjcf_sha256 = "0".repeat(64),
            "robot.mjcf_sha256 is 0000",
        ),
        (
            // Trained on a robot whose FR hip pitch servo is mounted the other way round.
            "reversed-servo",
            |m| {
                let path = clawrl_sim::description::CLAW_QUADRUPED.as_ref();
                let mut d = clawrl_sim::description::load(path).unwrap().description;
                d.servos[4].direction = -1;
                m.robot.description = Some(d);
            },
            "robot.description: servo FR_hip_pitch: direction -1 in the bundle, +1 on this robot",
        ),
    ]
}

/// The five judges' verdicts on `bundle`: `Err(message)` from each that refuses it.
fn verdicts(bundle: &Path, root: &Path) -> [(&'static str, Result<(), String>); 5] {
    let cfg = RuntimeConfig::load(&robot_toml(), &[]).unwrap();
    let read = clawrl_bundle::read(bundle, &clawrl_bundle::Trust::default()).unwrap();
    let library = clawrl_bundle::check_fits(&read.manifest, &cfg.robot_spec());
    let verify = clawrl(&["verify", "--robot"])
        .arg(robot_toml())
        .arg(bundle)
        .output();
    let flash = clawrl(&["flash", "--robot"])
        .arg(robot_toml())
        .arg(bundle)
        .arg("--to")
        .arg(root)
        .output();
    let cli = |o: std::io::Result<std::process::Output>| {
        let o = o.unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() { Ok(()) } else { Err(err) }
    };
    // `clawrl-runtime install BUNDLE --config CONFIG --root ROOT`, as its main calls it.
    let install = install::run_install(&InstallArgs {
        bundle: bundle.to_path_buf(),
        config: robot_toml(),
        root: Some(root.to_path_buf()),
        trust: Vec::new(),
        require_signature: false,
    });
    let run = clawrl_runtime::run::load_bundle(&cfg, bundle);
    [
        ("check_fits", library.map_err(|e| e.to_string())),
        ("clawrl verify", cli(verify)),
        ("clawrl flash", cli(flash)),
        (
            "clawrl-runtime install",
            install.map(drop).map_err(|e| format!("{e:#}")),
        ),
        (
            "clawrl-runtime run",
            run.map(drop).map_err(|e| format!("{e:#}")),
        ),
    ]
}

#[test]
fn every_tampered_bundle_is_refused_by_verify_flash_install_and_run_alike() {
    let dir = tmp("robot-fit");
    let root = dir.join("robot");
    std::fs::create_dir_all(&root).unwrap();
    // The good bundle passes all five (and is what stays installed).
    let good = bundles::quadruped_bundle(&dir, 1);
    for (judge, verdict) in verdicts(&good, &root) {
        assert_eq!(verdict, Ok(()), "{judge} refused the good bundle");
    }
    let current = std::fs::read(install::current_bundle(&root).unwrap()).unwrap();
    for (name, tamper, words) in tampers() {
        let (mut m, t) = bundles::quadruped_parts(2);
        tamper(&mut m);
        let path = bundles::write_bundle(&dir.join(format!("{name}.clawrl")), &m, &t, None);
        for (judge, verdict) in verdicts(&path, &root) {
            let e = verdict.expect_err(&format!("{judge} accepted {name}"));
            assert!(
                e.contains(words),
                "{judge} on {name}: {words:?} not in {e:?}"
            );
        }
        assert_eq!(
            std::fs::read(install::current_bundle(&root).unwrap()).unwrap(),
            current,
            "{name} replaced the installed bundle"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Plain `verify` checks the robot of the runtime config `flash` and `hil` use by default
/// (issue 40: it said `ok` to bundles that flash, install and run all refuse): every tampered
/// bundle is refused naming what differs, and `--any-robot` skips the check and says so.
#[test]
fn plain_verify_checks_the_default_robot_and_any_robot_skips_it() {
    let dir = tmp("robot-fit-verify");
    // The default config is a relative path, as a user in the repository runs it.
    let verify = |extra: &[&str], bundle: &Path| {
        let mut c = clawrl(&["verify"]);
        c.current_dir(common::repo()).args(extra).arg(bundle);
        c
    };
    let good = bundles::quadruped_bundle(&dir, 3);
    let (out, _) = ok(&mut verify(&[], &good));
    assert!(
        out.contains("robot check: fits configs/runtime/robot.toml"),
        "{out}"
    );
    for (name, tamper, words) in tampers() {
        let (mut m, t) = bundles::quadruped_parts(3);
        tamper(&mut m);
        let path = bundles::write_bundle(&dir.join(format!("{name}.clawrl")), &m, &t, None);
        let err = fails(&mut verify(&[], &path));
        assert!(
            err.contains("robot check against configs/runtime/robot.toml")
                && err.contains(&format!("{name}.clawrl is not for this robot: "))
                && err.contains(words),
            "{name}: {words:?} not in {err}"
        );
        let (out, _) = ok(&mut verify(&["--any-robot"], &path));
        assert!(
            out.contains(": ok (sha256 ") && out.contains("robot check: not checked (--any-robot)"),
            "{name}: {out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The other side of the control-rate check: the bundle untouched, the shipped robot config
/// with `control.rate_hz` changed. The library check, `clawrl verify --robot` and `clawrl
/// flash` all refuse it naming both keys and rates; under the shipped config it fits, and
/// `clawrl verify` prints the rates it was trained at.
#[test]
fn a_robot_configured_for_another_control_rate_refuses_the_bundle() {
    let dir = tmp("robot-fit-rate");
    let root = dir.join("robot");
    std::fs::create_dir_all(&root).unwrap();
    let good = bundles::quadruped_bundle(&dir, 5);
    let shipped = bundles::shipped_config_text();
    let from = "\nrate_hz = 50.0\n";
    assert!(shipped.contains(from), "the shipped config runs at 50 Hz");
    let fast = dir.join("robot-100hz.toml");
    std::fs::write(&fast, shipped.replacen(from, "\nrate_hz = 100.0\n", 1)).unwrap();
    let cfg = RuntimeConfig::load(&fast, &[]).unwrap();
    assert_eq!(cfg.control.rate_hz, 100.0);

    let words = "control_rate_hz is 50 Hz (the rate it was trained at), this robot's control.rate_hz is 100 Hz";
    let read = clawrl_bundle::read(&good, &clawrl_bundle::Trust::default()).unwrap();
    let library = clawrl_bundle::check_fits(&read.manifest, &cfg.robot_spec())
        .unwrap_err()
        .to_string();
    assert!(library.contains(words), "{library}");
    let verify = fails(clawrl(&["verify", "--robot"]).arg(&fast).arg(&good));
    assert!(verify.contains(words), "{verify}");
    let flash = fails(
        clawrl(&["flash", "--robot"])
            .arg(&fast)
            .arg(&good)
            .arg("--to")
            .arg(&root),
    );
    assert!(flash.contains(words), "{flash}");
    assert!(install::current_bundle(&root).is_err(), "nothing installed");

    let (out, _) = ok(clawrl(&["verify", "--robot"]).arg(robot_toml()).arg(&good));
    assert!(
        out.contains(
            "trained with: control 50 Hz (control_rate_hz), physics 250 Hz (physics_rate_hz), \
             servo-target limit not recorded (action.max_target_speed)"
        ),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
