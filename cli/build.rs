//! Records where MuJoCo lives in the `clawrl` binary (rpaths), so the binary runs outside
//! `cargo run` without LD_LIBRARY_PATH: first `$ORIGIN/../lib`, the library beside an installed
//! binary (scripts/install lays out PREFIX/bin/clawrl and PREFIX/lib/libmujoco.so*), then the
//! build tree's copy (`target/release/clawrl ...` run in place). The sim crate's build script has
//! already checked the library and explains how to install it when it is missing.
fn main() {
    println!("cargo::rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    // `$ORIGIN` reaches the linker as written (no shell between); the loader expands it.
    println!("cargo::rustc-link-arg-bins=-Wl,-rpath,$ORIGIN/../lib");
    if let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR") {
        println!("cargo::rustc-link-arg-bins=-Wl,-rpath,{dir}");
    }
}
