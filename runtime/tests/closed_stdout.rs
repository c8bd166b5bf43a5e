//! `clawrl-runtime SUBCOMMAND | head -1` (issue 40): a reader that has gone before the command
//! prints ends every subcommand that prints quietly, killed by SIGPIPE like any Unix tool: no
//! panic in `println!`, no "Broken pipe" backtrace on stderr.
//!
//! Every subcommand's `--help` is walked, and each one that prints real output runs once with
//! valid arguments (each well under a second). Left out (its `--help` is still walked):
//! - `run`: it drives the robot until stopped and ignores SIGPIPE on purpose
//!   (runtime/src/main.rs), so that a log reader that goes away cannot cut its stop sequence
//!   short; it needs a board on a serial port (runtime/tests/robot_loop.rs runs it on a
//!   simulated one).
//! - `bench --python`: it needs a Python interpreter; `--lateness`, `--cycle` and
//!   `--inference` cover bench's printing.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::install::ABORT_ENV;
use clawrl_runtime::telemetry::{Header, LogWriter, RECORD_LEN};

/// The repository root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The student bundle shipped for the HIL tests: fits the shipped runtime config.
fn student() -> PathBuf {
    repo().join("hil-tests/fixtures/student.clawrl")
}

/// A second bundle that fits it, so that a rollback has a previous slot to go back to.
fn slope_student() -> PathBuf {
    repo().join("hil-tests/fixtures/slope_student.clawrl")
}

/// The shipped runtime config, which says what the robot is.
fn robot_toml() -> PathBuf {
    repo().join("configs/runtime/robot.toml")
}

/// `clawrl-runtime ARGS` from the repository root.
fn runtime<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"));
    c.current_dir(repo())
        .env_remove(ABORT_ENV)
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

/// The subcommands as `clawrl-runtime --help` lists them (`help` aside).
const SUBCOMMANDS: &[&str] = &[
    "install",
    "rollback",
    "status",
    "run",
    "replay",
    "mcap",
    "check-wiring",
    "self-test",
    "bench",
];

#[test]
fn help_and_version_of_every_subcommand() {
    ends_quietly(runtime(["--help"]));
    ends_quietly(runtime(["--version"]));
    ends_quietly(runtime(["help"]));
    for s in SUBCOMMANDS {
        ends_quietly(runtime([*s, "--help"]));
        ends_quietly(runtime(["help", *s]));
    }
}

#[test]
fn install_twice_status_and_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let install = |bundle: PathBuf| {
        let mut c = runtime(["install"]);
        c.arg(bundle)
            .arg("--root")
            .arg(&root)
            .arg("--config")
            .arg(robot_toml());
        c
    };
    // The install is done before its print, so the second one, of another bundle, fills the
    // other slot and a rollback has somewhere to go.
    ends_quietly(install(student()));
    ends_quietly(install(slope_student()));
    let mut status = runtime(["status", "--root"]);
    status.arg(&root);
    ends_quietly(status);
    let mut rollback = runtime(["rollback", "--root"]);
    rollback.arg(&root);
    ends_quietly(rollback);
}

#[test]
fn replay() {
    // A closed log of no cycles, recorded with the fixture bundle.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.log");
    let cfg = RuntimeConfig::load(&robot_toml(), &[]).unwrap();
    let header = Header {
        bundle: student(),
        bundle_sha256: clawrl_bundle::file_sha256(student()).unwrap(),
        safety: cfg.safety(None).unwrap(),
        record_len: RECORD_LEN,
    };
    LogWriter::create(&log, &header).unwrap().finish().unwrap();
    let mut c = runtime(["replay"]);
    c.arg(&log);
    ends_quietly(c);
    let mut c = runtime(["mcap"]);
    c.arg(&log);
    ends_quietly(c);
}

#[test]
fn self_test() {
    ends_quietly(runtime(["self-test"]));
}

#[test]
fn bench_inference_cycle_and_lateness() {
    ends_quietly(runtime(["bench", "--inference", "--iterations", "10"]));
    let mut c = runtime(["bench", "--inference", "--iterations", "10", "--bundle"]);
    c.arg(student());
    ends_quietly(c);
    ends_quietly(runtime(["bench", "--cycle", "--iterations", "10"]));
    ends_quietly(runtime([
        "bench",
        "--lateness",
        "--seconds",
        "0.2",
        "--rates",
        "50",
    ]));
}
