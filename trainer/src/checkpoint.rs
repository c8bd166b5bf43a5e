//! Checkpoints: one safetensors file per checkpoint holding everything needed to resume exactly
//! (weights, optimiser state, normalisers, replay buffer, RNG, iteration, metrics, resolved
//! config), written atomically: temporary file, fsync, rename. A process killed at any moment
//! leaves either the previous checkpoint set or the new file complete, never a partial file.
//! Every file carries a sha256 of its contents (see `clawrl_policy::io`): a damaged checkpoint
//! is refused by name, and readers fall back to the newest good one with a warning.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use candle_core::Tensor;
use clawrl_policy::Rng;
use clawrl_policy::io::{self, Metadata};
use rand::SeedableRng;

pub const DIR: &str = "checkpoints";

pub fn path_for(out_dir: &Path, iteration: usize) -> PathBuf {
    out_dir
        .join(DIR)
        .join(format!("ckpt_{iteration:08}.safetensors"))
}

/// Iteration number of a checkpoint file name, if it is one.
fn iteration_of(p: &Path) -> Option<usize> {
    let name = p.file_name()?.to_str()?;
    name.strip_prefix("ckpt_")?
        .strip_suffix(".safetensors")?
        .parse()
        .ok()
}

/// Checkpoint files of a run, oldest first (temporary files are ignored).
pub fn list(out_dir: &Path) -> Vec<(usize, PathBuf)> {
    let mut v: Vec<(usize, PathBuf)> = std::fs::read_dir(out_dir.join(DIR))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| iteration_of(&p).map(|i| (i, p)))
        .collect();
    v.sort();
    v
}

pub fn latest(out_dir: &Path) -> Option<PathBuf> {
    list(out_dir).pop().map(|(_, p)| p)
}

/// A checkpoint file, or the latest one of a run directory.
pub fn find(path: &Path) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    latest(path).with_context(|| format!("no checkpoint in {}", path.join(DIR).display()))
}

/// The run folder a file belongs to: `RUN` for `RUN/checkpoints/ckpt_N.safetensors`, else the
/// folder holding the file (`RUN/policy.safetensors` -> `RUN`).
pub fn run_dir_of(file: &Path) -> PathBuf {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(run)) if name == DIR => run.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// A loaded checkpoint: where it came from and what it holds.
pub struct Loaded {
    pub path: PathBuf,
    pub iteration: Option<usize>,
    pub tensors: HashMap<String, Tensor>,
    pub meta: Metadata,
}

/// Loads the newest checkpoint of `run_dir` that passes its integrity check, newest first.
/// Each damaged one is reported with a warning and handed to `on_bad` (which may move it
/// aside); none good is an error listing what was wrong with each.
pub fn load_newest_good(run_dir: &Path, on_bad: &mut dyn FnMut(&Path)) -> Result<Loaded> {
    let all = list(run_dir);
    anyhow::ensure!(
        !all.is_empty(),
        "no checkpoint in {}",
        run_dir.join(DIR).display()
    );
    let mut problems = Vec::new();
    for (it, path) in all.into_iter().rev() {
        match load(&path) {
            Ok((tensors, meta)) => {
                if !problems.is_empty() {
                    tracing::warn!(
                        "falling back to {} (iteration {it}), the newest good checkpoint",
                        path.display()
                    );
                }
                return Ok(Loaded {
                    path,
                    iteration: Some(it),
                    tensors,
                    meta,
                });
            }
            Err(e) => {
                tracing::warn!("skipping damaged checkpoint: {e:#}");
                on_bad(&path);
                problems.push(format!("{e:#}"));
            }
        }
    }
    anyhow::bail!(
        "no good checkpoint in {}:\n  {}",
        run_dir.join(DIR).display(),
        problems.join("\n  ")
    )
}

/// Moves a damaged checkpoint out of the way (`*.corrupt`), keeping it for inspection.
pub fn quarantine(path: &Path) {
    let to = path.with_extension("safetensors.corrupt");
    match std::fs::rename(path, &to) {
        Ok(()) => tracing::warn!("moved {} to {}", path.display(), to.display()),
        Err(e) => tracing::warn!("could not move {} aside: {e}", path.display()),
    }
}

pub fn save(
    out_dir: &Path,
    iteration: usize,
    tensors: &[(String, Tensor)],
    meta: &Metadata,
    keep: usize,
) -> Result<PathBuf> {
    let path = path_for(out_dir, iteration);
    io::save(&path, tensors, meta)
        .with_context(|| format!("writing checkpoint {}", path.display()))?;
    let all = list(out_dir);
    if all.len() > keep {
        for (_, old) in &all[..all.len() - keep] {
            let _ = std::fs::remove_file(old);
        }
    }
    Ok(path)
}

pub fn load(path: &Path) -> Result<(HashMap<String, Tensor>, Metadata)> {
    io::load(path).with_context(|| format!("checkpoint {} refused", path.display()))
}

/// The RNG's exact position as text: seed (hex), stream, word position.
pub fn rng_to_string(rng: &Rng) -> String {
    let seed: String = rng.get_seed().iter().map(|b| format!("{b:02x}")).collect();
    format!("{seed}:{}:{}", rng.get_stream(), rng.get_word_pos())
}

pub fn rng_from_string(s: &str) -> Result<Rng> {
    let parts: Vec<&str> = s.split(':').collect();
    anyhow::ensure!(
        parts.len() == 3 && parts[0].len() == 64,
        "bad RNG state `{s}`"
    );
    let mut seed = [0u8; 32];
    for (i, b) in seed.iter_mut().enumerate() {
        *b = u8::from_str_radix(&parts[0][2 * i..2 * i + 2], 16)?;
    }
    let mut rng = Rng::from_seed(seed);
    rng.set_stream(parts[1].parse()?);
    rng.set_word_pos(parts[2].parse()?);
    Ok(rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn rng_state_round_trips_mid_stream() {
        let mut a = Rng::seed_from_u64(42);
        for _ in 0..13 {
            let _: u32 = a.random();
        }
        let mut b = rng_from_string(&rng_to_string(&a)).unwrap();
        let xa: Vec<u64> = (0..5).map(|_| a.random()).collect();
        let xb: Vec<u64> = (0..5).map(|_| b.random()).collect();
        assert_eq!(xa, xb);
    }

    #[test]
    fn keeps_the_newest_and_ignores_temporaries() {
        let dir = std::env::temp_dir().join(format!("clawrl-ckpt-{}", std::process::id()));
        let t = vec![(
            "x".to_string(),
            Tensor::new(&[1.0f32], &candle_core::Device::Cpu).unwrap(),
        )];
        for it in [5, 10, 15] {
            save(&dir, it, &t, &Metadata::new(), 2).unwrap();
        }
        // A temporary left by a killed writer is not a checkpoint.
        std::fs::write(
            dir.join(DIR).join(".ckpt_00000020.safetensors.tmp-1"),
            b"partial",
        )
        .unwrap();
        let its: Vec<usize> = list(&dir).into_iter().map(|(i, _)| i).collect();
        assert_eq!(its, vec![10, 15]);
        assert_eq!(find(&dir).unwrap(), path_for(&dir, 15));
        std::fs::remove_dir_all(dir).ok();
    }
}
