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

/// First line of a secret key file.
pub const SECRET_KEY_HEADER: &str = "clawrl ed25519 secret key";
/// First line of a public key file.
pub const PUBLIC_KEY_HEADER: &str = "clawrl ed25519 public key";

/// What a key file says it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Secret,
    Public,
}

impl Kind {
    fn header(self) -> &'static str {
        match self {
            Kind::Secret => SECRET_KEY_HEADER,
            Kind::Public => PUBLIC_KEY_HEADER,
        }
    }
}

fn save_key(path: &Path, kind: Kind, bytes: &[u8], mode: u32) -> Result<(), KeyError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => key_error(path, "already exists; not overwritten"),
        std::io::ErrorKind::NotFound => key_error(
            path,
            format!(
                "its folder {} does not exist",
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .display()
            ),
        ),
        _ => key_error(path, e),
    })?;
    writeln!(f, "{}\n{}", kind.header(), hex(bytes))
        .and_then(|()| f.sync_all())
        .map_err(|e| key_error(path, e))
}

/// Reads a key file of `want`'s kind: the header line and one line of hex. A file whose
/// header names the other kind is refused with that reason. Files without a header (one line
/// of hex, what `clawrl keygen` wrote before the headers) are still read, except where the
/// name says the other kind (`.pub` given as a secret, `.key` as a public key): the two
/// headerless kinds cannot be told apart by their content.
fn load_key<const N: usize>(path: &Path, want: Kind) -> Result<[u8; N], KeyError> {
    let text = fs::read_to_string(path).map_err(|e| key_error(path, e))?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let other = match want {
        Kind::Secret => Kind::Public,
        Kind::Public => Kind::Secret,
    };
    let refuse_other = || match want {
        Kind::Secret => key_error(
            path,
            "it is a public key, not a secret key: signing needs the secret key \
             (NAME.key from `clawrl keygen`); a key derived from public bytes proves nothing",
        ),
        Kind::Public => key_error(
            path,
            "it is a secret key, not a public key: trust the public key (NAME.pub from \
             `clawrl keygen`) and keep the secret key off the robot",
        ),
    };
    let hex_line = if first == want.header() {
        lines.next().unwrap_or("")
    } else if first == other.header() {
        return Err(refuse_other());
    } else if first.starts_with("clawrl ") {
        return Err(key_error(
            path,
            "its first line names no key kind clawrl knows",
        ));
    } else {
        let ext = path.extension().and_then(|e| e.to_str());
        let named_other = match other {
            Kind::Public => ext == Some("pub"),
            Kind::Secret => ext == Some("key"),
        };
        if named_other {
            return Err(refuse_other());
        }
        first
    };
    if lines.next().is_some() {
        return Err(key_error(path, "more than one line of key"));
    }
    from_hex::<N>(hex_line).map_err(|e| key_error(path, e))
}

/// Writes the secret key (header line, then hex), mode 0600. Refuses to overwrite an existing
/// file.
pub fn save_signing_key(path: impl AsRef<Path>, key: &SigningKey) -> Result<(), KeyError> {
    save_key(path.as_ref(), Kind::Secret, key.as_bytes(), 0o600)
}

/// Reads a secret key file; a public key file is refused. See [`secret_key_warning`] for its
/// permissions.
pub fn load_signing_key(path: impl AsRef<Path>) -> Result<SigningKey, KeyError> {
    load_key::<32>(path.as_ref(), Kind::Secret).map(|k| SigningKey::from_bytes(&k))
}

/// A warning when the secret key file at `path` can be read by its group or by others.
pub fn secret_key_warning(path: impl AsRef<Path>) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let path = path.as_ref();
        let mode = fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then(|| {
            format!(
                "the secret key {} can be read by others (mode {mode:04o}); \
                 anyone who reads it can sign bundles your robots trust: chmod 600 it",
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Writes the public key (header line, then hex). Refuses to overwrite an existing file.
pub fn save_public_key(path: impl AsRef<Path>, key: &VerifyingKey) -> Result<(), KeyError> {
    save_key(path.as_ref(), Kind::Public, key.as_bytes(), 0o644)
}

/// Reads a public key file; a secret key file is refused.
pub fn load_public_key(path: impl AsRef<Path>) -> Result<VerifyingKey, KeyError> {
    let path = path.as_ref();
    let bytes = load_key::<32>(path, Kind::Public)?;
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
