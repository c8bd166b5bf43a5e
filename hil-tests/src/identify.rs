//! Identification in the loop: `clawrl-runtime identify` (the real runtime, wire and firmware
//! core) against a body on a stand whose servos differ from the model by amounts only the
//! body knows. Its telemetry log is what `clawrl sysid` fits; the fit is judged against the
//! hidden values.
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use clawrl_runtime::lockstep::Lockstep;
use clawrl_runtime::run::{RunOptions, Summary};
use clawrl_sim::quadruped::ServoDynamics;
use clawrl_sim::sysid::{Rig, ServoModel};

use crate::body::{MujocoBody, Wiring};
use crate::bridge::Bridge;
use crate::line::{BridgeConfig, Trace};
use crate::scenario::{Setup, by_name, install, runtime_config, wiring};

/// Servos unlike the model: per group (by joint name, `clawrl_robot::excitation::group_by_joint`)
/// a factor on each parameter in [`ServoDynamics::NAMES`]' order, and a delay of their own.
#[derive(Debug, Clone, PartialEq)]
pub struct HiddenServos {
    /// (group, factors); a group not named keeps the model's servo.
    pub factors: Vec<(String, [f64; 4])>,
    /// Physics steps every target waits before it reaches the servos.
    pub delay_steps: usize,
}

impl HiddenServos {
    /// The mismatched robot: every group's gain -30 %, damping x2, friction x3; the
    /// knees weaker still (gain -45 %, armature x1.5); 8 ms (two 4 ms steps) more delay.
    pub fn mismatched() -> Self {
        let legs = [0.7, 2.0, 1.0, 3.0];
        Self {
            factors: vec![
                ("hip_abd".into(), legs),
                ("hip_pitch".into(), legs),
                ("knee".into(), [0.55, 2.0, 1.5, 3.0]),
                ("claw".into(), legs),
            ],
            delay_steps: 2,
        }
    }

    /// Servos as the model has them: what identification finds is the loop's own latency.
    pub fn nominal() -> Self {
        Self {
            factors: Vec::new(),
            delay_steps: 0,
        }
    }

    /// The servo model of these servos as the fit names it, per `rig`'s groups. The latency
    /// is NaN: the loop adds its own, known only to a fit (of the nominal body).
    pub fn model(&self, rig: &Rig) -> ServoModel {
        let mut m = rig.nominal();
        for g in 0..rig.groups.names.len() {
            let member = rig.groups.members(g).next().expect("a group has servos");
            m.groups[g] = m.groups[g].scaled(self.factors_of(&rig.servo_names()[member]));
        }
        m.latency_steps = f64::NAN;
        m
    }

    /// The factors of the group servo `name` belongs to (ones for a group not named).
    pub fn factors_of(&self, name: &str) -> [f64; 4] {
        let (groups, of) = clawrl_robot::excitation::group_by_joint(&[name.to_string()]);
        let group = &groups[of[0]];
        self.factors
            .iter()
            .find(|(g, _)| g == group)
            .map_or([1.0; 4], |(_, f)| *f)
    }
}

/// Runs `clawrl-runtime identify` on `setup`'s bundle against a body on a stand with `hidden`
/// servos (lockstep or real time as `setup` says). Returns the plan as printed, the run's
/// summary (its telemetry log in `summary.log`) and what the body saw (every servo output
/// checked against the joint limits).
pub fn identify(setup: &Setup, hidden: &HiddenServos) -> Result<(String, Summary, Trace)> {
    std::fs::create_dir_all(&setup.dir)?;
    let setup = &Setup {
        dir: std::fs::canonicalize(&setup.dir)?,
        ..setup.clone()
    };
    let s = by_name("walk")?;
    let probe = runtime_config(setup, &setup.dir.join("board.tty"), &s, None)?;
    let (firmware, body_wiring) = wiring(&probe, &setup.miswiring)?;
    let believed = Wiring::of_board(&firmware);
    let lockstep = Arc::new(Lockstep::new());
    let bridge_cfg = BridgeConfig {
        clocking: setup.clocking,
        period_us: (1e6 / probe.control.rate_hz).round() as u64,
        faults: Vec::new(),
        fault_seed: setup.seed,
        events: Vec::new(),
        lockstep: lockstep.clone(),
    };
    let task = setup.task.clone().on_stand();
    let (seed, hidden) = (setup.seed, hidden.clone());
    let body = move || {
        let body = MujocoBody::new(&task, seed, body_wiring, believed)?;
        let env = body.env();
        let dynamics: Vec<ServoDynamics> = (env.robot().servo_names.iter().enumerate())
            .map(|(i, name)| env.servo_dynamics(i).scaled(hidden.factors_of(name)))
            .collect();
        Ok(body.on_stand(&dynamics, hidden.delay_steps))
    };
    let bridge = Bridge::spawn(&setup.dir, firmware, body, bridge_cfg)?;
    let cfg = runtime_config(setup, bridge.port(), &s, None)?;
    let bundle = install(&cfg, &setup.bundle).context("installing the bundle")?;
    let b = clawrl_runtime::run::load_bundle(&cfg, &bundle)?;
    let (plan, servos, groups) = clawrl_runtime::identify::plan(&cfg, &b)?;
    let text = clawrl_runtime::identify::describe(&plan, &servos, &groups);
    let opts = RunOptions {
        bundle,
        duration: Some(Duration::from_secs_f64(
            cfg.safety.stand_s + cfg.safety.fade_s + plan.seconds(),
        )),
        stop: Arc::new(AtomicBool::new(false)),
        clear_estop: false,
        lockstep: Some(lockstep),
    };
    let runtime = std::thread::Builder::new()
        .name("runtime".into())
        .spawn(move || {
            clawrl_runtime::run::run_with(&cfg, &opts, |cfg, b| {
                clawrl_runtime::identify::controller(cfg, b, plan)
            })
        })?;
    let summary = runtime
        .join()
        .map_err(|_| anyhow::anyhow!("the runtime panicked"))?
        .context("identify: the runtime stopped with an error")?;
    let trace = bridge.finish()?;
    Ok((text, summary, trace))
}

/// The log of a run, or an error saying telemetry was off.
pub fn log_of(summary: &Summary) -> Result<PathBuf> {
    summary
        .log
        .clone()
        .context("the run wrote no telemetry log")
}

/// An identify log read as a fit's trace for `rig`'s robot ([`clawrl_runtime::identify::measurements`]);
/// a log of a robot with another servo count is refused by name.
pub fn trace_of(rig: &Rig, log: &std::path::Path) -> Result<clawrl_sim::sysid::Trace> {
    let m = clawrl_runtime::identify::measurements(log)?;
    let names = rig.servo_names();
    if m.servos != names.len() {
        anyhow::bail!(
            "{}: logged for a robot of {} servos; this task's robot has {} (a log of another robot?)",
            log.display(),
            m.servos,
            names.len()
        );
    }
    Ok(clawrl_sim::sysid::Trace {
        source: log.display().to_string(),
        servo_names: names.to_vec(),
        period_s: 1.0 / m.rate_hz,
        goals: m.goals,
        measured: m.measured,
    })
}
