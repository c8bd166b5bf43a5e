//! Whether a bundle fits a robot: the one check that `clawrl verify --robot`, `clawrl flash`,
//! `clawrl-runtime install` and `clawrl-runtime run` all call, so the desktop refuses exactly
//! what the robot refuses. The robot side builds its [`RobotSpec`] from its runtime config;
//! this crate knows nothing of the runtime.
use clawrl_robot::{ActionMap, ObsSource, OnboardLayout};

use crate::Manifest;

/// What a robot declares about itself, all of it required: there is no wildcard (an all-zero
/// MJCF hash is a hash like any other, and differs from the robot's).
#[derive(Debug, Clone, PartialEq)]
pub struct RobotSpec {
    /// Robot model name (`claw_quadruped`).
    pub model: String,
    /// Lowercase hex SHA-256 of the MJCF file the robot was modelled by.
    pub mjcf_sha256: String,
    /// Servo names, in the order the board numbers them.
    pub joint_names: Vec<String>,
    /// `[low, high]` per servo (rad); a bundle may only narrow them.
    pub joint_limits: Vec<[f64; 2]>,
    /// The pose a zero action means (rad), per servo.
    pub default_pose: Vec<f64>,
    /// The observation the robot computer builds.
    pub layout: OnboardLayout,
    /// The control loop's rate (Hz; the runtime's `control.rate_hz`).
    pub control_rate_hz: f64,
    /// Largest `|scale|` of the action map (rad per unit of action) the robot accepts.
    pub max_action_scale: f64,
    /// The rate limit the runtime puts on servo targets (rad/s; `safety.max_joint_speed`).
    pub max_joint_speed: f64,
    /// Network kinds the robot can run.
    pub network_kinds: Vec<String>,
    /// The robot's own description file; a bundle that carries a description must agree with
    /// it servo by servo ([`clawrl_robot::description::first_difference`]).
    pub description: Option<clawrl_robot::description::DescriptionFile>,
}

impl RobotSpec {
    /// Whether this spec holds the numbers the MJCF holds (limits, default pose). A robot the
    /// runtime knows by its description file alone leaves them empty: they arrive in the
    /// bundle's resolved description, whose MJCF hash and servo table were checked first.
    pub fn knows_mjcf_numbers(&self) -> bool {
        !self.default_pose.is_empty()
    }

    /// This spec with the limits, default pose and observation layout of the bundle's
    /// resolved description (trusted because the MJCF hash and the description file agree).
    fn with_bundles_mjcf_numbers(&self, m: &Manifest) -> Result<Self, Incompatible> {
        let d = m
            .robot
            .description
            .as_ref()
            .ok_or(Incompatible::NoDescription {
                model: self.model.clone(),
            })?;
        let mut filled = self.clone();
        filled.joint_limits = d.limits();
        filled.default_pose = d.stand_pose();
        filled.layout = OnboardLayout::legged(&self.model, &self.joint_names, &filled.default_pose);
        Ok(filled)
    }
}

/// Why a bundle does not fit a robot. Each message starts with the manifest field and says
/// what the bundle has and what the robot has.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Incompatible {
    #[error("robot.model is {bundle:?}, this robot is {robot:?}")]
    Model { bundle: String, robot: String },
    #[error("robot.mjcf_sha256 is {bundle}, this robot's MJCF is {robot}")]
    MjcfHash { bundle: String, robot: String },
    #[error("robot.description: {0}")]
    Description(String),
    #[error("observation.source is {0:?}, the robot computer can only build onboard observations")]
    ObservationSource(ObsSource),
    #[error("observation.layout.{field} {detail}")]
    Layout { field: String, detail: String },
    #[error("action.names has {bundle} entries, this robot has {robot} servos")]
    JointCount { bundle: usize, robot: usize },
    #[error("action.names[{index}] is {bundle:?}, this robot's servo {index} is {robot:?}")]
    JointName {
        index: usize,
        bundle: String,
        robot: String,
    },
    #[error("action.map is missing; the robot needs it to turn actions into servo targets")]
    NoActionMap,
    #[error(
        "robot.description is missing: robot {model:?} is known by its description file alone \
         (the robot computer carries no MJCF), so its bundles must carry the resolved description"
    )]
    NoDescription { model: String },
    #[error(
        "action.map.joint_limits[{index}] ({joint}) is [{}, {}], outside this robot's limits [{}, {}]",
        bundle[0], bundle[1], robot[0], robot[1]
    )]
    JointLimits {
        index: usize,
        joint: String,
        bundle: [f64; 2],
        robot: [f64; 2],
    },
    #[error(
        "action.map.default_pose[{index}] ({joint}) is {bundle}, this robot's default pose is {robot}"
    )]
    DefaultPose {
        index: usize,
        joint: String,
        bundle: f64,
        robot: f64,
    },
    #[error(
        "action.map.scale[{index}] ({joint}) is {scale} rad per unit, this robot allows at most {max}"
    )]
    ActionScale {
        index: usize,
        joint: String,
        scale: f64,
        max: f64,
    },
    #[error(
        "control_rate_hz is {bundle} Hz (the rate it was trained at), this robot's control.rate_hz is {robot} Hz"
    )]
    ControlRate { bundle: f64, robot: f64 },
    #[error(
        "action.max_target_speed is {bundle} rad/s (the rate limit it was trained under), this robot's safety.max_joint_speed is {robot} rad/s"
    )]
    TargetSpeed { bundle: f64, robot: f64 },
    #[error("network.kind is {kind:?}, this robot runs {}", supported.join(", "))]
    NetworkKind {
        kind: String,
        supported: Vec<String>,
    },
}

/// Refuses a manifest that is not for `robot`, naming the first field that differs: model,
/// MJCF hash, observation, joint names and order, joint limits (a bundle may narrow them,
/// never widen), default pose, action scale, control rate, network kind.
pub fn check_fits(m: &Manifest, robot: &RobotSpec) -> Result<(), Incompatible> {
    check_identity(m, robot)?;
    let filled;
    let robot = if robot.knows_mjcf_numbers() {
        robot
    } else {
        filled = robot.with_bundles_mjcf_numbers(m)?;
        &filled
    };
    check_observation(m, robot)?;
    check_joint_names(&m.action.names, robot)?;
    let map = m.action.map.as_ref().ok_or(Incompatible::NoActionMap)?;
    check_joint_names(&map.joint_names, robot)?;
    check_action_map(map, robot)?;
    check_rate_and_network(m, robot)
}

/// Model name and MJCF hash: the bundle was trained on this robot's body.
fn check_identity(m: &Manifest, robot: &RobotSpec) -> Result<(), Incompatible> {
    if m.robot.model != robot.model {
        return Err(Incompatible::Model {
            bundle: m.robot.model.clone(),
            robot: robot.model.clone(),
        });
    }
    if !m.robot.mjcf_sha256.eq_ignore_ascii_case(&robot.mjcf_sha256) {
        return Err(Incompatible::MjcfHash {
            bundle: m.robot.mjcf_sha256.clone(),
            robot: robot.mjcf_sha256.clone(),
        });
    }
    // A bundle made before descriptions existed carries none: its servo names, limits and
    // default pose are still checked below, by index.
    if let (Some(b), Some(r)) = (&m.robot.description, &robot.description)
        && let Some(d) = clawrl_robot::description::first_difference(b, r)
    {
        return Err(Incompatible::Description(d));
    }
    Ok(())
}

fn check_observation(m: &Manifest, robot: &RobotSpec) -> Result<(), Incompatible> {
    if m.observation.source != ObsSource::Onboard {
        return Err(Incompatible::ObservationSource(m.observation.source));
    }
    match layout_difference(&m.observation.layout, &robot.layout) {
        Some((field, detail)) => Err(Incompatible::Layout { field, detail }),
        None => Ok(()),
    }
}

/// The first field in which a bundle's layout differs from the robot's, as (field, detail).
fn layout_difference(got: &OnboardLayout, want: &OnboardLayout) -> Option<(String, String)> {
    if got.robot != want.robot {
        let d = format!("is {:?}, this robot is {:?}", got.robot, want.robot);
        return Some(("robot".into(), d));
    }
    if got.entries.len() != want.entries.len() {
        let d = format!(
            "has {} entries, this robot's observation has {}",
            got.entries.len(),
            want.entries.len()
        );
        return Some(("entries".into(), d));
    }
    if let Some(i) = (0..got.entries.len()).find(|&i| got.entries[i] != want.entries[i]) {
        let (g, w) = (&got.entries[i], &want.entries[i]);
        let d = format!(
            "is {:?} in {:?}, this robot's is {:?} in {:?}",
            g.name, g.unit, w.name, w.unit
        );
        return Some((format!("entries[{i}]"), d));
    }
    if got.joint_offset != want.joint_offset {
        let d = format!(
            "is {:?}, this robot's default pose is {:?}",
            got.joint_offset, want.joint_offset
        );
        return Some(("joint_offset".into(), d));
    }
    if got.accelerometer_scale != want.accelerometer_scale {
        let d = format!(
            "is {}, this robot's is {}",
            got.accelerometer_scale, want.accelerometer_scale
        );
        return Some(("accelerometer_scale".into(), d));
    }
    None
}

/// Action `i` drives servo `i`: a swapped pair would send each joint the other's target.
fn check_joint_names(names: &[String], robot: &RobotSpec) -> Result<(), Incompatible> {
    let servos = &robot.joint_names;
    if names.len() != servos.len() {
        return Err(Incompatible::JointCount {
            bundle: names.len(),
            robot: servos.len(),
        });
    }
    match (0..servos.len()).find(|&i| names[i] != servos[i]) {
        Some(index) => Err(Incompatible::JointName {
            index,
            bundle: names[index].clone(),
            robot: servos[index].clone(),
        }),
        None => Ok(()),
    }
}

/// Limits inside the robot's, the robot's default pose, scales within the robot's bound. The
/// lengths were checked with the names ([`crate::Manifest::check`] ties them to the map).
fn check_action_map(map: &ActionMap, robot: &RobotSpec) -> Result<(), Incompatible> {
    let joint = |i: usize| robot.joint_names[i].clone();
    for (index, (&bundle, &robot_l)) in map.joint_limits.iter().zip(&robot.joint_limits).enumerate()
    {
        let [(lo, hi), (rlo, rhi)] = [(bundle[0], bundle[1]), (robot_l[0], robot_l[1])];
        if !(rlo <= lo && hi <= rhi && lo <= hi) {
            let (joint, robot) = (joint(index), robot_l);
            return Err(Incompatible::JointLimits {
                index,
                joint,
                bundle,
                robot,
            });
        }
    }
    for (index, (&bundle, &want)) in map.default_pose.iter().zip(&robot.default_pose).enumerate() {
        if bundle != want {
            let joint = joint(index);
            return Err(Incompatible::DefaultPose {
                index,
                joint,
                bundle,
                robot: want,
            });
        }
    }
    let max = robot.max_action_scale;
    // A NaN scale compares as nothing, so it is refused too.
    let within = |s: &f64| s.abs().partial_cmp(&max).is_some_and(|o| o.is_le());
    if let Some(index) = map.scale.iter().position(|s| !within(s)) {
        let (joint, scale) = (joint(index), map.scale[index]);
        return Err(Incompatible::ActionScale {
            index,
            joint,
            scale,
            max,
        });
    }
    Ok(())
}

fn check_rate_and_network(m: &Manifest, robot: &RobotSpec) -> Result<(), Incompatible> {
    let hz = robot.control_rate_hz;
    // The controller's timing, filters and the policy's dynamics all assume the trained rate.
    // Every bundle records it (`control_rate_hz` is required), so unlike the rate limit below
    // there is no old bundle to let through. The physics rate (`physics_rate_hz`) has no
    // counterpart on the robot and is not compared.
    if (m.control_rate_hz - hz).abs() > 1e-9 * hz.abs().max(1.0) {
        return Err(Incompatible::ControlRate {
            bundle: m.control_rate_hz,
            robot: hz,
        });
    }
    // A policy trained against one rate limit meets servos that lag (or lead) its targets
    // otherwise under another. A bundle made before the limit was recorded (field absent) is
    // accepted, as it was then.
    if let Some(trained) = m.action.max_target_speed
        && (trained - robot.max_joint_speed).abs() > 1e-9 * trained.abs().max(1.0)
    {
        return Err(Incompatible::TargetSpeed {
            bundle: trained,
            robot: robot.max_joint_speed,
        });
    }
    if !robot.network_kinds.contains(&m.network.kind) {
        return Err(Incompatible::NetworkKind {
            kind: m.network.kind.clone(),
            supported: robot.network_kinds.clone(),
        });
    }
    Ok(())
}
