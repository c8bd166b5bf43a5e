//! Lockstep with a simulated body (hardware in the loop): the runtime and the body take turns,
//! and no outcome depends on the wall clock, so a run is a property of the bundle and the seed
//! whatever else the machine is doing.
//!
//! Both ends share one [`Lockstep`] (the body's end lives in `clawrl-hil-tests`' bridge). It
//! replaces the two wall-clock guesses a serial link otherwise makes:
//! - **"the answer is lost"**: on the robot, an answer that has not come within
//!   `serial.answer_timeout_ms` is given up. In lockstep the runtime gives up only when the
//!   body has acted on every byte the runtime sent and the runtime has read every byte the
//!   body wrote ([`Lockstep::quiet`]): then nothing more can come, and the answer was lost on
//!   the line (a fault the scenario injected). A busy machine only makes it wait longer.
//! - **"a control period passed"**: the body moves one period when the runtime's cycle reads
//!   the robot state. A cycle that could not send that read (the cable out, an earlier
//!   transaction failed) asks for the period instead ([`Lockstep::ask_period`]) and waits
//!   until the body has taken it, so the body is never ahead of or behind the runtime.
//!
//! The wall clock is left one job: [`HANG_LIMIT`], after which a peer that stopped answering
//! ends the run with an error instead of hanging it.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long either end waits for the other before it calls the run hung. Generous: a loaded
/// 2-core machine stalls a thread for a second at worst; a hung peer stays hung.
pub const HANG_LIMIT: Duration = Duration::from_secs(30);

/// The byte and period counters both ends of a lockstep link share. Byte counts are per
/// connection: each end resets its own pair when the cable is (re)connected (the body before
/// the new port exists, the runtime when it opens it), so a pulled cable's lost bytes do not
/// count against the next connection.
#[derive(Debug, Default)]
pub struct Lockstep {
    /// Bytes the runtime wrote, and read, on this connection.
    sent: AtomicU64,
    received: AtomicU64,
    /// Bytes the body's end read and acted on, and wrote back. `answered` is always stored
    /// before the `consumed` that covers the request it answers.
    consumed: AtomicU64,
    answered: AtomicU64,
    /// Periods the runtime asked for without a state read, and those the body took.
    periods_asked: AtomicU64,
    periods_done: AtomicU64,
}

impl Lockstep {
    pub fn new() -> Self {
        Self::default()
    }

    // The runtime's end.

    /// A new connection from the runtime's side.
    pub fn runtime_connected(&self) {
        self.sent.store(0, Ordering::SeqCst);
        self.received.store(0, Ordering::SeqCst);
    }

    pub fn sent(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::SeqCst);
    }

    pub fn received(&self, n: usize) {
        self.received.fetch_add(n as u64, Ordering::SeqCst);
    }

    /// Nothing is on its way either way: the body has acted on all the runtime sent, and the
    /// runtime has read all the body answered. An answer still missing now will never come.
    pub fn quiet(&self) -> bool {
        // `consumed` first: once it covers everything sent, `answered` is final for it.
        let consumed = self.consumed.load(Ordering::SeqCst);
        let answered = self.answered.load(Ordering::SeqCst);
        consumed == self.sent.load(Ordering::SeqCst)
            && answered == self.received.load(Ordering::SeqCst)
    }

    /// Asks the body for one period and waits until it has taken it. `false` after
    /// [`HANG_LIMIT`] without it.
    pub fn ask_period(&self) -> bool {
        let n = self.periods_asked.fetch_add(1, Ordering::SeqCst) + 1;
        let start = Instant::now();
        while self.periods_done.load(Ordering::SeqCst) < n {
            if start.elapsed() > HANG_LIMIT {
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        true
    }

    // The body's end.

    /// A new connection from the body's side: call before the new port exists.
    pub fn body_connected(&self) {
        self.consumed.store(0, Ordering::SeqCst);
        self.answered.store(0, Ordering::SeqCst);
    }

    /// `n` bytes read and acted on (after their answers were written).
    pub fn consumed(&self, n: usize) {
        self.consumed.fetch_add(n as u64, Ordering::SeqCst);
    }

    pub fn answered(&self, n: usize) {
        self.answered.fetch_add(n as u64, Ordering::SeqCst);
    }

    /// Whether the runtime is waiting for a period.
    pub fn period_wanted(&self) -> bool {
        self.periods_done.load(Ordering::SeqCst) < self.periods_asked.load(Ordering::SeqCst)
    }

    /// One asked-for period taken (after everything it released was written).
    pub fn period_taken(&self) {
        self.periods_done.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn quiet_only_when_both_ends_have_everything() {
        let l = Lockstep::new();
        assert!(l.quiet());
        l.sent(10);
        assert!(!l.quiet(), "the body has not read the request");
        l.answered(7);
        l.consumed(10);
        assert!(!l.quiet(), "the runtime has not read the answer");
        l.received(7);
        assert!(l.quiet());
        // A new connection forgets the old one's bytes on each side.
        l.sent(3);
        l.runtime_connected();
        l.body_connected();
        assert!(l.quiet());
    }

    #[test]
    fn an_asked_period_returns_once_the_body_takes_it() {
        let l = Arc::new(Lockstep::new());
        assert!(!l.period_wanted());
        let body = {
            let l = l.clone();
            std::thread::spawn(move || {
                while !l.period_wanted() {
                    std::thread::yield_now();
                }
                l.period_taken();
            })
        };
        assert!(l.ask_period());
        body.join().unwrap();
        assert!(!l.period_wanted());
    }
}
