//! `clawrl eval --video`: a GIF of the shipped teacher drawn by MuJoCo through OSMesa
//! (scripts/bootstrap.sh installs libosmesa6), and one clear line without it.
mod common;
use common::*;

const TEACHER: &str = "assets/pretrained/quadruped_flat_ppo";

/// `eval` of the shipped teacher for one short (1 s) episode at 0.3 m/s.
fn short_eval(out: &std::path::Path, extra: &[&str]) -> std::process::Command {
    let mut c = clawrl(&[
        "eval",
        "--episodes",
        "1",
        "--num-envs",
        "1",
        "--command",
        "0.3,0,0",
        "--set",
        "task.env.episode_seconds=1",
        "--policy",
    ]);
    c.current_dir(repo())
        .arg(TEACHER)
        .arg("--out")
        .arg(out)
        .args(extra);
    c
}

#[test]
fn eval_films_episode_zero_at_the_frame_skip() {
    let dir = tmp("video");
    let gif_file = dir.join("walk.gif");
    let (out, _) = ok(short_eval(
        &dir,
        &["--video-size", "64x48", "--video-fps", "12.5", "--video"],
    )
    .arg(&gif_file));
    // 1 s at 50 Hz control is 50 steps; every 4th (12.5 fps) is steps 0, 4, ..., 48.
    assert!(
        out.contains("(13 frames, every 4 control steps, 50 steps)"),
        "{out}"
    );
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts
        .read_info(std::fs::File::open(&gif_file).unwrap())
        .unwrap();
    assert_eq!((dec.width(), dec.height()), (64, 48));
    let mut frames = 0;
    while let Some(f) = dec.read_next_frame().unwrap() {
        assert_eq!(f.delay, 8, "4 steps of 20 ms each frame");
        frames += 1;
    }
    assert_eq!(frames, 13);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_osmesa_eval_names_the_package_and_keeps_its_numbers() {
    let dir = tmp("video-no-osmesa");
    let gif_file = dir.join("walk.gif");
    let err = fails(
        short_eval(&dir, &["--video"])
            .arg(&gif_file)
            .env("CLAWRL_OSMESA_LIB", "/nonexistent/libOSMesa.so.8"),
    );
    let line: Vec<&str> = err.lines().filter(|l| l.contains("libosmesa6")).collect();
    assert_eq!(line.len(), 1, "one line names the package: {err}");
    assert!(line[0].starts_with("error: --video"), "{err}");
    // The evaluation ran and saved before the video was tried.
    let saved = std::fs::read_to_string(dir.join("eval.txt")).unwrap();
    assert!(saved.contains("mean return"), "{saved}");
    assert!(dir.join("eval.toml").is_file());
    assert!(!gif_file.exists(), "an empty GIF was left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `clawrl hil --video` without OSMesa (issue 40): the missing video is one warning in the
/// report, which is still written, and the exit code is the scenarios' verdict.
#[test]
fn without_osmesa_hil_still_writes_its_report_with_a_warning() {
    let dir = tmp("hil-no-osmesa");
    let (out_dir, video) = (dir.join("hil"), dir.join("video"));
    let o = run(clawrl(&[
        "hil",
        "--bundle",
        "hil-tests/fixtures/student.clawrl",
        "--scenario",
        "estop",
        "--out",
    ])
    .current_dir(repo())
    .arg(&out_dir)
    .arg("--video")
    .arg(&video)
    .env("CLAWRL_OSMESA_LIB", "/nonexistent/libOSMesa.so.8"));
    let (out, err) = text(&o);
    let report = std::fs::read_to_string(out_dir.join("report.txt"))
        .unwrap_or_else(|e| panic!("no report.txt ({e}):\n{out}\n{err}"));
    let warning: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("warning: no video"))
        .collect();
    assert_eq!(warning.len(), 1, "one warning: {report}");
    assert!(
        warning[0].contains("estop.gif") && warning[0].contains("libosmesa6"),
        "{report}"
    );
    assert!(
        !video.join("estop.gif").exists(),
        "an empty GIF was left behind"
    );
    let passed = report.contains("verdict: overall: PASS");
    assert_eq!(o.status.success(), passed, "{report}\n{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
