//! Milliseconds per frame of MuJoCo's renderer through OSMesa (software), and of the GIF
//! encoding after it, at the sizes `eval --video` uses. `cargo bench -p clawrl-render`.
use std::time::Instant;

use clawrl_render::{FrameSkip, GifWriter, Renderer, View};
use mujoco_rs::prelude::*;

const FRAMES: usize = 50;

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let model =
        clawrl_sim::model::load(clawrl_sim::models_dir().join("quadruped.xml")).expect("model");
    let mut data = MjData::new(&model);
    data.forward();
    let dir = std::env::temp_dir().join(format!("clawrl-render-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("{FRAMES} frames each, median ms per frame (the robot falling limp between frames)");
    for (w, h) in [(320, 240), (640, 480)] {
        let mut r = Renderer::new(&model, w, h, &View::default()).expect("renderer");
        let skip = FrameSkip { every: 4 };
        let mut gif = GifWriter::create(&dir.join("bench.gif"), w, h, skip.delay_cs(0.02)).unwrap();
        let (mut draw, mut encode) = (Vec::new(), Vec::new());
        for i in 0..FRAMES {
            // 4 control steps of 10 physics steps between frames, as at 12.5 fps.
            for _ in 0..40 {
                data.step();
            }
            let t = Instant::now();
            let f = r.render(&data, ("frame", &i.to_string()));
            draw.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            gif.push(&f).unwrap();
            encode.push(t.elapsed().as_secs_f64() * 1e3);
        }
        gif.finish().unwrap();
        let (d, e) = (median_ms(draw), median_ms(encode));
        println!(
            "{w}x{h}: render (updateScene + render + overlay + readPixels) {d:.2} ms, GIF encode {e:.2} ms, total {:.2} ms",
            d + e
        );
        // Reset so both sizes draw the same motion.
        data = MjData::new(&model);
        data.forward();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
