//! Policies wherever a policy is accepted, local or served: a path (run folder, checkpoint,
//! policy file, bundle) or `remote:teacher` / `remote:student`, resolved through the endpoint
//! config (`configs/endpoint.toml`, see `clawrl_endpoint::config`). Also what `clawrl serve`
//! says of a local policy (its [`ModelInfo`]).
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_endpoint::api::Provenance;
use clawrl_endpoint::{EndpointConfig, ModelInfo, RemotePolicy, Role};
use clawrl_policy::{ActionSource, Registry};

use crate::algorithms::distill::Teacher;
use crate::config::{DistillConfig, TrainConfig};
use crate::source::{EXTENSION, Source, load_source};
use crate::task::make_envs;

/// A policy ready to evaluate or compare, local or remote, with the configuration of the run
/// that made it (for a remote one, as the server reports it).
pub struct AnySource {
    /// A path, or `remote:teacher (model `id` at URL)`.
    pub label: String,
    /// The run folder of a local policy that belongs to one.
    pub run_dir: Option<PathBuf>,
    pub policy: Box<dyn ActionSource>,
    pub config: TrainConfig,
}

/// The endpoint config at `path` (found as other configs are: the current directory, then the
/// repository), with `CLAWRL_API_KEY` from the environment.
pub fn endpoint_config(path: &Path) -> Result<EndpointConfig> {
    let file = crate::config::find_config(path).map_err(|e| {
        anyhow::anyhow!(
            "{e}; copy {} to {} and fill it in",
            clawrl_endpoint::config::EXAMPLE_FILE,
            clawrl_endpoint::config::DEFAULT_FILE
        )
    })?;
    Ok(EndpointConfig::load(&file, &clawrl_endpoint::process_env)?)
}

/// The role a policy spec names, if it is `remote:...`.
pub fn role(spec: &str) -> Result<Option<Role>> {
    Role::parse(spec).transpose().map_err(anyhow::Error::msg)
}

/// Connects to the served model of `role` through the endpoint config at `endpoint`.
pub fn connect(role: Role, endpoint: &Path) -> Result<RemotePolicy> {
    let cfg = endpoint_config(endpoint)?;
    Ok(RemotePolicy::connect(
        cfg,
        role,
        &clawrl_endpoint::process_env,
    )?)
}

/// The training configuration a server reports for one of its models.
pub fn train_config_of(model: &ModelInfo) -> Result<TrainConfig> {
    toml::from_str(&model.train_config).with_context(|| {
        format!(
            "model `{}`: the training configuration it reports is not one this clawrl reads",
            model.id
        )
    })
}

/// A path or a `remote:` spec as a policy.
pub fn load_any(spec: &str, endpoint: &Path) -> Result<AnySource> {
    match role(spec)? {
        Some(r) => {
            let remote = connect(r, endpoint)?;
            Ok(AnySource {
                label: format!("{spec} ({})", remote.label()),
                run_dir: None,
                config: train_config_of(remote.info())?,
                policy: Box::new(remote),
            })
        }
        None => {
            let src = load_source(Path::new(spec))?;
            Ok(AnySource {
                label: src.file.display().to_string(),
                run_dir: src.run_dir,
                policy: src.policy,
                config: src.config,
            })
        }
    }
}

/// What `/v1/models` says of a local policy served as `id`: its layout with the task's names,
/// its SHA-256 (see [`served_sha256`]) and its training configuration.
pub fn model_info(id: &str, src: &Source) -> Result<ModelInfo> {
    let envs = make_envs(&src.config, 1)?;
    let spec = envs[0].spec();
    let c = src.policy.config();
    let frame = spec.obs_dim(c.obs_source);
    // The names are the privileged layout's; the onboard layout is its prefix.
    let names = spec.obs_names.iter().take(frame).cloned().collect();
    let sha256 = served_sha256(&src.file)?;
    Ok(ModelInfo::new(
        id,
        c,
        src.policy.squashed(),
        Provenance {
            task: src.config.run.run.task.clone(),
            sha256,
            obs_names: names,
            action_names: spec.action_names.clone(),
            train_config: toml::to_string(&src.config)?,
        },
    ))
}

/// The SHA-256 a served policy is known by: for a bundle its content digest, the one `clawrl
/// verify` and `clawrl flash` print, so a client can match what it is served against what was
/// flashed; for a policy file the file's, the one `distill` pins a teacher by.
pub fn served_sha256(file: &Path) -> Result<String> {
    if file.extension().is_some_and(|e| e == EXTENSION) {
        let b = clawrl_bundle::read(file, &clawrl_bundle::Trust::default())?;
        return Ok(b.sha256_hex());
    }
    clawrl_bundle::file_sha256(file).with_context(|| format!("reading {}", file.display()))
}

/// The distiller's teacher named by `distill.teacher` (a policy file, or `remote:teacher` through
/// `distill.endpoint`) and the SHA-256 that pins it: of the file, or as the server reports it. A
/// teacher that has changed since the run recorded its hash is refused.
pub fn load_teacher(c: &DistillConfig, run_file: &Path) -> Result<(Teacher, String)> {
    let (teacher, digest, what) = match role(&c.teacher)? {
        Some(r) => {
            let remote = connect(r, Path::new(&c.endpoint))
                .with_context(|| format!("distill.teacher = {}", c.teacher))?;
            let digest = remote.info().sha256.clone();
            let what = format!("{} ({})", c.teacher, remote.label());
            (Teacher::Remote(Box::new(remote)), digest, what)
        }
        None => {
            let path = crate::config::resolve(&c.teacher, run_file);
            let digest = clawrl_bundle::file_sha256(&path)
                .with_context(|| format!("distill.teacher: cannot read {}", path.display()))?;
            let t = Registry::default()
                .load(&path)
                .with_context(|| format!("distill.teacher: {}", path.display()))?;
            (Teacher::Local(t), digest, path.display().to_string())
        }
    };
    if !c.teacher_sha256.is_empty() && c.teacher_sha256 != digest {
        anyhow::bail!(
            "distill.teacher: {what} has changed since this run started (sha256 {digest}, the run recorded {})",
            c.teacher_sha256
        );
    }
    Ok((teacher, digest))
}
