//! Where a command writes when no `--out` is given: next to the run it reads, or under `runs/`;
//! never the current directory (the repository root when following the README) and never a
//! shipped folder under `assets/pretrained/`, whose files are tracked and must stay as shipped.
use std::path::{Component, Path, PathBuf};

/// The default output folder of `command` (`eval`, `compare`, `plot`) reading the policy given
/// as `spec` from `run_dir`: that run folder when it is one of the user's, else
/// `runs/COMMAND/NAME` with NAME the run folder's (or the file's) name.
pub fn default_dir(command: &str, spec: &str, run_dir: Option<&Path>) -> PathBuf {
    match run_dir {
        Some(d) if !is_shipped(d) => d.to_path_buf(),
        Some(d) => runs_dir(command, &name_of(d)),
        None => runs_dir(command, &name_of(Path::new(spec))),
    }
}

/// True for a folder under `assets/pretrained/` (the shipped teacher's home), whether given
/// relative to the current directory or as an absolute path. The pair of names, not `assets`
/// alone, so that a checkout inside some other `assets` folder keeps its runs' defaults.
pub fn is_shipped(dir: &Path) -> bool {
    let full = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let names: Vec<_> = full
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    names
        .windows(2)
        .any(|w| w[0] == "assets" && w[1] == "pretrained")
}

fn runs_dir(command: &str, name: &str) -> PathBuf {
    Path::new("runs").join(command).join(name)
}

/// A folder name from a path or a `remote:ROLE` spec: the file stem, with anything other than
/// letters, digits, `-`, `_` and `.` turned into `_` (so `remote:teacher` is `remote_teacher`).
fn name_of(p: &Path) -> String {
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name == "." || name == ".." {
        "policy".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_run_keeps_its_outputs_and_the_rest_go_under_runs() {
        let user = Path::new("runs/my_run");
        assert_eq!(default_dir("eval", "runs/my_run", Some(user)), user);
        let shipped = Path::new("assets/pretrained/quadruped_flat_ppo");
        assert_eq!(
            default_dir(
                "eval",
                "assets/pretrained/quadruped_flat_ppo",
                Some(shipped)
            ),
            Path::new("runs/eval/quadruped_flat_ppo")
        );
        assert_eq!(
            default_dir("compare", "runs/d/student.clawrl", None),
            Path::new("runs/compare/student")
        );
        assert_eq!(
            default_dir("eval", "remote:teacher", None),
            Path::new("runs/eval/remote_teacher")
        );
    }
}
