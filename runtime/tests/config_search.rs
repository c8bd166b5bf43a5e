//! Where `clawrl-runtime` finds its config when `--config` is not given, run outside the
//! repository: `CLAWRL_RUNTIME_CONFIG`, then `/etc/clawrl/robot.toml`, then
//! `configs/runtime/robot.toml` relative to the current directory; with none there, an error
//! that names every path tried and how to give one. Relative paths inside the config resolve
//! against the config file's directory, not the current one.
mod common;

use std::path::Path;
use std::process::{Command, Output};

use clawrl_runtime::config::{CONFIG_ENV, REPO_CONFIG, SYSTEM_CONFIG};

/// The binary run in `cwd`, with no config variable and no abort hook.
fn runtime(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"));
    c.current_dir(cwd)
        .env_remove(CONFIG_ENV)
        .env_remove(clawrl_runtime::install::ABORT_ENV)
        .args(args);
    c
}

fn run(c: &mut Command) -> (Output, String, String) {
    let o = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, stdout, stderr)
}

/// `None` (with a message) where this machine has a system config that would be found.
fn no_system_config() -> Option<()> {
    if Path::new(SYSTEM_CONFIG).exists() {
        eprintln!("skipped: {SYSTEM_CONFIG} exists on this machine, so it would be found");
        return None;
    }
    Some(())
}

#[test]
fn without_a_config_anywhere_every_subcommand_that_needs_one_names_the_paths_it_tried() {
    if no_system_config().is_none() {
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let cwd = empty.path();
    for args in [
        &["status"][..],
        &["rollback"],
        &["install", "student.clawrl"],
        &["run", "--seconds", "0.1"],
    ] {
        // Unset, and set to nothing (the same: not given).
        for set_empty in [false, true] {
            let mut c = runtime(cwd, args);
            if set_empty {
                c.env(CONFIG_ENV, "");
            }
            let (o, _, stderr) = run(&mut c);
            let when = format!("{args:?} ({CONFIG_ENV} empty: {set_empty})");
            assert_eq!(o.status.code(), Some(1), "{when}: {stderr}");
            let line = stderr.trim_end();
            assert!(
                line.starts_with("error: ") && !line.contains('\n'),
                "{when}: one error line expected: {stderr}"
            );
            let system = line.find(SYSTEM_CONFIG);
            let repo = line.find(REPO_CONFIG);
            assert!(
                system.is_some() && repo.is_some() && system < repo,
                "{when}: both defaults, in order: {line}"
            );
            assert!(
                line.contains(&cwd.canonicalize().unwrap().display().to_string())
                    || line.contains(&cwd.display().to_string()),
                "{when}: the directory the relative default was looked for in: {line}"
            );
            assert!(
                line.contains("--config") && line.contains(CONFIG_ENV),
                "{when}: how to give one: {line}"
            );
        }
    }
}

/// A copy of the shipped config in its own directory, with the install root and telemetry
/// directory relative (to that directory).
fn config_elsewhere(dir: &Path) -> std::path::PathBuf {
    let text = common::shipped_config_text();
    let (root, log) = ("root = \"/var/lib/clawrl\"", "dir = \"/var/log/clawrl\"");
    assert!(text.contains(root) && text.contains(log), "{text}");
    let text = text
        .replace(root, "root = \"slots\"")
        .replace(log, "dir = \"logs\"");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("robot.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_config_named_by_the_environment_is_found_and_its_relative_paths_are_its_own() {
    if no_system_config().is_none() {
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let cwd = empty.path();
    let elsewhere = tempfile::tempdir().unwrap();
    let cfg_dir = elsewhere.path().join("etc");
    let cfg = config_elsewhere(&cfg_dir);
    let slots = cfg_dir.join("slots");

    // Past config loading: status looks for bundles under the config's install root,
    // resolved against the config's directory (not the empty current one).
    let (o, _, stderr) = run(runtime(cwd, &["status"]).env(CONFIG_ENV, &cfg));
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no bundle is installed under")
            && stderr.contains(&slots.display().to_string()),
        "{stderr}"
    );

    // Install, status and rollback all act there.
    let bundles = tempfile::tempdir().unwrap();
    for seed in [1, 2] {
        let b = common::quadruped_bundle(bundles.path(), seed);
        let (o, stdout, stderr) = run(runtime(cwd, &["install"]).arg(&b).env(CONFIG_ENV, &cfg));
        assert!(o.status.success(), "{stdout}\n{stderr}");
    }
    let (o, stdout, stderr) = run(runtime(cwd, &["status"]).env(CONFIG_ENV, &cfg));
    assert!(o.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("clawrl bundles under {}", slots.display())),
        "{stdout}"
    );
    let (o, stdout, stderr) = run(runtime(cwd, &["rollback"]).env(CONFIG_ENV, &cfg));
    assert!(
        o.status.success() && stdout.contains("rolled back"),
        "{stdout}\n{stderr}"
    );
    assert!(
        std::fs::read_dir(cwd).unwrap().next().is_none(),
        "wrote into the current directory"
    );

    // `--config` comes before the variable.
    let (o, stdout, stderr) = run(runtime(cwd, &["status", "--config"])
        .arg(&cfg)
        .env(CONFIG_ENV, cwd.join("missing.toml")));
    assert!(o.status.success(), "{stdout}\n{stderr}");

    // A variable naming a missing file is an error naming it (not passed over for a default).
    let missing = cwd.join("missing.toml");
    let (o, _, stderr) = run(runtime(cwd, &["status"]).env(CONFIG_ENV, &missing));
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&missing.display().to_string()) && stderr.contains(CONFIG_ENV),
        "{stderr}"
    );
}

/// The repository default, relative to the current directory, is still found (last), so the
/// repository's scripts keep working from its root.
#[test]
fn the_repository_default_is_found_from_the_repository_root() {
    if no_system_config().is_none() {
        return;
    }
    let (o, _, stderr) = run(&mut runtime(&common::repo(), &["status"]));
    assert!(
        !stderr.contains("no runtime config found") && !stderr.contains("cannot read"),
        "{stderr}"
    );
    // Its install root is /var/lib/clawrl: status either shows it or says nothing is there.
    assert!(
        o.status.success() || stderr.contains("/var/lib/clawrl"),
        "{stderr}"
    );
}

/// The shipped config copied as it is to another folder (as to /etc/clawrl): its relative
/// `robot.description` is not there, and the error says so and what to do.
#[test]
fn a_copied_config_without_its_description_says_what_to_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("robot.toml");
    std::fs::copy(common::repo().join(REPO_CONFIG), &path).unwrap();
    let e = clawrl_runtime::config::RuntimeConfig::load(&path, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key `robot.description`")
            && e.contains("does not exist")
            && e.contains("copy the robot's description"),
        "{e}"
    );
    // Copied beside it and named there, it loads.
    std::fs::copy(
        common::repo().join("robots/claw_quadruped/robot.toml"),
        dir.path().join("claw_quadruped.toml"),
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "\"../../robots/claw_quadruped/robot.toml\"",
        "\"claw_quadruped.toml\"",
    );
    std::fs::write(&path, text).unwrap();
    let c = clawrl_runtime::config::RuntimeConfig::load(&path, &[]).unwrap();
    assert_eq!(c.robot_spec().description.unwrap().servo.len(), 16);
    // A description of another robot is refused, naming both.
    let other = std::fs::read_to_string(dir.path().join("claw_quadruped.toml"))
        .unwrap()
        .replace("name = \"claw_quadruped\"", "name = \"hexapod\"");
    std::fs::write(dir.path().join("claw_quadruped.toml"), other).unwrap();
    let e = clawrl_runtime::config::RuntimeConfig::load(&path, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"hexapod\"") && e.contains("robot.model is \"claw_quadruped\""),
        "{e}"
    );
    // A servo renamed in the description: the runtime would not know its ID; refused by name.
    let renamed = std::fs::read_to_string(common::repo().join("robots/claw_quadruped/robot.toml"))
        .unwrap()
        .replacen("name = \"RL_knee\"", "name = \"RL_shin\"", 1);
    std::fs::write(dir.path().join("claw_quadruped.toml"), renamed).unwrap();
    let e = clawrl_runtime::config::RuntimeConfig::load(&path, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key `robot.description`") && e.contains("has no servo \"RL_knee\""),
        "{e}"
    );
}
