//! `clawrl simulate`: stand the robot on its servos and report what happened.
use std::fmt::Write;
use std::time::Instant;

use super::{NUM_FEET, QuadrupedEnv, TaskConfig};
use crate::{Env, SimError};

/// Holds the default pose (zero action) for `seconds` and reports height, drift, tilt, foot
/// contacts, the episode's reward terms, and how fast the simulation ran.
pub fn simulate_report(cfg: &TaskConfig, seconds: f64, seed: u64) -> Result<String, SimError> {
    let mut env = QuadrupedEnv::new(cfg)?;
    env.reset(seed);
    let start = env.telemetry();
    let steps = (seconds / env.spec().control_dt).round() as usize;
    let zero = vec![0.0f32; env.spec().action_dim];
    let mut contact_steps = [0usize; NUM_FEET];
    let mut min_height = f64::INFINITY;
    let mut ended = None;
    let clock = Instant::now();
    for t in 0..steps {
        let (_, terminated, truncated) = env.step_in_place(&zero)?;
        let tel = env.telemetry();
        for (c, on) in contact_steps.iter_mut().zip(&tel.foot_contact) {
            *c += usize::from(*on);
        }
        min_height = min_height.min(env.height());
        if terminated || truncated {
            ended = Some((t + 1, terminated));
            break;
        }
    }
    let wall = clock.elapsed().as_secs_f64();
    let end = env.telemetry();
    let done = ended.map_or(steps, |(t, _)| t);
    let physics_steps = done * cfg.env.decimation;
    let drift = ((end.base_pos[0] - start.base_pos[0]).powi(2)
        + (end.base_pos[1] - start.base_pos[1]).powi(2))
    .sqrt();

    let mut r = String::new();
    let p = env.params();
    let _ = writeln!(
        r,
        "clawrl simulate: {} ({} servos), {}",
        env.robot().name,
        env.spec().action_dim,
        env.robot().file.display()
    );
    let _ = writeln!(
        r,
        "  episode seed {seed}: friction {:.2}, payload {:+.2} kg, servo strength {:.2}, latency {} substeps, slope {:.1} deg",
        p.friction,
        p.torso_added_mass,
        p.servo_strength,
        p.latency_substeps,
        p.slope.to_degrees()
    );
    let _ = writeln!(
        r,
        "  held the default pose for {:.2} s of {seconds:.2} s ({done} control steps, {physics_steps} physics steps)",
        done as f64 * env.spec().control_dt
    );
    let _ = writeln!(
        r,
        "  torso height: start {:.3} m, end {:.3} m, lowest {:.3} m",
        start.base_pos[2],
        env.height(),
        min_height
    );
    let _ = writeln!(r, "  horizontal drift {:.3} m", drift);
    let share: Vec<String> = contact_steps
        .iter()
        .map(|c| format!("{:.0}%", 100.0 * *c as f64 / done.max(1) as f64))
        .collect();
    let _ = writeln!(r, "  foot contact (FL FR RL RR): {}", share.join(" "));
    let verdict = match ended {
        Some((t, true)) => format!("FELL after {t} steps"),
        _ => "stood".to_string(),
    };
    let _ = writeln!(r, "  result: {verdict}");
    let log = env.episode_log();
    let terms: Vec<String> = log
        .terms
        .iter()
        .map(|(n, v)| format!("{n} {v:+.3}"))
        .collect();
    let _ = writeln!(r, "  reward {:+.3}: {}", log.total, terms.join(", "));
    let _ = writeln!(
        r,
        "  speed: {:.0} physics steps/s ({:.0}x real time) on one thread",
        physics_steps as f64 / wall,
        done as f64 * env.spec().control_dt / wall
    );
    Ok(r)
}
