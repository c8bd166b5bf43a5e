//! The two slots, the install steps (and the fault-injection hook that stops before one),
//! what each slot records about its bundle, and how that reads to an operator.
use super::*;

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
    pub(super) fn link_target(self) -> PathBuf {
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
    /// Remove the inactive slot's record: from here its bundle no longer verifies, so nothing
    /// (rollback, status) takes it for an installed one.
    ClearRecord,
    /// Unlink `previous` if it points at that slot. Only now: an install stopped before this
    /// leaves the previous bundle intact and `previous` on it, for rollback.
    DropPrevious,
    /// Remove the old bundle, and anything an interrupted install left, from the slot.
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
    pub const ALL: [Step; 12] = [
        Step::Verify,
        Step::ClearRecord,
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
            Step::ClearRecord => "ClearRecord",
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
pub(super) fn abort_step() -> Result<Option<Step>, InstallError> {
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
pub(super) fn at(step: Step, abort_at: Option<Step>) {
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
    /// The install found this bundle already current and changed nothing (so the previous
    /// bundle stays where rollback finds it).
    pub already_current: bool,
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

pub(super) fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds.
pub(super) fn utc(unix_s: u64) -> String {
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
