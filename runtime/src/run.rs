//! `clawrl-runtime run`: three threads joined by crossbeam channels.
//!
//! - **control** (the thread that calls [`run`]; real-time priority and a pinned CPU when the
//!   system allows): wakes on absolute deadlines ([`crate::rate::FixedRate`]), takes the newest
//!   reading, runs one [`Controller::step`], hands the goals to the serial thread and a record
//!   to telemetry. It never blocks on either (bounded channels, `try_send`), except to hand
//!   over the final DISABLE.
//! - **serial**: for each command, PROTOCOL.md's recommended cycle (SYNC WRITE of the goals,
//!   then one READ of the robot state), the board command if any, and the reading back to
//!   control. On the wall clock the READ waits until `serial.read_lead_us` before the next
//!   deadline, so the reading the policy acts on is that old, not a period old. When the port fails it reports the link down and reopens it every
//!   `reconnect_ms`; on reopening it checks the board's model but clears nothing (a fault the
//!   board latched while the cable was out stays latched).
//! - **telemetry**: writes every record to the log.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clawrl_bundle::{Bundle, Trust};
use clawrl_protocol::table::board;
use clawrl_protocol::units::ids;
use clawrl_robot::quadruped::NUM_SERVOS;
use crossbeam::channel::{Receiver, Sender, TryRecvError, bounded};

use crate::config::RuntimeConfig;
use crate::controller::{Act, BoardCommand, Controller, Fault, Input, Output, Phase};
use crate::inference::Student;
use crate::link::{Link, LinkError};
use crate::lockstep::Lockstep;
use crate::observation::ObservationBuilder;
use crate::rate::{FixedRate, Tick};
use crate::telemetry::{Header, LogWriter, RECORD_LEN, Record};
use crate::wire::{BoardState, GoalEncoder};

/// Control -> serial: what to send this cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SerialCmd {
    pub ticks: Option<[i32; NUM_SERVOS]>,
    pub board: BoardCommand,
}

/// Serial -> control. (A reading travels by value: boxing it would allocate every cycle.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SerialEvent {
    State(BoardState),
    /// The port failed; no readings until `Up`.
    Down,
    Up,
}

/// What the operator asks of one cycle: the stop (SIGINT, `--seconds`, a command source's
/// stop), a command source's e-stop, and its command (`None`: the config's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Operator {
    pub stop: bool,
    pub estop: bool,
    pub command: Option<[f64; 3]>,
}

/// What a run did, printed at its end.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub cycles: u64,
    pub missed_deadlines: u64,
    pub max_lateness: Duration,
    pub final_phase: Option<Phase>,
    /// Phases in the order they were entered.
    pub phases: Vec<Phase>,
    pub goals_limited: u64,
    pub records_dropped: u64,
    pub commands_dropped: u64,
    pub link_downs: u64,
    pub log: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// The control thread's ends of the channels.
pub struct Channels {
    pub events: Receiver<SerialEvent>,
    pub commands: Sender<SerialCmd>,
    pub telemetry: Option<Sender<Record>>,
    /// What an operator is told the moment it happens (phase changes, link loss, the board's
    /// alert), printed by the report thread: the control thread only `try_send`s.
    pub notices: Option<Sender<Notice>>,
}

/// Something the operator hears about while the robot runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Notice {
    Phase {
        cycle: u64,
        from: Phase,
        to: Phase,
    },
    LinkDown {
        cycle: u64,
    },
    LinkUp {
        cycle: u64,
    },
    /// The board's alert bit came on (it latched a fault or an e-stop of its own).
    BoardAlert {
        cycle: u64,
    },
    /// The once-a-second status (`control.status_every_s`): what the operator watches.
    Status {
        cycle: u64,
        phase: Phase,
        /// The command the policy last saw (forward, lateral, yaw).
        command: [f32; 3],
        /// The IMU's yaw rate in the last reading (rad/s); NaN without one.
        yaw_rate: f64,
        missed: u64,
        link_downs: u64,
    },
}

impl Notice {
    /// The line printed for it; `rate_hz` turns cycles into seconds.
    pub fn line(&self, rate_hz: f64) -> String {
        let at = |c: u64| format!("cycle {c} ({:.2} s)", c as f64 / rate_hz);
        match *self {
            Notice::Phase { cycle, from, to } => {
                let why = match to {
                    Phase::Fault(Fault::Stale) => {
                        ": stale fault, no fresh reading from the board; holding the last goals, the board's watchdog acts"
                    }
                    Phase::Fault(Fault::Board) => {
                        ": board alert, the board latched a fault or e-stop and acts on its own"
                    }
                    Phase::Fault(Fault::NonFinite) => {
                        ": a NaN or infinity in a reading or the action; holding the last goals"
                    }
                    Phase::Fault(Fault::Inference) => ": the policy could not run",
                    Phase::EStop => ": e-stop",
                    _ => "",
                };
                format!("{}: phase {from:?} -> {to:?}{why}", at(cycle))
            }
            Notice::LinkDown { cycle } => {
                format!("{}: serial link lost; reopening the port", at(cycle))
            }
            Notice::LinkUp { cycle } => format!("{}: serial link back", at(cycle)),
            Notice::BoardAlert { cycle } => format!(
                "{}: board alert: the board reports a latched fault or e-stop",
                at(cycle)
            ),
            Notice::Status {
                cycle,
                phase,
                command: [x, y, w],
                yaw_rate,
                missed,
                link_downs,
            } => format!(
                "status {:.1} s: {phase:?}, command ({x:.2} m/s, {y:.2} m/s, {w:.2} rad/s), \
                 yaw rate {yaw_rate:.2} rad/s (IMU), {missed} late cycle(s), {link_downs} link drop(s)",
                cycle as f64 / rate_hz
            ),
        }
    }
}

/// One control cycle as the control thread runs it, apart from the wait: kept separate so a
/// test can count its allocations and drive it without a clock.
pub struct ControlLoop<P> {
    pub controller: Controller<P>,
    encoder: GoalEncoder,
    out: Output,
    link_up: bool,
    cycle: u64,
    latest: Option<BoardState>,
    alert: bool,
    /// A status notice every this many cycles (0: none).
    status_every: u64,
    /// Where the policy's frame holds the command (the robot's servo count sets it).
    command_at: usize,
    /// The IMU's yaw rate in the last reading.
    yaw_rate: f64,
}

impl<P: Act> ControlLoop<P> {
    pub fn new(controller: Controller<P>, limits: &[[f64; 2]; NUM_SERVOS]) -> Self {
        Self {
            controller,
            encoder: GoalEncoder::new(limits),
            out: Output::default(),
            link_up: true,
            cycle: 0,
            latest: None,
            alert: false,
            status_every: 0,
            command_at: 0,
            yaw_rate: f64::NAN,
        }
    }

    /// This loop with a status notice every `seconds` (0: none), at `rate_hz`.
    pub fn with_status(mut self, seconds: f64, rate_hz: f64) -> Self {
        self.status_every = (seconds * rate_hz).round() as u64;
        let servos = self.controller.safety().poses.count;
        self.command_at = clawrl_robot::observation::Offsets::for_servos(servos).command;
        self
    }

    /// Drains the serial thread's events, steps the controller, hands out goals and a record.
    /// Returns the record (also sent to telemetry when a sender is given).
    pub fn cycle(
        &mut self,
        ch: &Channels,
        operator: Operator,
        tick: Tick,
        woke: Instant,
        summary: &mut Summary,
    ) -> Record {
        let (events, commands, telemetry) = (&ch.events, &ch.commands, ch.telemetry.as_ref());
        // Notices are rare and never waited for: a full channel loses one, the loop goes on.
        let notify = |n: Notice| {
            if let Some(tx) = &ch.notices {
                let _ = tx.try_send(n);
            }
        };
        let cycle = self.cycle;
        self.latest = None;
        loop {
            match events.try_recv() {
                Ok(SerialEvent::State(s)) => {
                    if s.alert && !self.alert {
                        notify(Notice::BoardAlert { cycle });
                    }
                    self.alert = s.alert;
                    self.yaw_rate = s.sensors.gyro[2];
                    self.latest = Some(s);
                }
                Ok(SerialEvent::Down) => {
                    self.link_up = false;
                    summary.link_downs += 1;
                    notify(Notice::LinkDown { cycle });
                }
                Ok(SerialEvent::Up) => {
                    self.link_up = true;
                    notify(Notice::LinkUp { cycle });
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        let input = Input {
            state: self.latest,
            stop: operator.stop,
            command: operator.command,
            estop: operator.estop,
        };
        let prev = self.controller.phase();
        self.controller.step(&input, &mut self.out);
        let mut ticks = [0i32; NUM_SERVOS];
        if let Some(g) = &self.out.goals {
            self.encoder.encode(g, &mut ticks);
        }
        let cmd = SerialCmd {
            ticks: self.out.goals.map(|_| ticks),
            board: self.out.board,
        };
        // The loop never waits for the serial thread, except for the very last command
        // (DISABLE): that one must reach the wire, if the serial thread can take it at all
        // (a thread stuck on a dead port cannot; then the board's watchdog damps the servos).
        let sent = if self.out.done {
            commands.send_timeout(cmd, SERIAL_GRACE).is_ok()
        } else {
            commands.try_send(cmd).is_ok()
        };
        summary.commands_dropped += u64::from(!sent);
        let record = Record {
            cycle: self.cycle,
            lateness_ns: tick.lateness.as_nanos() as u64,
            compute_ns: woke.elapsed().as_nanos() as u64,
            missed_deadline: tick.missed,
            link_up: self.link_up,
            input,
            output: self.out,
            ticks,
        };
        if let Some(t) = telemetry
            && t.try_send(record).is_err()
        {
            summary.records_dropped += 1;
        }
        self.cycle += 1;
        summary.cycles += 1;
        summary.missed_deadlines += u64::from(tick.missed);
        summary.max_lateness = summary.max_lateness.max(tick.lateness);
        summary.goals_limited += u64::from(self.out.limited);
        if self.status_every > 0 && cycle > 0 && cycle.is_multiple_of(self.status_every) {
            let c = &self.out.frame[self.command_at..self.command_at + 3];
            notify(Notice::Status {
                cycle,
                phase: self.out.phase,
                command: [c[0], c[1], c[2]],
                yaw_rate: self.yaw_rate,
                missed: summary.missed_deadlines,
                link_downs: summary.link_downs,
            });
        }
        if self.out.phase != prev {
            // Phase changes are rare (a handful per run): the push may allocate, the steady
            // loop never reaches it.
            summary.phases.push(self.out.phase);
            notify(Notice::Phase {
                cycle,
                from: prev,
                to: self.out.phase,
            });
        }
        record
    }

    pub fn output(&self) -> &Output {
        &self.out
    }
}

/// Everything `run` needs besides the config.
pub struct RunOptions {
    pub bundle: PathBuf,
    /// Stop (lower and switch off) after this long; `None` runs until SIGINT/SIGTERM.
    pub duration: Option<Duration>,
    /// Set by the signal handlers (or a test) to stop.
    pub stop: Arc<AtomicBool>,
    /// The operator's `--clear-estop`: clear a board latched in e-stop at start-up. Without
    /// it such a board is refused ([`crate::link::LinkError::EStopLatched`]).
    pub clear_estop: bool,
    /// With `control.clock = "lockstep"`: the counters shared with the simulated body, so
    /// that no outcome depends on the wall clock ([`crate::lockstep`]). Without them a
    /// lockstep run falls back to wall-clock timeouts.
    pub lockstep: Option<Arc<Lockstep>>,
}

/// Loads and checks the bundle for this robot and config.
pub fn load_bundle(cfg: &RuntimeConfig, path: &Path) -> Result<Bundle> {
    let trust = Trust::from_key_files(&cfg.install.trusted_keys, cfg.install.require_signature)
        .context("install.trusted_keys")?;
    let bundle = clawrl_bundle::read(path, &trust)?;
    crate::install::check_bundle(&bundle, &cfg.robot_spec())?;
    Ok(bundle)
}

/// Builds the controller a bundle describes.
pub fn controller_for(cfg: &RuntimeConfig, bundle: &Bundle) -> Result<ControlLoop<Student>> {
    controller_with(cfg, bundle, |_| Ok(Student::from_bundle(bundle)?))
}

/// Builds the loop a bundle describes (its action map, observation builder and safety
/// settings) around the policy `make` returns from the action map: the student, or
/// `identify`'s excitation plan.
pub fn controller_with<P: Act>(
    cfg: &RuntimeConfig,
    bundle: &Bundle,
    make: impl FnOnce(&clawrl_robot::ActionMap) -> Result<P>,
) -> Result<ControlLoop<P>> {
    let m = &bundle.manifest;
    let map = m
        .action
        .map
        .clone()
        .with_context(|| format!("bundle {}: no action map", bundle.path.display()))?;
    let policy = make(&map)?;
    let obs = ObservationBuilder::from_manifest(m)
        .map_err(|e| anyhow::anyhow!("bundle {}: {e}", bundle.path.display()))?;
    let safety = cfg
        .safety(Some(m))
        .map_err(|e| anyhow::anyhow!("bundle {}: {e}", bundle.path.display()))?;
    if map.len() != safety.poses.count {
        anyhow::bail!(
            "bundle {}: its action map drives {} servos, the robot has {}",
            bundle.path.display(),
            map.len(),
            safety.poses.count
        );
    }
    let limits = safety.joint_limits;
    Ok(ControlLoop::new(
        Controller::new(policy, obs, map, safety),
        &limits,
    ))
}

/// Opens the port and brings the board to a known state (torque off, faults cleared). A board
/// latched in e-stop is refused unless `clear_estop` (see [`Link::handshake`]).
pub fn connect(cfg: &RuntimeConfig, clear_estop: bool) -> Result<Link> {
    connect_info(cfg, clear_estop, None).map(|(link, _)| link)
}

/// The ranges a command is clipped to: the config's `command.ranges`, narrowed to the ranges
/// the policy was trained on where the bundle records them (both hold 0, so the result does).
pub fn command_ranges(config: [[f64; 2]; 3], trained: Option<[[f64; 2]; 3]>) -> [[f64; 2]; 3] {
    let Some(t) = trained else { return config };
    std::array::from_fn(|i| [config[i][0].max(t[i][0]), config[i][1].min(t[i][1])])
}

/// A fixed `control.command` (no live source) must lie inside the commands the policy was
/// trained on, where the bundle records them: outside, the policy meets an input it never saw.
/// The yaw is not checked when the heading hold sets it.
fn check_fixed_command(cfg: &RuntimeConfig, bundle: &Bundle) -> Result<()> {
    let Some(trained) = bundle.manifest.observation.command_ranges else {
        return Ok(());
    };
    if cfg.command.as_ref().is_some_and(|c| c.live()) {
        return Ok(());
    }
    let axes = if cfg.control.heading_gain > 0.0 { 2 } else { 3 };
    let c = cfg.control.command;
    match (0..axes).find(|&i| !(trained[i][0] <= c[i] && c[i] <= trained[i][1])) {
        None => Ok(()),
        Some(i) => anyhow::bail!(
            "control.command {c:?}: {} {} lies outside the {:?} the policy was trained on (the \
             bundle's observation.command_ranges)",
            ["forward", "lateral", "yaw rate"][i],
            c[i],
            trained[i]
        ),
    }
}

/// The live command source the config's `[command]` names, listening or open, its ranges
/// narrowed to the bundle's ([`command_ranges`]); `None` for "fixed". A gamepad that cannot be
/// opened is an error naming its device.
fn live_commands(cfg: &RuntimeConfig, bundle: &Bundle) -> Result<Option<crate::command::Live>> {
    let Some(c) = cfg.command.as_ref().filter(|c| c.live()) else {
        return Ok(None);
    };
    let ranges = command_ranges(c.ranges, bundle.manifest.observation.command_ranges);
    if ranges != c.ranges {
        eprintln!(
            "clawrl-runtime: command.ranges narrowed to the bundle's trained ranges {ranges:?}"
        );
    }
    let c = &crate::config::CommandSection {
        ranges,
        ..c.clone()
    };
    let live = c.open(cfg.control.rate_hz)?;
    let from = match live.source() {
        crate::command::Source::Network(s) => format!(
            "UDP {}",
            s.local_addr().map_or(c.listen.clone(), |a| a.to_string())
        ),
        crate::command::Source::Gamepad(g) => format!("the gamepad {}", g.path().display()),
    };
    eprintln!(
        "clawrl-runtime: commands from {from} (zero after {} s without one, the stop {} s later)",
        c.timeout_s, c.stop_after_s
    );
    Ok(Some(live))
}

/// `clawrl-runtime check-wiring`: connects as `run` does and checks every servo against its
/// angle in `pose` ([`crate::wiring::check`]). Nothing moves. The shipped robot's poses are
/// its constants; another robot's come from the installed bundle's description.
pub fn check_wiring(
    cfg: &RuntimeConfig,
    pose: crate::wiring::Pose,
    lockstep: Option<Arc<Lockstep>>,
) -> Result<(String, bool)> {
    let installed = crate::install::current_bundle(&cfg.install.root)
        .ok()
        .and_then(|path| load_bundle(cfg, &path).ok());
    let safety = cfg
        .safety(installed.as_ref().map(|b| &b.manifest))
        .map_err(|e| anyhow::anyhow!("{e}: install one first (clawrl-runtime install)"))?;
    let servos = crate::wiring::servos(cfg, &safety, pose);
    let (mut link, _) = connect_named(cfg, false, lockstep, &servos)?;
    crate::wiring::check(&mut link, &servos)
}

/// [`connect_info`] with a servo that does not answer its PING named
/// ([`crate::wiring::silent_servo`]).
pub fn connect_named(
    cfg: &RuntimeConfig,
    clear_estop: bool,
    lockstep: Option<Arc<Lockstep>>,
    servos: &[crate::wiring::Servo],
) -> Result<(Link, crate::link::BoardInfo)> {
    connect_info(cfg, clear_estop, lockstep).map_err(|e| {
        let silent = e.chain().find_map(|c| match c.downcast_ref::<LinkError>() {
            Some(LinkError::Timeout { id, .. }) => crate::wiring::silent_servo(servos, *id),
            _ => None,
        });
        match silent {
            Some(s) => e.context(s),
            None => e,
        }
    })
}

/// [`connect`], with what the board said at the handshake.
fn connect_info(
    cfg: &RuntimeConfig,
    clear_estop: bool,
    lockstep: Option<Arc<Lockstep>>,
) -> Result<(Link, crate::link::BoardInfo)> {
    let s = &cfg.serial;
    let mut link = Link::open(&s.port, s.baud, Duration::from_millis(s.answer_timeout_ms))?
        .with_lockstep(lockstep)
        .with_servo_ids(&cfg.servo_ids());
    let info = link
        .handshake(
            cfg.safety.board_watchdog_ms,
            cfg.safety.behaviour_code(),
            clear_estop,
        )
        .with_context(|| format!("board on {}", s.port))?;
    if info.faults != 0 {
        eprintln!(
            "clawrl-runtime: the board had latched faults {:#06x} ({}; state {}); cleared them at start-up{}",
            info.faults,
            crate::link::fault_names(info.faults),
            info.state,
            if info.faults & board::fault::ESTOP != 0 {
                " as --clear-estop asked"
            } else {
                ""
            }
        );
    }
    Ok((link, info))
}

/// Runs the robot until stopped.
pub fn run(cfg: &RuntimeConfig, opts: &RunOptions) -> Result<Summary> {
    run_with(cfg, opts, controller_for)
}

/// [`run`], with the controller `build` makes for the bundle (the bundle's student, or
/// `identify`'s excitation): the same loop, safety machine, link and telemetry either way.
pub fn run_with<P: Act>(
    cfg: &RuntimeConfig,
    opts: &RunOptions,
    build: impl FnOnce(&RuntimeConfig, &Bundle) -> Result<ControlLoop<P>>,
) -> Result<Summary> {
    let bundle = load_bundle(cfg, &opts.bundle)?;
    let mut control =
        build(cfg, &bundle)?.with_status(cfg.control.status_every_s, cfg.control.rate_hz);
    // The command source first: a gamepad that is not there refuses the run before the board
    // is touched.
    check_fixed_command(cfg, &bundle)?;
    let mut live = live_commands(cfg, &bundle)?;
    // The shared counters only mean something in lockstep.
    let lockstep = opts.lockstep.clone().filter(|_| cfg.control.lockstep());
    let servos = crate::wiring::servos(cfg, control.controller.safety(), crate::wiring::Pose::Rest);
    let (mut link, info) = connect_named(cfg, opts.clear_estop, lockstep.clone(), &servos)?;
    // Before the torque goes on: a servo reading beyond its limits is a servo mounted the
    // other way or on another joint's channel, and standing up would drive it through them.
    let read = link
        .read_servo_positions()
        .context("reading the servos' positions")?;
    if let Some(why) = crate::wiring::refuse_outside_limits(&servos, &read) {
        anyhow::bail!(why);
    }
    let mut summary = Summary::default();

    let (cmd_tx, cmd_rx) = bounded::<SerialCmd>(2);
    let (ev_tx, ev_rx) = bounded::<SerialEvent>(16);
    // Lockstep: the serial thread's word that a cycle's command is done with.
    let (done_tx, done_rx) = bounded::<()>(4);
    let telemetry = start_telemetry(cfg, &bundle, &mut summary)?;
    let serial_cfg = cfg.serial.clone();
    let read_at = read_timing(cfg);
    let serial = {
        let lockstep = lockstep.clone();
        std::thread::Builder::new()
            .name("serial".into())
            .spawn(move || match lockstep {
                Some(l) => lockstep_serial_thread(link, &serial_cfg, &l, &cmd_rx, &ev_tx, &done_tx),
                None => serial_thread(link, &serial_cfg, read_at, &cmd_rx, &ev_tx),
            })?
    };

    let (rt_prio, cpu) = (cfg.control.realtime_priority, cfg.control.cpu);
    if let Some(w) = make_realtime(rt_prio, cpu) {
        eprintln!("clawrl-runtime: warning: {w}");
        summary.warnings.push(w);
    }
    let mut pace = Pace::new(cfg, lockstep.is_some().then_some(done_rx));
    eprintln!(
        "clawrl-runtime: running {} at {} Hz{}; board on {} (firmware {}){}",
        bundle.path.display(),
        cfg.control.rate_hz,
        if cfg.control.lockstep() {
            " (lockstep)"
        } else {
            ""
        },
        cfg.serial.port,
        info.firmware,
        summary
            .log
            .as_ref()
            .map(|l| format!("; telemetry {}", l.display()))
            .unwrap_or_default()
    );
    // The report thread prints what the control thread tells it: no terminal I/O in the loop.
    let (notice_tx, notice_rx) = bounded::<Notice>(64);
    let rate_hz = cfg.control.rate_hz;
    let report = std::thread::Builder::new()
        .name("report".into())
        .spawn(move || {
            for n in notice_rx {
                eprintln!("clawrl-runtime: {}", n.line(rate_hz));
            }
        })?;
    let ch = Channels {
        events: ev_rx,
        commands: cmd_tx,
        telemetry: telemetry.as_ref().map(|(tx, _)| tx.clone()),
        notices: Some(notice_tx),
    };
    // Whether the serial thread holds a command of ours (lockstep waits for its verdict).
    let mut pending = false;
    let ended = loop {
        let tick = match pace.wait(&ch.events, pending) {
            Ok(t) => t,
            Err(e) => break Err(e),
        };
        let woke = Instant::now();
        let timed_out = opts
            .duration
            .is_some_and(|d| pace.elapsed(summary.cycles) >= d);
        // A live source: its command this cycle; its stop (a stop datagram or button, silence
        // past the timeout, a lost source) as the operator's SIGINT; its e-stop, latched by the
        // guard, as the safety machine's e-stop.
        let guarded = live.as_mut().map(crate::command::Live::cycle);
        let request = guarded.and_then(|g| g.request);
        let stop = opts.stop.load(Ordering::Relaxed)
            || timed_out
            || request == Some(crate::command::Request::Stop);
        let estop = request == Some(crate::command::Request::EStop);
        let dropped = summary.commands_dropped;
        control.cycle(
            &ch,
            Operator {
                stop,
                estop,
                command: guarded.map(|g| g.command),
            },
            tick,
            woke,
            &mut summary,
        );
        pending = summary.commands_dropped == dropped;
        if control.output().done {
            break Ok(());
        }
    };
    // Closing the command channel lets the serial thread send the last command and exit.
    drop(ch);
    let _ = report.join();
    join_serial(serial, &mut summary)?;
    if let Some((tx, handle)) = telemetry {
        drop(tx);
        handle
            .join()
            .map_err(|_| anyhow::anyhow!("the telemetry thread panicked"))??;
    }
    ended?;
    summary.final_phase = Some(control.output().phase);
    Ok(summary)
}

/// How long the stop waits for the serial thread: to take the last command, and to end.
const SERIAL_GRACE: Duration = Duration::from_secs(2);

/// Joins the serial thread, or leaves it behind after [`SERIAL_GRACE`]: the operator's stop
/// ends the process on every path, even with the thread stuck on a port that stopped
/// answering (the process's exit takes the thread with it).
fn join_serial(serial: std::thread::JoinHandle<()>, summary: &mut Summary) -> Result<()> {
    let start = Instant::now();
    while !serial.is_finished() {
        if start.elapsed() > SERIAL_GRACE {
            let w = format!(
                "the serial thread did not end within {SERIAL_GRACE:?} of the stop (a stuck port?): left behind; the board's watchdog damps the servos"
            );
            eprintln!("clawrl-runtime: warning: {w}");
            summary.warnings.push(w);
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    serial
        .join()
        .map_err(|_| anyhow::anyhow!("the serial thread panicked"))
}

/// What starts each control cycle (`control.clock`).
enum Pace {
    /// The fixed-rate timer on absolute deadlines; time is the wall clock's.
    Wall(FixedRate, Instant),
    /// The previous cycle's reading (or the answer timeout without one); time is the cycle
    /// count times the period, as the simulated body's.
    Lockstep { timeout: Duration, period: Duration },
    /// Lockstep with the body's counters: the serial thread's verdict on the previous
    /// cycle's command, however long it takes (up to the hang limit).
    Turns {
        done: Receiver<()>,
        period: Duration,
    },
}

impl Pace {
    fn new(cfg: &RuntimeConfig, done: Option<Receiver<()>>) -> Self {
        let period = Duration::from_secs_f64(1.0 / cfg.control.rate_hz);
        if let Some(done) = done {
            return Pace::Turns { done, period };
        }
        if cfg.control.lockstep() {
            // The serial thread gives up on an answer after answer_timeout_ms; a little more
            // here so its verdict (a reading or none) is in before the next cycle.
            let timeout = Duration::from_millis(cfg.serial.answer_timeout_ms * 2 + 5);
            Pace::Lockstep { timeout, period }
        } else {
            let spin = Duration::from_micros(cfg.control.spin_us);
            Pace::Wall(FixedRate::new(cfg.control.rate_hz, spin), Instant::now())
        }
    }

    /// Waits for the next cycle; `pending`: the serial thread holds the last cycle's command.
    fn wait(&mut self, events: &Receiver<SerialEvent>, pending: bool) -> Result<Tick> {
        let on_time = Tick {
            lateness: Duration::ZERO,
            missed: false,
        };
        match self {
            Pace::Wall(rate, _) => Ok(rate.wait()),
            Pace::Lockstep { timeout, .. } => {
                // Ready, not received: the control loop drains the events itself.
                let mut select = crossbeam::channel::Select::new();
                select.recv(events);
                let _ = select.ready_timeout(*timeout);
                Ok(on_time)
            }
            Pace::Turns { done, .. } => {
                if pending {
                    done.recv_timeout(crate::lockstep::HANG_LIMIT).map_err(|_| {
                        anyhow::anyhow!(
                            "lockstep: the serial thread gave no verdict in {:?}: the simulated body hung",
                            crate::lockstep::HANG_LIMIT
                        )
                    })?;
                }
                Ok(on_time)
            }
        }
    }

    /// Time since the loop started, after `cycles` cycles.
    fn elapsed(&self, cycles: u64) -> Duration {
        match self {
            Pace::Wall(_, start) => start.elapsed(),
            Pace::Lockstep { period, .. } | Pace::Turns { period, .. } => *period * cycles as u32,
        }
    }
}

type Telemetry = (Sender<Record>, std::thread::JoinHandle<std::io::Result<()>>);

fn start_telemetry(
    cfg: &RuntimeConfig,
    bundle: &Bundle,
    summary: &mut Summary,
) -> Result<Option<Telemetry>> {
    if cfg.telemetry.dir.as_os_str().is_empty() {
        return Ok(None);
    }
    std::fs::create_dir_all(&cfg.telemetry.dir)
        .with_context(|| format!("telemetry.dir {}", cfg.telemetry.dir.display()))?;
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let path = cfg.telemetry.dir.join(format!("run-{unix}.log"));
    let header = Header {
        bundle: std::fs::canonicalize(&bundle.path).unwrap_or(bundle.path.clone()),
        bundle_sha256: clawrl_bundle::file_sha256(&bundle.path)?,
        safety: cfg
            .safety(Some(&bundle.manifest))
            .map_err(anyhow::Error::msg)?,
        record_len: RECORD_LEN,
    };
    let mut writer = LogWriter::create(&path, &header)
        .with_context(|| format!("creating {}", path.display()))?;
    summary.log = Some(path);
    // About 10 s of records at 500 Hz: the disk may stall, the loop must not.
    let (tx, rx) = bounded::<Record>(5000);
    let handle = std::thread::Builder::new()
        .name("telemetry".into())
        .spawn(move || {
            for r in rx {
                writer.write(&r)?;
            }
            writer.finish()
        })?;
    Ok(Some((tx, handle)))
}

fn serial_thread(
    mut link: Link,
    cfg: &crate::config::SerialConfig,
    read_at: Option<Duration>,
    commands: &Receiver<SerialCmd>,
    events: &Sender<SerialEvent>,
) {
    let mut up = true;
    let mut next_attempt = Instant::now();
    let retry = Duration::from_millis(cfg.reconnect_ms);
    loop {
        let cmd = match commands.recv_timeout(retry) {
            Ok(c) => Some(c),
            Err(crossbeam::channel::RecvTimeoutError::Timeout) => None,
            Err(crossbeam::channel::RecvTimeoutError::Disconnected) => break,
        };
        if !up {
            if Instant::now() >= next_attempt {
                next_attempt = Instant::now() + retry;
                if let Some(l) = reopen(cfg, None, link.servo_ids()) {
                    link = l;
                    up = true;
                    let _ = events.try_send(SerialEvent::Up);
                }
            }
            if !up {
                continue;
            }
        }
        let Some(cmd) = cmd else { continue };
        let arrived = Instant::now();
        match serve(&mut link, &cmd, read_at.map(|d| arrived + d)) {
            Ok(state) => {
                let _ = events.try_send(SerialEvent::State(state));
            }
            // A board that does not answer in time: no reading this cycle (the controller's
            // stale counter decides), but the port itself is fine.
            Err(LinkError::Timeout { .. } | LinkError::BadAnswer { .. }) => {}
            Err(_) => {
                up = false;
                next_attempt = Instant::now() + retry;
                let _ = events.try_send(SerialEvent::Down);
            }
        }
    }
}

/// The serial thread in lockstep with a simulated body ([`crate::lockstep`]): one command at
/// a time, each answered on `done` once its events are sent. A cycle whose state read did not
/// reach the wire (the link down, an earlier transaction failed) asks the body for its
/// period instead, and a down link is retried once per cycle, after that period: the same
/// run takes the same turns on a busy machine as on a quiet one.
fn lockstep_serial_thread(
    mut link: Link,
    cfg: &crate::config::SerialConfig,
    lockstep: &Arc<Lockstep>,
    commands: &Receiver<SerialCmd>,
    events: &Sender<SerialEvent>,
    done: &Sender<()>,
) {
    let mut up = true;
    for cmd in commands {
        if up {
            let reads = link.state_reads_sent();
            match serve(&mut link, &cmd, None) {
                Ok(state) => {
                    let _ = events.send(SerialEvent::State(state));
                }
                Err(LinkError::Timeout { .. } | LinkError::BadAnswer { .. }) => {}
                Err(_) => {
                    up = false;
                    let _ = events.send(SerialEvent::Down);
                }
            }
            if link.state_reads_sent() == reads {
                lockstep.ask_period();
            }
        } else {
            lockstep.ask_period();
            if let Some(l) = reopen(cfg, Some(lockstep.clone()), link.servo_ids()) {
                link = l;
                up = true;
                let _ = events.send(SerialEvent::Up);
            }
        }
        let _ = done.send(());
    }
}

/// When the serial thread reads the robot state, counted from the command's arrival (just
/// after a control deadline): `serial.read_lead_us` before the next deadline on the wall
/// clock. Reading straight after the goals would hand the policy, at the next deadline, a
/// reading a whole period old: 20 ms of latency at 50 Hz on top of the wire, twice what
/// training randomises (0-10 ms), and in HIL real time the student fell. In lockstep the
/// body only moves at the read, so it stays straight after the goals.
fn read_timing(cfg: &RuntimeConfig) -> Option<Duration> {
    if cfg.control.lockstep() || cfg.serial.read_lead_us == 0 {
        return None;
    }
    let period = Duration::from_secs_f64(1.0 / cfg.control.rate_hz);
    Some(period.saturating_sub(Duration::from_micros(cfg.serial.read_lead_us)))
}

/// One cycle on the wire: goals, then the board command, then (at `read_at`, if given) the
/// reading.
fn serve(
    link: &mut Link,
    cmd: &SerialCmd,
    read_at: Option<Instant>,
) -> Result<BoardState, LinkError> {
    if let Some(t) = &cmd.ticks {
        link.sync_write_goals(t)?;
    }
    let code = match cmd.board {
        BoardCommand::None => None,
        BoardCommand::Enable => Some(board::command::ENABLE),
        BoardCommand::Disable => Some(board::command::DISABLE),
        BoardCommand::EStop => Some(board::command::ESTOP),
    };
    if let Some(c) = code {
        // Refusals (DISABLE while the board is in fault) are the board being safe already.
        match link.command(c) {
            Ok(()) | Err(LinkError::Refused { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(at) = read_at {
        // The last command (DISABLE) is read at once: nobody waits for its reading.
        let wait = at.saturating_duration_since(Instant::now());
        if !matches!(cmd.board, BoardCommand::Disable) {
            std::thread::sleep(wait);
        }
    }
    link.read_state()
}

/// Reopens the port after a failure: the board must answer with its model number.
fn reopen(
    cfg: &crate::config::SerialConfig,
    lockstep: Option<Arc<Lockstep>>,
    servo_ids: &[u8],
) -> Option<Link> {
    let mut link = Link::open(
        &cfg.port,
        cfg.baud,
        Duration::from_millis(cfg.answer_timeout_ms),
    )
    .ok()?
    .with_lockstep(lockstep)
    .with_servo_ids(servo_ids);
    link.ping(ids::BOARD, board::MODEL_NUMBER).ok()?;
    Some(link)
}

/// SCHED_FIFO at `priority` and pinning to `cpu`, for the calling thread. Returns one warning
/// naming what the system refused (both usually need root or CAP_SYS_NICE).
pub fn make_realtime(priority: i32, cpu: i32) -> Option<String> {
    let mut refused = Vec::new();
    if priority > 0 {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            refused.push(format!(
                "SCHED_FIFO priority {priority} ({})",
                std::io::Error::last_os_error()
            ));
        }
    }
    if cpu >= 0 {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it.
        let ok = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        if !ok {
            refused.push(format!(
                "pinning to CPU {cpu} ({})",
                std::io::Error::last_os_error()
            ));
        }
    }
    (!refused.is_empty()).then(|| {
        format!(
            "running without {}; wake-up times will be those of an ordinary thread (run as root or grant CAP_SYS_NICE)",
            refused.join(" and ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_notice_names_what_happened_and_when() {
        let stale = Notice::Phase {
            cycle: 100,
            from: Phase::Running,
            to: Phase::Fault(Fault::Stale),
        };
        let l = stale.line(50.0);
        assert!(
            l.contains("cycle 100 (2.00 s)") && l.contains("stale fault"),
            "{l}"
        );
        let l = Notice::LinkDown { cycle: 5 }.line(50.0);
        assert!(l.contains("serial link lost"), "{l}");
        let l = Notice::BoardAlert { cycle: 5 }.line(50.0);
        assert!(l.contains("board alert"), "{l}");
        let l = Notice::Phase {
            cycle: 7,
            from: Phase::Running,
            to: Phase::EStop,
        }
        .line(50.0);
        assert!(l.contains("Running -> EStop: e-stop"), "{l}");
    }
}
