//! Eval's tracking, drift and claw numbers on scripted traces: a body whose speed swings
//! within every stride around the commanded mean tracks it (0.5 s window) though its
//! instantaneous error is large; a lagging response counts in the windows across the change;
//! drift at zero command is the torso's net travel, its sway left out.
use std::f64::consts::TAU;

use clawrl_trainer::tracking::{Claws, Step, ZeroCommand, instantaneous, window_steps, windowed};

const DT: f64 = 0.02;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn swinging_within_each_stride_around_the_command_is_no_windowed_error() {
    assert_eq!(window_steps(DT), 25);
    // 0.25 s swings (12.5 steps: two per window) of 0.1 m/s forward, 0.05 m/s sideways and
    // 0.3 rad/s of yaw around the command (0.3 m/s, 0, 0.5 rad/s).
    let steps: Vec<Step> = (0..1000)
        .map(|t| {
            let p = TAU * t as f64 / 12.5;
            Step {
                vel: [0.3 + 0.1 * p.sin(), 0.05 * p.cos(), 0.5 + 0.3 * p.sin()],
                command: [0.3, 0.0, 0.5],
                pos: [0.0; 2],
            }
        })
        .collect();
    let inst = instantaneous(&steps);
    let w = windowed(&steps, window_steps(DT));
    // Instantaneous: mean |(0.1 sin, 0.05 cos)| ≈ 0.077 m/s and mean |0.3 sin| = 0.6/π rad/s.
    assert!(inst.linear > 0.07, "{inst:?}");
    assert!(
        close(inst.yaw, 0.6 / std::f64::consts::PI, 2e-3),
        "{inst:?}"
    );
    assert!(w.linear < 1e-9 && w.yaw < 1e-9, "{w:?}");
    // A body 0.05 m/s slow and 0.1 rad/s short of the command is that far off, window or not.
    let slow: Vec<Step> = steps
        .iter()
        .map(|s| Step {
            vel: [s.vel[0] - 0.05, s.vel[1], s.vel[2] - 0.1],
            ..*s
        })
        .collect();
    let w = windowed(&slow, 25);
    assert!(
        close(w.linear, 0.05, 1e-9) && close(w.yaw, 0.1, 1e-9),
        "{w:?}"
    );
}

#[test]
fn windows_across_a_command_change_count_the_lag() {
    // The command steps from 0 to 0.3 m/s at step 50; the body follows 5 steps late.
    let steps: Vec<Step> = (0..100)
        .map(|t| Step {
            vel: [if t >= 55 { 0.3 } else { 0.0 }, 0.0, 0.0],
            command: [if t >= 50 { 0.3 } else { 0.0 }, 0.0, 0.0],
            pos: [0.0; 2],
        })
        .collect();
    // Instantaneous: 5 steps 0.3 off in 100.
    assert!(close(instantaneous(&steps).linear, 0.015, 1e-12));
    // Windowed: of the 76 windows, 21 hold both edges (0.06 off: 5 of 25 steps 0.3 off), 4
    // hold only the command's (0.012, 0.024, 0.036, 0.048), 4 only the body's; 1.5 / 76.
    let w = windowed(&steps, 25);
    assert!(close(w.linear, 1.5 / 76.0, 1e-12), "{w:?}");
    // Following at once, the window-mean command is met exactly.
    let follow: Vec<Step> = steps
        .iter()
        .map(|s| Step {
            vel: s.command,
            ..*s
        })
        .collect();
    assert!(windowed(&follow, 25).linear < 1e-12);
    // An episode shorter than the window is one window.
    assert!(close(windowed(&steps[..10], 25).linear, 0.0, 1e-12));
    assert!(close(windowed(&steps[50..60], 25).linear, 0.15, 1e-12));
    assert!(windowed(&[], 25).linear.is_nan());
}

#[test]
fn drift_is_the_net_travel_at_zero_command_per_20_s() {
    let mut steps = Vec::new();
    let mut contacts = Vec::new();
    // 20 s at zero command: creeping 5 mm/s forward, swaying 1 cm sideways at 2 Hz; front
    // left taps every second (20 touch-downs), the others stand.
    for t in 0..=1000 {
        let x = 0.005 * t as f64 * DT;
        steps.push(Step {
            vel: [0.005, 0.0, 0.0],
            command: [0.0; 3],
            pos: [x, 0.01 * (TAU * t as f64 / 25.0).sin()],
        });
        contacts.push(vec![t % 50 != 49, true, true, true]);
    }
    // 2 s walking (not counted, nor its touch-downs), the robot landing a foot as it stops.
    for t in 0..100 {
        steps.push(Step {
            vel: [0.3, 0.0, 0.0],
            command: [0.3, 0.0, 0.0],
            pos: [0.1 + 0.3 * t as f64 * DT, 0.0],
        });
        contacts.push(vec![t % 2 == 0, t % 2 == 1, t % 2 == 1, t % 2 == 0]);
    }
    // 5 s standing still.
    for _ in 0..=250 {
        steps.push(Step {
            vel: [0.0; 3],
            command: [0.0; 3],
            pos: [0.7, 0.0],
        });
        contacts.push(vec![true; 4]);
    }
    let z = ZeroCommand::of(&steps, &contacts, DT);
    assert!(close(z.seconds, 25.0, 1e-9), "{z:?}");
    assert!(close(z.drift_m, 0.1, 1e-9), "{z:?}");
    assert!(close(z.drift_per_20s(), 0.08, 1e-9), "{z:?}");
    assert_eq!(z.touchdowns, 20, "{z:?}");
    assert!(close(z.steps_per_foot_s(), 0.2, 1e-12));
    // Pooled with an episode that never stands still: nothing changes.
    let mut pooled = z;
    pooled.add(&ZeroCommand::of(
        &steps[1001..1101],
        &contacts[1001..1101],
        DT,
    ));
    assert_eq!(pooled, z);
    assert!(ZeroCommand::default().drift_per_20s().is_nan());
}

#[test]
fn claw_activity_is_mean_grip_and_travel_per_claw_second() {
    let grip = vec![vec![0.0, 0.2], vec![0.2, 0.2], vec![0.0, 0.2]];
    let angles = vec![vec![0.0, 0.1], vec![0.3, 0.1], vec![0.0, 0.1]];
    let c = Claws::of(&grip, &angles, DT);
    assert!(close(c.mean_grip(), 0.8 / 6.0, 1e-12), "{c:?}");
    // 0.4 of grip and 0.6 rad in 2 claws × 0.04 s.
    assert!(close(c.grip_travel_per_s(), 5.0, 1e-9), "{c:?}");
    assert!(close(c.joint_travel_per_s(), 7.5, 1e-9), "{c:?}");
}
