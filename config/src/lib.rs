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
    let table = parse_table(text, file.as_ref())?;
    from_table(table, file, overrides)
}

/// Parses TOML text into a table; a syntax error names the file.
pub fn parse_table(text: &str, file: &Path) -> Result<toml::Table, ConfigError> {
    text.parse().map_err(|e: toml::de::Error| ConfigError {
        file: file.to_path_buf(),
        key: String::new(),
        reason: e.to_string(),
    })
}

/// As [`from_str`], for a table already parsed (for example one section of a larger file).
pub fn from_table<T: DeserializeOwned + Validate>(
    mut table: toml::Table,
    file: impl AsRef<Path>,
    overrides: &[String],
) -> Result<T, ConfigError> {
    let file = file.as_ref();
    let err = |key: String, reason: String| ConfigError {
        file: file.to_path_buf(),
        key,
        reason,
    };
    if let Some(key) = first_non_finite(&table, "") {
        return Err(err(key, NON_FINITE.into()));
    }
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

/// The one message for a NaN or infinite value, in a file or in a `--set`.
pub const NON_FINITE: &str = "NaN and infinity are not accepted as values (give a finite number)";

/// Dotted key of the first NaN/inf float in `table`, if any.
fn first_non_finite(table: &toml::Table, prefix: &str) -> Option<String> {
    fn walk(v: &toml::Value, key: String) -> Option<String> {
        match v {
            toml::Value::Float(x) if !x.is_finite() => Some(key),
            toml::Value::Table(t) => first_non_finite(t, &key),
            toml::Value::Array(a) => a.iter().find_map(|x| walk(x, key.clone())),
            _ => None,
        }
    }
    table.iter().find_map(|(k, v)| {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        walk(v, key)
    })
}

/// One `--set SECTION.KEY=VALUE` override from the command line, split but not yet applied.
/// Every subcommand reads `--set` with this one grammar; which sections it accepts is its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The text as the user typed it.
    pub text: String,
    /// First component of the key (`ppo` in `ppo.gamma=0.98`).
    pub section: String,
    /// The whole dotted key (`ppo.gamma`).
    pub key: String,
    /// The key without its section (`gamma`).
    pub rest: String,
    pub value: String,
}

impl Override {
    /// Splits `SECTION.KEY=VALUE`; an error names what is wrong with the text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let err = |key: &str, reason: String| ConfigError {
            file: PathBuf::from("--set"),
            key: key.to_string(),
            reason,
        };
        let (key, value) = text.split_once('=').ok_or_else(|| {
            err(
                text.trim(),
                "an override must read SECTION.KEY=VALUE".into(),
            )
        })?;
        let (key, value) = (key.trim(), value.trim());
        let (section, rest) = key.split_once('.').ok_or_else(|| {
            err(
                key,
                format!(
                    "`{key}` has no section: write SECTION.KEY=VALUE (for example task.{key}=...)"
                ),
            )
        })?;
        if section.is_empty() || rest.is_empty() {
            return Err(err(key, "an override must read SECTION.KEY=VALUE".into()));
        }
        if is_non_finite_text(value) {
            return Err(err(key, NON_FINITE.into()));
        }
        Ok(Self {
            text: text.trim().to_string(),
            section: section.to_string(),
            key: key.to_string(),
            rest: rest.to_string(),
            value: value.to_string(),
        })
    }

    /// The override as `KEY=VALUE` for a file that holds the section's keys at top level.
    pub fn without_section(&self) -> String {
        format!("{}={}", self.rest, self.value)
    }

    /// The error for an override whose section this command does not take.
    pub fn not_allowed(&self, reason: impl fmt::Display) -> ConfigError {
        ConfigError {
            file: PathBuf::from("--set"),
            key: self.key.clone(),
            reason: reason.to_string(),
        }
    }
}

fn is_non_finite_text(value: &str) -> bool {
    let v = value
        .trim()
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase();
    matches!(v.as_str(), "nan" | "inf" | "infinity")
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
    if is_non_finite_text(value) {
        return Err(NON_FINITE.into());
    }
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
    fn nan_and_inf_are_refused_everywhere_with_one_message() {
        for v in ["nan", "NaN", "-inf", "+inf", "inf", "Infinity"] {
            let e = load_str(GOOD, &[&format!("inner.rate={v}")]).unwrap_err();
            assert_eq!(
                (e.key.as_str(), e.reason.as_str()),
                ("inner.rate", NON_FINITE),
                "{v}"
            );
            let e = Override::parse(&format!("inner.rate={v}")).unwrap_err();
            assert_eq!(e.reason, NON_FINITE, "{v}");
        }
        let e = load_str("name = \"x\"\n[inner]\nrate = nan\nsteps = 3\n", &[]).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.reason.as_str()),
            ("inner.rate", NON_FINITE)
        );
    }

    #[test]
    fn override_grammar() {
        let o = Override::parse(" task.env.decimation = 5 ").unwrap();
        assert_eq!(
            (
                o.section.as_str(),
                o.key.as_str(),
                o.rest.as_str(),
                o.value.as_str()
            ),
            ("task", "task.env.decimation", "env.decimation", "5")
        );
        assert_eq!(o.without_section(), "env.decimation=5");
        let e = Override::parse("decimation=5").unwrap_err();
        assert!(e.reason.contains("no section"), "{e}");
        assert!(e.to_string().starts_with("--set: key `decimation`"), "{e}");
        assert!(Override::parse("task.x").is_err());
        assert!(Override::parse(".x=1").is_err());
    }

    #[test]
    fn interval_checks() {
        assert!(check_interval("a", [0.1, 0.2], 0.0, 1.0).is_ok());
        assert!(check_interval("a", [0.3, 0.2], 0.0, 1.0).is_err());
        assert!(check_interval("a", [-0.1, 0.2], 0.0, 1.0).is_err());
        assert!(check_interval("a", [f64::NAN, 0.2], 0.0, 1.0).is_err());
    }
}
