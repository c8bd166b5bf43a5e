//! Gait metrics from foot contacts: per foot, the duty factor (share of time on the ground),
//! the stride period (time between touch-downs) and the phase offset to the first foot (where
//! in that foot's stride this foot touches down, in cycles), and what the four together make:
//! a trot, a pace, a bound, a pronk, or none of them.
//!
//! Feet are in the robot's leg order, front left, front right, rear left, rear right
//! (`clawrl_robot::quadruped::LEGS`): the diagonal pairs are (0, 3) and (1, 2), the lateral
//! (left/right) pairs (0, 1) and (2, 3), the same-side pairs (0, 2) and (1, 3).
//!
//! Phases are averaged on the circle (a touch-down at 0.95 and one at 0.05 average to 0.0, not
//! 0.5), and episodes are pooled by adding up sums, so a long evaluation weighs every stride
//! once.
use std::f64::consts::TAU;

/// Diagonal, lateral and same-side pairs in leg order (FL, FR, RL, RR).
const DIAGONAL: [(usize, usize); 2] = [(0, 3), (1, 2)];
const LATERAL: [(usize, usize); 2] = [(0, 1), (2, 3)];
const SAME_SIDE: [(usize, usize); 2] = [(0, 2), (1, 3)];

/// How far (in cycles) two feet may be from the phase difference a gait names.
pub const PHASE_TOLERANCE: f64 = 0.1;
/// How steady each foot's phase must be for a named gait: the mean resultant length of its
/// touch-downs' phases (1: every stride at the same phase) at least that of touch-downs
/// alternating [`PHASE_TOLERANCE`] either side of their mean, cos(2π·0.1) ≈ 0.81. A foot that
/// lands anywhere in the cycle has a mean phase, but keeps none.
pub const MIN_PHASE_COHERENCE: f64 = 0.809;
/// A contact or an airborne spell shorter than this is a bounce or a scuff, not a step: it is
/// merged into the spells either side before anything is counted. At the physics rate (4 ms)
/// a landing foot chatters for a sample or two, and each chatter would otherwise count as a
/// touch-down at a random phase; at 50 Hz one sample (20 ms) is kept as it is.
pub const MIN_SPELL_S: f64 = 0.02;
/// Duty factors of a regular trot (each foot on the ground 35-75 % of the time).
pub const TROT_DUTY: [f64; 2] = [0.35, 0.75];

/// What one foot did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FootGait {
    /// Share of samples with the foot on the ground.
    pub duty_factor: f64,
    /// Mean time between successive touch-downs, s (`None`: fewer than two touch-downs).
    pub stride_period_s: Option<f64>,
    /// Circular mean of where, in the first foot's stride, this foot touches down: cycles in
    /// [0, 1) (`None` without strides on both feet). Foot 0 is 0 by definition.
    pub phase: Option<f64>,
    /// Mean resultant length of those phases, in [0, 1] (1: the same phase every stride).
    pub phase_coherence: Option<f64>,
    pub touchdowns: usize,
}

impl FootGait {
    /// A foot that never strides (never lifts, or never lands twice) is not part of the gait.
    pub fn used(&self) -> bool {
        self.stride_period_s.is_some()
    }
}

/// The gait the feet's phases make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaitKind {
    /// Diagonal pairs together, the two pairs half a cycle apart.
    Trot,
    /// Same-side pairs together, left and right half a cycle apart.
    Pace,
    /// Front pair together, rear pair together, half a cycle apart.
    Bound,
    /// All four together.
    Pronk,
    /// Strides on every foot, but none of the above.
    Other,
    /// At least one foot takes no strides (a three-legged gait, or standing).
    FootUnused,
}

impl GaitKind {
    pub fn name(self) -> &'static str {
        match self {
            GaitKind::Trot => "trot",
            GaitKind::Pace => "pace",
            GaitKind::Bound => "bound",
            GaitKind::Pronk => "pronk",
            GaitKind::Other => "no named gait",
            GaitKind::FootUnused => "a foot unused",
        }
    }
}

/// The metrics of every foot, pooled over the episodes added.
#[derive(Debug, Clone, PartialEq)]
pub struct GaitStats {
    pub feet: Vec<FootGait>,
    /// Seconds of contacts analysed.
    pub seconds: f64,
}

/// Distance between two phases on the circle, in cycles: in [0, 0.5].
pub fn phase_distance(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(1.0);
    d.min(1.0 - d)
}

impl GaitStats {
    fn pair_near(&self, pairs: &[(usize, usize)], target: f64) -> bool {
        pairs.iter().all(|&(a, b)| {
            match (
                self.feet.get(a).and_then(|f| f.phase),
                self.feet.get(b).and_then(|f| f.phase),
            ) {
                (Some(pa), Some(pb)) => (phase_distance(pa, pb) - target).abs() <= PHASE_TOLERANCE,
                _ => false,
            }
        })
    }

    /// The gait, from the phases (duty factors play no part here: see [`Self::regular_trot`]).
    /// A trot: each diagonal pair within [`PHASE_TOLERANCE`] of in phase and each lateral pair
    /// within it of half a cycle apart, every foot's phase steady ([`MIN_PHASE_COHERENCE`]).
    pub fn kind(&self) -> GaitKind {
        if self.feet.len() != 4 || !self.feet.iter().all(|f| f.used() && f.phase.is_some()) {
            return GaitKind::FootUnused;
        }
        if !self
            .feet
            .iter()
            .all(|f| f.phase_coherence.is_some_and(|r| r >= MIN_PHASE_COHERENCE))
        {
            return GaitKind::Other;
        }
        let together = |p: &[(usize, usize)]| self.pair_near(p, 0.0);
        let apart = |p: &[(usize, usize)]| self.pair_near(p, 0.5);
        if together(&DIAGONAL) && together(&LATERAL) {
            GaitKind::Pronk
        } else if together(&DIAGONAL) && apart(&LATERAL) {
            GaitKind::Trot
        } else if together(&SAME_SIDE) && apart(&LATERAL) {
            GaitKind::Pace
        } else if together(&LATERAL) && apart(&SAME_SIDE) {
            GaitKind::Bound
        } else {
            GaitKind::Other
        }
    }

    /// The trot issue 9 asks of a teacher: a trot with every foot's duty factor in
    /// [`TROT_DUTY`].
    pub fn regular_trot(&self) -> bool {
        self.kind() == GaitKind::Trot
            && self
                .feet
                .iter()
                .all(|f| (TROT_DUTY[0]..=TROT_DUTY[1]).contains(&f.duty_factor))
    }

    /// A table, one row per foot, and the verdict.
    pub fn text(&self, foot_names: &[String]) -> String {
        let fmt = |v: Option<f64>, unit: &str| match v {
            Some(x) => format!("{x:.2}{unit}"),
            None => "-".to_string(),
        };
        let mut s = format!(
            "gait over {:.1} s: {}{}\n  {:<20} {:>5} {:>8} {:>13} {:>11} {:>9}\n",
            self.seconds,
            self.kind().name(),
            if self.regular_trot() {
                " (regular: duty factors in 0.35-0.75)"
            } else {
                ""
            },
            "foot",
            "duty",
            "stride",
            "phase vs foot 1",
            "touch-downs",
            "steadiness"
        );
        for (i, f) in self.feet.iter().enumerate() {
            let name = foot_names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("foot {i}"));
            s.push_str(&format!(
                "  {:<20} {:>5.2} {:>8} {:>15} {:>11} {:>10}\n",
                name,
                f.duty_factor,
                fmt(f.stride_period_s, " s"),
                fmt(f.phase, ""),
                f.touchdowns,
                fmt(f.phase_coherence, "")
            ));
        }
        s.pop();
        s
    }
}

/// Sums over the episodes added so far, per foot.
#[derive(Debug, Clone, Default)]
pub struct GaitAccumulator {
    samples: usize,
    dt: f64,
    on_ground: Vec<usize>,
    touchdowns: Vec<usize>,
    stride_sum: Vec<f64>,
    strides: Vec<usize>,
    phase_sin: Vec<f64>,
    phase_cos: Vec<f64>,
    phases: Vec<usize>,
}

/// One foot's contacts with every spell (on or off the ground) shorter than `min_len` samples
/// merged into its neighbours, shortest first, so that a bounce splitting a stance does not make
/// the stance's short first part look like a bounce of its own. The first and last spells stay:
/// the record may have cut them.
fn debounced(contacts: &[Vec<bool>], foot: usize, min_len: usize) -> Vec<bool> {
    let mut spells: Vec<(bool, usize)> = Vec::new();
    for c in contacts {
        match spells.last_mut() {
            Some((on, n)) if *on == c[foot] => *n += 1,
            _ => spells.push((c[foot], 1)),
        }
    }
    while let Some(i) = (1..spells.len().saturating_sub(1))
        .filter(|&i| spells[i].1 < min_len)
        .min_by_key(|&i| spells[i].1)
    {
        spells[i - 1].1 += spells[i].1 + spells[i + 1].1;
        spells.drain(i..=i + 1);
    }
    spells
        .iter()
        .flat_map(|&(on, n)| std::iter::repeat_n(on, n))
        .collect()
}

/// Sample indices where a foot lands (off the ground at the sample before).
fn touchdowns(on_ground: &[bool]) -> Vec<usize> {
    (1..on_ground.len())
        .filter(|&t| on_ground[t] && !on_ground[t - 1])
        .collect()
}

impl GaitAccumulator {
    /// Adds one episode's contacts (`contacts[t][foot]`, one row per sample of `dt` s: the
    /// control step, or the physics step where the task reports it).
    pub fn add_episode(&mut self, contacts: &[Vec<bool>], dt: f64) {
        let nf = contacts.first().map_or(0, Vec::len);
        if nf == 0 {
            return;
        }
        if self.on_ground.len() < nf {
            for v in [
                &mut self.on_ground,
                &mut self.touchdowns,
                &mut self.strides,
                &mut self.phases,
            ] {
                v.resize(nf, 0);
            }
            for v in [
                &mut self.stride_sum,
                &mut self.phase_sin,
                &mut self.phase_cos,
            ] {
                v.resize(nf, 0.0);
            }
        }
        self.dt = dt;
        self.samples += contacts.len();
        let min_len = (MIN_SPELL_S / dt - 1e-9).ceil().max(1.0) as usize;
        let feet: Vec<Vec<bool>> = (0..nf).map(|f| debounced(contacts, f, min_len)).collect();
        let downs: Vec<Vec<usize>> = feet.iter().map(|on| touchdowns(on)).collect();
        for f in 0..nf {
            self.on_ground[f] += feet[f].iter().filter(|&&c| c).count();
            self.touchdowns[f] += downs[f].len();
            for w in downs[f].windows(2) {
                self.stride_sum[f] += (w[1] - w[0]) as f64 * dt;
                self.strides[f] += 1;
            }
            // Where in foot 0's stride (between two of its touch-downs) this foot lands.
            for &t in &downs[f] {
                let next = downs[0].partition_point(|&t0| t0 <= t);
                if next == 0 || next == downs[0].len() {
                    continue;
                }
                let (a, b) = (downs[0][next - 1], downs[0][next]);
                let phase = (t - a) as f64 / (b - a) as f64;
                self.phase_sin[f] += (TAU * phase).sin();
                self.phase_cos[f] += (TAU * phase).cos();
                self.phases[f] += 1;
            }
        }
    }

    pub fn stats(&self) -> GaitStats {
        let feet = (0..self.on_ground.len())
            .map(|f| FootGait {
                duty_factor: self.on_ground[f] as f64 / self.samples.max(1) as f64,
                stride_period_s: (self.strides[f] > 0)
                    .then(|| self.stride_sum[f] / self.strides[f] as f64),
                phase: (self.strides[f] > 0
                    && self.strides[0] > 0
                    && self.phase_sin[f].hypot(self.phase_cos[f]) > 0.0)
                    .then(|| (self.phase_sin[f].atan2(self.phase_cos[f]) / TAU).rem_euclid(1.0))
                    .map(|p| if 1.0 - p < 1e-9 { 0.0 } else { p }),
                phase_coherence: (self.phases[f] > 0).then(|| {
                    (self.phase_sin[f].hypot(self.phase_cos[f]) / self.phases[f] as f64).min(1.0)
                }),
                touchdowns: self.touchdowns[f],
            })
            .collect();
        GaitStats {
            feet,
            seconds: self.samples as f64 * self.dt,
        }
    }
}

/// The metrics of one sequence of contacts.
pub fn analyse(contacts: &[Vec<bool>], dt: f64) -> GaitStats {
    let mut acc = GaitAccumulator::default();
    acc.add_episode(contacts, dt);
    acc.stats()
}
