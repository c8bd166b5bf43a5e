//! One module per subcommand: its arguments (clap) and a `run` that calls the libraries.
pub mod bench;
pub mod compare;
pub mod distill;
pub mod endpoint;
pub mod eval;
pub mod export;
pub mod flash;
pub mod hil;
pub mod keygen;
pub mod outputs;
pub mod plot;
mod plot_mcap;
pub mod robot;
pub mod serve;
pub mod simulate;
pub mod slope_curve;
pub mod sweep;
pub mod sysid;
pub mod teleop;
pub mod train;
pub mod verify;

/// A runtime config named on the command line (`--robot`, `--runtime-config`), found as the
/// robot's other files are (`clawrl_sim::resolve`: the current directory, then an install's
/// share folder, then the build tree), so an installed `clawrl` finds the shipped one from any
/// directory; when it is not there, the error names where it was looked for.
pub fn robot_config(
    path: &std::path::Path,
) -> anyhow::Result<clawrl_runtime::config::RuntimeConfig> {
    let found = clawrl_sim::resolve(path);
    clawrl_runtime::config::RuntimeConfig::load(&found, &[]).map_err(|e| {
        let e = anyhow::Error::from(e);
        if path.is_absolute() {
            e
        } else {
            e.context(format!(
                "{} looked for in {}",
                path.display(),
                clawrl_sim::roots_tried()
            ))
        }
    })
}
