//! An installed `clawrl` runs outside the source tree: the layout scripts/install makes
//! (PREFIX/bin/clawrl, PREFIX/lib/libmujoco.so.*, PREFIX/share/clawrl/...) is emulated with the
//! test build of the binary, and the binary is run with the source tree hidden (a tmpfs mounted
//! over it in a private mount namespace), no CLAWRL_ROOT, no LD_LIBRARY_PATH, from an empty
//! directory. So MuJoCo must come through the rpath `$ORIGIN/../lib` (cli/build.rs) and the
//! robot's files through `<folder of the executable>/../share/clawrl` (clawrl_sim::search_roots).
//! Where mount namespaces are not allowed (not root, a locked-down container) the test says so
//! and passes without running.
mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::{text, tmp};

/// The files scripts/install copies into PREFIX/share/clawrl: its `SHARE=(...)` line, so the
/// emulated install cannot drift from the real one.
fn share_items(root: &Path) -> Vec<String> {
    let script = fs::read_to_string(root.join("scripts/install")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("SHARE=("))
        .expect("scripts/install has a SHARE=(...) line");
    let items: Vec<String> = line
        .trim_end()
        .strip_suffix(')')
        .expect("SHARE=(...) on one line")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(items.iter().any(|i| i == "sim/models"), "{items:?}");
    items
}

/// Copies a file, a symlink (as a symlink) or a folder (recursively).
fn copy(from: &Path, to: &Path) {
    let meta = fs::symlink_metadata(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from).unwrap(), to).unwrap();
    } else if meta.is_dir() {
        fs::create_dir_all(to).unwrap();
        for entry in fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        fs::copy(from, to)
            .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
    }
}

/// PREFIX as scripts/install lays it out, with the test build of `clawrl`.
fn emulate_install(root: &Path, prefix: &Path) {
    copy(
        Path::new(env!("CARGO_BIN_EXE_clawrl")),
        &prefix.join("bin/clawrl"),
    );
    // As scripts/install: the versioned library (libmujoco.so is a linker script, build only).
    let libs = root.join("third_party/mujoco/lib");
    for entry in fs::read_dir(&libs).unwrap() {
        let name = entry.unwrap().file_name();
        if name.to_string_lossy().starts_with("libmujoco.so.") {
            copy(&libs.join(&name), &prefix.join("lib").join(&name));
        }
    }
    for item in share_items(root) {
        copy(&root.join(&item), &prefix.join("share/clawrl").join(&item));
    }
}

/// `sh -c SCRIPT` in a private mount namespace with a tmpfs over the source tree `hide`; the
/// script runs with `$@` = `args` after checking that the tree is gone.
fn hidden(hide: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("unshare");
    c.args([
        "-m",
        "sh",
        "-c",
        r#"mount -t tmpfs none "$1" && [ ! -e "$1/Cargo.toml" ] && shift && exec "$@""#,
        "sh",
    ])
    .arg(hide)
    .args(args)
    .current_dir(cwd)
    .env_remove("CLAWRL_ROOT")
    .env_remove("LD_LIBRARY_PATH")
    .env("RAYON_NUM_THREADS", "1");
    c
}

fn out(c: &mut Command) -> Output {
    c.output()
        .unwrap_or_else(|e| panic!("cannot start {c:?}: {e}"))
}

fn ok(c: &mut Command) -> String {
    let o = out(c);
    let (stdout, stderr) = text(&o);
    assert!(
        o.status.success(),
        "failed: {c:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

#[test]
fn installed_clawrl_runs_without_the_source_tree() {
    // As clawrl_sim::repo_root() names it in errors.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let base = tmp("installed").canonicalize().unwrap();
    if base.starts_with(root.canonicalize().unwrap()) {
        println!(
            "SKIPPED: the temp dir {} lies inside the source tree, which the test hides",
            base.display()
        );
        return;
    }
    // Can this process hide the tree? (needs root or a user namespace with mount rights)
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", r#"mount -t tmpfs none "$1""#, "sh"])
        .arg(root)
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "SKIPPED: cannot hide the source tree with `unshare -m` + `mount -t tmpfs` \
                 (needs root / CAP_SYS_ADMIN): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            println!("SKIPPED: cannot run `unshare` (util-linux) to hide the source tree: {e}");
            return;
        }
    }

    let prefix = base.join("prefix");
    emulate_install(root, &prefix);
    let cwd = base.join("elsewhere");
    fs::create_dir_all(&cwd).unwrap();
    let bin = prefix.join("bin/clawrl");
    let bin = bin.to_str().unwrap();
    let share = prefix.join("share/clawrl");

    // simulate loads the quadruped's MJCF and task config from the share folder and steps MuJoCo
    // (loaded through $ORIGIN/../lib: the build tree's copy is hidden).
    let report = ok(&mut hidden(
        root,
        &cwd,
        &[bin, "simulate", "--seconds", "0.1"],
    ));
    let model = share.join("sim/models/quadruped.xml");
    assert!(
        report.contains(&model.display().to_string()) && report.contains("physics steps"),
        "{report}"
    );

    // eval of the shipped teacher: policy, its config and the task from the install.
    let policy = share.join("assets/pretrained/quadruped_flat_ppo");
    let policy = policy.to_str().unwrap();
    let args = [bin, "eval", "--policy", policy, "--episodes", "1"];
    let args = [&args[..], &["--num-envs", "1", "--threads", "1"]].concat();
    let report = ok(&mut hidden(root, &cwd, &args));
    assert!(report.contains("mean return"), "{report}");
    assert!(
        cwd.join("runs/eval/quadruped_flat_ppo/eval.toml").is_file(),
        "eval writes under the current directory, the install stays as shipped"
    );

    // verify checks a bundle against the robot's runtime config by default: the shipped one,
    // found in the install, not under the current directory.
    let bundle = base.join("student.clawrl");
    fs::copy(root.join("hil-tests/fixtures/student.clawrl"), &bundle).unwrap();
    let report = ok(&mut hidden(
        root,
        &cwd,
        &[bin, "verify", bundle.to_str().unwrap()],
    ));
    assert!(report.contains("robot check: fits"), "{report}");

    // The robot's description, and the MJCF it names relative to itself, from the install.
    let report = ok(&mut hidden(
        root,
        &cwd,
        &[bin, "robot", "check", "robots/claw_quadruped"],
    ));
    assert!(
        report.contains(
            &share
                .join("robots/claw_quadruped/robot.toml")
                .display()
                .to_string()
        ) && report.contains("OK:"),
        "{report}"
    );

    // Without the share folder: an error that names where it looked, not a bare ENOENT.
    fs::rename(&share, prefix.join("share/clawrl-gone")).unwrap();
    let o = out(&mut hidden(
        root,
        &cwd,
        &[bin, "simulate", "--seconds", "0.1"],
    ));
    let (stdout, stderr) = text(&o);
    assert!(
        !o.status.success(),
        "should have failed:\n{stdout}\n{stderr}"
    );
    for needle in [
        "configs/task/quadruped_flat.toml".to_string(),
        format!(
            "the current directory ({})",
            cwd.canonicalize().unwrap().display()
        ),
        format!("({}, absent)", share.display()),
        format!("built in ({})", root.display()),
        "CLAWRL_ROOT".to_string(),
    ] {
        assert!(stderr.contains(&needle), "no `{needle}` in:\n{stderr}");
    }

    let _ = fs::remove_dir_all(&base);
}
