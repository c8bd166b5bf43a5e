use std::fmt;
use std::path::{Path, PathBuf};

/// Which check refused a bundle. Reading runs them in this order and stops at the first refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The file could not be read.
    Read,
    /// Not a safetensors file, or a truncated one (or, when writing, tensors whose data does
    /// not match their shape).
    Container,
    /// The format string is missing or unknown, or the metadata is not a bundle's.
    Format,
    /// The SHA-256 over the content does not match: the file is damaged.
    Integrity,
    /// The manifest is not valid JSON or fails [`crate::Manifest::check`].
    Manifest,
    /// Bad signature, unsigned but required, or signed by a key that is not trusted.
    Signature,
    /// The bundle is for another robot (model name or MJCF hash).
    Robot,
    /// Writing the file failed (the target, if it existed, is left as it was).
    Write,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Container => "container",
            Self::Format => "format",
            Self::Integrity => "integrity",
            Self::Manifest => "manifest",
            Self::Signature => "signature",
            Self::Robot => "robot",
            Self::Write => "write",
        })
    }
}

/// A refused bundle: which file, which check, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("bundle {}: {check} check failed: {detail}", path.display())]
pub struct BundleError {
    pub path: PathBuf,
    pub check: Check,
    pub detail: String,
}

impl BundleError {
    pub(crate) fn new(path: &Path, check: Check, detail: impl fmt::Display) -> Self {
        Self {
            path: path.to_path_buf(),
            check,
            detail: detail.to_string(),
        }
    }
}

/// A key file that could not be written or read.
#[derive(Debug, thiserror::Error)]
#[error("key file {}: {detail}", path.display())]
pub struct KeyError {
    pub path: PathBuf,
    pub detail: String,
}

/// A manifest field that fails [`crate::Manifest::check`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {detail}")]
pub struct ManifestError {
    /// Dotted path of the field, e.g. `observation.normalizer.var`.
    pub field: String,
    pub detail: String,
}
