//! Install, A/B slots and rollback as the robot runs them: the `clawrl-runtime` binary killed
//! at every install step (`CLAWRL_INSTALL_ABORT_AT`), then a clean install and a rollback; and
//! every kind of bad bundle refused with a clear message and the current slot untouched.
mod common;

/// The signal `std::process::abort` raises.
const SIGABRT: i32 = 6;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clawrl_bundle::{RobotSpec, Trust, generate_keypair, save_public_key};
use clawrl_robot::{ObsSource, OnboardLayout};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::install::{self, ABORT_ENV, InstallError, SlotState, Step, check_bundle};
use common::{quadruped_bundle, quadruped_parts, signed_quadruped_bundle, write_bundle};

fn runtime(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"));
    c.env_remove(ABORT_ENV).args(args);
    c
}

fn out(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The shipped runtime config, which says what the robot is.
fn robot_toml() -> PathBuf {
    common::repo().join("configs/runtime/robot.toml")
}

/// What the shipped config's robot accepts.
fn robot() -> RobotSpec {
    RuntimeConfig::load(&robot_toml(), &[])
        .unwrap()
        .robot_spec()
}

fn install_cmd(root: &Path, bundle: &Path) -> Command {
    let mut c = runtime(&["install"]);
    c.arg(bundle).arg("--root").arg(root);
    c.arg("--config").arg(robot_toml());
    c
}

fn ok(c: &mut Command) -> String {
    let o = c.output().unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{c:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Runs and expects exit status 1 with one `error:` line; returns it.
fn refused(c: &mut Command) -> String {
    let o = c.output().unwrap();
    let (stdout, stderr) = out(&o);
    assert_eq!(o.status.code(), Some(1), "{c:?}:\n{stdout}\n{stderr}");
    let line = stderr.trim_end();
    assert!(
        line.starts_with("error: ") && !line.contains('\n'),
        "one error line expected: {stderr}"
    );
    line.to_string()
}

/// Every file (bytes) and symlink (target) under `root` but the lock file, sorted.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                v.push((p, target.into_os_string().into_encoded_bytes()));
            } else if t.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != ".lock" {
                let bytes = std::fs::read(&p).unwrap();
                v.push((p, bytes));
            }
        }
    }
    v.sort();
    v
}

fn current_bytes(root: &Path) -> Vec<u8> {
    std::fs::read(install::current_bundle(root).unwrap()).unwrap()
}

/// `status` and `rollback` agree on what can be rolled back (`when` names the situation): when
/// status names a previous slot, rollback succeeds and restores that slot's bundle; when it
/// names none, rollback refuses with status's reason. Both run on a copy of the root (links and all),
/// so the root is left as it was.
fn status_and_rollback_agree(root: &Path, when: &str) {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("root");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(root)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success(), "{when}: cp -a {}", root.display());
    let s = install::status(&copy).unwrap();
    assert_eq!(
        s.previous,
        install::status(root).unwrap().previous,
        "{when}"
    );
    let shown = ok(runtime(&["status", "--root"]).arg(&copy));
    match s.previous {
        Some(prev) => {
            assert_ne!(
                s.current,
                Some(prev),
                "{when}: previous is the current slot: {s}"
            );
            assert_eq!(s.no_previous, None, "{when}: {s}");
            assert!(
                shown.contains(&format!("previous {prev}\n")),
                "{when}: {shown}"
            );
            let sha = match &s.slots.iter().find(|(sl, _)| *sl == prev).unwrap().1 {
                SlotState::Installed(i) => i.record.sha256.clone(),
                other => panic!("{when}: status names {prev} previous, but it is {other:?}"),
            };
            let prev_bytes = std::fs::read(prev.bundle(&copy)).unwrap();
            let said = ok(runtime(&["rollback", "--root"]).arg(&copy));
            assert!(
                said.contains(&format!("rolled back to {prev}")) && said.contains(&sha),
                "{when}: status said previous {prev}, rollback said: {said}"
            );
            assert_eq!(install::current_bundle(&copy).unwrap(), prev.bundle(&copy));
            assert_eq!(current_bytes(&copy), prev_bytes, "{when}");
        }
        None => {
            let why = s
                .no_previous
                .clone()
                .unwrap_or_else(|| panic!("{when}: no previous and no reason: {s}"));
            assert!(
                shown.contains(&format!("previous none ({why})")),
                "{when}: {shown}"
            );
            assert!(
                !shown.contains("(previous)") && !shown.contains(", previous)"),
                "{when}: {shown}"
            );
            let before = snapshot(&copy);
            let e = refused(runtime(&["rollback", "--root"]).arg(&copy));
            assert!(
                e.contains("cannot roll back") && e.contains(&why),
                "{when}: status said no previous ({why}), rollback said: {e}"
            );
            assert_eq!(
                snapshot(&copy),
                before,
                "{when}: a refused rollback changed the root"
            );
        }
    }
}

#[test]
fn an_install_killed_at_any_step_leaves_the_old_bundle_current_then_a_clean_one_switches_and_rollback_returns()
 {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let old = quadruped_bundle(dir.path(), 1);
    let new = quadruped_bundle(dir.path(), 2);
    let old_bytes = std::fs::read(&old).unwrap();
    let new_bytes = std::fs::read(&new).unwrap();
    assert_ne!(old_bytes, new_bytes);

    // Killed before anything was ever installed: still nothing installed.
    let o = install_cmd(&root, &old)
        .env(ABORT_ENV, "SwitchCurrent")
        .output()
        .unwrap();
    assert_eq!(o.status.signal(), Some(SIGABRT), "{:?}", out(&o));
    let e = install::current_bundle(&root).unwrap_err();
    assert!(matches!(e, InstallError::NotInstalled { .. }), "{e}");

    ok(&mut install_cmd(&root, &old));
    let old_slot = install::status(&root).unwrap().current.unwrap();
    let old_sha = install::status(&root)
        .unwrap()
        .current_installed()
        .unwrap()
        .record
        .sha256
        .clone();
    assert_eq!(current_bytes(&root), old_bytes);

    for step in Step::ALL {
        let o = install_cmd(&root, &new)
            .env(ABORT_ENV, step.name())
            .output()
            .unwrap();
        let (_, stderr) = out(&o);
        assert_eq!(
            o.status.signal(),
            Some(SIGABRT),
            "killed at {step}: {stderr}"
        );
        assert!(stderr.contains(step.name()), "{stderr}");

        let path = install::current_bundle(&root).unwrap();
        assert_eq!(path, old_slot.bundle(&root), "after a kill at {step}");
        assert_eq!(current_bytes(&root), old_bytes, "after a kill at {step}");
        let s = install::status(&root).unwrap();
        assert_eq!(s.current, Some(old_slot), "after a kill at {step}");
        let cur = s
            .current_installed()
            .unwrap_or_else(|| panic!("after a kill at {step}: {s}"));
        assert_eq!(cur.record.sha256, old_sha, "after a kill at {step}");
        let shown = ok(runtime(&["status", "--root"]).arg(&root));
        assert!(
            shown.contains(&format!("slot {} (current", old_slot.name()))
                && shown.contains(&old_sha),
            "after a kill at {step}: {shown}"
        );
        // Nothing to roll back to: the old slot is the only bundle there is, and status says
        // so as rollback does (a kill before the switch leaves `previous` on the current slot).
        assert_eq!(s.previous, None, "after a kill at {step}: {s}");
        status_and_rollback_agree(&root, &format!("one bundle, killed at {step}"));
        let e = refused(runtime(&["rollback", "--root"]).arg(&root));
        assert!(
            e.contains("cannot roll back"),
            "after a kill at {step}: {e}"
        );
        assert_eq!(current_bytes(&root), old_bytes);
    }

    // A clean install switches to the other slot, and the old one becomes `previous`.
    let said = ok(&mut install_cmd(&root, &new));
    assert!(
        said.contains(&format!("slot {}", old_slot.other().name())),
        "{said}"
    );
    assert_eq!(
        install::current_bundle(&root).unwrap(),
        old_slot.other().bundle(&root)
    );
    assert_eq!(current_bytes(&root), new_bytes);
    let s = install::status(&root).unwrap();
    assert_eq!(
        (s.current, s.previous),
        (Some(old_slot.other()), Some(old_slot))
    );
    let shown = s.to_string();
    for want in [
        "claw_quadruped",
        "gaussian_mlp",
        "test-rev-2",
        "test-rev-1",
        "seed 2",
        "evaluation: 10 episodes",
        "(previous)",
    ] {
        assert!(shown.contains(want), "{want:?} missing from:\n{shown}");
    }

    // Rollback returns to the old bundle, and a second one goes forward again.
    let said = ok(runtime(&["rollback", "--root"]).arg(&root));
    assert!(
        said.contains("rolled back") && said.contains(&old_sha),
        "{said}"
    );
    assert_eq!(current_bytes(&root), old_bytes);
    assert_eq!(
        install::status(&root).unwrap().previous,
        Some(old_slot.other())
    );
    install::rollback(&root).unwrap();
    assert_eq!(current_bytes(&root), new_bytes);

    // Now with a previous bundle to lose: a third install killed at every step. Whatever each
    // kill leaves, `status` and `rollback` agree on what can be rolled back: the old bundle
    // while the install has not touched its slot, nothing once it has (it cleared the record,
    // dropped the link, or set `previous` to the current slot right before its switch).
    let third = quadruped_bundle(dir.path(), 3);
    status_and_rollback_agree(&root, "two bundles installed");
    for step in Step::ALL {
        let o = install_cmd(&root, &third)
            .env(ABORT_ENV, step.name())
            .output()
            .unwrap();
        assert_eq!(
            o.status.signal(),
            Some(SIGABRT),
            "killed at {step}: {:?}",
            out(&o)
        );
        assert_eq!(current_bytes(&root), new_bytes, "after a kill at {step}");
        let s = install::status(&root).unwrap();
        let keeps = matches!(step, Step::Verify | Step::ClearRecord);
        assert_eq!(
            s.previous,
            keeps.then_some(old_slot),
            "after a kill at {step}: {s}"
        );
        status_and_rollback_agree(&root, &format!("two bundles, killed at {step}"));
    }
}

#[test]
fn rollback_refuses_without_a_previous_bundle_or_when_it_no_longer_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let e = install::rollback(&root).unwrap_err().to_string();
    assert!(e.contains("no bundle is installed"), "{e}");
    let t = Trust::default();
    let q = robot();
    install::install(&root, &quadruped_bundle(dir.path(), 1), &t, &q).unwrap();
    let e = install::rollback(&root).unwrap_err().to_string();
    assert!(
        e.contains("cannot roll back") && e.contains("previous"),
        "{e}"
    );

    let first = install::status(&root).unwrap().current.unwrap();
    install::install(&root, &quadruped_bundle(dir.path(), 2), &t, &q).unwrap();
    // Damage the previous bundle: rollback must refuse and leave current alone.
    let prev = first.bundle(&root);
    let mut bytes = std::fs::read(&prev).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0x40;
    std::fs::write(&prev, bytes).unwrap();
    let before = snapshot(&root);
    let e = install::rollback(&root).unwrap_err().to_string();
    assert!(
        e.contains("no longer verifies") && e.contains("integrity"),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);
    let s = install::status(&root).unwrap();
    assert!(
        matches!(
            &s.slots.iter().find(|(sl, _)| *sl == first).unwrap().1,
            SlotState::Broken(_)
        ),
        "{s}"
    );
    assert!(s.to_string().contains("does not verify"), "{s}");
}

#[test]
fn bad_bundles_are_refused_with_one_clear_line_and_the_current_slot_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("root");
    ok(&mut install_cmd(&root, &quadruped_bundle(d, 1)));
    let before = snapshot(&root);

    // A flipped byte in the weights.
    let good = quadruped_bundle(d, 3);
    let corrupt = d.join("corrupt.clawrl");
    let mut bytes = std::fs::read(&good).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 0x01;
    std::fs::write(&corrupt, bytes).unwrap();
    let e = refused(&mut install_cmd(&root, &corrupt));
    assert!(
        e.contains("corrupt.clawrl") && e.contains("integrity check failed"),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);

    // A cart-pole bundle.
    let (mut m, _) = quadruped_parts(4);
    m.robot.model = "cartpole".into();
    m.observation.layout = OnboardLayout::cartpole();
    m.observation.normalizer.mean = vec![0.0; 3];
    m.observation.normalizer.var = vec![1.0; 3];
    m.action.names = vec!["push".into()];
    m.action.map = None;
    let t = vec![
        clawrl_bundle::Tensor::new("actor.0.weight", vec![3, 1], vec![0.1; 3]),
        clawrl_bundle::Tensor::new("actor.0.bias", vec![1], vec![0.0]),
    ];
    m.network.parameters = 4;
    let cartpole = write_bundle(&d.join("cartpole.clawrl"), &m, &t, None);
    let e = refused(&mut install_cmd(&root, &cartpole));
    assert!(
        e.contains("cartpole.clawrl is not for this robot: robot.model is \"cartpole\""),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);

    // Unsigned, signed by an untrusted key, with signatures required.
    let me = generate_keypair();
    let other = generate_keypair();
    let me_pub = d.join("me.pub");
    save_public_key(&me_pub, &me.verifying_key()).unwrap();
    let strict = |c: &mut Command| {
        c.arg("--require-signature").arg("--trust").arg(&me_pub);
    };
    let mut c = install_cmd(&root, &good);
    strict(&mut c);
    let e = refused(&mut c);
    assert!(
        e.contains("quadruped-3.clawrl")
            && e.contains("signature check failed")
            && e.contains("unsigned"),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);
    let theirs = signed_quadruped_bundle(d, "theirs.clawrl", 5, &other);
    let mut c = install_cmd(&root, &theirs);
    strict(&mut c);
    let e = refused(&mut c);
    assert!(
        e.contains("theirs.clawrl")
            && e.contains("signature check failed")
            && e.contains("not among the 1 trusted keys"),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);

    // A typo in the test hook is refused, not ignored.
    let e = refused(install_cmd(&root, &good).env(ABORT_ENV, "SwitchCurent"));
    assert!(e.contains(ABORT_ENV) && e.contains("SwitchCurrent"), "{e}");
    assert_eq!(snapshot(&root), before);

    // Ours installs, and status names the signer.
    let mine = signed_quadruped_bundle(d, "mine.clawrl", 6, &me);
    let mut c = install_cmd(&root, &mine);
    strict(&mut c);
    ok(&mut c);
    let shown = ok(runtime(&["status", "--root"]).arg(&root));
    assert!(
        shown.contains("Ed25519 by") && shown.contains("test-rev-6"),
        "{shown}"
    );
}

/// A change to a manifest.
type Edit = dyn Fn(&mut clawrl_bundle::Manifest);

/// `check_bundle` names the field of every kind of mismatch.
#[test]
fn check_bundle_names_the_field_that_differs() {
    let dir = tempfile::tempdir().unwrap();
    let q = robot();
    let check = |edit: &dyn Fn(&mut clawrl_bundle::Manifest), expect: &RobotSpec| {
        let (mut m, t) = quadruped_parts(7);
        edit(&mut m);
        let p = write_bundle(&dir.path().join("b.clawrl"), &m, &t, None);
        let b = clawrl_bundle::read(&p, &Trust::default()).unwrap();
        check_bundle(&b, expect).map_err(|e| e.to_string())
    };
    check(&|_| {}, &q).unwrap();
    let cases: Vec<(&str, Box<Edit>, RobotSpec)> = vec![
        (
            "robot.mjcf_sha256",
            Box::new(|_| {}),
            RobotSpec {
                mjcf_sha256: "ab".repeat(32),
                ..q.clone()
            },
        ),
        (
            "control_rate_hz is 50 Hz (the rate it was trained at), this robot's control.rate_hz is 100 Hz",
            Box::new(|_| {}),
            RobotSpec {
                control_rate_hz: 100.0,
                ..q.clone()
            },
        ),
        (
            "observation.source",
            Box::new(|m| m.observation.source = ObsSource::Privileged),
            q.clone(),
        ),
        (
            "observation.layout.entries[4] is \"tilt\"",
            Box::new(|m| m.observation.layout.entries[4].name = "tilt".into()),
            q.clone(),
        ),
        (
            "observation.layout.accelerometer_scale",
            Box::new(|m| m.observation.layout.accelerometer_scale = 1.0),
            q.clone(),
        ),
        (
            "observation.layout.joint_offset",
            Box::new(|m| m.observation.layout.joint_offset[0] = 0.1),
            q.clone(),
        ),
        (
            "action.map.joint_limits[2] (FL_knee) is [-2.6, 0]",
            Box::new(|m| m.action.map.as_mut().unwrap().joint_limits[2] = [-2.6, 0.0]),
            q.clone(),
        ),
        (
            "action.map.default_pose[1] (FL_hip_pitch)",
            Box::new(|m| m.action.map.as_mut().unwrap().default_pose[1] = 0.9),
            q.clone(),
        ),
        (
            "network.kind is \"transformer\"",
            Box::new(|m| m.network.kind = "transformer".into()),
            q.clone(),
        ),
        (
            "robot.model is \"claw_quadruped\", this robot is \"biped\"",
            Box::new(|_| {}),
            RobotSpec {
                model: "biped".into(),
                ..q.clone()
            },
        ),
    ];
    for (want, edit, expect) in cases {
        let e = check(&*edit, &expect).unwrap_err();
        assert!(
            e.contains(want) && e.contains("b.clawrl is not for this robot"),
            "{want:?} not in {e:?}"
        );
    }
    // Stricter limits are fine.
    check(
        &|m| m.action.map.as_mut().unwrap().joint_limits[2] = [-2.0, -1.0],
        &q,
    )
    .unwrap();
    // Action names in another order (the map must follow, or the manifest check refuses).
    let e = check(
        &|m| {
            m.action.names.swap(0, 1);
            m.action.map.as_mut().unwrap().joint_names.swap(0, 1);
        },
        &q,
    )
    .unwrap_err();
    assert!(e.contains("action.names[0] is \"FL_hip_pitch\""), "{e}");
    // An action map is required.
    let e = check(&|m| m.action.map = None, &q).unwrap_err();
    assert!(e.contains("action.map is missing"), "{e}");
}

#[test]
fn a_slot_link_that_was_not_written_by_install_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("current")).unwrap();
    let e = install::current_bundle(&root).unwrap_err().to_string();
    assert!(
        e.contains("current") && e.contains("expected slots/a or slots/b"),
        "{e}"
    );
}

#[test]
fn a_root_held_by_another_install_is_refused_as_busy_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (t, q) = (Trust::default(), robot());
    install::install(&root, &quadruped_bundle(dir.path(), 1), &t, &q).unwrap();
    let before = current_bytes(&root);
    // Another install holds the lock for longer than the wait.
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(root.join(".lock"))
        .unwrap();
    held.lock().unwrap();
    let e = install::install(&root, &quadruped_bundle(dir.path(), 2), &t, &q)
        .unwrap_err()
        .to_string();
    assert!(e.contains("another install or rollback is running"), "{e}");
    assert_eq!(current_bytes(&root), before);
    // Released, the next install goes through.
    drop(held);
    install::install(&root, &quadruped_bundle(dir.path(), 2), &t, &q).unwrap();
    assert_ne!(current_bytes(&root), before);
}

/// Deletes the signature entry from a bundle's safetensors header, leaving the rest as it was.
fn strip_signature(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let removed = header["__metadata__"]
        .as_object_mut()
        .unwrap()
        .remove(clawrl_bundle::KEY_SIGNATURE);
    assert!(removed.is_some(), "{} was not signed", path.display());
    let mut text = serde_json::to_vec(&header).unwrap();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + n..]);
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_stripped_signature_is_refused_when_a_trusted_key_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("root");
    let me = generate_keypair();
    let me_pub = d.join("me.pub");
    save_public_key(&me_pub, &me.verifying_key()).unwrap();
    let stripped = signed_quadruped_bundle(d, "stripped.clawrl", 4, &me);
    strip_signature(&stripped);
    // Without trusted keys it is a valid unsigned bundle: the digest does not cover the
    // signature entry.
    clawrl_bundle::read(&stripped, &Trust::default()).unwrap();
    // `--trust` without `--require-signature`: refused, nothing installed.
    let e = refused(install_cmd(&root, &stripped).arg("--trust").arg(&me_pub));
    assert!(
        e.contains("stripped.clawrl")
            && e.contains("signature check failed")
            && e.contains("unsigned"),
        "{e}"
    );
    assert!(install::current_bundle(&root).is_err());
    // The runtime config's `install.trusted_keys` reads the same way when `run` loads it.
    let mut cfg = RuntimeConfig::load(&robot_toml(), &[]).unwrap();
    cfg.install.trusted_keys = vec![me_pub.clone()];
    cfg.install.require_signature = false;
    let e = format!(
        "{:#}",
        clawrl_runtime::run::load_bundle(&cfg, &stripped).unwrap_err()
    );
    assert!(e.contains("unsigned"), "{e}");
    // Signed by the trusted key, it installs.
    let mine = signed_quadruped_bundle(d, "mine.clawrl", 4, &me);
    ok(install_cmd(&root, &mine).arg("--trust").arg(&me_pub));
}

/// The shipped config declares the MJCF this repository models the robot by, so a bundle
/// trained here fits it; a config with no real hash or another model is refused on load.
#[test]
fn the_robot_section_names_the_real_mjcf_and_refuses_a_zero_hash_or_another_model() {
    let mjcf = clawrl_bundle::file_sha256(common::repo().join("sim/models/quadruped.xml")).unwrap();
    assert_eq!(robot().mjcf_sha256, mjcf);
    for (set, key) in [
        (
            format!("robot.mjcf_sha256={:?}", "0".repeat(64)),
            "robot.mjcf_sha256",
        ),
        ("robot.mjcf_sha256=\"abc\"".to_string(), "robot.mjcf_sha256"),
        ("robot.model=\"biped\"".to_string(), "robot.model"),
        (
            "robot.max_action_scale=100.0".to_string(),
            "robot.max_action_scale",
        ),
    ] {
        let e = RuntimeConfig::load(&robot_toml(), std::slice::from_ref(&set))
            .unwrap_err()
            .to_string();
        assert!(e.contains("robot.toml") && e.contains(key), "{set}: {e}");
    }
}

/// Rollback is lost only once the previous bundle is: an install killed before it touches the
/// inactive slot (verifying the new bundle, or right before clearing the old record) leaves
/// `previous` on the old bundle, and rollback returns to it.
#[test]
fn an_install_killed_before_it_touches_the_old_slot_keeps_the_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (b1, b2, b3) = (
        quadruped_bundle(dir.path(), 1),
        quadruped_bundle(dir.path(), 2),
        quadruped_bundle(dir.path(), 3),
    );
    ok(&mut install_cmd(&root, &b1));
    ok(&mut install_cmd(&root, &b2));
    let b1_bytes = std::fs::read(&b1).unwrap();
    for step in [Step::Verify, Step::ClearRecord] {
        let o = install_cmd(&root, &b3)
            .env(ABORT_ENV, step.name())
            .output()
            .unwrap();
        assert_eq!(o.status.signal(), Some(SIGABRT), "{:?}", out(&o));
        let said = ok(runtime(&["rollback", "--root"]).arg(&root));
        assert!(said.contains("rolled back"), "killed at {step}: {said}");
        assert_eq!(current_bytes(&root), b1_bytes, "killed at {step}");
        // And forward again to b2, for the next step.
        install::rollback(&root).unwrap();
    }
}

/// Installing the bundle that is already current changes nothing: the previous bundle stays
/// the rollback target (it used to be overwritten by a second copy of the current one).
#[test]
fn installing_the_current_bundle_again_keeps_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (b1, b2) = (
        quadruped_bundle(dir.path(), 1),
        quadruped_bundle(dir.path(), 2),
    );
    ok(&mut install_cmd(&root, &b1));
    ok(&mut install_cmd(&root, &b2));
    let before = snapshot(&root);
    let said = ok(&mut install_cmd(&root, &b2));
    assert!(said.contains("already the current bundle"), "{said}");
    assert_eq!(snapshot(&root), before);
    install::rollback(&root).unwrap();
    assert_eq!(current_bytes(&root), std::fs::read(&b1).unwrap());
}

/// What an install killed mid-copy leaves in the inactive slot (the temporary copy) is gone
/// after the next install into that slot.
#[test]
fn an_install_clears_what_an_interrupted_one_left_in_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (b1, b2, b3) = (
        quadruped_bundle(dir.path(), 1),
        quadruped_bundle(dir.path(), 2),
        quadruped_bundle(dir.path(), 3),
    );
    ok(&mut install_cmd(&root, &b1));
    let inactive = install::status(&root).unwrap().current.unwrap().other();
    let o = install_cmd(&root, &b2)
        .env(ABORT_ENV, "RenameIntoSlot")
        .output()
        .unwrap();
    assert_eq!(o.status.signal(), Some(SIGABRT), "{:?}", out(&o));
    let hidden = |slot: install::Slot| -> Vec<String> {
        std::fs::read_dir(slot.dir(&root))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect()
    };
    assert!(
        !hidden(inactive).is_empty(),
        "the kill left its temporary copy"
    );
    // Also a stray file of an older version's install, and a dot file of another name
    // (which no later write of the install would rename away).
    std::fs::write(inactive.dir(&root).join(".installed.json.tmp"), b"{").unwrap();
    std::fs::write(inactive.dir(&root).join(".bundle.clawrl.old"), b"x").unwrap();
    ok(&mut install_cmd(&root, &b3));
    assert_eq!(hidden(inactive), Vec::<String>::new());
}

/// `status` and `rollback` (and `install`) act on `install.root` of the runtime config, where
/// `run` loads from, unless --root says otherwise.
#[test]
fn status_and_rollback_read_the_install_root_from_the_runtime_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("robot root");
    let text = common::shipped_config_text();
    assert!(text.contains("root = \"/var/lib/clawrl\""));
    let cfg = dir.path().join("robot.toml");
    std::fs::write(
        &cfg,
        text.replace(
            "root = \"/var/lib/clawrl\"",
            &format!("root = {:?}", root.display().to_string()),
        ),
    )
    .unwrap();
    let with_cfg = |cmd: &str| {
        let mut c = runtime(&[cmd, "--config"]);
        c.arg(&cfg);
        c
    };
    ok(with_cfg("install").arg(quadruped_bundle(dir.path(), 1)));
    ok(with_cfg("install").arg(quadruped_bundle(dir.path(), 2)));
    let shown = ok(&mut with_cfg("status"));
    assert!(
        shown.contains(&format!("clawrl bundles under {}", root.display())),
        "{shown}"
    );
    let said = ok(&mut with_cfg("rollback"));
    assert!(said.contains("rolled back"), "{said}");
}

/// The source is read once: what is verified is what is copied, so a source swapped for
/// another bundle after verification cannot be installed. A named pipe can be read only once
/// (a second open waits for a writer that never comes): install from one must finish, and
/// install the bytes that came through it.
#[test]
fn install_reads_its_source_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let b1 = quadruped_bundle(dir.path(), 1);
    let fifo = dir.path().join("bundle.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let bytes = std::fs::read(&b1).unwrap();
    let writer = {
        let (fifo, bytes) = (fifo.clone(), bytes.clone());
        std::thread::spawn(move || {
            use std::io::Write as _;
            std::fs::File::create(&fifo)
                .unwrap()
                .write_all(&bytes)
                .unwrap();
        })
    };
    let mut child = install_cmd(&root, &fifo)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("install opened its source a second time and waited for another writer");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    writer.join().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(current_bytes(&root), bytes);
}

/// The copy in the slot is read back against the verified bundle before anything points at it:
/// another bundle put in the slot between the rename and the read-back (by another writer, or
/// a disk that returned stale blocks) is refused as a mismatch even though it verifies and fits
/// the robot, with the old bundle still current and no record written for the slot. The same
/// bytes put back at that point are installed (the hook alone changes nothing).
#[test]
fn an_install_refuses_another_valid_bundle_found_in_the_slot_at_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (t, q) = (Trust::default(), robot());
    install::install(&root, &quadruped_bundle(dir.path(), 1), &t, &q).unwrap();
    let old_slot = install::status(&root).unwrap().current.unwrap();
    let old_bytes = current_bytes(&root);
    let target = old_slot.other();
    let new = quadruped_bundle(dir.path(), 2);
    // Valid on its own: it would be installed if it were the source.
    let other = quadruped_bundle(dir.path(), 3);
    check_bundle(&clawrl_bundle::read(&other, &t).unwrap(), &q).unwrap();
    assert_ne!(std::fs::read(&other).unwrap(), std::fs::read(&new).unwrap());

    let mut swapped = false;
    let e = install::install_with_hook(&root, &new, &t, &q, |s| {
        if s == Step::VerifyCopy {
            std::fs::copy(&other, target.bundle(&root)).unwrap();
            swapped = true;
        }
    })
    .expect_err("an install whose slot held another bundle at read-back succeeded");
    assert!(swapped, "the hook never ran before {}", Step::VerifyCopy);
    assert!(matches!(e, InstallError::CopyMismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("differs from the verified source")
            && msg.contains(&target.bundle(&root).display().to_string()),
        "{msg}"
    );
    let s = install::status(&root).unwrap();
    assert_eq!(s.current, Some(old_slot), "{s}");
    assert_eq!(current_bytes(&root), old_bytes);
    assert!(!target.record(&root).exists(), "{s}");
    assert!(
        matches!(
            &s.slots.iter().find(|(sl, _)| *sl == target).unwrap().1,
            SlotState::Broken(_)
        ),
        "{s}"
    );

    // The control: the verified bytes themselves written over the copy at the same point.
    let i = install::install_with_hook(&root, &new, &t, &q, |s| {
        if s == Step::VerifyCopy {
            std::fs::copy(&new, target.bundle(&root)).unwrap();
        }
    })
    .unwrap();
    assert_eq!(i.slot, target);
    assert_eq!(current_bytes(&root), std::fs::read(&new).unwrap());
}

/// A previous slot whose record no longer matches its bundle (edited, or left from another
/// bundle) is refused by rollback by name and shown as not verifying by status.
#[test]
fn a_previous_record_that_does_not_match_its_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    ok(&mut install_cmd(&root, &quadruped_bundle(dir.path(), 1)));
    let first = install::status(&root).unwrap().current.unwrap();
    ok(&mut install_cmd(&root, &quadruped_bundle(dir.path(), 2)));
    let record = first.record(&root);
    let text = std::fs::read_to_string(&record).unwrap();
    let sha = install::status(&root)
        .unwrap()
        .slots
        .iter()
        .find_map(|(s, st)| match st {
            SlotState::Installed(i) if *s == first => Some(i.record.sha256.clone()),
            _ => None,
        })
        .unwrap();
    std::fs::write(&record, text.replace(&sha, &"0".repeat(64))).unwrap();
    let before = snapshot(&root);
    let e = refused(runtime(&["rollback", "--root"]).arg(&root));
    assert!(
        e.contains("no longer verifies") && e.contains("records sha256"),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);
    let shown = ok(runtime(&["status", "--root"]).arg(&root));
    assert!(shown.contains("does not verify"), "{shown}");
}

/// The rate limit on servo targets the policy was trained under is in its manifest: a runtime
/// config whose `safety.max_joint_speed` differs refuses the bundle at install (and at run),
/// naming both; the shipped config, whose limit is the shipped task's, takes it.
#[test]
fn a_robot_config_with_another_rate_limit_refuses_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (mut m, t) = quadruped_parts(5);
    m.action.max_target_speed = Some(6.0);
    let bundle = write_bundle(&dir.path().join("b.clawrl"), &m, &t, None);
    let shipped = RuntimeConfig::load(&robot_toml(), &[]).unwrap();
    install::install(
        &dir.path().join("ok"),
        &bundle,
        &Trust::default(),
        &shipped.robot_spec(),
    )
    .unwrap();
    let slower =
        RuntimeConfig::load(&robot_toml(), &["safety.max_joint_speed=3.0".into()]).unwrap();
    let e = install::install(
        &dir.path().join("refused"),
        &bundle,
        &Trust::default(),
        &slower.robot_spec(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("action.max_target_speed is 6 rad/s")
            && e.contains("safety.max_joint_speed is 3 rad/s"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        clawrl_runtime::run::load_bundle(&slower, &bundle).unwrap_err()
    );
    assert!(e.contains("max_target_speed"), "{e}");
    // And the shipped task trains under the shipped robot's limit (the runtime links no
    // simulator: the task file's line, read as text).
    let task =
        std::fs::read_to_string(common::repo().join("configs/task/quadruped_flat.toml")).unwrap();
    let line = task
        .lines()
        .find(|l| l.starts_with("max_target_speed"))
        .unwrap();
    let trained: f64 = line
        .split('=')
        .nth(1)
        .unwrap()
        .split('#')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(trained, shipped.safety.max_joint_speed);
}

/// The states an install leaves behind in `status`: a slot that never held anything is empty,
/// a bundle without its record or a record without its bundle does not verify, and the
/// current slot's bundle is the one `current_installed` gives (not the other slot's).
#[test]
fn status_tells_an_empty_slot_from_a_half_written_one_and_picks_the_current() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (b1, b2) = (
        quadruped_bundle(dir.path(), 1),
        quadruped_bundle(dir.path(), 2),
    );
    ok(&mut install_cmd(&root, &b1));
    let first = install::status(&root).unwrap();
    let (a, b) = (first.current.unwrap(), first.current.unwrap().other());
    assert_eq!(first.slots[1], (install::Slot::B, SlotState::Empty));
    assert_eq!(a, install::Slot::A);
    let state_of_b = || install::status(&root).unwrap().slots[1].1.clone();

    // The inactive slot with a bundle and no record, then a record and no bundle.
    std::fs::copy(a.bundle(&root), b.bundle(&root)).unwrap();
    assert!(
        matches!(state_of_b(), SlotState::Broken(ref why) if why.contains("installed.json")),
        "{:?}",
        state_of_b()
    );
    std::fs::remove_file(b.bundle(&root)).unwrap();
    std::fs::copy(a.record(&root), b.record(&root)).unwrap();
    assert!(
        matches!(state_of_b(), SlotState::Broken(ref why) if why.contains("bundle.clawrl")),
        "{:?}",
        state_of_b()
    );
    std::fs::remove_file(b.record(&root)).unwrap();
    assert_eq!(state_of_b(), SlotState::Empty);

    // Two bundles: the current one is the second, in slot B, though A also verifies.
    ok(&mut install_cmd(&root, &b2));
    let s = install::status(&root).unwrap();
    assert!(matches!(s.slots[0].1, SlotState::Installed(_)), "{s}");
    let cur = s.current_installed().unwrap();
    assert_eq!((cur.slot, &cur.bundle), (b, &b.bundle(&root)));
    assert_eq!(
        std::fs::read(&cur.bundle).unwrap(),
        std::fs::read(&b2).unwrap()
    );
}

/// `current_bundle` hands `run` a regular file only: a directory or a symlink where the
/// current slot's bundle should be is refused by name.
#[test]
fn the_current_bundle_must_be_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let b1 = quadruped_bundle(dir.path(), 1);
    ok(&mut install_cmd(&root, &b1));
    let path = install::current_bundle(&root).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&b1, &path).unwrap();
    let e = install::current_bundle(&root).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: is not a regular file", path.display())
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let e = install::current_bundle(&root).unwrap_err();
    assert!(matches!(e, InstallError::Layout { .. }), "{e}");
}

/// The install drops `previous` before it clears the slot `previous` points at (a kill after
/// that leaves no link to a half-cleared slot), and keeps it when it points elsewhere.
#[test]
fn an_install_drops_previous_only_when_it_points_at_the_slot_being_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let b: Vec<PathBuf> = (1..=4).map(|s| quadruped_bundle(dir.path(), s)).collect();
    ok(&mut install_cmd(&root, &b[0]));
    ok(&mut install_cmd(&root, &b[1]));
    let s = install::status(&root).unwrap();
    let (cur, prev) = (s.current.unwrap(), s.previous.unwrap());
    assert_eq!(prev, cur.other());
    // `previous` is the slot the next install clears: dropped at DropPrevious.
    let kill = |bundle: &Path, step: Step| {
        let o = install_cmd(&root, bundle)
            .env(ABORT_ENV, step.name())
            .output()
            .unwrap();
        assert_eq!(o.status.signal(), Some(SIGABRT), "{:?}", out(&o));
    };
    kill(&b[2], Step::ClearSlot);
    let s = install::status(&root).unwrap();
    assert_eq!((s.current, s.previous), (Some(cur), None));
    // Both links on the current slot (an install killed just before its switch), then an
    // install killed after DropPrevious: `previous` does not point at the slot it clears, so
    // it stays.
    ok(&mut install_cmd(&root, &b[2]));
    let s = install::status(&root).unwrap();
    let cur = s.current.unwrap();
    assert_eq!(s.previous, Some(cur.other()));
    kill(&b[3], Step::SwitchCurrent);
    let s = install::status(&root).unwrap();
    assert_eq!((s.current, s.previous_link), (Some(cur), Some(cur)));
    // A link on the current slot is no rollback target, and status says so.
    assert_eq!(s.previous, None, "{s}");
    kill(&b[3], Step::ClearSlot);
    let s = install::status(&root).unwrap();
    assert_eq!((s.current, s.previous_link), (Some(cur), Some(cur)));
    assert_eq!(s.previous, None, "{s}");
}

/// A slot file the install cannot remove (here a directory where the record goes) stops the
/// install with the removal named, before anything under the root changed.
#[test]
fn an_install_that_cannot_clear_the_inactive_slot_stops_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (b1, b2) = (
        quadruped_bundle(dir.path(), 1),
        quadruped_bundle(dir.path(), 2),
    );
    ok(&mut install_cmd(&root, &b1));
    let inactive = install::status(&root).unwrap().current.unwrap().other();
    std::fs::create_dir(inactive.record(&root)).unwrap();
    std::fs::write(inactive.record(&root).join("x"), b"x").unwrap();
    let before = snapshot(&root);
    let e = refused(&mut install_cmd(&root, &b2));
    assert!(
        e.contains(&format!("remove {}", inactive.record(&root).display())),
        "{e}"
    );
    assert_eq!(snapshot(&root), before);
}

/// `current` that is not a symlink at all (a regular file) is an error naming it, not "nothing
/// installed": `run` must not start from an empty root that is not empty.
#[test]
fn a_slot_link_that_is_a_regular_file_is_an_error_not_an_empty_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    ok(&mut install_cmd(&root, &quadruped_bundle(dir.path(), 1)));
    let link = root.join("current");
    std::fs::remove_file(&link).unwrap();
    std::fs::write(&link, b"slots/a").unwrap();
    let e = install::current_bundle(&root).unwrap_err();
    assert!(
        matches!(
            e,
            InstallError::Io {
                what: "read symlink",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("read symlink {}: ", link.display())),
        "{e}"
    );
}

/// A lock held for less than the wait (500 ms) is waited for, not reported busy: here
/// another holder lets go after 100 ms and the install goes through; held throughout, the
/// refusal comes only after the wait.
#[test]
fn a_root_lock_released_within_the_wait_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (t, q) = (Trust::default(), robot());
    install::install(&root, &quadruped_bundle(dir.path(), 1), &t, &q).unwrap();
    let b2 = quadruped_bundle(dir.path(), 2);
    let hold = || {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(root.join(".lock"))
            .unwrap();
        f.lock().unwrap();
        f
    };
    let held = hold();
    let start = std::time::Instant::now();
    let e = install::install(&root, &b2, &t, &q).unwrap_err();
    assert!(matches!(e, InstallError::Busy { .. }), "{e}");
    assert!(
        start.elapsed() >= std::time::Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(held);
    });
    let i = install::install(&root, &b2, &t, &q).unwrap();
    releaser.join().unwrap();
    assert_eq!(
        std::fs::read(&i.bundle).unwrap(),
        std::fs::read(&b2).unwrap()
    );
}

/// The record says when the bundle was installed: the wall clock, in whole seconds.
#[test]
fn the_record_holds_the_install_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let b1 = quadruped_bundle(dir.path(), 1);
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let before = now();
    let i = install::install(&root, &b1, &Trust::default(), &robot()).unwrap();
    let after = now();
    let t = i.record.installed_unix_s;
    assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
}

/// `--require-signature` alone (no `--trust`, a config that does not require one) refuses an
/// unsigned bundle: the flag adds to the config's rule, it does not need the config to agree.
#[test]
fn require_signature_alone_refuses_an_unsigned_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let unsigned = quadruped_bundle(dir.path(), 1);
    let e = refused(install_cmd(&root, &unsigned).arg("--require-signature"));
    assert!(
        e.contains("signature check failed") && e.contains("unsigned"),
        "{e}"
    );
    let e = install::current_bundle(&root).unwrap_err();
    assert!(matches!(e, InstallError::NotInstalled { .. }), "{e}");
}

/// `clawrl-runtime status | head -1` and `install ... | head -1`: a reader that goes away
/// early ends the command quietly, with no panic and no backtrace on stderr (issue 40), and
/// the install is done all the same.
#[test]
fn a_closed_stdout_ends_install_and_status_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let bundle = quadruped_bundle(dir.path(), 1);
    let mut status = runtime(&["status", "--root"]);
    status.arg(&root);
    for mut c in [install_cmd(&root, &bundle), status] {
        // A pipe whose reading end is closed before the command starts: its first print fails
        // with EPIPE, as under `| head -1` once head has exited.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = c
            .env("RUST_BACKTRACE", "1")
            .stdout(std::process::Stdio::from(writer))
            .output()
            .unwrap();
        let (_, err) = out(&o);
        assert!(
            !err.contains("panicked") && !err.contains("backtrace") && !err.contains("Broken pipe"),
            "{c:?}: {err}"
        );
        // Killed by SIGPIPE like any Unix tool, never the panic's exit code 101.
        assert_eq!(o.status.signal(), Some(13), "{c:?}: {:?}\n{err}", o.status);
    }
    // The install was done before its print.
    assert!(install::status(&root).unwrap().current.is_some());
}
