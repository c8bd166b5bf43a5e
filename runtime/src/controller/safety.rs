//! The runtime's safety state machine as one table: [`next`] moves a [`Phase`] on the events of
//! one cycle, applied in the one order of [`ORDER`]. Pure: the controller finds the events (in
//! the reading, the stop flag, its cycle count, the policy's answer) and carries out what
//! entering a phase means (goals, board commands). The diagram: runtime/README.md, "Safety
//! state machine"; `controller/tests.rs` checks the order.

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

/// In lifecycle order: start-up, the gait, the stop, then the latched safe phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    TorqueOff,
    Standing,
    FadeIn,
    Running,
    /// A stop from Running: the policy with a zero command.
    Halting,
    /// From the policy's targets back to the default pose, after Halting.
    FadeOut,
    Lowering,
    Off,
    Fault(Fault),
    EStop,
}

/// Every phase, in lifecycle order.
pub const PHASES: [Phase; 13] = [
    Phase::TorqueOff,
    Phase::Standing,
    Phase::FadeIn,
    Phase::Running,
    Phase::Halting,
    Phase::FadeOut,
    Phase::Lowering,
    Phase::Off,
    Phase::Fault(Fault::NonFinite),
    Phase::Fault(Fault::Stale),
    Phase::Fault(Fault::Board),
    Phase::Fault(Fault::Inference),
    Phase::EStop,
];

impl Phase {
    /// Code in telemetry logs: the one table, read backwards by [`Phase::from_code`]. The codes
    /// follow the order the phases were added, not the lifecycle: old logs must still read.
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

    /// The phase a telemetry code stands for (`None`: no phase has it).
    pub fn from_code(code: u8) -> Option<Phase> {
        PHASES.into_iter().find(|p| p.code() == code)
    }

    /// Whether the runtime commands the servos in this phase, so the checks watch it.
    fn watched(self) -> bool {
        matches!(
            self,
            Phase::Standing
                | Phase::FadeIn
                | Phase::Running
                | Phase::Halting
                | Phase::FadeOut
                | Phase::Lowering
        )
    }

    /// Whether the policy runs in this phase: only there can it fail.
    fn policy(self) -> bool {
        matches!(
            self,
            Phase::FadeIn | Phase::Running | Phase::Halting | Phase::FadeOut
        )
    }

    /// Whether a stop is already under way.
    pub fn stopping(self) -> bool {
        matches!(
            self,
            Phase::Halting | Phase::FadeOut | Phase::Lowering | Phase::Off
        )
    }
}

/// What can move the phase in one cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// SIGINT/SIGTERM (or `run --seconds` ran out).
    Stop,
    /// The operator's e-stop (a command source's button: the gamepad's, `clawrl teleop`'s):
    /// latched as the tilt's, from any phase but `Off`, the board's e-stop every cycle.
    OperatorEStop,
    /// A fresh reading tilted past `tilt_limit`.
    Tilt,
    /// A fresh reading with the board's alert bit (its own fault or e-stop).
    Alert,
    /// No fresh reading for `stale_cycles` cycles.
    Stale,
    /// A fresh reading without the alert bit: the board can take the torque.
    Ready,
    /// The current phase's time (`stand_s`, `fade_s`, `halt_s`, `lower_s`) is up.
    Elapsed,
    /// A NaN or infinity in the observation or the action.
    NonFinite,
    /// The policy could not run.
    Inference,
}

/// The events in the order [`next`] applies them, each to the phase the ones before it left.
///
/// - The stop goes first, so the checks watch the phase it leads to: a tilt in the cycle of a
///   stop, or during the halt, e-stops (HIL: the tilt during Halting, BENCHMARKS.md). The
///   operator's e-stop is the first check: pressed in the cycle of a stop, it e-stops.
/// - The checks lead to phases no check watches, so among them the first wins: a tilt over the
///   alert bit (a stale link never comes with them: a reading is fresh or it is not).
/// - The timers then, in a phase nothing moved this cycle ([`next`]).
/// - The policy's faults last: they are found by running the policy in the phase the others
///   left (and never both at once: the policy stops at the first).
pub const ORDER: [Event; 9] = [
    Event::Stop,
    Event::OperatorEStop,
    Event::Tilt,
    Event::Alert,
    Event::Stale,
    Event::Ready,
    Event::Elapsed,
    Event::NonFinite,
    Event::Inference,
];

/// A set of events, one bit each: the controller builds it every cycle, without allocating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Events(u16);

impl Events {
    pub fn of(events: &[Event]) -> Self {
        events
            .iter()
            .fold(Self::default(), |set, &e| set.with(e, true))
    }

    /// The set with `event` added when `happened`.
    pub fn with(self, event: Event, happened: bool) -> Self {
        Self(self.0 | u16::from(happened) << event as u16)
    }

    pub fn has(self, event: Event) -> bool {
        self.0 >> event as u16 & 1 == 1
    }
}

/// The phase after one cycle's `events`, applied in [`ORDER`].
pub fn next(phase: Phase, events: Events) -> Phase {
    ORDER
        .into_iter()
        .filter(|&e| events.has(e))
        .fold(phase, |p, e| {
            // A phase entered this cycle has spent no time in it: its timer cannot be up.
            if e == Event::Elapsed && p != phase {
                return p;
            }
            on(p, e).unwrap_or(p)
        })
}

/// The transition table: where `event` leads from `phase` (`None`: it stays).
fn on(phase: Phase, event: Event) -> Option<Phase> {
    use Event::*;
    Some(match (event, phase) {
        // Lowering straight out of a walking gait can tip the robot past the tilt limit (HIL,
        // BENCHMARKS.md): a running policy first halts and hands back the default pose.
        (Stop, Phase::Running) => Phase::Halting,
        // Lower only where the board still follows goals.
        (Stop, Phase::Standing | Phase::FadeIn) => Phase::Lowering,
        (Stop, Phase::Fault(Fault::NonFinite | Fault::Inference)) => Phase::Lowering,
        (Stop, Phase::TorqueOff | Phase::Fault(Fault::Stale | Fault::Board) | Phase::EStop) => {
            Phase::Off
        }
        // The operator means it wherever the robot is, the torque on or not yet.
        (OperatorEStop, p) if !matches!(p, Phase::EStop | Phase::Off) => Phase::EStop,
        (Tilt, p) if p.watched() => Phase::EStop,
        (Alert, p) if p.watched() => Phase::Fault(Fault::Board),
        (Stale, p) if p.watched() => Phase::Fault(Fault::Stale),
        (Ready, Phase::TorqueOff) => Phase::Standing,
        (Elapsed, Phase::Standing) => Phase::FadeIn,
        (Elapsed, Phase::FadeIn) => Phase::Running,
        (Elapsed, Phase::Halting) => Phase::FadeOut,
        (Elapsed, Phase::FadeOut) => Phase::Lowering,
        (Elapsed, Phase::Lowering) => Phase::Off,
        (NonFinite, p) if p.policy() => Phase::Fault(Fault::NonFinite),
        (Inference, p) if p.policy() => Phase::Fault(Fault::Inference),
        _ => return None,
    })
}
