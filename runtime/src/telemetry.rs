//! The telemetry log: one fixed-size binary record per control cycle (what arrived, what the
//! controller decided, what was sent, how late the cycle woke), behind a JSON header naming the
//! bundle and the safety settings. `clawrl-runtime replay LOG` feeds the recorded inputs
//! through a fresh controller and checks every output bit for bit.
//!
//! File: `CLAWRL-TELEMETRY-1\n`, header length (u32 LE), header JSON, then records of
//! [`RECORD_LEN`] bytes, then, written when the log closes, a trailer of [`TRAILER_LEN`]
//! bytes: [`TRAILER_MAGIC`], the record count (u64), the byte length of everything before the
//! trailer (u64) and the SHA-256 of those bytes. Every number little-endian. A log without the
//! trailer is truncated (the run was killed or lost power); one whose lengths or checksum
//! disagree with its trailer is corrupt and is refused ([`LogReader::open`]).
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use clawrl_robot::OnboardSensors;
use clawrl_robot::quadruped::NUM_SERVOS;
use serde::{Deserialize, Serialize};

use crate::controller::{BoardCommand, Input, Output, Phase, SafetyConfig};
use crate::observation::FRAME_DIM;
use crate::wire::BoardState;

pub const MAGIC: &[u8] = b"CLAWRL-TELEMETRY-1\n";
/// Starts the trailer a closed log ends with.
pub const TRAILER_MAGIC: &[u8] = b"CLAWRL-TELEMETRY-END\n";
/// Bytes of the trailer: its mark, the record count, the length before it, the SHA-256.
pub const TRAILER_LEN: usize = TRAILER_MAGIC.len() + 8 + 8 + 32;

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
pub const RECORD_LEN: usize =
    8 * 3 + 2 + (2 + STATE_LEN) + COMMAND_LEN + OUTPUT_LEN + 4 * NUM_SERVOS;
/// The live command: whether there was one, and its three values.
const COMMAND_LEN: usize = 1 + 8 * 3;
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
        // Bit 0 the stop, bit 1 the operator's e-stop (logs from before it read 0 or 1).
        p.u8(u8::from(self.input.stop) | u8::from(self.input.estop) << 1);
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
        p.u8(u8::from(self.input.command.is_some()));
        p.f64s(&self.input.command.unwrap_or([0.0; 3]));
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
        let operator = t.u8();
        let (stop, estop) = (operator & 1 != 0, operator & 2 != 0);
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
        let has_command = t.u8() != 0;
        let command = t.f64s::<3>();
        let state = BoardState {
            sensors,
            current_ma,
            tick,
            uptime_us,
            alert,
        };
        let phase = Phase::from_code(t.u8())?;
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
                command: has_command.then_some(command),
                estop,
            },
            output,
            ticks,
        })
    }
}

pub struct LogWriter {
    out: BufWriter<File>,
    buf: [u8; RECORD_LEN],
    sha: Sha256,
    bytes: u64,
    records: u64,
}

impl LogWriter {
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Self> {
        let out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        let mut w = Self {
            out,
            buf: [0; RECORD_LEN],
            sha: Sha256::new(),
            bytes: 0,
            records: 0,
        };
        w.put(MAGIC)?;
        w.put(&(json.len() as u32).to_le_bytes())?;
        w.put(&json)?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.sha.update(b);
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        r.encode(&mut self.buf);
        let buf = self.buf;
        self.put(&buf)?;
        self.records += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Closes the log: writes the trailer (record count, length, SHA-256) and syncs the file.
    /// A log that never gets here reads as truncated.
    pub fn finish(mut self) -> std::io::Result<()> {
        let sha = std::mem::take(&mut self.sha).finalize();
        self.out.write_all(TRAILER_MAGIC)?;
        self.out.write_all(&self.records.to_le_bytes())?;
        self.out.write_all(&self.bytes.to_le_bytes())?;
        self.out.write_all(&sha)?;
        self.out
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
    }
}

/// What a log's trailer says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrity {
    /// The trailer is there and the record count, length and SHA-256 match.
    Verified { records: u64 },
    /// No trailer: the run did not close its log. Its whole records are read; `partial_bytes`
    /// of a last, cut record are not.
    Truncated { records: u64, partial_bytes: u64 },
}

impl std::fmt::Display for Integrity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Integrity::Verified { records } => {
                write!(f, "{records} records, length and SHA-256 verified")
            }
            Integrity::Truncated {
                records,
                partial_bytes,
            } => write!(
                f,
                "truncated: no trailer (the run did not close its log: killed or power lost); \
                 {records} whole records, {partial_bytes} bytes of a cut record ignored, \
                 nothing to check them against"
            ),
        }
    }
}

/// Reads a log: its header, then records one by one.
pub struct LogReader {
    input: BufReader<File>,
    pub header: Header,
    pub integrity: Integrity,
    /// Records not yet read.
    remaining: u64,
    buf: [u8; RECORD_LEN],
}

impl LogReader {
    /// Opens a log and checks it against its trailer first: a corrupt log (lengths or SHA-256
    /// that disagree with the trailer, or a damaged trailer) is an error naming the problem; a
    /// log without a trailer opens with [`Integrity::Truncated`].
    pub fn open(path: &Path) -> Result<Self, String> {
        let bad = |why: String| format!("telemetry log {}: {why}", path.display());
        let f = File::open(path).map_err(|e| bad(e.to_string()))?;
        let file_len = f.metadata().map_err(|e| bad(e.to_string()))?.len();
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
        // The checksum first: a damaged header is corruption, not a format of its own.
        let start = (MAGIC.len() + 4 + len) as u64;
        let (integrity, remaining) = check(&mut input, start, file_len).map_err(bad)?;
        let header: Header =
            serde_json::from_slice(&json).map_err(|e| bad(format!("header: {e}")))?;
        if header.record_len != RECORD_LEN {
            return Err(bad(format!(
                "records of {} bytes; this runtime reads {RECORD_LEN}",
                header.record_len
            )));
        }
        input
            .seek(SeekFrom::Start(start))
            .map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            input,
            header,
            integrity,
            remaining,
            buf: [0; RECORD_LEN],
        })
    }

    /// The next record; `None` at the end (the trailer, or for a truncated log the last whole
    /// record).
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        match self.input.read_exact(&mut self.buf) {
            Ok(()) => Record::decode(&self.buf)
                .map(Some)
                .ok_or_else(|| "a record with an unknown phase code".to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Checks a log of `file_len` bytes whose records start at `start` against its trailer; returns
/// what it found and the number of whole records to read.
fn check(
    input: &mut BufReader<File>,
    start: u64,
    file_len: u64,
) -> Result<(Integrity, u64), String> {
    let io = |e: std::io::Error| e.to_string();
    let body = file_len - start;
    let mut trailer = [0u8; TRAILER_LEN];
    let has_trailer = body >= TRAILER_LEN as u64 && {
        input
            .seek(SeekFrom::Start(file_len - TRAILER_LEN as u64))
            .map_err(io)?;
        input.read_exact(&mut trailer).map_err(io)?;
        trailer.starts_with(TRAILER_MAGIC)
    };
    if !has_trailer {
        let (records, partial) = (body / RECORD_LEN as u64, body % RECORD_LEN as u64);
        if partial == TRAILER_LEN as u64 {
            return Err(format!(
                "corrupt: it ends in {TRAILER_LEN} bytes, a trailer's length, that do not start \
                 with the trailer's mark (a damaged trailer)"
            ));
        }
        return Ok((
            Integrity::Truncated {
                records,
                partial_bytes: partial,
            },
            records,
        ));
    }
    let at = TRAILER_MAGIC.len();
    let records = u64::from_le_bytes(trailer[at..at + 8].try_into().unwrap());
    let length = u64::from_le_bytes(trailer[at + 8..at + 16].try_into().unwrap());
    let sha = &trailer[at + 16..];
    let before = file_len - TRAILER_LEN as u64;
    if length != before {
        return Err(format!(
            "corrupt: the trailer says {length} bytes precede it, the file has {before}"
        ));
    }
    let record_bytes = before - start;
    if record_bytes != records * RECORD_LEN as u64 {
        return Err(format!(
            "corrupt: the trailer says {records} records ({} bytes), the file holds {record_bytes} bytes of records",
            records * RECORD_LEN as u64
        ));
    }
    input.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut h = Sha256::new();
    let mut left = before;
    let mut chunk = vec![0u8; 1 << 16];
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        input.read_exact(&mut chunk[..n]).map_err(io)?;
        h.update(&chunk[..n]);
        left -= n as u64;
    }
    if h.finalize().as_slice() != sha {
        return Err(
            "corrupt: the SHA-256 of its contents does not match the one in its trailer \
             (bytes changed after it was written)"
                .into(),
        );
    }
    Ok((Integrity::Verified { records }, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Fault;

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
            command: Some([0.3, -0.1, 0.5]),
            estop: true,
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

    fn header() -> Header {
        let cfg = crate::config::RuntimeConfig::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/runtime/robot.toml"),
            &[],
        )
        .unwrap();
        Header {
            bundle: "student.clawrl".into(),
            bundle_sha256: "00".repeat(32),
            safety: cfg.safety(None).unwrap(),
            record_len: RECORD_LEN,
        }
    }

    /// A closed log of `n` records; returns its bytes.
    fn closed_log(path: &Path, n: u64) -> Vec<u8> {
        let mut w = LogWriter::create(path, &header()).unwrap();
        for cycle in 0..n {
            w.write(&Record {
                cycle,
                ..Default::default()
            })
            .unwrap();
        }
        w.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    fn read_all(path: &Path) -> Result<(Integrity, Vec<u64>), String> {
        let mut r = LogReader::open(path)?;
        let mut cycles = Vec::new();
        while let Some(rec) = r.next_record()? {
            cycles.push(rec.cycle);
        }
        Ok((r.integrity, cycles))
    }

    #[test]
    fn a_closed_log_is_verified_and_reads_its_records_not_its_trailer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        closed_log(&p, 5);
        let (i, cycles) = read_all(&p).unwrap();
        assert_eq!(i, Integrity::Verified { records: 5 });
        assert_eq!(cycles, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_truncated_log_says_so_and_reads_its_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let bytes = closed_log(&p, 5);
        // Killed in the middle of the fourth record: no trailer.
        let cut = bytes.len() - TRAILER_LEN - RECORD_LEN - 100;
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let (i, cycles) = read_all(&p).unwrap();
        assert_eq!(
            i,
            Integrity::Truncated {
                records: 3,
                partial_bytes: (RECORD_LEN - 100) as u64
            }
        );
        assert!(i.to_string().starts_with("truncated: no trailer"), "{i}");
        assert_eq!(cycles, [0, 1, 2]);
        // Cut exactly at the trailer: still no trailer.
        std::fs::write(&p, &bytes[..bytes.len() - TRAILER_LEN]).unwrap();
        let (i, _) = read_all(&p).unwrap();
        assert!(matches!(i, Integrity::Truncated { records: 5, .. }), "{i}");
    }

    #[test]
    fn one_flipped_byte_in_a_record_the_header_or_the_trailer_is_reported_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let bytes = closed_log(&p, 5);
        let records_at = bytes.len() - TRAILER_LEN - 5 * RECORD_LEN;
        // A byte of a record, of a number in the header, and of each trailer field.
        let header_digit = bytes[..records_at]
            .iter()
            .rposition(|b| b.is_ascii_digit())
            .unwrap();
        let trailer = bytes.len() - TRAILER_LEN;
        for (at, why) in [
            (records_at + 2 * RECORD_LEN + 17, "SHA-256"),
            (header_digit, "SHA-256"),
            (trailer + 3, "damaged trailer"),
            (trailer + TRAILER_MAGIC.len(), "records"),
            (trailer + TRAILER_MAGIC.len() + 8, "bytes precede it"),
            (bytes.len() - 1, "SHA-256"),
        ] {
            let mut b = bytes.clone();
            b[at] ^= if at == header_digit { 0x01 } else { 0x40 };
            std::fs::write(&p, &b).unwrap();
            let e = read_all(&p).map(|(i, _)| i).unwrap_err();
            assert!(e.contains("corrupt") && e.contains(why), "byte {at}: {e}");
        }
    }
}
