//! A fixed-rate loop timer.
//!
//! Deadlines are absolute (`start + k * period`), so lateness in one cycle does not push every
//! later cycle back. The wait sleeps until `spin` before the deadline and busy-waits the rest:
//! the OS wakes sleepers late by tens of microseconds to milliseconds, a spin does not.
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct FixedRate {
    period: Duration,
    spin: Duration,
    next: Instant,
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

impl FixedRate {
    /// A loop at `hz`, spinning the last `spin` before each deadline.
    pub fn new(hz: f64, spin: Duration) -> Self {
        assert!(hz > 0.0 && hz.is_finite(), "rate must be positive");
        let period = Duration::from_secs_f64(1.0 / hz);
        Self {
            period,
            spin,
            next: Instant::now() + period,
            missed: 0,
        }
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Waits for the next deadline. After an overrun the schedule skips the deadlines already
    /// lost instead of running a burst of cycles to catch up.
    pub fn wait(&mut self) -> Tick {
        let deadline = self.next;
        let now = Instant::now();
        if now >= deadline {
            self.missed += 1;
            let behind = now.duration_since(deadline).as_nanos() / self.period.as_nanos();
            self.next = deadline + self.period * (behind as u32 + 1);
            return Tick {
                lateness: now - deadline,
                missed: true,
            };
        }
        if let Some(sleep) = (deadline - now).checked_sub(self.spin) {
            std::thread::sleep(sleep);
        }
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
        self.next = deadline + self.period;
        Tick {
            lateness: Instant::now() - deadline,
            missed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_average_rate_over_many_cycles() {
        let mut r = FixedRate::new(500.0, Duration::from_micros(200));
        let start = Instant::now();
        for _ in 0..100 {
            r.wait();
        }
        // 100 cycles at 2 ms: deadlines are absolute, so the total is 200 ms plus at most the
        // lateness of the last wake-up (generous bound for a shared VM).
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
