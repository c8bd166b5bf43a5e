//! The telemetry log: one fixed-size binary record per control cycle (what arrived, what the
//! controller decided, what was sent, how late the cycle woke), behind a JSON header naming the
//! bundle and the safety settings. `clawrl-runtime replay LOG` feeds the recorded inputs
//! through a fresh controller and checks every output bit for bit.
//!
//! File: `CLAWRL-TELEMETRY-1\n`, header length (u32 LE), header JSON, then records of
//! [`RECORD_LEN`] bytes, every number little-endian.
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clawrl_robot::OnboardSensors;
use clawrl_robot::quadruped::NUM_SERVOS;
use serde::{Deserialize, Serialize};

use crate::controller::{BoardCommand, Fault, Input, Output, Phase, SafetyConfig};
use crate::observation::FRAME_DIM;
use crate::wire::BoardState;

pub const MAGIC: &[u8] = b"CLAWRL-TELEMETRY-1\n";

/// What a log says about the run it records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub bundle: PathBuf,
    pub bundle_sha256: String,
    pub safety: SafetyConfig,
    pub record_len: usize,
}

/// One control cycle.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Record {
    pub cycle: u64,
    /// How long after its deadline the cycle woke, ns.
    pub lateness_ns: u64,
    /// Time from waking to the goals handed to the serial thread, ns.
    pub compute_ns: u64,
    pub missed_deadline: bool,
    /// Whether the serial link was up when the cycle ran.
    pub link_up: bool,
    pub input: Input,
    pub output: Output,
    /// The Goal Position ticks handed to the serial thread (valid when `output.goals` is).
    pub ticks: [i32; NUM_SERVOS],
}

/// Bytes of one record on disk.
pub const RECORD_LEN: usize = 8 * 3 + 2 + (2 + STATE_LEN) + OUTPUT_LEN + 4 * NUM_SERVOS;
const STATE_LEN: usize = 8 * (3 + 4 + 3 + 2 * NUM_SERVOS) + 2 * NUM_SERVOS + 4 + 4 + 1;
const OUTPUT_LEN: usize = 1 + 1 + 1 + 1 + 8 * NUM_SERVOS + 4 * FRAME_DIM + 4 * NUM_SERVOS + 4 + 1;

struct Put<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Put<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn f64s(&mut self, v: &[f64]) {
        v.iter().for_each(|x| self.bytes(&x.to_le_bytes()));
    }
    fn f32s(&mut self, v: &[f32]) {
        v.iter().for_each(|x| self.bytes(&x.to_le_bytes()));
    }
}

struct Take<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Take<'_> {
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let a = self.buf[self.at..self.at + N].try_into().unwrap();
        self.at += N;
        a
    }
    fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
    fn f64s<const N: usize>(&mut self) -> [f64; N] {
        std::array::from_fn(|_| f64::from_le_bytes(self.array()))
    }
    fn f32s<const N: usize>(&mut self) -> [f32; N] {
        std::array::from_fn(|_| f32::from_le_bytes(self.array()))
    }
}

fn phase_from(code: u8) -> Option<Phase> {
    Some(match code {
        0 => Phase::TorqueOff,
        1 => Phase::Standing,
        2 => Phase::FadeIn,
        3 => Phase::Running,
        4 => Phase::Fault(Fault::NonFinite),
        5 => Phase::Fault(Fault::Stale),
        6 => Phase::Fault(Fault::Board),
        7 => Phase::Fault(Fault::Inference),
        8 => Phase::EStop,
        9 => Phase::Lowering,
        10 => Phase::Off,
        11 => Phase::Halting,
        12 => Phase::FadeOut,
        _ => return None,
    })
}

fn board_code(b: BoardCommand) -> u8 {
    match b {
        BoardCommand::None => 0,
        BoardCommand::Enable => 1,
        BoardCommand::Disable => 2,
        BoardCommand::EStop => 3,
    }
}

fn board_from(code: u8) -> BoardCommand {
    match code {
        1 => BoardCommand::Enable,
        2 => BoardCommand::Disable,
        3 => BoardCommand::EStop,
        _ => BoardCommand::None,
    }
}

impl Record {
    pub fn encode(&self, buf: &mut [u8; RECORD_LEN]) {
        let mut p = Put { buf, at: 0 };
        p.bytes(&self.cycle.to_le_bytes());
        p.bytes(&self.lateness_ns.to_le_bytes());
        p.bytes(&self.compute_ns.to_le_bytes());
        p.u8(u8::from(self.missed_deadline));
        p.u8(u8::from(self.link_up));
        p.u8(u8::from(self.input.stop));
        p.u8(u8::from(self.input.state.is_some()));
        let s = self.input.state.unwrap_or_default();
        p.f64s(&s.sensors.gyro);
        p.f64s(&s.sensors.quat);
        p.f64s(&s.sensors.acc);
        p.f64s(&s.sensors.joint_pos);
        p.f64s(&s.sensors.joint_vel);
        s.current_ma.iter().for_each(|c| p.bytes(&c.to_le_bytes()));
        p.bytes(&s.tick.to_le_bytes());
        p.bytes(&s.uptime_us.to_le_bytes());
        p.u8(u8::from(s.alert));
        let o = &self.output;
        p.u8(o.phase.code());
        p.u8(board_code(o.board));
        p.u8(u8::from(o.policy_ran));
        p.u8(u8::from(o.goals.is_some()));
        p.f64s(&o.goals.unwrap_or([0.0; NUM_SERVOS]));
        p.f32s(&o.frame);
        p.f32s(&o.action);
        p.bytes(&o.limited.to_le_bytes());
        p.u8(u8::from(o.done));
        self.ticks.iter().for_each(|t| p.bytes(&t.to_le_bytes()));
        debug_assert_eq!(p.at, RECORD_LEN);
    }

    pub fn decode(buf: &[u8; RECORD_LEN]) -> Option<Self> {
        let mut t = Take { buf, at: 0 };
        let (cycle, lateness_ns, compute_ns) = (t.u64(), t.u64(), t.u64());
        let missed_deadline = t.u8() != 0;
        let link_up = t.u8() != 0;
        let stop = t.u8() != 0;
        let fresh = t.u8() != 0;
        let sensors = OnboardSensors {
            gyro: t.f64s(),
            quat: t.f64s(),
            acc: t.f64s(),
            joint_pos: t.f64s(),
            joint_vel: t.f64s(),
        };
        let current_ma = std::array::from_fn(|_| i16::from_le_bytes(t.array()));
        let tick = u32::from_le_bytes(t.array());
        let uptime_us = u32::from_le_bytes(t.array());
        let alert = t.u8() != 0;
        let state = BoardState {
            sensors,
            current_ma,
            tick,
            uptime_us,
            alert,
        };
        let phase = phase_from(t.u8())?;
        let board = board_from(t.u8());
        let policy_ran = t.u8() != 0;
        let has_goals = t.u8() != 0;
        let goals = t.f64s::<NUM_SERVOS>();
        let output = Output {
            phase,
            goals: has_goals.then_some(goals),
            board,
            policy_ran,
            frame: t.f32s(),
            action: t.f32s(),
            limited: u32::from_le_bytes(t.array()),
            done: t.u8() != 0,
        };
        let ticks = std::array::from_fn(|_| i32::from_le_bytes(t.array()));
        Some(Self {
            cycle,
            lateness_ns,
            compute_ns,
            missed_deadline,
            link_up,
            input: Input {
                state: fresh.then_some(state),
                stop,
            },
            output,
            ticks,
        })
    }
}

pub struct LogWriter {
    out: BufWriter<File>,
    buf: [u8; RECORD_LEN],
}

impl LogWriter {
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        out.write_all(MAGIC)?;
        out.write_all(&(json.len() as u32).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(Self {
            out,
            buf: [0; RECORD_LEN],
        })
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        r.encode(&mut self.buf);
        self.out.write_all(&self.buf)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Reads a log: its header, then records one by one.
pub struct LogReader {
    input: BufReader<File>,
    pub header: Header,
    buf: [u8; RECORD_LEN],
}

impl LogReader {
    pub fn open(path: &Path) -> Result<Self, String> {
        let bad = |why: String| format!("telemetry log {}: {why}", path.display());
        let f = File::open(path).map_err(|e| bad(e.to_string()))?;
        let mut input = BufReader::new(f);
        let mut magic = [0u8; MAGIC.len()];
        input
            .read_exact(&mut magic)
            .map_err(|_| bad("too short to be a log".into()))?;
        if magic != MAGIC {
            return Err(bad("not a clawrl telemetry log (wrong magic)".into()));
        }
        let mut len = [0u8; 4];
        input.read_exact(&mut len).map_err(|e| bad(e.to_string()))?;
        let len = u32::from_le_bytes(len) as usize;
        if len > 1 << 20 {
            return Err(bad(format!("header of {len} bytes is implausible")));
        }
        let mut json = vec![0u8; len];
        input
            .read_exact(&mut json)
            .map_err(|e| bad(format!("header: {e}")))?;
        let header: Header =
            serde_json::from_slice(&json).map_err(|e| bad(format!("header: {e}")))?;
        if header.record_len != RECORD_LEN {
            return Err(bad(format!(
                "records of {} bytes; this runtime reads {RECORD_LEN}",
                header.record_len
            )));
        }
        Ok(Self {
            input,
            header,
            buf: [0; RECORD_LEN],
        })
    }

    /// The next record; `None` at the end (a truncated last record, as a pulled plug leaves
    /// it, also ends the log).
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        match self.input.read_exact(&mut self.buf) {
            Ok(()) => Record::decode(&self.buf)
                .map(Some)
                .ok_or_else(|| "a record with an unknown phase code".to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_bit_for_bit() {
        let mut r = Record {
            cycle: 42,
            lateness_ns: 1234,
            compute_ns: 99,
            missed_deadline: true,
            link_up: true,
            ..Default::default()
        };
        let mut s = BoardState::default();
        s.sensors.quat = [1.0, 0.0, 0.0, f64::MIN_POSITIVE];
        s.sensors.joint_pos[3] = -0.1;
        s.alert = true;
        s.tick = 7;
        r.input = Input {
            state: Some(s),
            stop: true,
        };
        r.output.phase = Phase::Fault(Fault::Stale);
        r.output.goals = Some([0.25; NUM_SERVOS]);
        r.output.board = BoardCommand::EStop;
        r.output.frame[59] = f32::NAN;
        r.output.action[0] = -0.5;
        r.ticks[15] = -7;
        let mut buf = [0u8; RECORD_LEN];
        r.encode(&mut buf);
        let back = Record::decode(&buf).unwrap();
        assert!(back.output.frame[59].is_nan());
        r.output.frame[59] = 0.0;
        let mut back = back;
        back.output.frame[59] = 0.0;
        assert_eq!(back, r);
    }
}
