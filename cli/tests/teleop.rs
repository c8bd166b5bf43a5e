//! `clawrl teleop` as a script drives it: the documented datagram, received by the runtime's
//! own UDP source (what `run` listens with), in order, with the command given.
use std::process::Command;
use std::time::Duration;

use clawrl_runtime::command::Input;
use clawrl_runtime::command::udp::UdpSource;

#[test]
fn a_fixed_command_arrives_at_the_runtimes_source_in_order() {
    let mut source = UdpSource::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = source.local_addr().unwrap().port();
    let out = Command::new(env!("CARGO_BIN_EXE_clawrl"))
        .args(["teleop", "--to", &format!("127.0.0.1:{port}")])
        .args([
            "--forward",
            "0.3",
            "--yaw",
            "-0.2",
            "--seconds",
            "0.3",
            "--rate",
            "20",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(50));
    let mut got = Vec::new();
    source.poll(&mut got).unwrap();
    assert!(got.len() >= 4, "{} datagrams: {stdout}", got.len());
    assert!(
        stdout.contains(&format!("sent {} datagrams", got.len())),
        "{stdout}"
    );
    assert!(
        got.iter()
            .all(|i| *i == Input::Velocity([0.3f32 as f64, 0.0, -0.2f32 as f64])),
        "{got:?}"
    );
    assert_eq!(
        source.dropped, 0,
        "every sequence number newer than the last"
    );
}

#[test]
fn a_fixed_command_needs_its_seconds_and_a_bad_address_is_named() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_clawrl"))
            .arg("teleop")
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, err) = run(&["--to", "127.0.0.1:9", "--forward", "0.2"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("needs --seconds"), "{err}");
    let (code, err) = run(&["--to", "robot", "--forward", "0.2", "--seconds", "1"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--to \"robot\": not a host and port"), "{err}");
}

/// `clawrl hil --teleop PORT`: a person (here `clawrl teleop` with a fixed command, started
/// first) drives the simulated pup12 in real time through the runtime's network source; the
/// drive walks it, and the runtime stops it when the drive's time is up.
#[test]
fn clawrl_teleop_drives_the_simulated_robot_in_hil() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let to = format!("127.0.0.1:{port}");
    let mut sender = Command::new(env!("CARGO_BIN_EXE_clawrl"))
        .args([
            "teleop",
            "--to",
            &to,
            "--forward",
            "0.25",
            "--seconds",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawrl"))
        .current_dir(&repo)
        .env("RAYON_NUM_THREADS", "1")
        .args(["hil", "--bundle", "hil-tests/fixtures/pup12_student.clawrl"])
        .args(["--task-config", "configs/task/pup12_flat.toml"])
        .args(["--runtime-config", "configs/runtime/pup12.toml"])
        .args(["--teleop", &port.to_string(), "--drive-seconds", "3"])
        .args(["--out", out_dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let _ = sender.kill();
    let _ = sender.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verdict: drive (seed 1): PASS"), "{stdout}");
    let travelled: f64 = stdout
        .split("the torso travelled ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no drive figures: {stdout}"));
    // 3 s at 0.25 m/s, then the halt: at least a third of it.
    assert!(travelled > 0.3, "{travelled} m: {stdout}");
}
