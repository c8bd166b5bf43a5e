//! Videos of the simulation, drawn by MuJoCo's own renderer (`mjv_updateScene`, `mjr_render`,
//! `mjr_overlay`, `mjr_readPixels`) without a window.
//!
//! - [`osmesa`] gives MuJoCo an OpenGL context in memory (Mesa's software rasteriser). The
//!   library is opened at run time, so building clawrl never needs it and a machine without it
//!   gets one line naming the package to install ([`RenderError::NoRenderer`]).
//! - [`Renderer`] draws one frame of a model and its data, seen by a camera that follows a body,
//!   with a caption in MuJoCo's font.
//! - [`Video`] keeps every `k`-th control step's frame and writes them as a GIF.
//!
//! Rendering is a view of the simulation: nothing here steps physics, and training never calls it.
pub mod gif_out;
pub mod osmesa;
pub mod scene;
pub mod video;

pub use gif_out::GifWriter;
pub use scene::{Frame, Renderer, View};
pub use video::{FrameSkip, Video};

/// The Debian/Ubuntu package that holds the OSMesa library.
pub const OSMESA_PACKAGE: &str = "libosmesa6";

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No software OpenGL: the OSMesa library is missing or unusable.
    #[error(
        "no renderer: cannot load the OSMesa library {lib} ({reason}); install the package \
         {OSMESA_PACKAGE} (apt-get install {OSMESA_PACKAGE}) or point {} at libOSMesa.so",
        osmesa::LIB_ENV
    )]
    NoRenderer { lib: String, reason: String },
    /// OSMesa loaded but would not give a context of this size.
    #[error("OSMesa: {0}")]
    Context(String),
    /// The model has no body of this name for the camera to follow.
    #[error("no body named `{0}` for the camera to follow")]
    NoBody(String),
    #[error("frame of {got} bytes, expected {want} ({width}x{height} RGB)")]
    FrameSize {
        got: usize,
        want: usize,
        width: u32,
        height: u32,
    },
    #[error("writing {file}: {reason}")]
    Write { file: String, reason: String },
}
