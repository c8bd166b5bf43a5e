//! Time sources for the loop timer: the OS's monotonic clock on the robot, a fake clock in tests
//! (as `firmware/src/hal.rs` does for the firmware), so the timer's deadline arithmetic is
//! tested exactly instead of against a shared machine's scheduler.
use std::time::{Duration, Instant};

/// A monotonic clock the loop can read, sleep on and spin on.
pub trait Clock {
    /// Time since the clock's fixed origin. Never decreases.
    fn now(&self) -> Duration;
    /// Blocks for at least `d`; a real OS wakes the thread late by an unknown amount.
    fn sleep(&mut self, d: Duration);
    /// One turn of a busy-wait.
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
}

/// The OS's monotonic clock (`std::time::Instant`), with `thread::sleep`.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A clock that only moves when told: by [`FakeClock::advance`] (the loop's work), by a sleep
/// (the requested time plus [`FakeClock::sleep_overshoot`], the scheduler's wake-up latency)
/// and by a spin turn ([`FakeClock::spin_step`], at least 1 ns so a busy-wait always ends).
#[derive(Debug, Clone, Default)]
pub struct FakeClock {
    now: Duration,
    /// Added to every sleep.
    pub sleep_overshoot: Duration,
    /// Time one busy-wait turn takes.
    pub spin_step: Duration,
    /// Sleeps so far.
    pub sleeps: u64,
    /// Busy-wait turns so far.
    pub spins: u64,
}

impl FakeClock {
    /// A clock at zero whose sleeps wake `sleep_overshoot` late and whose spin turns take 1 µs.
    pub fn new(sleep_overshoot: Duration) -> Self {
        Self {
            sleep_overshoot,
            spin_step: Duration::from_micros(1),
            ..Self::default()
        }
    }

    /// Moves time forward by `d` (the loop body's work).
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.now
    }

    fn sleep(&mut self, d: Duration) {
        self.sleeps += 1;
        self.now += d + self.sleep_overshoot;
    }

    fn spin(&mut self) {
        self.spins += 1;
        self.now += self.spin_step.max(Duration::from_nanos(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward_and_sleeps_at_least_the_request() {
        let mut c = MonotonicClock::new();
        let a = c.now();
        c.sleep(Duration::from_millis(2));
        let b = c.now();
        assert!(b - a >= Duration::from_millis(2), "{:?}", b - a);
    }

    #[test]
    fn fake_clock_moves_only_when_told() {
        let mut c = FakeClock::new(Duration::from_micros(30));
        assert_eq!(c.now(), Duration::ZERO);
        c.advance(Duration::from_millis(1));
        c.sleep(Duration::from_millis(2));
        c.spin();
        // 1 ms of work + 2 ms sleep + 30 µs overshoot + one 1 µs spin turn.
        assert_eq!(c.now(), Duration::from_micros(3031));
        assert_eq!((c.sleeps, c.spins), (1, 1));
    }
}
