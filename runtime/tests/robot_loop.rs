//! The runtime against the real firmware: `clawrl-runtime` <-> pseudo-terminal <-> virtual
//! board (the no_std firmware core on a pty, a servo model behind it), with a wire tap in
//! between that records every instruction the board received. Each test runs the robot for a
//! few seconds at 50 Hz and checks the start-up order, what reached the wire, and how faults
//! end. Every test runs under a deadline (`with_deadline`): a loop that never ends fails.
mod common;
mod wire_tap;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clawrl_bundle::Trust;
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::safety::SafetyState;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_protocol::table::board::{command, fault};
use clawrl_protocol::units;
use clawrl_robot::quadruped::{JOINT_LIMITS, NUM_SERVOS};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::controller::{Fault, Phase};
use clawrl_runtime::install;
use clawrl_runtime::run::{RunOptions, Summary, run};
use clawrl_runtime::synthetic;
use wire_tap::{Sent, Tap};

/// How long a test that drives the loop may take, start to end, on a loaded machine: a loop
/// that never reaches Off fails here instead of hanging until the CI time-out.
const DEADLINE: Duration = Duration::from_secs(90);

/// Runs `test` on its own thread and fails if it does not end within [`DEADLINE`]; its own
/// failures pass through. A test left behind stops with the test process.
fn with_deadline(test: impl FnOnce() + Send + 'static) {
    let (done, ended) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match ended.recv_timeout(DEADLINE) {
        Ok(()) => h.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            // The test panicked: its own message.
            std::panic::resume_unwind(h.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the test did not end within {DEADLINE:?}: a loop that never stops")
        }
    }
}

struct Rig {
    dir: tempfile::TempDir,
    board: VirtualBoard,
    tap: Tap,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let tap = Tap::new(board.path(), dir.path());
    Rig { dir, board, tap }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shipped robot config, pointed at the tap, with short start-up and lowering times.
fn overrides(rig: &Rig) -> Vec<String> {
    let port = rig.tap.link().display().to_string();
    common::quick_overrides(&port, rig.dir.path())
}

fn config(rig: &Rig) -> RuntimeConfig {
    RuntimeConfig::load(&repo().join("configs/runtime/robot.toml"), &overrides(rig)).unwrap()
}

/// Writes a synthetic student marked as trained on the MJCF `cfg`'s robot declares (a
/// synthetic one carries the all-zero hash, which the robot check refuses).
fn write_for_robot(
    cfg: &RuntimeConfig,
    path: &Path,
    mut m: clawrl_bundle::Manifest,
    t: &[clawrl_bundle::Tensor],
) {
    m.robot.mjcf_sha256 = cfg.robot.mjcf_sha256.clone();
    clawrl_bundle::write(path, &m, t, None).unwrap();
}

/// A synthetic student of the shipped shape, installed into the rig's A/B root.
fn installed_bundle(rig: &Rig) -> PathBuf {
    let cfg = config(rig);
    let b = rig.dir.path().join("student.clawrl");
    let (m, t) =
        synthetic::quadruped_parts(&synthetic::SHIPPED_HIDDEN, synthetic::SHIPPED_HISTORY, 7);
    write_for_robot(&cfg, &b, m, &t);
    let root = rig.dir.path().join("root");
    install::install(&root, &b, &Trust::default(), &cfg.robot_spec()).unwrap();
    install::current_bundle(&root).unwrap()
}

fn run_for(cfg: &RuntimeConfig, bundle: &Path, seconds: f64) -> anyhow::Result<Summary> {
    run(
        cfg,
        &RunOptions {
            bundle: bundle.to_path_buf(),
            duration: Some(Duration::from_secs_f64(seconds)),
            stop: Arc::new(AtomicBool::new(false)),
            clear_estop: false,
            lockstep: None,
        },
    )
}

/// Every goal packet the board received, in radians, after checking each tick lies inside
/// its joint's limits.
fn goals_inside_limits(sent: &[Sent]) -> Vec<[f64; NUM_SERVOS]> {
    let mut all = Vec::new();
    for s in sent {
        match s {
            Sent::Goals(entries) => {
                assert_eq!(entries.len(), NUM_SERVOS);
                let mut g = [0.0; NUM_SERVOS];
                for (i, (id, ticks)) in entries.iter().enumerate() {
                    assert_eq!(*id as usize, i + 1, "servo IDs in order");
                    let rad = units::ticks_to_rad(*ticks);
                    let [lo, hi] = JOINT_LIMITS[i];
                    assert!(
                        rad >= lo as f32 && rad <= hi as f32,
                        "servo {i} sent {ticks} ticks = {rad} rad, outside [{lo}, {hi}]"
                    );
                    g[i] = f64::from(rad);
                }
                all.push(g);
            }
            Sent::Goal(id, _) => panic!("a single-servo goal to {id}: the runtime only syncs"),
            _ => {}
        }
    }
    all
}

fn board_commands(sent: &[Sent]) -> Vec<u8> {
    sent.iter()
        .filter_map(|s| match s {
            Sent::BoardCommand(c) => Some(*c),
            _ => None,
        })
        .collect()
}

/// A second reader on the board's port (a stray `cat`; root opens a port despite TIOCEXCL)
/// takes answers from under the runtime's reads. The operator's stop still ends the run, in
/// seconds: the serial thread blocked in `read()` for good once, and the stop waited on it.
#[test]
fn a_stop_ends_the_run_with_a_second_reader_on_the_port() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let opts = RunOptions {
            bundle: installed_bundle(&rig),
            duration: None,
            stop: Arc::new(AtomicBool::new(false)),
            clear_estop: false,
            lockstep: None,
        };
        let stop = opts.stop.clone();
        let (ended_tx, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = ended_tx.send(run(&cfg, &opts).map(|s| s.final_phase));
        });
        std::thread::sleep(Duration::from_millis(1500));
        let mut thief = match std::fs::File::open(rig.tap.link()) {
            Ok(f) => f,
            // Not root: TIOCEXCL keeps the second reader out, which is the point of it.
            Err(e) => return eprintln!("skipped: a second reader cannot open the port ({e})"),
        };
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while std::io::Read::read(&mut thief, &mut buf).is_ok() {}
        });
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let asked = std::time::Instant::now();
        let phase = ended
            .recv_timeout(Duration::from_secs(20))
            .expect("the run did not end within 20 s of the stop");
        eprintln!("ended {:?} after the stop: {phase:?}", asked.elapsed());
    });
}

#[test]
fn an_installed_bundle_runs_with_the_start_up_in_order_and_every_goal_inside_the_limits() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let bundle = installed_bundle(&rig);
        let s = run_for(&cfg, &bundle, 3.0).unwrap();
        assert_eq!(
            s.phases,
            [
                Phase::Standing,
                Phase::FadeIn,
                Phase::Running,
                Phase::Halting,
                Phase::FadeOut,
                Phase::Lowering,
                Phase::Off
            ]
        );
        assert!(s.cycles >= 170, "{} cycles in 3.5 s at 50 Hz", s.cycles);
        let sent = rig.tap.sent();
        // Start-up: the board and all 16 servos are pinged before anything is written; faults are
        // cleared and the torque is off before the first goal; the first goal comes before ENABLE.
        assert_eq!(sent[0], Sent::Ping(100));
        for i in 1..=16u8 {
            assert_eq!(sent[i as usize], Sent::Ping(i));
        }
        let first_goal = sent
            .iter()
            .position(|s| matches!(s, Sent::Goals(_)))
            .unwrap();
        let enable = sent
            .iter()
            .position(|s| *s == Sent::BoardCommand(command::ENABLE))
            .unwrap();
        let cmds = board_commands(&sent[..first_goal]);
        assert_eq!(cmds, [command::CLEAR, command::DISABLE]);
        assert!(
            first_goal < enable,
            "goals before ENABLE: {first_goal} < {enable}"
        );
        assert_eq!(board_commands(&sent).last(), Some(&command::DISABLE));
        let goals = goals_inside_limits(&sent);
        assert!(goals.len() >= 150, "{} goal packets", goals.len());
        // The first goal is where the joints were (the servo model starts mid-range).
        let fw = FirmwareConfig::claw_foot();
        for (i, g) in goals[0].iter().enumerate() {
            let mid = 0.5 * (fw.servos[i].min_rad + fw.servos[i].max_rad);
            // Within what the board reads back (ticks of its pulse calibration), far from the
            // default pose the stand-up then moves to.
            assert!((g - f64::from(mid)).abs() < 1e-2, "servo {i}: {g} vs {mid}");
        }
        // The board ends with the torque off, no fault latched.
        let o = rig
            .board
            .wait_for(Duration::from_secs(1), |o| o.state == SafetyState::Idle)
            .expect("board idle after the run");
        assert_eq!(o.faults, 0);
        // The telemetry log replays bit for bit.
        let log = s.log.expect("a telemetry log");
        let r = clawrl_runtime::replay::replay(&log, None).unwrap();
        assert_eq!(r.mismatches, 0, "{r}");
        assert!(r.policy_cycles >= 50, "{r}");
        assert!(r.to_string().contains("SHA-256 verified"), "{r}");
        // Through the binary: a log cut short (a killed run) replays what it holds with a
        // warning that names the truncation; one flipped byte is refused as corrupt, not
        // reported as nondeterminism.
        let replay = |log: &Path| {
            std::process::Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"))
                .arg("replay")
                .arg(log)
                .output()
                .unwrap()
        };
        let bytes = std::fs::read(&log).unwrap();
        let cut = rig.dir.path().join("cut.log");
        std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
        let out = replay(&cut);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.starts_with("warning: the telemetry log is truncated: no trailer")
                && text.contains("of a truncated log"),
            "{text}"
        );
        let flipped = rig.dir.path().join("flipped.log");
        let mut b = bytes.clone();
        let mid = b.len() / 2;
        b[mid] ^= 0x10;
        std::fs::write(&flipped, &b).unwrap();
        let out = replay(&flipped);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("corrupt") && err.contains("SHA-256") && !err.contains("differ"),
            "{err}"
        );
    })
}

#[test]
fn nan_from_the_policy_holds_the_last_goal_then_lowers_on_stop() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        // Weights of +-3e38 overflow the first layer to +inf and -inf, whose sum is NaN.
        let (m, mut t) = synthetic::quadruped_parts(&synthetic::SHIPPED_HIDDEN, 2, 7);
        let w = t.iter_mut().find(|t| t.name == "actor.0.weight").unwrap();
        w.data
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = if i % 2 == 0 { 3e38 } else { -3e38 });
        let b = rig.dir.path().join("nan.clawrl");
        write_for_robot(&cfg, &b, m, &t);
        let s = run_for(&cfg, &b, 2.0).unwrap();
        // The first policy cycle (FadeIn's first) already faults: a summary lists the phase each
        // cycle ended in.
        assert_eq!(
            s.phases,
            [
                Phase::Standing,
                Phase::Fault(Fault::NonFinite),
                Phase::Lowering,
                Phase::Off
            ]
        );
        let goals = goals_inside_limits(&rig.tap.sent());
        // Read the fault's stretch from the log: every goal sent in it is the last safe one.
        let mut reader = clawrl_runtime::telemetry::LogReader::open(&s.log.unwrap()).unwrap();
        let mut held = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            if r.output.phase == Phase::Fault(Fault::NonFinite) {
                held.push(
                    r.output
                        .goals
                        .expect("a fault holds, it does not go silent"),
                );
            }
        }
        assert!(held.len() > 10, "{} cycles in the fault", held.len());
        assert!(held.windows(2).all(|w| w[0] == w[1]), "the held goal moved");
        assert!(goals.len() > held.len());
    })
}

#[test]
fn a_pulled_cable_ends_in_the_stale_fault_and_the_board_acts_alone() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let bundle = installed_bundle(&rig);
        let run = std::thread::scope(|scope| {
            let h = scope.spawn(|| run_for(&cfg, &bundle, 4.0));
            std::thread::sleep(Duration::from_millis(1600));
            rig.tap.cut(true);
            // The board's watchdog (100 ms) trips into its safe behaviour while the cable is out.
            let o = rig
                .board
                .wait_for(Duration::from_secs(1), |o| o.state == SafetyState::Fault)
                .expect("the board's watchdog tripped");
            assert_ne!(o.faults & fault::WATCHDOG, 0);
            std::thread::sleep(Duration::from_millis(500));
            rig.tap.cut(false);
            h.join().unwrap()
        });
        let s = run.unwrap();
        assert!(s.link_downs >= 1, "{s:?}");
        let stale = s
            .phases
            .iter()
            .position(|p| *p == Phase::Fault(Fault::Stale));
        let stale = stale.unwrap_or_else(|| panic!("no stale fault: {:?}", s.phases));
        assert_eq!(
            &s.phases[..3],
            &[Phase::Standing, Phase::FadeIn, Phase::Running]
        );
        // Latched: a reconnected cable does not bring the policy back.
        assert!(
            !s.phases[stale..].contains(&Phase::Running),
            "{:?}",
            s.phases
        );
        assert_eq!(s.phases.last(), Some(&Phase::Off));
        assert!(rig.tap.offers() >= 2, "the cable was plugged in again");
        goals_inside_limits(&rig.tap.sent());
        // After the reconnection the runtime asked the board who it is before anything else.
        let sent = rig.tap.sent();
        assert!(sent.iter().filter(|s| **s == Sent::Ping(100)).count() >= 2);
        // The board's fault stayed latched: nothing the runtime sent cleared it.
        assert!(!board_commands(&sent).ends_with(&[command::CLEAR]));
        assert_eq!(rig.board.observed().state, SafetyState::Fault);
    })
}

#[test]
fn a_silent_board_is_a_stale_stream_and_the_last_goal_is_held() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let bundle = installed_bundle(&rig);
        let s = std::thread::scope(|scope| {
            let h = scope.spawn(|| run_for(&cfg, &bundle, 3.0));
            std::thread::sleep(Duration::from_millis(1600));
            rig.tap.mute(true);
            std::thread::sleep(Duration::from_millis(400));
            rig.tap.mute(false);
            h.join().unwrap()
        })
        .unwrap();
        assert!(
            s.phases.contains(&Phase::Fault(Fault::Stale)),
            "{:?}",
            s.phases
        );
        assert_eq!(s.phases.last(), Some(&Phase::Off));
        let mut reader = clawrl_runtime::telemetry::LogReader::open(&s.log.unwrap()).unwrap();
        let mut held = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            if r.output.phase == Phase::Fault(Fault::Stale) {
                held.push(r.output.goals.unwrap());
            }
        }
        assert!(held.len() > 5 && held.windows(2).all(|w| w[0] == w[1]));
        goals_inside_limits(&rig.tap.sent());
    })
}

#[test]
fn a_corrupt_bundle_is_refused_before_anything_reaches_the_wire() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let b = rig.dir.path().join("student.clawrl");
        synthetic::write_shipped_shape(&b, 7).unwrap();
        let mut bytes = std::fs::read(&b).unwrap();
        let n = bytes.len();
        bytes[n - 100] ^= 0x40;
        std::fs::write(&b, bytes).unwrap();
        let e = run_for(&cfg, &b, 1.0).unwrap_err().to_string();
        assert!(
            e.contains("student.clawrl") && e.contains("check failed"),
            "{e}"
        );
        std::thread::sleep(Duration::from_millis(50));
        assert!(rig.tap.sent().is_empty(), "{:?}", rig.tap.sent());
    })
}

#[test]
fn a_missing_port_or_a_silent_board_gets_one_clear_message() {
    with_deadline(|| {
        let rig = rig();
        let bundle = installed_bundle(&rig);
        let mut o = overrides(&rig);
        o[0] = "serial.port=\"/dev/clawrl-no-such-port\"".into();
        let cfg = RuntimeConfig::load(&repo().join("configs/runtime/robot.toml"), &o).unwrap();
        let e = format!("{:#}", run_for(&cfg, &bundle, 1.0).unwrap_err());
        assert!(e.contains("/dev/clawrl-no-such-port"), "{e}");
        rig.tap.mute(true);
        let e = format!("{:#}", run_for(&config(&rig), &bundle, 1.0).unwrap_err());
        assert!(e.contains("device 100 did not answer"), "{e}");
        // Nothing but PING reached the board.
        assert!(rig.tap.sent().iter().all(|s| *s == Sent::Ping(100)));
    })
}

#[test]
fn a_servo_ping_lost_at_start_up_is_asked_twice_more_then_named() {
    with_deadline(|| {
        let rig = rig();
        let bundle = installed_bundle(&rig);
        let pings = |sent: &[Sent]| sent.iter().filter(|s| **s == Sent::Ping(5)).count();
        // Two answers lost: the third PING gets through and the robot starts.
        rig.tap.lose_pings(5, 2);
        let summary = run_for(&config(&rig), &bundle, 1.0).unwrap();
        assert!(summary.cycles > 0);
        assert_eq!(pings(&rig.tap.sent()), 3);
        // Three lost: start-up ends there, naming the device, and nothing moved.
        let rig = self::rig();
        rig.tap.lose_pings(5, 3);
        let e = format!("{:#}", run_for(&config(&rig), &bundle, 1.0).unwrap_err());
        assert!(e.contains("device 5 did not answer"), "{e}");
        let sent = rig.tap.sent();
        assert_eq!(pings(&sent), 3);
        assert!(sent.iter().all(|s| matches!(s, Sent::Ping(_))), "{sent:?}");
    })
}

#[test]
fn sigterm_lowers_the_robot_and_disables_the_torque_before_exit() {
    with_deadline(|| {
        let rig = rig();
        let bundle = installed_bundle(&rig);
        let child = run_command(&rig, &bundle)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(2000));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("Running, Halting, FadeOut, Lowering, Off"),
            "{text}"
        );
        let sent = rig.tap.sent();
        assert_eq!(board_commands(&sent).last(), Some(&command::DISABLE));
        let goals = goals_inside_limits(&sent);
        // The last goals are the rest pose (knees folded), not wherever the policy left them.
        let last = goals.last().unwrap();
        for (i, g) in last.iter().enumerate() {
            let rest = clawrl_robot::quadruped::REST_POSE[i];
            assert!((g - rest).abs() < 2e-3, "servo {i}: {g} vs rest {rest}");
        }
        rig.board
            .wait_for(Duration::from_secs(1), |o| o.state == SafetyState::Idle)
            .expect("torque off");
    })
}

#[test]
fn run_tells_the_operator_what_happens_as_it_happens() {
    with_deadline(|| {
        let rig = rig();
        let bundle = installed_bundle(&rig);
        let child = run_command(&rig, &bundle)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(2000));
        // Two Ctrl-Cs: the second is acknowledged, the stop goes on as it was.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(150));
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{text}{err}");
        // The start line: the bundle, the board, the rate.
        let start = err
            .lines()
            .find(|l| l.contains("clawrl-runtime: running"))
            .unwrap_or_else(|| panic!("no start line in:\n{err}"));
        assert!(
            start.contains(&bundle.display().to_string())
                && start.contains("50 Hz")
                && start.contains("board on")
                && start.contains("firmware"),
            "{start}"
        );
        // Each phase change the moment it happens, in order.
        for change in [
            "phase TorqueOff -> Standing",
            "phase Standing -> FadeIn",
            "phase FadeIn -> Running",
            "phase Running -> Halting",
            "phase Lowering -> Off",
        ] {
            assert!(err.contains(change), "no {change:?} in:\n{err}");
        }
        let at = |s: &str| err.find(s).unwrap();
        assert!(at("clawrl-runtime: running") < at("phase TorqueOff -> Standing"));
        assert!(at("phase FadeIn -> Running") < at("SIGINT: stopping"));
        assert!(
            err.contains("SIGINT again: the stop is already under way"),
            "{err}"
        );
        // The end line names the final phase plainly.
        assert!(text.contains("final phase Off,"), "{text}");
        assert!(!text.contains("Some("), "{text}");
    })
}

/// `clawrl-runtime run` of `bundle` on the rig (the robot's config with the rig's overrides).
fn run_command(rig: &Rig, bundle: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"));
    cmd.arg("run")
        .arg("--config")
        .arg(repo().join("configs/runtime/robot.toml"))
        .arg("--bundle")
        .arg(bundle);
    for o in overrides(rig) {
        cmd.arg("--set").arg(o);
    }
    cmd
}

/// `clawrl-runtime run` on the rig for `seconds`, with `extra` arguments; waits for its end.
fn run_binary(rig: &Rig, bundle: &Path, seconds: f64, extra: &[&str]) -> std::process::Output {
    run_command(rig, bundle)
        .arg("--seconds")
        .arg(seconds.to_string())
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_latched_e_stop_survives_a_restart_until_the_operator_clears_it() {
    with_deadline(|| {
        let rig = rig();
        let cfg = config(&rig);
        let bundle = installed_bundle(&rig);
        // The operator's e-stop (Safety Command 3), written while no runtime runs.
        {
            let mut link = clawrl_runtime::link::Link::open(
                &cfg.serial.port,
                cfg.serial.baud,
                Duration::from_millis(200),
            )
            .unwrap();
            link.command(command::ESTOP).unwrap();
        }
        rig.board
            .wait_for(Duration::from_secs(1), |o| o.state == SafetyState::EStop)
            .expect("the board in e-stop");

        // A plain restart refuses, names the latch in words and the way out, and clears nothing.
        let out = run_binary(&rig, &bundle, 2.0, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("the board is in e-stop")
                && err.contains("0x0010")
                && err.contains("--clear-estop"),
            "{err}"
        );
        let sent = rig.tap.sent();
        assert_eq!(board_commands(&sent), [command::ESTOP], "{sent:?}");
        assert!(!sent.iter().any(|s| matches!(s, Sent::Goals(_))));
        std::thread::sleep(Duration::from_millis(100));
        let o = rig.board.observed();
        assert_eq!(o.state, SafetyState::EStop);
        assert_ne!(o.faults & fault::ESTOP, 0);
        // The library says the same.
        let e = format!("{:#}", run_for(&cfg, &bundle, 1.0).unwrap_err());
        assert!(e.contains("the board is in e-stop"), "{e}");
        assert_eq!(rig.board.observed().state, SafetyState::EStop);

        // The operator's explicit flag clears it, and the robot runs.
        let out = run_binary(&rig, &bundle, 2.5, &["--clear-estop"]);
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{text}{err}");
        assert!(err.contains("cleared them at start-up"), "{err}");
        assert!(text.contains("Running"), "{text}");
        rig.board
            .wait_for(Duration::from_secs(1), |o| o.state == SafetyState::Idle)
            .expect("torque off, nothing latched");
    })
}

/// A device on a pseudo-terminal that answers every PING with `model`.
fn impostor(model: u16) -> (tempfile::TempDir, std::thread::JoinHandle<()>, PathBuf) {
    use clawrl_protocol::{Decoder, encode_status};
    use serialport::SerialPort;
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let (mut master, slave) = serialport::TTYPort::pair().unwrap();
    master.set_timeout(Duration::from_millis(5)).unwrap();
    let link = dir.path().join("ttyIMPOSTOR");
    std::os::unix::fs::symlink(slave.name().unwrap(), &link).unwrap();
    let h = std::thread::spawn(move || {
        let _slave = slave;
        let mut d: Decoder<1024> = Decoder::new();
        let (mut buf, mut out) = ([0u8; 256], [0u8; 64]);
        let end = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < end {
            let Ok(n) = master.read(&mut buf) else {
                continue;
            };
            let mut answers = Vec::new();
            for &b in &buf[..n] {
                d.push(b);
                while let Some(Ok(p)) = d.next_event() {
                    let [lo, hi] = model.to_le_bytes();
                    let k = encode_status(&mut out, p.id, 0, &[lo, hi, 38]).unwrap();
                    answers.extend_from_slice(&out[..k]);
                }
            }
            master.write_all(&answers).unwrap();
        }
    });
    (dir, h, link)
}

#[test]
fn a_device_with_the_wrong_model_number_is_refused_by_name() {
    with_deadline(|| {
        let rig = rig();
        let bundle = installed_bundle(&rig);
        // Model 1030 (an XM430 servo, the e-Manual's PING example) where the board should be.
        let (_dir, h, link) = impostor(1030);
        let mut o = overrides(&rig);
        o[0] = format!("serial.port={:?}", link.display().to_string());
        let cfg = RuntimeConfig::load(&repo().join("configs/runtime/robot.toml"), &o).unwrap();
        let e = format!("{:#}", run_for(&cfg, &bundle, 1.0).unwrap_err());
        assert!(
            e.contains("device 100 answered model number 0x0406, expected 0xc1b0"),
            "{e}"
        );
        h.join().unwrap();
    })
}

#[test]
fn a_config_with_an_unknown_or_out_of_range_key_names_the_file_and_the_key() {
    with_deadline(|| {
        let path = repo().join("configs/runtime/robot.toml");
        let e = RuntimeConfig::load(&path, &["safety.tilt_limit_deg=200".into()]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("robot.toml") && text.contains("safety.tilt_limit_deg"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("robot.toml");
        let body = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &bad,
            body.replace("[serial]\n", "[serial]\nparity = \"even\"\n"),
        )
        .unwrap();
        let text = RuntimeConfig::load(&bad, &[]).unwrap_err().to_string();
        assert!(text.contains("parity"), "{text}");
        std::fs::write(&bad, body.replace("stale_cycles = 5\n", "")).unwrap();
        let text = RuntimeConfig::load(&bad, &[]).unwrap_err().to_string();
        assert!(text.contains("stale_cycles"), "{text}");
    })
}
