//! Faults on the serial line between the runtime and the board, each active for a window of
//! the body's simulated time. Names follow PX4's failure injection where they fit (off, stuck,
//! garbage, delayed, intermittent), plus lost packets, a stall and a pulled cable.
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::framer::Unit;

#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Nothing passes, either way.
    Off,
    /// The board's robot-state answers repeat the last one before the window (frozen
    /// sensors, valid packets).
    Stuck,
    /// Each byte, either way, gets one random bit flipped with probability `p`.
    Garbage { p: f64 },
    /// Each packet, either way, is lost with probability `p`.
    Drop { p: f64 },
    /// Everything is held `ms` before it passes.
    Delayed { ms: f64 },
    /// Everything sent during the window is held until its end, then passes at once.
    Stall,
    /// The link passes for `on_ms`, then is off for `off_ms`, and again.
    Intermittent { on_ms: f64, off_ms: f64 },
    /// The cable is out: the runtime's port fails, and is back after the window.
    Unplug,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FaultWindow {
    pub fault: Fault,
    pub from_s: f64,
    pub until_s: f64,
}

impl FaultWindow {
    pub fn new(fault: Fault, from_s: f64, until_s: f64) -> Self {
        Self {
            fault,
            from_s,
            until_s,
        }
    }

    fn active(&self, t: f64) -> bool {
        (self.from_s..self.until_s).contains(&t)
    }
}

/// Which way a unit travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ToBoard,
    ToRuntime,
}

/// What the faults did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub packets: u64,
    pub dropped: u64,
    pub bytes_corrupted: u64,
    pub held: u64,
    pub replaced: u64,
}

/// A scenario's faults and the RNG they draw from (seeded: a run is repeatable).
pub struct Faults {
    windows: Vec<FaultWindow>,
    rng: ChaCha8Rng,
    /// The last robot-state answer seen outside a `Stuck` window.
    last_state: Option<Vec<u8>>,
    pub counts: FaultCounts,
}

/// A status packet from the board carrying the whole robot state.
fn is_state_answer(u: &Unit) -> bool {
    let state = clawrl_protocol::table::board::ROBOT_STATE_LEN as usize;
    matches!(u.header(), Some((100, 0x55, _))) && u.bytes().len() >= 11 + state
}

impl Faults {
    pub fn new(windows: Vec<FaultWindow>, seed: u64) -> Self {
        Self {
            windows,
            rng: ChaCha8Rng::seed_from_u64(seed),
            last_state: None,
            counts: FaultCounts::default(),
        }
    }

    /// Whether a fault of this kind is active at `t`.
    fn any_active(&self, t: f64, kind: impl Fn(&Fault) -> bool) -> bool {
        self.windows.iter().any(|w| w.active(t) && kind(&w.fault))
    }

    /// Whether nothing from the runtime can reach the board at `t`: the cable out, the line
    /// off or stalled (an intermittent line counts while its window lasts).
    pub fn link_down(&self, t: f64) -> bool {
        self.any_active(t, |f| {
            matches!(
                f,
                Fault::Unplug | Fault::Off | Fault::Stall | Fault::Intermittent { .. }
            )
        })
    }

    /// Whether the cable is out at `t`.
    pub fn unplugged(&self, t: f64) -> bool {
        self.any_active(t, |f| *f == Fault::Unplug)
    }

    /// Applies the faults active at `t` (s) to one unit; returns the simulated time (s) at
    /// which what is left of it passes, or `None` when it is lost.
    pub fn apply(&mut self, dir: Direction, unit: &mut Unit, t: f64) -> Option<f64> {
        let packet = matches!(unit, Unit::Packet(_));
        self.counts.packets += u64::from(packet);
        let state_answer = dir == Direction::ToRuntime && is_state_answer(unit);
        let mut release = t;
        let active: Vec<FaultWindow> = self
            .windows
            .iter()
            .filter(|w| w.active(t))
            .cloned()
            .collect();
        if state_answer && !active.iter().any(|w| w.fault == Fault::Stuck) {
            self.last_state = Some(unit.bytes().to_vec());
        }
        for w in &active {
            match w.fault {
                Fault::Off | Fault::Unplug => {
                    self.counts.dropped += 1;
                    return None;
                }
                Fault::Intermittent { on_ms, off_ms } => {
                    let phase = ((t - w.from_s) * 1e3) % (on_ms + off_ms);
                    if phase >= on_ms {
                        self.counts.dropped += 1;
                        return None;
                    }
                }
                Fault::Drop { p } => {
                    if packet && self.rng.random_bool(p) {
                        self.counts.dropped += 1;
                        return None;
                    }
                }
                Fault::Garbage { p } => {
                    for b in unit.bytes_mut() {
                        if self.rng.random_bool(p) {
                            *b ^= 1 << self.rng.random_range(0..8);
                            self.counts.bytes_corrupted += 1;
                        }
                    }
                }
                Fault::Stuck => {
                    if let (true, Some(old)) = (state_answer, &self.last_state) {
                        *unit.bytes_mut() = old.clone();
                        self.counts.replaced += 1;
                    }
                }
                Fault::Delayed { ms } => {
                    release = release.max(t + ms * 1e-3);
                    self.counts.held += 1;
                }
                Fault::Stall => {
                    release = release.max(w.until_s);
                    self.counts.held += 1;
                }
            }
        }
        Some(release)
    }
}
