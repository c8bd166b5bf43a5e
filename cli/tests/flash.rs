//! `clawrl flash BUNDLE --to DIR`: the local case of putting a bundle on the robot (the same
//! A/B install the robot runs), as a user runs it. The remote case (one ssh and a shell
//! script) is checked by the unit tests in `cli/src/cmd/flash.rs`, the script run by a real
//! shell.
#[path = "../../runtime/tests/common/mod.rs"]
mod bundles;
mod common;

use clawrl_runtime::install;
use common::{clawrl, fails, ok, tmp};

/// `clawrl flash` checking against the shipped runtime config's robot.
fn flash() -> std::process::Command {
    let mut c = clawrl(&["flash", "--robot"]);
    c.arg(common::repo().join("configs/runtime/robot.toml"));
    c
}

#[test]
fn flash_into_a_directory_installs_switches_and_keeps_the_old_bundle_for_rollback() {
    let dir = tmp("flash-local");
    let root = dir.join("robot");
    std::fs::create_dir_all(&root).unwrap();
    let first = bundles::quadruped_bundle(&dir, 1);
    let second = bundles::quadruped_bundle(&dir, 2);

    let (out, _) = ok(flash().arg(&first).arg("--to").arg(&root));
    assert!(out.contains("installed into slot a"), "{out}");
    assert_eq!(
        std::fs::read(install::current_bundle(&root).unwrap()).unwrap(),
        std::fs::read(&first).unwrap()
    );

    // `dir:` names the same root; the second bundle goes into the other slot.
    let to = format!("dir:{}", root.display());
    let (out, _) = ok(flash().arg(&second).args(["--to", &to]));
    assert!(
        out.contains("installed into slot b") && out.contains("test-rev-2"),
        "{out}"
    );
    let s = install::status(&root).unwrap();
    assert_eq!(
        (s.current, s.previous),
        (Some(install::Slot::B), Some(install::Slot::A))
    );
    install::rollback(&root).unwrap();
    assert_eq!(
        std::fs::read(install::current_bundle(&root).unwrap()).unwrap(),
        std::fs::read(&first).unwrap()
    );

    // `dir:` creates a root that does not exist yet.
    let fresh = dir.join("fresh");
    ok(flash()
        .arg(&first)
        .arg("--to")
        .arg(format!("dir:{}", fresh.display())));
    assert!(install::current_bundle(&fresh).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flash_refuses_a_bad_bundle_or_target_with_one_clear_line_and_touches_nothing() {
    let dir = tmp("flash-refusals");
    let root = dir.join("robot");
    std::fs::create_dir_all(&root).unwrap();
    let good = bundles::quadruped_bundle(&dir, 1);
    ok(flash().arg(&good).arg("--to").arg(&root));
    let current = std::fs::read(install::current_bundle(&root).unwrap()).unwrap();

    let mut bytes = std::fs::read(bundles::quadruped_bundle(&dir, 2)).unwrap();
    let n = bytes.len();
    bytes[n - 4] ^= 0x01;
    let corrupt = dir.join("corrupt.clawrl");
    std::fs::write(&corrupt, bytes).unwrap();
    let err = fails(flash().arg(&corrupt).arg("--to").arg(&root));
    assert!(
        err.contains("corrupt.clawrl") && err.contains("integrity check failed"),
        "{err}"
    );

    let (mut m, t) = bundles::quadruped_parts(3);
    m.network.kind = "transformer".into();
    let odd = bundles::write_bundle(&dir.join("odd.clawrl"), &m, &t, None);
    let err = fails(flash().arg(&odd).arg("--to").arg(&root));
    assert!(
        err.contains("odd.clawrl is not for this robot: network.kind"),
        "{err}"
    );

    let err = fails(flash().arg(&good).args(["--to", "robot-without-user"]));
    assert!(
        err.contains("neither an existing directory nor user@host"),
        "{err}"
    );

    // A robot-side key given for a directory would be ignored: refused instead.
    let err = fails(
        flash()
            .arg(bundles::quadruped_bundle(&dir, 4))
            .arg("--to")
            .arg(&root)
            .args(["--remote-trust", "/etc/clawrl/me.pub"]),
    );
    assert!(
        err.contains("--remote-trust") && err.contains("--trust"),
        "{err}"
    );
    // So would a robot-side config.
    let err = fails(
        flash()
            .arg(bundles::quadruped_bundle(&dir, 4))
            .arg("--to")
            .arg(&root)
            .args(["--remote-config", "/etc/clawrl/robot.toml"]),
    );
    assert!(
        err.contains("--remote-config") && err.contains("--robot"),
        "{err}"
    );

    assert_eq!(
        std::fs::read(install::current_bundle(&root).unwrap()).unwrap(),
        current
    );
    assert_eq!(install::status(&root).unwrap().previous, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bundle_without_its_signature_is_refused_by_verify_and_flash_when_a_key_is_trusted() {
    let dir = tmp("flash-stripped");
    let root = dir.join("robot");
    std::fs::create_dir_all(&root).unwrap();
    ok(clawrl(&["keygen", "--out"]).arg(dir.join("me")));
    let pk = dir.join("me.pub");
    // What a signed bundle is once its signature entry is deleted: the digest does not cover
    // the entry, so it is the same bundle unsigned.
    let stripped = bundles::quadruped_bundle(&dir, 1);
    ok(clawrl(&["verify"])
        .current_dir(common::repo())
        .arg(&stripped));
    let err = fails(clawrl(&["verify", "--trust"]).arg(&pk).arg(&stripped));
    assert!(
        err.contains("signature check failed") && err.contains("unsigned"),
        "{err}"
    );
    let err = fails(
        flash()
            .arg("--trust")
            .arg(&pk)
            .arg(&stripped)
            .arg("--to")
            .arg(&root),
    );
    assert!(
        err.contains("signature check failed") && err.contains("unsigned"),
        "{err}"
    );
    assert!(install::current_bundle(&root).is_err());
}
