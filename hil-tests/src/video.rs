//! `clawrl hil --video DIR`: each scenario's body as the loop drove it, redrawn from the poses
//! its trace recorded (one per control period) by MuJoCo's renderer, as a GIF.
//!
//! Redrawn after the run, not during it: a frame takes tens of milliseconds in software, which
//! a real-time loop (and a real board's clock) cannot wait.
use std::path::Path;

use anyhow::{Context, Result};
use clawrl_render::{FrameSkip, Video, View};
use clawrl_sim::Env;
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};
use mujoco_rs::prelude::*;

use crate::line::{Sample, Trace};

/// How a trace is filmed.
#[derive(Debug, Clone)]
pub struct Film<'a> {
    pub task: &'a TaskConfig,
    /// The run's episode seed: the body is the task's robot reset with it.
    pub seed: u64,
    /// The scenario's command, written on each frame.
    pub command: [f64; 3],
    pub size: (u32, u32),
    /// Frames per simulated second (about: a whole number of control periods each).
    pub fps: f64,
}

/// Writes `trace` as a GIF with the command, the measured velocity and the safety state on
/// each frame. Returns the number of frames.
pub fn film(trace: &Trace, f: &Film, file: &Path) -> Result<usize> {
    let (task, seed, command, (width, height), fps) = (f.task, f.seed, f.command, f.size, f.fps);
    anyhow::ensure!(
        trace.qpos.len() == trace.samples.len(),
        "the trace holds {} poses for {} samples",
        trace.qpos.len(),
        trace.samples.len()
    );
    let period_s = period(&trace.samples).context("a trace of fewer than 2 samples")?;
    let mut env = QuadrupedEnv::new(task).context("building the body to draw")?;
    env.reset_in_place(seed);
    let model = env.data().model();
    let mut data = MjData::new(model);
    // The floor's tilt lives in the episode's data (a mocap body), not in the model.
    data.mocap_quat_mut()[0] = env.data().mocap_quat()[0];
    let skip = FrameSkip::for_fps(period_s, fps);
    let mut video = Video::create(
        file,
        model,
        (width, height),
        skip,
        period_s,
        &View::default(),
    )?;
    for (q, s) in trace.qpos.iter().zip(&trace.samples) {
        anyhow::ensure!(
            q.len() == data.qpos().len(),
            "a pose of {} numbers for a body of {}",
            q.len(),
            data.qpos().len()
        );
        data.qpos_mut().copy_from_slice(q);
        // Positions only: the kinematics place every body and geom for drawing.
        data.forward();
        video.offer(&data, || caption(command, s))?;
    }
    let frames = video.frames();
    video.finish()?;
    Ok(frames)
}

/// The control period: samples are one a period.
fn period(samples: &[Sample]) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    (samples.len() >= 2).then(|| (last.t - first.t) / (samples.len() - 1) as f64)
}

fn caption(c: [f64; 3], s: &Sample) -> (String, String) {
    let v = s.base_lin_vel;
    (
        "command\nmeasured\ntime\nstate".into(),
        format!(
            "vx {:.2} vy {:.2} yaw {:.2}\nvx {:.2} vy {:.2} yaw {:.2}\n{:.1} s (m/s, rad/s)\n{:?}",
            c[0], c[1], c[2], v[0], v[1], s.yaw_rate, s.t, s.state
        ),
    )
}
