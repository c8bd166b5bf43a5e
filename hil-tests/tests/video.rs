//! `clawrl hil --video`: a scenario's body redrawn from its trace by MuJoCo's renderer
//! (OSMesa; scripts/bootstrap.sh installs libosmesa6), one frame every k control periods.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::line::Clocking;
use clawrl_hil_tests::scenario::{self, Setup};
use clawrl_hil_tests::video::{Film, film};
use clawrl_sim::quadruped::TaskConfig;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn a_scenario_is_filmed_one_frame_per_k_control_periods() {
    let dir = tempfile::tempdir().unwrap();
    let task = TaskConfig::flat().unwrap();
    let setup = Setup {
        bundle: repo().join("hil-tests/fixtures/student.clawrl"),
        seed: 3,
        clocking: Clocking::Lockstep,
        task: task.clone(),
        runtime_config: repo().join("configs/runtime/robot.toml"),
        dir: dir.path().join("run"),
        board: None,
        miswiring: Vec::new(),
    };
    // The e-stop scenario: the shortest, and the body stops mid-walk (the frames differ).
    let s = scenario::by_name("estop").unwrap();
    let o = scenario::run(&s, &setup).unwrap();
    let n = o.trace.samples.len();
    assert_eq!(o.trace.qpos.len(), n, "one pose a sample");
    let file = dir.path().join("estop.gif");
    let spec = Film {
        task: &task,
        seed: o.seed,
        command: s.command,
        size: (64, 48),
        fps: 12.5,
    };
    let frames = film(&o.trace, &spec, &file).unwrap();
    // 50 Hz control: every 4th sample, 0, 4, 8, ...
    assert_eq!(frames, n.div_ceil(4), "{n} samples");
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts.read_info(std::fs::File::open(&file).unwrap()).unwrap();
    let (mut decoded, mut first, mut last) = (0, None, Vec::new());
    while let Some(f) = dec.read_next_frame().unwrap() {
        first.get_or_insert_with(|| f.buffer.to_vec());
        last = f.buffer.to_vec();
        decoded += 1;
    }
    assert_eq!(decoded, frames);
    assert_ne!(first.unwrap(), last, "the body did not move in the video");
}
