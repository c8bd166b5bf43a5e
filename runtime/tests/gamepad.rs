//! The gamepad command source (`[command] source = "gamepad"`) through the API `run` uses: a
//! FIFO stands in for `/dev/input/js0`, the test writes the joystick driver's 8-byte events
//! into it, and closing the writer is unplugging the pad. One case drives the runtime on the
//! virtual board, as tests/live_commands.rs does for the network.
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_runtime::command::{Live, Request};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::controller::Phase;
use clawrl_runtime::run::{RunOptions, run};
use clawrl_runtime::telemetry::LogReader;

const AXIS: u8 = 0x02;
const BUTTON: u8 = 0x01;
const INIT: u8 = 0x80;

/// One `js_event`: time (ms), value, type, number; little-endian.
fn event(kind: u8, number: u8, value: i16) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&1234u32.to_le_bytes());
    b[4..6].copy_from_slice(&value.to_le_bytes());
    b[6] = kind;
    b[7] = number;
    b
}

/// What the driver sends on open: every axis and button at rest, flagged as the initial state.
fn init_state() -> Vec<u8> {
    let mut b = Vec::new();
    (0..6).for_each(|a| b.extend(event(AXIS | INIT, a, 0)));
    (0..4).for_each(|n| b.extend(event(BUTTON | INIT, n, 0)));
    b
}

fn mkfifo(dir: &Path) -> PathBuf {
    let p = dir.join("js0");
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    p
}

/// The shipped config with a gamepad `[command]` section naming `device`.
fn gamepad_config(dir: &Path, device: &Path, sets: &[String]) -> RuntimeConfig {
    let text = format!(
        "{}\n[command]\nsource = \"gamepad\"\ndevice = {:?}\naxes = [1, 0, 3]\ndeadzone = 0.1\n\
         stop_button = 1\nestop_button = 0\ntimeout_s = 0.3\nstop_after_s = 0.5\n\
         max_rate = [1.0, 1.0, 2.0]\nranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]\n",
        common::shipped_config_text(),
        device.display().to_string()
    );
    let path = dir.join("robot.toml");
    std::fs::write(&path, text).unwrap();
    RuntimeConfig::load(&path, sets).unwrap()
}

fn live(cfg: &RuntimeConfig) -> Live {
    cfg.command
        .as_ref()
        .unwrap()
        .open(cfg.control.rate_hz)
        .unwrap()
}

#[test]
fn the_stick_drives_the_command_at_the_rate_limit_and_unplugging_stops() {
    let dir = tempfile::tempdir().unwrap();
    let js = mkfifo(dir.path());
    let cfg = gamepad_config(dir.path(), &js, &[]);
    let rate = cfg.control.rate_hz;
    let mut live = live(&cfg);
    // Nobody writes yet: the pipe reads as its end, which is not unplugging (no event came).
    for _ in 0..3 {
        let g = live.cycle();
        assert_eq!((g.command, g.request), ([0.0; 3], None));
    }
    let mut pad = std::fs::OpenOptions::new().write(true).open(&js).unwrap();
    pad.write_all(&init_state()).unwrap();
    assert_eq!(live.cycle().command, [0.0; 3]);
    // Left stick full forward, then held still: no more events for 2 s, far past timeout_s.
    pad.write_all(&event(AXIS, 1, -32767)).unwrap();
    let step = 1.0 / rate;
    let mut last = 0.0;
    for n in 1..=(2.0 * rate) as usize {
        let g = live.cycle();
        assert_eq!(g.request, None, "cycle {n}");
        let want = (n as f64 * step).min(0.4);
        assert!((g.command[0] - want).abs() < 1e-9, "cycle {n}: {g:?}");
        assert!(g.command[0] - last <= step + 1e-12);
        assert_eq!(&g.command[1..], &[0.0, 0.0]);
        last = g.command[0];
    }
    assert!((last - 0.4).abs() < 1e-12, "the forward range's high end");
    // Unplugged: the stop at once, and it stays asked.
    drop(pad);
    for _ in 0..3 {
        let g = live.cycle();
        assert_eq!(g.request, Some(Request::Stop));
        assert!(g.command[0] < last, "ramping down: {g:?}");
        last = g.command[0];
    }
}

#[test]
fn the_estop_button_latches() {
    let dir = tempfile::tempdir().unwrap();
    let js = mkfifo(dir.path());
    let cfg = gamepad_config(dir.path(), &js, &[]);
    let mut live = live(&cfg);
    let mut pad = std::fs::OpenOptions::new().write(true).open(&js).unwrap();
    pad.write_all(&init_state()).unwrap();
    // Right stick left: turning left, toward the yaw range's high end.
    pad.write_all(&event(AXIS, 3, -32767)).unwrap();
    for _ in 0..5 {
        assert_eq!(live.cycle().request, None);
    }
    assert!((live.cycle().command[2] - 0.24).abs() < 1e-9);
    pad.write_all(&event(BUTTON, 0, 1)).unwrap();
    pad.write_all(&event(BUTTON, 0, 0)).unwrap();
    for _ in 0..30 {
        // Released, the stick still held: latched all the same, the command to zero.
        let g = live.cycle();
        assert_eq!(g.request, Some(Request::EStop));
    }
    assert_eq!(live.cycle().command, [0.0; 3]);
}

/// A missing device is refused when `run` starts, naming it, before the board is touched.
#[test]
fn a_missing_gamepad_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("js7");
    let cfg = gamepad_config(dir.path(), &missing, &[]);
    let e = cfg
        .command
        .as_ref()
        .unwrap()
        .open(cfg.control.rate_hz)
        .err()
        .unwrap();
    let e = format!("{e:#}");
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("command.device"),
        "{e}"
    );
}

/// The gamepad keys are checked at load, naming the file and the key.
#[test]
fn bad_gamepad_keys_name_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("robot.toml");
    common::assert_command_keys_named(
        &[
            "source = \"gamepad\"",
            "device = \"/dev/input/js0\"",
            "timeout_s = 0.5",
            "stop_after_s = 2.0",
            "max_rate = [1.0, 1.0, 2.0]",
            "ranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]",
        ],
        &[
            ("device = \"\"", "command.device", "/dev/input/js0"),
            ("deadzone = 0.95", "command.deadzone", "outside [0, 0.9]"),
            ("deadzone = -0.1", "command.deadzone", "outside [0, 0.9]"),
            ("axes = [1, 0, 1]", "command.axes", "three different axes"),
            ("stop_button = 0", "command.stop_button", "two buttons"),
        ],
    );
    // Without a device key at all: the same error.
    let text = format!(
        "{}\n[command]\nsource = \"gamepad\"\ntimeout_s = 0.5\nstop_after_s = 2.0\n\
         max_rate = [1.0, 1.0, 2.0]\nranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]\n",
        common::shipped_config_text()
    );
    std::fs::write(&path, text).unwrap();
    let e = RuntimeConfig::load(&path, &[]).unwrap_err().to_string();
    assert!(e.contains("command.device"), "{e}");
    // The defaults: left stick forward and sideways, right stick yaw, buttons 1 and 0.
    let text = format!(
        "{}\n[command]\nsource = \"gamepad\"\ndevice = \"/dev/input/js0\"\ntimeout_s = 0.5\n\
         stop_after_s = 2.0\nmax_rate = [1.0, 1.0, 2.0]\nranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]\n",
        common::shipped_config_text()
    );
    std::fs::write(&path, text).unwrap();
    let c = RuntimeConfig::load(&path, &[]).unwrap().command.unwrap();
    assert_eq!(
        (c.axes, c.deadzone, c.stop_button, c.estop_button),
        ([1, 0, 3], 0.1, 1, 0)
    );
}

/// The runtime on the virtual board with a gamepad: the stick held forward drives the policy's
/// command (clipped, rate-limited), and pulling the pad out ends the run with the stop sequence.
#[test]
fn run_on_the_virtual_board_follows_the_stick_and_stops_when_unplugged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let js = mkfifo(d);
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let mut sets = common::quick_overrides(board.path(), d);
    // Silence alone would stop it only after 15 s: a stop within 8 s is the unplugging.
    sets.push("command.timeout_s=5.0".into());
    sets.push("command.stop_after_s=10.0".into());
    let cfg = gamepad_config(d, &js, &sets);
    let bundle = common::installed_bundle(&cfg, d);
    let opts = |bundle| RunOptions {
        bundle,
        duration: Some(Duration::from_secs(20)),
        stop: Arc::new(AtomicBool::new(false)),
        clear_estop: false,
        lockstep: None,
    };

    // A pad that is not there: refused, naming it.
    let mut gone = cfg.clone();
    let missing = d.join("js9");
    gone.command.as_mut().unwrap().device = missing.display().to_string();
    let e = format!("{:#}", run(&gone, &opts(bundle.clone())).unwrap_err());
    assert!(e.contains(&missing.display().to_string()), "{e}");

    let runtime = std::thread::spawn(move || run(&cfg, &opts(bundle)));
    // The pad: opened once the runtime reads it (a FIFO's writer cannot open before), its
    // initial state, the left stick full forward and the right stick a little left, held for
    // 2.5 s (the policy takes over after about 1 s), then pulled out.
    let start = Instant::now();
    let mut pad = loop {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&js)
        {
            Ok(f) => break f,
            Err(_) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("the runtime never opened the gamepad: {e}"),
        }
    };
    let opened = Instant::now();
    pad.write_all(&init_state()).unwrap();
    pad.write_all(&event(AXIS, 1, -32767)).unwrap();
    // 0.55 of full scale, half way out of the 0.1 dead zone: half the yaw range, 0.4 rad/s.
    pad.write_all(&event(AXIS, 3, (-0.55 * 32767.0) as i16))
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500).saturating_sub(opened.elapsed()));
    drop(pad);
    let summary = runtime.join().unwrap().unwrap();
    assert_eq!(summary.final_phase, Some(Phase::Off));
    assert!(
        summary.phases.contains(&Phase::Halting),
        "{:?}",
        summary.phases
    );
    assert!(summary.cycles < 50 * 8, "{} cycles", summary.cycles);

    let mut log = LogReader::open(summary.log.as_ref().unwrap()).unwrap();
    let mut commands = Vec::new();
    while let Some(r) = log.next_record().unwrap() {
        let c = r
            .input
            .command
            .expect("a live source gives a command every cycle");
        if r.output.policy_ran && r.output.phase == Phase::Running {
            let seen = &r.output.frame[clawrl_robot::observation::offsets::COMMAND..][..3];
            assert_eq!(seen, c.map(|x| x as f32), "the policy sees the command");
        }
        commands.push(c);
    }
    let top = commands.iter().map(|c| c[0]).fold(0.0, f64::max);
    assert!((top - 0.4).abs() < 1e-9, "full forward is 0.4: {top}");
    let steps = commands.windows(2).map(|w| (w[1][0] - w[0][0]).abs());
    assert!(steps.fold(0.0, f64::max) <= 0.02 + 1e-9, "rate-limited");
    let yaw = commands.iter().map(|c| c[2]).fold(0.0, f64::max);
    assert!(
        (yaw - 0.4).abs() < 1e-3,
        "half the yaw range, to the left: {yaw}"
    );
    assert_eq!(commands.last().unwrap(), &[0.0; 3], "unplugged: to zero");
}
