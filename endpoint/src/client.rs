//! The client: one request at a time over a kept-alive connection (ureq), and errors that
//! say what is wrong: the URL actually requested, the HTTP status, the server's own message,
//! the first bytes of an answer that is not what a clawrl endpoint sends, the proxy variable
//! that routed the request, the timeout and the key to raise it.
use std::time::{Duration, Instant};

use ureq::http::Uri;

use crate::api::{self, ActRequest, ActResponse, ErrorBody, ModelInfo, ModelList};
use crate::config::{EndpointConfig, KEY_ENV};
use crate::proxy::{self, ProxyChoice};

/// What went wrong, for callers that branch on it; the message says it to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request was refused before it was sent (bad URL, TLS not built in, bad input).
    Request,
    /// Nothing listens at the address (no proxy involved).
    Connect,
    /// The proxy from the environment refused or did not answer.
    Proxy,
    Timeout,
    /// 401: the key.
    Unauthorized,
    /// 404: a model id the server does not offer, or a path it does not have.
    NotFound,
    /// Another non-2xx answer.
    Status,
    /// A 2xx answer that is not what a clawrl endpoint sends.
    BadAnswer,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct EndpointError {
    pub kind: ErrorKind,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    pub message: String,
}

impl EndpointError {
    fn new(kind: ErrorKind, status: Option<u16>, message: String) -> Self {
        Self {
            kind,
            status,
            message,
        }
    }
}

pub type Result<T> = std::result::Result<T, EndpointError>;

/// One answer: status, body and how long the round trip took.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub latency: Duration,
}

/// The answer of one act call, with its rows as flat vectors.
#[derive(Debug, Clone)]
pub struct Acted {
    pub actions: Vec<f32>,
    pub mean: Vec<f32>,
    pub log_std: Vec<f32>,
    pub latency: Duration,
}

pub struct Client {
    config: EndpointConfig,
    agent: ureq::Agent,
    proxy: Option<ProxyChoice>,
    host: String,
}

/// Largest answer read (a 4096-environment batch of 16 actions is about 2 MB).
const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// Statuses worth another try (what OpenAI-style clients retry besides connection errors).
const RETRIED: [u16; 7] = [408, 409, 429, 500, 502, 503, 504];

impl Client {
    /// A client for `config`; `env` decides the proxy (`std::env::var` in the commands).
    pub fn new(config: EndpointConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let uri: Uri = config.base_url.parse().map_err(|e| {
            EndpointError::new(
                ErrorKind::Request,
                None,
                format!("endpoint.base_url `{}` is not a URL: {e}", config.base_url),
            )
        })?;
        let scheme = uri.scheme_str().unwrap_or("http").to_string();
        if scheme == "https" && !cfg!(feature = "https") {
            return Err(EndpointError::new(
                ErrorKind::Request,
                None,
                format!(
                    "endpoint.base_url {} is https, and this clawrl was built without TLS: rebuild \
                     with `--features https`, or reach the server over an SSH tunnel with an http:// URL",
                    config.base_url
                ),
            ));
        }
        let host = uri.host().unwrap_or_default().to_string();
        let proxy = proxy::choose(&scheme, &host, env);
        let ureq_proxy = match &proxy {
            Some(p) => Some(ureq::Proxy::new(&p.value).map_err(|e| {
                EndpointError::new(
                    ErrorKind::Proxy,
                    None,
                    format!(
                        "the proxy {}={} (from the environment) is not a proxy URL ({e}); {}",
                        p.var,
                        p.value,
                        p.bypass_hint(&host)
                    ),
                )
            })?),
            None => None,
        };
        let agent = ureq::Agent::config_builder()
            // Bodies of 4xx/5xx answers carry the diagnosis: read them.
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs_f64(config.timeout)))
            .proxy(ureq_proxy)
            .user_agent(concat!("clawrl/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(Self {
            config,
            agent,
            proxy,
            host,
        })
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    pub fn proxy(&self) -> Option<&ProxyChoice> {
        self.proxy.as_ref()
    }

    /// The URL of an API path (`/v1/models` -> `{base_url}/models`): base_url holds the `/v1`.
    pub fn url(&self, api_path: &str) -> String {
        let rest = api_path.strip_prefix("/v1").unwrap_or(api_path);
        format!("{}{rest}", self.config.base_url.trim_end_matches('/'))
    }

    /// One request; transport failures become diagnoses, any HTTP answer comes back. A failed
    /// connection or a 408, 409, 429 or 5xx answer is tried again up to `endpoint.retries`
    /// times, after 0.25 s, 0.5 s, ... (or the server's `Retry-After`, at most 10 s).
    pub fn request(&self, method: &str, api_path: &str, body: Option<Vec<u8>>) -> Result<Answer> {
        let url = self.url(api_path);
        let mut attempt = 0;
        loop {
            let (result, retry_after) = self.once(method, &url, body.as_deref());
            let why = match &result {
                Ok(a) if RETRIED.contains(&a.status) => format!("HTTP {}", a.status),
                Err(e) if e.kind == ErrorKind::Connect => "no connection".to_string(),
                _ => return result,
            };
            if attempt == self.config.retries {
                return match result {
                    Err(mut e) if attempt > 0 => {
                        e.message.push_str(&format!(" (after {attempt} retries)"));
                        Err(e)
                    }
                    other => other,
                };
            }
            let wait = retry_after.unwrap_or(0.25 * f64::from(1u32 << attempt.min(5)));
            attempt += 1;
            tracing::warn!(
                "{method} {url}: {why}; trying again in {wait:.2} s ({attempt} of {} retries, endpoint.retries)",
                self.config.retries
            );
            std::thread::sleep(Duration::from_secs_f64(wait.min(10.0)));
        }
    }

    /// One try: the answer (or the diagnosis) and the server's `Retry-After` seconds, if any.
    fn once(&self, method: &str, url: &str, body: Option<&[u8]>) -> (Result<Answer>, Option<f64>) {
        let auth = format!("Bearer {}", self.config.api_key());
        let start = Instant::now();
        let sent = match body {
            Some(b) => self
                .agent
                .post(url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(b),
            None if method == "GET" => self.agent.get(url).header("Authorization", &auth).call(),
            None => self
                .agent
                .post(url)
                .header("Authorization", &auth)
                .send_empty(),
        };
        let mut response = match sent {
            Ok(r) => r,
            Err(e) => return (Err(self.transport_error(url, e)), None),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0);
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
            .map_err(|e| self.transport_error(url, e));
        let answer = body.map(|body| Answer {
            status,
            body,
            latency: start.elapsed(),
        });
        (answer, retry_after)
    }

    /// `GET /v1/models`.
    pub fn models(&self) -> Result<(Vec<ModelInfo>, Duration)> {
        let a = self.request("GET", api::MODELS, None)?;
        let url = self.url(api::MODELS);
        self.check_status(&url, &a)?;
        let list: ModelList = parse(&url, &a, "`object` and `data`")?;
        Ok((list.data, a.latency))
    }

    /// The served model `id`, or an error naming it and the ids the server offers.
    pub fn model(&self, id: &str, config_key: &str) -> Result<ModelInfo> {
        let (models, _) = self.models()?;
        models
            .iter()
            .find(|m| m.id == id)
            .cloned()
            .ok_or_else(|| self.not_offered(id, config_key, &models))
    }

    pub fn not_offered(&self, id: &str, config_key: &str, models: &[ModelInfo]) -> EndpointError {
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        EndpointError::new(
            ErrorKind::NotFound,
            Some(404),
            format!(
                "model `{id}` ({config_key} in {}) is not served by {}: it offers {}",
                self.config.file.display(),
                self.url(api::MODELS),
                if ids.is_empty() {
                    "no models".to_string()
                } else {
                    ids.iter()
                        .map(|i| format!("`{i}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        )
    }

    /// `POST /v1/act` for `rows` observation rows of `dim` values, flat.
    pub fn act(&self, model: &str, obs: &[f32], dim: usize, deterministic: bool) -> Result<Acted> {
        let rows = obs.len() / dim.max(1);
        let req = ActRequest {
            model: model.into(),
            observations: obs.chunks(dim.max(1)).map(<[f32]>::to_vec).collect(),
            deterministic,
            seed: None,
        };
        let body = serde_json::to_vec(&req).map_err(|e| {
            EndpointError::new(
                ErrorKind::Request,
                None,
                format!("cannot encode the observations ({e}): NaN and infinity have no JSON form"),
            )
        })?;
        let a = self.request("POST", api::ACT, Some(body))?;
        let url = self.url(api::ACT);
        self.check_status(&url, &a)?;
        let r: ActResponse = parse(&url, &a, "`actions`, `mean` and `log_std`")?;
        let flat = |name: &str, v: Vec<Vec<f32>>| -> Result<Vec<f32>> {
            if v.len() != rows {
                return Err(bad_answer(
                    &url,
                    &a,
                    &format!("`{name}` has {} rows for {rows} observations", v.len()),
                ));
            }
            Ok(v.into_iter().flatten().collect())
        };
        Ok(Acted {
            actions: flat("actions", r.actions)?,
            mean: flat("mean", r.mean)?,
            log_std: flat("log_std", r.log_std)?,
            latency: a.latency,
        })
    }

    /// A non-2xx answer as a diagnosis: the URL, the status, the server's message, and what to
    /// change on this side.
    pub fn check_status(&self, url: &str, a: &Answer) -> Result<()> {
        if (200..300).contains(&a.status) {
            return Ok(());
        }
        let server = serde_json::from_slice::<ErrorBody>(&a.body).ok();
        let said = match &server {
            Some(b) => format!("{} (code {})", b.error.message, b.error.code),
            None => format!("body: {}", preview(&a.body)),
        };
        let code = server.as_ref().map(|b| b.error.code.as_str()).unwrap_or("");
        let file = self.config.file.display();
        let (kind, hint) = match a.status {
            401 => (
                ErrorKind::Unauthorized,
                format!(
                    "the server refused the key from {}; it must be the key `clawrl serve` was \
                     started with ({KEY_ENV} or --api-key-file there)",
                    self.config.key_origin()
                ),
            ),
            404 if code == "model_not_found" => (ErrorKind::NotFound, String::new()),
            404 => (
                ErrorKind::NotFound,
                format!(
                    "the server has no such path: endpoint.base_url in {file} is `{}`, and should be \
                     the API root ending in /v1 once, e.g. http://127.0.0.1:8000/v1",
                    self.config.base_url
                ),
            ),
            _ => (ErrorKind::Status, String::new()),
        };
        let mut message = format!("HTTP {} from {url}: {said}", a.status);
        if !hint.is_empty() {
            message.push_str("; ");
            message.push_str(&hint);
        }
        Err(EndpointError::new(kind, Some(a.status), message))
    }

    fn transport_error(&self, url: &str, e: ureq::Error) -> EndpointError {
        let file = self.config.file.display();
        if let ureq::Error::Timeout(_) = e {
            let mut m = format!(
                "no answer from {url} within the timeout of {} s (endpoint.timeout in {file}; raise it for a busy teacher)",
                self.config.timeout
            );
            return match &self.proxy {
                Some(p) => {
                    m.push_str(&format!(
                        "; the request went through the proxy {}={} from the environment, which may \
                         be what does not answer: {}",
                        p.var,
                        p.value,
                        p.bypass_hint(&self.host)
                    ));
                    EndpointError::new(ErrorKind::Proxy, None, m)
                }
                None => EndpointError::new(ErrorKind::Timeout, None, m),
            };
        }
        if let Some(p) = &self.proxy {
            return EndpointError::new(
                ErrorKind::Proxy,
                None,
                format!(
                    "requesting {url} through the proxy {}={} (from the environment) failed: {e}; {}",
                    p.var,
                    p.value,
                    p.bypass_hint(&self.host)
                ),
            );
        }
        let why = match &e {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                "connection refused: nothing listens there (is `clawrl serve` running, on that port?)"
                    .to_string()
            }
            ureq::Error::HostNotFound => "the host name does not resolve".to_string(),
            ureq::Error::ConnectionFailed => "the connection failed".to_string(),
            other => other.to_string(),
        };
        EndpointError::new(
            ErrorKind::Connect,
            None,
            format!("requesting {url} (endpoint.base_url in {file}): {why}"),
        )
    }
}

/// An answer's JSON, or a diagnosis with its status and first bytes.
fn parse<T: serde::de::DeserializeOwned>(url: &str, a: &Answer, expected: &str) -> Result<T> {
    serde_json::from_slice(&a.body).map_err(|e| {
        bad_answer(
            url,
            a,
            &format!("not the JSON a clawrl endpoint answers (expected {expected}; {e})"),
        )
    })
}

fn bad_answer(url: &str, a: &Answer, what: &str) -> EndpointError {
    EndpointError::new(
        ErrorKind::BadAnswer,
        Some(a.status),
        format!(
            "HTTP {} from {url}: {what}; the first 200 bytes of the body: {}",
            a.status,
            preview(&a.body)
        ),
    )
}

/// The first 200 bytes of a body, printable.
pub fn preview(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty)".into();
    }
    let n = body.len().min(200);
    let mut s = format!("{:?}", String::from_utf8_lossy(&body[..n]));
    if body.len() > n {
        s.push_str(&format!(" ... ({} bytes in all)", body.len()));
    }
    s
}
