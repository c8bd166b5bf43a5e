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

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> InstallError {
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
// Slots, records and steps.

/// One of the two bundle slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    A,
    B,
}

impl Slot {
    pub const BOTH: [Slot; 2] = [Slot::A, Slot::B];

    pub fn name(self) -> &'static str {
        match self {
            Slot::A => "a",
            Slot::B => "b",
        }
    }

    pub fn other(self) -> Slot {
        match self {
            Slot::A => Slot::B,
            Slot::B => Slot::A,
        }
    }

    /// The symlink target, relative to the root (`slots/a`).
    fn link_target(self) -> PathBuf {
        Path::new("slots").join(self.name())
    }

    pub fn dir(self, root: &Path) -> PathBuf {
        root.join(self.link_target())
    }

    pub fn bundle(self, root: &Path) -> PathBuf {
        self.dir(root).join(BUNDLE_FILE)
    }

    pub fn record(self, root: &Path) -> PathBuf {
        self.dir(root).join(RECORD_FILE)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slot {}", self.name())
    }
}

/// The steps of [`install`], in order. [`ABORT_ENV`] stops the process right before one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Read and verify the source bundle, check it against the robot.
    Verify,
    /// Unlink `previous` if it points at the slot about to be overwritten.
    DropPrevious,
    /// Remove the old bundle and record from the inactive slot.
    ClearSlot,
    /// Write the bytes to a temporary file in the inactive slot.
    CopyTemp,
    /// fsync that file.
    Fsync,
    /// Rename it to `bundle.clawrl` and fsync the slot directory.
    RenameIntoSlot,
    /// Read the copy back and check it is the verified bundle.
    VerifyCopy,
    /// Write `installed.json` (temporary file, fsync, rename).
    WriteRecord,
    /// Make the new `current` symlink under a temporary name.
    LinkTemp,
    /// Point `previous` at the old slot.
    SetPrevious,
    /// Rename the new symlink over `current` and fsync the root: the install takes effect.
    SwitchCurrent,
}

impl Step {
    pub const ALL: [Step; 11] = [
        Step::Verify,
        Step::DropPrevious,
        Step::ClearSlot,
        Step::CopyTemp,
        Step::Fsync,
        Step::RenameIntoSlot,
        Step::VerifyCopy,
        Step::WriteRecord,
        Step::LinkTemp,
        Step::SetPrevious,
        Step::SwitchCurrent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Step::Verify => "Verify",
            Step::DropPrevious => "DropPrevious",
            Step::ClearSlot => "ClearSlot",
            Step::CopyTemp => "CopyTemp",
            Step::Fsync => "Fsync",
            Step::RenameIntoSlot => "RenameIntoSlot",
            Step::VerifyCopy => "VerifyCopy",
            Step::WriteRecord => "WriteRecord",
            Step::LinkTemp => "LinkTemp",
            Step::SetPrevious => "SetPrevious",
            Step::SwitchCurrent => "SwitchCurrent",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The step [`ABORT_ENV`] names, if it is set.
fn abort_step() -> Result<Option<Step>, InstallError> {
    let Some(v) = std::env::var_os(ABORT_ENV) else {
        return Ok(None);
    };
    let v = v.to_string_lossy();
    Step::ALL
        .into_iter()
        .find(|s| s.name() == v)
        .map(Some)
        .ok_or_else(|| InstallError::UnknownStep {
            value: v.into_owned(),
        })
}

/// The test hook: abort right before `step` when [`ABORT_ENV`] names it.
fn at(step: Step, abort_at: Option<Step>) {
    if abort_at == Some(step) {
        eprintln!("{ABORT_ENV}={step}: aborting before step {step} (test hook)");
        std::process::abort();
    }
}

/// What the robot check and the signature saw of an installed bundle, kept next to it as
/// `installed.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The bundle's content SHA-256 (`clawrl.bundle.sha256`, as `clawrl verify` prints it).
    pub sha256: String,
    /// SHA-256 of the file's bytes.
    pub file_sha256: String,
    /// Where it was installed from (absolute when it could be resolved).
    pub source: PathBuf,
    pub installed_unix_s: u64,
    /// Hex public key of the signer, if signed.
    pub signer: Option<String>,
    pub provenance: ProvenanceSummary,
}

/// The manifest's identity, for `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceSummary {
    pub model: String,
    pub network_kind: String,
    pub parameters: usize,
    pub control_rate_hz: f64,
    pub seed: u64,
    pub source_revision: String,
    pub teacher_sha256: String,
    pub clawrl_version: String,
    pub created_unix_s: u64,
    pub evaluation: Option<clawrl_bundle::Evaluation>,
}

impl ProvenanceSummary {
    pub fn of(bundle: &Bundle) -> Self {
        let m = &bundle.manifest;
        let p = &m.provenance;
        Self {
            model: m.robot.model.clone(),
            network_kind: m.network.kind.clone(),
            parameters: m.network.parameters,
            control_rate_hz: m.control_rate_hz,
            seed: p.seed,
            source_revision: p.source_revision.clone(),
            teacher_sha256: p.teacher_sha256.clone(),
            clawrl_version: p.clawrl_version.clone(),
            created_unix_s: p.created_unix_s,
            evaluation: p.evaluation.clone(),
        }
    }
}

/// A bundle in a slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Installed {
    pub slot: Slot,
    /// `ROOT/slots/X/bundle.clawrl`.
    pub bundle: PathBuf,
    pub record: Record,
}

impl fmt::Display for Installed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.record;
        let p = &r.provenance;
        writeln!(f, "{}: {}", self.slot, self.bundle.display())?;
        writeln!(f, "  sha256 {} (file {})", r.sha256, r.file_sha256)?;
        writeln!(
            f,
            "  installed {} from {}, signature: {}",
            utc(r.installed_unix_s),
            r.source.display(),
            r.signer
                .as_deref()
                .map_or("none".into(), |k| format!("Ed25519 by {k}"))
        )?;
        writeln!(
            f,
            "  robot {}, network {} ({} parameters), control {} Hz",
            p.model, p.network_kind, p.parameters, p.control_rate_hz
        )?;
        writeln!(
            f,
            "  train config seed {}, source revision {}, teacher sha256 {}, clawrl {}, created {}",
            p.seed,
            or_dash(&p.source_revision),
            or_dash(&p.teacher_sha256),
            or_dash(&p.clawrl_version),
            utc(p.created_unix_s)
        )?;
        match &p.evaluation {
            Some(e) => {
                write!(
                    f,
                    "  evaluation: {} episodes, mean return {:.3}, fall rate {:.3}",
                    e.episodes, e.mean_return, e.fall_rate
                )?;
                if let (Some(r), Some(fr)) = (e.teacher_mean_return, e.teacher_fall_rate) {
                    write!(f, " (teacher: mean return {r:.3}, fall rate {fr:.3})")?;
                }
                Ok(())
            }
            None => write!(f, "  evaluation: none"),
        }
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds.
fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

// ---------------------------------------------------------------------------------------------
// File system helpers.

fn sync_dir(dir: &Path) -> Result<(), InstallError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("sync directory", dir))
}

fn remove_if_exists(path: &Path) -> Result<(), InstallError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("remove", path)(e)),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `dir/.NAME.tmp`, syncs it and renames it to `dir/NAME`, then syncs `dir`.
fn write_file_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), InstallError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))?;
    sync_dir(dir)
}

/// Makes a symlink to `slot` under the temporary name `root/.NAME.tmp` (see [`commit_link`]).
fn temp_link(root: &Path, name: &str, slot: Slot) -> Result<PathBuf, InstallError> {
    let tmp = root.join(format!(".{name}.tmp"));
    remove_if_exists(&tmp)?;
    symlink(&slot.link_target(), &tmp).map_err(io_err("create symlink", &tmp))?;
    Ok(tmp)
}

/// Renames the temporary link over `root/NAME` (one atomic `rename(2)`) and syncs the root.
fn commit_link(root: &Path, tmp: &Path, name: &str) -> Result<(), InstallError> {
    let link = root.join(name);
    fs::rename(tmp, &link).map_err(io_err("switch symlink", &link))?;
    sync_dir(root)
}

/// Points the symlink `root/NAME` at `slot` atomically.
fn set_link(root: &Path, name: &str, slot: Slot) -> Result<(), InstallError> {
    let tmp = temp_link(root, name, slot)?;
    commit_link(root, &tmp, name)
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::other("slot links need a Unix file system"))
}

/// The slot `root/NAME` points at; `None` when the link does not exist.
fn read_link(root: &Path, name: &str) -> Result<Option<Slot>, InstallError> {
    let link = root.join(name);
    let target = match fs::read_link(&link) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read symlink", &link)(e)),
    };
    Slot::BOTH
        .into_iter()
        .find(|s| target == s.link_target())
        .map(Some)
        .ok_or_else(|| InstallError::Layout {
            path: link,
            detail: format!(
                "points at {}, expected slots/a or slots/b (not written by clawrl-runtime install?)",
                target.display()
            ),
        })
}

/// Holds `root/.lock` until dropped.
struct Lock(#[allow(dead_code)] File);

fn lock(root: &Path) -> Result<Lock, InstallError> {
    let path = root.join(".lock");
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err("open lock", &path))?;
    // A lock just released can look held for a moment: flock belongs to the open file, and a
    // child forked by another thread of this process (before its exec closes the inherited
    // descriptor) still shares the old one. So "busy" means held for LOCK_WAIT, not once.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(Lock(f)),
            Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(InstallError::Busy {
                    root: root.to_path_buf(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(io_err("lock", &path)(e)),
        }
    }
}

/// How long a held root lock is waited for before an install or rollback reports it busy.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

fn read_record(slot: Slot, root: &Path) -> Result<Record, InstallError> {
    let path = slot.record(root);
    let text = fs::read_to_string(&path).map_err(io_err("read install record", &path))?;
    serde_json::from_str(&text).map_err(|e| InstallError::Layout {
        path,
        detail: format!("not an install record: {e}"),
    })
}

/// Reads the bundle in `slot` (integrity and, when present, signature) and its record, and
/// checks they agree.
fn verify_slot(slot: Slot, root: &Path) -> Result<Installed, InstallError> {
    let bundle = slot.bundle(root);
    let b = clawrl_bundle::read(&bundle, &Trust::default())?;
    let record = read_record(slot, root)?;
    if record.sha256 != b.sha256_hex() {
        return Err(InstallError::Layout {
            path: slot.record(root),
            detail: format!(
                "records sha256 {}, but {} holds {}",
                record.sha256,
                bundle.display(),
                b.sha256_hex()
            ),
        });
    }
    Ok(Installed {
        slot,
        bundle,
        record,
    })
}

fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

// ---------------------------------------------------------------------------------------------
// Install, rollback, status.

/// Installs `bundle_path` under `root`: verifies it with `trust`, checks it against `robot`,
/// copies it into the slot `current` does not point at, reads the copy back, then switches
/// `current` to it and `previous` to the old slot. See the module documentation for the
/// layout and the crash-safety argument.
pub fn install(
    root: &Path,
    bundle_path: &Path,
    trust: &Trust,
    robot: &RobotSpec,
) -> Result<Installed, InstallError> {
    let abort_at = abort_step()?;

    at(Step::Verify, abort_at);
    let bundle = clawrl_bundle::read(bundle_path, trust)?;
    check_bundle(&bundle, robot)?;
    // The bytes that were verified travel from memory (a source inside the slot about to be
    // cleared survives), and the copy is read back against the verified digest.
    let bytes = fs::read(bundle_path).map_err(io_err("read", bundle_path))?;

    for d in [root.to_path_buf(), Slot::A.dir(root), Slot::B.dir(root)] {
        fs::create_dir_all(&d).map_err(io_err("create directory", &d))?;
    }
    let _lock = lock(root)?;
    let old = read_link(root, "current")?;
    let target = old.map_or(Slot::A, Slot::other);
    let dir = target.dir(root);

    at(Step::DropPrevious, abort_at);
    if read_link(root, "previous")? == Some(target) {
        remove_if_exists(&root.join("previous"))?;
        sync_dir(root)?;
    }

    at(Step::ClearSlot, abort_at);
    remove_if_exists(&target.record(root))?;
    remove_if_exists(&target.bundle(root))?;
    sync_dir(&dir)?;

    at(Step::CopyTemp, abort_at);
    let tmp = dir.join(format!(".{BUNDLE_FILE}.tmp"));
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(&bytes).map_err(io_err("write", &tmp))?;

    at(Step::Fsync, abort_at);
    f.sync_all().map_err(io_err("sync", &tmp))?;
    drop(f);

    at(Step::RenameIntoSlot, abort_at);
    let installed = target.bundle(root);
    fs::rename(&tmp, &installed).map_err(io_err("rename into slot", &installed))?;
    sync_dir(&dir)?;

    at(Step::VerifyCopy, abort_at);
    let copy = clawrl_bundle::read(&installed, trust)?;
    if copy.sha256 != bundle.sha256 {
        return Err(InstallError::CopyMismatch {
            path: installed,
            detail: format!(
                "content sha256 {}, verified {}",
                copy.sha256_hex(),
                bundle.sha256_hex()
            ),
        });
    }
    check_bundle(&copy, robot)?;

    at(Step::WriteRecord, abort_at);
    let record = Record {
        sha256: bundle.sha256_hex(),
        file_sha256: clawrl_bundle::file_sha256(&installed).map_err(io_err("hash", &installed))?,
        source: fs::canonicalize(bundle_path).unwrap_or_else(|_| bundle_path.to_path_buf()),
        installed_unix_s: now_unix_s(),
        signer: bundle.signer.map(|k| hex(k.as_bytes())),
        provenance: ProvenanceSummary::of(&bundle),
    };
    let json = serde_json::to_string_pretty(&record).expect("a record always serialises");
    write_file_atomically(&dir, RECORD_FILE, json.as_bytes())?;

    at(Step::LinkTemp, abort_at);
    let tmp = temp_link(root, "current", target)?;

    // `previous` is set before the switch, so every interruption leaves `current` on the old
    // slot (and at worst `previous` on it too, which `rollback` refuses by name).
    at(Step::SetPrevious, abort_at);
    if let Some(old) = old {
        set_link(root, "previous", old)?;
    }

    at(Step::SwitchCurrent, abort_at);
    commit_link(root, &tmp, "current")?;

    Ok(Installed {
        slot: target,
        bundle: installed,
        record,
    })
}

/// Switches `current` back to `previous` (and `previous` to what was current), after checking
/// that the previous bundle still verifies and matches its record.
pub fn rollback(root: &Path) -> Result<Installed, InstallError> {
    let no_previous = |reason: String| InstallError::NoPrevious {
        root: root.to_path_buf(),
        reason,
    };
    let not_installed = || InstallError::NotInstalled {
        root: root.to_path_buf(),
    };
    read_link(root, "current")?.ok_or_else(not_installed)?;
    let _lock = lock(root)?;
    let current = read_link(root, "current")?.ok_or_else(not_installed)?;
    let Some(previous) = read_link(root, "previous")? else {
        return Err(no_previous(format!(
            "{} does not exist (one bundle was installed, or an install was interrupted after clearing the old slot)",
            root.join("previous").display()
        )));
    };
    if previous == current {
        return Err(no_previous(format!(
            "previous and current both point at {current} (an install was interrupted before it switched)"
        )));
    }
    let back = verify_slot(previous, root).map_err(|e| {
        no_previous(format!(
            "the previous bundle in {previous} no longer verifies: {e}"
        ))
    })?;
    set_link(root, "current", previous)?;
    set_link(root, "previous", current)?;
    Ok(back)
}

/// The bundle `current` points at, for `clawrl-runtime run`.
pub fn current_bundle(root: &Path) -> Result<PathBuf, InstallError> {
    let slot = read_link(root, "current")?.ok_or_else(|| InstallError::NotInstalled {
        root: root.to_path_buf(),
    })?;
    let path = slot.bundle(root);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(InstallError::Layout {
            path,
            detail: "is not a regular file".into(),
        }),
        Err(e) => Err(io_err("current bundle", &path)(e)),
    }
}

/// What a slot holds.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotState {
    Empty,
    Installed(Box<Installed>),
    /// Something is there but does not verify (an interrupted install into the inactive slot,
    /// or damage): why.
    Broken(String),
}

/// Both slots, and where `current` and `previous` point.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub root: PathBuf,
    pub current: Option<Slot>,
    pub previous: Option<Slot>,
    pub slots: [(Slot, SlotState); 2],
}

impl Status {
    /// The current slot's bundle, if it verifies.
    pub fn current_installed(&self) -> Option<&Installed> {
        let c = self.current?;
        self.slots.iter().find_map(|(s, st)| match st {
            SlotState::Installed(i) if *s == c => Some(&**i),
            _ => None,
        })
    }
}

/// Reads both slots (each bundle is verified for integrity and against its record).
pub fn status(root: &Path) -> Result<Status, InstallError> {
    if !root.is_dir() {
        return Err(InstallError::NotInstalled {
            root: root.to_path_buf(),
        });
    }
    let current = read_link(root, "current")?;
    let previous = read_link(root, "previous")?;
    let state = |slot: Slot| {
        let bundle = slot.bundle(root);
        if !bundle.exists() && !slot.record(root).exists() {
            return SlotState::Empty;
        }
        match verify_slot(slot, root) {
            Ok(i) => SlotState::Installed(Box::new(i)),
            Err(e) => SlotState::Broken(e.to_string()),
        }
    };
    Ok(Status {
        root: root.to_path_buf(),
        current,
        previous,
        slots: [(Slot::A, state(Slot::A)), (Slot::B, state(Slot::B))],
    })
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |s: Option<Slot>| s.map_or("none".to_string(), |s| s.to_string());
        writeln!(
            f,
            "clawrl bundles under {}: current {}, previous {}",
            self.root.display(),
            name(self.current),
            name(self.previous)
        )?;
        for (slot, state) in &self.slots {
            let mut roles = Vec::new();
            if self.current == Some(*slot) {
                roles.push("current");
            }
            if self.previous == Some(*slot) {
                roles.push("previous");
            }
            let roles = if roles.is_empty() {
                String::new()
            } else {
                format!(" ({})", roles.join(", "))
            };
            match state {
                SlotState::Empty => writeln!(f, "{slot}{roles}: empty")?,
                SlotState::Broken(why) => writeln!(f, "{slot}{roles}: does not verify: {why}")?,
                SlotState::Installed(i) => {
                    let text = i.to_string();
                    let body = text.strip_prefix(&slot.to_string()).unwrap_or(&text);
                    writeln!(f, "{slot}{roles}{body}")?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The `clawrl-runtime` subcommands.

/// `clawrl-runtime install`: verify a bundle, copy it into the inactive slot and switch to it.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The policy bundle (`clawrl export`).
    pub bundle: PathBuf,
    /// Runtime configuration (TOML): its `[robot]` section and control rate are what the
    /// bundle must fit, as `clawrl-runtime run` will check it.
    #[arg(long, default_value = "configs/runtime/robot.toml")]
    pub config: PathBuf,
    /// Where the slots live.
    #[arg(long, default_value = DEFAULT_ROOT)]
    pub root: PathBuf,
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
    /// Where the slots live.
    #[arg(long, default_value = DEFAULT_ROOT)]
    pub root: PathBuf,
}

/// Runs `clawrl-runtime install`; returns what to print.
pub fn run_install(a: &InstallArgs) -> anyhow::Result<String> {
    let trust = Trust::from_key_files(&a.trust, a.require_signature)?;
    let robot = crate::config::RuntimeConfig::load(&a.config, &[])?.robot_spec();
    let i = install(&a.root, &a.bundle, &trust, &robot)?;
    Ok(format!("installed into {i}"))
}

/// Runs `clawrl-runtime rollback`; returns what to print.
pub fn run_rollback(a: &RootArgs) -> anyhow::Result<String> {
    Ok(format!("rolled back to {}", rollback(&a.root)?))
}

/// Runs `clawrl-runtime status`; returns what to print.
pub fn run_status(a: &RootArgs) -> anyhow::Result<String> {
    Ok(status(&a.root)?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn step_names_are_unique_and_parse_back() {
        for (i, s) in Step::ALL.iter().enumerate() {
            assert!(Step::ALL[..i].iter().all(|t| t.name() != s.name()));
        }
    }
}
