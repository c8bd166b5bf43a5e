//! One servo channel's state and the per-tick arithmetic: clamp the goal to the joint's limits,
//! limit the slew, apply the safe behaviours. Pure: no hardware here.

use crate::config::{SafeBehaviour, ServoConfig};
use crate::hal::ServoSample;
use clawrl_protocol::ErrorCode;

/// X-series Bus Watchdog (servo address 98), one per servo. 0 = off; 1-127 = the longest gap
/// between instruction packets to this servo (its ID or broadcast), in 20 ms units, watched
/// while its torque is on; once a gap is longer, the servo stops where it is, the register
/// reads 255 (-1) and goal writes are answered with a Data Range error until 0 is written.
/// The board's own watchdog (board address 68), which cannot be switched off, stays
/// underneath it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BusWatchdog {
    register: u8,
    last_packet_us: u64,
}

impl BusWatchdog {
    /// What the register reads after the watchdog has expired (-1 as a signed byte).
    pub const TRIPPED: u8 = 0xFF;
    /// The largest timeout, in 20 ms units.
    pub const MAX_UNITS: u8 = 127;
    const UNIT_US: u64 = 20_000;

    pub fn register(&self) -> u8 {
        self.register
    }

    pub fn tripped(&self) -> bool {
        self.register == Self::TRIPPED
    }

    /// An instruction packet for this servo arrived.
    pub fn feed(&mut self, now_us: u64) {
        self.last_packet_us = now_us;
    }

    /// A write to the register: 0 switches it off and clears the error; 1-127 arms it, unless
    /// it has tripped (only 0 clears an error); anything else is out of range.
    pub fn write(&mut self, value: u8) -> Result<(), ErrorCode> {
        match value {
            0 => self.register = 0,
            1..=Self::MAX_UNITS if !self.tripped() => self.register = value,
            _ => return Err(ErrorCode::DataRange),
        }
        Ok(())
    }

    /// Trips when armed, the torque is on and the last packet is longer ago than the timeout;
    /// true on the tick it trips.
    pub fn check(&mut self, now_us: u64, torque_enabled: bool) -> bool {
        let armed = (1..=Self::MAX_UNITS).contains(&self.register);
        let timeout_us = self.register as u64 * Self::UNIT_US;
        let expired = now_us.saturating_sub(self.last_packet_us) > timeout_us;
        if armed && torque_enabled && expired {
            self.register = Self::TRIPPED;
            return true;
        }
        false
    }
}

/// Clamps `rad` into `[min, max]`; NaN goes to the middle of the range, not to an end.
pub fn clamp_to_limits(rad: f32, min: f32, max: f32) -> f32 {
    if rad.is_nan() {
        0.5 * (min + max)
    } else {
        rad.clamp(min, max)
    }
}

/// Moves `from` towards `to` by at most `max_step` (shared with the simulator).
pub use clawrl_robot::board::slew;

/// Whether soft limits reach beyond the hard ones by more than a rounding error (limits come
/// in whole ticks, 1.5 mrad apart).
fn beyond_hard_limits(min: f32, max: f32, config: &ServoConfig) -> bool {
    min < config.min_rad - 1e-3 || max > config.max_rad + 1e-3
}

/// Soft limits that would be inverted or wider than the configured hard ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitsRefused;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Servo {
    /// Soft limits the runtime may narrow (Min/Max Position Limit), always inside the config's.
    pub min_rad: f32,
    pub max_rad: f32,
    /// Last goal written, already clamped to the soft limits.
    pub goal_rad: f32,
    /// What the output was driven to last tick, or `None` when limp.
    pub commanded_rad: Option<f32>,
    pub torque_enabled: bool,
    /// Hardware Error Status bits.
    pub hw_error: u8,
    pub temperature_limit_c: u8,
    pub led: u8,
    /// Position gains (P, I, D): stored for X-series tools; a hobby servo's loop is internal.
    pub gains: [u16; 3],
    pub present: ServoSample,
    pub velocity_rad_s: f32,
    /// Pulse width put out last tick (0 when limp), reported as Present PWM.
    pub pulse_us: f32,
    pub bus_watchdog: BusWatchdog,
}

impl Servo {
    pub fn new(config: &ServoConfig, temperature_limit_c: u8) -> Self {
        Self {
            min_rad: config.min_rad,
            max_rad: config.max_rad,
            goal_rad: clamp_to_limits(0.0, config.min_rad, config.max_rad),
            commanded_rad: None,
            torque_enabled: false,
            hw_error: 0,
            temperature_limit_c,
            led: 0,
            gains: [0, 0, 800],
            present: ServoSample::default(),
            velocity_rad_s: 0.0,
            pulse_us: 0.0,
            bus_watchdog: BusWatchdog::default(),
        }
    }

    /// Ticks the Bus Watchdog; when it trips, the goal becomes where the output is, so the
    /// servo stops there (X-series: "the DYNAMIXEL will stop").
    pub fn check_bus_watchdog(&mut self, now_us: u64) {
        if self.bus_watchdog.check(now_us, self.torque_enabled) {
            self.goal_rad = self.commanded_rad.unwrap_or(self.present.position_rad);
        }
    }

    pub fn set_goal(&mut self, rad: f32) {
        self.goal_rad = clamp_to_limits(rad, self.min_rad, self.max_rad);
    }

    /// Narrows the soft limits; refuses a range outside the hard one or inverted.
    pub fn set_limits(
        &mut self,
        min: f32,
        max: f32,
        config: &ServoConfig,
    ) -> Result<(), LimitsRefused> {
        if min > max || beyond_hard_limits(min, max, config) {
            return Err(LimitsRefused);
        }
        self.min_rad = min.max(config.min_rad);
        self.max_rad = max.min(config.max_rad);
        self.goal_rad = clamp_to_limits(self.goal_rad, self.min_rad, self.max_rad);
        Ok(())
    }

    /// Takes a new sensor sample; velocity is differentiated and low-passed here because a
    /// potentiometer gives position only (`clawrl_robot::board::differentiate`, shared with
    /// the simulator).
    pub fn observe(&mut self, sample: ServoSample, dt_s: f32) {
        self.velocity_rad_s = clawrl_robot::board::differentiate(
            self.velocity_rad_s,
            self.present.position_rad,
            sample.position_rad,
            dt_s,
        );
        self.present = sample;
    }

    /// Where to drive the output this tick, or `None` for no pulses.
    pub fn next_command(
        &mut self,
        track: Option<f32>,
        behaviour: Option<SafeBehaviour>,
        step: f32,
        damp_alpha: f32,
    ) -> Option<f32> {
        let drive = |target: f32, from: f32| {
            clamp_to_limits(slew(from, target, step), self.min_rad, self.max_rad)
        };
        // Leaving limp: start from where the joint is, so the first pulse does not jump.
        let from = self.commanded_rad.unwrap_or(self.present.position_rad);
        let next = match (track, behaviour) {
            (Some(goal), _) if self.torque_enabled => Some(drive(goal, from)),
            (Some(_), _) => None,
            (None, Some(SafeBehaviour::Hold)) => self.commanded_rad.map(|c| drive(c, c)),
            (None, Some(SafeBehaviour::Damp)) => self
                .commanded_rad
                .map(|c| drive(c + damp_alpha * (self.present.position_rad - c), c)),
            (None, _) => None,
        };
        self.commanded_rad = next;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servo() -> Servo {
        let mut s = Servo::new(&ServoConfig::new(-1.2, 1.8), 70);
        s.torque_enabled = true;
        s
    }

    #[test]
    fn goals_outside_the_limits_are_clamped() {
        let mut s = servo();
        for (goal, expected) in [
            (5.0, 1.8),
            (-5.0, -1.2),
            (0.5, 0.5),
            (f32::NAN, 0.3),
            (f32::INFINITY, 1.8),
        ] {
            s.set_goal(goal);
            assert!(
                (s.goal_rad - expected).abs() < 1e-6,
                "goal {goal}: {}",
                s.goal_rad
            );
        }
    }

    #[test]
    fn the_commanded_position_moves_by_at_most_one_step_per_tick() {
        let mut s = servo();
        s.commanded_rad = Some(0.0);
        s.set_goal(1.0);
        let got: Vec<f32> = (0..4)
            .map(|_| s.next_command(Some(s.goal_rad), None, 0.3, 0.0).unwrap())
            .collect();
        let expected = [0.3, 0.6, 0.9, 1.0];
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 1e-6, "{got:?}");
        }
    }

    #[test]
    fn leaving_limp_starts_from_the_measured_position() {
        let mut s = servo();
        s.present.position_rad = 1.0;
        s.commanded_rad = None;
        assert_eq!(s.next_command(Some(-1.0), None, 0.1, 0.0), Some(0.9));
    }

    #[test]
    fn soft_limits_cannot_widen_the_hard_ones() {
        let mut s = servo();
        let config = ServoConfig::new(-1.2, 1.8);
        assert!(s.set_limits(-2.0, 1.0, &config).is_err());
        assert!(s.set_limits(0.5, 0.2, &config).is_err());
        s.set_goal(1.5);
        s.set_limits(-1.0, 1.0, &config).unwrap();
        assert_eq!(s.goal_rad, 1.0);
    }

    #[test]
    fn damp_follows_the_measured_position_with_a_lag() {
        let mut s = servo();
        s.commanded_rad = Some(0.0);
        s.present.position_rad = 1.0;
        let c = s
            .next_command(None, Some(SafeBehaviour::Damp), 1.0, 0.1)
            .unwrap();
        assert!((c - 0.1).abs() < 1e-6);
    }
}
