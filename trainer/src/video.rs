//! `clawrl eval --video`: one episode of a policy, drawn by MuJoCo's renderer into a GIF with
//! the command and the measured velocity on each frame.
//!
//! The episode is eval's first (the same seed, command and task settings), stepped here on its
//! own: rendering is slow next to physics, and the evaluation's numbers must not wait for it.
use std::path::PathBuf;

use anyhow::{Context, Result};
use clawrl_policy::ActionSource;
use clawrl_render::{FrameSkip, Video, View};
use clawrl_robot::History;
use clawrl_sim::quadruped::QuadrupedEnv;
use clawrl_sim::rng::derive_seed;
use clawrl_sim::{Env, Telemetry};
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::TrainConfig;

#[derive(Debug, Clone)]
pub struct VideoOptions {
    pub file: PathBuf,
    pub width: u32,
    pub height: u32,
    /// Frames per second of simulated time (the frame skip is the nearest whole number of
    /// control steps).
    pub fps: f64,
    /// Longest clip, in simulated seconds (an episode that ends sooner ends it).
    pub seconds: f64,
    /// Eval's seed: the clip is its episode 0.
    pub seed: u64,
    pub command: Option<Vec<f32>>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoSummary {
    pub file: PathBuf,
    pub frames: usize,
    pub steps: usize,
    pub skip: FrameSkip,
}

/// Records episode 0 of `policy` on the run's (quadruped) task.
pub fn record_episode(
    cfg: &TrainConfig,
    policy: &dyn ActionSource,
    opts: &VideoOptions,
) -> Result<VideoSummary> {
    let task = cfg
        .task
        .as_ref()
        .context("--video: only the quadruped tasks have a body to film")?;
    // As `clawrl eval` measures: episode 0 is the episode eval's numbers include.
    let task = crate::task::measured(task);
    let mut env = QuadrupedEnv::new(&task).context("building the task to film")?;
    env.reset_in_place(derive_seed(opts.seed, 0));
    if let Some(c) = &opts.command {
        env.set_command(c)?;
    }
    let spec = env.spec().clone();
    let skip = FrameSkip::for_fps(spec.control_dt, opts.fps);
    let steps = ((opts.seconds / spec.control_dt).round() as usize).min(spec.max_episode_steps);
    let mut video = Video::create(
        &opts.file,
        env.data().model(),
        (opts.width, opts.height),
        skip,
        spec.control_dt,
        &View::default(),
    )?;
    let layout = policy.policy_config().obs_source;
    let d = spec.obs_dim(layout);
    let mut history = History::new(1, d, policy.policy_config().history);
    let mut obs = vec![0.0f32; d];
    let bar = progress(skip.frames(steps), &opts.file);
    let mut taken = 0;
    while taken < steps {
        if video.offer(env.data(), || caption(&env.telemetry()))? {
            bar.inc(1);
        }
        env.observe(layout, &mut obs);
        history.push(&obs, &[taken == 0]);
        let action = policy.actions(history.as_slice())?;
        let (_, terminated, truncated) = env.step_in_place(&action)?;
        taken += 1;
        if terminated || truncated {
            break;
        }
    }
    bar.finish_and_clear();
    let frames = video.frames();
    let file = video.finish()?;
    Ok(VideoSummary {
        file,
        frames,
        steps: taken,
        skip,
    })
}

/// The overlay: what the robot is told (vx, vy, yaw rate) and what it does, and the time.
fn caption(t: &Telemetry) -> (String, String) {
    let c = |k: usize| t.command.get(k).copied().map_or(0.0, f64::from);
    let labels = "command\nmeasured\ntime".to_string();
    let values = format!(
        "vx {:.2} vy {:.2} yaw {:.2}\nvx {:.2} vy {:.2} yaw {:.2}\n{:.1} s (m/s, rad/s)",
        c(0),
        c(1),
        c(2),
        t.base_lin_vel[0],
        t.base_lin_vel[1],
        t.yaw_rate,
        t.time
    );
    (labels, values)
}

/// A progress line on a terminal (none when stderr is a file or a pipe).
fn progress(frames: usize, file: &std::path::Path) -> ProgressBar {
    let bar = ProgressBar::new(frames as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "rendering {msg} [{bar:25.cyan/blue}] {pos}/{len} frames (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(file.display().to_string());
    bar
}
