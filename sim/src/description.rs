//! A robot description (`robots/NAME/robot.toml`) checked against its MJCF: this crate
//! compiles the MJCF with MuJoCo (default classes applied) and hands
//! [`clawrl_robot::description`] the names and numbers it holds.
use std::path::{Path, PathBuf};

use clawrl_robot::description::{
    ActuatorFact, DescriptionError, DescriptionFile, JointFact, MjcfFacts, RobotDescription,
};
use mujoco_rs::mujoco_c::_mjtObjBase::*;
use mujoco_rs::prelude::*;

use crate::SimError;

/// The shipped robot's description, relative to clawrl's files ([`crate::resolve`]).
pub const CLAW_QUADRUPED: &str = "robots/claw_quadruped/robot.toml";

/// A description loaded and resolved against its MJCF.
#[derive(Debug, Clone)]
pub struct LoadedRobot {
    pub description: RobotDescription,
    pub file: DescriptionFile,
    /// The description file and the MJCF it names.
    pub path: PathBuf,
    pub mjcf: PathBuf,
}

/// Loads `path` (a `robot.toml` or its folder; relative paths through [`crate::resolve`]),
/// compiles its MJCF and resolves one against the other.
pub fn load(path: &Path) -> Result<LoadedRobot, SimError> {
    let (file, path) = DescriptionFile::load(&crate::resolve(path))?;
    let mjcf = file.mjcf_path(&path);
    let mjcf = std::fs::canonicalize(&mjcf).unwrap_or(mjcf);
    let model = crate::model::load(&mjcf)?;
    resolve_with(file, path, mjcf, &model)
}

/// `file` (read from `path`) resolved against `model`, the MJCF `mjcf` compiled.
fn resolve_with(
    file: DescriptionFile,
    path: PathBuf,
    mjcf: PathBuf,
    model: &MjModel,
) -> Result<LoadedRobot, SimError> {
    let description = file.resolve(&path, &facts(model, &mjcf))?;
    Ok(LoadedRobot {
        description,
        file,
        path,
        mjcf,
    })
}

/// What the compiled model says, by name.
pub fn facts(model: &MjModel, file: &Path) -> MjcfFacts {
    let names = |kind, n: i64| -> Vec<String> {
        (0..n as usize)
            .map(|i| model.id_to_name(kind, i).unwrap_or("").to_string())
            .collect()
    };
    let f = model.ffi();
    let joint_names = names(mjOBJ_JOINT, f.njnt);
    let joints = joint_names
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_empty())
        .map(|(j, n)| {
            let ty = model.jnt_type()[j];
            let fact = JointFact {
                range: model.jnt_limited()[j].then(|| model.jnt_range()[j]),
                one_dof: matches!(ty, MjtJoint::mjJNT_HINGE | MjtJoint::mjJNT_SLIDE),
                qpos_adr: model.jnt_qposadr()[j] as usize,
            };
            (n.clone(), fact)
        })
        .collect();
    let actuators = names(mjOBJ_ACTUATOR, f.nu)
        .into_iter()
        .enumerate()
        .map(|(a, name)| {
            let on_joint = model.actuator_trntype()[a] == MjtTrn::mjTRN_JOINT;
            let id = model.actuator_trnid()[a][0] as usize;
            ActuatorFact {
                name,
                joint: on_joint.then(|| joint_names[id].clone()),
            }
        })
        .collect();
    let nq = f.nq as usize;
    let keyframes = names(mjOBJ_KEY, f.nkey)
        .into_iter()
        .enumerate()
        .map(|(k, n)| (n, model.key_qpos()[k * nq..(k + 1) * nq].to_vec()))
        .collect();
    MjcfFacts {
        file: file.display().to_string(),
        joints,
        actuators,
        keyframes,
        bodies: names(mjOBJ_BODY, f.nbody),
        geoms: names(mjOBJ_GEOM, f.ngeom),
        sites: names(mjOBJ_SITE, f.nsite),
        sensors: names(mjOBJ_SENSOR, f.nsensor),
        free_body: (0..f.njnt as usize)
            .find(|&j| model.jnt_type()[j] == MjtJoint::mjJNT_FREE)
            .and_then(|j| model.id_to_name(mjOBJ_BODY, model.jnt_bodyid()[j] as usize))
            .map(str::to_string),
    }
}

impl From<DescriptionError> for SimError {
    fn from(e: DescriptionError) -> Self {
        SimError::Description(e)
    }
}

/// The description beside an MJCF, resolved: a `robot.toml` in the MJCF's own folder that
/// names it (a robot's folder anywhere: `my_robot/{robot.toml, my_robot.xml}`), else the
/// `robots/*/robot.toml` (under [`crate::search_roots`]) whose `robot.mjcf` is that file. `None` when no description names
/// it (cart-pole); a description that names it and does not fit it is an error, never
/// skipped, and so are two descriptions naming it. A file that does not parse cannot say
/// which MJCF it names: it is named in a warning.
pub fn for_mjcf(mjcf: &Path) -> Result<Option<LoadedRobot>, SimError> {
    match find(mjcf)? {
        Some((file, path, mjcf)) => {
            let model = crate::model::load(&mjcf)?;
            resolve_with(file, path, mjcf, &model).map(Some)
        }
        None => Ok(None),
    }
}

/// As [`for_mjcf`], for an MJCF already compiled into `model` (not compiled again).
pub fn for_model(mjcf: &Path, model: &MjModel) -> Result<Option<LoadedRobot>, SimError> {
    match find(mjcf)? {
        Some((file, path, mjcf)) => resolve_with(file, path, mjcf, model).map(Some),
        None => Ok(None),
    }
}

/// The description naming `mjcf`: the file, its path and the MJCF's canonical path.
fn find(mjcf: &Path) -> Result<Option<(DescriptionFile, PathBuf, PathBuf)>, SimError> {
    let Ok(want) = std::fs::canonicalize(mjcf) else {
        return Ok(None);
    };
    if let Some((file, path)) = beside(&want)? {
        return Ok(Some((file, path, want)));
    }
    let mut found: Vec<(DescriptionFile, PathBuf)> = Vec::new();
    for root in crate::search_roots() {
        let Ok(dirs) = std::fs::read_dir(root.join("robots")) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = dirs.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join("robot.toml");
            if !path.is_file() {
                continue;
            }
            match DescriptionFile::load(&path) {
                Ok((file, path)) => {
                    let names = std::fs::canonicalize(file.mjcf_path(&path)).ok();
                    if names.as_ref() == Some(&want) {
                        found.push((file, path));
                    }
                }
                Err(e) => {
                    eprintln!("warning: skipping a robot description that does not load: {e}")
                }
            }
        }
        // The first root that has descriptions for this MJCF is the one used.
        if !found.is_empty() {
            break;
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => {
            let (file, path) = found.pop().expect("one");
            Ok(Some((file, path, want)))
        }
        _ => Err(SimError::ModelMismatch {
            file: want,
            reason: format!(
                "two robot descriptions name it, {} and {}: keep one",
                found[0].1.display(),
                found[1].1.display()
            ),
        }),
    }
}

/// The `robot.toml` in the folder of `mjcf` (canonical), when it names that MJCF; one there
/// that does not load is an error (it is the robot's own file).
fn beside(mjcf: &Path) -> Result<Option<(DescriptionFile, PathBuf)>, SimError> {
    let Some(path) = mjcf.parent().map(|d| d.join("robot.toml")) else {
        return Ok(None);
    };
    if !path.is_file() {
        return Ok(None);
    }
    let (file, path) = DescriptionFile::load(&path)?;
    let names = std::fs::canonicalize(file.mjcf_path(&path)).ok();
    Ok((names.as_deref() == Some(mjcf)).then_some((file, path)))
}
