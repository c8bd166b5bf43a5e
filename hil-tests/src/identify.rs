//! Identification in the loop: `clawrl-runtime identify` (the real runtime, wire and firmware
//! core) against a body on a stand whose servos differ from the model by amounts only the
//! body knows (hil-tests/fixtures/mismatched_servos.toml). Its telemetry log is what `clawrl sysid` fits; the fit is judged against the
//! hidden values.
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use clawrl_runtime::lockstep::Lockstep;
use clawrl_runtime::run::{RunOptions, Summary};
use clawrl_sim::quadruped::servo_model::ServoModelFile;
use clawrl_sim::sysid::{Rig, ServoModel};

use crate::body::{MujocoBody, Wiring};
use crate::bridge::Bridge;
use crate::line::{BridgeConfig, Trace};
use crate::scenario::{Setup, by_name, install, runtime_config, wiring};

/// The hidden body's servo model as the fit names it, per `rig`'s groups: each group's
/// first servo's entry in `path` (a servo_model.toml; a servo it does not name keeps the
/// model's). The latency is the file's extra delay in physics steps (the loop adds its own).
pub fn truth(rig: &Rig, path: &std::path::Path) -> Result<ServoModel> {
    let file = ServoModelFile::load(path)?;
    let mut m = rig.nominal();
    for g in 0..rig.groups.names.len() {
        let first = &rig.servo_names()[rig.groups.members(g).next().expect("a group has servos")];
        if let Some(e) = file.group.values().find(|e| e.servos.contains(first)) {
            m.groups[g] = e.dynamics;
        }
    }
    m.latency_steps = file.latency_s / rig.physics_dt;
    Ok(m)
}

/// Runs `clawrl-runtime identify` on `setup`'s bundle against a body on a stand, its servos
/// `body_servos`'s (a servo_model.toml; `None`: the model's), lockstep or real time as `setup`
/// says. Returns the plan as printed, the run's
/// summary (its telemetry log in `summary.log`) and what the body saw (every servo output
/// checked against the joint limits).
pub fn identify(
    setup: &Setup,
    body_servos: Option<&std::path::Path>,
) -> Result<(String, Summary, Trace)> {
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
    let (seed, servos) = (setup.seed, body_servos.map(std::path::Path::to_path_buf));
    let body = move || {
        let mut body = MujocoBody::new(&task, seed, body_wiring, believed)?;
        if let Some(path) = &servos {
            body = body.with_servos(path)?;
        }
        Ok(body.on_stand())
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
    m.check_on_stand(log)?;
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
