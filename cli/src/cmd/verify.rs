//! `clawrl verify`: check a policy bundle (integrity, format, manifest, signature, robot) and
//! print what it holds. The robot check is the one the robot runs at install and at start-up
//! ([`clawrl_bundle::check_fits`] against the runtime config's robot): on by default, with the
//! runtime config `flash` and `hil` use by default, so a plain `verify` says `ok` only to what
//! the robot accepts.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_bundle::{Bundle, Trust};

/// The runtime config of `--robot` when none is named (that of `flash`, `hil` and the robot's
/// own `clawrl-runtime`).
const DEFAULT_ROBOT: &str = "configs/runtime/robot.toml";

/// Check a policy bundle as the robot will, and print its manifest.
#[derive(clap::Args)]
pub struct Args {
    bundle: PathBuf,
    /// A trusted public key (from `clawrl keygen`); repeatable. Naming one requires a signature
    /// by one of them: an unsigned bundle, or one signed by any other key, is refused.
    #[arg(long, value_name = "KEY.pub")]
    trust: Vec<PathBuf>,
    /// Refuse an unsigned bundle (implied by --trust).
    #[arg(long)]
    require_signature: bool,
    /// Also check that the bundle was trained on this MJCF file.
    #[arg(long, value_name = "MJCF")]
    model: Option<PathBuf>,
    /// The robot the bundle must fit: this runtime config's `[robot]` section and control rate,
    /// checked exactly as `clawrl-runtime install` and `run` will.
    #[arg(long, value_name = "RUNTIME_CONFIG", default_value = DEFAULT_ROBOT)]
    robot: PathBuf,
    /// Skip the robot check (a bundle for another robot, or none, such as cart-pole's); the
    /// output then says the robot was not checked.
    #[arg(long, conflicts_with = "robot")]
    any_robot: bool,
}

pub fn run(a: Args) -> Result<()> {
    let trust = Trust::from_key_files(&a.trust, a.require_signature)?;
    let b = clawrl_bundle::read(&a.bundle, &trust)?;
    let m = &b.manifest;
    if let Some(model) = &a.model {
        let found = clawrl_sim::resolve(model);
        let hash = clawrl_bundle::file_sha256(&found).with_context(|| {
            format!(
                "--model {}: cannot read {} (looked for in {})",
                model.display(),
                found.display(),
                clawrl_sim::roots_tried()
            )
        })?;
        b.check_robot(&m.robot.model, &hash)?;
    }
    let robot = if a.any_robot {
        "not checked (--any-robot): the robot may refuse it".to_string()
    } else {
        check_robot(&b, &a.robot)?;
        format!("fits {}", a.robot.display())
    };
    // The policy rebuilds from the manifest alone.
    clawrl_policy::bundle::from_bundle(&clawrl_policy::Registry::default(), &b)?;
    println!("{}: ok (sha256 {})", a.bundle.display(), b.sha256_hex());
    println!(
        "  signature: {}",
        match &b.signer {
            Some(k) => format!(
                "Ed25519 by {}",
                k.as_bytes()
                    .iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<String>()
            ),
            None => "none".into(),
        }
    );
    println!(
        "  robot {} (MJCF sha256 {})",
        m.robot.model, m.robot.mjcf_sha256
    );
    println!("  robot check: {robot}");
    // What it was trained with, which the robot must match (control rate, rate limit); a
    // bundle made before a value was recorded says so.
    let unrecorded = || "not recorded".to_string();
    println!(
        "  trained with: control {} Hz (control_rate_hz), physics {} (physics_rate_hz), \
         servo-target limit {} (action.max_target_speed)",
        m.control_rate_hz,
        m.physics_rate_hz
            .map_or_else(unrecorded, |hz| format!("{hz} Hz")),
        m.action
            .max_target_speed
            .map_or_else(unrecorded, |v| format!("{v} rad/s")),
    );
    println!(
        "  observation: {:?}, {} values x {} frames, clip {}",
        m.observation.source,
        m.observation.layout.dim(),
        m.observation.history + 1,
        m.observation.normalizer.clip
    );
    println!(
        "  network: {} ({} parameters); actions: {}",
        m.network.kind,
        m.network.parameters,
        m.action.names.join(", ")
    );
    let p = &m.provenance;
    println!(
        "  provenance: seed {}, source {}, clawrl {}, teacher sha256 {}",
        p.seed,
        p.source_revision,
        p.clawrl_version,
        if p.teacher_sha256.is_empty() {
            "-"
        } else {
            &p.teacher_sha256
        }
    );
    Ok(())
}

/// The robot's own check of `b` against the runtime config `config`.
fn check_robot(b: &Bundle, config: &Path) -> Result<()> {
    // Which robot, and how to name another or none: the default config is a relative path.
    let which = || {
        format!(
            "robot check against {} (--robot names another config, --any-robot skips it)",
            config.display()
        )
    };
    let robot = super::robot_config(config)
        .with_context(which)?
        .robot_spec();
    clawrl_runtime::install::check_bundle(b, &robot).with_context(which)?;
    Ok(())
}
