//! `clawrl export`: a trained student as a policy bundle (`clawrl-bundle`), the one artefact
//! that leaves the desktop. The manifest carries what the runtime needs to rebuild the
//! student's exact observation and actions (layout, history, normaliser, action map, control
//! rate) and the provenance of the weights (the resolved training configuration by content,
//! seed, source revision, teacher hash, evaluation figures).
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_bundle::{
    ActionSpec, Evaluation, FORMAT_VERSION, Manifest, ObservationSpec, Provenance, RobotInfo,
    SigningKey,
};
use clawrl_policy::bundle::BundleParts;
use clawrl_policy::{ObsSource, Policy};

use crate::config::{AlgoConfig, TrainConfig};
use crate::eval::{EvalOptions, evaluate};
use crate::source::Source;

#[derive(Default)]
pub struct ExportOptions {
    /// Evaluation episodes recorded in the provenance (0: none).
    pub episodes: usize,
    pub threads: usize,
    pub signing_key: Option<SigningKey>,
}

pub struct Exported {
    pub path: PathBuf,
    pub sha256: String,
    pub manifest: Manifest,
}

/// Exports a loaded policy (see [`load_source`]: a run folder, a checkpoint or a policy file)
/// to `out`.
pub fn export(src: &Source, out: &Path, opts: &ExportOptions) -> Result<Exported> {
    let policy = src.policy.as_ref();
    anyhow::ensure!(
        policy.config().obs_source == ObsSource::Onboard,
        "{} reads the `privileged` observation, which exists only in simulation: only a policy \
         on the `onboard` observation can run on the robot (distil one with `clawrl distill`)",
        src.file.display()
    );
    let evaluation = if opts.episodes > 0 {
        Some(evaluation_of(src, opts)?)
    } else {
        None
    };
    let parts = clawrl_policy::bundle::to_bundle_parts(policy)?;
    let manifest = manifest(&src.config, policy, &parts, evaluation)?;
    let digest = clawrl_bundle::write(out, &manifest, &parts.tensors, opts.signing_key.as_ref())?;
    Ok(Exported {
        path: out.to_path_buf(),
        sha256: clawrl_bundle::hex(&digest),
        manifest,
    })
}

/// The manifest of `policy` (its network part already taken apart, see
/// [`clawrl_policy::bundle::to_bundle_parts`]), trained under `cfg`.
pub fn manifest(
    cfg: &TrainConfig,
    policy: &dyn Policy,
    parts: &BundleParts,
    evaluation: Option<Evaluation>,
) -> Result<Manifest> {
    let spec = crate::task::spec(cfg)?;
    let mjcf = clawrl_bundle::file_sha256(&spec.model_file)
        .with_context(|| format!("hashing the model {}", spec.model_file.display()))?;
    let teacher_sha256 = match &cfg.algo {
        AlgoConfig::Distill(d) => d.teacher_sha256.clone(),
        _ => String::new(),
    };
    Ok(Manifest {
        format_version: FORMAT_VERSION,
        robot: RobotInfo {
            model: spec.onboard_layout.robot.clone(),
            mjcf_sha256: mjcf,
            description: clawrl_sim::description::for_mjcf(&spec.model_file)?
                .map(|r| r.description),
        },
        observation: ObservationSpec {
            source: policy.config().obs_source,
            layout: spec.onboard_layout.clone(),
            history: policy.config().history,
            normalizer: parts.normalizer.clone(),
            command_ranges: cfg.task.as_ref().map(|t| {
                let c = &t.command;
                [c.forward, c.lateral, c.yaw_rate]
            }),
        },
        action: ActionSpec {
            names: spec.action_names.clone(),
            map: spec.action_map.clone(),
            max_target_speed: cfg
                .task
                .as_ref()
                .and_then(|t| trained_limit(t.env.max_target_speed)),
        },
        control_rate_hz: 1.0 / spec.control_dt,
        physics_rate_hz: Some(1.0 / spec.physics_dt),
        network: parts.network.clone(),
        provenance: Provenance {
            train_config: toml::to_string(cfg)?,
            seed: cfg.run.run.seed,
            source_revision: source_revision(),
            teacher_sha256,
            clawrl_version: env!("CARGO_PKG_VERSION").into(),
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            evaluation,
        },
    })
}

/// Student (and, for a distilled one, teacher) figures over `opts.episodes` episodes.
fn evaluation_of(src: &Source, opts: &ExportOptions) -> Result<Evaluation> {
    let eo = EvalOptions {
        episodes: opts.episodes,
        threads: opts.threads.max(1),
        gait_seconds: 0.0,
        ..Default::default()
    };
    let student = evaluate(&src.config, src.policy.as_ref(), &eo)?;
    let teacher = match &src.config.algo {
        AlgoConfig::Distill(d) => match crate::remote::load_teacher(d, &src.config.source) {
            Ok((t, _)) => Some(evaluate(&src.config, t.source(), &eo)?),
            Err(e) => {
                tracing::warn!("teacher not evaluated: {e:#}");
                None
            }
        },
        _ => None,
    };
    Ok(Evaluation {
        episodes: opts.episodes,
        mean_return: student.mean_return(),
        fall_rate: student.fall_rate(),
        teacher_mean_return: teacher.as_ref().map(|t| t.mean_return()),
        teacher_fall_rate: teacher.as_ref().map(|t| t.fall_rate()),
    })
}

/// The repository's commit, with `-dirty` when it has local changes; `unknown` without git.
fn source_revision() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(clawrl_sim::repo_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(rev) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{rev}-dirty"),
            _ => rev,
        },
        None => "unknown".into(),
    }
}

/// The policy as a plain normaliser + MLP for the ONNX writer (`clawrl-onnx`): the MLP kinds
/// (`gaussian_mlp`, `gaussian_mlp_state_std`, `squashed_gaussian_mlp`); the output is the
/// deterministic action (the mean, `tanh`-squashed for SAC's kind).
pub fn onnx_policy(policy: &dyn Policy) -> Result<clawrl_onnx::MlpPolicy> {
    let c = policy.config();
    anyhow::ensure!(
        [
            "gaussian_mlp",
            "gaussian_mlp_state_std",
            "squashed_gaussian_mlp"
        ]
        .contains(&c.kind.as_str()),
        "ONNX export covers the MLP kinds; `{}` is not one (its bundle runs in clawrl's runtime)",
        c.kind
    );
    let params: std::collections::HashMap<String, candle_core::Tensor> = policy
        .params()
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().clone()))
        .collect();
    let mut layers = Vec::new();
    while let Some(w) = params.get(&format!("actor.{}.weight", layers.len())) {
        let b = &params[&format!("actor.{}.bias", layers.len())];
        // candle stores [in, out]; ONNX's Gemm with transB reads [out, in].
        let (inputs, outputs) = w.dims2()?;
        layers.push(clawrl_onnx::Dense {
            weight: w.t()?.contiguous()?.flatten_all()?.to_vec1()?,
            bias: b.to_vec1()?,
            inputs,
            outputs,
        });
    }
    let n = policy.normalizer();
    Ok(clawrl_onnx::MlpPolicy {
        obs_dim: c.obs_dim,
        mean: n.mean.clone(),
        var: n.var.clone(),
        epsilon: clawrl_policy::normalizer::EPS,
        clip: n.clip,
        layers,
        activation: match c.activation {
            clawrl_policy::Activation::Elu => clawrl_onnx::Activation::Elu,
            clawrl_policy::Activation::Relu => clawrl_onnx::Activation::Relu,
            clawrl_policy::Activation::Tanh => clawrl_onnx::Activation::Tanh,
        },
        action_dim: c.action_dim,
        squash: policy.squashed(),
    })
}

/// The servo-target rate limit a bundle records: `env.max_target_speed`, where there was one.
/// 0 means the policy trained without a limit; recorded as 0 rad/s, every robot (whose
/// `safety.max_joint_speed` must be positive) would refuse the bundle as trained for another.
fn trained_limit(max_target_speed: f64) -> Option<f64> {
    (max_target_speed > 0.0).then_some(max_target_speed)
}

#[cfg(test)]
mod tests {
    use super::trained_limit;

    #[test]
    fn a_policy_trained_without_a_rate_limit_records_none() {
        assert_eq!(trained_limit(0.0), None);
        assert_eq!(trained_limit(6.0), Some(6.0));
    }
}
