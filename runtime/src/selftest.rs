//! `clawrl-runtime self-test`: what a robot computer (or CI's qemu-aarch64) can check without a
//! board: the bundle format round trip and hash on this CPU, the candle forward pass against a
//! plain f64 reference, and the safety sequence on made-up readings (start-up in order, every
//! goal inside the limits, a NaN reading held as a fault, a stop lowered and switched off).
use anyhow::{Result, bail, ensure};
use clawrl_bundle::Trust;
use clawrl_robot::quadruped::{DEFAULT_POSE, JOINT_LIMITS, NUM_SERVOS, REST_POSE};

use crate::controller::{BoardCommand, Controller, Fault, Input, Output, Phase, SafetyConfig};
use crate::inference::Student;
use crate::observation::ObservationBuilder;
use crate::synthetic;
use crate::wire::BoardState;

/// Runs every check; returns one line per check passed.
pub fn run() -> Result<Vec<String>> {
    let mut passed = Vec::new();
    let dir = std::env::temp_dir().join(format!("clawrl-self-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("synthetic.clawrl");
    synthetic::write_shipped_shape(&path, 7)?;
    let bundle = clawrl_bundle::read(&path, &Trust::default())?;
    std::fs::remove_dir_all(&dir).ok();
    passed.push(format!(
        "bundle written, read back and its sha256 verified ({})",
        &bundle.sha256_hex()[..16]
    ));

    let student = Student::from_bundle(&bundle)?;
    let worst = forward_vs_reference(&student, &bundle)?;
    ensure!(
        worst < 1e-4,
        "candle's forward differs from the reference by {worst}"
    );
    passed.push(format!(
        "candle forward matches an f64 reference (largest difference {worst:.2e})"
    ));

    let obs = ObservationBuilder::from_manifest(&bundle.manifest).map_err(anyhow::Error::msg)?;
    let map = bundle.manifest.action.map.clone().unwrap();
    let cfg = SafetyConfig {
        rate_hz: 50.0,
        stand_s: 0.5,
        fade_s: 0.5,
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
        poses: crate::controller::Poses::quadruped(),
    };
    let mut c = Controller::new(student, obs, map, cfg);
    passed.extend(safety_sequence(&mut c)?);
    Ok(passed)
}

/// Largest |candle - reference| over a few observations.
fn forward_vs_reference(student: &Student, bundle: &clawrl_bundle::Bundle) -> Result<f32> {
    let d = student.obs_dim();
    let layers = synthetic::mlp_layers(bundle);
    let mut worst = 0f32;
    let mut out = vec![0f32; student.action_dim()];
    for seed in 0..4 {
        let x = synthetic::values(1000 + seed, d, 2.0);
        student.act(&x, &mut out)?;
        let mut h: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        for (i, (w, b)) in layers.iter().enumerate() {
            let (n_in, n_out) = (w.shape[0], w.shape[1]);
            let mut y: Vec<f64> = b.data.iter().map(|&v| f64::from(v)).collect();
            for (r, hr) in h.iter().enumerate().take(n_in) {
                for (c, yc) in y.iter_mut().enumerate() {
                    *yc += hr * f64::from(w.data[r * n_out + c]);
                }
            }
            if i + 1 < layers.len() {
                y.iter_mut()
                    .for_each(|v| *v = if *v > 0.0 { *v } else { v.exp_m1() });
            }
            h = y;
        }
        for (a, r) in out.iter().zip(&h) {
            worst = worst.max((f64::from(*a) - r).abs() as f32);
        }
    }
    Ok(worst)
}

fn reading(pose: [f64; NUM_SERVOS]) -> BoardState {
    let mut s = BoardState::default();
    s.sensors.quat = [1.0, 0.0, 0.0, 0.0];
    s.sensors.acc = [0.0, 0.0, 9.81];
    s.sensors.joint_pos = pose;
    s
}

fn inside(goals: &[f64; NUM_SERVOS]) -> bool {
    goals
        .iter()
        .zip(JOINT_LIMITS)
        .all(|(g, [lo, hi])| *g >= lo && *g <= hi)
}

fn safety_sequence<P: crate::controller::Act>(c: &mut Controller<P>) -> Result<Vec<String>> {
    let mut out = Output::default();
    let mut phases = vec![c.phase()];
    let step = |c: &mut Controller<P>, input: Input, out: &mut Output| -> Result<()> {
        c.step(&input, out);
        if let Some(g) = &out.goals {
            ensure!(inside(g), "a goal outside the joint limits: {g:?}");
        }
        Ok(())
    };
    // Start-up from the rest pose: 25 cycles stand, 25 fade, then run.
    for _ in 0..80 {
        let pose = out.goals.unwrap_or(REST_POSE);
        step(
            c,
            Input {
                state: Some(reading(pose)),
                stop: false,
                command: None,
                estop: false,
            },
            &mut out,
        )?;
        if phases.last() != Some(&out.phase) {
            phases.push(out.phase);
        }
    }
    let want = [
        Phase::TorqueOff,
        Phase::Standing,
        Phase::FadeIn,
        Phase::Running,
    ];
    ensure!(
        phases == want,
        "start-up went {phases:?}, expected {want:?}"
    );
    let mut passed = vec![format!("start-up in order: {phases:?}")];

    let held = out.goals.unwrap();
    let mut bad = reading(held);
    bad.sensors.gyro[1] = f64::NAN;
    step(
        c,
        Input {
            state: Some(bad),
            stop: false,
            command: None,
            estop: false,
        },
        &mut out,
    )?;
    ensure!(
        out.phase == Phase::Fault(Fault::NonFinite) && out.goals == Some(held),
        "a NaN reading gave {:?} with goals {:?}",
        out.phase,
        out.goals
    );
    step(
        c,
        Input {
            state: Some(reading(held)),
            stop: false,
            command: None,
            estop: false,
        },
        &mut out,
    )?;
    ensure!(
        out.phase == Phase::Fault(Fault::NonFinite),
        "the NaN fault did not latch"
    );
    passed.push("a NaN reading latches the fault and holds the last goal".into());

    let mut cycles = 0;
    loop {
        step(
            c,
            Input {
                state: Some(reading(out.goals.unwrap_or(held))),
                stop: true,
                command: None,
                estop: false,
            },
            &mut out,
        )?;
        cycles += 1;
        if out.done || cycles > 100 {
            break;
        }
    }
    if !(out.done && out.board == BoardCommand::Disable) {
        bail!("a stop ended in {:?} after {cycles} cycles", out.phase);
    }
    let _ = DEFAULT_POSE;
    passed.push(format!(
        "a stop lowers the robot and disables the torque ({cycles} cycles)"
    ));
    Ok(passed)
}
