//! The excitation `clawrl-runtime identify` plays with the robot on a stand: per joint group a
//! chirp, steps and a pseudo-random binary sequence (PRBS) around a centre near the default
//! pose, every goal inside the joint limits (less a margin) and under the speed limit.
//! Groups move at once, each with its own step timing and PRBS, so one run excites them all
//! without moving any two groups alike.
//!
//! The plan is computed whole before anything moves: it can be printed, checked and logged.

/// One servo as the excitation sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExcitedServo {
    pub name: String,
    /// Its group's index: servos of a group move alike.
    pub group: usize,
    /// The angle it starts and ends at (rad): the default pose.
    pub default: f64,
    /// `[low, high]` (rad): the joint limits in force.
    pub limits: [f64; 2],
}

/// The signal's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ExcitationSpec {
    /// Largest swing from the centre (rad).
    pub amplitude_rad: f64,
    /// Distance kept from each joint limit (rad).
    pub margin_rad: f64,
    /// Fastest a goal moves (rad/s): keep it under the runtime's `safety.max_joint_speed`.
    pub max_speed: f64,
    /// The chirp sweeps `chirp_hz[0]` to `chirp_hz[1]` over `chirp_s`.
    pub chirp_hz: [f64; 2],
    pub chirp_s: f64,
    pub steps_s: f64,
    pub prbs_s: f64,
    /// The PRBS's bit length (s).
    pub prbs_bit_s: f64,
    /// To the centre at the start and back to the default pose at the end (s each).
    pub settle_s: f64,
}

impl Default for ExcitationSpec {
    fn default() -> Self {
        Self {
            amplitude_rad: 0.2,
            margin_rad: 0.1,
            max_speed: 4.0,
            chirp_hz: [0.3, 3.0],
            chirp_s: 8.0,
            steps_s: 4.0,
            prbs_s: 8.0,
            prbs_bit_s: 0.1,
            settle_s: 1.0,
        }
    }
}

/// Servos grouped by name with the leg's prefix dropped (`FL_knee`, `RR_knee` -> `knee`: the
/// text after the first `_`, or the whole name): one joint of every leg, servos of one part
/// number mounted alike. Returns the group names and each servo's group.
pub fn group_by_joint(servo_names: &[String]) -> (Vec<String>, Vec<usize>) {
    let mut names: Vec<String> = Vec::new();
    let of_servo = servo_names
        .iter()
        .map(|s| {
            let g = s.split_once('_').map_or(s.as_str(), |(_, rest)| rest);
            names.iter().position(|n| n == g).unwrap_or_else(|| {
                names.push(g.to_string());
                names.len() - 1
            })
        })
        .collect();
    (names, of_servo)
}

/// Goals for every cycle of the run, computed before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub rate_hz: f64,
    /// Per cycle, per servo: the goal (rad).
    pub goals: Vec<Vec<f64>>,
    /// Per servo: the centre it swings about and the swing it gets (after the limits).
    pub centre: Vec<f64>,
    pub swing: Vec<f64>,
}

impl Plan {
    /// The plan for `servos` at `rate_hz`.
    pub fn new(servos: &[ExcitedServo], rate_hz: f64, spec: &ExcitationSpec) -> Self {
        let (centre, swing): (Vec<f64>, Vec<f64>) =
            servos.iter().map(|s| centre_and_swing(s, spec)).unzip();
        let dt = 1.0 / rate_hz;
        let phases = [
            spec.settle_s,
            spec.chirp_s,
            spec.steps_s,
            spec.prbs_s,
            spec.settle_s,
        ];
        let cycles = (phases.iter().sum::<f64>() * rate_hz).round() as usize;
        let step = spec.max_speed * dt;
        let mut last: Vec<f64> = servos.iter().map(|s| s.default).collect();
        let mut goals = Vec::with_capacity(cycles);
        for k in 0..cycles {
            let t = k as f64 * dt;
            let mut g: Vec<f64> = servos
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let end = t >= phases[..4].iter().sum::<f64>();
                    if t < spec.settle_s {
                        centre[i]
                    } else if end {
                        s.default
                    } else {
                        centre[i] + swing[i] * shape(t - spec.settle_s, s.group, spec)
                    }
                })
                .collect();
            crate::rate::limit_rate(&mut g, &last, step);
            for (v, s) in g.iter_mut().zip(servos) {
                let [lo, hi] = inner(s, spec);
                *v = v.clamp(lo, hi);
            }
            last.clone_from(&g);
            goals.push(g);
        }
        Self {
            rate_hz,
            goals,
            centre,
            swing,
        }
    }

    pub fn seconds(&self) -> f64 {
        self.goals.len() as f64 / self.rate_hz
    }

    /// The goal of cycle `k` (the default pose's after the end).
    pub fn goal(&self, k: usize) -> &[f64] {
        &self.goals[k.min(self.goals.len() - 1)]
    }
}

/// The range a goal stays in: the limits less the margin, widened to take in the default pose
/// (a claw's default may be its limit), which lies inside the limits.
fn inner(s: &ExcitedServo, spec: &ExcitationSpec) -> [f64; 2] {
    let [lo, hi] = [s.limits[0] + spec.margin_rad, s.limits[1] - spec.margin_rad];
    [lo.min(s.default), hi.max(s.default)]
}

/// The centre a servo swings about (its default pose, moved inward so the swing fits inside
/// its limits less the margin) and its swing (the amplitude, or what fits).
fn centre_and_swing(s: &ExcitedServo, spec: &ExcitationSpec) -> (f64, f64) {
    let [lo, hi] = [s.limits[0] + spec.margin_rad, s.limits[1] - spec.margin_rad];
    let swing = spec.amplitude_rad.min(0.5 * (hi - lo).max(0.0));
    ((s.default).clamp(lo + swing, hi - swing), swing)
}

/// The signal in [-1, 1] at `t` seconds after the settle, for group `g`.
fn shape(t: f64, g: usize, spec: &ExcitationSpec) -> f64 {
    use core::f64::consts::TAU;
    let [f0, f1] = spec.chirp_hz;
    if t < spec.chirp_s {
        // Linear chirp; groups start a quarter turn apart.
        let phase = f0 * t + 0.5 * (f1 - f0) / spec.chirp_s * t * t;
        return (TAU * phase + 0.5 * core::f64::consts::PI * g as f64).sin();
    }
    let t = t - spec.chirp_s;
    if t < spec.steps_s {
        // Square steps, each group with its own half-period (0.4 s, 0.5 s, ...).
        let half = 0.4 + 0.1 * g as f64;
        return if ((t / half) as u64).is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
    }
    let bit = ((t - spec.steps_s) / spec.prbs_bit_s) as u32;
    if prbs_bit(bit, g) { 1.0 } else { -1.0 }
}

/// Bit `n` of a maximum-length 9-bit PRBS (x^9 + x^5 + 1), each group from its own seed.
fn prbs_bit(n: u32, g: usize) -> bool {
    let mut state: u16 = 0x1FF ^ ((37 * (g as u16 + 1)) & 0x1FF);
    if state == 0 {
        state = 1;
    }
    for _ in 0..=n % 511 {
        let b = ((state >> 8) ^ (state >> 4)) & 1;
        state = ((state << 1) | b) & 0x1FF;
    }
    state & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servos() -> Vec<ExcitedServo> {
        vec![
            ExcitedServo {
                name: "knee".into(),
                group: 0,
                default: -1.5,
                limits: [-2.6, -0.6],
            },
            // A claw: its default at its lower limit; the swing fits above it.
            ExcitedServo {
                name: "claw".into(),
                group: 1,
                default: 0.0,
                limits: [0.0, 1.2],
            },
            // A joint too narrow for the amplitude: the swing shrinks to fit.
            ExcitedServo {
                name: "narrow".into(),
                group: 2,
                default: 0.0,
                limits: [-0.25, 0.25],
            },
        ]
    }

    #[test]
    fn every_goal_is_inside_the_limits_and_under_the_speed_limit() {
        let spec = ExcitationSpec::default();
        let s = servos();
        let plan = Plan::new(&s, 50.0, &spec);
        assert_eq!(plan.goals.len(), 1100);
        let step = spec.max_speed / 50.0;
        let mut last: Vec<f64> = s.iter().map(|s| s.default).collect();
        for g in &plan.goals {
            for ((v, s), l) in g.iter().zip(&s).zip(&last) {
                let [lo, hi] = inner(s, &spec);
                assert!(*v >= lo - 1e-12 && *v >= s.limits[0], "{} {v}", s.name);
                assert!(*v <= hi + 1e-12 && *v <= s.limits[1], "{} {v}", s.name);
                assert!(
                    (v - l).abs() <= step + 1e-12,
                    "{} jumped {l} -> {v}",
                    s.name
                );
            }
            last.clone_from(g);
        }
        // The claw swings about 0.3 (0.1 margin + 0.2 swing), the narrow joint by 0.15.
        assert!((plan.centre[1] - 0.3).abs() < 1e-12);
        assert!((plan.swing[2] - 0.15).abs() < 1e-12);
    }

    #[test]
    fn it_moves_each_servo_through_its_swing_and_ends_at_the_default_pose() {
        let s = servos();
        let plan = Plan::new(&s, 50.0, &ExcitationSpec::default());
        for (i, servo) in s.iter().enumerate() {
            let (lo, hi) = plan.goals.iter().fold((f64::MAX, f64::MIN), |(lo, hi), g| {
                (lo.min(g[i]), hi.max(g[i]))
            });
            assert!(
                hi - lo > 1.8 * plan.swing[i],
                "{} spans {}",
                servo.name,
                hi - lo
            );
            assert!((plan.goals.last().unwrap()[i] - servo.default).abs() < 1e-9);
        }
    }

    #[test]
    fn groups_do_not_move_alike() {
        let a = ExcitedServo {
            group: 0,
            ..servos()[0].clone()
        };
        let b = ExcitedServo {
            group: 1,
            ..a.clone()
        };
        let plan = Plan::new(&[a, b], 50.0, &ExcitationSpec::default());
        let same = plan
            .goals
            .iter()
            .filter(|g| (g[0] - g[1]).abs() < 1e-9)
            .count();
        assert!(
            same < plan.goals.len() / 4,
            "{same} of {} cycles alike",
            plan.goals.len()
        );
    }
}
