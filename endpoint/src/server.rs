//! `clawrl serve`: policies over HTTP (axum on tokio), each under a model id.
//!
//! - `GET /health` (no key): `{"status": "ok", "models": N}`.
//! - `GET /v1/models`, `GET /v1/models/{id}`: what each model reads and answers.
//! - `POST /v1/act`: actions, mean and log-std for a batch of raw observations.
//!
//! Every error is `{"error": {"message", "type", "code"}}` with its status: 400 (not JSON, an
//! observation that is NaN, infinite or of the wrong length), 401 (the key, saying what is
//! wrong with it), 404 (model or path), 413 (body or batch too large), 422 (JSON of the wrong
//! shape), 500 (the network failed). Requests are logged with method, path, status and
//! latency, never with their headers, so the key never reaches a log.
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use candle_core::{Device, Tensor};
use clawrl_policy::Policy;
use rand::SeedableRng;
use subtle::ConstantTimeEq;

use crate::api::{self, ActResponse, ApiError, ModelInfo, ModelList, parse_act_request};

/// One policy to serve.
pub struct ServedModel {
    pub info: ModelInfo,
    pub policy: Box<dyn Policy>,
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// The key clients must send as `Authorization: Bearer <key>`; `None` serves without one
    /// (allowed on loopback only).
    pub api_key: Option<String>,
    /// Largest request body (413 above it).
    pub max_body_bytes: usize,
    /// Most observation rows in one request (413 above it).
    pub max_batch: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8000)),
            api_key: None,
            max_body_bytes: 16 << 20,
            max_batch: 65_536,
        }
    }
}

/// The shortest key accepted on a non-loopback address: anyone on the network may guess, and a
/// short key falls to guessing (`head -c 24 /dev/urandom | base64` gives 32 characters).
pub const MIN_REMOTE_KEY_CHARS: usize = 16;

/// Refuses what must not start: a non-loopback address without a key or with a short one, a bad
/// key, limits of zero (every request refused), no models, two models under one id.
pub fn check(models: &[ServedModel], opts: &ServeOptions) -> Result<(), String> {
    check_key_for(opts)?;
    if opts.max_body_bytes == 0 || opts.max_batch == 0 {
        return Err(format!(
            "a body limit of {} bytes and a batch limit of {} rows: every request would be \
             refused; give limits above 0",
            opts.max_body_bytes, opts.max_batch
        ));
    }
    if models.is_empty() {
        return Err("no models to serve (give at least one --model)".into());
    }
    for (i, m) in models.iter().enumerate() {
        if models[..i].iter().any(|o| o.info.id == m.info.id) {
            return Err(format!(
                "two models are served as `{}`: give each its own id (ID=PATH)",
                m.info.id
            ));
        }
    }
    Ok(())
}

/// The key against the address: required and long enough off loopback, well-formed anywhere.
fn check_key_for(opts: &ServeOptions) -> Result<(), String> {
    let remote = !opts.listen.ip().is_loopback();
    match &opts.api_key {
        None if remote => Err(format!(
            "refusing to serve on {} without an API key: anyone who can reach it could use the \
             policies; set {} (or --api-key-file), or listen on 127.0.0.1",
            opts.listen,
            crate::config::KEY_ENV
        )),
        None => Ok(()),
        Some(k) => {
            crate::config::check_key(k)
                .map_err(|why| format!("the API key cannot be used: {why}"))?;
            let n = k.chars().count();
            if remote && n < MIN_REMOTE_KEY_CHARS {
                return Err(format!(
                    "refusing to serve on {} with a {n}-character API key: off loopback it needs \
                     at least {MIN_REMOTE_KEY_CHARS} (e.g. `head -c 24 /dev/urandom | base64`)",
                    opts.listen
                ));
            }
            Ok(())
        }
    }
}

struct Shared {
    models: Vec<ServedModel>,
    api_key: Option<String>,
    max_batch: usize,
    /// Seeds sampled requests that bring no seed of their own.
    draws: AtomicU64,
}

type AppState = Arc<Shared>;

/// The router, for tests that drive it in-process and for [`spawn`] / [`serve`].
fn router(models: Vec<ServedModel>, opts: &ServeOptions) -> Router {
    let state = Arc::new(Shared {
        models,
        api_key: opts.api_key.clone(),
        max_batch: opts.max_batch,
        draws: AtomicU64::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1),
        ),
    });
    Router::new()
        .route(api::HEALTH, get(health))
        .route(api::MODELS, get(list_models))
        .route("/v1/models/{id}", get(one_model))
        .route(api::ACT, post(act))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::extract::DefaultBodyLimit::max(opts.max_body_bytes))
        .with_state(state)
}

/// A running server on its own thread; dropped or [`Server::stop`]ped, it shuts down.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn bind(opts: &ServeOptions) -> std::io::Result<TcpListener> {
    let l = TcpListener::bind(opts.listen)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// Small answers go out at once instead of waiting for Nagle's algorithm.
fn no_delay(s: &mut tokio::net::TcpStream) {
    let _ = s.set_nodelay(true);
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Binds on the calling thread (so a busy port is an error here) and serves on a new one.
pub fn spawn(models: Vec<ServedModel>, opts: &ServeOptions) -> Result<Server, String> {
    check(&models, opts)?;
    let listener = bind(opts).map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let app = router(models, opts);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let rt = runtime().map_err(|e| e.to_string())?;
    let thread = std::thread::spawn(move || {
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener)
                .expect("a bound listener")
                .tap_io(no_delay);
            let _ = axum::serve(l, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
    });
    Ok(Server {
        addr,
        stop: Some(tx),
        thread: Some(thread),
    })
}

/// Serves until SIGINT or SIGTERM; `ready` is called with the bound address first.
pub fn serve(
    models: Vec<ServedModel>,
    opts: &ServeOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), String> {
    check(&models, opts)?;
    let listener = bind(opts).map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
    ready(listener.local_addr().map_err(|e| e.to_string())?);
    let app = router(models, opts);
    runtime().map_err(|e| e.to_string())?.block_on(async move {
        let l = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| e.to_string())?
            .tap_io(no_delay);
        axum::serve(l, app)
            .with_graceful_shutdown(stop_signal())
            .await
            .map_err(|e| e.to_string())
    })
}

async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {},
        _ = term.recv() => {},
    }
    tracing::info!("stopping: signal received");
}

fn json(status: u16, body: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Answers and logs one request (method, path, status, latency: no headers, no key).
fn finish(method: &str, path: &str, start: Instant, result: Result<String, ApiError>) -> Response {
    let (status, body) = match result {
        Ok(b) => (200, b),
        Err(e) => (e.status, e.body()),
    };
    tracing::info!(
        "{method} {path} {status} {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    json(status, body)
}

/// Checks the Authorization header and says exactly what is wrong with it, without echoing it.
fn authorize(state: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = &state.api_key else {
        return Ok(());
    };
    let unauthorized = |code: &'static str, m: &str| ApiError::new(401, code, m);
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        unauthorized(
            "missing_api_key",
            "no Authorization header: send `Authorization: Bearer <key>`",
        )
    })?;
    let value = value.to_str().map_err(|_| {
        unauthorized(
            "invalid_api_key",
            "the Authorization header is not ASCII text",
        )
    })?;
    // The scheme is case-insensitive (RFC 9110); a bare `Bearer` is what arrives of
    // `Bearer ` once the trailing space is trimmed off the header.
    if value.trim().eq_ignore_ascii_case("bearer") {
        return Err(unauthorized(
            "missing_api_key",
            "the key after `Bearer ` is empty",
        ));
    }
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token,
        _ => {
            return Err(unauthorized(
                "invalid_authorization_scheme",
                "the Authorization header lacks the `Bearer ` prefix: send `Authorization: Bearer <key>`",
            ));
        }
    };
    if token.trim().is_empty() {
        return Err(unauthorized(
            "missing_api_key",
            "the key after `Bearer ` is empty",
        ));
    }
    if token.trim() != token {
        return Err(unauthorized(
            "invalid_api_key",
            "the key after `Bearer ` is padded with whitespace",
        ));
    }
    if !bool::from(token.as_bytes().ct_eq(expected.as_bytes())) {
        return Err(unauthorized(
            "invalid_api_key",
            "the API key is not the one this server was started with",
        ));
    }
    Ok(())
}

fn find<'a>(state: &'a Shared, id: &str) -> Result<&'a ServedModel, ApiError> {
    state
        .models
        .iter()
        .find(|m| m.info.id == id)
        .ok_or_else(|| {
            let ids: Vec<String> = state
                .models
                .iter()
                .map(|m| format!("`{}`", m.info.id))
                .collect();
            ApiError::new(
                404,
                "model_not_found",
                format!(
                    "model `{id}` is not served here; the served models are {}",
                    ids.join(", ")
                ),
            )
        })
}

async fn health(State(s): State<AppState>) -> Response {
    let start = Instant::now();
    let body = format!(r#"{{"status":"ok","models":{}}}"#, s.models.len());
    finish("GET", api::HEALTH, start, Ok(body))
}

async fn list_models(State(s): State<AppState>, headers: HeaderMap) -> Response {
    let start = Instant::now();
    let r = authorize(&s, &headers).map(|()| {
        let list = ModelList {
            object: "list".into(),
            data: s.models.iter().map(|m| m.info.clone()).collect(),
        };
        serde_json::to_string(&list).expect("model infos serialise")
    });
    finish("GET", api::MODELS, start, r)
}

async fn one_model(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let start = Instant::now();
    let r = authorize(&s, &headers)
        .and_then(|()| find(&s, &id))
        .map(|m| serde_json::to_string(&m.info).expect("model infos serialise"));
    finish("GET", "/v1/models/{id}", start, r)
}

async fn act(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let start = Instant::now();
    let r = authorize(&s, &headers).and_then(|()| {
        let body = body.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    413,
                    "request_too_large",
                    format!("the request body is too large: {}", e.body_text()),
                )
            } else {
                ApiError::new(
                    400,
                    "invalid_body",
                    format!("the request body could not be read: {}", e.body_text()),
                )
            }
        })?;
        answer_act(&s, &body)
    });
    finish("POST", api::ACT, start, r)
}

/// The act request's checks and the forward pass.
fn answer_act(s: &Shared, body: &[u8]) -> Result<String, ApiError> {
    let req = parse_act_request(body)?;
    let m = find(s, &req.model)?;
    let layout = &m.info.observation;
    let rows = req.observations.len();
    if rows == 0 {
        return Err(ApiError::new(
            400,
            "invalid_observation",
            "`observations` is empty: send at least one row",
        ));
    }
    if rows > s.max_batch {
        return Err(ApiError::new(
            413,
            "batch_too_large",
            format!(
                "{rows} observation rows in one request; this server takes at most {}",
                s.max_batch
            ),
        ));
    }
    if let Some((r, row)) = req
        .observations
        .iter()
        .enumerate()
        .find(|(_, o)| o.len() != layout.dim)
    {
        return Err(ApiError::new(
            400,
            "invalid_observation",
            format!(
                "observations[{r}] has {} values; model `{}` reads {} ({} frames of {} `{:?}` values)",
                row.len(),
                m.info.id,
                layout.dim,
                layout.history + 1,
                layout.frame_dim,
                layout.source
            ),
        ));
    }
    let flat: Vec<f32> = req.observations.into_iter().flatten().collect();
    let inference = |e: clawrl_policy::PolicyError| {
        ApiError::new(
            500,
            "inference_failed",
            format!("model `{}`: {e}", m.info.id),
        )
    };
    let g = m.policy.as_ref().gaussians(&flat).map_err(inference)?;
    let na = m.info.action.dim;
    let actions = if req.deterministic {
        deterministic(&g.mean, rows, m.info.action.squashed).map_err(|e| inference(e.into()))?
    } else {
        let seed = req
            .seed
            .unwrap_or_else(|| s.draws.fetch_add(1, Ordering::Relaxed));
        sampled(&g, seed, m.info.action.squashed)
    };
    let split = |v: &[f32]| v.chunks(na).map(<[f32]>::to_vec).collect::<Vec<_>>();
    let resp = ActResponse {
        object: "act".into(),
        model: m.info.id.clone(),
        actions: split(&actions),
        mean: split(&g.mean),
        log_std: split(&g.log_std),
    };
    serde_json::to_string(&resp).map_err(|e| {
        ApiError::new(
            500,
            "inference_failed",
            format!("model `{}` answered a non-finite value ({e})", m.info.id),
        )
    })
}

/// The mean, through candle's tanh when squashed: the very numbers `Policy::deterministic`
/// gives locally.
fn deterministic(mean: &[f32], rows: usize, squashed: bool) -> candle_core::Result<Vec<f32>> {
    if !squashed {
        return Ok(mean.to_vec());
    }
    Tensor::from_slice(mean, (rows, mean.len() / rows.max(1)), &Device::Cpu)?
        .tanh()?
        .flatten_all()?
        .to_vec1()
}

fn sampled(g: &clawrl_policy::Gaussians, seed: u64, squashed: bool) -> Vec<f32> {
    use rand::RngExt;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    g.mean
        .iter()
        .zip(&g.log_std)
        .map(|(m, ls)| {
            let z: f32 = rng.sample(rand_distr::StandardNormal);
            let a = m + ls.exp() * z;
            if squashed { a.tanh() } else { a }
        })
        .collect()
}

async fn unknown_path(method: Method, uri: Uri) -> Response {
    let start = Instant::now();
    let e = ApiError::new(
        404,
        "unknown_path",
        format!(
            "no route for {method} {}: this server answers GET {}, GET {}, POST {} (is /v1 in base_url once?)",
            uri.path(),
            api::HEALTH,
            api::MODELS,
            api::ACT
        ),
    );
    finish(method.as_str(), uri.path(), start, Err(e))
}

async fn wrong_method(method: Method, uri: Uri) -> Response {
    let start = Instant::now();
    let want = if uri.path() == api::ACT {
        "POST"
    } else {
        "GET"
    };
    let e = ApiError::new(
        405,
        "method_not_allowed",
        format!("{} takes {want}, not {method}", uri.path()),
    );
    finish(method.as_str(), uri.path(), start, Err(e))
}
