//! A video of a run: every `k`-th control step drawn and appended to a GIF.
use std::path::{Path, PathBuf};

use mujoco_rs::prelude::*;
use mujoco_rs::wrappers::mj_model::traits::ModelType;

use crate::{GifWriter, RenderError, Renderer, View};

/// Which control steps become frames: steps 0, k, 2k, ... (step 0 is the state before the
/// first action), so a run of `n` steps gives `n.div_ceil(k)` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSkip {
    pub every: usize,
}

impl FrameSkip {
    /// The skip that shows a run of control period `control_dt` at about `fps` frames per
    /// second of simulated time (at least every step).
    pub fn for_fps(control_dt: f64, fps: f64) -> Self {
        let every = (1.0 / (fps * control_dt)).round().max(1.0) as usize;
        Self { every }
    }

    pub fn wants(&self, step: usize) -> bool {
        step.is_multiple_of(self.every)
    }

    /// Frames of a run of `steps` control steps.
    pub fn frames(&self, steps: usize) -> usize {
        steps.div_ceil(self.every)
    }

    /// How long each frame shows, in the GIF's hundredths of a second, for real-time playback.
    pub fn delay_cs(&self, control_dt: f64) -> u16 {
        (100.0 * control_dt * self.every as f64)
            .round()
            .clamp(1.0, 65535.0) as u16
    }
}

/// A renderer and a GIF: offer it every control step, it keeps the steps [`FrameSkip`] wants.
pub struct Video {
    renderer: Renderer,
    gif: GifWriter,
    skip: FrameSkip,
    step: usize,
}

impl Video {
    /// A `width` x `height` GIF at `file` of `model`'s runs, played back in real time for a
    /// control period of `control_dt` seconds.
    pub fn create(
        file: &Path,
        model: &MjModel,
        (width, height): (u32, u32),
        skip: FrameSkip,
        control_dt: f64,
        view: &View,
    ) -> Result<Self, RenderError> {
        // The renderer first: without OSMesa no empty file is left behind.
        let renderer = Renderer::new(model, width, height, view)?;
        let gif = GifWriter::create(file, width, height, skip.delay_cs(control_dt))?;
        Ok(Self {
            renderer,
            gif,
            skip,
            step: 0,
        })
    }

    /// Called once per control step (first with the state before the first action): draws the
    /// data when this step is a frame, with the caption `(labels, values)` (see
    /// [`Renderer::render`]), asked for only then.
    pub fn offer<M: ModelType>(
        &mut self,
        data: &MjData<M>,
        caption: impl FnOnce() -> (String, String),
    ) -> Result<bool, RenderError> {
        let keep = self.skip.wants(self.step);
        self.step += 1;
        if keep {
            let (labels, values) = caption();
            let frame = self.renderer.render(data, (&labels, &values));
            self.gif.push(&frame)?;
        }
        Ok(keep)
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.gif.frames()
    }

    pub fn skip(&self) -> FrameSkip {
        self.skip
    }

    pub fn finish(self) -> Result<PathBuf, RenderError> {
        self.gif.finish()
    }
}
