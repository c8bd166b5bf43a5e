//! What the virtual board's outputs drive and its sensors read: the [`Plant`] trait, and a simple
//! servo model standing in for the robot until the HIL crate plugs in MuJoCo.

use crate::config::FirmwareConfig;
use crate::controller::Pulses;
use crate::hal::ServoSample;
use crate::imu::ImuSample;
use crate::pwm::PulseCalibration;
use clawrl_protocol::units::ids::SERVO_COUNT;

/// What every sensor reads after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlantReading {
    pub servos: [ServoSample; SERVO_COUNT],
    /// `None` reads as an IMU that does not answer.
    pub imu: Option<ImuSample>,
    pub supply_mv: u16,
}

impl Default for PlantReading {
    fn default() -> Self {
        let still = ImuSample {
            gyro_rad_s: [0.0; 3],
            accel_m_s2: [0.0, 0.0, 9.81],
        };
        Self {
            servos: [ServoSample {
                temperature_c: 35.0,
                ..Default::default()
            }; SERVO_COUNT],
            imu: Some(still),
            supply_mv: 7400,
        }
    }
}

/// The physics behind the virtual board. The HIL crate implements it with MuJoCo: `step`
/// receives the pulse widths the firmware put on each output (after the PWM's duty-cycle
/// quantisation; `None` = no pulses, the servo goes limp) and returns the sensor readings at the
/// end of the step. Map a pulse to a joint target with `PulseCalibration::angle_rad` of the
/// servo's calibration in the firmware config.
pub trait Plant: Send + 'static {
    fn step(&mut self, dt_s: f32, pulses_us: &Pulses) -> PlantReading;
}

/// A hobby position servo: the joint moves towards the commanded angle with a first-order lag,
/// capped at the servo's no-load speed; without pulses it coasts to a stop. Current rises with
/// speed, the supply sags with current.
pub struct ServoModel {
    calibrations: [PulseCalibration; SERVO_COUNT],
    position: [f32; SERVO_COUNT],
    velocity: [f32; SERVO_COUNT],
    /// No-load speed (rad/s): 0.13 s per 60 degrees at 7.4 V for a 30 kg-cm servo.
    pub max_speed: f32,
    /// Lag of the servo's own position loop.
    pub time_constant_s: f32,
    reading: PlantReading,
}

impl ServoModel {
    pub fn new(config: &FirmwareConfig) -> Self {
        // Start each joint mid-range, as if the robot were lying in a neutral pose.
        let position = config.servos.map(|s| 0.5 * (s.min_rad + s.max_rad));
        let mut reading = PlantReading::default();
        for (s, p) in reading.servos.iter_mut().zip(position) {
            s.position_rad = p;
        }
        Self {
            calibrations: config.servos.map(|s| s.calibration),
            position,
            velocity: [0.0; SERVO_COUNT],
            max_speed: 8.0,
            time_constant_s: 0.02,
            reading,
        }
    }

    /// Where the joints are now.
    pub fn positions(&self) -> [f32; SERVO_COUNT] {
        self.position
    }
}

impl Plant for ServoModel {
    fn step(&mut self, dt_s: f32, pulses_us: &Pulses) -> PlantReading {
        let mut total_ma = 0.0;
        for (i, pulse) in pulses_us.iter().enumerate() {
            self.velocity[i] = match *pulse {
                Some(p) => {
                    let target = self.calibrations[i].angle_rad(p);
                    ((target - self.position[i]) / self.time_constant_s)
                        .clamp(-self.max_speed, self.max_speed)
                }
                None => self.velocity[i] * 0.9,
            };
            self.position[i] += self.velocity[i] * dt_s;
            let current = if pulse.is_some() {
                80.0 + 300.0 * self.velocity[i].abs()
            } else {
                5.0
            };
            total_ma += current;
            self.reading.servos[i] = ServoSample {
                position_rad: self.position[i],
                current_ma: current,
                temperature_c: 35.0,
            };
        }
        self.reading.supply_mv = (7400.0 - 0.05 * total_ma) as u16;
        self.reading
    }
}
