//! Puts memory.x where cortex-m-rt's link.x finds it, and links with link.x. Done here rather
//! than in .cargo/config.toml so a build from any directory (CI uses --manifest-path) links right.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    fs::copy("memory.x", out.join("memory.x")).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rerun-if-changed=memory.x");
}
