//! safetensors files with string metadata, written atomically (temporary file, fsync, rename).
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::{PolicyError, Result};

pub type Metadata = HashMap<String, String>;

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
    let meta = if metadata.is_empty() {
        None
    } else {
        Some(metadata.clone())
    };
    safetensors::serialize(views, meta).map_err(st_err)
}

/// Writes `bytes` to `path` so that `path` is either the old file or the complete new one,
/// whenever the process dies: temporary file in the same directory, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |source| PolicyError::Io {
        path: path.to_path_buf(),
        source,
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
        f.write_all(bytes).map_err(io)?;
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

/// Parses safetensors bytes into CPU tensors and the metadata.
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<(HashMap<String, Tensor>, Metadata)> {
    let bad = |reason: String| PolicyError::BadFile {
        path: path.to_path_buf(),
        reason,
    };
    let st = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
    let mut out = HashMap::new();
    for (name, view) in st.tensors() {
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
    Ok((out, meta.metadata().clone().unwrap_or_default()))
}

/// Loads a file written by [`save`].
pub fn load(path: &Path) -> Result<(HashMap<String, Tensor>, Metadata)> {
    let bytes = std::fs::read(path).map_err(|source| PolicyError::Io {
        path: path.to_path_buf(),
        source,
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
}
