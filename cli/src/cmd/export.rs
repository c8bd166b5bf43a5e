//! `clawrl export`: a student as a policy bundle (optionally signed), and as ONNX.
use std::path::PathBuf;

use anyhow::Result;
use clawrl_trainer::export::{ExportOptions, export};

/// Export a student as a verified policy bundle, the artefact installed on the robot.
#[derive(clap::Args)]
pub struct Args {
    /// Run folder (newest good checkpoint), checkpoint file, or policy.safetensors.
    #[arg(long, value_name = "DIR|FILE")]
    policy: PathBuf,
    /// The bundle to write (written to a temporary file, then renamed).
    #[arg(long, value_name = "FILE.clawrl")]
    out: PathBuf,
    /// Sign with this Ed25519 secret key (from `clawrl keygen`).
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
    /// Also write the student as ONNX (input `obs`, output `actions`, normaliser and clipping
    /// inside) for other runtimes.
    #[arg(long, value_name = "FILE.onnx")]
    onnx: Option<PathBuf>,
    /// Evaluate the student (and its teacher) over this many episodes for the provenance.
    #[arg(long, default_value_t = 0)]
    episodes: usize,
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

pub fn run(a: Args) -> Result<()> {
    clawrl_policy::init_candle_threads(1);
    anyhow::ensure!(
        a.out
            .extension()
            .is_some_and(|e| e == clawrl_trainer::source::EXTENSION),
        "--out {}: a policy bundle's name ends in .{}",
        a.out.display(),
        clawrl_trainer::source::EXTENSION
    );
    let signing_key = a
        .sign
        .as_ref()
        .map(clawrl_bundle::load_signing_key)
        .transpose()?;
    if let Some(w) = a.sign.as_ref().and_then(clawrl_bundle::secret_key_warning) {
        eprintln!("warning: {w}");
    }
    let src = clawrl_trainer::source::load_source(&a.policy)?;
    let e = export(
        &src,
        &a.out,
        &ExportOptions {
            episodes: a.episodes,
            threads: a.threads,
            signing_key,
        },
    )?;
    let m = &e.manifest;
    println!(
        "wrote {} (sha256 {}{})\n  robot {} (MJCF sha256 {}), {} Hz\n  network {} with {} parameters, observation {} x {} frames, {} actions",
        e.path.display(),
        e.sha256,
        if a.sign.is_some() { ", signed" } else { "" },
        m.robot.model,
        &m.robot.mjcf_sha256[..12],
        m.control_rate_hz,
        m.network.kind,
        m.network.parameters,
        m.observation.layout.dim(),
        m.observation.history + 1,
        m.action.names.len()
    );
    if let Some(path) = &a.onnx {
        let p = clawrl_trainer::export::onnx_policy(src.policy.as_ref())?;
        clawrl_onnx::write_onnx(path, &p)?;
        println!(
            "wrote {} (ONNX: input `obs` [N, {}], output `actions` [N, {}])",
            path.display(),
            p.obs_dim,
            p.action_dim
        );
    }
    if let Some(ev) = &m.provenance.evaluation {
        println!(
            "  evaluation over {} episodes: return {:.2}, fall rate {:.1} %{}",
            ev.episodes,
            ev.mean_return,
            100.0 * ev.fall_rate,
            match (ev.teacher_mean_return, ev.teacher_fall_rate) {
                (Some(r), Some(f)) => format!(" (teacher: {r:.2}, {:.1} %)", 100.0 * f),
                _ => String::new(),
            }
        );
    }
    Ok(())
}
