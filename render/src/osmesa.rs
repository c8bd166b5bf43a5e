//! An OpenGL context in memory for MuJoCo, from Mesa's OSMesa, loaded at run time.
//!
//! Why at run time: the build then never needs OSMesa, and a machine without it learns which
//! package to install instead of failing to start `clawrl` at all.
//!
//! How MuJoCo finds GL: it links no OpenGL. `mjr_makeContext` goes through the objects loaded
//! in the process (libmujoco imports `dl_iterate_phdr`, `dlopen`, `dlsym`) and asks each for `eglGetProcAddress`,
//! `OSMesaGetProcAddress` or `glXGetProcAddressARB`; with none it fails with "an OpenGL
//! platform library has not been loaded into this process". Seen with `LD_DEBUG=files,bindings`
//! on render/tests/render.rs: the three lookups fail in the test binary, then
//! `OSMesaGetProcAddress` binds in libOSMesa.so.8. So loading OSMesa is all MuJoCo needs, and
//! it worked opened `RTLD_LOCAL` too. It is opened `RTLD_GLOBAL` all the same, for GL loaders
//! that only search the global scope (`dlsym(RTLD_DEFAULT, ...)`, as older glad builds do).
use std::ffi::c_void;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

use crate::RenderError;

/// Environment variable naming the OSMesa library to open (a file name or a path).
pub const LIB_ENV: &str = "CLAWRL_OSMESA_LIB";
/// The library `libosmesa6` installs (Debian 12; also the soname elsewhere).
pub const DEFAULT_LIB: &str = "libOSMesa.so.8";

// From GL/osmesa.h and GL/gl.h.
const OSMESA_RGBA: u32 = 0x1908;
const GL_UNSIGNED_BYTE: u32 = 0x1401;

type CreateContextExt = unsafe extern "C" fn(u32, i32, i32, i32, *mut c_void) -> *mut c_void;
type MakeCurrent = unsafe extern "C" fn(*mut c_void, *mut c_void, u32, i32, i32) -> u8;
type DestroyContext = unsafe extern "C" fn(*mut c_void);

/// libloading's message and dlerror's beneath it ("dlopen failed: ...: cannot open shared
/// object file").
fn with_cause(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// The library to open: [`LIB_ENV`] when set, else [`DEFAULT_LIB`].
pub fn library_name() -> String {
    std::env::var(LIB_ENV).unwrap_or_else(|_| DEFAULT_LIB.to_string())
}

/// A current OSMesa context drawing into its own buffer. Not `Send`: a GL context is current on
/// the thread that made it, and MuJoCo's calls must come from that thread.
pub struct GlContext {
    ctx: *mut c_void,
    destroy: DestroyContext,
    /// The context's window buffer (MuJoCo draws into its own offscreen framebuffer; this one
    /// only has to exist, at least as large as the frames).
    _buffer: Vec<u8>,
    /// Kept open for the context's life (the GL functions live in it).
    _lib: Library,
}

impl GlContext {
    /// Opens OSMesa and makes a `width` x `height` RGBA context current on this thread.
    pub fn new(width: u32, height: u32) -> Result<Self, RenderError> {
        let name = library_name();
        // SAFETY: opening Mesa runs only its own initialisers.
        let lib = unsafe { Library::open(Some(&name), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
            RenderError::NoRenderer {
                lib: name.clone(),
                reason: with_cause(&e),
            }
        })?;
        let missing = |e: libloading::Error| RenderError::NoRenderer {
            lib: name.clone(),
            reason: format!("not an OSMesa library: {e}"),
        };
        // SAFETY: the signatures are those of GL/osmesa.h.
        let (create, make_current, destroy) = unsafe {
            (
                *lib.get::<CreateContextExt>(b"OSMesaCreateContextExt\0")
                    .map_err(missing)?,
                *lib.get::<MakeCurrent>(b"OSMesaMakeCurrent\0")
                    .map_err(missing)?,
                *lib.get::<DestroyContext>(b"OSMesaDestroyContext\0")
                    .map_err(missing)?,
            )
        };
        // Depth and stencil as MuJoCo's own windows ask for them; no accumulation buffer.
        // SAFETY: a null share list is allowed.
        let ctx = unsafe { create(OSMESA_RGBA, 24, 8, 0, std::ptr::null_mut()) };
        if ctx.is_null() {
            return Err(RenderError::Context(
                "OSMesaCreateContextExt returned no context".into(),
            ));
        }
        let mut buffer = vec![0u8; width as usize * height as usize * 4];
        // SAFETY: the buffer holds width*height RGBA bytes and lives as long as the context.
        let ok = unsafe {
            make_current(
                ctx,
                buffer.as_mut_ptr().cast(),
                GL_UNSIGNED_BYTE,
                width as i32,
                height as i32,
            )
        };
        if ok == 0 {
            // SAFETY: ctx came from create above and is not current.
            unsafe { destroy(ctx) };
            return Err(RenderError::Context(format!(
                "OSMesaMakeCurrent refused a {width}x{height} buffer"
            )));
        }
        Ok(Self {
            ctx,
            destroy,
            _buffer: buffer,
            _lib: lib,
        })
    }
}

impl Drop for GlContext {
    fn drop(&mut self) {
        // SAFETY: ctx came from OSMesaCreateContextExt and is destroyed once.
        unsafe { (self.destroy)(self.ctx) };
    }
}
