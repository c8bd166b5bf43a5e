//! The bridge between the runtime and the body: a pseudo-terminal the runtime opens as its
//! servo port, the virtual board (firmware core on simulated time) behind it, the MuJoCo body
//! behind the board, and the scenario's faults on the line in between. One thread owns all of
//! it, so a lockstep run is deterministic.
//!
//! Clocks:
//! - **lockstep**: the body's time advances one control period each time the runtime asks
//!   for the robot state (the last transaction of its cycle), after that cycle's goals reached
//!   the board, and before the board answers (PX4's lockstep SITL works the same way). A
//!   cycle that could not send that read (cable out) asks for its period through the shared
//!   counters (`clawrl_runtime::lockstep`), so the board's watchdog still sees the silence,
//!   and the runtime calls an answer lost when those counters say the line is quiet. No
//!   outcome depends on the wall clock: the same bundle and seed give the same trace.
//! - **real time**: the body's time follows the wall clock, what a robot sees.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Result;
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::SteppedBoard;
use clawrl_protocol::table::board;

use crate::body::MujocoBody;
use crate::framer::Unit;
use crate::line::{BoardPort, BridgeConfig, Clocking, Event, Line, Port, Sample, Trace};

/// A running bridge; [`Bridge::finish`] stops it and returns the trace.
pub struct Bridge {
    link: PathBuf,
    stop: Arc<AtomicBool>,
    now_us: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<Trace>>>,
}

impl Bridge {
    /// Starts the bridge; the runtime opens [`Bridge::port`]. `body` is built in the bridge's
    /// thread (MuJoCo's data stays there).
    pub fn spawn(
        dir: &Path,
        firmware: FirmwareConfig,
        body: impl FnOnce() -> Result<MujocoBody> + Send + 'static,
        cfg: BridgeConfig,
    ) -> Result<Self> {
        let link = dir.join("board.tty");
        let port = Port::new(&link)?;
        let stop = Arc::new(AtomicBool::new(false));
        let now_us = Arc::new(AtomicU64::new(0));
        let (stop2, now2) = (stop.clone(), now_us.clone());
        let thread = std::thread::Builder::new()
            .name("hil-bridge".into())
            .spawn(move || {
                let board = SteppedBoard::new(firmware, body()?);
                Loop::new(board, port, cfg, now2).run(&stop2)
            })?;
        Ok(Self {
            link,
            stop,
            now_us,
            thread: Some(thread),
        })
    }

    /// Starts the bridge to a real board on `board_port` in HIL mode (real time only; see
    /// [`crate::real_board`]). The board is checked and put in HIL mode before this returns:
    /// a port that is not a board, or a board for another robot, stops here.
    pub fn spawn_real(
        dir: &Path,
        board: &BoardPort,
        body: impl FnOnce() -> Result<MujocoBody> + Send + 'static,
        cfg: BridgeConfig,
    ) -> Result<Self> {
        let link = dir.join("board.tty");
        let port = Port::new(&link)?;
        let stop = Arc::new(AtomicBool::new(false));
        let now_us = Arc::new(AtomicU64::new(0));
        let (stop2, now2) = (stop.clone(), now_us.clone());
        let (board_port, baud, exchange_us) = (board.path.clone(), board.baud, board.exchange_us);
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<()>>(1);
        let thread = std::thread::Builder::new()
            .name("hil-bridge".into())
            .spawn(move || {
                let opened = body().and_then(|mut body| {
                    let first = crate::real_board::rest_reading(&mut body);
                    let board = crate::real_board::HilBoard::open(&board_port, baud, &first)?;
                    Ok((body, board))
                });
                let (body, board) = match opened {
                    Ok(x) => {
                        let _ = ready_tx.send(Ok(()));
                        x
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Ok(Trace::default());
                    }
                };
                crate::real_board::RealLoop::new(board, body, port, cfg, exchange_us, now2)
                    .run(&stop2)
            })?;
        ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the HIL bridge stopped while opening the board"))??;
        Ok(Self {
            link,
            stop,
            now_us,
            thread: Some(thread),
        })
    }

    /// The serial port path the runtime opens.
    pub fn port(&self) -> &Path {
        &self.link
    }

    /// The body's simulated time, µs.
    pub fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed)
    }

    pub fn finish(mut self) -> Result<Trace> {
        self.stop.store(true, Ordering::Relaxed);
        let t = self.thread.take().expect("finished once");
        t.join()
            .map_err(|_| anyhow::anyhow!("the HIL bridge panicked"))?
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Real time: how far the body moves at a time (two MuJoCo steps).
const REAL_TIME_STEP_US: u64 = 4_000;

/// The virtual board's loop: the runtime's pty and the faults (the [`Line`]), the board and
/// the body on simulated time.
struct Loop {
    board: SteppedBoard<MujocoBody>,
    line: Line,
    cfg: BridgeConfig,
    events: Vec<(f64, Event)>,
    trace: Trace,
    published: Arc<AtomicU64>,
}

/// The runtime's READ of the whole robot state: the last transaction of its cycle.
fn is_state_read(u: &Unit) -> bool {
    u.header() == Some((100, 0x02, Some(board::ROBOT_STATE)))
}

impl Loop {
    fn new(
        board: SteppedBoard<MujocoBody>,
        port: Port,
        cfg: BridgeConfig,
        published: Arc<AtomicU64>,
    ) -> Self {
        let mut events = cfg.events.clone();
        events.sort_by(|a, b| b.0.total_cmp(&a.0));
        Self {
            board,
            line: Line::new(port, &cfg),
            cfg,
            events,
            trace: Trace::default(),
            published,
        }
    }

    fn now_s(&self) -> f64 {
        self.board.now_us() as f64 * 1e-6
    }

    fn run(mut self, stop: &AtomicBool) -> Result<Trace> {
        let start = Instant::now();
        let lockstep = self.cfg.lockstep.clone();
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            let (n, units) = self.line.read_runtime(&mut buf);
            for unit in units {
                if self.cfg.clocking == Clocking::Lockstep && is_state_read(&unit) {
                    // This cycle's goals reach the board before the body moves on.
                    self.deliver_to_board();
                    self.period();
                }
                let t = self.now_s();
                self.line.send_to_board(unit, t);
                self.deliver_to_board();
            }
            match self.cfg.clocking {
                Clocking::Lockstep => {
                    // A cycle that could not send its state read (cable out, an earlier
                    // transaction failed) asks for its period: taken, and what it released
                    // written, before the runtime hears it was.
                    while lockstep.period_wanted() {
                        self.period();
                        self.trace.free_run_periods += 1;
                        self.deliver_to_board();
                        self.deliver_to_runtime();
                        lockstep.period_taken();
                    }
                }
                Clocking::RealTime => {
                    // In steps of a few ms, not whole periods: the runtime reads the state
                    // shortly before its deadline (serial.read_lead_us), and a body that
                    // moved only once a period would hand it a reading up to a period old.
                    let wall = start.elapsed().as_micros() as u64;
                    let step = REAL_TIME_STEP_US.min(self.cfg.period_us);
                    while self.board.now_us() + step <= wall {
                        self.advance(step);
                        if self.board.now_us() % self.cfg.period_us < step {
                            self.end_period();
                        }
                    }
                }
            }
            self.deliver_to_board();
            self.deliver_to_runtime();
            match self.cfg.clocking {
                // Answers first, then the word that these bytes were acted on.
                Clocking::Lockstep => lockstep.consumed(n),
                Clocking::RealTime => self.cable(),
            }
        }
        self.trace.wall = start.elapsed();
        self.trace.faults = self.line.faults.counts;
        self.trace.physics_steps = self.board.plant().steps();
        Ok(self.trace)
    }

    /// Plugs or pulls the cable as the fault windows say; a new connection restarts the byte
    /// counts before the runtime can open it.
    fn cable(&mut self) {
        let now = self.now_s();
        let lockstep = &self.cfg.lockstep;
        self.line.cable(now, || lockstep.body_connected());
    }

    /// Hands the board every packet whose time has come; its answers go on the way back.
    fn deliver_to_board(&mut self) {
        let now = self.now_s();
        let mut answers = Vec::new();
        for unit in self.line.due_to_board(now) {
            self.board.receive(unit.bytes(), &mut answers);
        }
        self.line.queue_answers(&answers, now);
    }

    fn deliver_to_runtime(&mut self) {
        let now = self.now_s();
        let lockstep = &self.cfg.lockstep;
        self.line.deliver_to_runtime(now, |n| lockstep.answered(n));
    }

    /// Lockstep: one control period of the board and the body, then events due, a sample,
    /// and the cable as the fault windows say (only here, so it is pulled and plugged at the
    /// same turn of every run).
    fn period(&mut self) {
        self.advance(self.cfg.period_us);
        self.end_period();
        self.cable();
    }

    /// The board and the body for `us`, every output checked against the joint limits.
    fn advance(&mut self, us: u64) {
        let (mut checked, mut outside) = (0u64, 0u64);
        self.board.advance(us, |o, body| {
            let limits = body.joint_limits();
            for (channel, p) in o.pulses_us.iter().enumerate() {
                if let Some((j, angle)) = p.and_then(|p| body.target(channel, p)) {
                    // A pulse is quantised to 1/65535 of the period: far below 1 mrad.
                    let [lo, hi] = limits[j];
                    checked += 1;
                    outside += u64::from(!(angle >= lo - 1e-3 && angle <= hi + 1e-3));
                }
            }
        });
        self.trace.outputs_checked += checked;
        self.trace.out_of_limit += outside;
    }

    /// The end of a control period: events due and a sample.
    fn end_period(&mut self) {
        self.trace.periods += 1;
        let now = self.now_s();
        while self.events.last().is_some_and(|(at, _)| *at <= now) {
            let (_, event) = self.events.pop().expect("checked");
            match event {
                Event::Push(dv) => self.board.plant_mut().env_mut().push_base(dv),
                Event::Command { to, seq, velocity } => {
                    crate::line::send_command(to, seq, velocity)
                }
                Event::EStop => {
                    let _ = self
                        .board
                        .controller_mut()
                        .safety_command(board::command::ESTOP);
                }
            }
        }
        self.published.store(self.board.now_us(), Ordering::Relaxed);
        let o = self.board.observed();
        if o.faults & board::fault::WATCHDOG != 0 && self.trace.watchdog_at.is_none() {
            self.trace.watchdog_at = Some(now);
        }
        let env = self.board.plant().env();
        let tel = clawrl_sim::Env::telemetry(env);
        self.trace.qpos.push(env.data().qpos().to_vec());
        self.trace.samples.push(Sample {
            t: now,
            base_pos: tel.base_pos,
            base_lin_vel: tel.base_lin_vel,
            yaw_rate: tel.yaw_rate,
            state: o.state,
            faults: o.faults,
            driven: o.pulses_us.iter().filter(|p| p.is_some()).count(),
            fallen: env.has_fallen(),
        });
    }
}
