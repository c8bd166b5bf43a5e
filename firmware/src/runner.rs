//! The thin task around the controller: owns the hardware, moves bytes from the serial port
//! through the decoder into the controller and its answers back out, and runs the control tick
//! on time. Generic over the hardware traits, so the board crate, the virtual board and HIL use
//! the same loop.

use crate::config::FirmwareConfig;
use crate::controller::{Controller, Pulses, Sensors};
use crate::hal::{Clock, HardwareWatchdog, ServoFeedback, SupplyMonitor};
use crate::imu::Imu;
use crate::pwm::ServoOutputs;
use clawrl_protocol::Decoder;
use clawrl_protocol::units::ids::SERVO_COUNT;
use embedded_hal::pwm::SetDutyCycle;
use embedded_io::{Read, ReadReady, Write};

/// Everything the firmware drives or reads.
pub struct Hardware<S, P, F, I, M, C, W> {
    pub serial: S,
    pub outputs: ServoOutputs<P, SERVO_COUNT>,
    pub feedback: F,
    pub imu: I,
    pub supply: M,
    pub clock: C,
    pub watchdog: W,
}

/// What one `poll` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Polled {
    /// A control tick ran (outputs were updated).
    pub ticked: bool,
    pub packets: u32,
    /// Microseconds until the next tick is due.
    pub until_tick_us: u64,
}

pub struct Firmware<S, P, F, I, M, C, W> {
    pub hw: Hardware<S, P, F, I, M, C, W>,
    controller: Controller,
    decoder: Decoder<1024>,
    next_tick_us: u64,
}

impl<S, P, F, I, M, C, W> Firmware<S, P, F, I, M, C, W>
where
    S: Read + ReadReady + Write,
    P: SetDutyCycle,
    F: ServoFeedback,
    I: Imu,
    M: SupplyMonitor,
    C: Clock,
    W: HardwareWatchdog,
{
    /// Boots: outputs off, one sensor read, then Idle.
    pub fn new(mut hw: Hardware<S, P, F, I, M, C, W>, config: FirmwareConfig) -> Self {
        let mut controller = Controller::new(config);
        for i in 0..SERVO_COUNT {
            let _ = hw.outputs.set(i, None);
        }
        let now = hw.clock.now_us();
        let sensors = read_sensors(&mut hw, controller.config());
        controller.tick(now, &sensors);
        controller.finish_boot();
        let next_tick_us = now + controller.config().tick_us as u64;
        Self {
            hw,
            controller,
            decoder: Decoder::new(),
            next_tick_us,
        }
    }

    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.controller
    }

    /// Serves whatever has arrived, then ticks if a tick is due. Never blocks.
    pub fn poll(&mut self) -> Polled {
        let mut polled = Polled {
            packets: self.serve_serial(),
            ..Polled::default()
        };
        let now = self.hw.clock.now_us();
        if now >= self.next_tick_us {
            self.tick(now);
            // Late ticks are not made up: the next one is a full period after this one.
            self.next_tick_us = now + self.controller.config().tick_us as u64;
            polled.ticked = true;
        }
        polled.until_tick_us = self.next_tick_us.saturating_sub(self.hw.clock.now_us());
        polled
    }

    /// Runs forever: the board's main loop.
    pub fn run(&mut self) -> ! {
        loop {
            self.poll();
        }
    }

    fn serve_serial(&mut self) -> u32 {
        let mut packets = 0;
        let mut chunk = [0u8; 64];
        while let Ok(true) = self.hw.serial.read_ready() {
            let n = match self.hw.serial.read(&mut chunk) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            for &byte in &chunk[..n] {
                self.decoder.push(byte);
                let now = self.hw.clock.now_us();
                while let Some(event) = self.decoder.next_event() {
                    if let Ok(packet) = event {
                        let serial = &mut self.hw.serial;
                        self.controller.handle(&packet, now, &mut |bytes| {
                            let _ = serial.write_all(bytes);
                        });
                        packets += 1;
                    }
                }
            }
        }
        let _ = self.hw.serial.flush();
        packets
    }

    fn tick(&mut self, now: u64) {
        self.hw.watchdog.feed();
        let sensors = read_sensors(&mut self.hw, self.controller.config());
        let pulses = self.controller.tick(now, &sensors);
        apply(&mut self.hw.outputs, &pulses, self.controller.config());
    }
}

/// Each servo's feedback, in slot order, from the input its channel is wired to.
fn read_sensors<S, P, F: ServoFeedback, I: Imu, M: SupplyMonitor, C, W>(
    hw: &mut Hardware<S, P, F, I, M, C, W>,
    config: &FirmwareConfig,
) -> Sensors {
    let mut servos = [Default::default(); SERVO_COUNT];
    for (s, c) in servos.iter_mut().zip(&config.servos) {
        *s = hw.feedback.sample(usize::from(c.channel));
    }
    Sensors {
        servos,
        imu: hw.imu.read(),
        supply_mv: hw.supply.supply_mv(),
    }
}

/// Each slot's pulse on the output its channel is wired to.
fn apply<P: SetDutyCycle>(
    outputs: &mut ServoOutputs<P, SERVO_COUNT>,
    pulses: &Pulses,
    config: &FirmwareConfig,
) {
    for (pulse, c) in pulses.iter().zip(&config.servos) {
        let _ = outputs.set(usize::from(c.channel), *pulse);
    }
}
