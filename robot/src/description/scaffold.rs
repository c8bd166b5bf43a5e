//! `clawrl robot new --mjcf FILE`: a first description written from an MJCF, with a TODO
//! wherever only the hardware can tell (bus IDs, directions, offsets, the resting pose) and
//! wherever a name could not be guessed. `clawrl robot check` lists the TODOs until they go.
use std::fmt::Write;

use super::MjcfFacts;

/// The description's text for `facts`; `mjcf` is the MJCF's path as the description will name
/// it (relative to the description's folder). Errs when the MJCF has no servo or no keyframe.
pub fn scaffold(name: &str, mjcf: &str, facts: &MjcfFacts) -> Result<String, String> {
    let servos: Vec<&str> = facts
        .actuators
        .iter()
        .filter_map(|a| a.joint.as_deref())
        .collect();
    if servos.is_empty() {
        return Err(format!(
            "{}: no actuator drives a joint: no servo to describe",
            facts.file
        ));
    }
    let stand = ["stand", "home"]
        .into_iter()
        .find(|k| facts.keyframes.contains_key(*k))
        .map(str::to_string)
        .or_else(|| facts.keyframes.keys().next().cloned())
        .ok_or_else(|| {
            format!(
                "{}: no keyframe; add one with the standing pose, e.g. <key name=\"stand\" qpos=\"...\"/>",
                facts.file
            )
        })?;
    let has_rest = facts.keyframes.contains_key("rest");
    let claw = |j: &str| {
        ["claw", "grip"]
            .iter()
            .any(|w| j.to_lowercase().contains(w))
    };
    let mut todo = vec![
        "servo.*.id: the bus ID each servo answers to (written 1, 2, ... in actuator order)".to_string(),
        "servo.*.direction and offset_rad: -1 where a servo turns against its joint; its angle at joint zero".to_string(),
        "servo_model.servo: ticks per turn, centre tick and top speed from the datasheet".to_string(),
    ];
    if !has_rest {
        todo.push(
            "servo.*.rest: the folded pose before torque off (written as the stand pose)".into(),
        );
    }
    let mut t = String::new();
    let w = &mut t;
    let _ = writeln!(
        w,
        "# Written by `clawrl robot new` from {}; fill in the TODOs, then",
        facts.file
    );
    let _ = writeln!(
        w,
        "# `clawrl robot check` this folder. Servo order = the [[servo]] tables' order (the action order).\n"
    );
    let _ = writeln!(
        w,
        "[robot]\nname = {name:?}\nmjcf = {mjcf:?}\nstand_keyframe = {stand:?}\nrest_keyframe = \"rest\""
    );
    let mut body = String::new();
    scaffold_parts(&mut body, facts, &mut todo);
    let _ = writeln!(w, "todo = [");
    for item in &todo {
        let _ = writeln!(w, "    {item:?},");
    }
    let _ = writeln!(w, "]\n\n[action_scale]\nleg = 0.3");
    if servos.iter().any(|j| claw(j)) {
        let _ = writeln!(w, "claw = 0.6");
    }
    let _ = writeln!(
        w,
        "\n[servo_model.servo]   # TODO: from the datasheet\nticks_per_turn = 4096\ncenter_ticks = 2048\nmax_speed_rad_s = 6.0\n"
    );
    for (i, j) in servos.iter().enumerate() {
        let kind = if claw(j) { "claw" } else { "leg" };
        let _ = writeln!(
            w,
            "[[servo]]\nname = {j:?}\nid = {}   # TODO\njoint = {j:?}\nkind = {kind:?}",
            i + 1
        );
        let _ = writeln!(w, "direction = 1   # TODO\noffset_rad = 0.0   # TODO");
        if !has_rest {
            let rest = facts.key_value(&stand, j).unwrap_or(0.0);
            let _ = writeln!(w, "rest = {rest:?}   # TODO");
        }
        let _ = writeln!(w, "model = \"servo\"\n");
    }
    w.push_str(&body);
    Ok(t)
}

/// Feet, IMU and trunk, found by the names robots usually give them; "TODO" where none fits.
fn scaffold_parts(w: &mut String, f: &MjcfFacts, todo: &mut Vec<String>) {
    let lower = |s: &str| s.to_lowercase();
    let find = |list: &[String], words: &[&str]| -> Option<String> {
        list.iter()
            .find(|n| words.iter().all(|k| lower(n).contains(&lower(k))))
            .cloned()
    };
    let mut need = |what: String, got: Option<String>| -> String {
        got.unwrap_or_else(|| {
            todo.push(what);
            "TODO".into()
        })
    };
    for body in f.bodies.iter().filter(|b| lower(b).contains("foot")) {
        let foot = body
            .trim_end_matches("_foot")
            .trim_end_matches("foot")
            .to_string();
        let foot = if foot.is_empty() { body.clone() } else { foot };
        let geom = f.geoms.iter().find(|g| *g == body).cloned();
        let geom = need(format!("foot.{foot}.geom"), geom);
        let contact =
            find(&f.sensors, &[&foot, "contact"]).or_else(|| find(&f.sensors, &[&foot, "touch"]));
        let contact = need(format!("foot.{foot}.contact_sensor"), contact);
        let _ = writeln!(
            w,
            "[[foot]]\nname = {foot:?}\nbody = {body:?}\ngeom = {geom:?}\ncontact_sensor = {contact:?}"
        );
        // A claw foot: a claw joint and a body (adhesion) actuator named after the foot.
        let claw = f
            .actuators
            .iter()
            .filter_map(|a| a.joint.as_ref())
            .find(|j| {
                lower(j).contains(&lower(&foot))
                    && ["claw", "grip"].iter().any(|k| lower(j).contains(k))
            });
        if let Some(c) = claw {
            let _ = writeln!(w, "claw = {c:?}");
        }
        let grip = f
            .actuators
            .iter()
            .find(|a| a.joint.is_none() && lower(&a.name).contains(&lower(&foot)));
        if let Some(g) = grip {
            let _ = writeln!(w, "grip_actuator = {:?}", g.name);
        }
        w.push('\n');
    }
    let site = need("imu.site".into(), find(&f.sites, &["imu"]));
    let quat = need("imu.quat_sensor".into(), find(&f.sensors, &["quat"]));
    let gyro = need("imu.gyro_sensor".into(), find(&f.sensors, &["gyro"]));
    let acc = need("imu.acc_sensor".into(), find(&f.sensors, &["acc"]));
    let _ = writeln!(
        w,
        "[imu]\nsite = {site:?}\nquat_sensor = {quat:?}\ngyro_sensor = {gyro:?}\nacc_sensor = {acc:?}\nmount_rpy_deg = [0.0, 0.0, 0.0]\n"
    );
    let trunk = need("trunk.body".into(), f.free_body.clone());
    let geom = need(
        "trunk.geom".into(),
        f.geoms.iter().find(|g| **g == trunk).cloned(),
    );
    let contact =
        find(&f.sensors, &[&trunk, "contact"]).or_else(|| find(&f.sensors, &[&trunk, "touch"]));
    let contact = need("trunk.contact_sensor".into(), contact);
    let vel = need(
        "trunk.velocity_sensor".into(),
        find(&f.sensors, &["linvel"]).or_else(|| find(&f.sensors, &[&trunk, "vel"])),
    );
    let _ = writeln!(
        w,
        "[trunk]\nbody = {trunk:?}\ngeom = {geom:?}\ncontact_sensor = {contact:?}\nvelocity_sensor = {vel:?}"
    );
}
