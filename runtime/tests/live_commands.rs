//! Live commands through `run` (issue 42): the runtime on the virtual board, `[command]
//! source = "network"`, a script sending the documented datagram over real UDP. The policy
//! sees the commands (rate-limited, clipped), the telemetry records them, and when the script
//! falls silent the command ramps to zero and the stop sequence follows on its own.
mod common;

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::controller::Phase;
use clawrl_runtime::run::{RunOptions, run};
use clawrl_runtime::telemetry::LogReader;

fn datagram(seq: u32, v: [f32; 3]) -> Vec<u8> {
    let mut b = b"CLWC".to_vec();
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&seq.to_le_bytes());
    v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
    b
}

/// `run` on the board at `port_path` for at most `seconds`, with `[command] source = "network"`
/// on a free UDP port (returned; `source = "fixed"` when not `live`), the safety phases at 0.5 s
/// each, a bundle that records `trained` as its command ranges.
fn runtime_on(
    d: &std::path::Path,
    port_path: &str,
    seconds: u64,
    live: bool,
    trained: Option<[[f64; 2]; 3]>,
) -> (
    std::thread::JoinHandle<anyhow::Result<clawrl_runtime::run::Summary>>,
    u16,
) {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        "{}\n[command]\nsource = \"{}\"\nlisten = \"127.0.0.1:{port}\"\ntimeout_s = 0.3\n\
         stop_after_s = 0.5\nmax_rate = [1.0, 1.0, 2.0]\nranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]\n",
        common::shipped_config_text(),
        if live { "network" } else { "fixed" },
    );
    std::fs::write(d.join("robot.toml"), text).unwrap();
    let cfg = RuntimeConfig::load(
        &d.join("robot.toml"),
        &common::quick_overrides(port_path, d),
    )
    .unwrap();
    let bundle = common::installed_bundle_with(&cfg, d, |m| m.observation.command_ranges = trained);

    let runtime = std::thread::spawn(move || {
        run(
            &cfg,
            &RunOptions {
                bundle,
                duration: Some(Duration::from_secs(seconds)),
                stop: Arc::new(AtomicBool::new(false)),
                clear_estop: false,
                lockstep: None,
            },
        )
    });
    (runtime, port)
}

#[test]
fn network_commands_drive_the_policy_and_silence_ends_in_the_stop() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let (runtime, port) = runtime_on(d, board.path(), 20, true, None);
    // A script: 0.6 m/s forward (clipped to 0.4) and a yaw of 0.3, every 50 ms for 2.5 s
    // from the start (the policy takes over after 1 s), then silence.
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut seq = 0;
    while start.elapsed() < Duration::from_millis(2500) {
        seq += 1;
        sender
            .send_to(&datagram(seq, [0.6, 0.0, 0.3]), ("127.0.0.1", port))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let summary = runtime.join().unwrap().unwrap();
    // It stopped on its own, long before its 20 s: silence, then zero, then the stop.
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
            assert_eq!(
                seen,
                c.map(|x| x as f32),
                "the policy sees the recorded command"
            );
        }
        commands.push(c);
    }
    let top = commands.iter().map(|c| c[0]).fold(0.0, f64::max);
    assert!(
        (top - 0.4).abs() < 1e-9,
        "clipped to the trained 0.4: {top}"
    );
    // 1.0 m/s per s: from 0 to 0.4 in 0.4 s, 0.02 a cycle at 50 Hz.
    let steps: Vec<f64> = commands
        .windows(2)
        .map(|w| (w[1][0] - w[0][0]).abs())
        .collect();
    assert!(steps.iter().all(|s| *s <= 0.02 + 1e-9), "rate-limited");
    assert!(
        commands.iter().any(|c| (c[2] - 0.3).abs() < 1e-6),
        "the yaw arrived"
    );
    assert_eq!(
        commands.last().unwrap(),
        &[0.0; 3],
        "silence ramps it to zero"
    );
}

/// A `[command]` section that cannot run is refused at load, naming the file and the key.
#[test]
fn a_bad_command_section_names_its_key() {
    common::assert_command_keys_named(
        &[
            "source = \"network\"",
            "listen = \"127.0.0.1:9870\"",
            "timeout_s = 0.5",
            "stop_after_s = 2.0",
            "max_rate = [1.0, 1.0, 2.0]",
            "ranges = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]]",
        ],
        &[
            (
                "source = \"joystick\"",
                "command.source",
                "not one of fixed, network",
            ),
            (
                "listen = \"robot\"",
                "command.listen",
                "not an address and port",
            ),
            (
                "ranges = [[0.1, 0.4], [-0.2, 0.2], [-0.8, 0.8]]",
                "command.ranges[0]",
                "must hold 0",
            ),
        ],
    );
}

/// The e-stop datagram while the policy walks: the safety machine's e-stop (the board's, every
/// cycle), not the stop sequence, latched by the guard as the script falls silent; the run ends
/// only at its time, through Off. The log records the operator's e-stop.
#[test]
fn an_e_stop_datagram_latches_the_e_stop_until_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let (runtime, port) = runtime_on(d, board.path(), 4, true, None);
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut seq = 0;
    // Walking at 0.3 m/s (the policy takes over after 1 s), then the e-stop, then silence.
    while start.elapsed() < Duration::from_millis(1600) {
        seq += 1;
        sender
            .send_to(&datagram(seq, [0.3, 0.0, 0.0]), ("127.0.0.1", port))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut estop = datagram(seq + 1, [0.0; 3]);
    estop[5] = 1; // flags: bit 0, the e-stop
    sender.send_to(&estop, ("127.0.0.1", port)).unwrap();
    let summary = runtime.join().unwrap().unwrap();
    assert!(
        summary.phases.contains(&Phase::EStop) && !summary.phases.contains(&Phase::Halting),
        "{:?}",
        summary.phases
    );
    assert_eq!(summary.final_phase, Some(Phase::Off));
    // It ran to its 4 s: neither the e-stop nor the silence after it ended the run early.
    assert!(summary.cycles >= 50 * 3, "{} cycles", summary.cycles);
    let mut log = LogReader::open(summary.log.as_ref().unwrap()).unwrap();
    let (mut pressed, mut in_estop) = (0, 0);
    while let Some(r) = log.next_record().unwrap() {
        pressed += usize::from(r.input.estop);
        in_estop += usize::from(r.output.phase == Phase::EStop);
    }
    assert!(pressed > 50 && in_estop > 50, "{pressed} {in_estop}");
}

/// The bundle's trained command ranges narrow the config's: `command.ranges` lets forward reach
/// 0.4, the policy was trained to 0.25, so 0.6 commanded becomes 0.25. A fixed command outside
/// them is refused before the board is touched, naming the key.
#[test]
fn the_bundles_trained_ranges_narrow_the_commands() {
    use clawrl_runtime::run::command_ranges;
    let config = [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]];
    let trained = [[-0.3, 0.25], [-0.1, 0.3], [-0.8, 0.8]];
    assert_eq!(
        command_ranges(config, Some(trained)),
        [[-0.2, 0.25], [-0.1, 0.2], [-0.8, 0.8]]
    );
    assert_eq!(command_ranges(config, None), config);

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let (runtime, port) = runtime_on(d, board.path(), 3, true, Some(trained));
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut seq = 0;
    while start.elapsed() < Duration::from_millis(2000) {
        seq += 1;
        sender
            .send_to(&datagram(seq, [0.6, 0.0, 0.0]), ("127.0.0.1", port))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let summary = runtime.join().unwrap().unwrap();
    let mut log = LogReader::open(summary.log.as_ref().unwrap()).unwrap();
    let mut top = 0.0f64;
    while let Some(r) = log.next_record().unwrap() {
        top = top.max(r.input.command.unwrap()[0]);
    }
    assert!(
        (top - 0.25).abs() < 1e-9,
        "clipped to the trained 0.25: {top}"
    );

    // The shipped config's fixed 0.3 m/s, a policy trained to 0.25: refused.
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = runtime_on(dir.path(), board.path(), 3, false, Some(trained));
    let e = runtime.join().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("control.command") && e.contains("forward 0.3") && e.contains("[-0.3, 0.25]"),
        "{e}"
    );
}
