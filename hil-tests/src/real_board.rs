//! The bridge to a real microcontroller running the firmware in HIL mode (`board::HIL_MODE`):
//! the board's own safety rules, watchdog and control tables answer the runtime, MuJoCo is the
//! body, and the serial port between them is a real one.
//!
//! One thread, in real time (a board keeps its own clock), every exchange ([`EXCHANGE_US`] by
//! default):
//! 1. the body steps under the pulses the board last put out (HIL Outputs);
//! 2. its sensors go to the board (a WRITE of HIL Sensors) and its pulses come back (a READ
//!    of HIL Outputs); once a control period, its safety state too (a READ of Safety State);
//! 3. between those, the runtime's packets (from its pseudo-terminal, through the scenario's
//!    faults) go to the board whole, and the board's answers go back: the bridge never starts a
//!    transaction of its own while one of the runtime's is waiting for its answer.
//!
//! Before anything moves, [`HilBoard::open`] checks that the port is a clawrl board with every
//! servo of the robot (one message otherwise), and only then enters HIL mode.
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawrl_firmware::SafetyState;
use clawrl_firmware::controller::Pulses;
use clawrl_firmware::virtual_board::{Plant, PlantReading};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::{ids, registers};
use clawrl_runtime::link::{Link, LinkError};
use serialport::SerialPort;

use crate::body::MujocoBody;
use crate::framer::{Framer, Unit};
use crate::line::{BridgeConfig, Event, Line, Port, Sample, Trace};

/// The firmware's servo count: the robot's, and what [`HilBoard::open`] checks for (one
/// number, the protocol's; issue 41 makes it a maximum and a live count).
pub const SERVOS: usize = clawrl_protocol::units::ids::SERVO_COUNT;
/// How long a runtime packet may wait for the board's answer (a status packet of at most
/// 212 bytes at 1 Mbaud is 2 ms on the wire; the rest is the host's scheduling).
const ANSWER_WAIT: Duration = Duration::from_millis(15);

/// How often the body and the board exchange sensors and pulses by default (µs): once per
/// MuJoCo step of the 250 Hz body, so the board sees every state the body passes through and
/// nothing finer exists to send. An exchange is a WRITE of 78 bytes and a READ of 36, about
/// 1.3 ms on the wire at 1 Mbaud with their answers: 4 ms fits the default baud with room for
/// the runtime's own packets (at 2 ms, 2 of 2 runs through the virtual board failed where 4 ms
/// passed: the line was full).
pub const EXCHANGE_US: u64 = 4_000;

/// The HIL Sensors block (`board::HIL_SENSORS`) for one reading, in the scales of
/// `clawrl_protocol::units::registers` (positions 0.1 mrad and currents mA per servo, gyro
/// mrad/s, accelerometer 0.01 m/s^2), supply mV. An IMU that does not answer writes
/// [`board::HIL_IMU_SILENT`] into the accelerometer's x (the board's stale rule covers a
/// simulator that stops instead).
pub fn encode_sensors(r: &PlantReading) -> [u8; board::HIL_SENSORS_LEN as usize] {
    let mut b = [0u8; board::HIL_SENSORS_LEN as usize];
    let mut put = |k: usize, v: f32, per_unit: f32| {
        b[k..k + 2].copy_from_slice(&registers::encode_hil(v, per_unit).to_le_bytes());
    };
    for (i, s) in r.servos.iter().enumerate() {
        put(4 * i, s.position_rad, registers::HIL_POSITION_PER_RAD);
        put(4 * i + 2, s.current_ma, registers::HIL_CURRENT_PER_MA);
    }
    let gyro = (board::HIL_GYRO - board::HIL_SENSORS) as usize;
    let accel = (board::HIL_ACCEL - board::HIL_SENSORS) as usize;
    match &r.imu {
        Some(imu) => {
            for k in 0..3 {
                put(gyro + 2 * k, imu.gyro_rad_s[k], registers::GYRO_PER_RAD_S);
                put(accel + 2 * k, imu.accel_m_s2[k], registers::ACCEL_PER_M_S2);
            }
        }
        None => b[accel..accel + 2].copy_from_slice(&board::HIL_IMU_SILENT.to_le_bytes()),
    }
    let supply = (board::HIL_SUPPLY - board::HIL_SENSORS) as usize;
    b[supply..supply + 2].copy_from_slice(&r.supply_mv.to_le_bytes());
    b
}

/// HIL Outputs: the tick that computed them and the pulse each servo would get (µs; `None`
/// for an output that is off).
pub fn decode_outputs(d: &[u8]) -> Option<(u32, Pulses)> {
    if d.len() != board::HIL_OUTPUTS_LEN as usize {
        return None;
    }
    let tick = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let pulses = std::array::from_fn(|i| {
        let raw = u16::from_le_bytes([d[4 + 2 * i], d[5 + 2 * i]]);
        (raw != 0).then(|| f32::from(raw) / 10.0)
    });
    Some((tick, pulses))
}

/// A board on a serial port, in HIL mode once opened.
pub struct HilBoard {
    /// The bridge's own transactions (HIL registers, checks).
    link: Link,
    /// The same port, for the runtime's packets passed through byte for byte.
    raw: Box<dyn SerialPort>,
    answers: Framer,
    port: String,
    /// The bridge pressed the board's e-stop (a scenario's event): it releases it on leaving,
    /// so the next scenario finds the board idle. A latch it did not set it never clears.
    pressed_estop: bool,
}

impl HilBoard {
    /// Opens `port`, checks it is a clawrl board with [`SERVOS`] servos of the right model,
    /// writes `first` (the body's sensors at rest) and enters HIL mode. Nothing moves before.
    pub fn open(port: &str, baud: u32, first: &PlantReading) -> Result<Self> {
        let raw = serialport::new(port, baud)
            .timeout(Duration::from_millis(1))
            .open()
            .with_context(|| format!("opening the board's port {port}"))?;
        let link = Link::from_port(raw.try_clone()?, Duration::from_millis(50));
        let mut b = Self {
            link,
            raw,
            answers: Framer::default(),
            port: port.to_string(),
            pressed_estop: false,
        };
        b.check()?;
        b.idle_or_stop()?;
        b.enter(first)?;
        Ok(b)
    }

    /// The board answers PING as a clawrl board, and so does every servo of the robot.
    fn check(&mut self) -> Result<()> {
        let p = self.port.clone();
        self.raw.clear(serialport::ClearBuffer::All).ok();
        match self.link.ping(ids::BOARD, board::MODEL_NUMBER) {
            Ok(_) => {}
            Err(LinkError::Timeout { .. }) => bail!(
                "{p} is not a clawrl board: nothing answered PING at ID {} (is the firmware flashed, the baud rate right?)",
                ids::BOARD
            ),
            Err(LinkError::WrongModel { got, .. }) => bail!(
                "{p} is not a clawrl board: ID {} answered model {got}, a clawrl board is {}",
                ids::BOARD,
                board::MODEL_NUMBER
            ),
            Err(e) => bail!("{p} is not a clawrl board: {e}"),
        }
        let mut missing = Vec::new();
        for i in 0..SERVOS {
            let id = ids::servo_id(i);
            match self.link.ping(id, servo::MODEL_NUMBER) {
                Ok(_) => {}
                Err(LinkError::WrongModel { got, .. }) => bail!(
                    "the board on {p} has the wrong servo at ID {id}: model {got}, the robot's servos are model {}",
                    servo::MODEL_NUMBER
                ),
                Err(_) => missing.push(id),
            }
        }
        if !missing.is_empty() {
            bail!(
                "the board on {p} answers for {} servos, the robot has {SERVOS}: no answer from ID {missing:?}",
                SERVOS - missing.len()
            );
        }
        Ok(())
    }

    /// A board latched in e-stop or a fault from before this run would refuse HIL mode with a
    /// bare status error: stop here instead, with the port, the latch in words and the fix.
    fn idle_or_stop(&mut self) -> Result<()> {
        let (st, faults) = self
            .safety()
            .with_context(|| format!("reading the safety state of the board on {}", self.port))?;
        if st == board::state::ESTOP || st == board::state::FAULT {
            bail!(
                "the board on {} is latched ({}: {}) from before this run; the HIL harness does not clear a latch it did not set: release it (`clawrl-runtime run --clear-estop` on this port, or power the board off and on) and run again",
                self.port,
                if st == board::state::ESTOP {
                    "e-stop"
                } else {
                    "fault"
                },
                clawrl_runtime::link::fault_names(faults)
            );
        }
        Ok(())
    }

    fn enter(&mut self, first: &PlantReading) -> Result<()> {
        self.link
            .write(ids::BOARD, board::HIL_SENSORS, &encode_sensors(first))?;
        self.link
            .write(ids::BOARD, board::HIL_MODE, &[1])
            .context("entering HIL mode (the board must be idle)")?;
        Ok(())
    }

    /// One exchange: sensors in, pulses out.
    pub fn exchange(&mut self, reading: &PlantReading) -> Result<(u32, Pulses)> {
        self.link
            .write(ids::BOARD, board::HIL_SENSORS, &encode_sensors(reading))?;
        let mut out = [0u8; board::HIL_OUTPUTS_LEN as usize];
        self.link.read(ids::BOARD, board::HIL_OUTPUTS, &mut out)?;
        decode_outputs(&out).context("HIL Outputs of the wrong length")
    }

    /// The board's Safety State register and latched faults.
    pub fn safety(&mut self) -> Result<(u8, u16)> {
        let mut st = [0u8; 3];
        self.link.read(ids::BOARD, board::SAFETY_STATE, &mut st)?;
        Ok((st[0], u16::from_le_bytes([st[1], st[2]])))
    }

    /// A board safety command from the bridge (the e-stop button wired to the board).
    pub fn command(&mut self, cmd: u8) -> Result<()> {
        self.link.command(cmd)?;
        self.pressed_estop |= cmd == board::command::ESTOP;
        Ok(())
    }

    /// Passes one of the runtime's packets to the board and returns what came back: the
    /// answer of a packet that has one, waited for up to [`ANSWER_WAIT`]; nothing for a
    /// broadcast (SYNC WRITE) or a packet the line garbled.
    pub fn pass(&mut self, unit: &Unit) -> Result<Vec<u8>> {
        self.raw.write_all(unit.bytes())?;
        let answered =
            matches!(unit.header(), Some((id, _, _)) if id != clawrl_protocol::BROADCAST_ID);
        let mut back = Vec::new();
        let deadline = Instant::now()
            + if answered {
                ANSWER_WAIT
            } else {
                Duration::ZERO
            };
        let mut buf = [0u8; 256];
        loop {
            if let Some(u) = self.answers.next_unit() {
                let packet = matches!(u, Unit::Packet(_));
                back.extend_from_slice(u.bytes());
                if packet {
                    break;
                }
                continue;
            }
            if Instant::now() >= deadline {
                break;
            }
            match self.raw.read(&mut buf) {
                Ok(n) => self.answers.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(e).context("reading the board's answer"),
            }
        }
        Ok(back)
    }

    /// Leaves HIL mode (the board's outputs stay off: it returns to idle), releasing an
    /// e-stop this bridge pressed itself.
    pub fn leave(&mut self) -> Result<()> {
        // In e-stop the board refuses DISABLE: release first.
        if self.pressed_estop {
            self.link.command(board::command::CLEAR)?;
            self.pressed_estop = false;
        }
        self.link.command(board::command::DISABLE)?;
        Ok(self.link.write(ids::BOARD, board::HIL_MODE, &[0])?)
    }
}

impl Drop for HilBoard {
    fn drop(&mut self) {
        let _ = self.leave();
    }
}

/// The body's first reading, at rest, for [`HilBoard::open`].
pub fn rest_reading(body: &mut impl Plant) -> PlantReading {
    body.step(0.0, &[None; SERVOS])
}

/// The board's Safety State register as the firmware's state.
fn safety_state(register: u8) -> SafetyState {
    use board::state;
    match register {
        state::IDLE => SafetyState::Idle,
        state::ENABLED => SafetyState::Enabled,
        state::FAULT => SafetyState::Fault,
        state::ESTOP => SafetyState::EStop,
        _ => SafetyState::Boot,
    }
}

/// The real-board bridge's loop: the runtime's pty, the faults, the board over its port and
/// the body, on the wall clock.
pub(crate) struct RealLoop {
    board: HilBoard,
    body: MujocoBody,
    line: Line,
    cfg: BridgeConfig,
    events: Vec<(f64, Event)>,
    pulses: Pulses,
    exchange_us: u64,
    exchanges: u64,
    trace: Trace,
    published: Arc<AtomicU64>,
    start: Instant,
}

impl RealLoop {
    pub(crate) fn new(
        board: HilBoard,
        body: MujocoBody,
        port: Port,
        cfg: BridgeConfig,
        exchange_us: u64,
        published: Arc<AtomicU64>,
    ) -> Self {
        let mut events = cfg.events.clone();
        events.sort_by(|a, b| b.0.total_cmp(&a.0));
        Self {
            board,
            body,
            line: Line::new(port, &cfg),
            cfg,
            events,
            pulses: [None; SERVOS],
            exchange_us,
            exchanges: 0,
            trace: Trace::default(),
            published,
            start: Instant::now(),
        }
    }

    fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub(crate) fn run(mut self, stop: &AtomicBool) -> Result<Trace> {
        self.start = Instant::now();
        let per_period = (self.cfg.period_us / self.exchange_us.max(1)).max(1);
        let exchange_s = (self.cfg.period_us / per_period) as f64 * 1e-6;
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            let (_, units) = self.line.read_runtime(&mut buf);
            for unit in units {
                let t = self.now_s();
                self.line.send_to_board(unit, t);
            }
            self.deliver_to_board()?;
            self.deliver_to_runtime();
            // Real time: the body catches up with the wall clock an exchange at a time.
            while (self.exchanges + 1) as f64 * exchange_s <= self.now_s() {
                self.exchange(exchange_s, per_period)?;
            }
            self.cable();
        }
        self.trace.wall = self.start.elapsed();
        self.trace.faults = self.line.faults.counts;
        self.trace.physics_steps = self.body.steps();
        Ok(self.trace)
    }

    fn cable(&mut self) {
        let now = self.now_s();
        self.line.cable(now, || {});
    }

    /// Passes the board every packet whose time has come; its answers go on the way back.
    fn deliver_to_board(&mut self) -> Result<()> {
        let now = self.now_s();
        for unit in self.line.due_to_board(now) {
            let back = self.board.pass(&unit)?;
            self.line.queue_answers(&back, now);
        }
        Ok(())
    }

    fn deliver_to_runtime(&mut self) {
        let now = self.now_s();
        self.line.deliver_to_runtime(now, |_| {});
    }

    /// One exchange: the body under the board's last pulses, its sensors to the board and
    /// the pulses back; once a control period, events and a sample.
    fn exchange(&mut self, exchange_s: f64, per_period: u64) -> Result<()> {
        let reading = self.body.step(exchange_s as f32, &self.pulses);
        let (_, pulses) = self.board.exchange(&reading)?;
        self.exchanges += 1;
        self.pulses = pulses;
        let limits = self.body.joint_limits();
        for (channel, p) in pulses.iter().enumerate() {
            if let Some((j, angle)) = p.and_then(|p| self.body.target(channel, p)) {
                let [lo, hi] = limits[j];
                self.trace.outputs_checked += 1;
                self.trace.out_of_limit += u64::from(!(angle >= lo - 1e-3 && angle <= hi + 1e-3));
            }
        }
        if !self.exchanges.is_multiple_of(per_period) {
            return Ok(());
        }
        self.trace.periods += 1;
        let (state, faults) = self.board.safety()?;
        let now = self.exchanges as f64 * exchange_s;
        while self.events.last().is_some_and(|(at, _)| *at <= now) {
            let (_, event) = self.events.pop().expect("checked");
            match event {
                Event::Push(dv) => self.body.env_mut().push_base(dv),
                Event::EStop => self.board.command(board::command::ESTOP)?,
                Event::Command { to, seq, velocity } => {
                    crate::line::send_command(to, seq, velocity)
                }
            }
        }
        self.published
            .store((now * 1e6).round() as u64, Ordering::Relaxed);
        if faults & board::fault::WATCHDOG != 0 && self.trace.watchdog_at.is_none() {
            self.trace.watchdog_at = Some(now);
        }
        let env = self.body.env();
        let tel = clawrl_sim::Env::telemetry(env);
        self.trace.qpos.push(env.data().qpos().to_vec());
        self.trace.samples.push(Sample {
            t: now,
            base_pos: tel.base_pos,
            base_lin_vel: tel.base_lin_vel,
            yaw_rate: tel.yaw_rate,
            state: safety_state(state),
            faults,
            driven: pulses.iter().filter(|p| p.is_some()).count(),
            fallen: env.has_fallen(),
        });
        Ok(())
    }
}
