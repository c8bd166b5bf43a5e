//! `clawrl sysid`: the servo model fitted to `clawrl-runtime identify` logs
//! (`clawrl_sim::sysid`), with the held-out error before and after, a picture of measured
//! against simulated angles, and the fitted values written where the robot's files live.
//! `--hil BUNDLE` makes the log first: identify in the loop against a body whose servos differ
//! from the model by amounts only it knows, and the fit judged against them.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_sim::quadruped::{ServoDynamics, TaskConfig};
use clawrl_sim::sysid::{Fit, FitOptions, Groups, Rig, ServoModel, Trace};
use plotters::prelude::*;

#[derive(clap::Args)]
pub struct Args {
    /// Telemetry logs of `clawrl-runtime identify` (copied off the robot).
    #[arg(required_unless_present = "hil")]
    logs: Vec<PathBuf>,
    /// Make the log first: identify in the loop (lockstep) with this bundle against a body on
    /// a stand with the servos of --hil-body, and print the recovery against them.
    #[arg(long, value_name = "BUNDLE", conflicts_with = "logs")]
    hil: Option<PathBuf>,
    /// With --hil: the body's servos (a servo_model.toml; `nominal`: the model's own, to
    /// measure what the loop itself adds, its latency).
    #[arg(long, default_value = "hil-tests/fixtures/mismatched_servos.toml")]
    hil_body: String,
    /// The robot, by its description's name (robots/NAME/): its flat task
    /// (configs/task/NAME_flat.toml; the claw-foot robot's is quadruped_flat.toml).
    #[arg(long, conflicts_with = "task")]
    robot: Option<String>,
    /// The robot's task: its MJCF and physics rate.
    #[arg(long, default_value = "configs/task/quadruped_flat.toml")]
    task: PathBuf,
    /// The runtime config `--hil` runs with.
    #[arg(long, default_value = "configs/runtime/robot.toml")]
    runtime_config: PathBuf,
    /// The servo board's slew limit (rad/s; its firmware's `max_slew_rad_per_s`): the board
    /// ramps its output to each new goal this fast, and the fit replays goals through it.
    /// 0: the board steps.
    #[arg(long, default_value_t = 8.0)]
    board_slew: f64,
    /// Where the table, the picture and the fitted servo model go.
    #[arg(long, default_value = "runs/sysid")]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let task_file = match &a.robot {
        Some(name) => {
            let prefix = if name == "claw_quadruped" {
                "quadruped"
            } else {
                name
            };
            PathBuf::from(format!("configs/task/{prefix}_flat.toml"))
        }
        None => a.task.clone(),
    };
    let task_path = clawrl_sim::resolve(&task_file);
    let task =
        TaskConfig::load(&task_path, &[]).with_context(|| task_file.display().to_string())?;
    std::fs::create_dir_all(&a.out).with_context(|| a.out.display().to_string())?;
    let (logs, hidden) = match &a.hil {
        Some(bundle) => {
            let body =
                (a.hil_body != "nominal").then(|| clawrl_sim::resolve(Path::new(&a.hil_body)));
            (
                vec![identify_in_loop(&a, bundle, &task, body.as_deref())?],
                body,
            )
        }
        None => (a.logs.clone(), None),
    };
    let robot = clawrl_sim::quadruped::Robot::load(&task)?;
    if let Some(name) = a.robot.as_ref().filter(|n| **n != robot.name) {
        anyhow::bail!(
            "--robot {name}: {} drives {}",
            task_file.display(),
            robot.name
        );
    }
    let mut rig = Rig::new(&task, Groups::by_joint(&robot.servo_names))?;
    if a.board_slew > 0.0 {
        rig = rig.with_slew(a.board_slew);
    }
    let traces = logs
        .iter()
        .map(|l| clawrl_hil_tests::identify::trace_of(&rig, l))
        .collect::<Result<Vec<_>>>()?;
    eprintln!(
        "sysid: fitting {} groups x 4 parameters and the latency to {} cycles of {} log(s) on \
         {} threads",
        rig.groups.names.len(),
        traces.iter().map(Trace::len).sum::<usize>(),
        traces.len(),
        rayon::current_num_threads()
    );
    let f = clawrl_sim::sysid::fit(&rig, &traces, &FitOptions::default())?;
    let truth = hidden
        .as_deref()
        .map(|b| clawrl_hil_tests::identify::truth(&rig, b))
        .transpose()?;
    let text = table(&rig, &f, truth.as_ref());
    print!("{text}");
    std::fs::write(a.out.join("sysid.txt"), &text)?;
    let model = a.out.join("servo_model.toml");
    std::fs::write(&model, servo_model_toml(&rig, &f, &logs)?)?;
    let png = a.out.join("sysid.png");
    draw(&rig, &traces[0], &f, &png)?;
    println!("{}\n{}", model.display(), png.display());
    Ok(())
}

/// Runs identify in the loop against a body with `body`'s servos; returns its log.
fn identify_in_loop(
    a: &Args,
    bundle: &Path,
    task: &TaskConfig,
    body: Option<&Path>,
) -> Result<PathBuf> {
    let setup = clawrl_hil_tests::scenario::Setup {
        bundle: bundle.to_path_buf(),
        seed: 1,
        clocking: clawrl_hil_tests::line::Clocking::Lockstep,
        task: task.clone(),
        runtime_config: clawrl_sim::resolve(&a.runtime_config),
        dir: a.out.join("scratch"),
        board: None,
        miswiring: Vec::new(),
    };
    let started = std::time::Instant::now();
    let (plan, summary, trace) = clawrl_hil_tests::identify::identify(&setup, body)?;
    eprint!("{plan}");
    let log = clawrl_hil_tests::identify::log_of(&summary)?;
    eprintln!(
        "identify in the loop: {} cycles in {:.1} s, {} goal entries limited, {} of {} servo \
         outputs outside the joint limits; {}",
        summary.cycles,
        started.elapsed().as_secs_f64(),
        summary.goals_limited,
        trace.out_of_limit,
        trace.outputs_checked,
        log.display()
    );
    Ok(log)
}

fn table(rig: &Rig, f: &Fit, truth: Option<&ServoModel>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:<13} {:>10} {:>10} {:>10} {:>8}",
        "group", "parameter", "model", "fitted", "body", "error"
    );
    for (g, name) in rig.groups.names.iter().enumerate() {
        let (n, x) = (
            f.nominal.groups[g].to_array(),
            f.fitted.groups[g].to_array(),
        );
        for p in 0..4 {
            let (t, e) = match truth {
                Some(t) => {
                    let t = t.groups[g].to_array()[p];
                    (
                        format!("{t:.5}"),
                        format!("{:+.1} %", 100.0 * (x[p] - t) / t),
                    )
                }
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "{name:<10} {:<13} {:>10.5} {:>10.5} {t:>10} {e:>8}",
                ServoDynamics::NAMES[p],
                n[p],
                x[p]
            );
        }
    }
    let dt_ms = 1e3 * rig.physics_dt;
    let _ = writeln!(
        s,
        "latency: {:.2} physics steps ({:.1} ms) from a goal's cycle to the servo, the whole loop",
        f.fitted.latency_steps,
        f.fitted.latency_steps * dt_ms
    );
    let _ = writeln!(
        s,
        "\nheld-out position RMSE per group (rad): nominal model -> fitted"
    );
    for (g, name) in rig.groups.names.iter().enumerate() {
        let mean = |v: &[f64]| {
            let m: Vec<f64> = rig.groups.members(g).map(|i| v[i]).collect();
            m.iter().sum::<f64>() / m.len() as f64
        };
        let (b, a) = (mean(&f.rmse_before), mean(&f.rmse_after));
        let _ = writeln!(
            s,
            "{name:<10} {b:.5} -> {a:.5}  ({:.0} % lower)",
            100.0 * (1.0 - a / b)
        );
    }
    let _ = writeln!(s, "fit: {:.1} s, {} rollouts", f.seconds, f.rollouts);
    s
}

/// The fitted model as the robot's `servo_model.toml`, with where it came from.
fn servo_model_toml(rig: &Rig, f: &Fit, logs: &[PathBuf]) -> Result<String> {
    use clawrl_sim::quadruped::servo_model::{GroupEntry, ServoModelFile};
    let file = ServoModelFile {
        latency_s: f.fitted.latency_steps * rig.physics_dt,
        group: (rig.groups.names.iter().enumerate())
            .map(|(g, name)| {
                let servos = rig.groups.members(g).map(|i| rig.servo_names()[i].clone());
                let entry = GroupEntry {
                    servos: servos.collect(),
                    dynamics: f.fitted.groups[g],
                };
                (name.clone(), entry)
            })
            .collect(),
    };
    let logs: Vec<String> = logs.iter().map(|l| l.display().to_string()).collect();
    Ok(format!(
        "# Written by `clawrl sysid` from {}.\n# Per joint group: position gain (N m/rad), joint damping (N m s/rad), armature\n# (kg m^2), friction (N m); latency_s is the whole loop's. Copy beside the robot's\n# robot.toml (robots/NAME/servo_model.toml) and the simulation trains on it.\n{}",
        logs.join(", "),
        toml::to_string(&file)?
    ))
}

/// Measured against simulated angles over the held-out part, one panel per group's first servo.
fn draw(rig: &Rig, t: &Trace, f: &Fit, out: &Path) -> Result<()> {
    use super::plot_mcap::{COLOURS, Line, panel};
    clawrl_trainer::metrics::register_font();
    let from = (t.len() as f64 * FitOptions::default().train_share) as usize;
    let nominal = rig.simulate(t, &f.nominal, t.len());
    let fitted = rig.simulate(t, &f.fitted, t.len());
    let span = (t.len() - from) as f64 * t.period_s;
    let series = |v: &[Vec<f64>], i: usize| -> Vec<(f64, f64)> {
        (from..t.len())
            .map(|k| ((k - from) as f64 * t.period_s, v[k][i]))
            .collect()
    };
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(out, (1200, 300 * rig.groups.names.len() as u32))
            .into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            "System identification: held-out angles, measured against the nominal and the fitted servo model",
            ("sans-serif", 20),
        )?;
        let panels = root.split_evenly((rig.groups.names.len(), 1));
        for (g, name) in rig.groups.names.iter().enumerate() {
            let i = rig.groups.members(g).next().expect("a group has servos");
            let (m, n, x) = (
                series(&t.measured, i),
                series(&nominal, i),
                series(&fitted, i),
            );
            // The measured angles drawn last: where the fitted model fits, it lies beneath.
            let lines: [Line; 3] = [
                ("nominal model", &n[..], COLOURS[1]),
                ("fitted model (beneath where it fits)", &x[..], COLOURS[2]),
                ("measured", &m[..], COLOURS[0]),
            ];
            let caption = format!("{} ({name})", rig.servo_names()[i]);
            panel(&panels[g], &caption, "rad", span, &lines)?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", out.display()))
}
