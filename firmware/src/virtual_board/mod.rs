//! The virtual board: the firmware core, unchanged, serving Dynamixel 2.0 on a pseudo-terminal,
//! its servos and IMU backed by a [`Plant`]. Tests and the HIL crate drive it in-process:
//!
//! ```no_run
//! use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
//! use clawrl_firmware::FirmwareConfig;
//! let config = FirmwareConfig::claw_foot();
//! let board = VirtualBoard::spawn_on_pty(config.clone(), ServoModel::new(&config)).unwrap();
//! println!("serving on {}", board.path());
//! ```

mod hw;
mod plant;
mod serial;
mod stepped;

pub use hw::MAX_DUTY;
pub use plant::{Plant, PlantReading, ServoModel};
pub use serial::PtySerial;
pub use stepped::{QueueSerial, SimClock, SteppedBoard};

use crate::config::FirmwareConfig;
use crate::controller::Pulses;
use crate::hal::NoWatchdog;
use crate::pwm::ServoOutputs;
use crate::runner::{Firmware, Hardware};
use crate::safety::SafetyState;
use clawrl_protocol::units::ids::SERVO_COUNT;
use hw::{StdClock, VirtualPwm, VirtualSensors, Wires};
use serialport::{SerialPort, TTYPort};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the board last did, for tests to assert on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observed {
    /// Pulse widths on the outputs after the last tick (from the duty cycles actually set).
    pub pulses_us: Pulses,
    pub state: SafetyState,
    pub faults: u16,
    pub ticks: u64,
    pub reading: PlantReading,
}

/// A running virtual board; stops its thread when dropped.
pub struct VirtualBoard {
    path: String,
    /// Keeps the pty's slave side open, so the master does not see a hang-up between clients.
    _slave: TTYPort,
    stop: Arc<AtomicBool>,
    observed: Arc<Mutex<Observed>>,
    thread: Option<JoinHandle<()>>,
}

impl VirtualBoard {
    /// Starts the board on a new pseudo-terminal; a client opens [`VirtualBoard::path`].
    pub fn spawn_on_pty(config: FirmwareConfig, plant: impl Plant) -> std::io::Result<Self> {
        let (master, slave) = TTYPort::pair().map_err(std::io::Error::other)?;
        let path = slave
            .name()
            .ok_or_else(|| std::io::Error::other("pty has no name"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let observed = Arc::new(Mutex::new(Observed {
            pulses_us: [None; SERVO_COUNT],
            state: SafetyState::Boot,
            faults: 0,
            ticks: 0,
            reading: PlantReading::default(),
        }));
        let (stop2, observed2) = (stop.clone(), observed.clone());
        let thread = std::thread::Builder::new()
            .name("virtual-board".into())
            .spawn(move || serve(master, config, plant, &stop2, &observed2))?;
        Ok(Self {
            path,
            _slave: slave,
            stop,
            observed,
            thread: Some(thread),
        })
    }

    /// The pseudo-terminal to open, e.g. `/dev/pts/3`.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn observed(&self) -> Observed {
        *self.observed.lock().unwrap()
    }

    /// Waits until `predicate` holds for the observed state, up to `timeout`.
    pub fn wait_for(
        &self,
        timeout: Duration,
        predicate: impl Fn(&Observed) -> bool,
    ) -> Option<Observed> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let o = self.observed();
            if predicate(&o) {
                return Some(o);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for VirtualBoard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The board thread: the firmware's loop, with the plant stepped after every tick.
fn serve(
    master: TTYPort,
    config: FirmwareConfig,
    mut plant: impl Plant,
    stop: &AtomicBool,
    observed: &Mutex<Observed>,
) {
    let period_us = config.pwm_period_us;
    let wires = Rc::new(RefCell::new(Wires::default()));
    wires.borrow_mut().reading = plant.step(0.0, &[None; SERVO_COUNT]);
    let channels = core::array::from_fn(|channel| VirtualPwm {
        wires: wires.clone(),
        channel,
    });
    let hw = Hardware {
        serial: PtySerial::new(master),
        outputs: ServoOutputs::new(channels, period_us),
        feedback: VirtualSensors(wires.clone()),
        imu: VirtualSensors(wires.clone()),
        supply: VirtualSensors(wires.clone()),
        clock: StdClock(Instant::now()),
        watchdog: NoWatchdog,
    };
    let mut firmware = Firmware::new(hw, config);
    firmware.controller_mut().set_simulated(true);
    let mut last_step = Instant::now();
    let mut ticks = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let polled = firmware.poll();
        if polled.ticked {
            ticks += 1;
            let pulses = pulses_from_duties(&wires.borrow().duties, period_us);
            let dt = last_step.elapsed().as_secs_f32();
            last_step = Instant::now();
            let reading = plant.step(dt, &pulses);
            wires.borrow_mut().reading = reading;
            let c = firmware.controller();
            *observed.lock().unwrap() = Observed {
                pulses_us: pulses,
                state: c.state(),
                faults: c.faults(),
                ticks,
                reading,
            };
        }
        if polled.packets == 0 && polled.until_tick_us > 0 {
            firmware
                .hw
                .serial
                .wait_readable(Duration::from_micros(polled.until_tick_us.min(5_000)));
        }
    }
}

/// What a servo sees: the pulse a duty cycle makes, or none at 0 %.
pub fn pulses_from_duties(duties: &[u16; SERVO_COUNT], period_us: f32) -> Pulses {
    duties.map(|d| (d > 0).then(|| d as f32 / MAX_DUTY as f32 * period_us))
}
