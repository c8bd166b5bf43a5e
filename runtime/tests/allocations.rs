//! The control loop allocates nothing once the robot is running, outside candle's forward pass
//! (candle builds a tensor per op, and every tensor allocates).
//!
//! A counting global allocator counts the allocations of this test's thread only (a
//! thread-local counter: the harness's own threads do not interfere). The loop is
//! `run::ControlLoop` as `run::run` drives it: the timer's wait (on a fake clock, so no real
//! sleeping), the channel drain, `Controller::step` (observation, student, action map, limits),
//! the goal ticks, the command and the telemetry record handed out through crossbeam bounded
//! channels of `run`'s sizes. The student is wrapped in an [`Act`] that counts the allocations
//! of its forward pass apart. This file holds a single test on purpose.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use clawrl_robot::quadruped::{JOINT_LIMITS, NUM_SERVOS, REST_POSE};
use clawrl_runtime::clock::FakeClock;
use clawrl_runtime::controller::{Act, Controller, Phase, SafetyConfig};
use clawrl_runtime::inference::{InferenceError, Student};
use clawrl_runtime::observation::ObservationBuilder;
use clawrl_runtime::rate::FixedRate;
use clawrl_runtime::run::{
    Channels, ControlLoop, Notice, Operator, SerialCmd, SerialEvent, Summary,
};
use clawrl_runtime::telemetry::Record;
use clawrl_runtime::wire::BoardState;
use crossbeam::channel::bounded;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn count(size: usize) {
    // `try_with`: no counting (and no panic) while the thread's locals are being torn down.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + size as u64));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// const-initialised thread-locals without destructors, so counting never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and bytes allocated by this thread so far.
fn allocated() -> (u64, u64) {
    (ALLOCS.with(Cell::get), BYTES.with(Cell::get))
}

/// The student, counting the allocations of its forward passes apart.
struct CountingStudent {
    student: Student,
    allocs: Cell<u64>,
    bytes: Cell<u64>,
    calls: Cell<u64>,
}

impl Act for CountingStudent {
    fn act(&self, obs: &[f32], out: &mut [f32]) -> Result<(), InferenceError> {
        let (a0, b0) = allocated();
        let r = self.student.act(obs, out);
        let (a1, b1) = allocated();
        self.allocs.set(self.allocs.get() + (a1 - a0));
        self.bytes.set(self.bytes.get() + (b1 - b0));
        self.calls.set(self.calls.get() + 1);
        r
    }
}

fn upright(pose: [f64; NUM_SERVOS]) -> BoardState {
    let mut s = BoardState::default();
    s.sensors.quat = [1.0, 0.0, 0.0, 0.0];
    s.sensors.acc = [0.0, 0.0, 9.81];
    s.sensors.joint_pos = pose;
    s
}

#[test]
fn the_running_control_loop_allocates_only_in_the_forward_pass() {
    // The counter sees this thread's allocations.
    let (a0, _) = allocated();
    drop(std::hint::black_box(Box::new(1u64)));
    assert_eq!(
        allocated().0,
        a0 + 1,
        "the counting allocator counts nothing"
    );

    // The shipped student's shape (64 x 64, 2 past frames), as `controller_for` builds it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shipped.clawrl");
    clawrl_runtime::synthetic::write_shipped_shape(&path, 7).unwrap();
    let bundle = clawrl_bundle::read(&path, &clawrl_bundle::Trust::default()).unwrap();
    let policy = CountingStudent {
        student: Student::from_bundle(&bundle).unwrap(),
        allocs: Cell::new(0),
        bytes: Cell::new(0),
        calls: Cell::new(0),
    };
    let obs = ObservationBuilder::from_manifest(&bundle.manifest).unwrap();
    let map = bundle.manifest.action.map.clone().unwrap();
    let rate_hz = 500.0;
    let cfg = SafetyConfig {
        rate_hz,
        stand_s: 0.2,
        fade_s: 0.2,
        halt_s: 0.5,
        lower_s: 0.5,
        max_joint_speed: 4.0,
        tilt_limit: 45f64.to_radians(),
        stale_cycles: 5,
        joint_limits: JOINT_LIMITS,
        command: [0.3, 0.0, 0.0],
        heading_gain: 0.0,
        heading_yaw_limit: 0.0,
        stand_grip: 0.0,
        poses: clawrl_runtime::controller::Poses::quadruped(),
    };
    // With the operator's status line every 0.1 s: its notice must not allocate either.
    let mut control = ControlLoop::new(Controller::new(policy, obs, map, cfg), &JOINT_LIMITS)
        .with_status(0.1, rate_hz);

    // The channels as `run::run` makes them.
    let (cmd_tx, cmd_rx) = bounded::<SerialCmd>(2);
    let (ev_tx, ev_rx) = bounded::<SerialEvent>(16);
    let (tel_tx, tel_rx) = bounded::<Record>(5000);
    let (notice_tx, notice_rx) = bounded::<Notice>(1000);
    let ch = Channels {
        events: ev_rx,
        commands: cmd_tx,
        telemetry: Some(tel_tx),
        notices: Some(notice_tx),
    };
    let mut summary = Summary::default();
    let mut rate = FixedRate::with_clock(
        rate_hz,
        Duration::from_micros(200),
        FakeClock::new(Duration::from_micros(30)),
    );

    // One cycle as `run::run` runs it, the serial thread's part (a fresh reading where the
    // last goals put the joints; the command and the record taken away) around it.
    let mut one_cycle = |control: &mut ControlLoop<CountingStudent>,
                         summary: &mut Summary,
                         counted: &mut (u64, u64)| {
        let pose = control.output().goals.unwrap_or(REST_POSE);
        ev_tx.try_send(SerialEvent::State(upright(pose))).unwrap();
        let (a0, b0) = allocated();
        let tick = rate.wait();
        let woke = Instant::now();
        control.cycle(&ch, Operator::default(), tick, woke, summary);
        let (a1, b1) = allocated();
        counted.0 += a1 - a0;
        counted.1 += b1 - b0;
        let cmd = cmd_rx.try_recv().expect("a command every cycle");
        let record = tel_rx.try_recv().expect("a record every cycle");
        std::hint::black_box((cmd, record));
    };

    // Torque off -> standing (0.2 s) -> fade-in (0.2 s) -> running, then a while running.
    let mut warm = (0, 0);
    for _ in 0..400 {
        one_cycle(&mut control, &mut summary, &mut warm);
    }
    assert_eq!(
        control.output().phase,
        Phase::Running,
        "{:?}",
        summary.phases
    );
    assert_eq!(
        summary.phases,
        [Phase::Standing, Phase::FadeIn, Phase::Running]
    );

    let p = control.controller.policy();
    let (act_a0, act_b0, calls0) = (p.allocs.get(), p.bytes.get(), p.calls.get());
    let n = 2000u64;
    let mut counted = (0, 0);
    for _ in 0..n {
        one_cycle(&mut control, &mut summary, &mut counted);
        assert_eq!(control.output().phase, Phase::Running);
        assert!(control.output().policy_ran);
    }
    let p = control.controller.policy();
    let (act_allocs, act_bytes) = (p.allocs.get() - act_a0, p.bytes.get() - act_b0);
    assert_eq!(p.calls.get() - calls0, n, "one forward pass per cycle");
    let outside = counted.0 - act_allocs;
    println!(
        "{n} running cycles: {outside} allocations outside the forward pass; the forward pass: \
         {:.1} allocations ({:.0} bytes) per cycle",
        act_allocs as f64 / n as f64,
        act_bytes as f64 / n as f64
    );
    assert_eq!(
        outside,
        0,
        "the control loop allocated {outside} times ({} bytes) in {n} cycles outside the forward pass",
        counted.1 - act_bytes
    );
    assert_eq!(
        (
            summary.commands_dropped,
            summary.records_dropped,
            summary.missed_deadlines
        ),
        (0, 0, 0)
    );

    // The status lines: one per 50 cycles, saying the phase and the command the policy saw.
    let lines: Vec<String> = (notice_rx.try_iter())
        .filter(|n| matches!(n, Notice::Status { .. }))
        .map(|n| n.line(rate_hz))
        .collect();
    assert_eq!(lines.len() as u64, (400 + n - 1) / 50, "{lines:?}");
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("status 4.7 s: Running, command (0.30 m/s, 0.00 m/s, 0.00 rad/s), yaw rate 0.00 rad/s (IMU), 0 late cycle(s), 0 link drop(s)"),
        "{last}"
    );
}
