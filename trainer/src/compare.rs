//! `clawrl compare`: a teacher and a student on the same states. A live rollout (driven by the
//! student, or by the teacher) visits states; on each, both policies' action distributions are
//! computed from their own observations of that state (privileged for a teacher, onboard with
//! history for a student). Reported per joint: KL(teacher || student) and the error of the
//! student's deterministic action; and for each policy its own return and fall rate.
use std::path::Path;

use anyhow::{Context, Result};
use clawrl_policy::ActionSource;
use clawrl_robot::History;
use clawrl_sim::rng::derive_seed;
use plotters::prelude::*;

use crate::algorithms::distill::per_joint_kl;
use crate::config::TrainConfig;
use crate::eval::{EvalOptions, EvalReport, evaluate};
use crate::metrics::register_font;
use crate::task::make_eval_envs;

#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// Episodes of the shared rollout, and of each policy's own evaluation.
    pub episodes: usize,
    pub num_envs: usize,
    pub threads: usize,
    pub seed: u64,
    /// Which policy acts in the shared rollout.
    pub drive_with_teacher: bool,
    /// Seconds of the first episode recorded for the time-series plot.
    pub series_seconds: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            episodes: 20,
            num_envs: 10,
            threads: 2,
            seed: 777,
            drive_with_teacher: false,
            series_seconds: 4.0,
        }
    }
}

pub struct CompareReport {
    pub joint_names: Vec<String>,
    /// Mean over visited states, per joint.
    pub kl: Vec<f64>,
    pub action_error: Vec<f64>,
    pub states: usize,
    pub teacher: EvalReport,
    pub student: EvalReport,
    /// The first episode of environment 0: time, teacher actions, student actions.
    pub series: (Vec<f64>, Vec<Vec<f32>>, Vec<Vec<f32>>),
    pub driver: &'static str,
}

/// One policy's deterministic mean and log-std on a batch of raw observation frames.
struct Side<'a> {
    policy: &'a dyn ActionSource,
    history: History,
    frame: Vec<f32>,
}

impl<'a> Side<'a> {
    fn new(policy: &'a dyn ActionSource, m: usize, frame_dim: usize) -> Self {
        Self {
            policy,
            history: History::new(m, frame_dim, policy.policy_config().history),
            frame: vec![0.0; m * frame_dim],
        }
    }

    fn distribution(&mut self, fresh: &[bool]) -> Result<(Vec<f32>, Vec<f32>)> {
        self.history.push(&self.frame, fresh);
        let g = self.policy.gaussians(self.history.as_slice())?;
        Ok((g.mean, g.log_std))
    }
}

pub fn compare(
    cfg: &TrainConfig,
    teacher: &dyn ActionSource,
    student: &dyn ActionSource,
    opts: &CompareOptions,
) -> Result<CompareReport> {
    let m = opts.num_envs.clamp(1, opts.episodes.max(1));
    let mut envs = make_eval_envs(cfg, m)?;
    let spec = envs[0].spec().clone();
    let na = spec.action_dim;
    anyhow::ensure!(
        teacher.policy_config().action_dim == na && student.policy_config().action_dim == na,
        "both policies must act on the task's {na} actions"
    );
    let (ts, ss) = (
        teacher.policy_config().obs_source,
        student.policy_config().obs_source,
    );
    let mut t = Side::new(teacher, m, spec.obs_dim(ts));
    let mut s = Side::new(student, m, spec.obs_dim(ss));
    for (side, src) in [(&t, ts), (&s, ss)] {
        anyhow::ensure!(
            side.policy.policy_config().frame_dim() == spec.obs_dim(src),
            "a policy reads {} values of {src:?} observation per frame, the task gives {}",
            side.policy.policy_config().frame_dim(),
            spec.obs_dim(src)
        );
    }
    let (mut kl, mut err) = (vec![0.0; na], vec![0.0; na]);
    let mut states = 0usize;
    let mut series = (Vec::new(), Vec::new(), Vec::new());
    let mut recording = true;
    let mut fresh = vec![true; m];
    let (mut started, mut finished) = (0usize, 0usize);
    for (i, env) in envs.iter_mut().enumerate() {
        env.reset_in_place(derive_seed(opts.seed, i as u64));
        started += 1;
    }
    let mut active = vec![true; m];
    while finished < opts.episodes && active.iter().any(|&a| a) {
        for (i, env) in envs.iter().enumerate() {
            let (dt, ds) = (spec.obs_dim(ts), spec.obs_dim(ss));
            env.observe(ts, &mut t.frame[i * dt..(i + 1) * dt]);
            env.observe(ss, &mut s.frame[i * ds..(i + 1) * ds]);
        }
        let (tm, tls) = t.distribution(&fresh)?;
        let (sm, sls) = s.distribution(&fresh)?;
        fresh.fill(false);
        for i in (0..m).filter(|&i| active[i]) {
            let r = i * na..(i + 1) * na;
            let k = per_joint_kl(
                &tm[r.clone()],
                &tls[r.clone()],
                &sm[r.clone()],
                &sls[r.clone()],
            );
            for j in 0..na {
                kl[j] += k[j];
                err[j] += f64::from((tm[r.start + j] - sm[r.start + j]).abs());
            }
            states += 1;
        }
        if recording {
            let time = series.0.len() as f64 * spec.control_dt;
            series.0.push(time);
            series.1.push(tm[..na].to_vec());
            series.2.push(sm[..na].to_vec());
            recording = time < opts.series_seconds;
        }
        let actions = if opts.drive_with_teacher { &tm } else { &sm };
        for i in 0..m {
            if !active[i] {
                continue;
            }
            let (_, terminated, truncated) = envs[i]
                .step_in_place(&actions[i * na..(i + 1) * na])
                .with_context(|| format!("environment {i} refused an action"))?;
            if terminated || truncated {
                finished += 1;
                if i == 0 {
                    recording = false;
                }
                if started < opts.episodes {
                    envs[i].reset_in_place(derive_seed(opts.seed, started as u64));
                    started += 1;
                    fresh[i] = true;
                } else {
                    active[i] = false;
                }
            }
        }
    }
    let n = states.max(1) as f64;
    let eo = EvalOptions {
        episodes: opts.episodes,
        num_envs: opts.num_envs,
        threads: opts.threads,
        seed: opts.seed,
        gait_seconds: 0.0,
        ..Default::default()
    };
    Ok(CompareReport {
        joint_names: spec.action_names.clone(),
        kl: kl.iter().map(|x| x / n).collect(),
        action_error: err.iter().map(|x| x / n).collect(),
        states,
        teacher: evaluate(cfg, teacher, &eo)?,
        student: evaluate(cfg, student, &eo)?,
        series,
        driver: if opts.drive_with_teacher {
            "teacher"
        } else {
            "student"
        },
    })
}

impl CompareReport {
    pub fn text(&self, teacher: &str, student: &str) -> String {
        let mut out = format!(
            "teacher {teacher}\nstudent {student}\n{} states of a rollout driven by the {}\n\n| joint | KL(teacher || student) | action error |\n|---|---|---|\n",
            self.states, self.driver
        );
        for (j, name) in self.joint_names.iter().enumerate() {
            out += &format!(
                "| {name} | {:.4} | {:.4} |\n",
                self.kl[j], self.action_error[j]
            );
        }
        let sum_kl: f64 = self.kl.iter().sum();
        let mean_err = self.action_error.iter().sum::<f64>() / self.kl.len().max(1) as f64;
        out += &format!("| **all** | {sum_kl:.4} (sum) | {mean_err:.4} (mean) |\n\n");
        out += &format!(
            "| policy | episodes | mean return | fall rate |\n|---|---|---|---|\n| teacher | {} | {:.2} | {:.1} % |\n| student | {} | {:.2} ({:.1} % of the teacher's) | {:.1} % |\n",
            self.teacher.episodes.len(),
            self.teacher.mean_return(),
            100.0 * self.teacher.fall_rate(),
            self.student.episodes.len(),
            self.student.mean_return(),
            100.0 * self.student.mean_return() / self.teacher.mean_return(),
            100.0 * self.student.fall_rate()
        );
        out
    }

    pub fn csv(&self) -> String {
        let mut out = String::from("joint,kl_teacher_student,action_error\n");
        for (j, name) in self.joint_names.iter().enumerate() {
            out += &format!("{name},{},{}\n", self.kl[j], self.action_error[j]);
        }
        out
    }

    /// Per-joint bars (KL and action error) above a time series of up to 4 joints with both
    /// policies' actions overlaid.
    pub fn plot(&self, path: &Path, title: &str) -> Result<()> {
        register_font();
        let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
            let root = BitMapBackend::new(path, (1400, 1000)).into_drawing_area();
            root.fill(&WHITE)?;
            let root = root.titled(title, ("sans-serif", 22))?;
            let (top, bottom) = root.split_vertically(430);
            let (left, right) = top.split_horizontally(700);
            let nj = self.joint_names.len();
            // Horizontal bars: one row per joint, its name readable beside it.
            for (area, values, what) in [
                (&left, &self.kl, "KL(teacher || student)"),
                (
                    &right,
                    &self.action_error,
                    "|teacher action - student action|",
                ),
            ] {
                let top_v = values.iter().copied().fold(1e-6, f64::max) * 1.1;
                let mut c = ChartBuilder::on(area)
                    .caption(what, ("sans-serif", 16))
                    .margin(8)
                    .x_label_area_size(30)
                    .y_label_area_size(110)
                    .build_cartesian_2d(0.0..top_v, (0..nj).into_segmented())?;
                let names = self.joint_names.clone();
                c.configure_mesh()
                    .y_labels(nj)
                    .y_label_formatter(&|y| match y {
                        SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                        _ => String::new(),
                    })
                    .disable_y_mesh()
                    .label_style(("sans-serif", 12))
                    .draw()?;
                c.draw_series(values.iter().enumerate().map(|(j, &v)| {
                    let mut bar = Rectangle::new(
                        [
                            (0.0, SegmentValue::Exact(j)),
                            (v, SegmentValue::Exact(j + 1)),
                        ],
                        BLUE.mix(0.6).filled(),
                    );
                    bar.set_margin(2, 2, 0, 0);
                    bar
                }))?;
            }
            let shown: Vec<usize> = worst_joints(&self.kl, 4);
            let panels = bottom.split_evenly((1, shown.len().max(1)));
            let (time, ta, sa) = &self.series;
            let t1 = time.last().copied().unwrap_or(1.0).max(1e-3);
            for (area, &j) in panels.iter().zip(&shown) {
                let values = ta.iter().chain(sa.iter()).map(|a| f64::from(a[j]));
                let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
                let pad = ((hi - lo) * 0.1).max(1e-3);
                let mut c = ChartBuilder::on(area)
                    .caption(
                        format!("{} (solid teacher, dashed student)", self.joint_names[j]),
                        ("sans-serif", 13),
                    )
                    .margin(8)
                    .x_label_area_size(35)
                    .y_label_area_size(50)
                    .build_cartesian_2d(0.0..t1, (lo - pad)..(hi + pad))?;
                c.configure_mesh()
                    .x_desc("time (s)")
                    .y_desc("action")
                    .label_style(("sans-serif", 11))
                    .draw()?;
                c.draw_series(LineSeries::new(
                    time.iter().zip(ta).map(|(&t, a)| (t, f64::from(a[j]))),
                    RED.stroke_width(2),
                ))?;
                c.draw_series(DashedLineSeries::new(
                    time.iter().zip(sa).map(|(&t, a)| (t, f64::from(a[j]))),
                    6,
                    4,
                    BLUE.stroke_width(2),
                ))?;
            }
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
    }
}

/// Indices of the `k` joints with the largest values, in joint order.
fn worst_joints(values: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    idx.truncate(k);
    idx.sort();
    idx
}
