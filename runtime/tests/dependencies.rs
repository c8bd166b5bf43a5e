//! The robot computer runs clawrl-runtime and nothing else of clawrl: no trainer, no simulator,
//! no MuJoCo, no training-side networks. This test reads the runtime's real dependency tree
//! (`cargo tree`, normal and build edges, offline, from Cargo.lock) and fails if any of those
//! appear, or if the clawrl crates in it are not exactly the known allow-list, so that adding
//! a clawrl dependency to the runtime is a decision made here and not by accident.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates the robot-side binary must never contain, by exact name.
const FORBIDDEN: &[&str] = &[
    "clawrl-sim",
    "clawrl-trainer",
    "clawrl-policy",
    "clawrl-cli",
    "candle-nn",
];

/// Any crate whose name contains this is forbidden too (mujoco-rs, mujoco-sys, ...).
const FORBIDDEN_PART: &str = "mujoco";

/// The clawrl crates the runtime's tree holds, exactly.
const ALLOWED_CLAWRL: &[&str] = &[
    "clawrl-runtime",
    "clawrl-robot",
    "clawrl-protocol",
    "clawrl-bundle",
    "clawrl-config",
];

/// Package names in `cargo tree --prefix none` output: each line is `name vX.Y.Z [(source)]
/// [(*)]`; blank lines and cargo's own messages (which do not have a version token second) are
/// skipped.
fn package_names(tree: &str) -> BTreeSet<String> {
    tree.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?;
            let is_version = version.len() > 1
                && version.starts_with('v')
                && version[1..].starts_with(|c: char| c.is_ascii_digit());
            is_version.then(|| name.to_string())
        })
        .collect()
}

/// Checks a `cargo tree --prefix none` text; the error lists every problem found.
fn check_tree(tree: &str) -> Result<(), String> {
    let names = package_names(tree);
    if names.is_empty() {
        return Err(format!("no packages in the cargo tree output:\n{tree}"));
    }
    let mut problems = Vec::new();
    for name in &names {
        if FORBIDDEN.contains(&name.as_str()) || name.contains(FORBIDDEN_PART) {
            problems.push(format!("forbidden crate {name} in the runtime's tree"));
        }
    }
    let clawrl: BTreeSet<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("clawrl-"))
        .collect();
    let allowed: BTreeSet<&str> = ALLOWED_CLAWRL.iter().copied().collect();
    for extra in clawrl.difference(&allowed) {
        problems.push(format!(
            "clawrl crate {extra} is not on the runtime's allow-list (tests/dependencies.rs)"
        ));
    }
    for absent in allowed.difference(&clawrl) {
        problems.push(format!(
            "allow-listed crate {absent} is no longer in the runtime's tree: update the list"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn runtime_tree_has_no_trainer_sim_or_mujoco() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "clawrl-runtime", "-e", "normal,build"])
        .args([
            "--prefix",
            "none",
            "--offline",
            "--locked",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("running cargo tree");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed ({}):\n{}{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    if let Err(e) = check_tree(&stdout) {
        panic!("{e}\n--- cargo tree output ---\n{stdout}");
    }
    // The tree really is the runtime's: its own root and its inference engine are in it.
    let names = package_names(&stdout);
    assert!(names.contains("clawrl-runtime") && names.contains("candle-core"));
}

// The checker itself, on made-up `cargo tree` texts: a tree that passes, and the mutations it
// must catch.

const GOOD: &str = "\
clawrl-runtime v0.1.0 (/work/main/runtime)
anyhow v1.0.100
candle-core v0.11.1
clawrl-bundle v0.1.0 (/work/main/bundle)
clawrl-config v0.1.0 (/work/main/config)
serde v1.0.228 (*)
clawrl-protocol v0.1.0 (/work/main/protocol)
clawrl-robot v0.1.0 (/work/main/robot)
";

#[test]
fn checker_passes_the_allowed_tree() {
    assert_eq!(check_tree(GOOD), Ok(()));
}

#[test]
fn checker_fails_on_the_simulator() {
    let tree = format!("{GOOD}clawrl-sim v0.1.0 (/work/main/sim)\nmujoco-rs v7.0.0\n");
    let err = check_tree(&tree).unwrap_err();
    assert!(err.contains("forbidden crate clawrl-sim"), "{err}");
    assert!(err.contains("forbidden crate mujoco-rs"), "{err}");
}

#[test]
fn checker_fails_on_each_forbidden_crate() {
    for name in FORBIDDEN.iter().chain(&["mujoco-sys"]) {
        let tree = format!("{GOOD}{name} v0.1.0 (*)\n");
        let err = check_tree(&tree).unwrap_err();
        assert!(
            err.contains(&format!("forbidden crate {name}")),
            "{name}: {err}"
        );
    }
}

#[test]
fn checker_fails_on_an_unlisted_clawrl_crate() {
    let tree = format!("{GOOD}clawrl-onnx v0.1.0 (/work/main/onnx)\n");
    let err = check_tree(&tree).unwrap_err();
    assert!(
        err.contains("clawrl-onnx is not on the runtime's allow-list"),
        "{err}"
    );
}

#[test]
fn checker_fails_when_an_allowed_crate_goes() {
    let tree = GOOD.replace("clawrl-config v0.1.0 (/work/main/config)\n", "");
    let err = check_tree(&tree).unwrap_err();
    assert!(err.contains("clawrl-config is no longer"), "{err}");
}

#[test]
fn checker_fails_on_empty_output() {
    assert!(check_tree("").is_err());
    assert!(check_tree("warning: something\n").is_err());
}
