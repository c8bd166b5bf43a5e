//! What a policy path names, loaded: a run folder (its newest good checkpoint, else its
//! `policy.safetensors`), one checkpoint, a policy file, or a policy bundle, each with the
//! training configuration of the run that made it. Evaluation, export, the remote teacher and
//! the runner all start here, and this module needs none of them.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_bundle::{Bundle, Trust};
use clawrl_policy::{Policy, Registry};

use crate::checkpoint;
use crate::config::TrainConfig;

/// Metadata key of the training configuration in every policy and checkpoint file.
pub const META_TRAIN_CONFIG: &str = "clawrl.train_config";

/// File extension of a policy bundle.
pub const EXTENSION: &str = "clawrl";

/// A policy ready to evaluate, with the configuration of the run that made it.
pub struct Source {
    /// The file the weights came from.
    pub file: PathBuf,
    /// The run folder, when the file belongs to one.
    pub run_dir: Option<PathBuf>,
    pub policy: Box<dyn Policy>,
    pub config: TrainConfig,
}

/// Loads what `clawrl eval` is pointed at: a run folder (its newest good checkpoint, else its
/// `policy.safetensors`), one checkpoint, a policy file, or a policy bundle (`*.clawrl`).
pub fn load_source(path: &Path) -> Result<Source> {
    if path.extension().is_some_and(|e| e == EXTENSION) {
        let (_, policy, config) = load_bundle(path, &clawrl_bundle::Trust::default())?;
        return Ok(Source {
            file: path.to_path_buf(),
            run_dir: None,
            policy,
            config,
        });
    }
    let (file, run_dir, tensors, meta) = if path.is_dir() {
        let run_dir = Some(path.to_path_buf());
        if checkpoint::list(path).is_empty() {
            let f = path.join("policy.safetensors");
            anyhow::ensure!(
                f.is_file(),
                "{} holds no checkpoint and no policy.safetensors",
                path.display()
            );
            let (t, m) = clawrl_policy::io::load(&f)?;
            (f, run_dir, t, m)
        } else {
            let l = checkpoint::load_newest_good(path, &mut |_| {})?;
            (l.path, run_dir, l.tensors, l.meta)
        }
    } else {
        let (t, m) = clawrl_policy::io::load(path).map_err(|e| with_hint(path, e))?;
        (path.to_path_buf(), Some(checkpoint::run_dir_of(path)), t, m)
    };
    let text = meta.get(META_TRAIN_CONFIG).with_context(|| {
        format!(
            "{} carries no training configuration (`{META_TRAIN_CONFIG}`): it was not written by `clawrl train` of this version",
            file.display()
        )
    })?;
    let config: TrainConfig = toml::from_str(text)
        .with_context(|| format!("the training configuration in {}", file.display()))?;
    let mut policy = Registry::default().from_parts(&|k| tensors.get(k).cloned(), &meta, &file)?;
    policy.normalizer_mut().training = false;
    Ok(Source {
        file,
        run_dir,
        policy,
        config,
    })
}

/// A path that does not exist gets what a policy path may be and where the shipped one is:
/// "no such file" alone does not say what was expected. The path and the OS error are in `e`.
fn with_hint(path: &Path, e: clawrl_policy::PolicyError) -> anyhow::Error {
    let e = anyhow::Error::from(e);
    if path.exists() {
        return e;
    }
    e.context(
        "no policy there (a policy is a run folder, a checkpoint, a policy.safetensors or a \
         .clawrl bundle; the shipped teacher is assets/pretrained/quadruped_flat_ppo)",
    )
}

/// Reads a bundle (checked against `trust`) and rebuilds its policy and its training
/// configuration.
pub fn load_bundle(path: &Path, trust: &Trust) -> Result<(Bundle, Box<dyn Policy>, TrainConfig)> {
    let bundle = clawrl_bundle::read(path, trust)?;
    let policy = clawrl_policy::bundle::from_bundle(&Registry::default(), &bundle)?;
    let cfg: TrainConfig = toml::from_str(&bundle.manifest.provenance.train_config)
        .with_context(|| format!("bundle {}: provenance.train_config", path.display()))?;
    Ok((bundle, policy, cfg))
}
