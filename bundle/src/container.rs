//! The safetensors container: writing, reading and the digest over a bundle's content.
use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ed25519_dalek::{SigningKey, VerifyingKey};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};

use crate::sign::{from_hex, hex, signature_block};
use crate::{BundleError, Check, Manifest, Trust};

/// The format string this crate writes.
pub const FORMAT: &str = "clawrl-bundle-1";
/// Format strings this crate reads.
pub const SUPPORTED_FORMATS: &[&str] = &[FORMAT];

pub const KEY_FORMAT: &str = "clawrl.bundle.format";
pub const KEY_MANIFEST: &str = "clawrl.bundle.manifest";
pub const KEY_SHA256: &str = "clawrl.bundle.sha256";
pub const KEY_SIGNATURE: &str = "clawrl.bundle.signature";
const KEYS: [&str; 4] = [KEY_FORMAT, KEY_MANIFEST, KEY_SHA256, KEY_SIGNATURE];

/// One parameter tensor of the student network (F32, row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// As the network names it, e.g. `actor.0.weight`.
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Tensor {
    pub fn new(name: impl Into<String>, shape: Vec<usize>, data: Vec<f32>) -> Self {
        Self {
            name: name.into(),
            shape,
            data,
        }
    }
}

/// A bundle that passed every check of [`read`].
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The file it was read from.
    pub path: PathBuf,
    pub manifest: Manifest,
    /// Sorted by name.
    pub tensors: Vec<Tensor>,
    /// The content digest (see the crate documentation).
    pub sha256: [u8; 32],
    /// The key that signed it, if it is signed.
    pub signer: Option<VerifyingKey>,
}

impl Bundle {
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256)
    }

    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Refuses a bundle made for another robot model or another MJCF file (`clawrl verify
    /// --model`). Whether it fits a robot in every other way is [`crate::check_fits`].
    pub fn check_robot(&self, model: &str, mjcf_sha256: &str) -> Result<(), BundleError> {
        let r = &self.manifest.robot;
        let refuse = |detail: String| Err(BundleError::new(&self.path, Check::Robot, detail));
        if r.model != model {
            return refuse(format!(
                "made for robot {:?}, this robot is {model:?}",
                r.model
            ));
        }
        if !r.mjcf_sha256.eq_ignore_ascii_case(mjcf_sha256) {
            return refuse(format!(
                "made for MJCF sha256 {}, this robot's is {mjcf_sha256}",
                r.mjcf_sha256
            ));
        }
        Ok(())
    }
}

/// Lowercase hex SHA-256 of a file's bytes (the MJCF hash of [`crate::RobotInfo`], the
/// teacher hash of a distillation run).
pub fn file_sha256(path: impl AsRef<Path>) -> io::Result<String> {
    Ok(hex(&Sha256::digest(fs::read(path)?)))
}

fn le_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The content digest recorded in `clawrl.bundle.sha256`: SHA-256 over the format string, the
/// manifest JSON, then every tensor in name order (name, dtype, shape as u64 LE, data as f32
/// LE), each item prefixed by its length (u64 LE).
pub fn digest(format: &str, manifest_json: &str, tensors: &[Tensor]) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut item = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    item(format.as_bytes());
    item(manifest_json.as_bytes());
    let mut sorted: Vec<&Tensor> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for t in sorted {
        item(t.name.as_bytes());
        item(b"F32");
        let shape: Vec<u8> = t
            .shape
            .iter()
            .flat_map(|&d| (d as u64).to_le_bytes())
            .collect();
        item(&shape);
        item(&le_bytes(&t.data));
    }
    h.finalize().into()
}

/// Names unique and usable, data length matching the shape.
fn check_tensors(tensors: &[Tensor]) -> Result<(), String> {
    let mut names: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("two tensors are named {:?}", w[0]));
    }
    for t in tensors {
        if t.name.is_empty() || t.name == "__metadata__" {
            return Err(format!("tensor name {:?} is reserved", t.name));
        }
        let n = t.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if n != Some(t.data.len()) {
            return Err(format!(
                "tensor {} has shape {:?} but {} values",
                t.name,
                t.shape,
                t.data.len()
            ));
        }
    }
    Ok(())
}

/// Writes a bundle and returns its digest. The manifest and tensors are checked first; the file
/// is written next to `path`, synced and renamed over it, so `path` holds either the old file
/// or the complete new one, never a part.
pub fn write(
    path: impl AsRef<Path>,
    manifest: &Manifest,
    tensors: &[Tensor],
    signing_key: Option<&SigningKey>,
) -> Result<[u8; 32], BundleError> {
    let path = path.as_ref();
    let err = |check, detail: String| BundleError::new(path, check, detail);
    check_tensors(tensors).map_err(|d| err(Check::Container, d))?;
    manifest
        .check(tensors)
        .map_err(|e| err(Check::Manifest, e.to_string()))?;
    let json = serde_json::to_string(manifest).map_err(|e| err(Check::Manifest, e.to_string()))?;
    if serde_json::from_str::<Manifest>(&json).ok().as_ref() != Some(manifest) {
        return Err(err(
            Check::Manifest,
            "does not survive a JSON round trip (a non-finite number?)".into(),
        ));
    }

    let sha = digest(FORMAT, &json, tensors);
    let mut meta = HashMap::from([
        (KEY_FORMAT.to_string(), FORMAT.to_string()),
        (KEY_MANIFEST.to_string(), json),
        (KEY_SHA256.to_string(), hex(&sha)),
    ]);
    if let Some(key) = signing_key {
        meta.insert(KEY_SIGNATURE.to_string(), signature_block(key, &sha));
    }
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|t| le_bytes(&t.data)).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|(t, b)| {
            Ok((
                t.name.as_str(),
                TensorView::new(Dtype::F32, t.shape.clone(), b)?,
            ))
        })
        .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()
        .and_then(|views| safetensors::serialize(views, Some(meta)));
    let file = views.map_err(|e| err(Check::Container, e.to_string()))?;
    write_atomically(path, &file).map_err(|e| err(Check::Write, e.to_string()))?;
    Ok(sha)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the path names no file"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // Make the rename itself durable.
        #[cfg(unix)]
        fs::File::open(dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Reads a bundle, running the checks in the order of [`Check`]: read, container, format,
/// integrity, manifest, signature. The robot check is [`crate::check_fits`].
pub fn read(path: impl AsRef<Path>, trust: &Trust) -> Result<Bundle, BundleError> {
    let path = path.as_ref();
    let bytes = fs::read(path).map_err(|e| BundleError::new(path, Check::Read, e.to_string()))?;
    read_bytes(path, &bytes, trust)
}

/// [`read`] on bytes already in memory (`path` names them in messages): what verifies is then
/// exactly what the caller goes on to use, with no second read of a file that may have changed.
pub fn read_bytes(path: &Path, bytes: &[u8], trust: &Trust) -> Result<Bundle, BundleError> {
    let err = |check, detail: String| BundleError::new(path, check, detail);

    let container = |e: safetensors::SafeTensorError| {
        err(
            Check::Container,
            format!("not a complete safetensors file ({e})"),
        )
    };
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(container)?;
    let st = SafeTensors::deserialize(bytes).map_err(container)?;

    let format_err = |detail: String| err(Check::Format, detail);
    let supported = SUPPORTED_FORMATS.join(", ");
    let meta = header.metadata().clone().unwrap_or_default();
    match meta.get(KEY_FORMAT) {
        None => {
            return Err(format_err(format!(
                "no {KEY_FORMAT} entry (a plain safetensors file?); supported: {supported}"
            )));
        }
        Some(f) if !SUPPORTED_FORMATS.contains(&f.as_str()) => {
            return Err(format_err(format!(
                "format {f:?} is not supported; supported: {supported}"
            )));
        }
        Some(_) => {}
    }
    let mut keys: Vec<&String> = meta.keys().collect();
    keys.sort();
    if let Some(k) = keys.iter().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format_err(format!("unknown metadata entry {k:?}")));
    }
    let entry = |key: &str| {
        meta.get(key)
            .ok_or_else(|| format_err(format!("no {key} entry")))
    };
    let (format, json, recorded) = (entry(KEY_FORMAT)?, entry(KEY_MANIFEST)?, entry(KEY_SHA256)?);
    let mut tensors = Vec::new();
    for (name, view) in st.tensors() {
        if view.dtype() != Dtype::F32 {
            return Err(format_err(format!(
                "tensor {name} is {:?}; {FORMAT} holds F32 only",
                view.dtype()
            )));
        }
        let data = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        tensors.push(Tensor::new(name, view.shape().to_vec(), data));
    }
    tensors.sort_by(|a, b| a.name.cmp(&b.name));

    let sha256 = digest(format, json, &tensors);
    let damaged = |why: String| err(Check::Integrity, format!("the file is damaged: {why}"));
    let recorded = from_hex::<32>(recorded).map_err(|e| damaged(format!("{KEY_SHA256}: {e}")))?;
    if recorded != sha256 {
        return Err(damaged(format!(
            "content SHA-256 {} differs from the recorded {}",
            hex(&sha256),
            hex(&recorded)
        )));
    }

    // The version before the fields: a bundle from a newer clawrl says so, instead of naming
    // the first field this program does not know.
    let version = serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get("format_version")?.as_u64());
    if let Some(v) = version.filter(|&v| v > u64::from(crate::FORMAT_VERSION)) {
        return Err(err(
            Check::Manifest,
            format!(
                "format_version {v}: made by a newer clawrl than this one (it reads format {}); \
                 update this program to read it",
                crate::FORMAT_VERSION
            ),
        ));
    }
    let manifest: Manifest =
        serde_json::from_str(json).map_err(|e| err(Check::Manifest, e.to_string()))?;
    manifest
        .check(&tensors)
        .map_err(|e| err(Check::Manifest, e.to_string()))?;

    let signer = trust
        .verify(meta.get(KEY_SIGNATURE).map(String::as_str), &sha256)
        .map_err(|d| err(Check::Signature, d))?;

    Ok(Bundle {
        path: path.to_path_buf(),
        manifest,
        tensors,
        sha256,
        signer,
    })
}
