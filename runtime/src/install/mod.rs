//! Installing a policy bundle on the robot computer: two slots, an atomic switch, a rollback.
//!
//! # Layout under the root (`/var/lib/clawrl` by default)
//!
//! ```text
//! ROOT/slots/a/bundle.clawrl     a verified bundle
//! ROOT/slots/a/installed.json    what was installed there, from where, when ([`Record`])
//! ROOT/slots/b/...               the other slot
//! ROOT/current  -> slots/a       the bundle `clawrl-runtime run` loads ([`current_bundle`])
//! ROOT/previous -> slots/b       what [`rollback`] returns to
//! ROOT/.lock                     held while an install or a rollback runs
//! ```
//!
//! [`install`] writes only into the slot `current` does not point at, and switches by renaming
//! a freshly made symlink over `current` (one `rename(2)`, atomic on POSIX file systems), so an
//! install interrupted at any point (power cut, crash, kill) leaves `current` pointing at the
//! old, intact bundle. Its steps, in order, are the [`Step`]s; each file is written under a
//! temporary name, synced, renamed into place and its directory synced.
//!
//! # Fault injection (a test hook)
//!
//! With the environment variable `CLAWRL_INSTALL_ABORT_AT=<step>` (a [`Step`] name such as
//! `SwitchCurrent`), [`install`] calls [`std::process::abort`] right before that step, as a
//! power cut would stop it there. `runtime/tests/install.rs` aborts the `clawrl-runtime`
//! binary at every step in turn and checks that the old bundle is still the current one. An
//! unknown step name is refused, so a typo cannot make such a test pass silently. Nothing sets
//! it in production.
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use clawrl_bundle::{Bundle, BundleError, Incompatible, RobotSpec, Trust, hex};
use serde::{Deserialize, Serialize};

mod files;
mod ops;
mod slots;

use files::*;
pub use ops::{SlotState, Status, current_bundle, install, install_with_hook, rollback, status};
use slots::*;
pub use slots::{Installed, ProvenanceSummary, Record, Slot, Step};

/// Where the robot keeps its bundles unless told otherwise.
pub const DEFAULT_ROOT: &str = "/var/lib/clawrl";
/// The fault-injection variable (see the module documentation).
pub const ABORT_ENV: &str = "CLAWRL_INSTALL_ABORT_AT";
/// The bundle's name inside a slot.
pub const BUNDLE_FILE: &str = "bundle.clawrl";
/// The install record's name inside a slot.
pub const RECORD_FILE: &str = "installed.json";
/// Network kinds the runtime can run (the policy registry's built-in kinds).
pub use crate::inference::SUPPORTED_KINDS as NETWORK_KINDS;

/// Why an install, a rollback or a status query was refused. Every message is one sentence
/// that names the file and the field or step.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The bundle failed [`clawrl_bundle::read`] (read, container, format, integrity,
    /// manifest or signature).
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The bundle is valid but made for another robot (or for this one in another way).
    /// Its reason is in the message, so it is not also the `source()` (which an error chain
    /// would print again).
    #[error("bundle {} is not for this robot: {reason}", path.display())]
    Robot { path: PathBuf, reason: Incompatible },
    /// A file system operation failed. The OS error's text is in the message, so it is not
    /// also the `source()` (which an error chain would print again).
    #[error("{what} {}: {err}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        err: io::Error,
    },
    /// The copy in the slot does not read back as the bundle that was verified.
    #[error("bundle {}: the copy read back differs from the verified source ({detail})", path.display())]
    CopyMismatch { path: PathBuf, detail: String },
    /// Nothing is installed under the root.
    #[error(
        "no bundle is installed under {} ({} does not exist); install one with `clawrl-runtime install BUNDLE --root {}`",
        root.display(), root.join("current").display(), root.display()
    )]
    NotInstalled { root: PathBuf },
    /// `rollback` without a previous install.
    #[error("cannot roll back under {}: {reason}", root.display())]
    NoPrevious { root: PathBuf, reason: String },
    /// A slot link or record that is not what this module writes.
    #[error("{}: {detail}", path.display())]
    Layout { path: PathBuf, detail: String },
    /// Another install or rollback holds the root's lock.
    #[error("another install or rollback is running under {} (it holds {})", root.display(), root.join(".lock").display())]
    Busy { root: PathBuf },
    /// `CLAWRL_INSTALL_ABORT_AT` names no step.
    #[error("CLAWRL_INSTALL_ABORT_AT={value:?} names no install step (steps: {})", Step::ALL.map(Step::name).join(", "))]
    UnknownStep { value: String },
}

pub(super) fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> InstallError {
    let path = path.to_path_buf();
    move |err| InstallError::Io { what, path, err }
}

// ---------------------------------------------------------------------------------------------
// The robot check.

/// Refuses a bundle that does not fit `robot` ([`clawrl_bundle::check_fits`], the check
/// `clawrl verify --robot` runs on the desktop); the error names the bundle file.
pub fn check_bundle(bundle: &Bundle, robot: &RobotSpec) -> Result<(), InstallError> {
    clawrl_bundle::check_fits(&bundle.manifest, robot).map_err(|reason| InstallError::Robot {
        path: bundle.path.clone(),
        reason,
    })
}

// ---------------------------------------------------------------------------------------------
// The `clawrl-runtime` subcommands.

/// `clawrl-runtime install`: verify a bundle, copy it into the inactive slot and switch to it.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The policy bundle (`clawrl export`).
    pub bundle: PathBuf,
    /// Runtime configuration (TOML): its `[robot]` section and control rate are what the
    /// bundle must fit, as `clawrl-runtime run` will check it. Default: as for `run`
    /// ($CLAWRL_RUNTIME_CONFIG, else /etc/clawrl/robot.toml, else configs/runtime/robot.toml).
    // An empty path means "not given" (a plain `PathBuf` rather than an `Option`, as callers
    // that build these arguments in code name a config file).
    #[arg(
        long,
        default_value = "",
        hide_default_value = true,
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::OsStringValueParser::new(),
            PathBuf::from
        )
    )]
    pub config: PathBuf,
    /// Where the slots live (default: `install.root` of --config, where `run` looks).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A trusted public key (`clawrl keygen`); repeatable. Naming one requires a signature by
    /// one of them: an unsigned bundle, or one signed by any other key, is refused.
    #[arg(long, value_name = "KEY.pub")]
    pub trust: Vec<PathBuf>,
    /// Refuse an unsigned bundle (implied by --trust).
    #[arg(long)]
    pub require_signature: bool,
}

/// `clawrl-runtime rollback` and `clawrl-runtime status`.
#[derive(Debug, clap::Args)]
pub struct RootArgs {
    /// Runtime configuration (TOML) whose `install.root` names where the slots live, found as
    /// for `clawrl-runtime run` ($CLAWRL_RUNTIME_CONFIG, else /etc/clawrl/robot.toml, else
    /// configs/runtime/robot.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where the slots live, instead of --config's `install.root`.
    #[arg(long)]
    pub root: Option<PathBuf>,
}

/// The install root: `--root`, else `install.root` of the runtime config, so install, status
/// and rollback act where `run` loads from.
fn root_of(root: &Option<PathBuf>, config: Option<&Path>) -> anyhow::Result<PathBuf> {
    match root {
        Some(r) => Ok(r.clone()),
        None => Ok(crate::config::RuntimeConfig::find_and_load(config, &[])
            .map_err(|e| anyhow::anyhow!("{e:#} (or give the install root with --root)"))?
            .install
            .root),
    }
}

/// Runs `clawrl-runtime install`; returns what to print.
pub fn run_install(a: &InstallArgs) -> anyhow::Result<String> {
    let cfg = crate::config::RuntimeConfig::find_and_load(
        Some(a.config.as_path()).filter(|p| !p.as_os_str().is_empty()),
        &[],
    )?;
    // What `run` will demand, install demands too: its trusted keys and its signature rule,
    // with any --trust keys besides.
    let keys: Vec<PathBuf> = a
        .trust
        .iter()
        .chain(&cfg.install.trusted_keys)
        .cloned()
        .collect();
    let trust = Trust::from_key_files(&keys, a.require_signature || cfg.install.require_signature)?;
    let root = a.root.clone().unwrap_or(cfg.install.root.clone());
    let i = install(&root, &a.bundle, &trust, &cfg.robot_spec())?;
    Ok(if i.already_current {
        format!("already the current bundle, nothing changed: {i}")
    } else {
        format!("installed into {i}")
    })
}

/// Runs `clawrl-runtime rollback`; returns what to print.
pub fn run_rollback(a: &RootArgs) -> anyhow::Result<String> {
    Ok(format!(
        "rolled back to {}",
        rollback(&root_of(&a.root, a.config.as_deref())?)?
    ))
}

/// Runs `clawrl-runtime status`; returns what to print.
pub fn run_status(a: &RootArgs) -> anyhow::Result<String> {
    Ok(status(&root_of(&a.root, a.config.as_deref())?)?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
        // 2100 is not a leap year: its February ends on the 28th, then March. Only days near
        // the turn of a year not divisible by 400 test the century terms of the year of era.
        assert_eq!(utc(4_107_542_399), "2100-02-28 23:59:59 UTC");
        assert_eq!(utc(4_107_542_400), "2100-03-01 00:00:00 UTC");
    }

    #[test]
    fn step_names_are_unique_and_parse_back() {
        for (i, s) in Step::ALL.iter().enumerate() {
            assert!(Step::ALL[..i].iter().all(|t| t.name() != s.name()));
        }
    }
}
