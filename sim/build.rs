//! Checks that MuJoCo 3.17.0 is installed in the repo and puts it on the loader path.
//!
//! mujoco-rs links against `MUJOCO_DYNAMIC_LINK_DIR` (set in .cargo/config.toml). Cargo adds
//! link-search paths that lie inside the target directory to the loader path of `cargo run` and
//! `cargo test`, so the library is copied into OUT_DIR: every crate that depends on the sim crate
//! then runs without anyone exporting LD_LIBRARY_PATH.
use std::env;
use std::fs;
use std::path::PathBuf;

const VERSION: &str = "3.17.0";
const HEADER_VERSION: &str = "#define mjVERSION_HEADER 3017000";
const FIX: &str = "run ./scripts/setup-mujoco.sh from the repository root";

fn main() {
    println!("cargo::rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    let Ok(dir) = env::var("MUJOCO_DYNAMIC_LINK_DIR") else {
        fail(
            "MUJOCO_DYNAMIC_LINK_DIR is not set (it comes from .cargo/config.toml; build from inside the repository)",
        );
    };
    let dir = PathBuf::from(dir);
    let lib = dir.join(format!("libmujoco.so.{VERSION}"));
    let header = dir.join("../include/mujoco/mujoco.h");
    println!("cargo::rerun-if-changed={}", lib.display());
    println!("cargo::rerun-if-changed={}", header.display());

    if !lib.is_file() {
        fail(&format!(
            "MuJoCo {VERSION} is not installed: {} is missing",
            lib.display()
        ));
    }
    match fs::read_to_string(&header) {
        Ok(text) if text.contains(HEADER_VERSION) => {}
        Ok(_) => fail(&format!(
            "{} is not MuJoCo {VERSION}'s header (wrong version)",
            header.display()
        )),
        Err(e) => fail(&format!("cannot read {}: {e}", header.display())),
    }

    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let copy = out.join(lib.file_name().expect("file name"));
    if let Err(e) = fs::copy(&lib, &copy) {
        fail(&format!(
            "cannot copy {} into {}: {e}",
            lib.display(),
            out.display()
        ));
    }
    println!("cargo::rustc-link-search=native={}", out.display());
}

fn fail(why: &str) -> ! {
    // One clear line, with the command that fixes it.
    println!("cargo::error={why}; {FIX}");
    std::process::exit(1);
}
