//! `clawrl hil`: the HIL scenarios with MuJoCo as the body (hil-tests/src/scenario.rs): the
//! runtime's own loop, the firmware core and the serial protocol, in lockstep or real time.
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clawrl_hil_tests::line::Clocking;
use clawrl_hil_tests::reference::Pose;
use clawrl_hil_tests::{report, scenario};
use clawrl_sim::quadruped::TaskConfig;

/// Run HIL scenarios (MuJoCo as the body) and report; exits non-zero if one fails.
#[derive(clap::Args)]
pub struct Args {
    /// The policy bundle (`clawrl export`).
    #[arg(long, default_value = "runs/quadruped_distill/student.clawrl")]
    bundle: PathBuf,
    /// A scenario to run (repeatable); `list` shows them; default all but the slope ones.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Wall-clock time instead of lockstep (what the robot sees; slower).
    #[arg(long)]
    realtime: bool,
    /// Seed of the body's episode (the pure simulation uses the same).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value = "configs/task/quadruped_flat.toml")]
    task_config: PathBuf,
    #[arg(long, default_value = "configs/runtime/robot.toml")]
    runtime_config: PathBuf,
    /// A real microcontroller running the firmware on this serial port, in HIL mode (its HIL
    /// registers carry the simulated sensors and its pulses back), instead of the virtual
    /// board. Implies --realtime.
    #[arg(long, value_name = "PORT")]
    board: Option<String>,
    /// Baud rate of --board.
    #[arg(long, default_value_t = 1_000_000)]
    baud: u32,
    /// With --board: how often (µs) the body and the board exchange sensors and pulses: once
    /// per 4 ms MuJoCo step by default. An exchange is about 1.3 ms on a 1 Mbaud line.
    #[arg(long, default_value_t = clawrl_hil_tests::real_board::EXCHANGE_US)]
    exchange_us: u64,
    /// Drive the simulated robot yourself: the runtime listens for command datagrams on
    /// 127.0.0.1:PORT, in real time. Start `clawrl teleop --to 127.0.0.1:PORT` first (the
    /// runtime's guard stops a robot that hears nothing), then this; `--video` films it.
    #[arg(long, value_name = "PORT")]
    teleop: Option<u16>,
    /// With --teleop: seconds of driving before the runtime stops the robot.
    #[arg(long, default_value_t = 120.0)]
    drive_seconds: f64,
    /// The body's servos as this servo_model.toml says, not the model's (for example
    /// hil-tests/fixtures/mismatched_servos.toml): how a policy copes with servos it was not
    /// trained on. The pure simulation keeps the task's.
    #[arg(long, value_name = "FILE")]
    body_servos: Option<PathBuf>,
    /// Report, pictures and scratch files.
    #[arg(long, default_value = "runs/hil")]
    out: PathBuf,
    /// Write DIR/SCENARIO.gif: each scenario's body as the loop drove it (its first seed),
    /// redrawn by MuJoCo's renderer afterwards (needs libosmesa6, as `eval --video`).
    #[arg(long, value_name = "DIR")]
    video: Option<PathBuf>,
    /// Frame size of --video, WIDTHxHEIGHT.
    #[arg(long, default_value = "320x240", value_parser = super::eval::parse_size)]
    video_size: (u32, u32),
    /// Frames per simulated second of --video.
    #[arg(long, default_value_t = 12.5)]
    video_fps: f64,
}

pub fn run(a: Args) -> Result<()> {
    if a.scenarios.iter().any(|s| s == "list") {
        for s in scenario::scenarios() {
            println!("{:12} {}", s.name, s.about);
        }
        println!("with a slope student's bundle (not run by default):");
        for s in scenario::slope_scenarios() {
            println!("{:12} {}", s.name, s.about);
        }
        println!("driven live over UDP (not run by default):");
        for s in scenario::driven_scenarios() {
            println!("{:12} {}", s.name, s.about);
        }
        return Ok(());
    }
    let mut chosen = if let Some(port) = a.teleop {
        vec![scenario::live_drive(port, a.drive_seconds)]
    } else if a.scenarios.is_empty() {
        scenario::scenarios()
    } else {
        a.scenarios
            .iter()
            .map(|n| scenario::by_name(n))
            .collect::<Result<Vec<_>>>()?
    };
    if let Some(file) = &a.body_servos {
        let file = std::fs::canonicalize(clawrl_sim::resolve(file))
            .with_context(|| format!("--body-servos {}", file.display()))?;
        for s in &mut chosen {
            s.body_servos = Some(file.clone());
        }
    }
    // Before anything moves: the bundle must be readable and made for this robot.
    let bundle = clawrl_bundle::read(&a.bundle, &clawrl_bundle::Trust::default())
        .with_context(|| format!("--bundle {}", a.bundle.display()))?;
    let robot = super::robot_config(&a.runtime_config)?;
    clawrl_runtime::install::check_bundle(&bundle, &robot.robot_spec())?;
    let task = TaskConfig::load(&a.task_config, &[])?;
    std::fs::create_dir_all(&a.out)?;
    if let Some(dir) = &a.video {
        std::fs::create_dir_all(dir).with_context(|| format!("--video {}", dir.display()))?;
    }
    let mut text = String::new();
    let mut verdicts = Vec::new();
    for s in &chosen {
        let setup = scenario::Setup {
            bundle: a.bundle.clone(),
            seed: a.seed,
            clocking: if a.realtime || a.board.is_some() || a.teleop.is_some() {
                Clocking::RealTime
            } else {
                Clocking::Lockstep
            },
            task: task.clone(),
            runtime_config: clawrl_sim::resolve(&a.runtime_config),
            dir: a.out.join("scratch").join(s.name),
            board: a
                .board
                .as_ref()
                .map(|path| clawrl_hil_tests::line::BoardPort {
                    path: path.clone(),
                    baud: a.baud,
                    exchange_us: a.exchange_us,
                }),
            miswiring: Vec::new(),
        };
        eprintln!("hil: {} ({}) ...", s.name, s.about);
        let (verdict, errored) = run_scenario(&a, s, &setup, &mut text)?;
        verdicts.push(verdict);
        // A real board that failed once (a latch, a pulled cable) fails every later scenario
        // the same way: stop, with the error in the report.
        if errored && a.board.is_some() {
            let line = "stopped: the board's error above stops the remaining scenarios\n";
            print!("{line}");
            text.push_str(line);
            break;
        }
    }
    let tail = report::verdict_lines(&verdicts);
    print!("{tail}");
    text.push_str(&tail);
    let file = a.out.join("report.txt");
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    println!(
        "report: {} (pictures: {}/path_*.png)",
        file.display(),
        a.out.display()
    );
    let failed: Vec<&str> = (verdicts.iter().filter(|v| !v.passed))
        .map(|v| v.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!("scenario(s) failed: {} (report.txt)", failed.join(", "));
    }
    Ok(())
}

/// DIR/SCENARIO.gif of one run (see `clawrl_hil_tests::video`).
fn film(
    a: &Args,
    dir: &std::path::Path,
    s: &scenario::Scenario,
    o: &scenario::Outcome,
    setup: &scenario::Setup,
) -> Result<()> {
    let file = dir.join(format!("{}.gif", s.name));
    eprintln!("hil: drawing {} ...", file.display());
    let task = s.task(&setup.task);
    let spec = clawrl_hil_tests::video::Film {
        task: &task,
        seed: o.seed,
        command: s.command,
        size: a.video_size,
        fps: a.video_fps,
    };
    let frames = clawrl_hil_tests::video::film(&o.trace, &spec, &file)
        .with_context(|| format!("--video {}", file.display()))?;
    println!("video: {} ({frames} frames)", file.display());
    Ok(())
}

/// [`film`], a failure of which (no OSMesa, say) is a warning line for the report: the video
/// is an extra, so it neither stops the run before report.txt is written nor decides the exit
/// code, which is the scenarios' alone.
fn film_or_warn(
    a: &Args,
    dir: &std::path::Path,
    s: &scenario::Scenario,
    o: &scenario::Outcome,
    setup: &scenario::Setup,
) -> String {
    match film(a, dir, s, o, setup) {
        Ok(()) => String::new(),
        Err(e) => {
            eprintln!("hil: warning: no video of {}: {e:#}", s.name);
            format!("  warning: no video: {e:#}\n")
        }
    }
}

/// Runs one scenario on its seeds (--seed and the ones after it: `Kind::seed_count`; walk and
/// turn with the gap over them), appending each block to `text`. Returns its verdict line
/// and whether a run stopped with an error.
fn run_scenario(
    a: &Args,
    s: &scenario::Scenario,
    setup: &scenario::Setup,
    text: &mut String,
) -> Result<(report::Verdict, bool)> {
    let seeds = scenario::seeds(s.kind, a.seed);
    let (mut ok, mut errored) = (true, false);
    let mut cmps = Vec::new();
    let (mut out_of_limit, mut checked) = (0, 0);
    for (k, &seed) in seeds.iter().enumerate() {
        let one = scenario::Setup {
            seed,
            dir: setup.dir.join(format!("seed-{seed}")),
            ..setup.clone()
        };
        let block = match scenario::run_and_check(s, &one) {
            Ok((o, cmp, checks)) => {
                ok &= scenario::verdict(&checks);
                out_of_limit += o.trace.out_of_limit;
                checked += o.trace.outputs_checked;
                if s.kind.walks() && k == 0 {
                    path_picture(&a.out, s, &o, &one)?;
                }
                let mut block = report::scenario_text(&o, cmp.as_ref(), &checks);
                if let (Some(dir), 0) = (&a.video, k) {
                    block.push_str(&film_or_warn(a, dir, s, &o, &one));
                }
                cmps.extend(cmp);
                block
            }
            Err(e) => {
                (ok, errored) = (false, true);
                report::error_text(s.name, seed, s.about, &e)
            }
        };
        print!("{block}");
        text.push_str(&block);
        if errored && a.board.is_some() {
            break;
        }
    }
    let label = match seeds.as_slice() {
        [one] => format!("seed {one}"),
        many => format!("seeds {}-{}", many[0], many[many.len() - 1]),
    };
    if s.kind.gap_measured() && !errored {
        let gap = scenario::gap_checks(s, &cmps);
        let block = report::checks_text(&format!("{} over {label}", s.name), &gap);
        print!("{block}");
        text.push_str(&block);
        ok &= scenario::verdict(&gap);
    }
    let verdict = report::Verdict {
        name: s.name.to_string(),
        seeds: label,
        passed: ok,
        figure: report::headline(out_of_limit, checked, &cmps, s.turns_in_place()),
    };
    Ok((verdict, errored))
}

/// The top-down path of a run against the pure simulation of the same seed.
fn path_picture(
    out: &std::path::Path,
    s: &scenario::Scenario,
    o: &scenario::Outcome,
    setup: &scenario::Setup,
) -> Result<()> {
    let hil: Vec<Pose> = o
        .trace
        .samples
        .iter()
        .filter(|p| p.t >= o.policy_from_s)
        .map(Pose::from)
        .collect();
    let (sim, from) = scenario::reference(s, setup)?;
    let sim: Vec<Pose> = sim.into_iter().filter(|p| p.t >= from).collect();
    let png = out.join(format!("path_{}.png", s.name));
    report::path_plot(
        &png,
        &format!("{}: torso path from above (seed {})", s.name, setup.seed),
        &hil,
        &sim,
    )
}
