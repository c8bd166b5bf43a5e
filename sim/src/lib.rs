//! The claw-foot quadruped in MuJoCo.
pub use mujoco_rs;
