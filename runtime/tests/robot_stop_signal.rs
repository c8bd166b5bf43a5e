//! The operator's Ctrl-C against the real `clawrl-runtime run` process, with a second reader
//! on the board's serial port (a stray `cat`; root opens a port despite TIOCEXCL) taking the
//! board's answers from under the runtime's reads. SIGINT still ends the process within
//! seconds: the serial thread once blocked in `read()` for good, and the stop waited on it.
//! The in-process version (the stop flag set directly) is in robot_loop.rs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clawrl_bundle::Trust;
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::install;
use clawrl_runtime::synthetic;

/// How long the process may take to end after SIGINT.
const STOP_WITHIN: Duration = Duration::from_secs(5);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn robot_toml() -> PathBuf {
    repo().join("configs/runtime/robot.toml")
}

/// The shipped robot config, pointed straight at the board's pty, with short start-up and
/// lowering times.
fn overrides(port: &str, dir: &Path) -> Vec<String> {
    vec![
        format!("serial.port={port:?}"),
        // A loaded 2-core CI machine runs the board and the tests side by side.
        "serial.answer_timeout_ms=100".into(),
        "control.realtime_priority=0".into(),
        "control.cpu=-1".into(),
        "safety.stand_s=0.5".into(),
        "safety.fade_s=0.5".into(),
        "safety.halt_s=0.5".into(),
        "safety.lower_s=0.5".into(),
        format!("telemetry.dir={:?}", dir.join("log").display().to_string()),
        format!("install.root={:?}", dir.join("root").display().to_string()),
    ]
}

/// A synthetic student of the shipped shape, marked as trained on the config's robot and
/// installed into the A/B root under `dir`.
fn installed_bundle(cfg: &RuntimeConfig, dir: &Path) -> PathBuf {
    let b = dir.join("student.clawrl");
    let (mut m, t) =
        synthetic::quadruped_parts(&synthetic::SHIPPED_HIDDEN, synthetic::SHIPPED_HISTORY, 7);
    m.robot.mjcf_sha256 = cfg.robot.mjcf_sha256.clone();
    clawrl_bundle::write(&b, &m, &t, None).unwrap();
    let root = dir.join("root");
    install::install(&root, &b, &Trust::default(), &cfg.robot_spec()).unwrap();
    install::current_bundle(&root).unwrap()
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
    let sets = overrides(&port, dir.path());
    let cfg = RuntimeConfig::load(&robot_toml(), &sets).unwrap();
    let bundle = installed_bundle(&cfg, dir.path());

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
