//! Records where MuJoCo lives in the `clawrl` binary (an rpath), so the binary runs outside
//! `cargo run` too (`target/release/clawrl ...`) without LD_LIBRARY_PATH. The sim crate's build
//! script has already checked the library and explains how to install it when it is missing.
fn main() {
    println!("cargo::rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR") {
        println!("cargo::rustc-link-arg-bins=-Wl,-rpath,{dir}");
    }
}
