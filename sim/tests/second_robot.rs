//! pup12, the second robot (robots/pup12): its description resolves against its MJCF, it
//! stands on its stand keyframe in MuJoCo, and the quadruped task sizes itself from its
//! description (issue 41).
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, ObsSource};
use mujoco_rs::prelude::*;

fn task(file: &str) -> TaskConfig {
    TaskConfig::load(clawrl_sim::repo_root().join("configs/task").join(file), &[]).unwrap()
}

fn pup12() -> clawrl_sim::description::LoadedRobot {
    clawrl_sim::description::load("robots/pup12".as_ref()).unwrap()
}

#[test]
fn pup12_is_described_with_its_own_wiring() {
    let r = pup12();
    let d = &r.description;
    assert_eq!(d.name, "pup12");
    assert_eq!(d.servos.len(), 12);
    // The board numbers the bus FR, FL, RR, RL: action 0 (FL_hip_abd) is bus ID 4.
    assert_eq!(d.servos[0].id, 4);
    assert_eq!(d.index_of_id(1), Some(3));
    assert_eq!(d.servo("RL_knee").unwrap().direction, -1);
    // Both poses from the MJCF's keyframes.
    assert_eq!(d.servo("FR_knee").unwrap().stand, -1.4);
    assert_eq!(d.servo("FR_knee").unwrap().rest, -2.4);
    assert!(d.feet.iter().all(|f| f.claw.is_none()));
}

#[test]
fn pup12_stands_on_its_stand_keyframe() {
    let r = pup12();
    let model = clawrl_sim::model::load(&r.mjcf).unwrap();
    let key = model
        .name_to_id(mujoco_rs::mujoco_c::_mjtObjBase::mjOBJ_KEY, "stand")
        .unwrap();
    let mut data = MjData::new(&model);
    data.reset_keyframe(key).unwrap();
    // 2 s holding the stand pose (the keyframe's ctrl).
    for _ in 0..1000 {
        data.step();
    }
    let q = data.qpos();
    let (z, w) = (q[2], q[3]);
    assert!(z > 0.15 && z < 0.22, "torso height {z}");
    // Upright: the quaternion's w stays near 1 (tilt under about 10 degrees).
    assert!(w.abs() > 0.996, "quaternion w {w}");
}

/// A second robot, sized from its own description: pup12 (robots/pup12) has 12 servos and no
/// claws, its bus wired in another order. The task gives it 12 actions, an onboard vector of
/// 9 + 3 x 12 + 3, its servos' names, no grip, and it stands on its servos at zero action.
#[test]
fn pup12_is_a_twelve_servo_quadruped_without_claws() {
    let mut env = QuadrupedEnv::new(&task("pup12_flat.toml")).unwrap();
    let spec = env.spec().clone();
    assert_eq!(spec.action_dim, 12);
    assert_eq!(spec.onboard_dim, 48);
    assert_eq!(spec.privileged_dim, 48 + 23);
    assert_eq!(spec.action_names[0], "FL_hip_abd");
    assert_eq!(spec.obs_names[9], "FL_hip_abd_pos");
    assert_eq!(spec.obs_names[45], "command_forward");
    assert_eq!(spec.onboard_layout.robot, "pup12");
    assert_eq!(
        spec.onboard_layout.joint_offset[1], 0.7,
        "the stand keyframe's hip pitch"
    );
    assert!(env.robot().layout.claw.iter().all(Option::is_none));
    env.reset(3);
    env.set_command(&[0.0, 0.0, 0.0]).unwrap();
    let mut obs = vec![0.0; spec.onboard_dim];
    for _ in 0..100 {
        let (_, terminated, _) = env.step_in_place(&[0.0; 12]).unwrap();
        assert!(!terminated, "fell over standing still");
    }
    env.observe(ObsSource::Onboard, &mut obs);
    assert!(obs.iter().all(|x| x.is_finite()));
    let t = env.telemetry();
    assert_eq!((t.joint_pos.len(), t.grip), (12, vec![0.0; 4]));
    assert!(t.base_pos[2] > 0.12, "stands at {} m", t.base_pos[2]);
    assert_eq!(
        env.read_sensors().joint_pos[12..],
        [0.0; 4],
        "no servo past the 12th"
    );
    // An action of the claw-foot robot's length is refused, naming both lengths.
    let e = env.step_in_place(&[0.0; 16]).unwrap_err().to_string();
    assert!(e.contains("12") && e.contains("16"), "{e}");
}
