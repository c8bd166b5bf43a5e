//! A third robot is two files: a generated variant of the shipped robot (its description and
//! a copy of its MJCF, in a folder of their own) with the bus IDs permuted, the PWM channels
//! permuted, one servo mounted reversed and another with a zero offset, taken through the
//! simulator, export, verify, install and a short HIL walk with no code edit. The board is
//! built from the variant's description, the runtime addresses it by the variant's IDs, and the
//! body is wired as the variant says: if any layer kept the shipped wiring, the walk fails.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::line::Clocking;
use clawrl_hil_tests::scenario::{self, Setup};
use clawrl_robot::description::DescriptionFile;
use clawrl_sim::Env;
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Servo order of the shipped robot: FL, FR, RL, RR legs (hip_abd, hip_pitch, knee), claws.
const FL_KNEE: usize = 2;
const RL_HIP_PITCH: usize = 7;

/// The variant's folder under `dir`: `robot.toml` and `quadruped.xml`.
fn write_variant(dir: &Path) -> PathBuf {
    let folder = dir.join("variant");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        repo().join("sim/models/quadruped.xml"),
        folder.join("quadruped.xml"),
    )
    .unwrap();
    let (mut file, _) = DescriptionFile::load(&repo().join("robots/claw_quadruped")).unwrap();
    file.robot.mjcf = "quadruped.xml".into();
    for (i, s) in file.servo.iter_mut().enumerate() {
        // IDs 21, 24, 27, ... (7 apart modulo 16, from 21): no servo keeps its ID.
        s.id = 21 + ((i * 7) % 16) as u8;
        // Channels in reverse.
        s.pwm.as_mut().unwrap().channel = 15 - i as u8;
    }
    file.servo[FL_KNEE].direction = -file.servo[FL_KNEE].direction;
    file.servo[RL_HIP_PITCH].offset_rad = 0.05;
    std::fs::write(folder.join("robot.toml"), toml::to_string(&file).unwrap()).unwrap();
    folder
}

/// The shipped runtime config naming `description` (absolute).
fn runtime_config(dir: &Path, description: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("configs/runtime/robot.toml")).unwrap();
    let line = "description = \"../../robots/claw_quadruped/robot.toml\"";
    assert!(text.contains(line), "the shipped runtime config changed");
    let text = text.replace(
        line,
        &format!("description = {:?}", description.display().to_string()),
    );
    let path = dir.join("runtime.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_generated_variant_runs_through_the_pipeline_with_no_code_edit() {
    let dir = tempfile::tempdir().unwrap();
    let folder = write_variant(dir.path());
    let mjcf = folder.join("quadruped.xml");

    // Simulator: the description beside the MJCF is found and resolved; the robot stands.
    let robot = clawrl_sim::description::load(&folder).unwrap();
    assert_eq!(robot.description.servos[FL_KNEE].direction, -1);
    assert_eq!(robot.description.servos[0].id, 21);
    let mut task = TaskConfig::flat().unwrap();
    task.env.model = mjcf.clone();
    let found = clawrl_sim::description::for_mjcf(&mjcf).unwrap().unwrap();
    assert_eq!(
        found.description, robot.description,
        "the description beside the MJCF"
    );
    let mut env = QuadrupedEnv::new(&task).unwrap();
    env.reset_in_place(1);

    // Export: the HIL student re-exported for the variant carries the variant's description.
    let mut src =
        clawrl_trainer::source::load_source(&repo().join("hil-tests/fixtures/student.clawrl"))
            .unwrap();
    src.config.task.as_mut().unwrap().env.model = mjcf.clone();
    let bundle = dir.path().join("variant.clawrl");
    let opts = clawrl_trainer::export::ExportOptions {
        episodes: 0,
        threads: 1,
        signing_key: None,
    };
    let e = clawrl_trainer::export::export(&src, &bundle, &opts).unwrap();
    let carried = e.manifest.robot.description.as_ref().unwrap();
    assert_eq!(carried.servos[5].id, 21 + 3, "FR_knee: 21 + (5 x 7 mod 16)");

    // Verify and install: against the variant's own config it fits; against the shipped
    // robot's it is refused before anything moves, naming a servo.
    let variant_cfg = runtime_config(dir.path(), &folder.join("robot.toml"));
    let cfg = clawrl_runtime::config::RuntimeConfig::load(&variant_cfg, &[]).unwrap();
    let read = clawrl_bundle::read(&bundle, &clawrl_bundle::Trust::default()).unwrap();
    clawrl_runtime::install::check_bundle(&read, &cfg.robot_spec()).unwrap();
    let shipped = clawrl_runtime::config::RuntimeConfig::load(
        &repo().join("configs/runtime/robot.toml"),
        &[],
    )
    .unwrap();
    let refused = clawrl_runtime::install::check_bundle(&read, &shipped.robot_spec())
        .unwrap_err()
        .to_string();
    assert!(refused.contains("FL_hip_abd"), "{refused}");
    let ids = cfg.servo_ids();
    assert_eq!(
        ids[1], 28,
        "FL_hip_pitch: the runtime addresses the variant's IDs"
    );

    // A short HIL walk: the board from the variant's description, the body wired as the
    // variant, the runtime on the variant's config (install included).
    let setup = Setup {
        bundle: bundle.clone(),
        seed: 1,
        clocking: Clocking::Lockstep,
        task,
        runtime_config: variant_cfg,
        dir: dir.path().join("hil"),
        board: None,
        miswiring: Vec::new(),
    };
    let s = scenario::by_name("walk").unwrap();
    let s = scenario::Scenario { seconds: 4.0, ..s };
    // The wiring check on the variant's board and body: every servo at its ID, as described.
    let checking = Setup {
        dir: dir.path().join("wiring"),
        ..setup.clone()
    };
    let (table, ok) = scenario::check_wiring(&s, &checking).unwrap();
    assert!(ok && table.contains("| 21 | FL_hip_abd |"), "{table}");
    let o = scenario::run(&s, &setup).unwrap();
    let cmp = scenario::compare(&o, &setup).unwrap();
    let checks = scenario::checks(&o);
    let text = clawrl_hil_tests::report::scenario_text(&o, Some(&cmp), &checks);
    assert!(scenario::verdict(&checks), "{text}");
    assert_eq!(o.trace.out_of_limit, 0, "{text}");
    // 3 s of policy (the hand-over second left out) at 0.3 m/s: 0.9 m. The pure simulation of
    // the same seed is the measure; a wrong ID, channel or direction falls or stands.
    let (hil, sim) = (cmp.hil.distance, cmp.sim.distance);
    assert!(
        hil > 0.5 && cmp.distance_gap() < 0.25,
        "walked {hil:.2} m against the simulation's {sim:.2}\n{text}"
    );
}
