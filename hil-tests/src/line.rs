//! The vocabulary the bridge's two loops (virtual board, real board), the scenarios and the
//! reference share, and the runtime's end of the cable. A leaf: it imports no other module of
//! this crate but the fault counts, so the rest form a graph without circles
//! (`scripts/module-circles` checks it in CI).
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clawrl_firmware::SafetyState;
use clawrl_runtime::lockstep::Lockstep;
use serialport::{SerialPort, TTYPort};

use crate::faults::{Direction, FaultCounts, FaultWindow, Faults};
use crate::framer::{Framer, Unit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clocking {
    Lockstep,
    RealTime,
}

/// Something that happens to the robot at a simulated time.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A shove: this velocity (m/s, world x and y) added to the torso.
    Push([f64; 2]),
    /// The e-stop button wired to the board.
    EStop,
    /// A velocity command datagram (runtime/src/command/datagram.rs, what `clawrl teleop`
    /// sends) over a real UDP socket to the runtime's `[command] listen` address.
    Command {
        to: std::net::SocketAddr,
        seq: u32,
        velocity: [f64; 3],
    },
}

/// Sends one command datagram to `to`. On loopback the datagram is in the runtime's socket
/// before this returns, so in lockstep the runtime's next cycle sees it, at any load. A send
/// that fails is what UDP may do; the runtime's command guard copes, and the run shows it.
pub fn send_command(to: std::net::SocketAddr, seq: u32, velocity: [f64; 3]) {
    use clawrl_runtime::command::datagram::Datagram;
    let d = Datagram {
        seq,
        flags: 0,
        velocity: velocity.map(|v| v as f32),
    };
    if let Ok(socket) = std::net::UdpSocket::bind(("127.0.0.1", 0)) {
        let _ = socket.send_to(&d.encode(), to);
    }
}

#[derive(Debug, Clone)]
pub struct BridgeConfig {
    pub clocking: Clocking,
    /// The runtime's control period (µs).
    pub period_us: u64,
    pub faults: Vec<FaultWindow>,
    pub fault_seed: u64,
    pub events: Vec<(f64, Event)>,
    /// Lockstep: the counters shared with the runtime (`clawrl_runtime::lockstep`), by which
    /// the body takes its turns; unused in real time.
    pub lockstep: Arc<Lockstep>,
}

/// The robot once per control period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Simulated time, s.
    pub t: f64,
    pub base_pos: [f64; 3],
    /// Torso velocity in its own frame, m/s.
    pub base_lin_vel: [f64; 3],
    pub yaw_rate: f64,
    pub state: SafetyState,
    pub faults: u16,
    /// Outputs putting out pulses.
    pub driven: usize,
    pub fallen: bool,
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub samples: Vec<Sample>,
    /// Servo outputs (per tick and servo) that commanded an angle outside the joint's limits.
    pub out_of_limit: u64,
    /// Servo outputs checked.
    pub outputs_checked: u64,
    pub faults: FaultCounts,
    /// Control periods the body advanced, and those it advanced without the runtime's state
    /// read (a lockstep cycle that could not send it asked for its period instead).
    pub periods: u64,
    pub free_run_periods: u64,
    /// Simulated time the board's watchdog fault first latched, s.
    pub watchdog_at: Option<f64>,
    pub wall: Duration,
    /// MuJoCo steps taken.
    pub physics_steps: u64,
    /// The body's pose (MuJoCo qpos) at each sample, for `clawrl hil --video`: the body
    /// redrawn afterwards, so drawing never slows the loop (a real board keeps its time).
    pub qpos: Vec<Vec<f64>>,
}

impl Trace {
    /// Simulated seconds covered.
    pub fn seconds(&self) -> f64 {
        self.samples.last().map_or(0.0, |s| s.t)
    }
}

/// The runtime's end of the line: a pty pair behind a fixed path (a symlink), so the cable
/// can be pulled (the pair closed: the runtime's port fails) and plugged back (a new pair
/// behind the same path: the runtime's reconnect finds it).
pub(crate) struct Port {
    link: PathBuf,
    pair: Option<(TTYPort, TTYPort)>,
}

impl Port {
    pub(crate) fn new(link: &Path) -> Result<Self> {
        let mut p = Self {
            link: link.to_path_buf(),
            pair: None,
        };
        p.plug()?;
        Ok(p)
    }

    pub(crate) fn plug(&mut self) -> Result<()> {
        let (mut master, slave) = TTYPort::pair().context("creating a pseudo-terminal")?;
        master.set_timeout(Duration::from_micros(200))?;
        let name = slave.name().context("pty without a name")?;
        let tmp = self.link.with_extension("new");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&name, &tmp)?;
        std::fs::rename(&tmp, &self.link)?;
        self.pair = Some((master, slave));
        Ok(())
    }

    pub(crate) fn unplug(&mut self) {
        self.pair = None;
    }

    pub(crate) fn plugged(&self) -> bool {
        self.pair.is_some()
    }

    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        match &mut self.pair {
            Some((m, _)) => m.read(buf).unwrap_or(0),
            None => {
                std::thread::sleep(Duration::from_micros(200));
                0
            }
        }
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if let Some((m, _)) = &mut self.pair {
            let _ = m.write_all(bytes);
        }
    }
}

/// The cable between the runtime's pseudo-terminal and the board, as both HIL loops drive it
/// (the virtual board's in [`crate::bridge`], a real board's in [`crate::real_board`]): the
/// runtime's bytes cut into packets, the scenario's faults applied to each packet on each way,
/// and the packets waiting for their release time (s since the start).
pub(crate) struct Line {
    pub(crate) port: Port,
    pub(crate) faults: Faults,
    to_board: Framer,
    to_runtime: Framer,
    board_queue: std::collections::VecDeque<(f64, Unit)>,
    runtime_queue: std::collections::VecDeque<(f64, Unit)>,
}

impl Line {
    pub(crate) fn new(port: Port, cfg: &BridgeConfig) -> Self {
        Self {
            port,
            faults: Faults::new(cfg.faults.clone(), cfg.fault_seed),
            to_board: Framer::default(),
            to_runtime: Framer::default(),
            board_queue: Default::default(),
            runtime_queue: Default::default(),
        }
    }

    /// What the runtime wrote since the last call: the bytes read, and the whole packets (or
    /// runs of garbage) in order.
    pub(crate) fn read_runtime(&mut self, buf: &mut [u8]) -> (usize, Vec<Unit>) {
        let n = self.port.read(buf);
        self.to_board.push(&buf[..n]);
        let mut units = Vec::new();
        while let Some(unit) = self.to_board.next_unit() {
            units.push(unit);
        }
        (n, units)
    }

    /// A packet on its way to the board at `now`, through the faults (it may be lost,
    /// corrupted or held).
    pub(crate) fn send_to_board(&mut self, mut unit: Unit, now: f64) {
        if let Some(at) = self.faults.apply(Direction::ToBoard, &mut unit, now) {
            self.board_queue.push_back((at, unit));
        }
    }

    /// The packets for the board whose release time has come by `now`, in order.
    pub(crate) fn due_to_board(&mut self, now: f64) -> Vec<Unit> {
        let mut due = Vec::new();
        while self.board_queue.front().is_some_and(|(at, _)| *at <= now) {
            due.push(self.board_queue.pop_front().expect("checked").1);
        }
        due
    }

    /// The board's answer bytes at `now`: framed, through the faults, queued for the runtime.
    pub(crate) fn queue_answers(&mut self, bytes: &[u8], now: f64) {
        self.to_runtime.push(bytes);
        while let Some(mut unit) = self.to_runtime.next_unit() {
            if let Some(at) = self.faults.apply(Direction::ToRuntime, &mut unit, now) {
                self.runtime_queue.push_back((at, unit));
            }
        }
    }

    /// Writes the runtime every answer due by `now`; `written` hears the length of each one
    /// written while the cable is in.
    pub(crate) fn deliver_to_runtime(&mut self, now: f64, mut written: impl FnMut(usize)) {
        while self.runtime_queue.front().is_some_and(|(at, _)| *at <= now) {
            let (_, unit) = self.runtime_queue.pop_front().expect("checked");
            if self.port.plugged() {
                written(unit.bytes().len());
            }
            self.port.write(unit.bytes());
        }
    }

    /// Plugs or pulls the cable as the fault windows say at `now`; `plugging` runs just before
    /// a new connection exists. A pty that cannot be had stays out, tried again next turn.
    pub(crate) fn cable(&mut self, now: f64, plugging: impl FnOnce()) {
        let out = self.faults.unplugged(now);
        if out && self.port.plugged() {
            self.port.unplug();
        } else if !out && !self.port.plugged() {
            plugging();
            let _ = self.port.plug();
        }
    }
}

/// A microcontroller running the firmware, on a serial port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardPort {
    pub path: String,
    pub baud: u32,
    /// How often the body and the board exchange sensors and pulses, µs.
    pub exchange_us: u64,
}
