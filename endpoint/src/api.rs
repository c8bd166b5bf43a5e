//! The wire format, in the conventions clients of unified model APIs already parse:
//! `GET /v1/models` answers `{"object": "list", "data": [{"id": ...}, ...]}`, every error
//! answers `{"error": {"message", "type", "code"}}` with its HTTP status. `POST /v1/act` takes
//! a model id and a batch of raw observations and answers actions with the Gaussian mean and
//! log-std of each row, so a client can compute a KL.
//!
//! Numbers are JSON floats written as the shortest decimal that reads back to the same f32
//! (and read with serde_json's exact `float_roundtrip`), so observations and actions cross the
//! wire bit for bit: a remote teacher labels exactly what a local one would.
use clawrl_policy::{ObsSource, PolicyConfig};
use serde::{Deserialize, Serialize};

pub const HEALTH: &str = "/health";
pub const MODELS: &str = "/v1/models";
pub const ACT: &str = "/v1/act";

/// One served policy, as `/v1/models` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Always `clawrl`.
    pub owned_by: String,
    /// The registered network kind (`gaussian_mlp`, ...).
    pub kind: String,
    /// The task it was trained on (`quadruped_flat`, `cartpole`, ...).
    pub task: String,
    /// SHA-256 of the served policy: a bundle's content digest (as `clawrl verify` prints it),
    /// else the file's (policy or checkpoint).
    pub sha256: String,
    pub observation: ObservationLayout,
    pub action: ActionLayout,
    /// The network's configuration (what the registry rebuilds it from).
    pub policy_config: PolicyConfig,
    /// The resolved training configuration (TOML), so a client can build the same task for
    /// evaluation and comparison.
    pub train_config: String,
}

/// What a model's entry says beyond its network: where it came from and what its numbers mean.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub task: String,
    /// SHA-256 (hex): a bundle's content digest, else the served file's.
    pub sha256: String,
    /// Names of one observation frame's values, and of the actions.
    pub obs_names: Vec<String>,
    pub action_names: Vec<String>,
    /// The resolved training configuration (TOML) the policy came with.
    pub train_config: String,
}

impl ModelInfo {
    /// The entry of a policy served as `id`.
    pub fn new(id: &str, config: &PolicyConfig, squashed: bool, p: Provenance) -> Self {
        Self {
            id: id.into(),
            object: "model".into(),
            owned_by: "clawrl".into(),
            kind: config.kind.clone(),
            task: p.task,
            sha256: p.sha256,
            observation: ObservationLayout {
                source: config.obs_source,
                frame_dim: config.frame_dim(),
                history: config.history,
                dim: config.obs_dim,
                names: p.obs_names,
            },
            action: ActionLayout {
                dim: config.action_dim,
                names: p.action_names,
                squashed,
            },
            policy_config: config.clone(),
            train_config: p.train_config,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationLayout {
    pub source: ObsSource,
    /// Values of one frame.
    pub frame_dim: usize,
    /// Past frames stacked after the current one, newest first.
    pub history: usize,
    /// Values of one row of `observations`: `frame_dim * (history + 1)`.
    pub dim: usize,
    /// Names of one frame's values.
    pub names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionLayout {
    pub dim: usize,
    pub names: Vec<String>,
    /// Actions are `tanh` of the Gaussian sample (SAC heads).
    pub squashed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    pub object: String,
    pub data: Vec<ModelInfo>,
}

/// `POST /v1/act`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActRequest {
    pub model: String,
    /// Raw (unnormalised) observation rows of `observation.dim` values each.
    pub observations: Vec<Vec<f32>>,
    /// The Gaussian's mean (through tanh when squashed), or a sample from it.
    #[serde(default = "yes")]
    pub deterministic: bool,
    /// Seeds the sampling noise (sampled requests only); without it the server draws its own.
    #[serde(default)]
    pub seed: Option<u64>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActResponse {
    /// Always `act`.
    pub object: String,
    pub model: String,
    pub actions: Vec<Vec<f32>>,
    pub mean: Vec<Vec<f32>>,
    pub log_std: Vec<Vec<f32>>,
}

/// The error body of every non-2xx answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub code: String,
}

/// An error the server answers: HTTP status, OpenAI-style `type`, a stable `code`, and a
/// message that says what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// The `type` field for this status, as OpenAI-style clients group errors.
    pub fn kind(&self) -> &'static str {
        match self.status {
            401 => "authentication_error",
            404 => "not_found_error",
            413 => "request_too_large",
            500.. => "server_error",
            _ => "invalid_request_error",
        }
    }

    pub fn body(&self) -> String {
        serde_json::to_string(&ErrorBody {
            error: ErrorDetail {
                message: self.message.clone(),
                kind: self.kind().into(),
                code: self.code.into(),
            },
        })
        .expect("an error body always serialises")
    }
}

/// The raw form of an act request: every observation value may be missing (NaN or infinity
/// arrive as `null` after [`nan_tokens_to_null`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawActRequest {
    model: String,
    observations: Vec<Vec<Option<f64>>>,
    #[serde(default = "yes")]
    deterministic: bool,
    #[serde(default)]
    seed: Option<u64>,
}

/// Parses an act request body. Not JSON: 400 `invalid_json`; JSON of the wrong shape (a
/// missing `model`, a string where numbers belong): 422 `invalid_request`; an observation
/// that is NaN, infinite, null or outside the f32 range: 400 `invalid_observation`, naming
/// the row and column. Python's `json.dumps` writes `NaN` and `Infinity`, which JSON does not
/// have, so those bare words are recognised too and reported as what they are.
pub fn parse_act_request(body: &[u8]) -> Result<ActRequest, ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::new(
            400,
            "invalid_json",
            format!("the request body is not UTF-8 text: {e}"),
        )
    })?;
    let (text, had_nan) = nan_tokens_to_null(text);
    // One pass straight into the request (no intermediate JSON tree): a syntax error is the
    // client's JSON, a data error the request's shape.
    let raw: RawActRequest = serde_json::from_str(&text).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ApiError::new(
            422,
            "invalid_request",
            format!(
                "the request is JSON but not an act request ({e}); expected {{\"model\": ID, \
                 \"observations\": [[numbers], ...], \"deterministic\": true}}"
            ),
        ),
        _ => ApiError::new(
            400,
            "invalid_json",
            format!("the request body is not JSON: {e}"),
        ),
    })?;
    let mut observations = Vec::with_capacity(raw.observations.len());
    for (r, row) in raw.observations.iter().enumerate() {
        let mut out = Vec::with_capacity(row.len());
        for (c, v) in row.iter().enumerate() {
            let bad = |what: String| {
                ApiError::new(
                    400,
                    "invalid_observation",
                    format!("observations[{r}][{c}] {what}"),
                )
            };
            match v {
                None if had_nan => return Err(bad("is NaN, infinite or null".into())),
                None => return Err(bad("is null".into())),
                Some(x) if x.abs() > f64::from(f32::MAX) => {
                    return Err(bad(format!("= {x} is outside the range of f32")));
                }
                Some(x) => out.push(*x as f32),
            }
        }
        observations.push(out);
    }
    Ok(ActRequest {
        model: raw.model,
        observations,
        deterministic: raw.deterministic,
        seed: raw.seed,
    })
}

/// Replaces the bare words `NaN`, `Infinity` and `-Infinity` outside strings with `null`, and
/// says whether it did.
fn nan_tokens_to_null(text: &str) -> (std::borrow::Cow<'_, str>, bool) {
    if !(text.contains("NaN") || text.contains("Infinity")) {
        return (text.into(), false);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if ch == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.push_str("null");
            rest = &rest[word.len()..];
            changed = true;
            continue;
        }
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    (out.into(), changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nan_and_infinity_are_named_by_row_and_column() {
        let e = parse_act_request(br#"{"model": "m", "observations": [[1, 2], [3, NaN]]}"#)
            .unwrap_err();
        assert_eq!((e.status, e.code), (400, "invalid_observation"));
        assert!(
            e.message.contains("observations[1][1]") && e.message.contains("NaN"),
            "{e:?}"
        );
        let e = parse_act_request(br#"{"model": "m", "observations": [[-Infinity]]}"#).unwrap_err();
        assert!(e.message.contains("observations[0][0]"), "{e:?}");
        let e = parse_act_request(br#"{"model": "m", "observations": [[1e300]]}"#).unwrap_err();
        assert!(e.message.contains("range of f32"), "{e:?}");
        let e = parse_act_request(br#"{"model": "m", "observations": [[null]]}"#).unwrap_err();
        assert!(e.message.contains("is null"), "{e:?}");
    }

    #[test]
    fn nan_inside_a_string_is_left_alone() {
        let r = parse_act_request(br#"{"model": "NaN \"Infinity\"", "observations": [[1.5]]}"#)
            .unwrap();
        assert_eq!(r.model, "NaN \"Infinity\"");
        assert_eq!(r.observations, vec![vec![1.5]]);
        assert!(r.deterministic && r.seed.is_none());
    }

    #[test]
    fn not_json_is_400_and_the_wrong_shape_is_422() {
        let e = parse_act_request(b"observations=1,2").unwrap_err();
        assert_eq!((e.status, e.code), (400, "invalid_json"));
        let e = parse_act_request(br#"{"observations": [[1]]}"#).unwrap_err();
        assert_eq!(e.status, 422);
        assert!(e.message.contains("model"), "{e:?}");
        let e = parse_act_request(br#"{"model": "m", "observations": [["a"]]}"#).unwrap_err();
        assert_eq!(e.status, 422);
        let e =
            parse_act_request(br#"{"model": "m", "observations": [[1]], "temp": 1}"#).unwrap_err();
        assert!(e.message.contains("temp"), "{e:?}");
    }

    #[test]
    fn error_bodies_have_message_type_and_code() {
        let b: serde_json::Value =
            serde_json::from_str(&ApiError::new(404, "model_not_found", "no").body()).unwrap();
        assert_eq!(b["error"]["type"], "not_found_error");
        assert_eq!(b["error"]["code"], "model_not_found");
        assert_eq!(b["error"]["message"], "no");
    }

    proptest! {
        /// Every finite f32 crosses the wire bit for bit.
        #[test]
        fn finite_f32_round_trips_through_the_request(bits in proptest::collection::vec(any::<u32>(), 1..16)) {
            let xs: Vec<f32> = bits.iter().map(|b| f32::from_bits(*b)).filter(|x| x.is_finite()).collect();
            prop_assume!(!xs.is_empty());
            let req = ActRequest { model: "m".into(), observations: vec![xs.clone()], deterministic: true, seed: None };
            let text = serde_json::to_vec(&req).unwrap();
            let back = parse_act_request(&text).unwrap();
            let a: Vec<u32> = xs.iter().map(|x| x.to_bits()).collect();
            let b: Vec<u32> = back.observations[0].iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(a, b);
        }
    }
}
