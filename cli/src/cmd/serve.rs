//! `clawrl serve`: policies and bundles over HTTP, each under a model id (see
//! `clawrl_endpoint::server` for the API). The key comes from `CLAWRL_API_KEY` or a file; without
//! one only a loopback address is served.
use std::io::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_endpoint::config::{check_key, key_override};
use clawrl_endpoint::server::{ServeOptions, ServedModel, serve};
use clawrl_trainer::remote::model_info;
use clawrl_trainer::source::load_source;

/// Serve policies over HTTP: GET /v1/models, POST /v1/act, GET /health.
#[derive(clap::Args)]
pub struct Args {
    /// A policy to serve, as ID=PATH or PATH (a run folder, checkpoint, policy file or bundle;
    /// the id is then the run folder's or the file's name). Repeatable.
    #[arg(long = "model", value_name = "[ID=]PATH", required = true)]
    models: Vec<String>,
    /// Address to listen on, HOST:PORT with HOST a name (`localhost`) or an IP (port 0: any
    /// free port, printed at start).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8000")]
    listen: String,
    /// A file holding the API key (one trailing newline is dropped). CLAWRL_API_KEY wins.
    #[arg(long, value_name = "FILE")]
    api_key_file: Option<PathBuf>,
    /// Largest request body in MiB (413 above it; 0 is refused).
    #[arg(long, default_value_t = 16)]
    max_body_mib: usize,
    /// Most observation rows in one request (413 above it).
    #[arg(long, default_value_t = 65_536)]
    max_batch: usize,
}

/// `--listen HOST:PORT` as the address it resolves to (the first, as a client connecting to
/// the name would try first): `localhost:8000` as well as `127.0.0.1:8000`.
fn resolve_listen(listen: &str) -> Result<SocketAddr> {
    listen
        .to_socket_addrs()
        .with_context(|| format!("--listen {listen}: expected HOST:PORT (e.g. localhost:8000)"))?
        .next()
        .with_context(|| format!("--listen {listen}: the name resolves to no address"))
}

/// `ID=PATH` or `PATH`, with the id a path's name gives.
fn split(spec: &str) -> (Option<&str>, &Path) {
    match spec.split_once('=') {
        Some((id, path)) if !id.is_empty() && !id.contains('/') => (Some(id), Path::new(path)),
        _ => (None, Path::new(spec)),
    }
}

fn load(spec: &str) -> Result<ServedModel> {
    let (id, path) = split(spec);
    let src = load_source(path).with_context(|| format!("--model {spec}"))?;
    let id = match id {
        Some(id) => id.to_string(),
        None => src
            .run_dir
            .as_deref()
            .unwrap_or(&src.file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .with_context(|| format!("--model {spec}: give it an id (ID=PATH)"))?,
    };
    let info = model_info(&id, &src)?;
    Ok(ServedModel {
        info,
        policy: src.policy,
    })
}

/// The key: `CLAWRL_API_KEY`, else the file's, each refused when empty or padded.
fn api_key(file: Option<&Path>) -> Result<Option<String>> {
    if let Some(k) = key_override(&clawrl_endpoint::process_env) {
        return Ok(Some(k.map_err(anyhow::Error::msg)?));
    }
    let Some(f) = file else { return Ok(None) };
    let text =
        std::fs::read_to_string(f).with_context(|| format!("--api-key-file {}", f.display()))?;
    let k = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    check_key(k).map_err(|why| anyhow::anyhow!("--api-key-file {}: {why}", f.display()))?;
    Ok(Some(k.to_string()))
}

pub fn run(a: Args) -> Result<()> {
    // A server outlives whoever read its first line (the address): a closed stdout must not end
    // it, as SIGPIPE's default would (main sets that default for the one-shot commands).
    #[cfg(unix)]
    // SAFETY: SIG_IGN is a valid disposition; nothing here relies on the previous one.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    clawrl_policy::init_candle_threads(1);
    let listen = resolve_listen(&a.listen)?;
    let api_key = api_key(a.api_key_file.as_deref())?;
    let keyed = api_key.is_some();
    let models = a
        .models
        .iter()
        .map(|s| load(s))
        .collect::<Result<Vec<_>>>()?;
    let lines: Vec<String> = models
        .iter()
        .map(|m| {
            let i = &m.info;
            format!(
                "  {:<12} {} on {} ({:?}, {} values) -> {} actions, sha256 {}",
                i.id,
                i.kind,
                i.task,
                i.observation.source,
                i.observation.dim,
                i.action.dim,
                &i.sha256[..12]
            )
        })
        .collect();
    let opts = ServeOptions {
        listen,
        api_key,
        max_body_bytes: a.max_body_mib << 20,
        max_batch: a.max_batch,
    };
    serve(models, &opts, |addr| {
        // One line a script can read the address from, then the models; flushed so a pipe sees it.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "serving on http://{addr}/v1");
        for l in &lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(
            out,
            "{}; stop with Ctrl-C",
            if keyed {
                "clients send Authorization: Bearer <key>"
            } else {
                "no API key (loopback only)"
            }
        );
        let _ = out.flush();
    })
    .map_err(anyhow::Error::msg)
}
