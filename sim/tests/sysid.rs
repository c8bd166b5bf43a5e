//! System identification against a log the test makes: a robot on a stand whose servos differ
//! from the MJCF's by amounts the fit is not told, recorded through the excitation
//! `clawrl-runtime identify` plays.
use clawrl_robot::excitation::{ExcitationSpec, Plan};
use clawrl_sim::quadruped::{ServoDynamics, TaskConfig};
use clawrl_sim::sysid::{FitOptions, Groups, Rig, ServoModel, Trace, TraceError, fit};

/// One encoder tick of a 4096-per-turn servo (rad).
const TICK: f64 = std::f64::consts::TAU / 4096.0;

fn rig() -> Rig {
    let task = TaskConfig::flat().unwrap();
    let names = clawrl_sim::quadruped::Robot::load(&task)
        .unwrap()
        .servo_names
        .clone();
    Rig::new(&task, Groups::by_joint(&names)).unwrap()
}

/// The hidden robot: every group's gain -30 %, damping x2, friction x3; the knees weaker
/// still (gain -45 %) with more armature; 2 physics steps (8 ms) more latency.
fn hidden(rig: &Rig) -> ServoModel {
    let mut m = rig.nominal();
    for (g, name) in rig.groups.names.iter().enumerate() {
        let f = if name == "knee" {
            [0.55, 2.0, 1.5, 3.0]
        } else {
            [0.7, 2.0, 1.0, 3.0]
        };
        m.groups[g] = m.groups[g].scaled(f);
    }
    m.latency_steps = 2.0;
    m
}

fn plan(rig: &Rig) -> Plan {
    Plan::new(&rig.excited_servos(), 50.0, &ExcitationSpec::default())
}

/// The rig, the hidden model and the log of the excitation played on it.
fn recorded() -> (Rig, ServoModel, Trace) {
    let rig = rig();
    let truth = hidden(&rig);
    let trace = rig.record(&plan(&rig).goals, &truth, TICK);
    (rig, truth, trace)
}

fn error(fitted: f64, truth: f64) -> f64 {
    (fitted - truth).abs() / truth.abs()
}

#[test]
fn the_fit_recovers_hidden_servo_parameters_and_halves_the_held_out_error() {
    let (rig, truth, trace) = recorded();
    // Three latency starts around the truth instead of the default thirteen keep the test
    // short (about 60 s of the CI's time saved); the search over the whole range is
    // hil-tests/tests/identify.rs's, through the loop.
    let opts = FitOptions {
        latency_steps: 1..=3,
        ..FitOptions::default()
    };
    let f = fit(&rig, &[trace], &opts).unwrap();
    eprintln!("fit: {:.1} s, {} rollouts", f.seconds, f.rollouts);
    for (g, name) in rig.groups.names.iter().enumerate() {
        let (t, x) = (truth.groups[g].to_array(), f.fitted.groups[g].to_array());
        for p in 0..4 {
            eprintln!(
                "{name} {}: true {:.5} fitted {:.5}",
                ServoDynamics::NAMES[p],
                t[p],
                x[p]
            );
        }
        // The gain and the friction within 15 %, as the issue asks of every parameter.
        for p in 0..4 {
            assert!(
                error(x[p], t[p]) < 0.15,
                "{name} {}: fitted {} against {}",
                ServoDynamics::NAMES[p],
                x[p],
                t[p]
            );
        }
    }
    let (before, after) = (mean(&f.rmse_before), mean(&f.rmse_after));
    eprintln!("held-out RMSE {before:.5} -> {after:.5} rad");
    eprintln!(
        "latency: true {} fitted {:.2} steps",
        truth.latency_steps, f.fitted.latency_steps
    );
    assert!((f.fitted.latency_steps - truth.latency_steps).abs() < 1.0);
    assert!(after < 0.5 * before, "held-out RMSE {before} -> {after}");
}

#[test]
fn a_gain_frozen_at_the_wrong_value_leaves_the_error_up() {
    let (rig, _, trace) = recorded();
    // The latency given, to keep the test short: the gain is what is frozen.
    let known = FitOptions {
        latency_steps: 2..=2,
        ..FitOptions::default()
    };
    let free = fit(&rig, std::slice::from_ref(&trace), &known).unwrap();
    let frozen = FitOptions {
        frozen: vec!["kp".into()],
        ..known
    };
    let stuck = fit(&rig, &[trace], &frozen).unwrap();
    let (a, b) = (mean(&free.rmse_after), mean(&stuck.rmse_after));
    eprintln!("held-out RMSE free {a:.5}, gain frozen at nominal {b:.5}");
    assert!(b > 2.0 * a, "free {a}, frozen {b}");
}

#[test]
fn bad_logs_get_a_clear_error() {
    let rig = rig();
    let nominal = rig.nominal();
    let goals = plan(&rig).goals;
    let short = rig.record(&goals[..50], &nominal, TICK);
    let e = fit(&rig, &[short], &FitOptions::default()).unwrap_err();
    assert!(matches!(e, TraceError::TooShort { cycles: 50, .. }), "{e}");
    assert!(e.to_string().contains("truncated"), "{e}");

    let mut other = rig.record(&goals, &nominal, TICK);
    other.servo_names.swap(0, 1);
    let e = fit(&rig, &[other], &FitOptions::default()).unwrap_err();
    assert!(e.to_string().contains("another robot"), "{e}");

    let still = vec![goals[0].clone(); 300];
    let still = rig.record(&still, &nominal, TICK);
    let e = fit(&rig, &[still], &FitOptions::default()).unwrap_err();
    assert!(matches!(e, TraceError::NoExcitation { .. }), "{e}");
    assert!(e.to_string().contains("no excitation"), "{e}");
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_servo_model_beside_the_description_is_what_the_simulation_trains_on() {
    // pup12's MJCF and description copied, with a fitted servo model beside them.
    let dir = tempfile::tempdir().unwrap();
    let src = clawrl_sim::repo_root().join("robots/pup12");
    for f in ["pup12.xml", "robot.toml"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let model = dir.path().join("pup12.xml");
    let task = |overrides: &[String]| {
        let mut o = vec![format!("env.model={:?}", model.display().to_string())];
        o.extend_from_slice(overrides);
        TaskConfig::load(
            clawrl_sim::repo_root().join("configs/task/pup12_flat.toml"),
            &o,
        )
        .unwrap()
    };
    let before = clawrl_sim::quadruped::QuadrupedEnv::new(&task(&[]).on_stand()).unwrap();
    let knee = before
        .robot()
        .servo_names
        .iter()
        .position(|n| n == "FL_knee")
        .unwrap();
    let nominal = before.servo_dynamics(knee);
    std::fs::write(
        dir.path().join("servo_model.toml"),
        "latency_s = 0.004\n[group.knee]\nservos = [\"FL_knee\"]\nkp = 7.5\ndamping = 0.2\narmature = 0.01\nfrictionloss = 0.05\n",
    )
    .unwrap();
    let after = clawrl_sim::quadruped::QuadrupedEnv::new(&task(&[]).on_stand()).unwrap();
    let fitted = ServoDynamics {
        kp: 7.5,
        damping: 0.2,
        armature: 0.01,
        frictionloss: 0.05,
    };
    assert_ne!(nominal, fitted);
    assert_eq!(after.servo_dynamics(knee), fitted);
    // Randomisation scales around the fitted gain: strength 1.2 gives 9.0.
    let mut strong = clawrl_sim::quadruped::QuadrupedEnv::new(&task(&[
        "randomization.servo_strength=[1.2, 1.2]".into(),
    ]))
    .unwrap();
    use clawrl_sim::Env;
    strong.reset_in_place(3);
    assert!((strong.servo_dynamics(knee).kp - 9.0).abs() < 1e-9);
    // A servo the robot does not have is named.
    std::fs::write(
        dir.path().join("servo_model.toml"),
        "latency_s = 0.004\n[group.knee]\nservos = [\"FL_kne\"]\nkp = 7.5\ndamping = 0.2\narmature = 0.01\nfrictionloss = 0.05\n",
    )
    .unwrap();
    let e = clawrl_sim::quadruped::QuadrupedEnv::new(&task(&[]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("no servo \"FL_kne\""), "{e}");
}
