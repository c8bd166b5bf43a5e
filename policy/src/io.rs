//! safetensors files with string metadata, written atomically (temporary file, fsync, rename)
//! and sealed with a sha256 over their contents.
//!
//! The digest lives in the file's own metadata (`clawrl.sha256`) so a checkpoint stays one file.
//! It covers every tensor (name, dtype, shape, bytes) and every other metadata entry, in sorted
//! order: a flipped byte anywhere is refused on load with the file named, instead of becoming a
//! silently wrong policy.
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use sha2::{Digest, Sha256};

use crate::{PolicyError, Result};

pub type Metadata = HashMap<String, String>;

/// Metadata key of the content digest (hex sha256, see [`content_digest`]).
pub const META_SHA256: &str = "clawrl.sha256";

/// sha256 over tensors and metadata, independent of their order in the file. Every field is
/// length-prefixed so that no two different contents hash the same byte stream.
pub fn content_digest<'a>(
    tensors: impl IntoIterator<Item = (&'a str, Dtype, &'a [usize], &'a [u8])>,
    metadata: &Metadata,
) -> String {
    let mut h = Sha256::new();
    let field = |h: &mut Sha256, bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(&mut h, b"clawrl-safetensors-v1");
    let mut ts: Vec<_> = tensors.into_iter().collect();
    ts.sort_by(|a, b| a.0.cmp(b.0));
    for (name, dtype, shape, data) in ts {
        field(&mut h, name.as_bytes());
        field(&mut h, format!("{dtype:?}").as_bytes());
        let dims: Vec<u8> = shape
            .iter()
            .flat_map(|d| (*d as u64).to_le_bytes())
            .collect();
        field(&mut h, &dims);
        field(&mut h, data);
    }
    let mut keys: Vec<&String> = metadata.keys().filter(|k| *k != META_SHA256).collect();
    keys.sort();
    for k in keys {
        field(&mut h, k.as_bytes());
        field(&mut h, metadata[k].as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn st_err(e: impl std::fmt::Display) -> PolicyError {
    PolicyError::SafeTensors(e.to_string())
}

fn to_bytes(t: &Tensor) -> Result<(Dtype, Vec<u8>)> {
    let flat = t.flatten_all()?;
    Ok(match t.dtype() {
        DType::F32 => (
            Dtype::F32,
            flat.to_vec1::<f32>()?
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        DType::F64 => (
            Dtype::F64,
            flat.to_vec1::<f64>()?
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        DType::U8 => (Dtype::U8, flat.to_vec1::<u8>()?),
        DType::U32 => (
            Dtype::U32,
            flat.to_vec1::<u32>()?
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        DType::I64 => (
            Dtype::I64,
            flat.to_vec1::<i64>()?
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        other => {
            return Err(PolicyError::SafeTensors(format!(
                "cannot save dtype {other:?}"
            )));
        }
    })
}

/// Serialises `tensors` and `metadata` to bytes in the safetensors format.
pub fn to_safetensors_bytes(tensors: &[(String, Tensor)], metadata: &Metadata) -> Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let (dtype, bytes) = to_bytes(t)?;
        raw.push((name.clone(), dtype, t.dims().to_vec(), bytes));
    }
    let views: Vec<(String, TensorView<'_>)> = raw
        .iter()
        .map(|(n, d, s, b)| TensorView::new(*d, s.clone(), b).map(|v| (n.clone(), v)))
        .collect::<std::result::Result<_, _>>()
        .map_err(st_err)?;
    let mut meta = metadata.clone();
    let digest = content_digest(
        raw.iter()
            .map(|(n, d, s, b)| (n.as_str(), *d, s.as_slice(), b.as_slice())),
        &meta,
    );
    meta.insert(META_SHA256.to_string(), digest);
    safetensors::serialize(views, Some(meta)).map_err(st_err)
}

/// Writes `bytes` to `path` so that `path` is either the old file or the complete new one,
/// whenever the process dies: temporary file in the same directory, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |err| PolicyError::Io {
        path: path.to_path_buf(),
        err,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        // Two writes with a fault point between them, so a test can kill the process while
        // the file is half written (see `crate::fault`).
        let (head, tail) = bytes.split_at(bytes.len() / 2);
        f.write_all(head).map_err(io)?;
        crate::fault::point("write_atomic.mid_write", &path.to_string_lossy());
        f.write_all(tail).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Saves tensors and metadata to `path` atomically.
pub fn save(path: &Path, tensors: &[(String, Tensor)], metadata: &Metadata) -> Result<()> {
    write_atomic(path, &to_safetensors_bytes(tensors, metadata)?)
}

/// Parses safetensors bytes into CPU tensors and the metadata, after checking the content
/// digest. The returned metadata no longer holds the digest.
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<(HashMap<String, Tensor>, Metadata)> {
    let bad = |reason: String| PolicyError::BadFile {
        path: path.to_path_buf(),
        reason,
    };
    let st = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
    let mut meta = meta.metadata().clone().unwrap_or_default();
    let stored = meta.remove(META_SHA256).ok_or_else(|| {
        bad(format!(
            "no `{META_SHA256}` content digest: not written by this version of clawrl, or damaged"
        ))
    })?;
    let views = st.tensors();
    let actual = content_digest(
        views
            .iter()
            .map(|(n, v)| (n.as_str(), v.dtype(), v.shape(), v.data())),
        &meta,
    );
    if actual != stored {
        return Err(bad(format!(
            "content digest mismatch (file says sha256 {stored}, contents hash to {actual}): the file is corrupt"
        )));
    }
    let mut out = HashMap::new();
    for (name, view) in views {
        let shape = view.shape().to_vec();
        let data = view.data();
        let dev = &Device::Cpu;
        let t = match view.dtype() {
            Dtype::F32 => Tensor::from_vec(
                data.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
                shape,
                dev,
            )?,
            Dtype::F64 => Tensor::from_vec(
                data.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
                shape,
                dev,
            )?,
            Dtype::U8 => Tensor::from_vec(data.to_vec(), shape, dev)?,
            Dtype::U32 => Tensor::from_vec(
                data.chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
                shape,
                dev,
            )?,
            Dtype::I64 => Tensor::from_vec(
                data.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
                shape,
                dev,
            )?,
            other => {
                return Err(bad(format!(
                    "tensor {name} has unsupported dtype {other:?}"
                )));
            }
        };
        out.insert(name, t);
    }
    Ok((out, meta))
}

/// Loads a file written by [`save`].
pub fn load(path: &Path) -> Result<(HashMap<String, Tensor>, Metadata)> {
    let bytes = std::fs::read(path).map_err(|err| PolicyError::Io {
        path: path.to_path_buf(),
        err,
    })?;
    from_bytes(&bytes, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_values_dtypes_and_metadata() {
        let dev = &Device::Cpu;
        let tensors = vec![
            (
                "a".to_string(),
                Tensor::new(&[[1.0f32, 2.0], [3.0, -4.5]], dev).unwrap(),
            ),
            (
                "b".to_string(),
                Tensor::new(&[1.0e-300f64, 2.0], dev).unwrap(),
            ),
            ("c".to_string(), Tensor::new(&[u32::MAX, 1], dev).unwrap()),
        ];
        let meta: Metadata = [("kind".to_string(), "x".to_string())].into();
        let dir = std::env::temp_dir().join(format!("clawrl-io-{}", std::process::id()));
        let path = dir.join("t.safetensors");
        save(&path, &tensors, &meta).unwrap();
        let (back, m) = load(&path).unwrap();
        assert_eq!(m["kind"], "x");
        assert_eq!(
            back["a"].to_vec2::<f32>().unwrap(),
            vec![vec![1.0, 2.0], vec![3.0, -4.5]]
        );
        assert_eq!(back["b"].to_vec1::<f64>().unwrap(), vec![1.0e-300, 2.0]);
        assert_eq!(back["c"].to_vec1::<u32>().unwrap(), vec![u32::MAX, 1]);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A truncated file is refused with its path named.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("t.safetensors"), "{e}");
        std::fs::remove_dir_all(dir).ok();
    }

    fn sample() -> Vec<u8> {
        let t = Tensor::new(&[1.0f32, 2.0, 3.0, 4.0], &Device::Cpu).unwrap();
        let meta: Metadata = [("kind".to_string(), "x".to_string())].into();
        to_safetensors_bytes(&[("w".to_string(), t)], &meta).unwrap()
    }

    #[test]
    fn digest_is_stored_checked_and_stripped() {
        let bytes = sample();
        let (t, meta) = from_bytes(&bytes, Path::new("p.safetensors")).unwrap();
        assert!(!meta.contains_key(META_SHA256));
        assert_eq!(t["w"].to_vec1::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        let (_, raw) = SafeTensors::read_metadata(&bytes).unwrap();
        let stored = &raw.metadata().as_ref().unwrap()[META_SHA256];
        assert_eq!(stored.len(), 64);
    }

    #[test]
    fn a_flipped_data_byte_is_refused_naming_the_file() {
        let mut bytes = sample();
        let n = bytes.len();
        bytes[n - 3] ^= 0x01; // inside the last float's bytes
        let e = from_bytes(&bytes, Path::new("runs/x/ckpt.safetensors"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runs/x/ckpt.safetensors") && e.contains("digest mismatch"),
            "{e}"
        );
    }

    #[test]
    fn a_changed_metadata_value_or_missing_digest_is_refused() {
        let bytes = sample();
        // Same length, other bytes: the header still parses, the digest no longer matches.
        let replace = |from: &[u8], to: &[u8]| -> Vec<u8> {
            let i = bytes.windows(from.len()).position(|w| w == from).unwrap();
            let mut b = bytes.clone();
            b[i..i + from.len()].copy_from_slice(to);
            b
        };
        let changed = replace(b"\"kind\":\"x\"", b"\"kind\":\"y\"");
        let e = from_bytes(&changed, Path::new("m.safetensors")).unwrap_err();
        assert!(e.to_string().contains("digest mismatch"), "{e}");
        let renamed = replace(META_SHA256.as_bytes(), b"clawrl.sha257");
        let e = from_bytes(&renamed, Path::new("m.safetensors")).unwrap_err();
        assert!(e.to_string().contains("no `clawrl.sha256`"), "{e}");
    }

    #[test]
    fn digest_ignores_order_but_not_content() {
        let m: Metadata = [("a".into(), "1".into()), ("b".into(), "2".into())].into();
        let d = |ts: Vec<(&'static str, &'static [u8])>, m: &Metadata| {
            content_digest(
                ts.into_iter()
                    .map(|(n, b)| (n, Dtype::U8, &[1usize][..], b)),
                m,
            )
        };
        let one = d(vec![("x", b"1"), ("y", b"2")], &m);
        assert_eq!(one, d(vec![("y", b"2"), ("x", b"1")], &m));
        assert_ne!(one, d(vec![("x", b"2"), ("y", b"1")], &m));
        // Moving a byte between name and data is a different content.
        assert_ne!(
            d(vec![("xy", b"")], &Metadata::new()),
            d(vec![("x", b"y")], &Metadata::new())
        );
    }
}
