//! The operator's Ctrl-C against the real `clawrl-runtime run` process, with a second reader
//! on the board's serial port (a stray `cat`; root opens a port despite TIOCEXCL) taking the
//! board's answers from under the runtime's reads. SIGINT still ends the process within
//! seconds: the serial thread once blocked in `read()` for good, and the stop waited on it.
//! The in-process version (the stop flag set directly) is in robot_loop.rs.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_runtime::config::RuntimeConfig;

/// How long the process may take to end after SIGINT.
const STOP_WITHIN: Duration = Duration::from_secs(5);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn robot_toml() -> PathBuf {
    repo().join("configs/runtime/robot.toml")
}

/// Sends `sig` to our own child.
fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child process, which has not been reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn sigint_ends_the_run_process_with_a_second_reader_on_the_port() {
    let dir = tempfile::tempdir().unwrap();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let port = board.path().to_string();
    let sets = common::quick_overrides(&port, dir.path());
    let cfg = RuntimeConfig::load(&robot_toml(), &sets).unwrap();
    let bundle = common::installed_bundle(&cfg, dir.path());

    // stderr goes to a file: nobody drains a pipe while the test sleeps.
    let err_path = dir.path().join("runtime.stderr");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"));
    cmd.arg("run")
        .arg("--config")
        .arg(robot_toml())
        .arg("--bundle")
        .arg(&bundle);
    for s in &sets {
        cmd.arg("--set").arg(s);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&err_path).unwrap_or_default();

    // It stands up.
    std::thread::sleep(Duration::from_millis(1500));
    if let Some(status) = child.try_wait().unwrap() {
        panic!(
            "the runtime ended before the stop ({status}):\n{}",
            stderr()
        );
    }

    // The thief: a second reader on the board's port, reading greedily forever.
    let mut thief = match std::fs::File::open(&port) {
        Ok(f) => f,
        Err(e) => {
            // Not root: TIOCEXCL keeps the second reader out, which is the point of it.
            signal(&child, libc::SIGKILL);
            let _ = child.wait();
            eprintln!("skipped: a second reader cannot open the port {port} ({e})");
            return;
        }
    };
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while thief.read(&mut buf).is_ok() {}
    });
    std::thread::sleep(Duration::from_secs(2));

    signal(&child, libc::SIGINT);
    let asked = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if asked.elapsed() >= STOP_WITHIN {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = asked.elapsed();
    match status {
        Some(status) => eprintln!(
            "ended {elapsed:?} after SIGINT, {status}; last of its stderr:\n{}",
            tail(&stderr(), 8)
        ),
        None => {
            signal(&child, libc::SIGKILL);
            let killed = child.wait().unwrap();
            panic!(
                "clawrl-runtime did not end within {STOP_WITHIN:?} of SIGINT with a second reader \
                 on the port (SIGKILLed: {killed}); its stderr:\n{}",
                stderr()
            );
        }
    }
    assert!(elapsed < STOP_WITHIN, "ended after {elapsed:?}");
}
