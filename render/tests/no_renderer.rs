//! Without OSMesa, one line names the package to install. Its own test binary: it sets the
//! library variable for the whole process.
use clawrl_render::osmesa::LIB_ENV;
use clawrl_render::{Renderer, View};

#[test]
fn a_missing_osmesa_library_names_the_package_to_install() {
    // SAFETY: the only test in this process; no other thread reads the environment.
    unsafe { std::env::set_var(LIB_ENV, "/nonexistent/libOSMesa.so.8") };
    let model =
        clawrl_sim::model::load(clawrl_sim::models_dir().join("quadruped.xml")).expect("model");
    let Err(e) = Renderer::new(&model, 64, 48, &View::default()) else {
        panic!("a renderer without OSMesa");
    };
    let msg = e.to_string();
    assert!(msg.contains("libosmesa6"), "{msg}");
    assert!(msg.contains("/nonexistent/libOSMesa.so.8"), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}
