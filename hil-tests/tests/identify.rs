//! `clawrl-runtime identify` through the real runtime, wire and firmware core against a body
//! on a stand whose servos differ from the model, then `clawrl sysid`'s fit of its log.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::identify::{identify, log_of, trace_of, truth};
use clawrl_hil_tests::scenario::{self, Setup};
use clawrl_sim::quadruped::{Robot, ServoDynamics, TaskConfig};
use clawrl_sim::sysid::{FitOptions, Groups, Rig, fit};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn setup(dir: &Path) -> Setup {
    Setup::lockstep(
        repo().join("hil-tests/fixtures/student.clawrl"),
        repo().join("configs/runtime/robot.toml"),
        dir,
    )
    .unwrap()
}

fn rig() -> Rig {
    let task = TaskConfig::flat().unwrap();
    let names = Robot::load(&task).unwrap().servo_names.clone();
    // The virtual board's slew limit (FirmwareConfig's max_slew_rad_per_s).
    Rig::new(&task, Groups::by_joint(&names))
        .unwrap()
        .with_slew(8.0)
}

#[test]
fn identify_moves_inside_the_limits_and_sysid_recovers_the_hidden_servos() {
    let dir = tempfile::tempdir().unwrap();
    let body = repo().join("hil-tests/fixtures/mismatched_servos.toml");
    let (plan, summary, trace) = identify(&setup(dir.path()), Some(&body)).unwrap();
    assert!(plan.contains("knee"), "{plan}");
    // Nothing outside the joint limits reached a servo, and the excitation asked for nothing
    // the safety machine had to hold back (speed or limits).
    assert!(trace.outputs_checked > 100_000, "{}", trace.outputs_checked);
    assert_eq!(trace.out_of_limit, 0);
    assert_eq!(summary.goals_limited, 0);

    let rig = rig();
    let log = log_of(&summary).unwrap();
    let t = trace_of(&rig, &log).unwrap();
    // The goals on the wire never moved faster than the runtime's speed limit (6 rad/s at
    // 50 Hz; a tick of rounding): the plan keeps to 80 % of it, the fade-in blends it in.
    let step = 6.0 / 50.0 + 2e-3;
    let mut last: Option<&Vec<f64>> = None;
    for g in t.goals.iter().flatten() {
        if let Some(l) = last {
            let jump = g
                .iter()
                .zip(l)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(jump <= step, "a goal moved {jump} rad in one cycle");
        }
        last = Some(g);
    }

    let f = fit(&rig, &[t], &FitOptions::default()).unwrap();
    let truth = truth(&rig, &body).unwrap();
    for (g, name) in rig.groups.names.iter().enumerate() {
        let (x, want) = (f.fitted.groups[g].to_array(), truth.groups[g].to_array());
        for p in 0..4 {
            let e = (x[p] - want[p]) / want[p];
            eprintln!("{name} {}: {:+.1} %", ServoDynamics::NAMES[p], 100.0 * e);
            // The claws' tiny links leave their parameters known only up to a common scale
            // (BENCHMARKS.md); the legs' each within the 15 %.
            if name != "claw" {
                assert!(
                    e.abs() < 0.15,
                    "{name} {}: {x:?} against {want:?}",
                    ServoDynamics::NAMES[p]
                );
            }
        }
    }
    // The loop's own latency is one physics step (the nominal body's fit); the body adds two.
    assert!(
        (f.fitted.latency_steps - 3.0).abs() < 1.0,
        "{}",
        f.fitted.latency_steps
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (before, after) = (mean(&f.rmse_before), mean(&f.rmse_after));
    assert!(after < 0.5 * before, "held-out RMSE {before} -> {after}");
}

#[test]
fn logs_not_made_on_a_stand_by_identify_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // A body whose servos are the model's, and a truncated copy of its log.
    let (_, summary, _) = identify(&setup(dir.path()), None).unwrap();
    let log = log_of(&summary).unwrap();
    let bytes = std::fs::read(&log).unwrap();
    let cut = dir.path().join("cut.log");
    std::fs::write(&cut, &bytes[..bytes.len() / 20]).unwrap();
    let rig = rig();
    let t = trace_of(&rig, &cut).unwrap();
    let e = fit(&rig, &[t], &FitOptions::default()).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    // A walk's log: the servos moved, but so did the body, which a stand holds still.
    let walk = scenario::run(
        &scenario::by_name("walk").unwrap(),
        &setup(&dir.path().join("walk")),
    )
    .unwrap();
    let e = trace_of(&rig, &log_of(&walk.summary).unwrap()).unwrap_err();
    assert!(format!("{e:#}").contains("a stand holds it under"), "{e:#}");
    // Not a log at all.
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "not a log, ".repeat(20)).unwrap();
    let e = trace_of(&rig, &junk).unwrap_err();
    assert!(
        format!("{e:#}").contains("not a clawrl telemetry log"),
        "{e:#}"
    );
}
