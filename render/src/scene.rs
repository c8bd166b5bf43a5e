//! One frame of a MuJoCo model: the scene MuJoCo builds from the data, drawn by MuJoCo's own
//! renderer into its offscreen framebuffer and read back as RGB.
use std::ffi::CString;
use std::mem::MaybeUninit;

use mujoco_rs::mujoco_c as c;
use mujoco_rs::prelude::*;
use mujoco_rs::wrappers::mj_model::traits::ModelType;

use crate::RenderError;
use crate::osmesa::GlContext;

/// Side of the shadow map, pixels (see [`Renderer::new`]).
const SHADOW_SIZE: i32 = 1024;

/// How the camera looks at the followed body.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The body the camera follows (`mjCAMERA_TRACKING`): it keeps its distance and angles
    /// while the body walks away.
    pub body: String,
    /// Metres from the body.
    pub distance: f64,
    /// Degrees about the vertical (90: from the robot's left side).
    pub azimuth: f64,
    /// Degrees above (negative) the horizon.
    pub elevation: f64,
}

impl Default for View {
    /// From the front left, a little above: legs and claws in sight at the robot's size (0.2 m
    /// tall torso).
    fn default() -> Self {
        Self {
            body: "torso".into(),
            distance: 0.9,
            azimuth: 135.0,
            elevation: -20.0,
        }
    }
}

/// An RGB image, top row first.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Frame {
    /// Whether any two pixels differ (a scene drawn at all, not a cleared buffer).
    pub fn has_detail(&self) -> bool {
        let first = &self.rgb[..3.min(self.rgb.len())];
        self.rgb.chunks_exact(3).any(|p| p != first)
    }
}

/// MuJoCo's renderer for one model, with its GL context. Not `Send` (see [`GlContext`]).
pub struct Renderer {
    width: u32,
    height: u32,
    scene: Box<c::mjvScene>,
    context: Box<c::mjrContext>,
    camera: c::mjvCamera,
    option: c::mjvOption,
    perturb: c::mjvPerturb,
    /// A copy of the caller's data: `mjv_updateScene` takes `mjData*` (it may use the data's
    /// arena), and the caller lends the data only for reading.
    scratch: *mut c::mjData,
    /// Dropped after the MuJoCo context is freed (freeing it calls GL).
    _gl: GlContext,
}

impl Renderer {
    /// A renderer of `width` x `height` frames of `model` (the model the data will come from).
    pub fn new(model: &MjModel, width: u32, height: u32, view: &View) -> Result<Self, RenderError> {
        let gl = GlContext::new(width, height)?;
        let body = model
            .name_to_id(MjtObjBase::mjOBJ_BODY, &view.body)
            .ok_or_else(|| RenderError::NoBody(view.body.clone()))?;
        // MuJoCo sizes its offscreen framebuffer from the model's <visual><global offwidth>;
        // a copy sized to the frame leaves the caller's model alone. Exactly the frame: a
        // larger buffer is cleared and resolved in software for nothing (a little: 74 ms a
        // 320x240 frame in the 640x480 default, 72 ms in its own size, before the shadow map
        // below).
        let mut sized = model.clone();
        // SAFETY: only the visual sizes change, never array sizes or addresses.
        unsafe {
            let g = &mut sized.ffi_mut().vis.global;
            g.offwidth = width as i32;
            g.offheight = height as i32;
            // The shadow map is drawn every frame; MuJoCo's 4096x4096 default is made for
            // GPUs (72 -> 41 ms a 320x240 frame at 1024). 1024 keeps the shadows under the
            // feet at these frame sizes.
            let q = &mut sized.ffi_mut().vis.quality;
            q.shadowsize = q.shadowsize.min(SHADOW_SIZE);
        }
        let m: *const c::mjModel = sized.ffi();
        // SAFETY: each struct is initialised by its mjv_/mjr_ default function before use, and
        // the GL context made above is current on this thread.
        unsafe {
            let mut scene = Box::new(MaybeUninit::<c::mjvScene>::zeroed().assume_init());
            c::mjv_defaultScene(&mut *scene);
            c::mjv_makeScene(m, &mut *scene, 2000);
            let mut context = Box::new(MaybeUninit::<c::mjrContext>::zeroed().assume_init());
            c::mjr_defaultContext(&mut *context);
            c::mjr_makeContext(m, &mut *context, font_scale(height) as i32);
            c::mjr_setBuffer(c::mjtFramebuffer::mjFB_OFFSCREEN as i32, &mut *context);
            if context.currentBuffer != c::mjtFramebuffer::mjFB_OFFSCREEN as i32 {
                c::mjr_freeContext(&mut *context);
                c::mjv_freeScene(&mut *scene);
                return Err(RenderError::Context(
                    "MuJoCo has no offscreen framebuffer in this GL context".into(),
                ));
            }
            let mut camera = MaybeUninit::<c::mjvCamera>::zeroed().assume_init();
            c::mjv_defaultCamera(&mut camera);
            camera.type_ = c::mjtCamera::mjCAMERA_TRACKING as i32;
            camera.trackbodyid = body as i32;
            camera.distance = view.distance;
            camera.azimuth = view.azimuth;
            camera.elevation = view.elevation;
            let mut option = MaybeUninit::<c::mjvOption>::zeroed().assume_init();
            c::mjv_defaultOption(&mut option);
            let mut perturb = MaybeUninit::<c::mjvPerturb>::zeroed().assume_init();
            c::mjv_defaultPerturb(&mut perturb);
            Ok(Self {
                width,
                height,
                scene,
                context,
                camera,
                option,
                perturb,
                scratch: c::mj_makeData(m),
                _gl: gl,
            })
        }
    }

    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Draws `data` (of the model this renderer was made for, or a copy of it) with a caption
    /// in the top left corner, and returns the image. The caption is MuJoCo's overlay: two
    /// columns, `labels` and `values`, lines split by `\n`.
    pub fn render<M: ModelType>(
        &mut self,
        data: &MjData<M>,
        (labels, values): (&str, &str),
    ) -> Frame {
        let viewport = c::mjrRect {
            left: 0,
            bottom: 0,
            width: self.width as i32,
            height: self.height as i32,
        };
        let text = c_text(labels);
        let text2 = c_text(values);
        let mut rgb = vec![0u8; self.width as usize * self.height as usize * 3];
        let m: *const c::mjModel = data.model().ffi();
        // SAFETY: scratch was made for a model of the same sizes (the caller's data is of this
        // model), the GL context is current, and rgb holds width*height RGB bytes.
        unsafe {
            c::mj_copyData(self.scratch, m, data.ffi());
            c::mjv_updateScene(
                m,
                self.scratch,
                &self.option,
                &self.perturb,
                &mut self.camera,
                c::mjtCatBit::mjCAT_ALL as i32,
                &mut *self.scene,
            );
            brighten_headlight(&mut self.scene);
            c::mjr_render(viewport, &mut *self.scene, &*self.context);
            if !labels.is_empty() || !values.is_empty() {
                c::mjr_overlay(
                    c::mjtFont::mjFONT_NORMAL as i32,
                    c::mjtGridPos::mjGRID_TOPLEFT as i32,
                    viewport,
                    text.as_ptr(),
                    text2.as_ptr(),
                    &*self.context,
                );
            }
            c::mjr_readPixels(
                rgb.as_mut_ptr(),
                std::ptr::null_mut(),
                viewport,
                &*self.context,
            );
        }
        Frame {
            width: self.width,
            height: self.height,
            rgb: flip_rows(rgb, self.width as usize * 3),
        }
    }
}

/// MuJoCo's font at a size that leaves a three-line caption room on small frames (the 100 %
/// font is 13 px tall; 150 % from 300 px up).
fn font_scale(height: u32) -> c::mjtFontScale {
    if height < 300 {
        c::mjtFontScale::mjFONTSCALE_100
    } else {
        c::mjtFontScale::mjFONTSCALE_150
    }
}

/// The model lights the robot from straight above (its one light), which leaves the sides the
/// camera sees dark; a stronger headlight (the light at the camera) shows the legs. A view
/// choice only: the model's own lights are untouched.
fn brighten_headlight(scene: &mut c::mjvScene) {
    let n = (scene.nlight.max(0) as usize).min(scene.lights.len());
    for light in scene.lights[..n].iter_mut().filter(|l| l.headlight != 0) {
        light.ambient = [0.3; 3];
        light.diffuse = [0.6; 3];
    }
}

/// A C string of `s` (an interior NUL, which would cut it short, becomes a space).
fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("no NUL left")
}

/// OpenGL reads the bottom row first; images start at the top.
fn flip_rows(rgb: Vec<u8>, stride: usize) -> Vec<u8> {
    rgb.chunks_exact(stride).rev().flatten().copied().collect()
}

impl Drop for Renderer {
    fn drop(&mut self) {
        // SAFETY: each was made in `new` and is freed once, while the GL context still lives.
        unsafe {
            c::mj_deleteData(self.scratch);
            c::mjr_freeContext(&mut *self.context);
            c::mjv_freeScene(&mut *self.scene);
        }
    }
}
