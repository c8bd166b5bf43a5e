//! `clawrl slope-curve`: success against floor tilt, up and down, at two frictions, with the
//! claws free and forced open (trainer/src/slope_curve.rs); a table, a CSV and a plot.
use std::path::PathBuf;

use anyhow::{Context, Result};
use clawrl_sim::quadruped::config::{FRICTION_RANGE, SLOPE_DEGREES_RANGE};
use clawrl_trainer::eval::EvalOptions;
use clawrl_trainer::remote::load_any;
use clawrl_trainer::slope_curve::{self, MIN_SPEED, SPEED_TOLERANCE};

/// Measure a quadruped policy against floor tilt: one evaluation per tilt, friction,
/// direction (uphill or downhill, walking forward) and claw mode.
#[derive(clap::Args)]
pub struct Args {
    /// Run folder, checkpoint, policy.safetensors or bundle (as `clawrl eval`).
    #[arg(long, value_name = "DIR|FILE")]
    policy: String,
    #[arg(long, value_name = "FILE", default_value = clawrl_endpoint::config::DEFAULT_FILE)]
    endpoint: PathBuf,
    /// Episodes per point.
    #[arg(long, default_value_t = 20)]
    episodes: usize,
    /// Floor tilts, degrees.
    #[arg(long, value_delimiter = ',', default_value = "0,5,10,15,20,25,30")]
    tilts: Vec<f64>,
    /// Floor frictions.
    #[arg(long, value_delimiter = ',', default_value = "0.4,1.0")]
    frictions: Vec<f64>,
    /// Forward command, m/s.
    #[arg(long, default_value_t = 0.3)]
    speed: f64,
    /// The yaw holds each episode's starting heading (the task's heading command, as it was
    /// trained) instead of a yaw rate of 0.
    #[arg(long)]
    hold_heading: bool,
    /// Where curve.md, curve.csv and curve.png go.
    #[arg(long, default_value = "runs/slope_curve")]
    out: PathBuf,
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

pub fn run(a: Args) -> Result<()> {
    // The task's own bounds (terrain.slope_degrees, randomization.friction), checked here so
    // the error names the flag the user typed rather than the override it becomes.
    let [lo, hi] = SLOPE_DEGREES_RANGE;
    for &t in &a.tilts {
        anyhow::ensure!(
            (lo..=hi).contains(&t),
            "--tilts: {t} is outside [{lo}, {hi}] degrees"
        );
    }
    let [lo, hi] = FRICTION_RANGE;
    for &f in &a.frictions {
        anyhow::ensure!(
            (lo..=hi).contains(&f),
            "--frictions: {f} is outside [{lo}, {hi}]"
        );
    }
    clawrl_policy::init_candle_threads(1);
    let src = load_any(&a.policy, &a.endpoint)?;
    anyhow::ensure!(
        !src.config.is_cartpole(),
        "slope-curve: task `cartpole` has no floor to tilt"
    );
    let opts = EvalOptions {
        episodes: a.episodes,
        num_envs: a.episodes.min(16),
        threads: a.threads,
        seed: a.seed,
        hold_heading: a.hold_heading,
        ..Default::default()
    };
    let grid = slope_curve::grid(&a.tilts, &a.frictions);
    let mut points = Vec::with_capacity(grid.len());
    for (i, c) in grid.iter().enumerate() {
        let p = slope_curve::measure(&src.config, src.policy.as_ref(), c, a.speed, &opts)?;
        eprintln!(
            "[{}/{}] {} at {:.0} deg: success {:.0} %, falls {:.0} %, {:.2} m/s, grip {:.2}",
            i + 1,
            grid.len(),
            c.series(),
            c.tilt_deg,
            100.0 * p.success,
            100.0 * p.fall_rate,
            p.forward_speed,
            p.claw_grip
        );
        points.push(p);
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let table = format!(
        "Success against floor tilt: {} ({} episodes per point, forward at {} m/s, {}; a success: no fall, \
         speed along the command at least {MIN_SPEED} m/s and within {SPEED_TOLERANCE} of it, height gained or lost)\n\n{}",
        src.label,
        a.episodes,
        a.speed,
        if a.hold_heading {
            "holding the starting heading"
        } else {
            "yaw rate 0"
        },
        slope_curve::table(&points)
    );
    println!("{table}");
    std::fs::write(a.out.join("curve.md"), &table)?;
    std::fs::write(a.out.join("curve.csv"), slope_curve::csv(&points))?;
    let png = a.out.join("curve.png");
    slope_curve::plot(&points, &png, &format!("Slopes: {}", src.label))?;
    println!(
        "saved: {}, {} and {}",
        a.out.join("curve.md").display(),
        a.out.join("curve.csv").display(),
        png.display()
    );
    Ok(())
}
