//! Gait metrics on scripted contact sequences: a perfect trot, a pace, a bound, a three-legged
//! gait, a trot whose feet jitter across the cycle's wrap, and episodes pooled.
use clawrl_trainer::gait::{GaitAccumulator, GaitKind, analyse, phase_distance};

const DT: f64 = 0.02;

/// Feet in leg order (FL, FR, RL, RR) on the ground for the first `duty` share of each stride
/// of `period` steps, foot f shifted by `offsets[f]` cycles (both whole steps here, so the
/// expected numbers are exact).
fn pattern(period: usize, duty: f64, offsets: [f64; 4], steps: usize) -> Vec<Vec<bool>> {
    let whole = |x: f64| {
        let k = x * period as f64;
        assert!(
            (k - k.round()).abs() < 1e-9,
            "{x} of {period} steps is no whole step"
        );
        k.round() as usize
    };
    let on = whole(duty);
    let shift = offsets.map(whole);
    (0..steps)
        .map(|t| {
            shift
                .iter()
                .map(|&o| (t + period - o) % period < on)
                .collect()
        })
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn a_perfect_trot_is_a_regular_trot() {
    let g = analyse(&pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400), DT);
    assert_eq!(g.kind(), GaitKind::Trot);
    assert!(g.regular_trot());
    for (f, want) in g.feet.iter().zip([0.0, 0.5, 0.5, 0.0]) {
        assert!(close(f.duty_factor, 0.5, 1e-9), "{f:?}");
        assert!(close(f.stride_period_s.unwrap(), 0.4, 1e-9), "{f:?}");
        assert!(close(f.phase.unwrap(), want, 1e-9), "{f:?} want {want}");
    }
    assert!(close(g.seconds, 8.0, 1e-9));
    let text = g.text(&["front left (FL)".to_string()]);
    assert!(text.contains("gait over 8.0 s: trot (regular"), "{text}");
    assert!(text.contains("front left (FL)"), "{text}");
}

#[test]
fn a_pace_and_a_bound_and_a_pronk_are_told_apart() {
    let pace = analyse(&pattern(20, 0.6, [0.0, 0.5, 0.0, 0.5], 400), DT);
    assert_eq!(pace.kind(), GaitKind::Pace);
    assert!(!pace.regular_trot());
    assert!(close(pace.feet[2].phase.unwrap(), 0.0, 1e-9));
    assert!(close(pace.feet[1].phase.unwrap(), 0.5, 1e-9));
    let bound = analyse(&pattern(20, 0.4, [0.0, 0.0, 0.5, 0.5], 400), DT);
    assert_eq!(bound.kind(), GaitKind::Bound);
    let pronk = analyse(&pattern(20, 0.4, [0.0; 4], 400), DT);
    assert_eq!(pronk.kind(), GaitKind::Pronk);
    // A four-beat walk is a gait, but none of the named ones.
    let walk = analyse(&pattern(40, 0.75, [0.0, 0.5, 0.75, 0.25], 800), DT);
    assert_eq!(walk.kind(), GaitKind::Other);
}

#[test]
fn a_three_legged_gait_has_a_foot_unused() {
    // Rear right on the ground for one step in the whole run: it barely touches down.
    let mut c = pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400);
    for (t, row) in c.iter_mut().enumerate() {
        row[3] = t == 200;
    }
    let g = analyse(&c, DT);
    assert_eq!(g.kind(), GaitKind::FootUnused);
    assert!(!g.regular_trot());
    assert_eq!(g.feet[3].touchdowns, 1);
    assert!(!g.feet[3].used());
    assert!(g.feet[3].stride_period_s.is_none());
    assert!(close(g.feet[3].duty_factor, 1.0 / 400.0, 1e-12));
    assert!(g.feet[..3].iter().all(|f| f.used()));
    // A foot that never lifts is no more part of the gait than one that never lands.
    for row in c.iter_mut() {
        row[3] = true;
    }
    let g = analyse(&c, DT);
    assert_eq!(g.kind(), GaitKind::FootUnused);
    assert_eq!(g.feet[3].touchdowns, 0);
    assert!(close(g.feet[3].duty_factor, 1.0, 1e-12));
}

#[test]
fn duty_factors_outside_the_band_make_a_trot_irregular() {
    let long = analyse(&pattern(20, 0.85, [0.0, 0.5, 0.5, 0.0], 400), DT);
    assert_eq!(long.kind(), GaitKind::Trot);
    assert!(!long.regular_trot());
    let short = analyse(&pattern(20, 0.3, [0.0, 0.5, 0.5, 0.0], 400), DT);
    assert_eq!(short.kind(), GaitKind::Trot);
    assert!(!short.regular_trot());
    let edge = analyse(&pattern(20, 0.35, [0.0, 0.5, 0.5, 0.0], 400), DT);
    assert!(edge.regular_trot(), "{:?}", edge.feet);
}

#[test]
fn phases_are_averaged_on_the_circle() {
    // Rear right lands one step before and one step after front left, stride by stride:
    // on average with it (phase 0), which a plain mean (0.5) would call a pace's half cycle.
    let mut c = pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400);
    for row in c.iter_mut() {
        row[3] = false;
    }
    for k in 1..19 {
        let land = if k % 2 == 0 { 20 * k + 1 } else { 20 * k - 1 };
        for row in &mut c[land..land + 10] {
            row[3] = true;
        }
    }
    let g = analyse(&c, DT);
    let p = g.feet[3].phase.unwrap();
    assert!(phase_distance(p, 0.0) < 0.01, "rear right phase {p}");
    assert_eq!(g.kind(), GaitKind::Trot);
    // Two feet more than the tolerance out of step are no trot.
    let off = analyse(&pattern(20, 0.5, [0.0, 0.5, 0.5, 0.15], 400), DT);
    assert!(close(off.feet[3].phase.unwrap(), 0.15, 1e-9));
    assert_eq!(off.kind(), GaitKind::Other);
}

#[test]
fn episodes_pool_every_stride_once() {
    let mut acc = GaitAccumulator::default();
    acc.add_episode(&pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400), DT);
    acc.add_episode(&pattern(30, 0.6, [0.0, 0.5, 0.5, 0.0], 600), DT);
    let g = acc.stats();
    // 18 strides of 0.4 s and 18 of 0.6 s; 200 + 360 samples on the ground out of 1000.
    let f = g.feet[0];
    assert!(close(f.stride_period_s.unwrap(), 0.5, 1e-9), "{f:?}");
    assert!(close(f.duty_factor, 0.56, 1e-9), "{f:?}");
    assert!(close(g.seconds, 20.0, 1e-9));
    assert_eq!(g.kind(), GaitKind::Trot);
}

#[test]
fn phase_distance_wraps() {
    assert!(close(phase_distance(0.95, 0.05), 0.1, 1e-12));
    assert!(close(phase_distance(0.2, 0.7), 0.5, 1e-12));
    assert!(close(phase_distance(0.3, 0.3), 0.0, 1e-12));
}

#[test]
fn a_trot_needs_lateral_pairs_half_a_cycle_apart() {
    // Diagonal pairs together, but the two pairs 0.35 cycle apart (0.15 from half): no trot.
    let g = analyse(&pattern(20, 0.5, [0.0, 0.35, 0.35, 0.0], 400), DT);
    assert!(close(g.feet[1].phase.unwrap(), 0.35, 1e-9), "{:?}", g.feet);
    assert_ne!(g.kind(), GaitKind::Trot);
    // 0.05 off in a diagonal pair is within the tolerance.
    let g = analyse(&pattern(20, 0.5, [0.0, 0.5, 0.5, 0.05], 400), DT);
    assert_eq!(g.kind(), GaitKind::Trot);
}

#[test]
fn a_foot_without_a_steady_phase_makes_no_trot() {
    // Rear right lands 0.2 cycle before, then 0.2 after front left, stride by stride: its mean
    // phase is front left's (a trot's diagonal, on average), but it keeps no phase.
    let mut c = pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400);
    for row in c.iter_mut() {
        row[3] = false;
    }
    // (Eight strides each way, all inside front left's strides.)
    for k in 2..18 {
        let land = if k % 2 == 0 { 20 * k + 4 } else { 20 * k - 4 };
        for row in &mut c[land..land + 10] {
            row[3] = true;
        }
    }
    let g = analyse(&c, DT);
    let f = g.feet[3];
    assert!(phase_distance(f.phase.unwrap(), 0.0) < 0.01, "{f:?}");
    // cos(2π·0.2) ≈ 0.31.
    assert!(close(f.phase_coherence.unwrap(), 0.309, 0.01), "{f:?}");
    assert_eq!(g.kind(), GaitKind::Other);
    // Feet landing at the same phase each stride are perfectly steady.
    let trot = analyse(&pattern(20, 0.5, [0.0, 0.5, 0.5, 0.0], 400), DT);
    assert!(
        trot.feet
            .iter()
            .all(|f| close(f.phase_coherence.unwrap(), 1.0, 1e-9))
    );
}

#[test]
fn a_three_legged_trot_is_not_named_a_trot() {
    // The shipped teacher's pattern: front right barely strides (duty 0.15, but it does land
    // each stride), the other three trot-like. Its duty factor makes it no regular trot.
    let mut c = pattern(20, 0.55, [0.0, 0.5, 0.5, 0.0], 400);
    for (t, row) in c.iter_mut().enumerate() {
        row[1] = (t + 10) % 20 < 3;
    }
    let g = analyse(&c, DT);
    assert!(close(g.feet[1].duty_factor, 0.15, 1e-9), "{:?}", g.feet);
    assert!(!g.regular_trot());
    // And a leg that stays in the air makes the gait "a foot unused".
    for row in c.iter_mut() {
        row[1] = false;
    }
    let g = analyse(&c, DT);
    assert_eq!(g.kind(), GaitKind::FootUnused);
    assert!(g.text(&[]).contains("a foot unused"));
}

/// Physics-rate contacts (4 ms): a foot that chatters for one sample in mid-stance, at a
/// different moment each stride, is a bounce, not a step: the gait is still a steady trot with
/// one touch-down per stride. A lift as long as a control step (20 ms) is a step and counts.
#[test]
fn bounces_shorter_than_a_control_step_are_not_steps() {
    const FINE: f64 = 0.004;
    let clean = pattern(50, 0.5, [0.0, 0.5, 0.5, 0.0], 2500);
    let strides = analyse(&clean, FINE).feet[1].touchdowns;
    let lifted = |len: usize| {
        let mut c = clean.clone();
        // Front right is on the ground from sample 25 of each 50-sample stride for 25 samples:
        // lift it at least 20 ms after it lands, somewhere else each stride.
        for k in 0..50 {
            let at = 50 * k + 25 + 5 + (k * 7) % 8;
            for row in &mut c[at..at + len] {
                row[1] = false;
            }
        }
        analyse(&c, FINE)
    };
    for len in 1..=4 {
        let g = lifted(len);
        assert_eq!(
            g.kind(),
            GaitKind::Trot,
            "{len}-sample bounces: {:?}",
            g.feet
        );
        assert_eq!(g.feet[1].touchdowns, strides, "{len}-sample bounces");
        assert!(close(g.feet[1].duty_factor, 0.5, 1e-9), "{:?}", g.feet[1]);
    }
    let g = lifted(5);
    assert_eq!(g.feet[1].touchdowns, 2 * strides, "a 20 ms lift is a step");
    assert_ne!(g.kind(), GaitKind::Trot, "{:?}", g.feet);
}
