//! The virtual board's hardware: PWM channels, feedback, IMU, supply and clock backed by one
//! shared cell that the board loop fills from the [`Plant`](super::Plant) after every tick.

use super::plant::PlantReading;
use crate::hal::{Clock, ServoFeedback, ServoSample, SupplyMonitor};
use crate::imu::{Imu, ImuError, ImuSample};
use clawrl_protocol::units::ids::SERVO_COUNT;
use embedded_hal::pwm::{ErrorType, SetDutyCycle};
use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;
use std::time::Instant;

/// 16-bit PWM, as a timer with a 65535 auto-reload gives.
pub const MAX_DUTY: u16 = u16::MAX;

#[derive(Default)]
pub struct Wires {
    pub duties: [u16; SERVO_COUNT],
    pub reading: PlantReading,
}

pub type Shared = Rc<RefCell<Wires>>;

pub struct VirtualPwm {
    pub wires: Shared,
    pub channel: usize,
}

impl ErrorType for VirtualPwm {
    type Error = Infallible;
}

impl SetDutyCycle for VirtualPwm {
    fn max_duty_cycle(&self) -> u16 {
        MAX_DUTY
    }

    fn set_duty_cycle(&mut self, duty: u16) -> Result<(), Infallible> {
        self.wires.borrow_mut().duties[self.channel] = duty;
        Ok(())
    }
}

pub struct VirtualSensors(pub Shared);

impl ServoFeedback for VirtualSensors {
    fn sample(&mut self, servo: usize) -> ServoSample {
        self.0.borrow().reading.servos[servo]
    }
}

impl SupplyMonitor for VirtualSensors {
    fn supply_mv(&mut self) -> u16 {
        self.0.borrow().reading.supply_mv
    }
}

impl Imu for VirtualSensors {
    fn read(&mut self) -> Result<ImuSample, ImuError> {
        self.0.borrow().reading.imu.ok_or(ImuError)
    }
}

pub struct StdClock(pub Instant);

impl Clock for StdClock {
    fn now_us(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}
