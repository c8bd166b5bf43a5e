//! One control cycle, as a pure function of what arrived: the safety state machine around the
//! student. No I/O, no clock, no allocation (outside the network's forward pass): the control
//! thread calls [`Controller::step`] once per tick, tests call it with made-up readings, and
//! `clawrl-runtime replay` calls it again on a log and must get the same bits.
//!
//! Time is counted in cycles, so a replay does not depend on the wall clock. The states (see
//! the diagram in runtime/README.md):
//!
//! ```text
//!  TorqueOff --first reading--> Standing --stand_s--> FadeIn --fade_s--> Running
//!      (measured pose, ENABLE)  (to the default pose) (default -> policy)
//!  Standing/FadeIn/Running --NaN/inf in obs or action--> Fault(NonFinite): hold last safe goal
//!  Standing/FadeIn/Running --no fresh reading for stale_cycles--> Fault(Stale): hold
//!  Standing/FadeIn/Running --board alert bit--> Fault(Board): the board's own safe behaviour
//!  Standing/FadeIn/Running --tilt > tilt_limit--> EStop: E-STOP to the board (it damps), latched
//!  Running --stop (SIGINT/SIGTERM)--> Halting (the policy, command zero, halt_s)
//!      --> FadeOut (policy -> default pose, fade_s) --> Lowering (to the rest pose, lower_s)
//!      --> Off (DISABLE): the gait ends on the policy's own terms before the legs fold
//!  Standing/FadeIn/Fault(NonFinite, Inference) --stop--> Lowering --> Off
//!      (from Fault(Stale), Fault(Board) and EStop straight to Off: the board will not move)
//! ```
//!
//! Every goal leaves through one place: rate-limited against the last goal sent, then clamped
//! to the joint limits.
use clawrl_robot::quadruped::{DEFAULT_POSE, NUM_SERVOS, REST_POSE};
use clawrl_robot::{ActionMap, rotation};

use crate::inference::{InferenceError, Student};
use crate::observation::{FRAME_DIM, ObservationBuilder};
use crate::wire::BoardState;

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
    pub joint_limits: [[f64; 2]; NUM_SERVOS],
    /// Velocity command given to the policy (forward m/s, lateral m/s, yaw rad/s).
    pub command: [f64; 3],
}

impl SafetyConfig {
    fn cycles(&self, seconds: f64) -> u32 {
        (seconds * self.rate_hz).round().max(1.0) as u32
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A NaN or infinity in the observation or the action.
    NonFinite,
    /// No fresh reading for `stale_cycles` cycles.
    Stale,
    /// The board reports a fault or e-stop of its own (alert bit).
    Board,
    /// The policy could not run (wrong shapes: a bug, not an input).
    Inference,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    TorqueOff,
    Standing,
    FadeIn,
    Running,
    Fault(Fault),
    EStop,
    Lowering,
    Off,
    /// A stop from Running: the policy with a zero command.
    Halting,
    /// From the policy's targets back to the default pose, after Halting.
    FadeOut,
}

impl Phase {
    /// Code in telemetry logs.
    pub fn code(self) -> u8 {
        match self {
            Phase::TorqueOff => 0,
            Phase::Standing => 1,
            Phase::FadeIn => 2,
            Phase::Running => 3,
            Phase::Fault(Fault::NonFinite) => 4,
            Phase::Fault(Fault::Stale) => 5,
            Phase::Fault(Fault::Board) => 6,
            Phase::Fault(Fault::Inference) => 7,
            Phase::EStop => 8,
            Phase::Lowering => 9,
            Phase::Off => 10,
            Phase::Halting => 11,
            Phase::FadeOut => 12,
        }
    }

    /// Whether the runtime is commanding the servos in this phase.
    fn powered(self) -> bool {
        matches!(
            self,
            Phase::Standing | Phase::FadeIn | Phase::Running | Phase::Halting | Phase::FadeOut
        )
    }

    /// Whether a stop is already under way.
    fn stopping(self) -> bool {
        matches!(
            self,
            Phase::Halting | Phase::FadeOut | Phase::Lowering | Phase::Off
        )
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
    /// SIGINT/SIGTERM was received.
    pub stop: bool,
}

/// What one cycle decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    pub phase: Phase,
    /// Goals to send (rad, inside the limits), or `None` to send none this cycle.
    pub goals: Option<[f64; NUM_SERVOS]>,
    pub board: BoardCommand,
    /// Whether the policy ran; `frame` and `action` are this cycle's when it did.
    pub policy_ran: bool,
    pub frame: [f32; FRAME_DIM],
    pub action: [f32; NUM_SERVOS],
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
            action: [0.0; NUM_SERVOS],
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
    last_goal: [f64; NUM_SERVOS],
    /// Where the current interpolation starts.
    from: [f64; NUM_SERVOS],
    /// The policy's last action, clipped as the simulator clips it (its next observation).
    last_action: [f32; NUM_SERVOS],
    action: [f32; NUM_SERVOS],
    targets: [f64; NUM_SERVOS],
}

impl<P: Act> Controller<P> {
    /// `map` turns actions into targets (the bundle's); `obs` builds the network's input.
    pub fn new(policy: P, obs: ObservationBuilder, map: ActionMap, cfg: SafetyConfig) -> Self {
        Self {
            policy,
            obs,
            map,
            cfg,
            phase: Phase::TorqueOff,
            k: 0,
            latest: None,
            since_fresh: 0,
            last_goal: DEFAULT_POSE,
            from: DEFAULT_POSE,
            last_action: [0.0; NUM_SERVOS],
            action: [0.0; NUM_SERVOS],
            targets: [0.0; NUM_SERVOS],
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn policy(&self) -> &P {
        &self.policy
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.k = 0;
    }

    /// Runs one cycle.
    pub fn step(&mut self, input: &Input, out: &mut Output) {
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
                Some(lerp(&self.from, &DEFAULT_POSE, t))
            }
            Phase::Lowering => {
                let t = self.progress(self.cfg.lower_s);
                Some(lerp(&self.from, &REST_POSE, t))
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

    /// Phase changes at the start of a cycle, most urgent first.
    fn transitions(&mut self, input: &Input, out: &mut Output) {
        let p = self.phase;
        if input.stop && !p.stopping() {
            // Lowering straight out of a walking gait can tip the robot past the tilt limit
            // (HIL, BENCHMARKS.md): a running policy first halts and hands back the default
            // pose. Lower only when the board still follows goals.
            if p == Phase::Running {
                self.enter(Phase::Halting);
            } else if p.powered() || matches!(p, Phase::Fault(Fault::NonFinite | Fault::Inference))
            {
                self.from = self.last_goal;
                self.enter(Phase::Lowering);
            } else {
                self.enter(Phase::Off);
            }
        }
        let p = self.phase;
        if p.powered() || p == Phase::Lowering {
            if let Some(s) = self.latest.filter(|_| self.since_fresh == 0) {
                if tilt(&s) > self.cfg.tilt_limit {
                    self.enter(Phase::EStop);
                } else if s.alert {
                    self.enter(Phase::Fault(Fault::Board));
                }
            } else if self.since_fresh >= self.cfg.stale_cycles {
                self.enter(Phase::Fault(Fault::Stale));
            }
        }
        match self.phase {
            Phase::TorqueOff => {
                if let Some(s) = self.latest.filter(|s| self.since_fresh == 0 && !s.alert) {
                    // Start from where the joints are, so enabling the torque moves nothing.
                    self.last_goal = clamp_to(&s.sensors.joint_pos, &self.cfg.joint_limits);
                    self.from = self.last_goal;
                    out.board = BoardCommand::Enable;
                    self.enter(Phase::Standing);
                }
            }
            Phase::Standing if self.k > self.cfg.cycles(self.cfg.stand_s) => {
                self.obs.restart();
                self.last_action = [0.0; NUM_SERVOS];
                self.enter(Phase::FadeIn);
            }
            Phase::FadeIn if self.k > self.cfg.cycles(self.cfg.fade_s) => {
                self.enter(Phase::Running)
            }
            Phase::Halting if self.k > self.cfg.cycles(self.cfg.halt_s) => {
                self.enter(Phase::FadeOut)
            }
            Phase::FadeOut if self.k > self.cfg.cycles(self.cfg.fade_s) => {
                self.from = self.last_goal;
                self.enter(Phase::Lowering);
            }
            Phase::Lowering if self.k > self.cfg.cycles(self.cfg.lower_s) => self.enter(Phase::Off),
            _ => {}
        }
        // Commands to the board on entry to the safe phases (and again every cycle after:
        // a lost packet must not leave the robot powered).
        match self.phase {
            Phase::EStop => out.board = BoardCommand::EStop,
            Phase::Off => out.board = BoardCommand::Disable,
            _ => {}
        }
    }

    /// Fraction of the current interpolation done in this cycle, smoothed (no jerk at either
    /// end): exactly 0 in the phase's first cycle, exactly 1 in its last.
    fn progress(&self, seconds: f64) -> f64 {
        let t = (f64::from(self.k) / f64::from(self.cfg.cycles(seconds))).min(1.0);
        t * t * (3.0 - 2.0 * t)
    }

    /// Runs the student on the latest reading; on a non-finite value it latches the fault and
    /// holds the last goal.
    fn policy_goal(&mut self, out: &mut Output) -> Option<[f64; NUM_SERVOS]> {
        let s = self.latest?;
        let command = if self.phase.stopping() {
            [0.0; 3]
        } else {
            self.cfg.command
        };
        self.obs.build(&s.sensors, &self.last_action, command);
        let obs = self.obs.normalised();
        out.frame = *self.obs.frame();
        out.policy_ran = true;
        // The raw frame too: normalising clamps an infinite reading to the clip, finite.
        if !(obs.iter().all(|v| v.is_finite()) && out.frame.iter().all(|v| v.is_finite())) {
            self.enter(Phase::Fault(Fault::NonFinite));
            return Some(self.last_goal);
        }
        if self.policy.act(obs, &mut self.action).is_err() {
            self.enter(Phase::Fault(Fault::Inference));
            return Some(self.last_goal);
        }
        out.action = self.action;
        if self.map.targets(&self.action, &mut self.targets).is_err() {
            // targets() refuses exactly the non-finite actions.
            self.enter(Phase::Fault(Fault::NonFinite));
            return Some(self.last_goal);
        }
        let clip = self.map.clip as f32;
        for (l, a) in self.last_action.iter_mut().zip(self.action) {
            *l = a.clamp(-clip, clip);
        }
        let w = self.progress(self.cfg.fade_s);
        Some(match self.phase {
            Phase::FadeIn => lerp(&DEFAULT_POSE, &self.targets, w),
            Phase::FadeOut => lerp(&self.targets, &DEFAULT_POSE, w),
            _ => self.targets,
        })
    }

    /// The rate limit against the last goal, then the joint limits; becomes the last goal.
    fn limit(&mut self, goal: [f64; NUM_SERVOS], limited: &mut u32) -> [f64; NUM_SERVOS] {
        let step = self.cfg.max_joint_speed / self.cfg.rate_hz;
        let mut g = goal;
        for ((v, prev), [lo, hi]) in g.iter_mut().zip(self.last_goal).zip(self.cfg.joint_limits) {
            let c = v.clamp(prev - step, prev + step).clamp(lo, hi);
            *limited += u32::from(c != *v);
            *v = c;
        }
        self.last_goal = g;
        g
    }
}

fn lerp(a: &[f64; NUM_SERVOS], b: &[f64; NUM_SERVOS], t: f64) -> [f64; NUM_SERVOS] {
    std::array::from_fn(|i| a[i] + (b[i] - a[i]) * t)
}

fn clamp_to(x: &[f64; NUM_SERVOS], limits: &[[f64; 2]; NUM_SERVOS]) -> [f64; NUM_SERVOS] {
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
mod tests {
    use std::cell::Cell;

    use clawrl_robot::quadruped::JOINT_LIMITS;

    use super::*;
    use crate::synthetic;

    /// A policy that returns `value` in every entry, or NaN from cycle `nan_from` on.
    struct Fixed {
        value: f32,
        nan_from: Option<u32>,
        calls: Cell<u32>,
    }

    impl Act for Fixed {
        fn act(&self, _obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
            let n = self.calls.get();
            self.calls.set(n + 1);
            let nan = self.nan_from.is_some_and(|k| n >= k);
            out.fill(if nan { f32::NAN } else { self.value });
            Ok(())
        }
    }

    fn cfg() -> SafetyConfig {
        SafetyConfig {
            rate_hz: 50.0,
            stand_s: 0.2,
            fade_s: 0.2,
            halt_s: 0.2,
            lower_s: 0.2,
            max_joint_speed: 5.0,
            tilt_limit: 45f64.to_radians(),
            stale_cycles: 3,
            joint_limits: JOINT_LIMITS,
            command: [0.3, 0.0, 0.0],
        }
    }

    fn controller(value: f32, nan_from: Option<u32>) -> Controller<Fixed> {
        controller_with(value, nan_from, cfg())
    }

    fn controller_with(value: f32, nan_from: Option<u32>, cfg: SafetyConfig) -> Controller<Fixed> {
        let (m, _) = synthetic::quadruped_parts(&[8], 0, 1);
        let obs = ObservationBuilder::from_manifest(&m).unwrap();
        let map = m.action.map.clone().unwrap();
        let policy = Fixed {
            value,
            nan_from,
            calls: Cell::new(0),
        };
        Controller::new(policy, obs, map, cfg)
    }

    fn reading(pose: [f64; NUM_SERVOS]) -> BoardState {
        let mut s = BoardState::default();
        s.sensors.quat = [1.0, 0.0, 0.0, 0.0];
        s.sensors.joint_pos = pose;
        s
    }

    fn fresh(c: &mut Controller<Fixed>, out: &mut Output, n: usize) -> Vec<Output> {
        (0..n)
            .map(|_| {
                let pose = out.goals.unwrap_or(REST_POSE);
                c.step(
                    &Input {
                        state: Some(reading(pose)),
                        stop: false,
                    },
                    out,
                );
                *out
            })
            .collect()
    }

    fn inside(g: &[f64; NUM_SERVOS]) -> bool {
        g.iter()
            .zip(JOINT_LIMITS)
            .all(|(v, [lo, hi])| *v >= lo && *v <= hi)
    }

    #[test]
    fn start_up_runs_in_order_and_no_goal_moves_faster_than_the_rate_limit() {
        // +5 is far outside the action clip: the targets sit on the joint limits.
        let mut c = controller(5.0, None);
        let mut out = Output::default();
        let outs = fresh(&mut c, &mut out, 60);
        let mut phases: Vec<Phase> = outs.iter().map(|o| o.phase).collect();
        phases.dedup();
        assert_eq!(
            phases,
            [Phase::Standing, Phase::FadeIn, Phase::Running],
            "the first reading enables"
        );
        assert_eq!(outs[0].board, BoardCommand::Enable);
        assert_eq!(
            outs[0].goals,
            Some(REST_POSE),
            "torque on where the joints are"
        );
        let step = 5.0 / 50.0 + 1e-12;
        let goals: Vec<_> = outs.iter().filter_map(|o| o.goals).collect();
        for w in goals.windows(2) {
            assert!(inside(&w[1]));
            for i in 0..NUM_SERVOS {
                assert!((w[1][i] - w[0][i]).abs() <= step, "servo {i}: {w:?}");
            }
        }
        assert!(outs.iter().any(|o| o.limited > 0), "the rate limit acted");
    }

    #[test]
    fn the_rate_limit_follows_the_configured_rate() {
        // The limit is max_joint_speed per second: per cycle 1/rate of it, at any rate (a
        // period fixed at 1/50 s moves twice too fast at 100 Hz and half as fast at 25 Hz).
        for rate_hz in [25.0, 100.0, 200.0] {
            let mut c = controller_with(5.0, None, SafetyConfig { rate_hz, ..cfg() });
            let mut out = Output::default();
            let outs = fresh(&mut c, &mut out, (rate_hz * 1.0) as usize);
            assert_eq!(out.phase, Phase::Running, "{rate_hz} Hz");
            let step = 5.0 / rate_hz;
            let goals: Vec<_> = outs.iter().filter_map(|o| o.goals).collect();
            let fastest = goals
                .windows(2)
                .flat_map(|w| (0..NUM_SERVOS).map(move |i| (w[1][i] - w[0][i]).abs()))
                .fold(0.0, f64::max);
            assert!(
                (fastest - step).abs() < 1e-9,
                "{rate_hz} Hz: the fastest goal moved {fastest} rad in a cycle, the limit is {step}"
            );
        }
    }

    #[test]
    fn the_fade_in_blends_the_default_pose_into_the_policy_smoothly() {
        // A long stand ends exactly on the default pose; a small action keeps every goal
        // under the rate limit, so the goals are the blend itself.
        let mut c = controller_with(
            0.3,
            None,
            SafetyConfig {
                stand_s: 2.0,
                ..cfg()
            },
        );
        let mut out = Output::default();
        let outs = fresh(&mut c, &mut out, 200);
        let fade: Vec<&Output> = outs.iter().filter(|o| o.phase == Phase::FadeIn).collect();
        let running: Vec<&Output> = outs.iter().filter(|o| o.phase == Phase::Running).collect();
        let n = cfg().cycles(cfg().fade_s);
        assert_eq!(fade.len(), n as usize + 1, "fade_s at rate_hz, both ends");
        let targets = running[0].goals.unwrap();
        assert!(
            running
                .iter()
                .all(|o| o.goals == Some(targets) && o.limited == 0)
        );
        let apart = (0..NUM_SERVOS)
            .map(|i| (targets[i] - DEFAULT_POSE[i]).abs())
            .fold(0.0, f64::max);
        assert!(
            apart > 0.05,
            "the policy's pose is {apart} rad from the default"
        );
        for (k, o) in fade.iter().enumerate() {
            assert!(o.policy_ran && o.limited == 0, "cycle {k}: {o:?}");
            let t = k as f64 / f64::from(n);
            let w = t * t * (3.0 - 2.0 * t);
            let g = o.goals.unwrap();
            for i in 0..NUM_SERVOS {
                let want = DEFAULT_POSE[i] + (targets[i] - DEFAULT_POSE[i]) * w;
                assert!(
                    (g[i] - want).abs() < 1e-12,
                    "cycle {k} of the fade-in, servo {i}: {} rad, the blend is {want}",
                    g[i]
                );
            }
        }
    }

    #[test]
    fn a_non_finite_reading_while_running_latches_the_fault_and_holds() {
        // The stand-in policy answers finite actions whatever it is fed: only the check on
        // the observation stands between a broken reading and the servos.
        type Spoil = fn(&mut BoardState);
        let spoils: [(&str, Spoil); 6] = [
            ("NaN joint position", |s| s.sensors.joint_pos[3] = f64::NAN),
            ("+inf joint position", |s| {
                s.sensors.joint_pos[0] = f64::INFINITY
            }),
            ("-inf joint velocity", |s| {
                s.sensors.joint_vel[7] = f64::NEG_INFINITY
            }),
            ("NaN joint velocity", |s| s.sensors.joint_vel[2] = f64::NAN),
            ("inf gyro", |s| s.sensors.gyro[1] = f64::INFINITY),
            ("NaN accelerometer", |s| s.sensors.acc[2] = f64::NAN),
        ];
        for (what, spoil) in spoils {
            let mut c = controller(0.1, None);
            let mut out = Output::default();
            fresh(&mut c, &mut out, 40);
            assert_eq!(out.phase, Phase::Running, "{what}");
            let held = out.goals.unwrap();
            let calls = c.policy().calls.get();
            let mut bad = reading(held);
            spoil(&mut bad);
            c.step(
                &Input {
                    state: Some(bad),
                    stop: false,
                },
                &mut out,
            );
            assert_eq!(out.phase, Phase::Fault(Fault::NonFinite), "{what}");
            assert_eq!(out.goals, Some(held), "{what}: the last goal held");
            assert_eq!(
                c.policy().calls.get(),
                calls,
                "{what}: the policy was not fed it"
            );
            // Latched: good readings after it do not bring the policy back.
            let after = fresh(&mut c, &mut out, 20);
            for o in after {
                assert_eq!(o.phase, Phase::Fault(Fault::NonFinite), "{what}");
                assert_eq!(o.goals, Some(held), "{what}");
            }
            assert_eq!(c.policy().calls.get(), calls, "{what}");
        }
    }

    #[test]
    fn a_stop_while_running_halts_fades_out_to_the_default_pose_then_lowers() {
        use clawrl_robot::observation::offsets::COMMAND;
        let mut c = controller(0.2, None);
        let mut out = Output::default();
        fresh(&mut c, &mut out, 40);
        assert_eq!(out.phase, Phase::Running);
        assert_ne!(
            out.frame[COMMAND], 0.0,
            "the configured command while running"
        );
        let policy_targets = out.goals.unwrap();
        let mut outs = Vec::new();
        for _ in 0..60 {
            let pose = out.goals.unwrap_or(REST_POSE);
            let input = Input {
                state: Some(reading(pose)),
                stop: true,
            };
            c.step(&input, &mut out);
            outs.push(out);
            if out.done {
                break;
            }
        }
        let mut phases: Vec<Phase> = outs.iter().map(|o| o.phase).collect();
        phases.dedup();
        assert_eq!(
            phases,
            [Phase::Halting, Phase::FadeOut, Phase::Lowering, Phase::Off]
        );
        let halting: Vec<_> = outs.iter().filter(|o| o.phase == Phase::Halting).collect();
        // cycles(0.2 s) at 50 Hz is 10, and the phase's last cycle is the 11th.
        assert_eq!(halting.len(), 11);
        for o in &halting {
            assert!(o.policy_ran, "the policy goes on running");
            assert_eq!(
                o.frame[COMMAND..COMMAND + 3],
                [0.0; 3],
                "with a zero command"
            );
            assert_eq!(
                o.goals,
                Some(policy_targets),
                "and its targets are the goals"
            );
        }
        let fade: Vec<_> = outs.iter().filter(|o| o.phase == Phase::FadeOut).collect();
        assert_eq!(fade.len(), 11);
        // Onto the default pose, give or take the rate limit's lag behind the blend.
        let off = |o: &Output, pose: [f64; NUM_SERVOS]| {
            o.goals
                .unwrap()
                .iter()
                .zip(pose)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        };
        let end = off(fade.last().unwrap(), DEFAULT_POSE);
        assert!(
            end < 0.01,
            "the fade-out ends {end} rad from the default pose"
        );
        let lower: Vec<_> = outs.iter().filter(|o| o.phase == Phase::Lowering).collect();
        let end = off(lower.last().unwrap(), REST_POSE);
        assert!(end < 0.01, "the lowering ends {end} rad from the rest pose");
        assert_eq!(out.board, BoardCommand::Disable);
        let step = 5.0 / 50.0 + 1e-12;
        let goals: Vec<_> = outs.iter().filter_map(|o| o.goals).collect();
        for w in goals.windows(2) {
            assert!(w[0].iter().zip(w[1]).all(|(a, b)| (a - b).abs() <= step));
        }
    }

    #[test]
    fn a_stop_before_the_policy_runs_lowers_straight_away() {
        let mut c = controller(0.2, None);
        let mut out = Output::default();
        fresh(&mut c, &mut out, 5);
        assert_eq!(out.phase, Phase::Standing);
        let pose = out.goals.unwrap();
        c.step(
            &Input {
                state: Some(reading(pose)),
                stop: true,
            },
            &mut out,
        );
        assert_eq!(out.phase, Phase::Lowering);
    }

    #[test]
    fn stricter_configured_limits_win_over_the_bundle_map() {
        let (m, _) = synthetic::quadruped_parts(&[8], 0, 1);
        let mut cfg = cfg();
        cfg.joint_limits[1] = [0.5, 1.0];
        let policy = Fixed {
            value: 5.0,
            nan_from: None,
            calls: Cell::new(0),
        };
        let obs = ObservationBuilder::from_manifest(&m).unwrap();
        let mut c = Controller::new(policy, obs, m.action.map.clone().unwrap(), cfg);
        let mut out = Output::default();
        let outs = fresh(&mut c, &mut out, 60);
        let g: Vec<f64> = outs.iter().filter_map(|o| o.goals).map(|g| g[1]).collect();
        assert!(g.iter().all(|v| (0.5..=1.0).contains(v)), "{g:?}");
        assert_eq!(
            *g.last().unwrap(),
            1.0,
            "the policy pushes against the limit"
        );
    }

    #[test]
    fn a_reading_outside_the_limits_starts_from_the_nearest_limit() {
        let mut c = controller(0.0, None);
        let mut out = Output::default();
        let mut pose = DEFAULT_POSE;
        pose[2] = 0.5; // knee past its upper limit (-0.6)
        pose[0] = f64::NAN;
        c.step(
            &Input {
                state: Some(reading(pose)),
                stop: false,
            },
            &mut out,
        );
        let g = out.goals.unwrap();
        assert_eq!(g[2], JOINT_LIMITS[2][1]);
        assert_eq!(
            g[0], 0.0,
            "a NaN reading starts from the middle of its range"
        );
    }

    #[test]
    fn a_nan_action_latches_the_fault_and_holds_the_last_goal() {
        let mut c = controller(0.1, Some(15));
        let mut out = Output::default();
        let outs = fresh(&mut c, &mut out, 40);
        let first = outs
            .iter()
            .position(|o| o.phase == Phase::Fault(Fault::NonFinite))
            .unwrap();
        let held = outs[first - 1].goals.unwrap();
        assert!(outs[first..].iter().all(|o| o.goals == Some(held)));
        assert!(outs[first..].iter().all(|o| o.phase == outs[first].phase));
        // A stop lowers it from the held goal and switches the torque off.
        let mut n = 0;
        while !out.done {
            c.step(
                &Input {
                    state: Some(reading(held)),
                    stop: true,
                },
                &mut out,
            );
            n += 1;
            assert!(n < 100);
        }
        assert_eq!(out.board, BoardCommand::Disable);
    }

    #[test]
    fn a_tilt_past_the_limit_latches_the_e_stop() {
        let mut c = controller(0.0, None);
        let mut out = Output::default();
        fresh(&mut c, &mut out, 30);
        let mut fallen = reading(DEFAULT_POSE);
        let a = 60f64.to_radians() / 2.0;
        fallen.sensors.quat = [a.cos(), a.sin(), 0.0, 0.0];
        c.step(
            &Input {
                state: Some(fallen),
                stop: false,
            },
            &mut out,
        );
        assert_eq!(
            (out.phase, out.board, out.goals),
            (Phase::EStop, BoardCommand::EStop, None)
        );
        // Upright again: still e-stopped, still telling the board.
        let outs = fresh(&mut c, &mut out, 5);
        assert!(
            outs.iter()
                .all(|o| o.phase == Phase::EStop && o.board == BoardCommand::EStop)
        );
        c.step(
            &Input {
                state: None,
                stop: true,
            },
            &mut out,
        );
        assert_eq!(
            (out.phase, out.board, out.done),
            (Phase::Off, BoardCommand::Disable, true)
        );
    }

    #[test]
    fn missing_readings_become_the_stale_fault_after_the_configured_cycles() {
        let mut c = controller(0.0, None);
        let mut out = Output::default();
        fresh(&mut c, &mut out, 30);
        let last = out.goals.unwrap();
        let none = Input {
            state: None,
            stop: false,
        };
        c.step(&none, &mut out);
        c.step(&none, &mut out);
        assert_eq!(
            out.phase,
            Phase::Running,
            "two missing readings are tolerated"
        );
        c.step(&none, &mut out);
        assert_eq!(out.phase, Phase::Fault(Fault::Stale));
        assert!(out.goals.is_some());
        // Fresh readings again do not bring the policy back.
        fresh(&mut c, &mut out, 5);
        assert_eq!(out.phase, Phase::Fault(Fault::Stale));
        let _ = last;
    }

    #[test]
    fn the_board_alert_bit_hands_over_to_the_board() {
        let mut c = controller(0.0, None);
        let mut out = Output::default();
        fresh(&mut c, &mut out, 30);
        let mut s = reading(out.goals.unwrap());
        s.alert = true;
        c.step(
            &Input {
                state: Some(s),
                stop: false,
            },
            &mut out,
        );
        assert_eq!((out.phase, out.goals), (Phase::Fault(Fault::Board), None));
    }
}
