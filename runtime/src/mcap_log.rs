//! A telemetry log as MCAP, the container Foxglove, PlotJuggler and rerun open
//! (`clawrl-runtime mcap LOG`): one JSON channel per kind of data, one message per control
//! cycle that has it, log time = cycle / control rate (ns from the start of the run). Shaped as
//! the ROS message a roboticist expects where ROS has one (`sensor_msgs/JointState`,
//! `sensor_msgs/Imu`, `geometry_msgs/Twist`, as JSON), clawrl's own otherwise. The binary log
//! stays the record `replay` checks bit for bit; this is a view of it.
use std::collections::BTreeMap;
use std::io::{BufWriter, Seek, Write};
use std::path::Path;

use clawrl_robot::observation::Offsets;
use clawrl_robot::quadruped;
use serde_json::{Value, json};

use crate::telemetry::{LogReader, Record};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub records: u64,
    /// Messages per topic, in topic order.
    pub messages: BTreeMap<String, u64>,
    /// The log's own verdict (a killed run's log has no trailer: its records still export).
    pub integrity: String,
}

/// The topics, their schema names and JSON schemas (enough for a viewer to plot by name).
const TOPICS: [(&str, &str); 6] = [
    ("/joint_states", "sensor_msgs/JointState"),
    ("/joint_goals", "clawrl/JointGoals"),
    ("/imu", "sensor_msgs/Imu"),
    ("/cmd_vel", "geometry_msgs/Twist"),
    ("/action", "clawrl/Action"),
    ("/runtime", "clawrl/Cycle"),
];

fn schema(name: &str) -> Value {
    let num = json!({"type": "number"});
    let nums = json!({"type": "array", "items": {"type": "number"}});
    let names = json!({"type": "array", "items": {"type": "string"}});
    let vec3 = json!({"type": "object", "properties": {"x": num, "y": num, "z": num}});
    let stamp = json!({"type": "object", "properties": {"sec": num, "nsec": num}});
    let header = json!({"type": "object", "properties": {"stamp": stamp}});
    let properties = match name {
        "sensor_msgs/JointState" => json!({"header": header, "name": names, "position": nums,
            "velocity": nums, "effort": nums, "current_ma": nums}),
        "clawrl/JointGoals" => json!({"header": header, "name": names, "position": nums,
            "limited": num}),
        "sensor_msgs/Imu" => json!({"header": header, "orientation": {"type": "object",
            "properties": {"x": num, "y": num, "z": num, "w": num}},
            "angular_velocity": vec3, "linear_acceleration": vec3}),
        "geometry_msgs/Twist" => json!({"linear": vec3, "angular": vec3}),
        "clawrl/Action" => json!({"header": header, "name": names, "action": nums}),
        _ => json!({"cycle": num, "phase": {"type": "string"}, "lateness_us": num,
            "compute_us": num, "missed_deadline": {"type": "boolean"},
            "link_up": {"type": "boolean"}, "board_alert": {"type": "boolean"}}),
    };
    json!({"type": "object", "title": name, "properties": properties})
}

/// `log` as MCAP in `out` (written to a temporary file, then renamed: a failed export leaves
/// nothing behind). A log that is not a telemetry log is refused by [`LogReader::open`].
pub fn export(log: &Path, out: &Path) -> Result<Exported, String> {
    let mut reader = LogReader::open(log)?;
    let rate_hz = reader.header.safety.rate_hz;
    let tmp = out.with_extension("mcap.partial");
    let file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let written = write_all(&mut reader, rate_hz, BufWriter::new(file));
    match written {
        Ok(counts) => {
            std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
            Ok(Exported {
                records: counts.0,
                messages: counts.1,
                integrity: format!("{:?}", reader.integrity),
            })
        }
        Err(e) => {
            std::fs::remove_file(&tmp).ok();
            Err(e)
        }
    }
}

type Counts = (u64, BTreeMap<String, u64>);

fn write_all<W: Write + Seek>(
    reader: &mut LogReader,
    rate_hz: f64,
    sink: W,
) -> Result<Counts, String> {
    let mcap_err = |e: mcap::McapError| format!("writing MCAP: {e}");
    // Uncompressed: the pure-Rust build (no zstd/lz4 C code) that also runs on the robot.
    let opts = mcap::WriteOptions::new().compression(None);
    let mut w = mcap::Writer::with_options(sink, opts).map_err(mcap_err)?;
    let mut channels = BTreeMap::new();
    for (topic, name) in TOPICS {
        let schema = serde_json::to_vec(&schema(name)).expect("a JSON value serialises");
        let sid = w
            .add_schema(name, "jsonschema", &schema)
            .map_err(mcap_err)?;
        let cid = w
            .add_channel(sid, topic, "json", &BTreeMap::new())
            .map_err(mcap_err)?;
        channels.insert(topic, cid);
    }
    let names = servo_names(reader);
    let command_at = Offsets::for_servos(names.len()).command;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut records = 0u64;
    while let Some(r) = reader.next_record()? {
        records += 1;
        let t_ns = (r.cycle as f64 / rate_hz * 1e9).round() as u64;
        for (topic, msg) in messages(&r, &names, command_at, t_ns) {
            let n = counts.entry(topic.to_string()).or_default();
            let header = mcap::records::MessageHeader {
                channel_id: channels[topic],
                sequence: *n as u32,
                log_time: t_ns,
                publish_time: t_ns,
            };
            let data = serde_json::to_vec(&msg).expect("a JSON value serialises");
            w.write_to_known_channel(&header, &data).map_err(mcap_err)?;
            *n += 1;
        }
    }
    w.finish().map_err(mcap_err)?;
    Ok((records, counts))
}

/// The servos' names in action order: the logged bundle's (it may be gone: then the shipped
/// robot's for a 16-servo log, `servo_I` for another robot's).
fn servo_names(reader: &LogReader) -> Vec<String> {
    let count = reader.header.safety.poses.count;
    let trust = clawrl_bundle::Trust::default();
    let from_bundle = clawrl_bundle::read(&reader.header.bundle, &trust)
        .ok()
        .map(|b| b.manifest.action.names)
        .filter(|n| n.len() == count);
    from_bundle.unwrap_or_else(|| {
        if count == quadruped::NUM_SERVOS {
            quadruped::servo_names()
        } else {
            (0..count).map(|i| format!("servo_{i}")).collect()
        }
    })
}

/// One cycle's messages: the readings when a state arrived, the goals when some were sent,
/// the command and action when the policy ran, and the cycle itself always. A robot of `n`
/// servos (`names`) fills the first `n` entries of the board-sized arrays.
fn messages(
    r: &Record,
    names: &[String],
    command_at: usize,
    t_ns: u64,
) -> Vec<(&'static str, Value)> {
    let n = names.len();
    let header = json!({"stamp": {"sec": t_ns / 1_000_000_000, "nsec": t_ns % 1_000_000_000}});
    let mut out = Vec::new();
    if let Some(s) = &r.input.state {
        let sensors = &s.sensors;
        out.push((
            "/joint_states",
            json!({"header": header, "name": names, "position": &sensors.joint_pos[..n],
                "velocity": &sensors.joint_vel[..n], "effort": [],
                "current_ma": &s.current_ma[..n]}),
        ));
        let [w, x, y, z] = sensors.quat;
        let [gx, gy, gz] = sensors.gyro;
        let [ax, ay, az] = sensors.acc;
        out.push((
            "/imu",
            json!({"header": header, "orientation": {"x": x, "y": y, "z": z, "w": w},
                "angular_velocity": {"x": gx, "y": gy, "z": gz},
                "linear_acceleration": {"x": ax, "y": ay, "z": az}}),
        ));
    }
    if let Some(g) = &r.output.goals {
        out.push((
            "/joint_goals",
            json!({"header": header, "name": names, "position": &g[..n],
                "limited": r.output.limited}),
        ));
    }
    if r.output.policy_ran {
        let c = &r.output.frame[command_at..command_at + 3];
        out.push((
            "/cmd_vel",
            json!({"linear": {"x": c[0], "y": c[1], "z": 0.0},
                "angular": {"x": 0.0, "y": 0.0, "z": c[2]}}),
        ));
        out.push((
            "/action",
            json!({"header": header, "name": names, "action": &r.output.action[..n]}),
        ));
    }
    out.push((
        "/runtime",
        json!({"cycle": r.cycle, "phase": format!("{:?}", r.output.phase),
            "lateness_us": r.lateness_ns as f64 / 1e3, "compute_us": r.compute_ns as f64 / 1e3,
            "missed_deadline": r.missed_deadline, "link_up": r.link_up,
            "board_alert": r.input.state.is_some_and(|s| s.alert)}),
    ));
    out
}

/// A run's time series as its MCAP holds them (what `clawrl plot --mcap` draws): read back
/// with the format's own reader, by topic, so any MCAP of these channels plots, not only ours.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Servo names (the first `/joint_states` message's).
    pub names: Vec<String>,
    /// `/joint_states`: time (s), positions per servo (rad), body yaw rate from `/imu` (rad/s).
    pub state_t: Vec<f64>,
    pub position: Vec<Vec<f64>>,
    pub yaw_rate: Vec<f64>,
    /// `/joint_goals`: time (s), goals per servo (rad).
    pub goal_t: Vec<f64>,
    pub goal: Vec<Vec<f64>>,
    /// `/cmd_vel`: time (s), forward (m/s) and yaw rate (rad/s) commanded.
    pub command_t: Vec<f64>,
    pub command: Vec<[f64; 2]>,
    /// `/runtime`: time (s), safety phase, compute and lateness (µs) per cycle.
    pub cycle_t: Vec<f64>,
    pub phase: Vec<String>,
    pub compute_us: Vec<f64>,
    pub lateness_us: Vec<f64>,
}

/// Reads `path` (an MCAP of [`TOPICS`]) into [`Series`]; a file that is not MCAP, or a message
/// that is not the JSON its schema says, is refused with the topic named.
pub fn read_series(path: &Path) -> Result<Series, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !bytes.starts_with(mcap::MAGIC) {
        return Err(format!(
            "{}: not an MCAP file (no MCAP magic; a binary telemetry log converts with \
             `clawrl-runtime mcap LOG`)",
            path.display()
        ));
    }
    let stream = mcap::MessageStream::new(&bytes)
        .map_err(|e| format!("{}: not an MCAP file: {e}", path.display()))?;
    let mut s = Series::default();
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .map(|a| a.iter().map(num).collect())
            .unwrap_or_default()
    };
    for m in stream {
        let m = m.map_err(|e| format!("{}: {e}", path.display()))?;
        let topic = m.channel.topic.as_str();
        let v: Value = serde_json::from_slice(&m.data)
            .map_err(|e| format!("{}: a {topic} message is not JSON: {e}", path.display()))?;
        let t = m.log_time as f64 * 1e-9;
        match topic {
            "/joint_states" => {
                if s.names.is_empty() {
                    s.names = (v["name"].as_array().into_iter().flatten())
                        .map(|n| n.as_str().unwrap_or("?").to_string())
                        .collect();
                }
                s.state_t.push(t);
                s.position.push(nums(&v["position"]));
            }
            "/imu" => s.yaw_rate.push(num(&v["angular_velocity"]["z"])),
            "/joint_goals" => {
                s.goal_t.push(t);
                s.goal.push(nums(&v["position"]));
            }
            "/cmd_vel" => {
                s.command_t.push(t);
                s.command
                    .push([num(&v["linear"]["x"]), num(&v["angular"]["z"])]);
            }
            "/runtime" => {
                s.cycle_t.push(t);
                s.phase.push(v["phase"].as_str().unwrap_or("?").to_string());
                s.compute_us.push(num(&v["compute_us"]));
                s.lateness_us.push(num(&v["lateness_us"]));
            }
            _ => {}
        }
    }
    if s.cycle_t.is_empty() {
        return Err(format!(
            "{}: no /runtime messages (not a clawrl-runtime MCAP)",
            path.display()
        ));
    }
    Ok(s)
}
