//! `clawrl-runtime bench`: the runtime's timing figures on the machine it runs on.
//! - `--inference`: one student forward pass (normalised observation in, action out), p50,
//!   p99 and p99.9 over many calls; next to it what candle's single ops cost
//!   ([`candle_ops`]) and the same network in plain Rust loops ([`plain_forward`]), the
//!   arithmetic floor of this CPU.
//! - `--lateness`: the control loop's timer ([`FixedRate`] on the monotonic clock) at a few
//!   rates, how late each wake-up is ([`lateness`]); with `--neighbour` also with busy threads
//!   on every core ([`Neighbour`]); with `--python` next to a Python sleep loop of the
//!   unitree-deploy kind (`scripts/bench/python_sleep_loop.py`, [`python_loop`]).
//! - `--cycle`: the whole control cycle without the wire ([`cycle`]): the board's status packet
//!   decoded, the observation built, the student run inside the safety layer, the goals
//!   encoded into the SYNC WRITE packet; against the wire time of PROTOCOL.md's recommended
//!   cycle ([`WireTime`]).
use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use candle_core::{Device, Tensor};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::ids;
use clawrl_protocol::{Decoder, Instruction, PacketWriter, Status};
use clawrl_robot::quadruped::{JOINT_LIMITS, NUM_SERVOS, REST_POSE};

use crate::controller::{Act, Controller, Input, Output, Phase, SafetyConfig};
use crate::inference::{InferenceError, Student};
use crate::observation::ObservationBuilder;
use crate::rate::FixedRate;
use crate::wire::{self, BoardState, GoalEncoder};

/// Percentiles of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub n: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles; `samples` is sorted in place.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let n = samples.len();
        let at = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            n,
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            max: samples[n - 1],
        }
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        write!(
            f,
            "n {} p50 {:.2} us p99 {:.2} us p99.9 {:.2} us max {:.2} us",
            self.n,
            us(self.p50),
            us(self.p99),
            us(self.p999),
            us(self.max)
        )
    }
}

/// Times `iterations` forward passes after `iterations / 10` warm-up calls.
pub fn inference(student: &Student, iterations: usize) -> Result<Percentiles> {
    let obs = crate::synthetic::values(3, student.obs_dim(), 1.0);
    let mut out = vec![0f32; student.action_dim()];
    for _ in 0..iterations / 10 {
        student.act(&obs, &mut out)?;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        student.act(&obs, &mut out)?;
        samples.push(t.elapsed());
    }
    std::hint::black_box(&out);
    Ok(Percentiles::of(&mut samples))
}

/// The time of candle's single ops at the shipped student's sizes (`obs` inputs, `hidden`
/// units): what one op of the forward pass costs, whatever its arithmetic.
pub fn candle_ops(
    obs: usize,
    hidden: usize,
    iterations: usize,
) -> Result<Vec<(String, Percentiles)>> {
    let dev = Device::Cpu;
    let x = crate::synthetic::values(5, obs, 1.0);
    let xt = Tensor::from_slice(&x, (1, obs), &dev)?;
    let w = Tensor::from_slice(
        &crate::synthetic::values(6, obs * hidden, 0.1),
        (obs, hidden),
        &dev,
    )?;
    let h = Tensor::from_slice(&crate::synthetic::values(7, hidden, 1.0), (1, hidden), &dev)?;
    let b = Tensor::from_slice(&crate::synthetic::values(8, hidden, 1.0), hidden, &dev)?;
    let time = |f: &dyn Fn() -> candle_core::Result<Tensor>| -> Result<Percentiles> {
        for _ in 0..iterations / 10 {
            std::hint::black_box(f()?);
        }
        let mut s = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            std::hint::black_box(f()?);
            s.push(t.elapsed());
        }
        Ok(Percentiles::of(&mut s))
    };
    Ok(vec![
        (
            format!("Tensor::from_slice [1, {obs}]"),
            time(&|| Tensor::from_slice(&x, (1, obs), &dev))?,
        ),
        (
            format!("matmul [1, {obs}] x [{obs}, {hidden}]"),
            time(&|| xt.matmul(&w))?,
        ),
        (
            format!("broadcast_add [1, {hidden}] + [{hidden}]"),
            time(&|| h.broadcast_add(&b))?,
        ),
        (format!("elu [1, {hidden}]"), time(&|| h.elu(1.0))?),
    ])
}

/// The bundle's MLP (`actor.{i}.weight` `[in, out]`, `actor.{i}.bias`, ELU between layers) in
/// plain Rust loops over f32: the arithmetic the forward pass needs, without a tensor library.
/// `None` for a network that is not a plain MLP.
pub fn plain_forward(bundle: &clawrl_bundle::Bundle, iterations: usize) -> Option<Percentiles> {
    let layers = crate::synthetic::mlp_layers(bundle);
    let first = layers.first()?.0;
    if bundle.tensor("actor.conv.weight").is_some() || first.shape.len() != 2 {
        return None;
    }
    let widest = layers
        .iter()
        .map(|(w, _)| w.shape[1])
        .max()?
        .max(first.shape[0]);
    let (mut a, mut b) = (vec![0f32; widest], vec![0f32; widest]);
    let x = crate::synthetic::values(3, first.shape[0], 1.0);
    let forward = |a: &mut [f32], b: &mut [f32]| {
        a[..x.len()].copy_from_slice(&x);
        let mut n_in = x.len();
        for (i, (w, bias)) in layers.iter().enumerate() {
            let n_out = w.shape[1];
            b[..n_out].copy_from_slice(&bias.data);
            for (r, xr) in a[..n_in].iter().enumerate() {
                let row = &w.data[r * n_out..(r + 1) * n_out];
                for (y, wv) in b[..n_out].iter_mut().zip(row) {
                    *y += xr * wv;
                }
            }
            if i + 1 < layers.len() {
                for v in &mut b[..n_out] {
                    if *v < 0.0 {
                        *v = v.exp_m1();
                    }
                }
            }
            a[..n_out].copy_from_slice(&b[..n_out]);
            n_in = n_out;
        }
    };
    for _ in 0..iterations / 10 {
        forward(&mut a, &mut b);
    }
    let mut s = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        forward(std::hint::black_box(&mut a), &mut b);
        s.push(t.elapsed());
    }
    std::hint::black_box(&a);
    Some(Percentiles::of(&mut s))
}

/// How late the timer's wake-ups were at one rate.
#[derive(Debug, Clone, Copy)]
pub struct Lateness {
    pub hz: f64,
    pub lateness: Percentiles,
    /// Deadlines already past when `wait` was called.
    pub missed: u64,
}

/// Runs [`FixedRate`] (monotonic clock, spinning the last `spin`) at `hz` for `duration` with
/// an empty loop body and records every wake-up's lateness. Call it on the thread whose
/// scheduling is to be measured.
pub fn lateness(hz: f64, duration: Duration, spin: Duration) -> Lateness {
    let n = ((duration.as_secs_f64() * hz).round() as usize).max(1);
    let mut samples = Vec::with_capacity(n);
    let mut rate = FixedRate::new(hz, spin);
    for _ in 0..n {
        samples.push(rate.wait().lateness);
    }
    Lateness {
        hz,
        lateness: Percentiles::of(&mut samples),
        missed: rate.missed(),
    }
}

/// A CPU-load neighbour: one busy thread of float arithmetic per core, until dropped.
pub struct Neighbour {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Neighbour {
    pub fn start(threads: usize) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|k| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("neighbour-{k}"))
                    .spawn(move || {
                        let mut v = [1.0f64 + k as f64; 64];
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..1000 {
                                for (i, x) in v.iter_mut().enumerate() {
                                    *x = (*x * 1.000_001 + i as f64 * 1e-9).sqrt() + 0.5;
                                }
                            }
                            std::hint::black_box(&mut v);
                        }
                    })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self { stop, threads })
    }

    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().ok();
        }
    }
}

/// What the Python sleep loop reported.
#[derive(Debug, Clone)]
pub struct PythonLateness {
    pub hz: f64,
    pub lateness: Percentiles,
    pub missed: u64,
    /// How far behind the absolute schedule (start + k * period) the loop ended, ms.
    pub drift_ms: f64,
    pub python: String,
}

/// Runs `scripts/bench/python_sleep_loop.py` at `hz` for `seconds` and reads its JSON line.
pub fn python_loop(python: &str, script: &Path, hz: f64, seconds: f64) -> Result<PythonLateness> {
    let out = std::process::Command::new(python)
        .arg(script)
        .args(["--hz", &hz.to_string(), "--seconds", &seconds.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running {python} {}", script.display()))?;
    ensure!(
        out.status.success(),
        "{python} {} failed: {}",
        script.display(),
        out.status
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .with_context(|| format!("the Python loop printed {line:?}, not one JSON line"))?;
    let num = |k: &str| {
        v[k].as_f64()
            .with_context(|| format!("the Python loop's JSON has no number `{k}`: {line}"))
    };
    let us = |k: &str| num(k).map(|x| Duration::from_secs_f64(x.max(0.0) * 1e-6));
    Ok(PythonLateness {
        hz,
        lateness: Percentiles {
            n: num("n")? as usize,
            p50: us("p50_us")?,
            p99: us("p99_us")?,
            p999: us("p999_us")?,
            max: us("max_us")?,
        },
        missed: num("missed")? as u64,
        drift_ms: num("drift_ms")?,
        python: v["python"].as_str().unwrap_or("?").to_string(),
    })
}

/// Bytes on the wire of PROTOCOL.md's recommended cycle, from the protocol crate's encoder:
/// SYNC WRITE of 16 four-byte Goal Positions, the READ of the robot-state block and the
/// board's status answer carrying it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WireTime {
    pub sync_write: usize,
    pub read: usize,
    pub status: usize,
    pub baud: u32,
}

impl WireTime {
    /// The packets with every goal at the centre tick (byte stuffing could add a byte only
    /// where a goal's bytes run into the header pattern `FF FF FD`, which no goal does).
    pub fn recommended_cycle(baud: u32) -> Self {
        let mut buf = [0u8; 512];
        let ticks = [clawrl_protocol::units::CENTER_TICKS; NUM_SERVOS];
        let sync_write = sync_write_packet(&mut buf, &ticks);
        let mut w = PacketWriter::new(&mut buf, ids::BOARD, Instruction::Read);
        w.push_u16(board::ROBOT_STATE)
            .push_u16(board::ROBOT_STATE_LEN);
        let read = w.finish().expect("a READ fits in 512 bytes");
        let block = wire::encode_state(&upright(REST_POSE));
        let status = clawrl_protocol::encode_status(&mut buf, ids::BOARD, 0, &block)
            .expect("the robot-state answer fits in 512 bytes");
        Self {
            sync_write,
            read,
            status,
            baud,
        }
    }

    pub fn bytes(&self) -> usize {
        self.sync_write + self.read + self.status
    }

    /// 10 bits per byte (start, 8 data, stop).
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.bytes() as f64 * 10.0 / f64::from(self.baud))
    }
}

impl std::fmt::Display for WireTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SYNC WRITE {} B + READ {} B + status {} B = {} B x 10 bit / {} baud = {:.0} us",
            self.sync_write,
            self.read,
            self.status,
            self.bytes(),
            self.baud,
            self.duration().as_secs_f64() * 1e6
        )
    }
}

/// The SYNC WRITE of Goal Position as `Link::sync_write_goals` writes it; returns its length.
fn sync_write_packet(buf: &mut [u8], ticks: &[i32; NUM_SERVOS]) -> usize {
    let mut w = PacketWriter::new(buf, clawrl_protocol::BROADCAST_ID, Instruction::SyncWrite);
    w.push_u16(servo::GOAL_POSITION).push_u16(4);
    for (i, t) in ticks.iter().enumerate() {
        w.push_u8(wire::servo_id(i)).push_u32(*t as u32);
    }
    w.finish().expect("the SYNC WRITE fits in the buffer")
}

/// A reading of the robot standing upright, still, with its joints at `pose`.
fn upright(pose: [f64; NUM_SERVOS]) -> BoardState {
    let mut s = BoardState::default();
    s.sensors.quat = [1.0, 0.0, 0.0, 0.0];
    s.sensors.acc = [0.0, 0.0, 9.81];
    s.sensors.joint_pos = pose;
    s
}

/// The student, timing each forward pass.
struct TimedStudent {
    student: Student,
    last: Cell<Duration>,
}

impl Act for TimedStudent {
    fn act(&self, obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
        let t = Instant::now();
        let r = self.student.act(obs, out);
        self.last.set(t.elapsed());
        r
    }
}

/// The whole control cycle's CPU time, and the forward pass's part of it.
#[derive(Debug, Clone, Copy)]
pub struct CycleTimes {
    pub cycle: Percentiles,
    pub forward: Percentiles,
    /// Sum of forward passes over sum of cycles.
    pub forward_share: f64,
}

/// Times `iterations` control cycles of the student in `bundle` in the Running phase: the
/// board's status packet (robot-state block, the joints where the last goals put them) fed
/// byte by byte through the protocol decoder and decoded, [`Controller::step`] (observation,
/// forward pass, action map, rate and joint limits), the goals encoded as ticks and written
/// into the SYNC WRITE packet. Building the status packet (the board's work) is not timed.
pub fn cycle(bundle: &clawrl_bundle::Bundle, iterations: usize) -> Result<CycleTimes> {
    let map = bundle
        .manifest
        .action
        .map
        .clone()
        .context("the bundle has no action map")?;
    let obs = ObservationBuilder::from_manifest(&bundle.manifest).map_err(anyhow::Error::msg)?;
    let policy = TimedStudent {
        student: Student::from_bundle(bundle)?,
        last: Cell::new(Duration::ZERO),
    };
    let cfg = SafetyConfig {
        rate_hz: 500.0,
        stand_s: 0.2,
        fade_s: 0.2,
        halt_s: 0.5,
        lower_s: 0.5,
        max_joint_speed: 4.0,
        tilt_limit: 45f64.to_radians(),
        stale_cycles: 5,
        joint_limits: JOINT_LIMITS,
        command: [0.3, 0.0, 0.0],
        heading_gain: 0.0,
        heading_yaw_limit: 0.0,
        stand_grip: 0.0,
        poses: crate::controller::Poses::quadruped(),
    };
    let mut c = Controller::new(policy, obs, map, cfg);
    let encoder = GoalEncoder::new(&JOINT_LIMITS);
    let mut out = Output::default();
    let mut decoder = Decoder::<1024>::new();
    let (mut rx, mut tx) = ([0u8; 512], [0u8; 512]);
    let mut ticks = [0i32; NUM_SERVOS];
    let warm = 300;
    let mut cycles = Vec::with_capacity(iterations);
    let mut forwards = Vec::with_capacity(iterations);
    for k in 0..warm + iterations {
        // The board's side: the joints where the last goals sent them.
        let pose = out.goals.unwrap_or(REST_POSE);
        let block = wire::encode_state(&upright(pose));
        let n = clawrl_protocol::encode_status(&mut rx, ids::BOARD, 0, &block)
            .map_err(|_| anyhow::anyhow!("status packet too long"))?;
        let t = Instant::now();
        for &b in &rx[..n] {
            decoder.push(b);
        }
        let mut state = None;
        while let Some(event) = decoder.next_event() {
            let Ok(packet) = event else { continue };
            if let Some(s) = Status::parse(&packet).filter(|s| s.id == ids::BOARD) {
                state = wire::decode_state(s.data, s.error & clawrl_protocol::ALERT_BIT != 0);
            }
        }
        let input = Input {
            state,
            stop: false,
            command: None,
            estop: false,
        };
        c.step(&input, &mut out);
        if let Some(g) = &out.goals {
            encoder.encode(g, &mut ticks);
        }
        let len = sync_write_packet(&mut tx, &ticks);
        std::hint::black_box((len, &tx));
        let elapsed = t.elapsed();
        if k >= warm {
            ensure!(
                out.phase == Phase::Running && out.policy_ran,
                "cycle {k}: the controller is in {:?}, not running the policy",
                out.phase
            );
            cycles.push(elapsed);
            forwards.push(c.policy().last.get());
        }
    }
    let total = |s: &[Duration]| s.iter().map(Duration::as_secs_f64).sum::<f64>();
    let forward_share = total(&forwards) / total(&cycles);
    Ok(CycleTimes {
        cycle: Percentiles::of(&mut cycles),
        forward: Percentiles::of(&mut forwards),
        forward_share,
    })
}

/// `/proc/loadavg`'s three load averages, or "unknown" where there is none.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The CPU's model name and the number of CPUs this process may use.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cpus} CPUs, {}", std::env::consts::ARCH)
}

/// scripts/bench/python_sleep_loop.py under the working directory (the repository root), or
/// else where it was in the source tree this binary was built from.
pub fn python_script() -> std::path::PathBuf {
    let rel = std::path::PathBuf::from("scripts/bench/python_sleep_loop.py");
    if rel.exists() {
        return rel;
    }
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s: Vec<Duration> = (1..=1000u64).rev().map(Duration::from_micros).collect();
        let p = Percentiles::of(&mut s);
        assert_eq!(p.p50, Duration::from_micros(500));
        assert_eq!(p.p99, Duration::from_micros(990));
        assert_eq!(p.p999, Duration::from_micros(999));
        assert_eq!(p.max, Duration::from_micros(1000));
    }

    #[test]
    fn the_recommended_cycle_is_327_bytes_on_the_wire() {
        // SYNC WRITE: 10 overhead + address, length + 16 x (ID + 4 bytes) = 94; READ: 10 + 4 =
        // 14; status: 10 + error byte + 208 = 219.
        let w = WireTime::recommended_cycle(1_000_000);
        assert_eq!((w.sync_write, w.read, w.status), (94, 14, 219));
        assert_eq!(w.duration(), Duration::from_micros(3270));
    }

    #[test]
    fn the_cycle_runs_the_policy_on_a_small_student() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.clawrl");
        crate::synthetic::write_shipped_shape(&p, 7).unwrap();
        let b = clawrl_bundle::read(&p, &clawrl_bundle::Trust::default()).unwrap();
        let t = cycle(&b, 50).unwrap();
        assert_eq!(t.cycle.n, 50);
        assert!(t.forward.p50 <= t.cycle.p50);
        assert!(t.forward_share > 0.0 && t.forward_share <= 1.0);
        assert!(plain_forward(&b, 20).is_some());
    }
}
