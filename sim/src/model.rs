//! Loading MJCF models with errors that name the file and MuJoCo's reason.
use std::path::Path;

use mujoco_rs::prelude::*;

use crate::SimError;

/// Loads an MJCF file. On failure the error names the file and carries MuJoCo's message.
pub fn load(path: impl AsRef<Path>) -> Result<MjModel, SimError> {
    let path = path.as_ref();
    if !path.is_file() {
        return Err(SimError::ModelLoad {
            file: path.to_path_buf(),
            reason: format!(
                "no such file (a relative model path is looked for under {})",
                crate::roots_tried()
            ),
        });
    }
    MjModel::from_xml(path).map_err(|e| SimError::ModelLoad {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Id of a named object, or a mismatch error naming what is missing.
pub fn id_of(
    model: &MjModel,
    file: &Path,
    kind: MjtObjBase,
    name: &str,
) -> Result<usize, SimError> {
    model
        .name_to_id(kind, name)
        .ok_or_else(|| SimError::ModelMismatch {
            file: file.to_path_buf(),
            reason: format!("no {kind:?} named `{name}`"),
        })
}
