//! The one endpoint config, `[endpoint]` in TOML (`configs/endpoint.toml`, never committed;
//! `configs/endpoint.example.toml` is): base URL, API key, the teacher's and the student's model
//! ids, and the timeout. `CLAWRL_API_KEY` overrides the file's key. Everything is checked when
//! the file is loaded, so a missing or unusable value is named before any request is sent.
use std::fmt;
use std::path::{Path, PathBuf};

use clawrl_config::{ConfigError, KeyError, Validate};
use serde::Deserialize;

/// Where the commands look for the endpoint config unless told otherwise.
pub const DEFAULT_FILE: &str = "configs/endpoint.toml";
/// The committed template of [`DEFAULT_FILE`].
pub const EXAMPLE_FILE: &str = "configs/endpoint.example.toml";
/// The environment variable that overrides `endpoint.api_key`.
pub const KEY_ENV: &str = "CLAWRL_API_KEY";
/// Seconds; 60 s is often too short for a busy teacher.
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// Further tries of a request that could not connect or got 408, 409, 429 or a 5xx.
pub const DEFAULT_RETRIES: u32 = 2;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    endpoint: Section,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    /// The API root, ending in `/v1` once (`http://127.0.0.1:8000/v1`).
    base_url: String,
    /// Optional in the file only when `CLAWRL_API_KEY` gives it.
    #[serde(default)]
    api_key: Option<String>,
    teacher_model: String,
    student_model: String,
    #[serde(default = "default_timeout")]
    timeout: f64,
    #[serde(default = "default_retries")]
    retries: u32,
}

fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT_S
}

fn default_retries() -> u32 {
    DEFAULT_RETRIES
}

impl Validate for File {
    fn validate(&self) -> Result<(), KeyError> {
        let e = &self.endpoint;
        let url = e.base_url.as_str();
        if url.trim().is_empty() {
            return Err(KeyError::new("endpoint.base_url", "is empty"));
        }
        if url.trim() != url || url.contains(char::is_whitespace) {
            return Err(KeyError::new(
                "endpoint.base_url",
                "contains whitespace (padding or a space inside the URL)",
            ));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(KeyError::new(
                "endpoint.base_url",
                format!("`{url}` must start with http:// or https://"),
            ));
        }
        if let Err(reason) = url.parse::<ureq::http::Uri>() {
            return Err(KeyError::new(
                "endpoint.base_url",
                format!("`{url}` is not a URL: {reason}"),
            ));
        }
        for (key, id) in [
            ("endpoint.teacher_model", &e.teacher_model),
            ("endpoint.student_model", &e.student_model),
        ] {
            if id.trim().is_empty() {
                return Err(KeyError::new(key, "is empty: give the served model's id"));
            }
            if id.trim() != id {
                return Err(KeyError::new(
                    key,
                    format!("`{id}` is padded with whitespace"),
                ));
            }
        }
        clawrl_config::check_range("endpoint.timeout", e.timeout, 0.001, 86_400.0)?;
        clawrl_config::check_range("endpoint.retries", e.retries, 0, 10)?;
        Ok(())
    }
}

/// Where the key in use came from (said in diagnoses, never the key itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    File,
    Env,
}

/// A loaded, checked endpoint config. `Debug` and `Display` never show the key.
#[derive(Clone)]
pub struct EndpointConfig {
    pub file: PathBuf,
    pub base_url: String,
    api_key: String,
    pub key_source: KeySource,
    pub teacher_model: String,
    pub student_model: String,
    /// Seconds for one whole request (connect, send, answer).
    pub timeout: f64,
    /// Further tries after a failed connection or a 408, 409, 429 or 5xx answer (as clients
    /// of unified model APIs retry), with backoff; timeouts are not retried.
    pub retries: u32,
}

impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("file", &self.file)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("key_source", &self.key_source)
            .field("teacher_model", &self.teacher_model)
            .field("student_model", &self.student_model)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

impl EndpointConfig {
    /// Reads `path`, with `env` for the key override (`std::env::var` in the commands; a
    /// table in tests).
    pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: String::new(),
            reason: if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "no such file: copy {EXAMPLE_FILE} to {DEFAULT_FILE} and fill in base_url, \
                     api_key (or set {KEY_ENV}), teacher_model and student_model"
                )
            } else {
                format!("cannot read: {e}")
            },
        })?;
        Self::from_str(&text, path, env)
    }

    /// As [`EndpointConfig::load`], for text in memory (`path` names it in errors).
    pub fn from_str(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let file: File = clawrl_config::from_str(text, path, &[])?;
        let e = file.endpoint;
        let err = |key: &str, reason: String| ConfigError {
            file: path.to_path_buf(),
            key: key.into(),
            reason,
        };
        let (api_key, key_source) = match key_override(env) {
            Some(k) => (
                k.map_err(|why| err("endpoint.api_key", format!("it is overridden, but {why}")))?,
                KeySource::Env,
            ),
            None => {
                let k = e.api_key.ok_or_else(|| {
                    err(
                        "endpoint.api_key",
                        format!(
                            "is missing (give it here or in the environment variable {KEY_ENV})"
                        ),
                    )
                })?;
                check_key(&k).map_err(|why| err("endpoint.api_key", why))?;
                (k, KeySource::File)
            }
        };
        Ok(Self {
            file: path.to_path_buf(),
            base_url: e.base_url,
            api_key,
            key_source,
            teacher_model: e.teacher_model,
            student_model: e.student_model,
            timeout: e.timeout,
            retries: e.retries,
        })
    }

    /// The key, for the Authorization header only.
    pub(crate) fn api_key(&self) -> &str {
        &self.api_key
    }

    /// Where the key came from, in words.
    pub fn key_origin(&self) -> String {
        match self.key_source {
            KeySource::File => format!("endpoint.api_key in {}", self.file.display()),
            KeySource::Env => format!("{KEY_ENV} (environment)"),
        }
    }

    /// The model id configured for a role.
    pub fn model_id(&self, role: Role) -> &str {
        match role {
            Role::Teacher => &self.teacher_model,
            Role::Student => &self.student_model,
        }
    }
}

/// The key `CLAWRL_API_KEY` gives, if it is set: the one rule for client and server alike, an
/// empty or padded value is reported, never used.
pub fn key_override(env: &dyn Fn(&str) -> Option<String>) -> Option<Result<String, String>> {
    let k = env(KEY_ENV)?;
    Some(match check_key(&k) {
        Ok(()) => Ok(k),
        Err(why) => Err(format!(
            "the environment variable {KEY_ENV} is set and {why}: fix or unset {KEY_ENV}"
        )),
    })
}

/// Why a key cannot be sent, if it cannot: empty, or padded with whitespace (a pasted
/// newline is the usual culprit). The key itself is never part of the answer.
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("it is empty".into());
    }
    if key.trim().is_empty() {
        return Err(format!("it is only whitespace ({} characters)", key.len()));
    }
    let lead = key.len() - key.trim_start().len();
    let trail = key.len() - key.trim_end().len();
    if lead + trail > 0 {
        return Err(format!(
            "it is padded with whitespace ({lead} leading, {trail} trailing characters)"
        ));
    }
    if key.contains(|c: char| c.is_control() || c.is_whitespace()) {
        return Err("it contains whitespace or control characters".into());
    }
    Ok(())
}

/// The two configured models a command can name as `remote:teacher` or `remote:student`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Teacher,
    Student,
}

/// The prefix of a policy named through the endpoint.
pub const REMOTE_PREFIX: &str = "remote:";

impl Role {
    /// `remote:teacher` / `remote:student` -> the role; `None` for anything not `remote:...`
    /// (a local path); an error for another word after `remote:`.
    pub fn parse(spec: &str) -> Option<Result<Role, String>> {
        let rest = spec.strip_prefix(REMOTE_PREFIX)?;
        Some(match rest {
            "teacher" => Ok(Role::Teacher),
            "student" => Ok(Role::Student),
            other => Err(format!(
                "`{spec}`: a remote policy is `remote:teacher` or `remote:student` (their model \
                 ids are endpoint.teacher_model and endpoint.student_model), not `{other}`"
            )),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Teacher => "teacher",
            Role::Student => "student",
        }
    }

    pub fn config_key(self) -> &'static str {
        match self {
            Role::Teacher => "endpoint.teacher_model",
            Role::Student => "endpoint.student_model",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[endpoint]
base_url = "http://127.0.0.1:8000/v1"
api_key = "secret-key"
teacher_model = "teacher"
student_model = "student"
"#;

    fn env_none(_: &str) -> Option<String> {
        None
    }

    fn load(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<EndpointConfig, String> {
        EndpointConfig::from_str(text, Path::new("configs/endpoint.toml"), env)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_complete_file_loads_with_the_default_timeout() {
        let c = load(GOOD, &env_none).unwrap();
        assert_eq!((c.timeout, c.retries), (120.0, 2));
        assert_eq!(c.api_key(), "secret-key");
        assert_eq!(c.key_source, KeySource::File);
        assert_eq!(c.model_id(Role::Student), "student");
        assert!(
            !format!("{c:?}").contains("secret-key"),
            "Debug shows the key"
        );
    }

    #[test]
    fn each_missing_value_is_named_with_the_file() {
        for key in ["base_url", "teacher_model", "student_model", "api_key"] {
            let text: String = GOOD
                .lines()
                .filter(|l| !l.starts_with(key))
                .map(|l| format!("{l}\n"))
                .collect();
            let e = load(&text, &env_none).unwrap_err();
            assert!(
                e.contains("configs/endpoint.toml") && e.contains(&format!("endpoint.{key}")),
                "{key}: {e}"
            );
        }
    }

    #[test]
    fn the_environment_overrides_the_key_unless_empty_or_padded() {
        let c = load(GOOD, &|k| (k == KEY_ENV).then(|| "from-env".to_string())).unwrap();
        assert_eq!((c.api_key(), c.key_source), ("from-env", KeySource::Env));
        assert!(c.key_origin().contains(KEY_ENV));
        // Without a key in the file, the environment's is enough.
        let no_key: String = GOOD.replace("api_key = \"secret-key\"\n", "");
        assert!(load(&no_key, &|_| Some("k".into())).is_ok());
        for (value, says) in [
            ("", "empty"),
            ("  ", "only whitespace"),
            (" key", "1 leading"),
            ("key\n", "1 trailing"),
        ] {
            let e = load(GOOD, &|k| (k == KEY_ENV).then(|| value.to_string())).unwrap_err();
            assert!(
                e.contains(KEY_ENV) && e.contains(says) && e.contains("endpoint.api_key"),
                "{value:?}: {e}"
            );
        }
    }

    #[test]
    fn a_key_with_whitespace_or_a_control_character_inside_is_refused() {
        // Inside the key: a space and a no-break space (whitespace, not control), DEL and
        // ESC (control, not whitespace), a tab (both). Each alone is enough.
        for key in ["ab cd", "ab\u{a0}cd", "ab\u{7f}cd", "ab\u{1b}cd", "ab\tcd"] {
            assert_eq!(
                check_key(key),
                Err("it contains whitespace or control characters".to_string()),
                "{key:?}"
            );
        }
        assert_eq!(check_key("ab-cd_0123.~+/="), Ok(()));
    }

    #[test]
    fn a_padded_file_key_or_bad_url_is_refused() {
        let padded = GOOD.replace("\"secret-key\"", "\"secret-key \"");
        let e = load(&padded, &env_none).unwrap_err();
        assert!(
            e.contains("endpoint.api_key") && e.contains("trailing"),
            "{e}"
        );
        assert!(!e.contains("secret-key"), "the error shows the key: {e}");
        let ftp = GOOD.replace("http://127.0.0.1:8000/v1", "ftp://x/v1");
        assert!(load(&ftp, &env_none).unwrap_err().contains("http://"));
        let t = GOOD.replace("student_model", "timeout = 0\nstudent_model");
        assert!(
            load(&t, &env_none)
                .unwrap_err()
                .contains("endpoint.timeout")
        );
        let r = GOOD.replace("student_model", "retries = 11\nstudent_model");
        assert!(
            load(&r, &env_none)
                .unwrap_err()
                .contains("endpoint.retries")
        );
        let typo = GOOD.replace("teacher_model", "teacher_modle");
        assert!(
            load(&typo, &env_none)
                .unwrap_err()
                .contains("teacher_modle")
        );
    }

    #[test]
    fn remote_specs_name_a_role_or_say_what_is_accepted() {
        assert_eq!(Role::parse("remote:teacher"), Some(Ok(Role::Teacher)));
        assert_eq!(Role::parse("remote:student"), Some(Ok(Role::Student)));
        assert_eq!(Role::parse("runs/x"), None);
        let e = Role::parse("remote:critic").unwrap().unwrap_err();
        assert!(e.contains("remote:teacher") && e.contains("critic"), "{e}");
    }

    #[test]
    fn a_missing_file_says_how_to_make_one() {
        let e = EndpointConfig::load(Path::new("/nonexistent/endpoint.toml"), &env_none)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(EXAMPLE_FILE) && e.contains("/nonexistent/endpoint.toml"),
            "{e}"
        );
    }
}
