//! What a roboticist asks of a velocity-tracking evaluation, from per-step traces: the tracking
//! error of the body velocity averaged over a sliding window (the policy's error, not the
//! body's speed swinging within every stride) beside the instantaneous one, for linear velocity
//! and yaw rate; at zero command, the torso's drift and the steps taken; and the claws' activity.
//!
//! Every function here is pure: `eval` records the traces, these reduce them.

/// Seconds of the sliding window of [`windowed`]: a stride or two of a trot.
pub const WINDOW_S: f64 = 0.5;
/// Drift is reported per this many seconds at zero command (issue 26: <= 0.1 m in 20 s).
pub const DRIFT_PER_S: f64 = 20.0;

/// One control step: the body's velocity (forward, lateral in the heading frame, m/s; yaw
/// rate, rad/s), the command in force (same axes) and the torso's horizontal position (m).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Step {
    pub vel: [f64; 3],
    pub command: [f64; 3],
    pub pos: [f64; 2],
}

/// Tracking errors: |v_xy - command_xy| in m/s and |yaw rate - command yaw rate| in rad/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tracking {
    pub linear: f64,
    pub yaw: f64,
}

impl Default for Tracking {
    fn default() -> Self {
        Self {
            linear: f64::NAN,
            yaw: f64::NAN,
        }
    }
}

fn errors(v: [f64; 3], c: [f64; 3]) -> (f64, f64) {
    ((v[0] - c[0]).hypot(v[1] - c[1]), (v[2] - c[2]).abs())
}

/// Mean over every step of the instantaneous errors (NaN without steps).
pub fn instantaneous(steps: &[Step]) -> Tracking {
    if steps.is_empty() {
        return Tracking::default();
    }
    let (l, y) = steps.iter().fold((0.0, 0.0), |(l, y), s| {
        let (el, ey) = errors(s.vel, s.command);
        (l + el, y + ey)
    });
    let n = steps.len() as f64;
    Tracking {
        linear: l / n,
        yaw: y / n,
    }
}

/// Mean over every window of `window` consecutive steps (sliding by one step) of the error of
/// the window-mean velocity against the window-mean command. Windows across a command change
/// count (the transient is part of the policy's error); a trace shorter than the window is one
/// window. NaN without steps.
pub fn windowed(steps: &[Step], window: usize) -> Tracking {
    let n = steps.len();
    if n == 0 {
        return Tracking::default();
    }
    let w = window.clamp(1, n);
    // Prefix sums of velocity and command per axis.
    let mut pv = vec![[0.0f64; 3]; n + 1];
    let mut pc = vec![[0.0f64; 3]; n + 1];
    for (t, s) in steps.iter().enumerate() {
        for k in 0..3 {
            pv[t + 1][k] = pv[t][k] + s.vel[k];
            pc[t + 1][k] = pc[t][k] + s.command[k];
        }
    }
    let (mut l, mut y) = (0.0, 0.0);
    for end in w..=n {
        let mean = |p: &[[f64; 3]]| std::array::from_fn(|k| (p[end][k] - p[end - w][k]) / w as f64);
        let (el, ey) = errors(mean(&pv), mean(&pc));
        l += el;
        y += ey;
    }
    let windows = (n - w + 1) as f64;
    Tracking {
        linear: l / windows,
        yaw: y / windows,
    }
}

/// Sliding-window length in control steps for a control period of `dt` seconds.
pub fn window_steps(dt: f64) -> usize {
    ((WINDOW_S / dt).round() as usize).max(1)
}

/// Whether a command asks the robot to stand still (every axis zero).
pub fn is_zero(command: &[f64; 3]) -> bool {
    command.iter().all(|c| c.abs() < 1e-6)
}

/// What the robot did while the command was zero, summed over runs of consecutive zero-command
/// steps: each run of steps i..=j adds (j - i) control periods, the horizontal distance between
/// the torso at step i and at step j, and the touch-downs at steps i+1..=j.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ZeroCommand {
    pub seconds: f64,
    pub drift_m: f64,
    pub touchdowns: usize,
    pub feet: usize,
}

impl ZeroCommand {
    /// `contacts[t]` are the feet's contacts at `steps[t]` (may be empty: no feet).
    pub fn of(steps: &[Step], contacts: &[Vec<bool>], dt: f64) -> Self {
        let feet = contacts.first().map_or(0, Vec::len);
        let mut z = ZeroCommand {
            feet,
            ..Default::default()
        };
        let mut t = 0;
        while t < steps.len() {
            if !is_zero(&steps[t].command) {
                t += 1;
                continue;
            }
            let i = t;
            while t + 1 < steps.len() && is_zero(&steps[t + 1].command) {
                t += 1;
            }
            let j = t;
            z.seconds += (j - i) as f64 * dt;
            let (a, b) = (steps[i].pos, steps[j].pos);
            z.drift_m += (b[0] - a[0]).hypot(b[1] - a[1]);
            if contacts.len() > j {
                for k in i + 1..=j {
                    z.touchdowns += (0..feet)
                        .filter(|&f| contacts[k][f] && !contacts[k - 1][f])
                        .count();
                }
            }
            t += 1;
        }
        z
    }

    pub fn add(&mut self, o: &ZeroCommand) {
        self.seconds += o.seconds;
        self.drift_m += o.drift_m;
        self.touchdowns += o.touchdowns;
        self.feet = self.feet.max(o.feet);
    }

    /// Metres of drift per [`DRIFT_PER_S`] seconds at zero command (NaN without any).
    pub fn drift_per_20s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.drift_m / self.seconds * DRIFT_PER_S
        } else {
            f64::NAN
        }
    }

    /// Touch-downs per foot per second at zero command (NaN without any).
    pub fn steps_per_foot_s(&self) -> f64 {
        if self.seconds > 0.0 && self.feet > 0 {
            self.touchdowns as f64 / (self.seconds * self.feet as f64)
        } else {
            f64::NAN
        }
    }
}

/// The claws' activity: mean grip (0 open, 1 closed), and how far grip and claw joints travel.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Claws {
    /// Sum of every claw's grip over every sample.
    pub grip_sum: f64,
    /// Claw-samples behind `grip_sum`.
    pub grip_samples: usize,
    /// Sum of |grip change| between successive samples, over every claw.
    pub grip_travel: f64,
    /// Sum of |claw joint angle change| between successive samples, rad, over every claw.
    pub joint_travel: f64,
    /// Claw-seconds behind the travels (control periods times claws).
    pub claw_seconds: f64,
}

impl Claws {
    /// `grip[t]` and `angles[t]` are per claw at each sample, `dt` s apart.
    pub fn of(grip: &[Vec<f64>], angles: &[Vec<f64>], dt: f64) -> Self {
        let mut c = Claws::default();
        let travel = |x: &[Vec<f64>]| {
            x.windows(2)
                .map(|w| {
                    w[0].iter()
                        .zip(&w[1])
                        .map(|(a, b)| (b - a).abs())
                        .sum::<f64>()
                })
                .sum::<f64>()
        };
        for g in grip {
            c.grip_sum += g.iter().sum::<f64>();
            c.grip_samples += g.len();
        }
        c.grip_travel = travel(grip);
        c.joint_travel = travel(angles);
        let claws = grip.first().map_or(0, Vec::len);
        c.claw_seconds = grip.len().saturating_sub(1) as f64 * dt * claws as f64;
        c
    }

    pub fn add(&mut self, o: &Claws) {
        self.grip_sum += o.grip_sum;
        self.grip_samples += o.grip_samples;
        self.grip_travel += o.grip_travel;
        self.joint_travel += o.joint_travel;
        self.claw_seconds += o.claw_seconds;
    }

    pub fn mean_grip(&self) -> f64 {
        self.grip_sum / self.grip_samples as f64
    }
    /// Grip change per claw per second.
    pub fn grip_travel_per_s(&self) -> f64 {
        self.grip_travel / self.claw_seconds
    }
    /// Claw joint travel per claw per second, rad/s.
    pub fn joint_travel_per_s(&self) -> f64 {
        self.joint_travel / self.claw_seconds
    }
}
