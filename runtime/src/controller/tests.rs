use std::cell::Cell;

use clawrl_robot::quadruped::{DEFAULT_POSE, JOINT_LIMITS, NUM_SERVOS, REST_POSE};

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
        heading_gain: 0.0,
        heading_yaw_limit: 0.0,
        stand_grip: 0.0,
        poses: Poses::quadruped(),
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
                    command: None,
                    estop: false,
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
                command: None,
                estop: false,
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
            command: None,
            estop: false,
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
    assert_eq!(
        lower[0].goals,
        fade.last().unwrap().goals,
        "the lowering starts from the fade-out's last goal"
    );
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
            command: None,
            estop: false,
        },
        &mut out,
    );
    assert_eq!(out.phase, Phase::Lowering);
    assert_eq!(
        out.goals,
        Some(pose),
        "the lowering starts where the stand was"
    );
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
            command: None,
            estop: false,
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
                command: None,
                estop: false,
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
            command: None,
            estop: false,
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
            command: None,
            estop: false,
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
        command: None,
        estop: false,
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
            command: None,
            estop: false,
        },
        &mut out,
    );
    assert_eq!((out.phase, out.goals), (Phase::Fault(Fault::Board), None));
}

#[test]
fn the_code_table_reads_both_ways() {
    for p in PHASES {
        assert_eq!(Phase::from_code(p.code()), Some(p), "{p:?}");
    }
    for c in 0..=u8::MAX {
        assert!(
            Phase::from_code(c).is_none_or(|p| p.code() == c),
            "code {c}"
        );
    }
    let known = (0..=u8::MAX).filter_map(Phase::from_code).count();
    assert_eq!(known, PHASES.len(), "one code per phase, none shared");
    // The codes in old logs: a phase keeps its code whatever the lifecycle order.
    assert_eq!(
        PHASES.map(Phase::code),
        [0, 1, 2, 3, 11, 12, 9, 10, 4, 5, 6, 7, 8]
    );
}

/// `next` from `phase` on `events`, in whatever order they are listed.
fn after(phase: Phase, events: &[Event]) -> Phase {
    let reversed: Vec<Event> = events.iter().rev().copied().collect();
    let to = next(phase, Events::of(events));
    assert_eq!(
        to,
        next(phase, Events::of(&reversed)),
        "{phase:?} {events:?}"
    );
    to
}

#[test]
fn the_events_apply_in_the_listed_order() {
    use Event::*;
    let non_finite = Phase::Fault(Fault::NonFinite);
    let cases = [
        // The stop first: the checks watch the phase it leads to.
        (Phase::Running, &[Stop, Tilt][..], Phase::EStop),
        (Phase::Running, &[Stop, Alert], Phase::Fault(Fault::Board)),
        (Phase::Running, &[Stop, Stale], Phase::Fault(Fault::Stale)),
        (Phase::Halting, &[Stop, Tilt], Phase::EStop),
        (Phase::Standing, &[Stop, Tilt], Phase::EStop),
        (non_finite, &[Stop, Tilt], Phase::EStop),
        (non_finite, &[Tilt], non_finite),
        (Phase::EStop, &[Stop, Tilt], Phase::Off),
        // Among the checks the first wins.
        (Phase::Running, &[Tilt, Alert], Phase::EStop),
        (Phase::Lowering, &[Alert, Tilt], Phase::EStop),
        // The timers only in a phase nothing moved this cycle.
        (Phase::Standing, &[Elapsed, Stop], Phase::Lowering),
        (Phase::FadeIn, &[Elapsed, Stop], Phase::Lowering),
        (Phase::Standing, &[Elapsed, Tilt], Phase::EStop),
        (Phase::Halting, &[Elapsed, Stop], Phase::FadeOut),
        (Phase::TorqueOff, &[Ready, Stop], Phase::Off),
        // The policy's faults last, in the phase the others left.
        (Phase::Running, &[Stop, NonFinite], non_finite),
        (Phase::Standing, &[Elapsed, NonFinite], non_finite),
        (Phase::Running, &[Stop, Tilt, NonFinite], Phase::EStop),
        // The operator's e-stop: from any phase but Off, in the cycle of a stop too, over a
        // policy fault found the same cycle.
        (Phase::Running, &[OperatorEStop], Phase::EStop),
        (Phase::TorqueOff, &[OperatorEStop, Ready], Phase::EStop),
        (Phase::Lowering, &[OperatorEStop], Phase::EStop),
        (Phase::Fault(Fault::Board), &[OperatorEStop], Phase::EStop),
        (Phase::Running, &[Stop, OperatorEStop], Phase::EStop),
        (Phase::Running, &[OperatorEStop, NonFinite], Phase::EStop),
        (Phase::Off, &[OperatorEStop], Phase::Off),
        (Phase::EStop, &[Stop, OperatorEStop], Phase::Off),
    ];
    for (from, events, to) in cases {
        assert_eq!(after(from, events), to, "{from:?} on {events:?}");
    }
}

/// A reading tipped 60 degrees about x: past the 45 degree limit of `cfg()`.
fn fallen(pose: [f64; NUM_SERVOS]) -> BoardState {
    let mut s = reading(pose);
    let a = 60f64.to_radians() / 2.0;
    s.sensors.quat = [a.cos(), a.sin(), 0.0, 0.0];
    s
}

#[test]
fn a_tilt_during_the_halt_wins_over_the_stop() {
    let mut c = controller(0.2, None);
    let mut out = Output::default();
    fresh(&mut c, &mut out, 40);
    let stop = |s| Input {
        state: Some(s),
        stop: true,
        command: None,
        estop: false,
    };
    c.step(&stop(reading(out.goals.unwrap())), &mut out);
    assert_eq!(out.phase, Phase::Halting);
    c.step(&stop(fallen(out.goals.unwrap())), &mut out);
    assert_eq!(
        (out.phase, out.board, out.goals),
        (Phase::EStop, BoardCommand::EStop, None)
    );
}

#[test]
fn a_nan_and_a_stop_in_one_cycle_latch_the_fault_then_a_tilt_e_stops() {
    let mut c = controller(0.1, None);
    let mut out = Output::default();
    fresh(&mut c, &mut out, 40);
    assert_eq!(out.phase, Phase::Running);
    let held = out.goals.unwrap();
    let calls = c.policy().calls.get();
    let mut bad = reading(held);
    bad.sensors.joint_pos[3] = f64::NAN;
    let stop = |s| Input {
        state: Some(s),
        stop: true,
        command: None,
        estop: false,
    };
    // The stop halts; the policy, run in the halt, meets the NaN.
    c.step(&stop(bad), &mut out);
    assert_eq!(
        (out.phase, out.goals),
        (Phase::Fault(Fault::NonFinite), Some(held))
    );
    assert_eq!(c.policy().calls.get(), calls, "the policy was not fed it");
    // The next stop lowers, and the checks watch the lowering from its first cycle.
    c.step(&stop(fallen(held)), &mut out);
    assert_eq!((out.phase, out.board), (Phase::EStop, BoardCommand::EStop));
}

#[test]
fn the_stale_and_inference_faults_apply_only_where_they_can_happen() {
    use Event::*;
    let inference = Phase::Fault(Fault::Inference);
    let stale = Phase::Fault(Fault::Stale);
    // The policy runs in these: an inference failure latches its fault.
    for p in [
        Phase::FadeIn,
        Phase::Running,
        Phase::Halting,
        Phase::FadeOut,
    ] {
        assert_eq!(after(p, &[Inference]), inference, "{p:?}");
    }
    // Nowhere else does the policy run, so nothing there can fail it.
    for p in [
        Phase::TorqueOff,
        Phase::Standing,
        Phase::Lowering,
        Phase::Off,
        Phase::EStop,
        Phase::Fault(Fault::Board),
        Phase::Fault(Fault::Stale),
    ] {
        assert_eq!(after(p, &[Inference]), p, "{p:?}");
    }
    // A stale link faults only where the runtime commands the servos; before the first
    // reading, and in the latched phases, it changes nothing.
    for p in [
        Phase::Standing,
        Phase::FadeIn,
        Phase::Running,
        Phase::Halting,
        Phase::FadeOut,
        Phase::Lowering,
    ] {
        assert_eq!(after(p, &[Stale]), stale, "{p:?}");
    }
    for p in [
        Phase::TorqueOff,
        Phase::Off,
        Phase::EStop,
        Phase::Fault(Fault::Board),
        Phase::Fault(Fault::NonFinite),
        Phase::Fault(Fault::Inference),
    ] {
        assert_eq!(after(p, &[Stale]), p, "{p:?}");
    }
}

#[test]
fn an_event_set_holds_an_event_listed_twice() {
    use Event::*;
    let twice = Events::of(&[Stop, Stop, Tilt]);
    assert!(twice.has(Stop) && twice.has(Tilt) && !twice.has(Alert));
    assert_eq!(twice, Events::of(&[Stop, Tilt]));
    assert_eq!(
        next(Phase::Running, Events::of(&[Stop, Stop])),
        Phase::Halting
    );
    // Adding an event that did not happen leaves the set as it was.
    assert_eq!(Events::of(&[Stop]).with(Stop, false), Events::of(&[Stop]));
}

/// The runtime's policy is the bundle's student through [`Act`]: its answer, and its refusal
/// of an observation of the wrong length (which the controller turns into the inference fault).
#[test]
fn the_student_acts_through_act_and_refuses_wrong_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("student.clawrl");
    synthetic::write_shipped_shape(&path, 7).unwrap();
    let bundle = clawrl_bundle::read(&path, &clawrl_bundle::Trust::default()).unwrap();
    let student = Student::from_bundle(&bundle).unwrap();
    let obs: Vec<f32> = synthetic::values(3, student.obs_dim(), 1.0);
    let mut direct = vec![0.0f32; student.action_dim()];
    student.act(&obs, &mut direct).unwrap();
    assert!(direct.iter().any(|v| *v != 0.0), "{direct:?}");
    let mut via = vec![0.0f32; student.action_dim()];
    Act::act(&student, &obs, &mut via).unwrap();
    assert_eq!(via, direct);
    let short = &obs[..obs.len() - 1];
    assert!(matches!(
        Act::act(&student, short, &mut via),
        Err(InferenceError::ObsLength { .. })
    ));
}

/// The e-stop is for a tilt past the limit: one exactly at it keeps the policy running, one a
/// hair beyond it e-stops.
#[test]
fn a_tilt_exactly_at_the_limit_is_not_past_it() {
    let limit = tilt(&fallen(DEFAULT_POSE));
    for (tilt_limit, want) in [(limit, Phase::Running), (limit - 1e-9, Phase::EStop)] {
        let mut c = controller_with(
            0.0,
            None,
            SafetyConfig {
                tilt_limit,
                ..cfg()
            },
        );
        let mut out = Output::default();
        fresh(&mut c, &mut out, 30);
        assert_eq!(out.phase, Phase::Running);
        c.step(
            &Input {
                state: Some(fallen(out.goals.unwrap())),
                stop: false,
                command: None,
                estop: false,
            },
            &mut out,
        );
        assert_eq!(out.phase, want, "limit {tilt_limit}, tilt {limit}");
    }
}

/// The next observation carries the last action clipped to the map's range, on both sides.
#[test]
fn the_last_action_in_the_observation_is_clipped_both_ways() {
    use clawrl_robot::observation::offsets::LAST_ACTION;
    for value in [-9.0f32, 0.1, 9.0] {
        let mut c = controller(value, None);
        let clip = c.map.clip as f32;
        assert!(clip > 0.1 && clip < 9.0, "clip {clip}");
        let mut out = Output::default();
        fresh(&mut c, &mut out, 30);
        assert_eq!(out.phase, Phase::Running);
        let want = value.clamp(-clip, clip);
        assert_eq!(
            out.frame[LAST_ACTION..LAST_ACTION + NUM_SERVOS],
            [want; NUM_SERVOS],
            "action {value}"
        );
    }
}

/// `safety.stand_grip`: the stand ends on the default pose with the claws at the grip, and the
/// fade-in starts from there (a robot on a slope holds on until the policy has it).
#[test]
fn the_stand_shuts_the_claws_to_the_stand_grip_and_fades_in_from_there() {
    let pose = Poses::quadruped().stand_with_grip(1.2, &JOINT_LIMITS);
    let mut c = controller_with(
        0.3,
        None,
        SafetyConfig {
            stand_s: 2.0,
            stand_grip: 1.2,
            ..cfg()
        },
    );
    let mut out = Output::default();
    let outs = fresh(&mut c, &mut out, 200);
    let last_stand = outs.iter().rfind(|o| o.phase == Phase::Standing).unwrap();
    let g = last_stand.goals.unwrap();
    for i in 0..NUM_SERVOS {
        let want = if i < 12 { DEFAULT_POSE[i] } else { 1.2 };
        assert!(
            (g[i] - want).abs() < 1e-9,
            "servo {i}: {} rad, want {want}",
            g[i]
        );
    }
    let first_fade = outs.iter().find(|o| o.phase == Phase::FadeIn).unwrap();
    assert_eq!(
        first_fade.goals,
        Some(pose),
        "the fade-in starts on the stand pose"
    );
    assert_eq!(
        Poses::quadruped().stand_with_grip(5.0, &JOINT_LIMITS),
        pose,
        "a grip past the claw's range is clamped"
    );
    assert_eq!(
        Poses::quadruped().stand_with_grip(0.0, &JOINT_LIMITS),
        DEFAULT_POSE
    );
}

/// `heading_gain`: the yaw command the policy sees steers back to the heading the body had
/// at the takeover (gain x error, clipped), in place of the configured yaw rate; a new
/// takeover holds its own heading. Off (gain 0) the configured command passes as it is.
#[test]
fn the_heading_hold_steers_back_to_the_takeover_heading() {
    use clawrl_robot::observation::offsets::COMMAND;
    let yawed = |pose: [f64; NUM_SERVOS], yaw: f64| {
        let mut s = reading(pose);
        s.sensors.quat = [(yaw / 2.0).cos(), 0.0, 0.0, (yaw / 2.0).sin()];
        s
    };
    let run = |gain: f64, yaws: &[f64]| -> Vec<Output> {
        let mut c = controller_with(
            0.2,
            None,
            SafetyConfig {
                heading_gain: gain,
                heading_yaw_limit: 0.8,
                ..cfg()
            },
        );
        let mut out = Output::default();
        yaws.iter()
            .map(|&yaw| {
                let pose = out.goals.unwrap_or(REST_POSE);
                let input = Input {
                    state: Some(yawed(pose, yaw)),
                    stop: false,
                    command: None,
                    estop: false,
                };
                c.step(&input, &mut out);
                out
            })
            .collect()
    };
    // Turned 0.3 rad before the takeover (standing), then 0.4 rad left of it, then far right.
    let mut yaws = vec![0.3; 40];
    yaws.extend([0.7, 0.7, -2.0]);
    let outs = run(0.5, &yaws);
    assert_eq!(outs[39].phase, Phase::Running);
    let first = outs.iter().position(|o| o.policy_ran).unwrap();
    assert_eq!(outs[first].frame[COMMAND + 2], 0.0, "on its own heading");
    assert_eq!(outs[39].frame[COMMAND..COMMAND + 2], [0.3, 0.0]);
    let yaw_cmd = |o: &Output| f64::from(o.frame[COMMAND + 2]);
    assert!(
        (yaw_cmd(&outs[40]) - 0.5 * -0.4).abs() < 1e-6,
        "{}",
        yaw_cmd(&outs[40])
    );
    assert!(
        (yaw_cmd(&outs[42]) - 0.8).abs() < 1e-6,
        "clipped: {}",
        yaw_cmd(&outs[42])
    );
    // Off: the configured yaw rate (0) whatever the heading.
    let off = run(0.0, &yaws);
    assert!(off.iter().all(|o| o.frame[COMMAND + 2] == 0.0));
}

/// A live command (`Input::command`, a source's through the command guard) is what the
/// policy sees, cycle by cycle, in place of the configured one and of the heading hold; a
/// cycle without one falls back to the configured command; a stop still zeroes it.
#[test]
fn a_live_command_replaces_the_configured_one_cycle_by_cycle() {
    use clawrl_robot::observation::offsets::COMMAND;
    let mut c = controller_with(
        0.2,
        None,
        SafetyConfig {
            heading_gain: 0.5,
            heading_yaw_limit: 0.8,
            ..cfg()
        },
    );
    let mut out = Output::default();
    let mut seen = Vec::new();
    for k in 0..60 {
        let pose = out.goals.unwrap_or(REST_POSE);
        let command = match k {
            0..45 => Some([0.25, -0.1, 0.4]),
            45..50 => None,
            _ => Some([0.1, 0.0, 0.0]),
        };
        let input = Input {
            state: Some(reading(pose)),
            stop: k >= 55,
            command,
            estop: false,
        };
        c.step(&input, &mut out);
        if out.policy_ran {
            seen.push((k, out.phase, out.frame[COMMAND..COMMAND + 3].to_vec()));
        }
    }
    let at = |k: usize| seen.iter().find(|s| s.0 == k).unwrap().clone();
    assert_eq!(
        at(44).2,
        [0.25, -0.1, 0.4],
        "the live command, no heading hold"
    );
    assert_eq!(
        at(46).2,
        [0.3, 0.0, 0.0],
        "none this cycle: the configured one"
    );
    assert_eq!(at(52).2, [0.1, 0.0, 0.0]);
    let halting = seen.iter().find(|s| s.1 == Phase::Halting).unwrap();
    assert_eq!(halting.2, [0.0, 0.0, 0.0], "a stop zeroes it, live or not");
}

/// The operator's e-stop (a command source's button, latched by the command guard) while the
/// policy walks: the board's e-stop at once, no more goals, and it holds while the button's
/// request goes on; only the stop ends the run.
#[test]
fn the_operators_e_stop_latches_the_e_stop() {
    let mut c = controller(0.2, None);
    let mut out = Output::default();
    fresh(&mut c, &mut out, 40);
    assert_eq!(out.phase, Phase::Running);
    let held = out.goals.unwrap();
    let press = |s, stop| Input {
        state: Some(s),
        stop,
        command: None,
        estop: true,
    };
    c.step(&press(reading(held), false), &mut out);
    assert_eq!(
        (out.phase, out.board, out.goals),
        (Phase::EStop, BoardCommand::EStop, None)
    );
    for _ in 0..10 {
        c.step(&press(reading(held), false), &mut out);
        assert_eq!((out.phase, out.board), (Phase::EStop, BoardCommand::EStop));
    }
    c.step(&press(reading(held), true), &mut out);
    assert_eq!((out.phase, out.board), (Phase::Off, BoardCommand::Disable));
}
