//! The serial link to the servo board: Dynamixel 2.0 transactions over a `serialport` port,
//! with the wire format of `clawrl-protocol`. One [`Link`] is owned by the serial thread.
//!
//! A transaction writes one instruction and, when it expects an answer, reads until a status
//! packet from the addressed device arrives or the timeout passes. Buffers are allocated once;
//! the cycle (SYNC WRITE of goals, READ of the robot state) allocates nothing.
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clawrl_protocol::table::board::{fault, state};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::ids;
use clawrl_protocol::{ALERT_BIT, Decoder, Instruction, PacketWriter, Status};
use clawrl_robot::quadruped::NUM_SERVOS;
use serialport::SerialPort;

use crate::lockstep::{HANG_LIMIT, Lockstep};
use crate::wire::{self, BoardState};

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("serial port {port}: {reason}")]
    Open { port: String, reason: String },
    /// The OS error's text is in the message, so it is not also the `source()` (which an
    /// error chain, `{:#}`, would print again); hence the hand-written `From`.
    #[error("serial I/O: {0}")]
    Io(std::io::Error),
    #[error("device {id} did not answer within {timeout:?}")]
    Timeout { id: u8, timeout: Duration },
    #[error(
        "device {id} answered model number {got:#06x}, expected {expected:#06x}: is this the clawrl board?"
    )]
    WrongModel { id: u8, got: u16, expected: u16 },
    #[error("device {id} answered with error {error:#04x}")]
    Refused { id: u8, error: u8 },
    #[error("device {id} answered {got} bytes, expected {expected}")]
    BadAnswer { id: u8, got: usize, expected: usize },
    #[error(
        "the board is in e-stop (latched faults {faults:#06x}: {}; safety state {state}); nothing was \
         cleared or enabled. Clear it with `clawrl-runtime run --clear-estop` once the robot is safe",
        fault_names(*faults)
    )]
    EStopLatched { faults: u16, state: u8 },
}

impl From<std::io::Error> for LinkError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// The latched causes of a Fault Flags value in words: "e-stop, watchdog".
pub fn fault_names(faults: u16) -> String {
    const NAMES: [(u16, &str); 6] = [
        (fault::ESTOP, "e-stop"),
        (fault::WATCHDOG, "watchdog"),
        (fault::OVER_TEMPERATURE, "over-temperature"),
        (fault::UNDER_VOLTAGE, "under-voltage"),
        (fault::IMU, "IMU"),
        (fault::FEEDBACK, "servo feedback"),
    ];
    let mut words: Vec<String> = NAMES
        .iter()
        .filter(|(bit, _)| faults & bit != 0)
        .map(|(_, name)| (*name).to_string())
        .collect();
    let known = NAMES.iter().fold(0, |acc, (bit, _)| acc | bit);
    if faults & !known != 0 {
        words.push(format!("unknown bits {:#06x}", faults & !known));
    }
    if words.is_empty() {
        words.push("none".into());
    }
    words.join(", ")
}

/// What the board reported at start-up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoardInfo {
    pub firmware: u8,
    /// Safety state and latched faults before the runtime cleared them.
    pub state: u8,
    pub faults: u16,
}

/// How long the start-up handshake waits for each answer (at least): a board still booting
/// or a loaded host may answer later than the control loop's `serial.answer_timeout_ms`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(100);

pub struct Link {
    port: Box<dyn SerialPort>,
    decoder: Decoder<1024>,
    tx: [u8; 256],
    rx: [u8; 256],
    answer: [u8; 512],
    timeout: Duration,
    /// In lockstep with a simulated body: an answer is lost when the line is quiet, not when
    /// `timeout` has passed (see [`crate::lockstep`]).
    lockstep: Option<Arc<Lockstep>>,
    /// State reads that went out on the wire (the body moves one period at each).
    state_reads_sent: u64,
    /// Each servo's bus ID, in action order (the robot description's `id`s).
    servo_ids: Vec<u8>,
}

impl Link {
    /// Opens `port` at `baud`; a missing or busy port gets one clear message.
    pub fn open(port: &str, baud: u32, timeout: Duration) -> Result<Self, LinkError> {
        let p = serialport::new(port, baud)
            // Short reads: the transaction loop owns the overall timeout.
            .timeout(Duration::from_millis(1))
            .open_native()
            .map_err(|e| LinkError::Open {
                port: port.into(),
                reason: match e.kind() {
                    serialport::ErrorKind::NoDevice => {
                        format!("no such device ({e}); is the board plugged in?")
                    }
                    _ => e.to_string(),
                },
            })?;
        // Exclusive access (TIOCEXCL): a second runtime on the same port fails here, not on
        // garbled traffic later. serialport's open_native sets it; check it is ours.
        nonblocking(&p);
        Ok(Self::from_port(Box::new(p), timeout))
    }

    pub fn from_port(port: Box<dyn SerialPort>, timeout: Duration) -> Self {
        Self {
            port,
            decoder: Decoder::new(),
            tx: [0; 256],
            rx: [0; 256],
            answer: [0; 512],
            timeout,
            lockstep: None,
            state_reads_sent: 0,
            servo_ids: (0..NUM_SERVOS).map(ids::servo_id).collect(),
        }
    }

    /// This link addressing the servos (action order) by `servo_ids`: a robot wired in
    /// another order than IDs 1-16, or a robot of fewer servos (the link addresses only
    /// these).
    pub fn with_servo_ids(mut self, servo_ids: &[u8]) -> Self {
        self.servo_ids = servo_ids.to_vec();
        self
    }

    pub fn servo_ids(&self) -> &[u8] {
        &self.servo_ids
    }

    /// This link in lockstep with a simulated body: a new connection on `lockstep`'s counters.
    pub fn with_lockstep(mut self, lockstep: Option<Arc<Lockstep>>) -> Self {
        if let Some(l) = &lockstep {
            l.runtime_connected();
        }
        self.lockstep = lockstep;
        self
    }

    /// State reads written to the port so far.
    pub fn state_reads_sent(&self) -> u64 {
        self.state_reads_sent
    }

    fn send(&mut self, n: usize) -> Result<(), LinkError> {
        self.discard_stale()?;
        self.port.write_all(&self.tx[..n])?;
        if let Some(l) = &self.lockstep {
            l.sent(n);
        }
        Ok(())
    }

    /// Start-up: the board and all 16 servos answer PING with the right model numbers; the
    /// board's latched faults are cleared and its torque is off; its watchdog and safe
    /// behaviour are set.
    ///
    /// A latched e-stop is the exception: it is an operator's decision that must survive a
    /// restart of the host, so unless `clear_estop` (the operator's explicit `--clear-estop`)
    /// the handshake stops at [`LinkError::EStopLatched`] and writes nothing to the board.
    /// Other latched faults are still cleared here, as before: the watchdog fault is the trace
    /// of the host going silent (a crash, a pulled cable), which this restart ends; the sensor
    /// faults (over-temperature, under-voltage, IMU, servo feedback) are re-checked by the
    /// board every tick and latch again at once while their cause persists, so clearing them
    /// cannot hide a live condition the way clearing an e-stop would.
    ///
    /// Start-up is not time-critical: each answer may take [`HANDSHAKE_TIMEOUT`] (or the
    /// link's own timeout, if longer), and a PING that times out is asked twice more.
    pub fn handshake(
        &mut self,
        watchdog_ms: u16,
        behaviour: u8,
        clear_estop: bool,
    ) -> Result<BoardInfo, LinkError> {
        let run_timeout = self.timeout;
        self.timeout = run_timeout.max(HANDSHAKE_TIMEOUT);
        let info = self.start_up(watchdog_ms, behaviour, clear_estop);
        self.timeout = run_timeout;
        info
    }

    fn start_up(
        &mut self,
        watchdog_ms: u16,
        behaviour: u8,
        clear_estop: bool,
    ) -> Result<BoardInfo, LinkError> {
        self.port.clear(serialport::ClearBuffer::All).ok();
        let firmware = self.ping_patiently(ids::BOARD, board::MODEL_NUMBER)?;
        for i in 0..self.servo_ids.len() {
            self.ping_patiently(self.servo_ids[i], servo::MODEL_NUMBER)?;
        }
        let mut st = [0u8; 3];
        self.read(ids::BOARD, board::SAFETY_STATE, &mut st)?;
        let info = BoardInfo {
            firmware,
            state: st[0],
            faults: u16::from_le_bytes([st[1], st[2]]),
        };
        if (info.faults & fault::ESTOP != 0 || info.state == state::ESTOP) && !clear_estop {
            return Err(LinkError::EStopLatched {
                faults: info.faults,
                state: info.state,
            });
        }
        self.command(board::command::CLEAR)?;
        self.command(board::command::DISABLE)?;
        self.write(
            ids::BOARD,
            board::WATCHDOG_TIMEOUT_MS,
            &watchdog_ms.to_le_bytes(),
        )?;
        self.write(ids::BOARD, board::SAFE_BEHAVIOUR, &[behaviour])?;
        Ok(info)
    }

    /// [`Link::ping`], asked twice more while it times out: a board still booting, or an
    /// answer late on a loaded host (HIL runs ended at start-up on one late servo answer,
    /// 20 ms, under a load of 6 on 2 cores). A wrong answer is not asked again.
    fn ping_patiently(&mut self, id: u8, expected: u16) -> Result<u8, LinkError> {
        let mut answer = self.ping(id, expected);
        for _ in 0..2 {
            if !matches!(answer, Err(LinkError::Timeout { .. })) {
                break;
            }
            answer = self.ping(id, expected);
        }
        answer
    }

    /// PING; returns the firmware version after checking the model number.
    pub fn ping(&mut self, id: u8, expected: u16) -> Result<u8, LinkError> {
        let n = self.encode(id, Instruction::Ping, &[])?;
        let data = self.transact(n, id)?;
        if data.len() != 3 {
            return Err(LinkError::BadAnswer {
                id,
                got: data.len(),
                expected: 3,
            });
        }
        let model = u16::from_le_bytes([data[0], data[1]]);
        if model != expected {
            return Err(LinkError::WrongModel {
                id,
                got: model,
                expected,
            });
        }
        Ok(data[2])
    }

    /// A board safety command (`board::command`).
    pub fn command(&mut self, cmd: u8) -> Result<(), LinkError> {
        self.write(ids::BOARD, board::SAFETY_COMMAND, &[cmd])
    }

    /// WRITE with its status answer; an error byte other than the alert bit is refused.
    pub fn write(&mut self, id: u8, address: u16, data: &[u8]) -> Result<(), LinkError> {
        let mut w = PacketWriter::new(&mut self.tx, id, Instruction::Write);
        w.push_u16(address).push(data);
        let n = w.finish().map_err(|_| overflow())?;
        self.transact(n, id).map(|_| ())
    }

    /// READ into `out`.
    pub fn read(&mut self, id: u8, address: u16, out: &mut [u8]) -> Result<bool, LinkError> {
        let mut w = PacketWriter::new(&mut self.tx, id, Instruction::Read);
        w.push_u16(address).push_u16(out.len() as u16);
        let n = w.finish().map_err(|_| overflow())?;
        let (alert, len) = self.transact_raw(n, id)?;
        if len != out.len() {
            return Err(LinkError::BadAnswer {
                id,
                got: len,
                expected: out.len(),
            });
        }
        out.copy_from_slice(&self.answer[..len]);
        Ok(alert)
    }

    /// SYNC WRITE of Goal Position (ticks) to the robot's servos, by their IDs: one packet, no
    /// answer. `ticks` past the robot's servo count are not sent.
    pub fn sync_write_goals(&mut self, ticks: &[i32; NUM_SERVOS]) -> Result<(), LinkError> {
        let mut w = PacketWriter::new(
            &mut self.tx,
            clawrl_protocol::BROADCAST_ID,
            Instruction::SyncWrite,
        );
        w.push_u16(servo::GOAL_POSITION).push_u16(4);
        for (id, t) in self.servo_ids.iter().zip(ticks) {
            w.push_u8(*id).push_u32(*t as u32);
        }
        let n = w.finish().map_err(|_| overflow())?;
        self.send(n)
    }

    /// Each servo's Present Position (rad), READ at its own ID in action order: what the
    /// wiring checks compare. Not the robot-state read, so in lockstep the body does not move.
    pub fn read_servo_positions(&mut self) -> Result<[f64; NUM_SERVOS], LinkError> {
        let mut out = [0.0; NUM_SERVOS];
        for (rad, &id) in out.iter_mut().zip(&self.servo_ids.clone()) {
            let mut ticks = [0u8; 4];
            self.read(id, servo::PRESENT_POSITION, &mut ticks)?;
            let ticks = i32::from_le_bytes(ticks);
            *rad = f64::from(clawrl_protocol::units::ticks_to_rad(ticks));
        }
        Ok(out)
    }

    /// READ of the whole robot state from the board (PROTOCOL.md's recommended cycle).
    pub fn read_state(&mut self) -> Result<BoardState, LinkError> {
        let mut w = PacketWriter::new(&mut self.tx, ids::BOARD, Instruction::Read);
        w.push_u16(board::ROBOT_STATE)
            .push_u16(board::ROBOT_STATE_LEN);
        let n = w.finish().map_err(|_| overflow())?;
        // The alert bit is not an error here: it is news for the safety layer.
        let sent = self.send(n);
        self.state_reads_sent += u64::from(sent.is_ok());
        sent?;
        let (alert, len) = self.await_answer(ids::BOARD)?;
        wire::decode_state(&self.answer[..len], alert).ok_or(LinkError::BadAnswer {
            id: ids::BOARD,
            got: len,
            expected: board::ROBOT_STATE_LEN as usize,
        })
    }

    fn encode(&mut self, id: u8, inst: Instruction, params: &[u8]) -> Result<usize, LinkError> {
        clawrl_protocol::encode(&mut self.tx, id, inst, &[params]).map_err(|_| overflow())
    }

    /// Sends `tx[..n]` and returns the answer's data; a non-alert error byte is refused.
    fn transact(&mut self, n: usize, id: u8) -> Result<&[u8], LinkError> {
        let (_, len) = self.transact_raw(n, id)?;
        Ok(&self.answer[..len])
    }

    /// Sends `tx[..n]`, waits for `id`'s status packet, copies its data into `answer`; returns
    /// the alert bit and the data length.
    fn transact_raw(&mut self, n: usize, id: u8) -> Result<(bool, usize), LinkError> {
        self.send(n)?;
        self.await_answer(id)
    }

    /// Waits for `id`'s status packet: until `timeout`, or in lockstep until the line is
    /// quiet (the answer was lost) or [`HANG_LIMIT`] passes (the body hung: an error).
    fn await_answer(&mut self, id: u8) -> Result<(bool, usize), LinkError> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        loop {
            while let Some(event) = self.decoder.next_event() {
                let Ok(packet) = event else { continue };
                let Some(status) = Status::parse(&packet) else {
                    continue;
                };
                if status.id != id {
                    continue;
                }
                if status.error & !ALERT_BIT != 0 {
                    return Err(LinkError::Refused {
                        id,
                        error: status.error,
                    });
                }
                let len = status.data.len().min(self.answer.len());
                self.answer[..len].copy_from_slice(&status.data[..len]);
                return Ok((status.error & ALERT_BIT != 0, len));
            }
            let lost = match &self.lockstep {
                Some(_) if start.elapsed() > HANG_LIMIT => return Err(hung()),
                // Quiet, and the port still open (the body pulls the cable before it says
                // it acted on the request, so a read now fails the same way every run).
                Some(l) => l.quiet() && self.port_alive()?,
                None => Instant::now() >= deadline,
            };
            if lost {
                return Err(LinkError::Timeout {
                    id,
                    timeout: self.timeout,
                });
            }
            match self.port.read(&mut self.rx) {
                Ok(0) => return Err(closed()),
                Ok(k) => {
                    if let Some(l) = &self.lockstep {
                        l.received(k);
                    }
                    for &b in &self.rx[..k] {
                        self.decoder.push(b);
                    }
                }
                Err(e) if nothing_yet(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Link {
    /// Lockstep, before each request: answers that came too late for their request (a stall
    /// releases all it held at once) are waited for until the line is quiet and thrown away, or
    /// each later request would be handed the answer to an earlier one and the loop would run
    /// that many periods behind for good. On the wall clock nothing is thrown away: there a
    /// late answer is often the only reading a loaded host gets (the real-board HIL walk fell
    /// when they were dropped), and the answer's ID check sorts out the rest.
    fn discard_stale(&mut self) -> Result<(), LinkError> {
        let Some(l) = self.lockstep.clone() else {
            return Ok(());
        };
        self.decoder.clear();
        let start = Instant::now();
        while !l.quiet() {
            if start.elapsed() > HANG_LIMIT {
                return Err(hung());
            }
            match self.port.read(&mut self.rx) {
                Ok(0) => return Err(closed()),
                Ok(k) => l.received(k),
                Err(e) if nothing_yet(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Lockstep: whether the port still reads (nothing, in time); an error when it closed.
    fn port_alive(&mut self) -> Result<bool, LinkError> {
        match self.port.read(&mut self.rx) {
            Ok(0) => Err(closed()),
            Ok(k) => {
                // Bytes the counters did not expect: a foreign writer. Taken as they come.
                for &b in &self.rx[..k] {
                    self.decoder.push(b);
                }
                Ok(false)
            }
            Err(e) if nothing_yet(&e) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

/// serialport polls, then reads a blocking descriptor: when something else takes the bytes
/// in between (a second reader on the port, which root can open despite TIOCEXCL; a confused
/// USB adapter) the read blocks for good, and with it the serial thread and the operator's
/// stop. Non-blocking, such a read says "nothing yet" and the transaction's own timeout rules.
fn nonblocking(p: &serialport::TTYPort) {
    use std::os::fd::AsRawFd;
    let fd = p.as_raw_fd();
    // SAFETY: fcntl on a descriptor this port owns; only the O_NONBLOCK bit changes.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// A read that found nothing: the port's timeout passed, or (non-blocking) nothing is there.
fn nothing_yet(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

fn hung() -> LinkError {
    LinkError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("lockstep: the simulated body gave no answer in {HANG_LIMIT:?}"),
    ))
}

fn closed() -> LinkError {
    LinkError::Io(std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the serial port closed",
    ))
}

fn overflow() -> LinkError {
    LinkError::Io(std::io::Error::other(
        "packet larger than the link's buffer",
    ))
}
