//! `clawrl endpoint check`: the verification request. Lists the served models, confirms the
//! configured teacher and student exist, runs one `act` on each for the same simulated states
//! (each through its own observation of them), and reports status, latency, shapes and the
//! teacher-student KL per joint. Anything else comes back as the client's diagnosis.
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use clawrl_endpoint::{Client, ModelInfo};
use clawrl_robot::History;
use clawrl_sim::rng::derive_seed;

use crate::algorithms::distill::per_joint_kl;
use crate::config::TrainConfig;
use crate::task::make_envs;

/// One model's Gaussians on the check's states.
struct Acted {
    mean: Vec<f32>,
    log_std: Vec<f32>,
}

/// Runs the check against the endpoint config at `path` on `states` states of the student's
/// task; the report on success, the diagnosis on failure.
pub fn check(path: &Path, states: usize, seed: u64) -> Result<String> {
    let cfg = crate::remote::endpoint_config(path)?;
    let mut out = String::new();
    let client = Client::new(cfg.clone(), &clawrl_endpoint::process_env)?;
    let proxy = match client.proxy() {
        Some(p) => format!("through {}={}", p.var, p.value),
        None => "no proxy".into(),
    };
    writeln!(
        out,
        "endpoint {} ({}): key from {}, timeout {} s, {proxy}",
        cfg.base_url,
        cfg.file.display(),
        cfg.key_origin(),
        cfg.timeout
    )?;
    let (models, latency) = client.models()?;
    writeln!(
        out,
        "GET  {:<40} 200  {:>7.2} ms  {} models: {}",
        client.url(clawrl_endpoint::api::MODELS),
        latency.as_secs_f64() * 1e3,
        models.len(),
        models
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let find = |id: &str, key: &str| -> Result<&ModelInfo> {
        Ok(models
            .iter()
            .find(|m| m.id == id)
            .ok_or_else(|| client.not_offered(id, key, &models))?)
    };
    let teacher = find(&cfg.teacher_model, "endpoint.teacher_model")?;
    let student = find(&cfg.student_model, "endpoint.student_model")?;
    anyhow::ensure!(
        teacher.task == student.task,
        "the teacher `{}` was trained on `{}`, the student `{}` on `{}`: they cannot be compared",
        teacher.id,
        teacher.task,
        student.id,
        student.task
    );
    anyhow::ensure!(
        teacher.action.dim == student.action.dim,
        "the teacher `{}` answers {} actions, the student `{}` {}",
        teacher.id,
        teacher.action.dim,
        student.id,
        student.action.dim
    );
    let task = crate::remote::train_config_of(student)?;
    let mut acted = Vec::new();
    for m in [teacher, student] {
        let obs = observations(&task, m, states, seed)?;
        let a = client.act(&m.id, &obs, m.observation.dim, true)?;
        writeln!(
            out,
            "POST {:<40} 200  {:>7.2} ms  {:<7} observations [{}, {}] -> actions [{}, {}]",
            client.url(clawrl_endpoint::api::ACT),
            a.latency.as_secs_f64() * 1e3,
            m.id,
            states,
            m.observation.dim,
            a.actions.len() / m.action.dim,
            m.action.dim
        )?;
        acted.push(Acted {
            mean: a.mean,
            log_std: a.log_std,
        });
    }
    kl_table(
        &mut out,
        teacher,
        student,
        &acted[0],
        &acted[1],
        &task.run.run.task,
        seed,
    )?;
    writeln!(
        out,
        "ok: the teacher `{}` and the student `{}` both answer",
        teacher.id, student.id
    )?;
    Ok(out)
}

/// Raw observations of `states` freshly reset episodes of the task, as model `m` reads them
/// (its own source, its history stack restarted).
fn observations(task: &TrainConfig, m: &ModelInfo, states: usize, seed: u64) -> Result<Vec<f32>> {
    let mut envs = make_envs(task, states)?;
    let layout = &m.observation;
    let frame_dim = envs[0].spec().obs_dim(layout.source);
    anyhow::ensure!(
        frame_dim == layout.frame_dim,
        "model `{}` reads {} values of `{:?}` observation per frame, the task `{}` gives {frame_dim}",
        m.id,
        layout.frame_dim,
        layout.source,
        task.run.run.task
    );
    let mut frame = vec![0.0f32; states * frame_dim];
    for (i, env) in envs.iter_mut().enumerate() {
        env.reset_in_place(derive_seed(seed, i as u64));
        env.observe(
            layout.source,
            &mut frame[i * frame_dim..(i + 1) * frame_dim],
        );
    }
    let mut history = History::new(states, frame_dim, layout.history);
    history.push(&frame, &vec![true; states]);
    Ok(history.as_slice().to_vec())
}

fn kl_table(
    out: &mut String,
    teacher: &ModelInfo,
    student: &ModelInfo,
    t: &Acted,
    s: &Acted,
    task: &str,
    seed: u64,
) -> Result<()> {
    let na = teacher.action.dim;
    let rows = t.mean.len() / na;
    let (mut kl, mut err) = (vec![0.0; na], vec![0.0; na]);
    for r in 0..rows {
        let row = r * na..(r + 1) * na;
        let k = per_joint_kl(
            &t.mean[row.clone()],
            &t.log_std[row.clone()],
            &s.mean[row.clone()],
            &s.log_std[row.clone()],
        );
        for j in 0..na {
            kl[j] += k[j] / rows as f64;
            err[j] += f64::from((t.mean[r * na + j] - s.mean[r * na + j]).abs()) / rows as f64;
        }
    }
    writeln!(
        out,
        "KL({} || {}) on the same {rows} states of `{task}` (seed {seed}), per joint:",
        teacher.id, student.id
    )?;
    writeln!(out, "  {:<16} {:>10} {:>12}", "joint", "KL", "|mean diff|")?;
    for j in 0..na {
        let name = teacher
            .action
            .names
            .get(j)
            .map(String::as_str)
            .unwrap_or("?");
        writeln!(out, "  {name:<16} {:>10.4} {:>12.4}", kl[j], err[j])?;
    }
    writeln!(
        out,
        "  {:<16} {:>10.4} {:>12.4}",
        "all (sum, mean)",
        kl.iter().sum::<f64>(),
        err.iter().sum::<f64>() / na as f64
    )?;
    Ok(())
}
