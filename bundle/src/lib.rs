//! The policy bundle: the one artefact that leaves the desktop. It holds the student network's
//! weights and everything the robot runtime needs to run them, and depends on nothing of the
//! project but `clawrl-robot` (no MuJoCo, no candle).
//!
//! # File format `clawrl-bundle-1`
//!
//! One safetensors file, so any safetensors tool can open it.
//! - Tensors: the student's parameters, F32 only, named by the caller (`actor.0.weight`).
//! - Metadata (string -> string), no other entries:
//!   - `clawrl.bundle.format` = `clawrl-bundle-1`
//!   - `clawrl.bundle.manifest` = the [`Manifest`] as JSON
//!   - `clawrl.bundle.sha256` = lowercase hex SHA-256 over the format string, the manifest
//!     JSON, then every tensor in name order (name, dtype, shape as u64 LE, data as f32 LE),
//!     each item prefixed by its length as u64 LE, so no two different contents hash alike.
//!   - optional `clawrl.bundle.signature` = `{"public_key": hex32, "signature": hex64}`,
//!     Ed25519 over the 32 digest bytes.
//!
//! [`read`] refuses a file with one [`BundleError`] naming the file and the first check that
//! failed, in this order: read, container, format, integrity, manifest, signature. Whether a
//! valid bundle fits a robot is [`check_fits`] against the robot's [`RobotSpec`] (the robot
//! side builds it from its runtime config). [`write`] checks the manifest first and replaces
//! the target atomically.
mod compat;
mod container;
mod error;
mod manifest;
mod sign;

pub use compat::{Incompatible, RobotSpec, check_fits};
pub use container::{
    Bundle, FORMAT, KEY_FORMAT, KEY_MANIFEST, KEY_SHA256, KEY_SIGNATURE, SUPPORTED_FORMATS, Tensor,
    digest, file_sha256, read, read_bytes, write,
};
pub use ed25519_dalek::{SigningKey, VerifyingKey};
pub use error::{BundleError, Check, KeyError, ManifestError};
pub use manifest::{
    ActionSpec, Evaluation, FORMAT_VERSION, Manifest, NetworkSpec, NormalizerStats,
    ObservationSpec, Provenance, RobotInfo,
};
pub use sign::{
    PUBLIC_KEY_HEADER, SECRET_KEY_HEADER, Trust, generate_keypair, hex, load_public_key,
    load_signing_key, save_public_key, save_signing_key, secret_key_warning,
};
