//! Servo pulses: angle -> pulse width through a per-servo calibration, pulse width -> duty cycle
//! of an embedded-hal `SetDutyCycle` channel.

use embedded_hal::pwm::SetDutyCycle;

/// Maps a joint angle to a servo pulse: `center + dir * (angle + trim) * us_per_rad`, clamped to
/// the pulse range the servo accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PulseCalibration {
    pub center_us: f32,
    pub us_per_rad: f32,
    /// Mounting offset: the angle the servo's centre is off from the joint's zero.
    pub trim_rad: f32,
    /// Servo mounted turning the other way from the joint's positive direction.
    pub reversed: bool,
    pub min_us: f32,
    pub max_us: f32,
}

impl PulseCalibration {
    /// A 270-degree 30 kg-cm class servo (DS3230 and alikes): 500-2500 us over 270 degrees.
    pub const DS3230: Self = Self {
        center_us: 1500.0,
        us_per_rad: 2000.0 / (270.0 * core::f32::consts::PI / 180.0),
        trim_rad: 0.0,
        reversed: false,
        min_us: 500.0,
        max_us: 2500.0,
    };

    pub fn pulse_us(&self, angle_rad: f32) -> f32 {
        let sign = if self.reversed { -1.0 } else { 1.0 };
        let pulse = self.center_us + sign * (angle_rad + self.trim_rad) * self.us_per_rad;
        pulse.clamp(self.min_us, self.max_us)
    }

    /// The angle a pulse commands: what a servo (or the simulator standing in for one) does.
    pub fn angle_rad(&self, pulse_us: f32) -> f32 {
        let sign = if self.reversed { -1.0 } else { 1.0 };
        sign * (pulse_us - self.center_us) / self.us_per_rad - self.trim_rad
    }
}

/// Duty cycle for a pulse of `pulse_us` in a period of `period_us`, rounded to nearest.
pub fn duty_for_pulse(pulse_us: f32, period_us: f32, max_duty: u16) -> u16 {
    let duty = pulse_us / period_us * max_duty as f32 + 0.5;
    (duty as u32).min(max_duty as u32) as u16
}

/// The servo output channels.
pub struct ServoOutputs<P, const N: usize> {
    channels: [P; N],
    period_us: f32,
}

impl<P: SetDutyCycle, const N: usize> ServoOutputs<P, N> {
    pub fn new(channels: [P; N], period_us: f32) -> Self {
        Self {
            channels,
            period_us,
        }
    }

    /// Drives channel `i` with a pulse, or with no pulse at all (0 % duty) for `None`: hobby
    /// servos switch their motor off when pulses stop.
    pub fn set(&mut self, i: usize, pulse_us: Option<f32>) -> Result<(), P::Error> {
        let channel = &mut self.channels[i];
        let duty = match pulse_us {
            Some(p) => duty_for_pulse(p, self.period_us, channel.max_duty_cycle()),
            None => 0,
        };
        channel.set_duty_cycle(duty)
    }

    pub fn channels(&self) -> &[P; N] {
        &self.channels
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::f32::consts::FRAC_PI_4;
    use embedded_hal_mock::eh1::pwm::{Mock, Transaction};

    #[test]
    fn pulse_widths_for_known_angles_reach_the_channel() {
        // 50 Hz with a 20000-step timer: one duty step per microsecond.
        let cal = PulseCalibration::DS3230;
        let reversed = PulseCalibration {
            reversed: true,
            ..cal
        };
        let trimmed = PulseCalibration {
            trim_rad: 0.1,
            ..cal
        };
        // (calibration, angle, expected duty = pulse in us); 424.41 us per rad.
        let cases = [
            (cal, 0.0, 1500),
            (cal, FRAC_PI_4, 1833),
            (cal, -FRAC_PI_4, 1167),
            (reversed, FRAC_PI_4, 1167),
            (trimmed, 0.0, 1542),
            (cal, 3.0, 2500),
            (cal, -3.0, 500),
        ];
        for (cal, angle, duty) in cases {
            let expectations = [
                Transaction::max_duty_cycle(20000),
                Transaction::set_duty_cycle(duty),
            ];
            let mut pin = Mock::new(&expectations);
            let mut outputs = ServoOutputs::new([pin.clone()], 20000.0);
            outputs.set(0, Some(cal.pulse_us(angle))).unwrap();
            pin.done();
        }
    }

    #[test]
    fn no_pulse_is_zero_duty() {
        let expectations = [Transaction::set_duty_cycle(0)];
        let mut pin = Mock::new(&expectations);
        let mut outputs = ServoOutputs::new([pin.clone()], 20000.0);
        outputs.set(0, None).unwrap();
        pin.done();
    }

    #[test]
    fn angle_inverts_pulse() {
        let cal = PulseCalibration {
            trim_rad: -0.2,
            reversed: true,
            ..PulseCalibration::DS3230
        };
        for angle in [-1.0f32, 0.0, 0.7] {
            assert!((cal.angle_rad(cal.pulse_us(angle)) - angle).abs() < 1e-5);
        }
    }
}
