//! pup12, the second robot (robots/pup12): its description resolves against its MJCF, it
//! stands on its stand keyframe in MuJoCo, and the claw-foot task refuses it by shape until the
//! task sizes itself from a description (issue 41).
use mujoco_rs::prelude::*;

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

#[test]
fn the_claw_foot_task_refuses_pup12_naming_its_shape() {
    let r = pup12();
    let model = clawrl_sim::model::load(&r.mjcf).unwrap();
    let e = clawrl_sim::quadruped::Layout::new(&model, &r)
        .unwrap_err()
        .to_string();
    assert!(e.contains("robot pup12 has 12 servos and 4 feet"), "{e}");
}
