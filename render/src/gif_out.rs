//! Frames to an animated GIF file (the `gif` crate: a palette of 256 colours per frame, which
//! MuJoCo's flat-shaded scenes survive well).
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::{Frame, RenderError};

/// NeuQuant's sampling factor, 1 (best colours, slowest) to 30: 10 is the crate's own default
/// and keeps quantising well under the time MuJoCo takes to draw a frame in software.
const QUANTISE_SPEED: i32 = 10;

pub struct GifWriter {
    file: PathBuf,
    encoder: gif::Encoder<BufWriter<File>>,
    width: u32,
    height: u32,
    delay_cs: u16,
    frames: usize,
}

impl GifWriter {
    /// A looping GIF of `width` x `height` frames, each shown `delay_cs` hundredths of a second.
    pub fn create(
        path: &Path,
        width: u32,
        height: u32,
        delay_cs: u16,
    ) -> Result<Self, RenderError> {
        let err = |e: &dyn std::fmt::Display| RenderError::Write {
            file: path.display().to_string(),
            reason: e.to_string(),
        };
        let w = u16::try_from(width).map_err(|e| err(&e))?;
        let h = u16::try_from(height).map_err(|e| err(&e))?;
        let out = BufWriter::new(File::create(path).map_err(|e| err(&e))?);
        let mut encoder = gif::Encoder::new(out, w, h, &[]).map_err(|e| err(&e))?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| err(&e))?;
        Ok(Self {
            file: path.to_path_buf(),
            encoder,
            width,
            height,
            delay_cs,
            frames: 0,
        })
    }

    pub fn push(&mut self, frame: &Frame) -> Result<(), RenderError> {
        let want = self.width as usize * self.height as usize * 3;
        if (frame.width, frame.height) != (self.width, self.height) || frame.rgb.len() != want {
            return Err(RenderError::FrameSize {
                got: frame.rgb.len(),
                want,
                width: self.width,
                height: self.height,
            });
        }
        let mut f = gif::Frame::from_rgb_speed(
            self.width as u16,
            self.height as u16,
            &frame.rgb,
            QUANTISE_SPEED,
        );
        f.delay = self.delay_cs;
        self.encoder
            .write_frame(&f)
            .map_err(|e| RenderError::Write {
                file: self.file.display().to_string(),
                reason: e.to_string(),
            })?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Writes the trailer and flushes the file.
    pub fn finish(self) -> Result<PathBuf, RenderError> {
        let file = self.file;
        let err = |e: &dyn std::fmt::Display| RenderError::Write {
            file: file.display().to_string(),
            reason: e.to_string(),
        };
        let mut out = self.encoder.into_inner().map_err(|e| err(&e))?;
        std::io::Write::flush(&mut out).map_err(|e| err(&e))?;
        Ok(file)
    }
}
