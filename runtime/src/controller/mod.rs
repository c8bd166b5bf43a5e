//! One control cycle, as a pure function of what arrived: the safety state machine around the
//! student. No I/O, no clock, no allocation (outside the network's forward pass): the control
//! thread calls [`Controller::step`] once per tick, tests call it with made-up readings, and
//! `clawrl-runtime replay` calls it again on a log and must get the same bits.
//!
//! Time is counted in cycles, so a replay does not depend on the wall clock. The phases and
//! what moves them are one table in `controller/safety.rs` ([`next`], events in the order of
//! [`ORDER`]); the diagram is in runtime/README.md, "Safety state machine".
//!
//! Every goal leaves through one place: rate-limited against the last goal sent, then clamped
//! to the joint limits.
use clawrl_robot::{ActionMap, rotation};

use crate::inference::{InferenceError, Student};
use crate::observation::{FRAME_DIM, ObservationBuilder};
use crate::wire::BoardState;

mod poses;
mod safety;
pub use poses::{MAX_SERVOS, Poses, with_grip};
pub use safety::{Event, Events, Fault, ORDER, PHASES, Phase, next};

/// Anything that maps a normalised stacked observation to an action (the candle student; a
/// stand-in in tests).
pub trait Act {
    fn act(&self, obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError>;
}

impl Act for Student {
    fn act(&self, obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
        Student::act(self, obs, out)
    }
}

/// Timings and limits of the safety layer, in SI units.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SafetyConfig {
    pub rate_hz: f64,
    /// Interpolation from the measured pose to the default pose.
    pub stand_s: f64,
    /// Blend from the default pose to the policy's targets (and back, on a stop).
    pub fade_s: f64,
    /// On a stop from Running: the policy runs on with a zero command this long, so the
    /// robot comes to a stand before the fade-out and the lowering.
    pub halt_s: f64,
    /// Interpolation to the rest pose before torque off.
    pub lower_s: f64,
    /// Largest change of a goal, rad/s.
    pub max_joint_speed: f64,
    /// Body tilt (angle between body z and up) that latches the e-stop, rad.
    pub tilt_limit: f64,
    /// Cycles without a fresh reading before the stale fault.
    pub stale_cycles: u32,
    /// Per-servo `[lo, hi]` (rad) no goal may leave: the robot's limits, or stricter.
    pub joint_limits: [[f64; 2]; MAX_SERVOS],
    /// Velocity command given to the policy (forward m/s, lateral m/s, yaw rad/s).
    pub command: [f64; 3],
    /// Above 0: the yaw command holds the heading of the takeover (`control.heading_gain`).
    #[serde(default)]
    pub heading_gain: f64,
    /// Largest yaw command the heading hold gives, rad/s.
    #[serde(default)]
    pub heading_yaw_limit: f64,
    /// Claw angle (rad) of the stand before and after the policy (`safety.stand_grip`; 0
    /// open). The lowering to rest opens them.
    pub stand_grip: f64,
    /// The robot's stand and rest poses and its claws (the shipped robot's in logs written
    /// before the field existed).
    #[serde(default)]
    pub poses: Poses,
}

impl SafetyConfig {
    fn cycles(&self, seconds: f64) -> u32 {
        (seconds * self.rate_hz).round().max(1.0) as u32
    }

    /// How long `phase` lasts before it moves on by itself (`None`: until an event).
    fn duration(&self, phase: Phase) -> Option<f64> {
        match phase {
            Phase::Standing => Some(self.stand_s),
            Phase::FadeIn | Phase::FadeOut => Some(self.fade_s),
            Phase::Halting => Some(self.halt_s),
            Phase::Lowering => Some(self.lower_s),
            _ => None,
        }
    }
}

/// A safety command for the board (its Safety Command register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoardCommand {
    None,
    Enable,
    Disable,
    EStop,
}

/// What arrived this cycle.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Input {
    /// A reading that arrived since the last cycle (`None`: nothing new).
    pub state: Option<BoardState>,
    /// SIGINT/SIGTERM was received (or a command source asked for the stop).
    pub stop: bool,
    /// This cycle's live velocity command (a command source's, through
    /// `crate::command::CommandGuard`); `None`: the configured `control.command`.
    pub command: Option<[f64; 3]>,
    /// The operator pressed the e-stop (a command source's, latched by its guard): the
    /// safety machine's `EStop`, as a tilt.
    pub estop: bool,
}

/// What one cycle decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    pub phase: Phase,
    /// Goals to send (rad, inside the limits), or `None` to send none this cycle.
    pub goals: Option<[f64; MAX_SERVOS]>,
    pub board: BoardCommand,
    /// Whether the policy ran; `frame` and `action` are this cycle's when it did.
    pub policy_ran: bool,
    pub frame: [f32; FRAME_DIM],
    pub action: [f32; MAX_SERVOS],
    /// Goal entries the rate or joint limits changed this cycle.
    pub limited: u32,
    /// The runtime has finished (torque off): the loop may exit.
    pub done: bool,
}

impl Default for Output {
    fn default() -> Self {
        Self {
            phase: Phase::TorqueOff,
            goals: None,
            board: BoardCommand::None,
            policy_ran: false,
            frame: [0.0; FRAME_DIM],
            action: [0.0; MAX_SERVOS],
            limited: 0,
            done: false,
        }
    }
}

pub struct Controller<P> {
    policy: P,
    obs: ObservationBuilder,
    map: ActionMap,
    cfg: SafetyConfig,
    phase: Phase,
    /// Cycles spent in the current phase.
    k: u32,
    latest: Option<BoardState>,
    since_fresh: u32,
    /// The last goal sent: the rate limit's reference and what a fault holds.
    last_goal: [f64; MAX_SERVOS],
    /// Where the current interpolation starts.
    from: [f64; MAX_SERVOS],
    /// The policy's last action, clipped as the simulator clips it (its next observation).
    last_action: [f32; MAX_SERVOS],
    action: [f32; MAX_SERVOS],
    targets: [f64; MAX_SERVOS],
    /// The heading (rad) the yaw command holds, taken at the policy's first cycle of a takeover.
    held_heading: Option<f64>,
    /// This cycle's live command ([`Input::command`]).
    live_command: Option<[f64; 3]>,
}

impl<P: Act> Controller<P> {
    /// `map` turns actions into targets (the bundle's); `obs` builds the network's input.
    pub fn new(policy: P, obs: ObservationBuilder, map: ActionMap, cfg: SafetyConfig) -> Self {
        let stand = cfg.poses.stand_with_grip(cfg.stand_grip, &cfg.joint_limits);
        Self {
            policy,
            obs,
            map,
            cfg,
            phase: Phase::TorqueOff,
            k: 0,
            latest: None,
            since_fresh: 0,
            last_goal: stand,
            from: stand,
            last_action: [0.0; MAX_SERVOS],
            action: [0.0; MAX_SERVOS],
            targets: [0.0; MAX_SERVOS],
            held_heading: None,
            live_command: None,
        }
    }

    /// The default pose with the claws at the stand grip.
    fn stand_pose(&self) -> [f64; MAX_SERVOS] {
        (self.cfg.poses).stand_with_grip(self.cfg.stand_grip, &self.cfg.joint_limits)
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The limits, poses and timings this controller keeps to.
    pub fn safety(&self) -> &SafetyConfig {
        &self.cfg
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.k = 0;
        if phase == Phase::FadeIn {
            self.held_heading = None;
        }
    }

    /// Runs one cycle.
    pub fn step(&mut self, input: &Input, out: &mut Output) {
        self.live_command = input.command;
        out.board = BoardCommand::None;
        out.goals = None;
        out.policy_ran = false;
        out.limited = 0;
        if let Some(s) = input.state {
            self.latest = Some(s);
            self.since_fresh = 0;
        } else {
            self.since_fresh = self.since_fresh.saturating_add(1);
        }
        self.transitions(input, out);
        let goal = match self.phase {
            Phase::TorqueOff | Phase::Off | Phase::EStop | Phase::Fault(Fault::Board) => None,
            Phase::Fault(_) => Some(self.last_goal),
            Phase::Standing => {
                let t = self.progress(self.cfg.stand_s);
                Some(lerp(&self.from, &self.stand_pose(), t))
            }
            Phase::Lowering => {
                let t = self.progress(self.cfg.lower_s);
                Some(lerp(&self.from, &self.cfg.poses.rest, t))
            }
            Phase::FadeIn | Phase::Running | Phase::Halting | Phase::FadeOut => {
                self.policy_goal(out)
            }
        };
        if let Some(g) = goal {
            out.goals = Some(self.limit(g, &mut out.limited));
        }
        self.k = self.k.saturating_add(1);
        out.phase = self.phase;
        out.done = self.phase == Phase::Off;
    }

    /// Phase changes at the start of a cycle, then the board command the phase asks for.
    fn transitions(&mut self, input: &Input, out: &mut Output) {
        let events = self.events(input);
        self.go(events, out);
        // Commands to the board on entry to the safe phases (and again every cycle after:
        // a lost packet must not leave the robot powered).
        match self.phase {
            Phase::EStop => out.board = BoardCommand::EStop,
            Phase::Off => out.board = BoardCommand::Disable,
            _ => {}
        }
    }

    /// What happened since the last cycle, as the table's events.
    fn events(&self, input: &Input) -> Events {
        let fresh = self.latest.filter(|_| self.since_fresh == 0);
        let elapsed = self.cfg.duration(self.phase);
        Events::default()
            .with(Event::Stop, input.stop)
            .with(Event::OperatorEStop, input.estop)
            .with(
                Event::Tilt,
                fresh.is_some_and(|s| tilt(&s) > self.cfg.tilt_limit),
            )
            .with(Event::Alert, fresh.is_some_and(|s| s.alert))
            .with(
                Event::Stale,
                fresh.is_none() && self.since_fresh >= self.cfg.stale_cycles,
            )
            .with(Event::Ready, fresh.is_some_and(|s| !s.alert))
            .with(
                Event::Elapsed,
                elapsed.is_some_and(|d| self.k > self.cfg.cycles(d)),
            )
    }

    /// Moves to the phase the table gives for `events` and does what entering it means. A cycle
    /// may pass through a phase (a stop's Lowering, then a tilt's EStop): only the phase it
    /// ends in is entered, as nothing ran in the one passed through.
    fn go(&mut self, events: Events, out: &mut Output) {
        let to = next(self.phase, events);
        if to == self.phase {
            return;
        }
        self.enter(to);
        match to {
            Phase::Standing => {
                if let Some(s) = self.latest {
                    // Start from where the joints are, so enabling the torque moves nothing.
                    self.last_goal = clamp_to(&s.sensors.joint_pos, &self.cfg.joint_limits);
                    self.from = self.last_goal;
                    out.board = BoardCommand::Enable;
                }
            }
            Phase::FadeIn => {
                self.obs.restart();
                self.last_action = [0.0; MAX_SERVOS];
            }
            Phase::Lowering => self.from = self.last_goal,
            _ => {}
        }
    }

    /// Fraction of the current interpolation done in this cycle, smoothed (no jerk at either
    /// end): exactly 0 in the phase's first cycle, exactly 1 in its last.
    fn progress(&self, seconds: f64) -> f64 {
        let t = (f64::from(self.k) / f64::from(self.cfg.cycles(seconds))).min(1.0);
        t * t * (3.0 - 2.0 * t)
    }

    /// This cycle's live command when a source gives one (the operator steers; no heading
    /// hold); else the configured command, its yaw steered back to the heading held since the
    /// takeover when `heading_gain` > 0, as the slope task's heading command does in training.
    fn command(&mut self, quat: [f64; 4]) -> [f64; 3] {
        if let Some(live) = self.live_command {
            return live;
        }
        let mut c = self.cfg.command;
        if self.cfg.heading_gain > 0.0 {
            let heading = rotation::heading(quat);
            let target = *self.held_heading.get_or_insert(heading);
            let limit = self.cfg.heading_yaw_limit;
            c[2] = rotation::heading_yaw(self.cfg.heading_gain, target, heading, [-limit, limit]);
        }
        c
    }

    /// Runs the student on the latest reading; on a non-finite value it latches the fault and
    /// holds the last goal.
    fn policy_goal(&mut self, out: &mut Output) -> Option<[f64; MAX_SERVOS]> {
        let s = self.latest?;
        let command = if self.phase.stopping() {
            [0.0; 3]
        } else {
            self.command(s.sensors.quat)
        };
        // A robot of fewer servos than the board's maximum uses the first `n` of each array.
        let n = self.cfg.poses.count;
        self.obs.build(&s.sensors, &self.last_action[..n], command);
        let obs = self.obs.normalised();
        out.frame = *self.obs.frame();
        out.policy_ran = true;
        // The raw frame too: normalising clamps an infinite reading to the clip, finite.
        if !(obs.iter().all(|v| v.is_finite()) && out.frame.iter().all(|v| v.is_finite())) {
            return self.fail(Event::NonFinite, out);
        }
        if self.policy.act(obs, &mut self.action[..n]).is_err() {
            return self.fail(Event::Inference, out);
        }
        out.action = self.action;
        if self
            .map
            .targets(&self.action[..n], &mut self.targets[..n])
            .is_err()
        {
            // targets() refuses exactly the non-finite actions.
            return self.fail(Event::NonFinite, out);
        }
        let clip = self.map.clip as f32;
        for (l, a) in self.last_action.iter_mut().zip(self.action) {
            *l = a.clamp(-clip, clip);
        }
        let w = self.progress(self.cfg.fade_s);
        Some(match self.phase {
            Phase::FadeIn => lerp(&self.stand_pose(), &self.targets, w),
            Phase::FadeOut => lerp(&self.targets, &self.stand_pose(), w),
            _ => self.targets,
        })
    }

    /// The policy's fault: through the table (it latches), holding the last goal.
    fn fail(&mut self, event: Event, out: &mut Output) -> Option<[f64; MAX_SERVOS]> {
        self.go(Events::of(&[event]), out);
        Some(self.last_goal)
    }

    /// The rate limit against the last goal, then the joint limits; becomes the last goal.
    fn limit(&mut self, goal: [f64; MAX_SERVOS], limited: &mut u32) -> [f64; MAX_SERVOS] {
        let step = self.cfg.max_joint_speed / self.cfg.rate_hz;
        let mut g = goal;
        clawrl_robot::rate::limit_rate(&mut g, &self.last_goal, step);
        for ((v, asked), [lo, hi]) in g.iter_mut().zip(goal).zip(self.cfg.joint_limits) {
            *v = v.clamp(lo, hi);
            *limited += u32::from(*v != asked);
        }
        self.last_goal = g;
        g
    }
}

fn lerp(a: &[f64; MAX_SERVOS], b: &[f64; MAX_SERVOS], t: f64) -> [f64; MAX_SERVOS] {
    std::array::from_fn(|i| a[i] + (b[i] - a[i]) * t)
}

fn clamp_to(x: &[f64; MAX_SERVOS], limits: &[[f64; 2]; MAX_SERVOS]) -> [f64; MAX_SERVOS] {
    std::array::from_fn(|i| {
        let [lo, hi] = limits[i];
        // A non-finite reading becomes the limit's middle: never a command outside.
        if x[i].is_finite() {
            x[i].clamp(lo, hi)
        } else {
            0.5 * (lo + hi)
        }
    })
}

/// Angle between the body's z axis and up, from the IMU orientation (rad); a non-finite
/// orientation counts as fallen.
pub fn tilt(s: &BoardState) -> f64 {
    let g = rotation::rotate_inv(s.sensors.quat, [0.0, 0.0, -1.0]);
    let c = -g[2];
    if c.is_finite() {
        c.clamp(-1.0, 1.0).acos()
    } else {
        std::f64::consts::PI
    }
}

#[cfg(test)]
mod tests;
