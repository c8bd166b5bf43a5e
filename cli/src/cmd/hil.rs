//! `clawrl hil`: the HIL scenarios with MuJoCo as the body (hil-tests/src/scenario.rs): the
//! runtime's own loop, the firmware core and the serial protocol, in lockstep or real time.
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clawrl_hil_tests::bridge::Clocking;
use clawrl_hil_tests::reference::Pose;
use clawrl_hil_tests::{report, scenario};
use clawrl_sim::quadruped::TaskConfig;

/// Run HIL scenarios (MuJoCo as the body) and report; exits non-zero if one fails.
#[derive(clap::Args)]
pub struct Args {
    /// The policy bundle (`clawrl export`).
    #[arg(long, default_value = "runs/quadruped_distill/student.clawrl")]
    bundle: PathBuf,
    /// A scenario to run (repeatable); `list` shows them; default all.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Wall-clock time instead of lockstep (what the robot sees; slower).
    #[arg(long)]
    realtime: bool,
    /// Seed of the body's episode (the pure simulation uses the same).
    #[arg(long, default_value_t = 3)]
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
    /// With --board: how often (µs) the body and the board exchange sensors and pulses. An
    /// exchange is about 1.3 ms on a 1 Mbaud line: 4000 there, the default at 3 Mbaud or more.
    #[arg(long, default_value_t = clawrl_hil_tests::real_board::EXCHANGE_US)]
    exchange_us: u64,
    /// Report, pictures and scratch files.
    #[arg(long, default_value = "runs/hil")]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    if a.scenarios.iter().any(|s| s == "list") {
        for s in scenario::scenarios() {
            println!("{:12} {}", s.name, s.about);
        }
        return Ok(());
    }
    let chosen = if a.scenarios.is_empty() {
        scenario::scenarios()
    } else {
        a.scenarios
            .iter()
            .map(|n| scenario::by_name(n))
            .collect::<Result<Vec<_>>>()?
    };
    // Before anything moves: the bundle must be readable and made for this robot.
    let bundle = clawrl_bundle::read(&a.bundle, &clawrl_bundle::Trust::default())
        .with_context(|| format!("--bundle {}", a.bundle.display()))?;
    clawrl_runtime::install::check_bundle(
        &bundle,
        &clawrl_runtime::install::RobotExpectation::claw_quadruped(),
    )?;
    let task = TaskConfig::load(&a.task_config, &[])?;
    std::fs::create_dir_all(&a.out)?;
    let mut text = String::new();
    let mut failed = Vec::new();
    for s in &chosen {
        let setup = scenario::Setup {
            bundle: a.bundle.clone(),
            seed: a.seed,
            clocking: if a.realtime || a.board.is_some() {
                Clocking::RealTime
            } else {
                Clocking::Lockstep
            },
            task: task.clone(),
            runtime_config: a.runtime_config.clone(),
            dir: a.out.join("scratch").join(s.name),
            board: a.board.as_ref().map(|path| scenario::BoardPort {
                path: path.clone(),
                baud: a.baud,
                exchange_us: a.exchange_us,
            }),
        };
        eprintln!("hil: {} ({}) ...", s.name, s.about);
        // The gap of walk and turn is measured over four seeds (--seed and the three after);
        // the other scenarios run on --seed alone.
        let seeds: Vec<u64> = if scenario::gap_measured(s) {
            scenario::gap_seeds(a.seed).to_vec()
        } else {
            vec![a.seed]
        };
        let mut ok = true;
        let mut cmps = Vec::new();
        for (k, &seed) in seeds.iter().enumerate() {
            let one = scenario::Setup {
                seed,
                dir: setup.dir.join(format!("seed-{seed}")),
                ..setup.clone()
            };
            let (o, cmp, checks) = scenario::run_and_check(s, &one)?;
            let block = report::scenario_text(&o, cmp.as_ref(), &checks);
            print!("{block}");
            text.push_str(&block);
            ok &= checks.iter().all(|c| c.passed);
            cmps.extend(cmp);
            if scenario::walks(s) && k == 0 {
                path_picture(&a.out, s, &o, &one)?;
            }
        }
        if scenario::gap_measured(s) {
            let gap = scenario::gap_checks(s, &cmps);
            let block = report::checks_text(
                &format!(
                    "{} over seeds {}-{}",
                    s.name,
                    seeds[0],
                    seeds[seeds.len() - 1]
                ),
                &gap,
            );
            print!("{block}");
            text.push_str(&block);
            ok &= gap.iter().all(|c| c.passed);
        }
        if !ok {
            failed.push(s.name);
        }
    }
    let file = a.out.join("report.txt");
    std::fs::write(&file, &text)?;
    println!(
        "report: {} (pictures: {}/path_*.png)",
        file.display(),
        a.out.display()
    );
    if !failed.is_empty() {
        bail!("scenario(s) failed: {}", failed.join(", "));
    }
    Ok(())
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
