//! clawrl's configuration layer.
//!
//! Every hyper-parameter lives in a TOML file under `configs/`. A file is loaded into a plain
//! struct (`#[serde(deny_unknown_fields)]`, no defaults: a misspelt or missing key is an error,
//! never a silent default), single keys can be overridden from the command line
//! (`--set ppo.learning_rate=3e-4`), and the struct then checks its own ranges through
//! [`Validate`]. Every failure is a [`ConfigError`] that names the file and the dotted key.
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A configuration that failed to load: which file, which key, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    pub file: PathBuf,
    /// Dotted path of the offending key (`rewards.tracking_lin_vel`), empty for file-level errors.
    pub key: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(
                f,
                "{}: key `{}`: {}",
                self.file.display(),
                self.key,
                self.reason
            )
        }
    }
}

/// A key that is present and well typed but has a value the program cannot use.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyError {
    pub key: String,
    pub reason: String,
}

impl KeyError {
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            reason: reason.into(),
        }
    }
}

/// Range and consistency checks a config runs on itself after it is parsed.
pub trait Validate {
    fn validate(&self) -> Result<(), KeyError>;
}

/// `lo <= value <= hi`, or an error naming the key.
pub fn check_range<T: PartialOrd + fmt::Display + Copy>(
    key: &str,
    value: T,
    lo: T,
    hi: T,
) -> Result<(), KeyError> {
    if value >= lo && value <= hi {
        Ok(())
    } else {
        Err(KeyError::new(
            key,
            format!("{value} is outside [{lo}, {hi}]"),
        ))
    }
}

/// A `[lo, hi]` pair with `lo <= hi`, both inside `[min, max]`.
pub fn check_interval(key: &str, pair: [f64; 2], min: f64, max: f64) -> Result<(), KeyError> {
    let [lo, hi] = pair;
    if !(lo.is_finite() && hi.is_finite()) || lo > hi {
        return Err(KeyError::new(
            key,
            format!("[{lo}, {hi}] is not an interval (need lo <= hi)"),
        ));
    }
    if lo < min || hi > max {
        return Err(KeyError::new(
            key,
            format!("[{lo}, {hi}] is outside [{min}, {max}]"),
        ));
    }
    Ok(())
}

/// Loads `path` into `T`, applies `overrides` (`"a.b=value"`, value in TOML syntax) and validates.
pub fn load<T: DeserializeOwned + Validate>(
    path: impl AsRef<Path>,
    overrides: &[String],
) -> Result<T, ConfigError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        key: String::new(),
        reason: format!("cannot read: {e}"),
    })?;
    from_str(&text, path, overrides)
}

/// As [`load`], for text already in memory; `file` is only used in error messages.
pub fn from_str<T: DeserializeOwned + Validate>(
    text: &str,
    file: impl AsRef<Path>,
    overrides: &[String],
) -> Result<T, ConfigError> {
    let file = file.as_ref();
    let err = |key: String, reason: String| ConfigError {
        file: file.to_path_buf(),
        key,
        reason,
    };
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| err(String::new(), e.to_string()))?;
    for spec in overrides {
        let (key, value) = spec
            .split_once('=')
            .ok_or_else(|| err(spec.clone(), "an override must read KEY=VALUE".into()))?;
        set_key(&mut table, key.trim(), value.trim())
            .map_err(|reason| err(key.trim().to_string(), reason))?;
    }
    let config: T = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let (key, reason) = split_serde_error(&e);
        err(key, reason)
    })?;
    config.validate().map_err(|e| err(e.key, e.reason))?;
    Ok(config)
}

/// serde reports a missing field at its parent's path; name the field itself instead.
/// (An unknown field's path already ends with the field.)
fn split_serde_error(e: &serde_path_to_error::Error<toml::de::Error>) -> (String, String) {
    let parent = e.path().to_string();
    let parent = if parent == "." { String::new() } else { parent };
    let message = e.inner().message().trim().to_string();
    let quoted = message.split('`').nth(1).map(str::to_string);
    let key = match quoted {
        Some(field) if message.starts_with("missing field") => {
            if parent.is_empty() {
                field
            } else {
                format!("{parent}.{field}")
            }
        }
        _ => parent,
    };
    (key, message)
}

/// Sets the dotted `key` to `value` (parsed as a TOML value; bare words become strings).
/// The key must already exist: an override cannot add a key the file lacks, so typos fail loudly.
pub fn set_key(table: &mut toml::Table, key: &str, value: &str) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().filter(|s| !s.is_empty()).ok_or("empty key")?;
    let mut cur = table;
    for part in parts {
        cur = match cur.get_mut(part) {
            Some(toml::Value::Table(t)) => t,
            _ => return Err(format!("no table `{part}` to override")),
        };
    }
    let old = cur
        .get(last)
        .ok_or_else(|| "no such key to override".to_string())?;
    let parsed = parse_value(value);
    if std::mem::discriminant(old) != std::mem::discriminant(&parsed)
        && !(old.is_float() && parsed.is_integer())
    {
        return Err(format!(
            "`{value}` is a {}, the file has a {}",
            parsed.type_str(),
            old.type_str()
        ));
    }
    let parsed = match (old, parsed) {
        (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
        (_, v) => v,
    };
    cur.insert(last.to_string(), parsed);
    Ok(())
}

fn parse_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        rate: f64,
        steps: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: String,
        inner: Inner,
    }

    impl Validate for Outer {
        fn validate(&self) -> Result<(), KeyError> {
            check_range("inner.rate", self.inner.rate, 0.0, 1.0)
        }
    }

    const GOOD: &str = "name = \"x\"\n[inner]\nrate = 0.5\nsteps = 3\n";

    fn load_str(text: &str, overrides: &[&str]) -> Result<Outer, ConfigError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        from_str(text, "configs/test.toml", &o)
    }

    #[test]
    fn loads_a_good_file() {
        let c = load_str(GOOD, &[]).unwrap();
        assert_eq!(c.inner.steps, 3);
        assert_eq!(c.name, "x");
    }

    #[test]
    fn missing_key_names_file_and_key() {
        let e = load_str("name = \"x\"\n[inner]\nrate = 0.5\n", &[]).unwrap_err();
        assert_eq!(e.key, "inner.steps");
        assert_eq!(e.file, PathBuf::from("configs/test.toml"));
        assert!(
            e.to_string()
                .contains("configs/test.toml: key `inner.steps`"),
            "{e}"
        );
    }

    #[test]
    fn wrong_type_names_key() {
        let e = load_str("name = \"x\"\n[inner]\nrate = \"fast\"\nsteps = 3\n", &[]).unwrap_err();
        assert_eq!(e.key, "inner.rate");
        assert!(e.reason.contains("invalid type"), "{}", e.reason);
    }

    #[test]
    fn unknown_key_is_refused() {
        let e = load_str(&format!("{GOOD}stpes = 4\n"), &[]).unwrap_err();
        assert_eq!(e.key, "inner.stpes");
    }

    #[test]
    fn out_of_range_names_key() {
        let e = load_str("name = \"x\"\n[inner]\nrate = 1.5\nsteps = 3\n", &[]).unwrap_err();
        assert_eq!(e.key, "inner.rate");
        assert!(e.reason.contains("outside"), "{}", e.reason);
    }

    #[test]
    fn overrides_replace_single_keys() {
        let c = load_str(GOOD, &["inner.rate=0.25", "inner.steps = 9", "name=\"y\""]).unwrap();
        assert_eq!(
            (c.inner.rate, c.inner.steps, c.name.as_str()),
            (0.25, 9, "y")
        );
        // An integer given for a float key is taken as a float.
        assert_eq!(load_str(GOOD, &["inner.rate=1"]).unwrap().inner.rate, 1.0);
    }

    #[test]
    fn override_of_unknown_or_mistyped_key_fails() {
        assert_eq!(
            load_str(GOOD, &["inner.rat=0.1"]).unwrap_err().key,
            "inner.rat"
        );
        let e = load_str(GOOD, &["inner.steps=abc"]).unwrap_err();
        assert_eq!(e.key, "inner.steps");
        assert!(e.reason.contains("string"), "{}", e.reason);
        // Overrides are validated like the file.
        assert_eq!(
            load_str(GOOD, &["inner.rate=7.0"]).unwrap_err().key,
            "inner.rate"
        );
    }

    #[test]
    fn syntax_error_names_file() {
        let e = load_str("name = \n", &[]).unwrap_err();
        assert!(e.to_string().starts_with("configs/test.toml:"), "{e}");
    }

    #[test]
    fn interval_checks() {
        assert!(check_interval("a", [0.1, 0.2], 0.0, 1.0).is_ok());
        assert!(check_interval("a", [0.3, 0.2], 0.0, 1.0).is_err());
        assert!(check_interval("a", [-0.1, 0.2], 0.0, 1.0).is_err());
        assert!(check_interval("a", [f64::NAN, 0.2], 0.0, 1.0).is_err());
    }
}
