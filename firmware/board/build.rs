//! Puts memory.x where cortex-m-rt's link.x finds it, and links with link.x. Done here rather
//! than in .cargo/config.toml so a build from any directory (CI uses --manifest-path) links right.
//!
//! Writes the servo table from the robot description (wiring_gen.rs): the shipped robot's, or
//! the one `CLAWRL_ROBOT_DESCRIPTION` names. A description the board cannot drive stops the
//! build, naming the servo.
use std::{env, fs, path::PathBuf};

#[path = "wiring_gen.rs"]
mod wiring_gen;

const SHIPPED: &str = "../../robots/claw_quadruped/robot.toml";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    fs::copy("memory.x", out.join("memory.x")).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rerun-if-changed=memory.x");

    let description = env::var("CLAWRL_ROBOT_DESCRIPTION").unwrap_or_else(|_| SHIPPED.into());
    println!("cargo:rerun-if-env-changed=CLAWRL_ROBOT_DESCRIPTION");
    println!("cargo:rerun-if-changed={description}");
    println!("cargo:rerun-if-changed=wiring_gen.rs");
    let text = fs::read_to_string(&description)
        .unwrap_or_else(|e| panic!("the robot description {description}: {e}"));
    let (robot, entries) = wiring_gen::entries(&text)
        .unwrap_or_else(|e| panic!("the robot description {description}: {e}"));
    let source = description.trim_start_matches("../../");
    fs::write(
        out.join("wiring.rs"),
        wiring_gen::render(&robot, source, &entries),
    )
    .unwrap();
}
