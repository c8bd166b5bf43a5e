//! `clawrl SUBCOMMAND | head -1` (issue 40): a reader that has gone before the command prints
//! ends every subcommand that prints quietly, killed by SIGPIPE like any Unix tool: no panic in
//! `println!`, no "Broken pipe" backtrace on stderr.
//!
//! Every subcommand's `--help` is walked, and each one that prints real output and is cheap
//! (well under 3 s here) runs once with valid arguments. Left out, for their cost or their
//! nature (their `--help` is still walked):
//! - `train`, `distill`: they train (minutes); their prints go through the same `println!`.
//! - `serve`: a server that runs until stopped, and ignores SIGPIPE itself on purpose
//!   (cli/src/cmd/serve.rs) so that a client that goes away cannot kill it.
//! - `endpoint check`: needs a running policy server (configs/endpoint.toml).
//! - `export`: needs a distilled student on the onboard observation; the only policies in the
//!   tree (assets/pretrained/) are privileged teachers, which it refuses, and a student comes
//!   only from `distill`.
//! - `hil` with scenarios: tens of seconds of MuJoCo per scenario; `hil --scenario list`
//!   covers its printing.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root, where relative paths such as `configs/...` resolve.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh, empty directory under the system temp dir.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "clawrl-cli-closed-stdout-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The student bundle shipped for the HIL tests: fits configs/runtime/robot.toml.
const STUDENT: &str = "hil-tests/fixtures/student.clawrl";

/// `clawrl ARGS` from the repository root, with one candle thread.
fn clawrl<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawrl"));
    c.current_dir(repo())
        .env("RAYON_NUM_THREADS", "1")
        .env("RUST_BACKTRACE", "1")
        .args(args);
    c
}

/// Runs `c` with stdout on a pipe whose reading end is closed before the command starts, so
/// its first print fails with EPIPE, as under `| head -1` once head has exited. Asserts a quiet
/// end: no panic, no backtrace, no "Broken pipe" on stderr, and killed by SIGPIPE (never the
/// panic's exit code 101, nor an error exit).
fn ends_quietly(mut c: Command) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = c
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("backtrace") && !err.contains("Broken pipe"),
        "{c:?}:\n{err}"
    );
    assert_eq!(o.status.signal(), Some(13), "{c:?}: {:?}\n{err}", o.status);
}

/// The subcommands as `clawrl --help` lists them (`help` aside).
const SUBCOMMANDS: &[&str] = &[
    "train",
    "distill",
    "eval",
    "compare",
    "export",
    "verify",
    "keygen",
    "flash",
    "hil",
    "serve",
    "endpoint",
    "plot",
    "simulate",
    "bench",
    "slope-curve",
    "robot",
    "teleop",
];

#[test]
fn help_and_version_of_every_subcommand() {
    ends_quietly(clawrl(["--help"]));
    ends_quietly(clawrl(["--version"]));
    ends_quietly(clawrl(["help"]));
    for s in SUBCOMMANDS {
        ends_quietly(clawrl([*s, "--help"]));
        ends_quietly(clawrl(["help", *s]));
    }
    ends_quietly(clawrl(["endpoint", "check", "--help"]));
    ends_quietly(clawrl(["endpoint", "help"]));
}

#[test]
fn verify() {
    ends_quietly(clawrl(["verify", STUDENT]));
}

#[test]
fn robot_check_and_new() {
    ends_quietly(clawrl(["robot", "check", "robots/claw_quadruped"]));
    let dir = tmp("robot-new");
    let mut c = clawrl(["robot", "new", "--mjcf", "robots/pup12/pup12.xml", "--out"]);
    c.arg(dir.join("pup"));
    ends_quietly(c);
    // It wrote the description before its one line went nowhere.
    assert!(dir.join("pup/robot.toml").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keygen() {
    let dir = tmp("keygen");
    let mut c = clawrl(["keygen", "--out"]);
    c.arg(dir.join("me"));
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flash_into_a_local_directory() {
    let dir = tmp("flash");
    let mut c = clawrl(["flash", STUDENT, "--to"]);
    c.arg(&dir);
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hil_scenario_list() {
    ends_quietly(clawrl(["hil", "--scenario", "list"]));
}

#[test]
fn plot() {
    let dir = tmp("plot");
    std::fs::write(
        dir.join("metrics.csv"),
        "iteration,env_steps,wall_s,mean_return\n1,100,0.5,1.0\n2,200,1.0,2.0\n",
    )
    .unwrap();
    let mut c = clawrl(["plot", "--run"]);
    c.arg(&dir).arg("--out").arg(dir.join("curves.png"));
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulate() {
    ends_quietly(clawrl(["simulate", "--seconds", "0.2"]));
}

#[test]
fn bench_training_loop_and_inference() {
    ends_quietly(clawrl(["bench", "--iterations", "1", "--repeats", "1"]));
    ends_quietly(clawrl(["bench", "--inference", STUDENT]));
}

#[test]
fn eval() {
    let dir = tmp("eval");
    let mut c = clawrl([
        "eval",
        "--policy",
        STUDENT,
        "--episodes",
        "1",
        "--num-envs",
        "1",
        "--threads",
        "1",
        "--out",
    ]);
    c.arg(&dir);
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare() {
    let dir = tmp("compare");
    let mut c = clawrl([
        "compare",
        "--teacher",
        "assets/pretrained/quadruped_flat_ppo",
        "--student",
        STUDENT,
        "--episodes",
        "1",
        "--num-envs",
        "1",
        "--threads",
        "1",
        "--out",
    ]);
    c.arg(&dir);
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slope_curve() {
    let dir = tmp("slope-curve");
    let mut c = clawrl([
        "slope-curve",
        "--policy",
        STUDENT,
        "--episodes",
        "1",
        "--tilts",
        "0",
        "--frictions",
        "1.0",
        "--threads",
        "1",
        "--out",
    ]);
    c.arg(&dir);
    ends_quietly(c);
    let _ = std::fs::remove_dir_all(&dir);
}
