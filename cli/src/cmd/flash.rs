//! `clawrl flash`: put a policy bundle on the robot. Into a local directory it installs with the
//! runtime's own library (A/B slots, atomic switch, see `clawrl_runtime::install`); onto a
//! robot it copies the file with `scp` and runs `clawrl-runtime install` there over `ssh`.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clawrl_bundle::Trust;
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::install::{self, DEFAULT_ROOT};

/// Install a policy bundle on the robot (or into a local slot directory), keeping the old one
/// for `clawrl-runtime rollback`.
#[derive(clap::Args)]
pub struct Args {
    bundle: PathBuf,
    /// Where to: an existing directory (or `dir:PATH`, created if needed) is the install root
    /// itself; `user@host[:ROOT]` copies the bundle with scp and runs `clawrl-runtime install`
    /// over ssh (ROOT defaults to /var/lib/clawrl).
    #[arg(long, value_name = "DIR_OR_HOST")]
    to: String,
    /// A trusted public key on this machine (`clawrl keygen`); repeatable. The bundle is checked
    /// against it before it leaves (and, for a directory, installed with it); naming one
    /// requires a signature by one of them.
    #[arg(long, value_name = "KEY.pub")]
    trust: Vec<PathBuf>,
    /// Refuse an unsigned bundle (here, and on the robot).
    #[arg(long)]
    require_signature: bool,
    /// A trusted public key file on the robot, passed to `clawrl-runtime install --trust`;
    /// repeatable (remote targets only; refused for a directory, use --trust there).
    #[arg(long, value_name = "ROBOT_PATH")]
    remote_trust: Vec<String>,
    /// The robot's runtime config (TOML): the bundle must fit its `[robot]` section and control
    /// rate, checked here before anything is sent (the robot checks it again with its own).
    #[arg(
        long,
        value_name = "RUNTIME_CONFIG",
        default_value = "configs/runtime/robot.toml"
    )]
    robot: PathBuf,
}

/// Where `--to` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An install root on this machine.
    Dir(PathBuf),
    /// `user@host` and the install root there.
    Remote { host: String, root: String },
}

impl Target {
    /// `dir:PATH` or an existing directory: local; `user@host[:ROOT]`: remote.
    pub fn parse(to: &str) -> Result<Self> {
        if let Some(p) = to.strip_prefix("dir:") {
            anyhow::ensure!(!p.is_empty(), "--to dir: names no directory");
            return Ok(Self::Dir(p.into()));
        }
        if Path::new(to).is_dir() {
            return Ok(Self::Dir(to.into()));
        }
        if let Some((user, rest)) = to.split_once('@') {
            let (host, root) = rest.split_once(':').unwrap_or((rest, DEFAULT_ROOT));
            let root = if root.is_empty() { DEFAULT_ROOT } else { root };
            anyhow::ensure!(
                !user.is_empty() && !host.is_empty() && !user.starts_with('-'),
                "--to {to:?}: expected user@host[:ROOT]"
            );
            return Ok(Self::Remote {
                host: format!("{user}@{host}"),
                root: root.into(),
            });
        }
        bail!(
            "--to {to:?} is neither an existing directory nor user@host[:ROOT] (use dir:PATH for a directory that does not exist yet)"
        )
    }
}

/// The file name the bundle gets in the robot's /tmp.
pub fn remote_file(sha256_hex: &str) -> String {
    format!(
        "/tmp/clawrl-{}.clawrl",
        &sha256_hex[..sha256_hex.len().min(16)]
    )
}

/// Quotes one word for the remote shell that ssh hands its command line to.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:=@%+,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The two command lines of a remote flash: `scp` the bundle to `remote_file`, then `ssh` the
/// install (and remove the copy whatever the install says, keeping its exit status).
pub fn remote_commands(
    bundle: &Path,
    host: &str,
    root: &str,
    remote_file: &str,
    remote_trust: &[String],
    require_signature: bool,
) -> [Vec<OsString>; 2] {
    let scp = vec![
        "scp".into(),
        "-q".into(),
        "--".into(),
        bundle.as_os_str().to_owned(),
        format!("{host}:{remote_file}").into(),
    ];
    let mut install = vec![
        "clawrl-runtime".to_string(),
        "install".into(),
        shell_quote(remote_file),
        "--root".into(),
        shell_quote(root),
    ];
    for k in remote_trust {
        install.push("--trust".into());
        install.push(shell_quote(k));
    }
    if require_signature {
        install.push("--require-signature".into());
    }
    let remote = format!(
        "{}; status=$?; rm -f {}; exit $status",
        install.join(" "),
        shell_quote(remote_file)
    );
    let ssh = vec!["ssh".into(), "--".into(), host.into(), remote.into()];
    [scp, ssh]
}

fn run_argv(argv: &[OsString]) -> Result<()> {
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .status()
        .with_context(|| format!("could not start {}", argv[0].to_string_lossy()))?;
    anyhow::ensure!(
        status.success(),
        "{} failed ({status}): {}",
        argv[0].to_string_lossy(),
        argv.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    let trust = Trust::from_key_files(&a.trust, a.require_signature)?;
    let robot = RuntimeConfig::load(&a.robot, &[])?.robot_spec();
    match Target::parse(&a.to)? {
        Target::Dir(root) => {
            // A key the user meant to be checked must not be dropped in silence.
            anyhow::ensure!(
                a.remote_trust.is_empty(),
                "--remote-trust names a key file on a robot (user@host targets); --to {} is a \
                 directory on this machine: trust keys here with --trust",
                root.display()
            );
            let i = install::install(&root, &a.bundle, &trust, &robot)?;
            println!("installed into {i}");
        }
        Target::Remote { host, root } => {
            // Refuse here what the robot would refuse, before anything is sent.
            let local_trust = Trust {
                require_signature: a.require_signature && !trust.keys.is_empty(),
                ..trust
            };
            let b = clawrl_bundle::read(&a.bundle, &local_trust)?;
            install::check_bundle(&b, &robot)?;
            let file = remote_file(&b.sha256_hex());
            for argv in remote_commands(
                &a.bundle,
                &host,
                &root,
                &file,
                &a.remote_trust,
                a.require_signature,
            ) {
                run_argv(&argv)?;
            }
            println!(
                "flashed {} (sha256 {}) to {host}:{root}",
                a.bundle.display(),
                b.sha256_hex()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[OsString]) -> Vec<&str> {
        v.iter().map(|s| s.to_str().unwrap()).collect()
    }

    #[test]
    fn targets_parse_as_directories_or_hosts() {
        let tmp = std::env::temp_dir();
        let t = tmp.to_str().unwrap();
        assert_eq!(Target::parse(t).unwrap(), Target::Dir(tmp.clone()));
        assert_eq!(
            Target::parse("dir:/no/such/dir").unwrap(),
            Target::Dir("/no/such/dir".into())
        );
        assert_eq!(
            Target::parse("pi@robot").unwrap(),
            Target::Remote {
                host: "pi@robot".into(),
                root: DEFAULT_ROOT.into()
            }
        );
        assert_eq!(
            Target::parse("pi@10.0.0.7:/srv/clawrl").unwrap(),
            Target::Remote {
                host: "pi@10.0.0.7".into(),
                root: "/srv/clawrl".into()
            }
        );
        for bad in [
            "/no/such/dir",
            "robot",
            "@robot",
            "-oProxyCommand=x@robot",
            "dir:",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn remote_flash_is_scp_then_ssh_install() {
        let [scp, ssh] = remote_commands(
            Path::new("runs/s/student.clawrl"),
            "pi@robot",
            "/var/lib/clawrl",
            "/tmp/clawrl-0123456789abcdef.clawrl",
            &["/etc/clawrl/me.pub".into()],
            true,
        );
        assert_eq!(
            strings(&scp),
            [
                "scp",
                "-q",
                "--",
                "runs/s/student.clawrl",
                "pi@robot:/tmp/clawrl-0123456789abcdef.clawrl"
            ]
        );
        assert_eq!(
            strings(&ssh),
            [
                "ssh",
                "--",
                "pi@robot",
                "clawrl-runtime install /tmp/clawrl-0123456789abcdef.clawrl --root /var/lib/clawrl \
                 --trust /etc/clawrl/me.pub --require-signature; status=$?; \
                 rm -f /tmp/clawrl-0123456789abcdef.clawrl; exit $status"
            ]
        );
    }

    #[test]
    fn a_root_with_shell_characters_is_quoted_for_the_remote_shell() {
        let [_, ssh] = remote_commands(
            Path::new("b.clawrl"),
            "pi@robot",
            "/srv/my bundles;rm -rf ~",
            "/tmp/clawrl-x.clawrl",
            &[],
            false,
        );
        let remote = ssh[3].to_str().unwrap();
        assert!(
            remote.starts_with(
                "clawrl-runtime install /tmp/clawrl-x.clawrl --root '/srv/my bundles;rm -rf ~';"
            ),
            "{remote}"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
