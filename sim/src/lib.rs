//! The claw-foot quadruped in MuJoCo: robot model, tasks, rewards, domain randomisation and
//! vectorised environments.
//!
//! - [`Env`] is the environment API every task implements: `reset(seed)` and
//!   `step(action) -> observation, reward, terminated, truncated`, with named observation
//!   sources ([`ObsSource::Onboard`] for what the robot computer sees, [`ObsSource::Privileged`]
//!   for onboard plus simulation-only quantities).
//! - [`quadruped::QuadrupedEnv`] is the claw-foot robot (flat-ground velocity tracking and slopes).
//! - [`cartpole::CartPole`] is a cheap MuJoCo task for learning tests of the trainer.
//! - [`VecEnv`] steps N environments across threads, identically for a seed whatever the
//!   thread count.
pub mod cartpole;
pub mod description;
pub mod env;
pub mod error;
pub mod model;
pub mod quadruped;
pub mod rng;
pub mod sysid;
pub mod vec_env;

pub use env::{
    ActionMap, Env, EnvSpec, EpisodeLog, ObsSource, Observation, OnboardLayout, Telemetry,
    Transition,
};
pub use error::SimError;
pub use vec_env::{Batch, VecEnv};

/// The source tree this binary was built from (the parent of this crate). Tests read fixtures
/// from it; a program resolves the robot's files with [`resolve`], which looks elsewhere first.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ has a parent")
        .to_path_buf()
}

/// Names the folder that holds clawrl's files (sim/models, configs, assets) for a binary run
/// outside the tree it was built in (copied to another machine, installed).
pub const ROOT_ENV: &str = "CLAWRL_ROOT";

/// Where an install keeps clawrl's files, beside the running executable:
/// `<folder of the executable>/../share/clawrl` (scripts/install lays out PREFIX/bin/clawrl and
/// PREFIX/share/clawrl). `None` when the executable's path is unknown; the folder may not exist.
pub fn installed_root() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("share").join("clawrl"))
}

/// Where a relative path to one of clawrl's files is looked for, in order: [`ROOT_ENV`] alone
/// when it is set; else the current directory, then [`installed_root`] when it exists, then the
/// source tree the binary was built from.
pub fn search_roots() -> Vec<std::path::PathBuf> {
    if let Some(root) = std::env::var_os(ROOT_ENV) {
        return vec![root.into()];
    }
    let mut roots: Vec<std::path::PathBuf> = std::env::current_dir().into_iter().collect();
    roots.extend(installed_root().filter(|r| r.is_dir()));
    roots.push(repo_root());
    roots
}

/// `path` as given when absolute; else under the first of [`search_roots`] that has it, or under
/// the first root when none has it (an error then names it, and [`roots_tried`] the others).
pub fn resolve(path: &std::path::Path) -> std::path::PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let roots = search_roots();
    roots
        .iter()
        .map(|r| r.join(path))
        .find(|p| p.exists())
        .unwrap_or_else(|| roots[0].join(path))
}

/// The folders [`resolve`] looked in, for an error message (an install's folder beside the
/// binary is named even when absent: that is the one an installed `clawrl` needs).
pub fn roots_tried() -> String {
    if let Some(root) = std::env::var_os(ROOT_ENV) {
        return format!("{ROOT_ENV}={}", std::path::Path::new(&root).display());
    }
    let mut tried: Vec<String> = std::env::current_dir()
        .map(|d| format!("the current directory ({})", d.display()))
        .into_iter()
        .collect();
    if let Some(share) = installed_root() {
        let absent = if share.is_dir() { "" } else { ", absent" };
        tried.push(format!(
            "the installed files beside this binary ({}{absent})",
            share.display()
        ));
    }
    tried.push(format!(
        "the tree this binary was built in ({})",
        repo_root().display()
    ));
    format!("{}; or set {ROOT_ENV}", tried.join(", then "))
}

/// Directory of the MJCF models shipped with the crate ([`resolve`]d).
pub fn models_dir() -> std::path::PathBuf {
    resolve(std::path::Path::new("sim/models"))
}
