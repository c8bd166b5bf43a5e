//! The virtual board on simulated time, in the caller's thread: the firmware core, unchanged,
//! with a clock that moves only when told and a serial port made of two byte queues. The HIL
//! bridge owns one: it hands the board the master's bytes, advances firmware and plant one
//! control tick at a time (lockstep: only when the master has sent a cycle's commands; real
//! time: as the wall clock moves), and carries the answers back.

use super::hw::{Shared, VirtualPwm, VirtualSensors, Wires};
use super::plant::Plant;
use super::{Observed, pulses_from_duties};
use crate::config::FirmwareConfig;
use crate::controller::Controller;
use crate::hal::{Clock, NoWatchdog};
use crate::pwm::ServoOutputs;
use crate::runner::{Firmware, Hardware};
use clawrl_protocol::units::ids::SERVO_COUNT;
use embedded_io::{ErrorKind, ErrorType, Read, ReadReady, Write};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

/// Microseconds since boot, set by the owner.
#[derive(Clone, Default)]
pub struct SimClock(Rc<Cell<u64>>);

impl Clock for SimClock {
    fn now_us(&self) -> u64 {
        self.0.get()
    }
}

/// A UART made of two queues: what the master sent, what the board answered.
#[derive(Clone, Default)]
pub struct QueueSerial {
    rx: Rc<RefCell<VecDeque<u8>>>,
    tx: Rc<RefCell<Vec<u8>>>,
}

impl ErrorType for QueueSerial {
    type Error = ErrorKind;
}

impl Read for QueueSerial {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        let mut rx = self.rx.borrow_mut();
        let n = buf.len().min(rx.len());
        for (b, byte) in buf.iter_mut().zip(rx.drain(..n)) {
            *b = byte;
        }
        Ok(n)
    }
}

impl ReadReady for QueueSerial {
    fn read_ready(&mut self) -> Result<bool, ErrorKind> {
        Ok(!self.rx.borrow().is_empty())
    }
}

impl Write for QueueSerial {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        self.tx.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        Ok(())
    }
}

type SteppedFirmware = Firmware<
    QueueSerial,
    VirtualPwm,
    VirtualSensors,
    VirtualSensors,
    VirtualSensors,
    SimClock,
    NoWatchdog,
>;

/// The board and the plant behind it, on simulated time.
pub struct SteppedBoard<P> {
    firmware: SteppedFirmware,
    plant: P,
    wires: Shared,
    clock: SimClock,
    serial: QueueSerial,
    ticks: u64,
    period_us: f32,
    tick_us: u64,
}

impl<P: Plant> SteppedBoard<P> {
    /// Boots the board at time 0 with its sensors reading the plant's first state.
    pub fn new(config: FirmwareConfig, mut plant: P) -> Self {
        let period_us = config.pwm_period_us;
        let tick_us = config.tick_us as u64;
        let wires = Rc::new(RefCell::new(Wires::default()));
        wires.borrow_mut().reading = plant.step(0.0, &[None; SERVO_COUNT]);
        let channels = core::array::from_fn(|channel| VirtualPwm {
            wires: wires.clone(),
            channel,
        });
        let (clock, serial) = (SimClock::default(), QueueSerial::default());
        let hw = Hardware {
            serial: serial.clone(),
            outputs: ServoOutputs::new(channels, period_us),
            feedback: VirtualSensors(wires.clone()),
            imu: VirtualSensors(wires.clone()),
            supply: VirtualSensors(wires.clone()),
            clock: clock.clone(),
            watchdog: NoWatchdog,
        };
        let mut firmware = Firmware::new(hw, config);
        firmware.controller_mut().set_simulated(true);
        Self {
            firmware,
            plant,
            wires,
            clock,
            serial,
            ticks: 0,
            period_us,
            tick_us,
        }
    }

    /// Simulated time since boot.
    pub fn now_us(&self) -> u64 {
        self.clock.0.get()
    }

    /// Runs the board and the plant for `us` of simulated time, one firmware tick (and one
    /// plant step) at a time; `on_tick` sees the board after each.
    pub fn advance(&mut self, us: u64, mut on_tick: impl FnMut(&Observed, &P)) {
        let end = self.now_us() + us;
        while self.now_us() + self.tick_us <= end {
            self.clock.0.set(self.now_us() + self.tick_us);
            if self.firmware.poll().ticked {
                self.ticks += 1;
                let pulses = pulses_from_duties(&self.wires.borrow().duties, self.period_us);
                let reading = self.plant.step(self.tick_us as f32 * 1e-6, &pulses);
                self.wires.borrow_mut().reading = reading;
                on_tick(&self.observed(), &self.plant);
            }
        }
        self.clock.0.set(end);
    }

    /// Hands the board bytes from the master at the present time; its answers are appended to
    /// `answers`.
    pub fn receive(&mut self, bytes: &[u8], answers: &mut Vec<u8>) {
        self.serial.rx.borrow_mut().extend(bytes.iter().copied());
        self.firmware.poll();
        answers.append(&mut self.serial.tx.borrow_mut());
    }

    pub fn observed(&self) -> Observed {
        let c = self.firmware.controller();
        Observed {
            pulses_us: pulses_from_duties(&self.wires.borrow().duties, self.period_us),
            state: c.state(),
            faults: c.faults(),
            ticks: self.ticks,
            reading: self.wires.borrow().reading,
        }
    }

    pub fn controller(&self) -> &Controller {
        self.firmware.controller()
    }

    /// For what an operator's switch does (an e-stop button wired to the board).
    pub fn controller_mut(&mut self) -> &mut Controller {
        self.firmware.controller_mut()
    }

    pub fn plant(&self) -> &P {
        &self.plant
    }

    pub fn plant_mut(&mut self) -> &mut P {
        &mut self.plant
    }
}
