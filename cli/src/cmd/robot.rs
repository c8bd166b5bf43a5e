//! `clawrl robot check DIR` and `clawrl robot new --mjcf FILE`: a robot description
//! (`robots/NAME/robot.toml`) checked against its MJCF, and a first one written from an MJCF.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_robot::description::RobotDescription;

/// A robot description: check one against its MJCF, or write a first one from an MJCF.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Check a description (a robots/NAME folder or its robot.toml) against its MJCF and print
    /// it as a table: every name found, actuators one to one, keyframes inside the limits, feet
    /// and IMU found. Exits 1 when it does not fit, or while its `robot.todo` list is not empty.
    Check {
        #[arg(value_name = "DIR")]
        path: PathBuf,
    },
    /// Write a first description from an MJCF: its joints, ranges, keyframes and actuators, with
    /// TODOs for what only the hardware knows (bus IDs, directions, offsets).
    New {
        #[arg(long, value_name = "FILE")]
        mjcf: PathBuf,
        /// The robot's folder; robot.toml goes in it [default: robots/STEM under the current
        /// directory, STEM the MJCF's file stem]
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Robot model name [default: the MJCF's file stem]
        #[arg(long)]
        name: Option<String>,
    },
}

pub fn run(a: Args) -> Result<()> {
    match a.command {
        Command::Check { path } => check(&path),
        Command::New { mjcf, out, name } => new(&mjcf, out, name),
    }
}

fn check(path: &Path) -> Result<()> {
    let loaded = clawrl_sim::description::load(path)?;
    let d = &loaded.description;
    println!(
        "robot {}: {} ({} servos, {} feet), MJCF {}",
        d.name,
        loaded.path.display(),
        d.servos.len(),
        d.feet.len(),
        loaded.mjcf.display()
    );
    print_servos(d);
    print_bus_order(d);
    print_parts(d);
    print_board(d);
    let todo = &loaded.file.robot.todo;
    if !todo.is_empty() {
        println!(
            "\nnot ready: robot.todo lists {} item(s) only the hardware can tell:",
            todo.len()
        );
        for t in todo {
            println!("  - {t}");
        }
        println!("(measure them, write them in, and empty the list)");
        std::process::exit(1);
    }
    println!(
        "\nOK: every name found in the MJCF, servos and actuators one to one, poses inside the limits"
    );
    Ok(())
}

fn print_servos(d: &RobotDescription) {
    println!(
        "\n| # | servo | bus ID | joint | kind | dir | offset (rad) | limits (rad) | stand | rest | model | PWM |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, s) in d.servos.iter().enumerate() {
        let pwm = s
            .pwm
            .as_ref()
            .map_or("-".to_string(), |p| format!("ch {} {}", p.channel, p.model));
        println!(
            "| {i} | {} | {} | {} | {} | {:+} | {} | [{}, {}] | {} | {} | {} | {pwm} |",
            s.name,
            s.id,
            s.joint,
            s.kind.as_str(),
            s.direction,
            s.offset_rad,
            s.limits[0],
            s.limits[1],
            s.stand,
            s.rest,
            s.model
        );
    }
}

/// The servos by bus ID: the order to wire and number them in, which differs from the action
/// order when the board numbers the bus otherwise.
fn print_bus_order(d: &RobotDescription) {
    let mut by_id: Vec<_> = d.servos.iter().map(|s| (s.id, s.name.as_str())).collect();
    by_id.sort();
    let order: Vec<String> = by_id.iter().map(|(id, n)| format!("{id} {n}")).collect();
    println!("\nbus IDs: {}", order.join(", "));
}

/// Whether clawrl's servo board can drive the robot as described (IDs, PWM channels, pulse
/// laws): what its image would be built with (firmware/board/build.rs). Not a failure when it
/// cannot: a robot may have another board.
fn print_board(d: &RobotDescription) {
    const SLOTS: usize = clawrl_runtime::controller::MAX_SERVOS;
    match clawrl_firmware::FirmwareConfig::from_description(d) {
        Ok(_) if d.servos.len() == SLOTS => println!(
            "\nboard: the clawrl servo board drives it as described (every ID, PWM channel and \
             pulse law; build its image with CLAWRL_ROBOT_DESCRIPTION, firmware/board/README.md)"
        ),
        // The MCU image's generator reads the file, not the MJCF, so it has no limits of its
        // own for another robot's joints: it takes only 16-servo descriptions (issue 41).
        Ok(_) => println!(
            "\nboard: the virtual board (HIL) drives it as described, {} of its {SLOTS} slots \
             (every ID, PWM channel and pulse law); the MCU image (firmware/board) is built for \
             {SLOTS}-servo descriptions only",
            d.servos.len()
        ),
        Err(why) => println!("\nboard: not the clawrl servo board's: {why}"),
    }
}

fn print_parts(d: &RobotDescription) {
    println!("\n| foot | body | geom | contact sensor | claw | grip actuator |");
    println!("|---|---|---|---|---|---|");
    for f in &d.feet {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            f.name,
            f.body,
            f.geom,
            f.contact_sensor,
            f.claw.as_deref().unwrap_or("-"),
            f.grip_actuator.as_deref().unwrap_or("-")
        );
    }
    let i = &d.imu;
    println!(
        "\nIMU at site {} (sensors {}, {}, {}), mounted at roll/pitch/yaw {:?} deg",
        i.site, i.quat_sensor, i.gyro_sensor, i.acc_sensor, i.mount_rpy_deg
    );
    let t = &d.trunk;
    println!(
        "trunk {} (geom {}, contact {}, velocity {}); action scale {}",
        t.body,
        t.geom,
        t.contact_sensor,
        t.velocity_sensor,
        d.action_scale
            .iter()
            .map(|(k, v)| format!("{} {v} rad", k.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn new(mjcf: &Path, out: Option<PathBuf>, name: Option<String>) -> Result<()> {
    let stem = mjcf
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the MJCF's file name")?
        .to_string();
    let name = name.unwrap_or(stem.clone());
    let out = out.unwrap_or_else(|| Path::new("robots").join(&stem));
    let file = out.join("robot.toml");
    anyhow::ensure!(
        !file.exists(),
        "{} exists: refusing to overwrite a description",
        file.display()
    );
    let model = clawrl_sim::model::load(mjcf)?;
    let facts = clawrl_sim::description::facts(&model, mjcf);
    // The description names its MJCF relative to its own folder.
    let rel = relative(&std::path::absolute(mjcf)?, &std::path::absolute(&out)?);
    let text =
        clawrl_robot::description::scaffold(&name, &rel, &facts).map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    println!(
        "wrote {} from {}: fill in its TODOs, then `clawrl robot check {}`",
        file.display(),
        mjcf.display(),
        out.display()
    );
    Ok(())
}

/// `to` relative to the folder `from` (both absolute).
fn relative(to: &Path, from: &Path) -> String {
    let t: Vec<_> = to.components().collect();
    let f: Vec<_> = from.components().collect();
    let common = t.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut p = PathBuf::new();
    for _ in common..f.len() {
        p.push("..");
    }
    for c in &t[common..] {
        p.push(c);
    }
    p.display().to_string()
}
