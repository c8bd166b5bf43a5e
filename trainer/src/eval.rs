//! Evaluation: runs a policy deterministically for N episodes and reports what matters for its
//! task (cart-pole: return and episode length; quadruped: also falls, speed, velocity tracking
//! and distance), and records one episode's joint angles and foot contacts for a gait diagram.
//!
//! The report is returned, not drawn: callers print and save it before any plot, so a plot that
//! fails never costs an evaluation.
use std::path::Path;

use anyhow::{Context, Result};
use clawrl_policy::ActionSource;
use clawrl_robot::History;
use clawrl_sim::rng::derive_seed;
use clawrl_sim::{Env, ObsSource};

use crate::config::TrainConfig;
use crate::gait::{GaitAccumulator, GaitStats};
use crate::task::make_eval_envs;
use crate::tracking::{self, Claws, Step, Tracking, ZeroCommand};

#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub episodes: usize,
    pub num_envs: usize,
    pub threads: usize,
    pub seed: u64,
    /// Fixed command (forward, lateral, yaw rate) set after every reset; `None` keeps the task's.
    pub command: Option<Vec<f32>>,
    /// With `command`: its yaw holds each episode's starting heading (the task's heading
    /// command) instead of a fixed yaw rate, as an operator steering back would.
    pub hold_heading: bool,
    /// Seconds of the first episode of environment 0 to record for the gait diagram.
    pub gait_seconds: f64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            episodes: 100,
            num_envs: 16,
            threads: 2,
            seed: 12345,
            command: None,
            hold_heading: false,
            gait_seconds: 4.0,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct EpisodeResult {
    pub ret: f64,
    pub length: usize,
    pub fell: bool,
    /// Mean |v_xy − command_xy| over the episode (NaN for tasks without a command).
    pub tracking_error: f64,
    /// Mean forward speed, m/s.
    pub forward_speed: f64,
    /// Mean commanded forward speed, m/s.
    pub command_speed: f64,
    /// Horizontal distance from start to end, m.
    pub distance: f64,
    /// Height gained from start to end (world z), m: on a slope, whether the robot went up
    /// or down it, whichever way its body faced.
    pub rise: f64,
    /// Tracking errors of the body velocity averaged over a sliding [`tracking::WINDOW_S`]
    /// window against the window-mean command (NaN for tasks without a command).
    pub tracking_windowed: Tracking,
    /// Mean |yaw rate − commanded yaw rate|, rad/s (NaN for tasks without a command).
    pub yaw_error: f64,
    /// Mean yaw rate and mean commanded yaw rate, rad/s.
    pub yaw_rate: f64,
    pub command_yaw_rate: f64,
    /// Drift and steps while the command was zero (after the first [`GAIT_SKIP_S`]).
    pub zero_command: ZeroCommand,
    /// The claws' grip and travel (after the first [`GAIT_SKIP_S`]).
    pub claws: Claws,
}

/// Seconds at the start of each episode left out of the gait metrics: the robot gets up from
/// its stand pose (or a settled stand) there, which is no gait.
pub const GAIT_SKIP_S: f64 = 1.0;

/// Which report a task gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReportKind {
    /// Return and episode length (cart-pole: no command, no feet).
    #[default]
    Balance,
    /// Also falls, speed, velocity tracking, distance and gait (quadruped tasks).
    Locomotion,
}

#[derive(Debug, Clone, Default)]
pub struct EvalReport {
    pub kind: ReportKind,
    pub episodes: Vec<EpisodeResult>,
    /// The first episode's joint angles and contacts, for the gait diagram.
    pub gait: Option<Gait>,
    /// Duty factors, stride periods, phases and the gait's name, pooled over every episode
    /// (each after its first [`GAIT_SKIP_S`]); quadruped tasks only.
    pub gait_stats: Option<GaitStats>,
    /// Names of the recorded joints and feet, in the gait's column order.
    pub joint_names: Vec<String>,
    pub foot_names: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Gait {
    pub time: Vec<f64>,
    pub joints: Vec<Vec<f64>>,
    pub contacts: Vec<Vec<bool>>,
}

fn avg(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { s / n as f64 }
}

impl EvalReport {
    pub fn mean_return(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.ret))
    }
    pub fn mean_length(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.length as f64))
    }
    pub fn fall_rate(&self) -> f64 {
        avg(self.episodes.iter().map(|e| if e.fell { 1.0 } else { 0.0 }))
    }
    pub fn tracking_error(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.tracking_error))
    }
    pub fn forward_speed(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.forward_speed))
    }
    pub fn command_speed(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.command_speed))
    }
    pub fn distance(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.distance))
    }
    /// Mean over episodes of the sliding-window tracking errors (m/s, rad/s).
    pub fn tracking_windowed(&self) -> Tracking {
        Tracking {
            linear: avg(self.episodes.iter().map(|e| e.tracking_windowed.linear)),
            yaw: avg(self.episodes.iter().map(|e| e.tracking_windowed.yaw)),
        }
    }
    pub fn yaw_error(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.yaw_error))
    }
    pub fn yaw_rate(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.yaw_rate))
    }
    pub fn command_yaw_rate(&self) -> f64 {
        avg(self.episodes.iter().map(|e| e.command_yaw_rate))
    }
    /// Zero-command drift and steps, pooled over every episode.
    pub fn zero_command(&self) -> ZeroCommand {
        let mut z = ZeroCommand::default();
        for e in &self.episodes {
            z.add(&e.zero_command);
        }
        z
    }
    /// The claws' activity, pooled over every episode.
    pub fn claws(&self) -> Claws {
        let mut c = Claws::default();
        for e in &self.episodes {
            c.add(&e.claws);
        }
        c
    }

    /// The lines [`Self::text`] adds for velocity tracking, zero command and claws.
    fn locomotion_lines(&self) -> String {
        let w = self.tracking_windowed();
        let z = self.zero_command();
        let c = self.claws();
        let zero = if z.seconds > 0.0 {
            format!(
                "drift {:.3} m per {:.0} s, {:.2} steps per foot per s ({} touch-downs in {:.1} s)",
                z.drift_per_20s(),
                tracking::DRIFT_PER_S,
                z.steps_per_foot_s(),
                z.touchdowns,
                z.seconds
            )
        } else {
            "- (never commanded)".to_string()
        };
        format!(
            "yaw rate            {:.3} rad/s (command {:.3} rad/s)\ntracking error      {:.3} m/s, yaw rate {:.3} rad/s (instantaneous)\ntracking error (0.5 s mean) {:.3} m/s, yaw rate {:.3} rad/s\nat zero command     {zero}\nclaws               grip {:.3} (0 open, 1 closed), grip travel {:.3} /s, claw joints {:.3} rad/s per claw",
            self.yaw_rate(),
            self.command_yaw_rate(),
            self.tracking_error(),
            self.yaw_error(),
            w.linear,
            w.yaw,
            c.mean_grip(),
            c.grip_travel_per_s(),
            c.joint_travel_per_s(),
        )
    }

    pub fn text(&self) -> String {
        let std = {
            let m = self.mean_return();
            avg(self.episodes.iter().map(|e| (e.ret - m).powi(2))).sqrt()
        };
        if self.kind == ReportKind::Balance {
            return format!(
                "episodes            {}\nmean return         {:.3} (std {:.3})\nmean episode length {:.1}\nended early         {:.1} % (failure before the time limit)",
                self.episodes.len(),
                self.mean_return(),
                std,
                self.mean_length(),
                100.0 * self.fall_rate(),
            );
        }
        let gait = self
            .gait_stats
            .as_ref()
            .map(|g| format!("\n{}", g.text(&self.foot_names)))
            .unwrap_or_default();
        format!(
            "episodes            {}\nmean return         {:.3} (std {:.3})\nmean episode length {:.1}\nfall rate           {:.1} %\nforward speed       {:.3} m/s (command {:.3} m/s)\n{}\ndistance walked     {:.2} m{gait}",
            self.episodes.len(),
            self.mean_return(),
            std,
            self.mean_length(),
            100.0 * self.fall_rate(),
            self.forward_speed(),
            self.command_speed(),
            self.locomotion_lines(),
            self.distance()
        )
    }
}

/// The report's numbers, for scripts (`eval.toml` beside `eval.txt`): NaN where a number does
/// not apply (a task without a command, no zero command, no feet).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub episodes: usize,
    pub mean_return: f64,
    pub mean_episode_length: f64,
    /// Share of episodes that ended in a fall (or early, for cart-pole), in [0, 1].
    pub fall_rate: f64,
    pub forward_speed_mps: f64,
    pub command_speed_mps: f64,
    pub yaw_rate_radps: f64,
    pub command_yaw_rate_radps: f64,
    /// Instantaneous tracking errors (every control step).
    pub tracking_error_mps: f64,
    pub yaw_error_radps: f64,
    /// Tracking errors of the 0.5 s window means.
    pub tracking_error_0_5s_mps: f64,
    pub yaw_error_0_5s_radps: f64,
    pub distance_m: f64,
    pub zero_command_s: f64,
    pub drift_m_per_20s: f64,
    pub zero_command_steps_per_foot_s: f64,
    pub claw_grip_mean: f64,
    pub claw_grip_travel_per_s: f64,
    pub claw_joint_travel_radps: f64,
    /// The gait's name ("" for tasks without feet), and whether it is the regular trot.
    pub gait: String,
    pub regular_trot: bool,
    /// Per foot, in the order of `feet`.
    pub feet: Vec<String>,
    pub duty_factors: Vec<f64>,
    pub phases: Vec<f64>,
}

impl EvalReport {
    pub fn summary(&self) -> Summary {
        let w = self.tracking_windowed();
        let z = self.zero_command();
        let c = self.claws();
        let g = self.gait_stats.as_ref();
        Summary {
            episodes: self.episodes.len(),
            mean_return: self.mean_return(),
            mean_episode_length: self.mean_length(),
            fall_rate: self.fall_rate(),
            forward_speed_mps: self.forward_speed(),
            command_speed_mps: self.command_speed(),
            yaw_rate_radps: self.yaw_rate(),
            command_yaw_rate_radps: self.command_yaw_rate(),
            tracking_error_mps: self.tracking_error(),
            yaw_error_radps: self.yaw_error(),
            tracking_error_0_5s_mps: w.linear,
            yaw_error_0_5s_radps: w.yaw,
            distance_m: self.distance(),
            zero_command_s: z.seconds,
            drift_m_per_20s: z.drift_per_20s(),
            zero_command_steps_per_foot_s: z.steps_per_foot_s(),
            claw_grip_mean: c.mean_grip(),
            claw_grip_travel_per_s: c.grip_travel_per_s(),
            claw_joint_travel_radps: c.joint_travel_per_s(),
            gait: g.map(|g| g.kind().name().to_string()).unwrap_or_default(),
            regular_trot: g.is_some_and(GaitStats::regular_trot),
            feet: self.foot_names.clone(),
            duty_factors: g
                .map(|g| g.feet.iter().map(|f| f.duty_factor).collect())
                .unwrap_or_default(),
            phases: g
                .map(|g| g.feet.iter().map(|f| f.phase.unwrap_or(f64::NAN)).collect())
                .unwrap_or_default(),
        }
    }

    /// [`Self::summary`] as TOML (`eval.toml`).
    pub fn summary_toml(&self) -> Result<String> {
        toml::to_string(&self.summary()).context("writing the evaluation summary as TOML")
    }

    /// One row per episode (CSV with a header), the raw numbers behind [`EvalReport::text`].
    pub fn episodes_csv(&self) -> String {
        let mut s = match self.kind {
            ReportKind::Balance => "episode,return,length,ended_early\n".to_string(),
            ReportKind::Locomotion => "episode,return,length,fell,tracking_error_mps,forward_speed_mps,command_speed_mps,distance_m,tracking_error_0_5s_mps,yaw_error_radps,yaw_error_0_5s_radps,yaw_rate_radps,command_yaw_rate_radps,zero_command_s,zero_command_drift_m,zero_command_touchdowns,claw_grip_mean,rise_m\n".to_string(),
        };
        for (i, e) in self.episodes.iter().enumerate() {
            let line = match self.kind {
                ReportKind::Balance => format!("{i},{},{},{}\n", e.ret, e.length, u8::from(e.fell)),
                ReportKind::Locomotion => format!(
                    "{i},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    e.ret,
                    e.length,
                    u8::from(e.fell),
                    e.tracking_error,
                    e.forward_speed,
                    e.command_speed,
                    e.distance,
                    e.tracking_windowed.linear,
                    e.yaw_error,
                    e.tracking_windowed.yaw,
                    e.yaw_rate,
                    e.command_yaw_rate,
                    e.zero_command.seconds,
                    e.zero_command.drift_m,
                    e.zero_command.touchdowns,
                    e.claws.mean_grip(),
                    e.rise
                ),
            };
            s.push_str(&line);
        }
        s
    }

    /// Draws the recorded gait (quadruped tasks only).
    pub fn plot_gait(&self, path: &Path, title: &str) -> Result<()> {
        let gait = self
            .gait
            .as_ref()
            .filter(|g| !g.time.is_empty())
            .context("no gait was recorded")?;
        crate::metrics::plot_gait(
            &gait.time,
            &gait.joints,
            &gait.contacts,
            &self.joint_names,
            &self.foot_names,
            path,
            title,
        )
    }
}

#[derive(Default, Clone)]
struct Running {
    ret: f64,
    steps: usize,
    err: f64,
    speed: f64,
    cmd: f64,
    start: [f64; 3],
    active: bool,
    /// Foot contacts of the episode so far (quadruped), one row per control step: steps taken
    /// at zero command.
    contacts: Vec<Vec<bool>>,
    /// The same at the physics rate (`fine_per_step` rows per control step): the gait metrics.
    fine_contacts: Vec<Vec<bool>>,
    fine_per_step: usize,
    /// Velocity, command and position at every step (tasks with a command).
    trace: Vec<Step>,
    /// Claw grip and claw joint angles at every step (tasks with claws).
    grip: Vec<Vec<f64>>,
    claw_angles: Vec<Vec<f64>>,
}

/// Adds one control step's physics-rate contacts (or, from a task that does not report them,
/// the step's own contact row) to the episode's fine record.
fn push_fine_contacts(st: &mut Running, substeps: Vec<Vec<bool>>, step: &[bool]) {
    let rows = if substeps.is_empty() {
        vec![step.to_vec()]
    } else {
        substeps
    };
    // A step whose row count differs from the episode's would skew the sample period.
    if st.fine_per_step == 0 {
        st.fine_per_step = rows.len();
    }
    if rows.len() == st.fine_per_step {
        st.fine_contacts.extend(rows);
    }
}

/// Runs `policy` (deterministic actions; local or remote) on the run's task for
/// `opts.episodes` episodes.
pub fn evaluate(
    cfg: &TrainConfig,
    policy: &dyn ActionSource,
    opts: &EvalOptions,
) -> Result<EvalReport> {
    let m = opts.num_envs.clamp(1, opts.episodes.max(1));
    let mut envs = make_eval_envs(cfg, m)?;
    let obs_layout: ObsSource = policy.policy_config().obs_source;
    let d = envs[0].spec().obs_dim(obs_layout);
    // Students read a stack of past frames; a slot's stack restarts with each episode.
    let mut history = History::new(m, d, policy.policy_config().history);
    let mut fresh = vec![true; m];
    let na = envs[0].spec().action_dim;
    let dt = envs[0].spec().control_dt;
    let window = tracking::window_steps(dt);
    let claw_joints: Vec<usize> = (envs[0].spec().action_names.iter().enumerate())
        .filter(|(_, n)| n.to_lowercase().contains("claw"))
        .map(|(i, _)| i)
        .collect();
    let mut started = 0usize;
    let mut state = vec![Running::default(); m];
    let mut report = EvalReport {
        kind: if cfg.is_cartpole() {
            ReportKind::Balance
        } else {
            ReportKind::Locomotion
        },
        joint_names: envs[0].spec().action_names.clone(),
        foot_names: envs[0].spec().foot_names.clone(),
        ..Default::default()
    };
    let mut gait = Gait::default();
    let mut gait_acc = GaitAccumulator::default();
    let mut recording = opts.gait_seconds > 0.0;
    let start_episode = |env: &mut Box<dyn Env>, k: usize, st: &mut Running| -> Result<()> {
        env.reset_in_place(derive_seed(opts.seed, k as u64));
        if let Some(c) = &opts.command {
            env.set_command(c)?;
            if opts.hold_heading {
                env.hold_heading()?;
            }
        }
        let t = env.telemetry();
        *st = Running {
            start: t.base_pos,
            active: true,
            ..Default::default()
        };
        Ok(())
    };
    for (i, env) in envs.iter_mut().enumerate() {
        start_episode(env, i, &mut state[i])?;
        started += 1;
    }
    let mut obs = vec![0.0f32; m * d];
    let mut results: Vec<Option<(f32, bool, bool)>> = vec![None; m];
    while state.iter().any(|s| s.active) {
        for (i, env) in envs.iter().enumerate() {
            env.observe(obs_layout, &mut obs[i * d..(i + 1) * d]);
        }
        history.push(&obs, &fresh);
        fresh.fill(false);
        let actions = policy.actions(history.as_slice())?;
        let chunk = m.div_ceil(opts.threads.max(1));
        std::thread::scope(|s| {
            for ((envs, res), (acts, st)) in envs
                .chunks_mut(chunk)
                .zip(results.chunks_mut(chunk))
                .zip(actions.chunks(chunk * na).zip(state.chunks(chunk)))
            {
                s.spawn(move || {
                    for (k, env) in envs.iter_mut().enumerate() {
                        res[k] = if st[k].active {
                            env.step_in_place(&acts[k * na..(k + 1) * na]).ok()
                        } else {
                            None
                        };
                    }
                });
            }
        });
        for i in 0..m {
            if !state[i].active {
                continue;
            }
            let (reward, terminated, truncated) = results[i]
                .ok_or_else(|| anyhow::anyhow!("environment {i} refused the policy's action"))?;
            let t = envs[i].telemetry();
            let st = &mut state[i];
            st.ret += f64::from(reward);
            st.steps += 1;
            st.speed += t.base_lin_vel[0];
            if t.command.len() >= 2 {
                let (cx, cy) = (f64::from(t.command[0]), f64::from(t.command[1]));
                st.err +=
                    ((t.base_lin_vel[0] - cx).powi(2) + (t.base_lin_vel[1] - cy).powi(2)).sqrt();
                st.cmd += cx;
            } else {
                st.err = f64::NAN;
                st.cmd = f64::NAN;
            }
            if !t.foot_contact.is_empty() {
                st.contacts.push(t.foot_contact.clone());
                push_fine_contacts(st, t.foot_contact_substeps, &t.foot_contact);
            }
            if !t.command.is_empty() {
                let c = |k: usize| t.command.get(k).map_or(0.0, |&x| f64::from(x));
                st.trace.push(Step {
                    vel: [t.base_lin_vel[0], t.base_lin_vel[1], t.yaw_rate],
                    command: [c(0), c(1), c(2)],
                    pos: [t.base_pos[0], t.base_pos[1]],
                });
            }
            if !t.grip.is_empty() {
                st.grip.push(t.grip.clone());
                st.claw_angles.push(
                    claw_joints
                        .iter()
                        .filter_map(|&j| t.joint_pos.get(j).copied())
                        .collect(),
                );
            }
            if i == 0 && recording {
                gait.time.push(st.steps as f64 * dt);
                gait.joints.push(t.joint_pos.clone());
                gait.contacts.push(t.foot_contact.clone());
                if st.steps as f64 * dt >= opts.gait_seconds {
                    recording = false;
                }
            }
            if terminated || truncated {
                if i == 0 {
                    recording = false;
                }
                let n = st.steps as f64;
                let fine_dt = dt / st.fine_per_step.max(1) as f64;
                let skip = ((GAIT_SKIP_S / fine_dt).round() as usize).min(st.fine_contacts.len());
                gait_acc.add_episode(&st.fine_contacts[skip..], fine_dt);
                // Tracking counts every step (transients included); drift, steps and claws
                // leave out the getting up, as the gait metrics do.
                let trace = &st.trace[..];
                let inst = tracking::instantaneous(trace);
                let tskip = ((GAIT_SKIP_S / dt).round() as usize).min(trace.len());
                let zero_command = if st.contacts.len() == trace.len() {
                    ZeroCommand::of(&trace[tskip..], &st.contacts[tskip..], dt)
                } else {
                    ZeroCommand::of(&trace[tskip..], &[], dt)
                };
                let gskip = ((GAIT_SKIP_S / dt).round() as usize).min(st.grip.len());
                let claws = Claws::of(&st.grip[gskip..], &st.claw_angles[gskip..], dt);
                report.episodes.push(EpisodeResult {
                    ret: st.ret,
                    length: st.steps,
                    fell: terminated,
                    tracking_error: st.err / n,
                    forward_speed: st.speed / n,
                    command_speed: st.cmd / n,
                    rise: t.base_pos[2] - st.start[2],
                    distance: ((t.base_pos[0] - st.start[0]).powi(2)
                        + (t.base_pos[1] - st.start[1]).powi(2))
                    .sqrt(),
                    tracking_windowed: tracking::windowed(trace, window),
                    yaw_error: inst.yaw,
                    yaw_rate: avg(trace.iter().map(|s| s.vel[2])),
                    command_yaw_rate: avg(trace.iter().map(|s| s.command[2])),
                    zero_command,
                    claws,
                });
                if started < opts.episodes {
                    start_episode(&mut envs[i], started, &mut state[i])?;
                    fresh[i] = true;
                    started += 1;
                } else {
                    state[i].active = false;
                }
            }
        }
    }
    report.gait = Some(gait);
    if report.kind == ReportKind::Locomotion {
        report.gait_stats = Some(gait_acc.stats());
    }
    Ok(report)
}
