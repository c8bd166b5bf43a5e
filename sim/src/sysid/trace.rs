//! What a fit reads: the goals sent and the angles read back, cycle by cycle, and how the
//! servos are grouped.

/// One log's excitation, cycle by cycle, in the robot's servo order.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Where it came from (a log's path): what an error names.
    pub source: String,
    pub servo_names: Vec<String>,
    /// Seconds per cycle.
    pub period_s: f64,
    /// The goals the cycle sent (rad, one per servo); `None` when it sent none (the servos
    /// hold the last ones).
    pub goals: Vec<Option<Vec<f64>>>,
    /// The angles the cycle read at its start (rad, one per servo).
    pub measured: Vec<Vec<f64>>,
}

/// Fewest cycles a trace may have: under this there is nothing to hold out.
pub const MIN_CYCLES: usize = 100;
/// A servo whose measured angle spans less than this (rad) was not excited.
pub const MIN_SPAN_RAD: f64 = 0.02;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("{log}: {cycles} cycles; a fit needs at least {MIN_CYCLES} (a truncated log?)")]
    TooShort { log: String, cycles: usize },
    #[error(
        "{log}: logged for servos {logged:?}, the robot has {robot:?} (a log of another robot?)"
    )]
    OtherRobot {
        log: String,
        logged: Vec<String>,
        robot: Vec<String>,
    },
    #[error(
        "{log}: its period is {period_s} s, the robot's simulation steps {expected} s per cycle"
    )]
    Period {
        log: String,
        period_s: f64,
        expected: f64,
    },
    #[error(
        "{log}: servo {servo} moved {span:.4} rad in the whole log (under {MIN_SPAN_RAD}): no \
         excitation to fit (a log of `clawrl-runtime run`, not `identify`?)"
    )]
    NoExcitation {
        log: String,
        servo: String,
        span: f64,
    },
    #[error("{log}: cycle {cycle} holds a non-finite angle or goal")]
    NotFinite { log: String, cycle: usize },
}

impl Trace {
    pub fn len(&self) -> usize {
        self.measured.len()
    }

    pub fn is_empty(&self) -> bool {
        self.measured.is_empty()
    }

    /// Checks the trace is one a fit of `servo_names` at `period_s` can use: long enough, the
    /// same servos in the same order, finite, every servo moved.
    pub fn check(&self, servo_names: &[String], period_s: f64) -> Result<(), TraceError> {
        let log = self.source.clone();
        if self.servo_names != servo_names {
            return Err(TraceError::OtherRobot {
                log,
                logged: self.servo_names.clone(),
                robot: servo_names.to_vec(),
            });
        }
        if (self.period_s - period_s).abs() > 1e-9 {
            return Err(TraceError::Period {
                log,
                period_s: self.period_s,
                expected: period_s,
            });
        }
        if self.len() < MIN_CYCLES {
            return Err(TraceError::TooShort {
                log,
                cycles: self.len(),
            });
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        for (cycle, (m, g)) in self.measured.iter().zip(&self.goals).enumerate() {
            if !finite(m) || g.as_deref().is_some_and(|g| !finite(g)) {
                return Err(TraceError::NotFinite { log, cycle });
            }
        }
        for (i, servo) in servo_names.iter().enumerate() {
            let (lo, hi) = self
                .measured
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), m| {
                    (lo.min(m[i]), hi.max(m[i]))
                });
            if hi - lo < MIN_SPAN_RAD {
                return Err(TraceError::NoExcitation {
                    log,
                    servo: servo.clone(),
                    span: hi - lo,
                });
            }
        }
        Ok(())
    }
}

/// Which servos share one servo model: those of one joint of every leg, as a robot's
/// servos of one part number mounted alike do.
#[derive(Debug, Clone, PartialEq)]
pub struct Groups {
    pub names: Vec<String>,
    /// Per servo (robot order), its group's index.
    pub of_servo: Vec<usize>,
}

impl Groups {
    /// Grouped by name with the leg's prefix dropped
    /// ([`clawrl_robot::excitation::group_by_joint`]).
    pub fn by_joint(servo_names: &[String]) -> Self {
        let (names, of_servo) = clawrl_robot::excitation::group_by_joint(servo_names);
        Self { names, of_servo }
    }

    /// The servos of group `g`, by index.
    pub fn members(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.of_servo.len()).filter(move |&i| self.of_servo[i] == g)
    }
}
