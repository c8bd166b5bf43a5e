//! A fixed-rate loop timer.
//!
//! Deadlines are absolute (`start + k * period`), so lateness in one cycle does not push every
//! later cycle back. The wait sleeps until `spin` before the deadline and busy-waits the rest:
//! the OS wakes sleepers late by tens of microseconds to milliseconds, a spin does not.
//!
//! The timer reads time through a [`Clock`]: [`FixedRate::new`] uses the OS's monotonic clock,
//! [`FixedRate::with_clock`] any other (tests use [`crate::clock::FakeClock`], whose sleeps
//! overshoot by a known amount, to check the deadline arithmetic exactly).
use std::time::Duration;

pub use crate::clock::{Clock, MonotonicClock};

#[derive(Debug, Clone)]
pub struct FixedRate<C = MonotonicClock> {
    clock: C,
    period: Duration,
    spin: Duration,
    /// The next deadline, on the clock's time line.
    next: Duration,
    /// Deadlines already in the past when `wait` was called.
    missed: u64,
}

/// What one `wait` saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// How long after the deadline the loop resumed.
    pub lateness: Duration,
    /// True when the deadline had already passed when `wait` was called (an overrun).
    pub missed: bool,
}

impl FixedRate<MonotonicClock> {
    /// A loop at `hz` on the OS's monotonic clock, spinning the last `spin` before each
    /// deadline. The first deadline is one period from now.
    pub fn new(hz: f64, spin: Duration) -> Self {
        Self::with_clock(hz, spin, MonotonicClock::new())
    }
}

impl<C: Clock> FixedRate<C> {
    /// A loop at `hz` on `clock`, spinning the last `spin` before each deadline. The first
    /// deadline is one period after the clock's present time.
    pub fn with_clock(hz: f64, spin: Duration, clock: C) -> Self {
        assert!(hz > 0.0 && hz.is_finite(), "rate must be positive");
        let period = Duration::from_secs_f64(1.0 / hz);
        assert!(!period.is_zero(), "rate too high for a nanosecond clock");
        Self {
            next: clock.now() + period,
            clock,
            period,
            spin,
            missed: 0,
        }
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    pub fn missed(&self) -> u64 {
        self.missed
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }

    /// Waits for the next deadline. After an overrun the schedule skips the deadlines already
    /// lost instead of running a burst of cycles to catch up.
    pub fn wait(&mut self) -> Tick {
        let deadline = self.next;
        let now = self.clock.now();
        if now >= deadline {
            self.missed += 1;
            // The first deadline still ahead: deadline + (behind + 1) periods.
            let behind = (now - deadline).as_nanos() / self.period.as_nanos();
            let skip = self.period.as_nanos() * (behind + 1);
            self.next = deadline + Duration::from_nanos(skip.min(u128::from(u64::MAX)) as u64);
            return Tick {
                lateness: now - deadline,
                missed: true,
            };
        }
        if let Some(sleep) = (deadline - now).checked_sub(self.spin) {
            self.clock.sleep(sleep);
        }
        while self.clock.now() < deadline {
            self.clock.spin();
        }
        // Absolute: from the deadline, not from whenever the thread woke up.
        self.next = deadline + self.period;
        Tick {
            lateness: self.clock.now() - deadline,
            missed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::clock::FakeClock;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn an_oversleeping_clock_keeps_the_average_period_exact() {
        // 100 Hz, no spin, every sleep wakes 1 ms late, and the loop body works 3 ms per cycle.
        // Absolute deadlines: cycle k resumes at k * 10 ms + 1 ms, so after 100 cycles the clock
        // reads exactly 1001 ms. Deadlines taken from the wake-up would resume every 11 ms
        // (1100 ms); taken from the call to `wait`, every 14 ms.
        let mut r = FixedRate::with_clock(100.0, Duration::ZERO, FakeClock::new(us(1000)));
        for k in 1..=100u64 {
            let tick = r.wait();
            assert_eq!(
                tick,
                Tick {
                    lateness: us(1000),
                    missed: false
                },
                "cycle {k}"
            );
            assert_eq!(r.clock().now(), us(k * 10_000 + 1000), "cycle {k}");
            r.clock_mut().advance(us(3000));
        }
        assert_eq!(r.missed(), 0);
        assert_eq!(r.clock().sleeps, 100);
    }

    #[test]
    fn an_overshoot_longer_than_the_spin_is_not_accumulated() {
        // 500 Hz (2 ms), spin the last 200 µs, sleeps overshoot 300 µs: each wake-up lands
        // 100 µs after the deadline and nothing is left to spin. The schedule stays on
        // k * 2 ms: after 1000 cycles the clock reads 2000 ms + 100 µs, not 2100 ms.
        let mut r = FixedRate::with_clock(500.0, us(200), FakeClock::new(us(300)));
        for _ in 0..1000 {
            let tick = r.wait();
            assert_eq!(tick.lateness, us(100));
            r.clock_mut().advance(us(700));
        }
        assert_eq!(r.clock().now(), us(2_000_000 + 100 + 700));
        assert_eq!((r.missed(), r.clock().spins), (0, 0));
    }

    #[test]
    fn the_spin_absorbs_an_overshoot_shorter_than_itself() {
        // 500 Hz, spin 200 µs, sleeps overshoot 50 µs, 1 µs spin turns: the sleep ends 150 µs
        // early and the spin lands exactly on the deadline, every cycle.
        let mut r = FixedRate::with_clock(500.0, us(200), FakeClock::new(us(50)));
        for k in 1..=50u64 {
            assert_eq!(r.wait().lateness, Duration::ZERO);
            assert_eq!(r.clock().now(), us(k * 2000));
            r.clock_mut().advance(us(500));
        }
        assert_eq!(r.clock().spins, 50 * 150);
    }

    #[test]
    fn the_period_is_exact_from_50_to_500_hz() {
        // The runtime runs at 50-500 Hz. 1/hz rounded to whole nanoseconds drifts by at most
        // 1 ns per cycle (0.3 ppm at 333 Hz): far below a crystal's tolerance.
        for hz in [50.0, 100.0, 200.0, 333.0, 500.0] {
            let mut r = FixedRate::with_clock(hz, us(100), FakeClock::new(us(20)));
            let cycles = 1000u32;
            for _ in 0..cycles {
                r.wait();
            }
            let want = Duration::from_secs_f64(f64::from(cycles) / hz);
            let got = r.clock().now();
            let err = got.abs_diff(want);
            assert!(
                err <= Duration::from_nanos(u64::from(cycles)),
                "{hz} Hz: {got:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn an_overrun_on_a_fake_clock_skips_lost_deadlines_without_a_burst() {
        // 1 kHz: deadlines at 1, 2, 3, ... ms. The body overruns to 5.5 ms before the first wait.
        let mut r = FixedRate::with_clock(1000.0, Duration::ZERO, FakeClock::new(Duration::ZERO));
        r.clock_mut().advance(us(5500));
        let tick = r.wait();
        assert_eq!(
            tick,
            Tick {
                lateness: us(4500),
                missed: true
            }
        );
        assert_eq!(r.missed(), 1);
        // No time passes in an overrun wait; the next deadline is 6 ms, the first one ahead
        // (not 2 ms, which would start a burst of catch-up cycles).
        assert_eq!(r.clock().now(), us(5500));
        let next = r.wait();
        assert!(!next.missed);
        assert_eq!(r.clock().now(), us(6000));
        assert_eq!(r.wait().lateness, Duration::ZERO);
        assert_eq!(r.clock().now(), us(7000));
        assert_eq!(r.missed(), 1);
    }

    #[test]
    fn keeps_the_average_rate_over_many_cycles() {
        let mut r = FixedRate::new(500.0, Duration::from_micros(200));
        let start = Instant::now();
        for _ in 0..100 {
            r.wait();
        }
        // 100 cycles at 2 ms on the real clock: deadlines are absolute, so the total is 200 ms
        // plus at most the lateness of the last wake-up (generous bound for a shared VM).
        let total = start.elapsed();
        assert!(total >= Duration::from_millis(198), "{total:?}");
        assert!(total < Duration::from_millis(260), "{total:?}");
    }

    #[test]
    fn an_overrun_is_counted_and_skips_lost_deadlines() {
        let mut r = FixedRate::new(1000.0, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        let tick = r.wait();
        assert!(tick.missed);
        assert_eq!(r.missed(), 1);
        // The next deadline is in the future again: no burst of catch-up cycles.
        let before = Instant::now();
        let next = r.wait();
        assert!(!next.missed || before.elapsed() > Duration::from_millis(1));
    }
}
