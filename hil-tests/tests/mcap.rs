//! The runtime's telemetry from a HIL walk, as MCAP (`clawrl-runtime mcap`), read back with the
//! MCAP crate's own reader and with the official Python reader (`mcap` from PyPI, installed into
//! third_party/pymcap by scripts/bootstrap.sh): every channel a viewer needs, its schema, one
//! message per cycle that has the data, and the values of the binary log's records.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::line::Clocking;
use clawrl_hil_tests::scenario::{self, Setup};
use clawrl_runtime::telemetry::LogReader;
use clawrl_sim::quadruped::TaskConfig;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn a_hil_walks_telemetry_opens_as_mcap_with_the_logs_values() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        bundle: repo().join("hil-tests/fixtures/student.clawrl"),
        seed: 1,
        clocking: Clocking::Lockstep,
        task: TaskConfig::flat().unwrap(),
        runtime_config: repo().join("configs/runtime/robot.toml"),
        dir: dir.path().join("run"),
        board: None,
        miswiring: Vec::new(),
    };
    let s = scenario::by_name("walk").unwrap();
    let s = scenario::Scenario { seconds: 2.0, ..s };
    let o = scenario::run(&s, &setup).unwrap();
    let log = o.summary.log.clone().expect("the runtime wrote a log");
    let out = dir.path().join("walk.mcap");
    let e = clawrl_runtime::mcap_log::export(&log, &out).unwrap();
    assert_eq!(e.records, o.summary.cycles);
    assert!(e.integrity.starts_with("Verified"), "{}", e.integrity);

    let bytes = std::fs::read(&out).unwrap();
    let mut by_topic: std::collections::BTreeMap<String, Vec<serde_json::Value>> =
        Default::default();
    let mut times = Vec::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        assert_eq!(m.channel.message_encoding, "json");
        let schema = m.channel.schema.as_ref().unwrap();
        assert_eq!(schema.encoding, "jsonschema");
        if m.channel.topic == "/runtime" {
            times.push(m.log_time);
        }
        let v: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
        by_topic.entry(m.channel.topic.clone()).or_default().push(v);
    }
    let topics: Vec<&str> = by_topic.keys().map(String::as_str).collect();
    assert_eq!(
        topics,
        [
            "/action",
            "/cmd_vel",
            "/imu",
            "/joint_goals",
            "/joint_states",
            "/runtime"
        ]
    );
    assert_eq!(
        by_topic["/runtime"].len() as u64,
        o.summary.cycles,
        "one per cycle"
    );
    // 50 Hz: the cycles 20 ms apart.
    assert_eq!(times[1] - times[0], 20_000_000);
    // The values are the log's: the first reading's joint positions, and the command the
    // policy saw (the scenario's 0.3 m/s).
    let mut reader = LogReader::open(&log).unwrap();
    let first = loop {
        let r = reader.next_record().unwrap().unwrap();
        if let Some(s) = r.input.state {
            break s;
        }
    };
    let js = &by_topic["/joint_states"][0];
    assert_eq!(js["name"][2], "FL_knee");
    for i in 0..16 {
        assert_eq!(
            js["position"][i].as_f64().unwrap(),
            first.sensors.joint_pos[i]
        );
    }
    let cmd = &by_topic["/cmd_vel"][0];
    assert!(
        (cmd["linear"]["x"].as_f64().unwrap() - 0.3).abs() < 1e-6,
        "{cmd}"
    );
    let phases: Vec<&str> = by_topic["/runtime"]
        .iter()
        .map(|v| v["phase"].as_str().unwrap())
        .collect();
    assert!(
        phases.contains(&"Running") && phases.last() == Some(&"Off"),
        "{phases:?}"
    );

    // The same file through the official Python reader: its channels, schema names, counts
    // and the first joint state, as it decodes them.
    let python = python_reader(&out);
    let counts: Vec<String> = by_topic
        .iter()
        .map(|(t, v)| format!("{t} {}", v.len()))
        .collect();
    assert!(
        python.contains(&format!("counts {}", counts.join(", "))),
        "{python}"
    );
    assert!(
        python.contains("schemas /imu sensor_msgs/Imu, /joint_states sensor_msgs/JointState"),
        "{python}"
    );
    let fl_knee = first.sensors.joint_pos[2];
    assert!(
        python.contains(&format!("FL_knee {fl_knee:?}")),
        "{fl_knee} in {python}"
    );
}

/// Reads `mcap` with the Python `mcap` package: one line of counts per topic, the schema names
/// of two channels, and FL_knee's first position as Python's `repr` prints it.
fn python_reader(mcap: &Path) -> String {
    let lib = repo().join("third_party/pymcap");
    assert!(
        lib.join("mcap").is_dir(),
        "the Python mcap reader is not in {}: scripts/bootstrap.sh installs it \
         (python3 -m pip install --target third_party/pymcap mcap==1.6.0)",
        lib.display()
    );
    let script = r#"
import collections, json, sys
from mcap.reader import make_reader
with open(sys.argv[1], "rb") as f:
    r = make_reader(f)
    n, schemas, first = collections.Counter(), {}, None
    for schema, channel, message in r.iter_messages():
        n[channel.topic] += 1
        schemas[channel.topic] = schema.name
        if channel.topic == "/joint_states" and first is None:
            first = json.loads(message.data)
print("counts " + ", ".join(f"{t} {n[t]}" for t in sorted(n)))
print(f"schemas /imu {schemas['/imu']}, /joint_states {schemas['/joint_states']}")
print(f"{first['name'][2]} {first['position'][2]!r}")
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(mcap)
        .env("PYTHONPATH", &lib)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The second robot's log (12 servos, no claws): joint states and actions by pup12's own
/// servo names, 12 values each, and the command read at pup12's frame offset (the scenario's
/// 0.3 m/s, where the claw robot's offset would read a joint velocity).
#[test]
fn pup12s_telemetry_names_its_own_servos() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        bundle: repo().join("hil-tests/fixtures/pup12_student.clawrl"),
        seed: 1,
        clocking: Clocking::Lockstep,
        task: TaskConfig::load(repo().join("configs/task/pup12_flat.toml"), &[]).unwrap(),
        runtime_config: repo().join("configs/runtime/pup12.toml"),
        dir: dir.path().join("run"),
        board: None,
        miswiring: Vec::new(),
    };
    let s = scenario::by_name("walk").unwrap();
    let s = scenario::Scenario { seconds: 1.0, ..s };
    let o = scenario::run(&s, &setup).unwrap();
    let out = dir.path().join("pup12.mcap");
    clawrl_runtime::mcap_log::export(&o.summary.log.clone().unwrap(), &out).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let (mut states, mut commands) = (Vec::new(), Vec::new());
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
        match m.channel.topic.as_str() {
            "/joint_states" => states.push(v),
            "/cmd_vel" => commands.push(v),
            _ => {}
        }
    }
    let names: Vec<&str> = states[0]["name"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 12);
    assert_eq!(names[..3], ["FL_hip_abd", "FL_hip_pitch", "FL_knee"]);
    assert!(names.iter().all(|n| !n.contains("claw")));
    assert_eq!(states[0]["position"].as_array().unwrap().len(), 12);
    // The policy's command: the scenario's 0.3 m/s while running, 0 once the stop halts it.
    let forward: Vec<f64> = (commands.iter())
        .map(|c| c["linear"]["x"].as_f64().unwrap())
        .collect();
    assert!(
        forward.iter().any(|f| (f - 0.3).abs() < 1e-6),
        "{forward:?}"
    );
    assert!(
        forward.iter().all(|f| (f - 0.3).abs() < 1e-6 || *f == 0.0),
        "{forward:?}"
    );
}
