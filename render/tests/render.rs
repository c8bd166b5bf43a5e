//! Real rendering through OSMesa (scripts/bootstrap.sh installs libosmesa6): sizes, content and
//! frame counts of what MuJoCo draws.
use clawrl_render::{FrameSkip, Renderer, Video, View};
use mujoco_rs::prelude::*;

fn quadruped() -> MjModel {
    clawrl_sim::model::load(clawrl_sim::models_dir().join("quadruped.xml")).expect("model")
}

fn standing(model: &MjModel) -> MjData<&MjModel> {
    let mut data = MjData::new(model);
    data.forward();
    data
}

#[test]
fn a_frame_has_the_requested_size_and_shows_a_scene() {
    let model = quadruped();
    let data = standing(&model);
    let mut r = Renderer::new(&model, 160, 120, &View::default()).expect("renderer");
    let plain = r.render(&data, ("", ""));
    assert_eq!((plain.width, plain.height), (160, 120));
    assert_eq!(plain.rgb.len(), 160 * 120 * 3);
    assert!(plain.has_detail(), "the frame is one colour");
    // The caption is drawn on the frame (MuJoCo's font), not beside it.
    let captioned = r.render(&data, ("command", "0.30 m/s"));
    assert_eq!(captioned.rgb.len(), plain.rgb.len());
    assert_ne!(captioned.rgb, plain.rgb, "the caption changed no pixel");
}

#[test]
fn a_frame_larger_than_the_models_offscreen_buffer_is_drawn_whole() {
    // quadruped.xml keeps MuJoCo's 640x480 offscreen default; the renderer enlarges its copy.
    let model = quadruped();
    let data = standing(&model);
    let mut r = Renderer::new(&model, 700, 500, &View::default()).expect("renderer");
    let f = r.render(&data, ("", ""));
    assert_eq!(f.rgb.len(), 700 * 500 * 3);
    // Columns past 640 lie outside the model's buffer: read from there, they stay black (the
    // zeroed pixels are never written) unless the renderer made its buffer large enough.
    let right: Vec<u8> = (0..500)
        .flat_map(|y| f.rgb[(y * 700 + 699) * 3..(y * 700 + 700) * 3].to_vec())
        .collect();
    assert!(
        right.iter().any(|&b| b != 0),
        "the right edge was not drawn"
    );
}

#[test]
fn a_video_of_n_steps_at_skip_k_has_n_over_k_frames() {
    let model = quadruped();
    let mut data = standing(&model);
    let dir = std::env::temp_dir().join(format!("clawrl-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("walk.gif");
    let (steps, skip, control_dt) = (10, FrameSkip { every: 3 }, 0.02);
    let mut video =
        Video::create(&file, &model, (64, 48), skip, control_dt, &View::default()).unwrap();
    let mut drawn = 0;
    for s in 0..steps {
        if video
            .offer(&data, || ("step".into(), s.to_string()))
            .unwrap()
        {
            drawn += 1;
        }
        for _ in 0..10 {
            data.step();
        }
    }
    assert_eq!(video.frames(), drawn);
    video.finish().unwrap();

    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts.read_info(std::fs::File::open(&file).unwrap()).unwrap();
    assert_eq!((dec.width(), dec.height()), (64, 48));
    let mut frames = 0;
    while let Some(f) = dec.read_next_frame().unwrap() {
        // Steps 0, 3, 6, 9, each shown for 3 control steps of 20 ms.
        assert_eq!(f.delay, 6);
        frames += 1;
    }
    assert_eq!(frames, 4, "10 steps at every 3rd step");
    assert_eq!(frames, skip.frames(steps));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_frame_skip_for_a_frame_rate() {
    // 50 Hz control at ~12.5 fps: every 4th step, 8 hundredths of a second each.
    let k = FrameSkip::for_fps(0.02, 12.5);
    assert_eq!(k.every, 4);
    assert_eq!(k.delay_cs(0.02), 8);
    assert_eq!(k.frames(300), 75);
    assert_eq!(FrameSkip::for_fps(0.02, 200.0).every, 1);
}
