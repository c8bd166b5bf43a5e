//! A test rig: the firmware's runner with a fake clock the test advances, a fake serial port,
//! PWM channels that record their duty cycle, and sensors the test sets.

#![allow(dead_code)]

use clawrl_firmware::hal::{Clock, NoWatchdog, ServoFeedback, ServoSample, SupplyMonitor};
use clawrl_firmware::imu::{Imu, ImuError, ImuSample};
use clawrl_firmware::pwm::ServoOutputs;
use clawrl_firmware::{Firmware, FirmwareConfig, Hardware};
use clawrl_protocol::{Command, Decoder, Status};
use embedded_hal::pwm::{ErrorType, SetDutyCycle};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::rc::Rc;

#[derive(Clone, Default)]
pub struct FakeClock(pub Rc<Cell<u64>>);

impl Clock for FakeClock {
    fn now_us(&self) -> u64 {
        self.0.get()
    }
}

#[derive(Clone, Default)]
pub struct FakeSerial {
    pub rx: Rc<RefCell<VecDeque<u8>>>,
    pub tx: Rc<RefCell<Vec<u8>>>,
}

impl embedded_io::ErrorType for FakeSerial {
    type Error = Infallible;
}

impl embedded_io::Read for FakeSerial {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        let mut rx = self.rx.borrow_mut();
        let n = buf.len().min(rx.len());
        for b in buf.iter_mut().take(n) {
            *b = rx.pop_front().unwrap();
        }
        Ok(n)
    }
}

impl embedded_io::ReadReady for FakeSerial {
    fn read_ready(&mut self) -> Result<bool, Infallible> {
        Ok(!self.rx.borrow().is_empty())
    }
}

impl embedded_io::Write for FakeSerial {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        self.tx.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// PWM channel that remembers its duty cycle; max duty 3333 so duty = pulse in us at 300 Hz.
#[derive(Clone, Default)]
pub struct RecordingPwm(pub Rc<Cell<u16>>);

pub const MAX_DUTY: u16 = 3333;

impl ErrorType for RecordingPwm {
    type Error = Infallible;
}

impl SetDutyCycle for RecordingPwm {
    fn max_duty_cycle(&self) -> u16 {
        MAX_DUTY
    }
    fn set_duty_cycle(&mut self, duty: u16) -> Result<(), Infallible> {
        self.0.set(duty);
        Ok(())
    }
}

#[derive(Clone)]
pub struct FakeSensors(pub Rc<RefCell<SensorValues>>);

pub struct SensorValues {
    pub servos: [ServoSample; 16],
    pub imu: Option<ImuSample>,
    pub supply_mv: u16,
}

impl ServoFeedback for FakeSensors {
    fn sample(&mut self, servo: usize) -> ServoSample {
        self.0.borrow().servos[servo]
    }
}

impl SupplyMonitor for FakeSensors {
    fn supply_mv(&mut self) -> u16 {
        self.0.borrow().supply_mv
    }
}

impl Imu for FakeSensors {
    fn read(&mut self) -> Result<ImuSample, ImuError> {
        self.0.borrow().imu.ok_or(ImuError)
    }
}

pub type Fw = Firmware<
    FakeSerial,
    RecordingPwm,
    FakeSensors,
    FakeSensors,
    FakeSensors,
    FakeClock,
    NoWatchdog,
>;

pub struct Rig {
    pub fw: Fw,
    pub clock: FakeClock,
    pub serial: FakeSerial,
    pub pwm: [RecordingPwm; 16],
    pub sensors: FakeSensors,
    decoder: Decoder<2048>,
}

/// An answer: (id, error byte, data).
pub type Answer = (u8, u8, Vec<u8>);

impl Rig {
    pub fn new(config: FirmwareConfig) -> Self {
        let clock = FakeClock::default();
        let serial = FakeSerial::default();
        let pwm: [RecordingPwm; 16] = Default::default();
        let mut values = SensorValues {
            servos: [ServoSample {
                position_rad: 0.0,
                current_ma: 100.0,
                temperature_c: 35.0,
            }; 16],
            imu: Some(ImuSample {
                gyro_rad_s: [0.0; 3],
                accel_m_s2: [0.0, 0.0, 9.81],
            }),
            supply_mv: 7400,
        };
        // Knees cannot be at 0 (outside their range); put every joint mid-range.
        for c in &config.servos {
            values.servos[usize::from(c.channel)].position_rad = 0.5 * (c.min_rad + c.max_rad);
        }
        let sensors = FakeSensors(Rc::new(RefCell::new(values)));
        let hw = Hardware {
            serial: serial.clone(),
            outputs: ServoOutputs::new(pwm.clone(), config.pwm_period_us),
            feedback: sensors.clone(),
            imu: sensors.clone(),
            supply: sensors.clone(),
            clock: clock.clone(),
            watchdog: NoWatchdog,
        };
        let fw = Firmware::new(hw, config);
        Self {
            fw,
            clock,
            serial,
            pwm,
            sensors,
            decoder: Decoder::new(),
        }
    }

    pub fn now_ms(&self) -> f64 {
        self.clock.0.get() as f64 / 1000.0
    }

    /// Advances the clock 1 ms at a time, polling after each, `n` times.
    pub fn advance_ms(&mut self, n: u32) {
        for _ in 0..n {
            self.clock.0.set(self.clock.0.get() + 1000);
            self.fw.poll();
        }
    }

    /// Pulse width on output `i` in us (0 = no pulses).
    pub fn pulse(&self, i: usize) -> u16 {
        self.pwm[i].0.get()
    }

    /// Sends a command to `id`, polls once, and returns the answers it produced.
    pub fn send(&mut self, id: u8, command: Command<'_>) -> Vec<Answer> {
        let mut buf = [0u8; 1024];
        let n = command.encode(id, &mut buf).unwrap();
        self.send_raw(&buf[..n])
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> Vec<Answer> {
        self.serial.rx.borrow_mut().extend(bytes.iter().copied());
        self.fw.poll();
        self.take_answers()
    }

    pub fn take_answers(&mut self) -> Vec<Answer> {
        let tx: Vec<u8> = self.serial.tx.borrow_mut().drain(..).collect();
        let mut out = Vec::new();
        for b in tx {
            self.decoder.push(b);
            while let Some(event) = self.decoder.next_event() {
                let packet = event.expect("the firmware sent a corrupt packet");
                let status = Status::parse(&packet).expect("not a status packet");
                out.push((status.id, status.error, status.data.to_vec()));
            }
        }
        out
    }

    pub fn write(&mut self, id: u8, address: u16, data: &[u8]) -> u8 {
        let answers = self.send(id, Command::Write { address, data });
        assert_eq!(answers.len(), 1, "one answer to a WRITE");
        answers[0].1
    }

    pub fn read(&mut self, id: u8, address: u16, length: u16) -> Answer {
        let mut answers = self.send(id, Command::Read { address, length });
        assert_eq!(answers.len(), 1, "one answer to a READ");
        answers.remove(0)
    }
}

impl Rig {
    /// Pulse widths on all 16 outputs, in us (0 = no pulses).
    pub fn pulses(&self) -> [u16; 16] {
        std::array::from_fn(|i| self.pulse(i))
    }

    /// Sets what servo `i`'s position sensor reads.
    pub fn set_position(&mut self, i: usize, rad: f32) {
        self.sensors.0.borrow_mut().servos[i].position_rad = rad;
    }

    /// Sets what every servo's position sensor reads.
    pub fn set_positions(&mut self, rad: impl Fn(usize) -> f32) {
        for (i, s) in self.sensors.0.borrow_mut().servos.iter_mut().enumerate() {
            s.position_rad = rad(i);
        }
    }

    /// Sends an instruction packet with raw instruction byte `instruction` to `id`, polls once
    /// and returns the answers.
    pub fn send_instruction(&mut self, id: u8, instruction: u8, params: &[u8]) -> Vec<Answer> {
        let mut buf = [0u8; 1024];
        let mut w = clawrl_protocol::PacketWriter::with_raw_instruction(&mut buf, id, instruction);
        w.push(params);
        let n = w.finish().unwrap();
        self.send_raw(&buf[..n])
    }

    /// Sends a status packet as if device `id` had answered (another device, or the echo of
    /// a half-duplex bus); polls once and returns the answers.
    pub fn send_status(&mut self, id: u8, error: u8, data: &[u8]) -> Vec<Answer> {
        let mut buf = [0u8; 1024];
        let n = clawrl_protocol::encode_status(&mut buf, id, error, data).unwrap();
        self.send_raw(&buf[..n])
    }
}
