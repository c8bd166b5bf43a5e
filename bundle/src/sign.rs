//! Ed25519 signing keys, key files and the trust policy of a reader.
use std::fs;
use std::io::Write;
use std::path::Path;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::KeyError;

/// Which bundles a reader accepts.
///
/// `Default` accepts unsigned bundles; a signature that is present is still verified. With
/// `keys` non-empty a signature by one of them is required, whatever `require_signature` says:
/// the digest does not cover the signature entry, so deleting it from a signed bundle leaves
/// a valid unsigned one, and naming a trusted key must not let that through.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Keys whose signatures are accepted, and one of which must have signed. Empty: any key,
    /// as long as its signature is valid.
    pub keys: Vec<VerifyingKey>,
    /// Refuse unsigned bundles even with `keys` empty, which then refuses every bundle: a
    /// signature anyone could make proves nothing. (Implied when `keys` is non-empty.)
    pub require_signature: bool,
}

impl Trust {
    /// Accepts only bundles signed by one of `keys`.
    pub fn signed_by(keys: Vec<VerifyingKey>) -> Self {
        Self {
            keys,
            require_signature: true,
        }
    }

    /// Trust in the public keys of `files` (as [`save_public_key`] writes them): what every
    /// command's `--trust KEYFILE` and the runtime's `install.trusted_keys` read.
    pub fn from_key_files<P: AsRef<Path>>(
        files: &[P],
        require_signature: bool,
    ) -> Result<Self, KeyError> {
        let keys = files
            .iter()
            .map(load_public_key)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            keys,
            require_signature,
        })
    }

    /// Whether an unsigned bundle is refused: asked for, or implied by any trusted key.
    pub fn signature_required(&self) -> bool {
        self.require_signature || !self.keys.is_empty()
    }

    /// Checks an optional signature block over `digest`; returns the signer.
    pub(crate) fn verify(
        &self,
        block: Option<&str>,
        digest: &[u8; 32],
    ) -> Result<Option<VerifyingKey>, String> {
        let Some(block) = block else {
            return if self.signature_required() {
                Err(if self.keys.is_empty() {
                    "the bundle is unsigned and a signature is required".into()
                } else {
                    format!(
                        "the bundle is unsigned (or its signature entry was removed) and {} \
                         trusted key(s) were named: a signature by one of them is required",
                        self.keys.len()
                    )
                })
            } else {
                Ok(None)
            };
        };
        let (key, sig) = parse_block(block)?;
        key.verify_strict(digest, &sig).map_err(|_| {
            format!(
                "the signature by key {} does not match the content",
                hex(key.as_bytes())
            )
        })?;
        if self.require_signature && self.keys.is_empty() {
            return Err("a signature is required but no trusted key was given".into());
        }
        if !self.keys.is_empty() && !self.keys.contains(&key) {
            return Err(format!(
                "signed by key {}, which is not among the {} trusted keys",
                hex(key.as_bytes()),
                self.keys.len()
            ));
        }
        Ok(Some(key))
    }
}

/// The `clawrl.bundle.signature` metadata entry.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureBlock {
    public_key: String,
    signature: String,
}

pub(crate) fn signature_block(key: &SigningKey, digest: &[u8; 32]) -> String {
    let block = SignatureBlock {
        public_key: hex(key.verifying_key().as_bytes()),
        signature: hex(&key.sign(digest).to_bytes()),
    };
    serde_json::to_string(&block).expect("two strings always serialise")
}

fn parse_block(block: &str) -> Result<(VerifyingKey, Signature), String> {
    let b: SignatureBlock =
        serde_json::from_str(block).map_err(|e| format!("unreadable signature entry: {e}"))?;
    let key = from_hex::<32>(&b.public_key)
        .and_then(|k| VerifyingKey::from_bytes(&k).map_err(|e| e.to_string()))
        .map_err(|e| format!("public key {:?}: {e}", b.public_key))?;
    let sig = from_hex::<64>(&b.signature).map_err(|e| format!("signature: {e}"))?;
    Ok((key, Signature::from_bytes(&sig)))
}

/// A fresh signing key from the operating system's random source.
pub fn generate_keypair() -> SigningKey {
    SigningKey::generate(&mut rand_core::OsRng)
}

fn key_error(path: &Path, detail: impl std::fmt::Display) -> KeyError {
    KeyError {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

fn save_hex(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => key_error(path, "already exists; not overwritten"),
        _ => key_error(path, e),
    })?;
    writeln!(f, "{}", hex(bytes))
        .and_then(|()| f.sync_all())
        .map_err(|e| key_error(path, e))
}

fn load_hex<const N: usize>(path: &Path) -> Result<[u8; N], KeyError> {
    let text = fs::read_to_string(path).map_err(|e| key_error(path, e))?;
    from_hex::<N>(text.trim()).map_err(|e| key_error(path, e))
}

/// Writes the secret key as one line of hex, mode 0600. Refuses to overwrite an existing file.
pub fn save_signing_key(path: impl AsRef<Path>, key: &SigningKey) -> Result<(), KeyError> {
    save_hex(path.as_ref(), key.as_bytes(), 0o600)
}

pub fn load_signing_key(path: impl AsRef<Path>) -> Result<SigningKey, KeyError> {
    load_hex::<32>(path.as_ref()).map(|k| SigningKey::from_bytes(&k))
}

/// Writes the public key as one line of hex. Refuses to overwrite an existing file.
pub fn save_public_key(path: impl AsRef<Path>, key: &VerifyingKey) -> Result<(), KeyError> {
    save_hex(path.as_ref(), key.as_bytes(), 0o644)
}

pub fn load_public_key(path: impl AsRef<Path>) -> Result<VerifyingKey, KeyError> {
    let path = path.as_ref();
    let bytes = load_hex::<32>(path)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| key_error(path, "not a valid Ed25519 public key"))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Exactly `N` bytes from lowercase hex (one spelling per value, so no flipped bit goes unseen).
pub(crate) fn from_hex<const N: usize>(s: &str) -> Result<[u8; N], String> {
    // The text may be a secret key: say what is wrong, never what it says.
    if let Some(i) = s.chars().position(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(format!("character {i} is not a lowercase hex digit"));
    }
    if s.len() != 2 * N {
        return Err(format!("{} hex digits, expected {}", s.len(), 2 * N));
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).expect("ascii");
        *o = u8::from_str_radix(pair, 16).expect("hex digits");
    }
    Ok(out)
}
