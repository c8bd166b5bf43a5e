//! `clawrl flash`: put a policy bundle on the robot. Into a local directory it installs with the
//! runtime's own library (A/B slots, atomic switch, see `clawrl_runtime::install`); onto a
//! robot it sends the bundle over one `ssh` into a private file under the install root and runs
//! `clawrl-runtime install` on it there ([`remote_script`]).
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clawrl_bundle::Trust;
use clawrl_runtime::install::{self, DEFAULT_ROOT};

/// Install a policy bundle on the robot (or into a local slot directory), keeping the old one
/// for `clawrl-runtime rollback`.
#[derive(clap::Args)]
pub struct Args {
    bundle: PathBuf,
    /// Where to: an existing directory (or `dir:PATH`, created if needed) is the install root
    /// itself; `user@host[:ROOT]` sends the bundle over ssh into a private file under ROOT and
    /// runs `clawrl-runtime install` on it there (ROOT defaults to /var/lib/clawrl).
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
    /// The runtime config on the robot, passed to `clawrl-runtime install --config` (remote
    /// targets only); without it the robot uses its default. The local check uses --robot.
    #[arg(long, value_name = "ROBOT_PATH")]
    remote_config: Option<String>,
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

/// The remote shell script of a flash, the bundle on its stdin: a private file under the
/// install root (`mktemp`, mode 600 under umask 077: another user of the robot can neither
/// predict its name nor swap its bytes before the install reads them, as they could in /tmp),
/// the bundle written into it, `clawrl-runtime install` on it, and the file removed whatever
/// the install says, keeping its exit status. `remote_config` is the install's `--config`
/// (none: the robot's default).
pub fn remote_script(
    root: &str,
    remote_trust: &[String],
    require_signature: bool,
    remote_config: Option<&str>,
) -> String {
    let root = shell_quote(root);
    let mut install = format!("clawrl-runtime install \"$f\" --root {root}");
    if let Some(c) = remote_config {
        install.push_str(&format!(" --config {}", shell_quote(c)));
    }
    for k in remote_trust {
        install.push_str(&format!(" --trust {}", shell_quote(k)));
    }
    if require_signature {
        install.push_str(" --require-signature");
    }
    format!(
        "umask 077 && mkdir -p {root} && f=$(mktemp {root}/.incoming.XXXXXXXX) || exit 1; \
         cat > \"$f\" && {install}; status=$?; rm -f \"$f\"; exit $status"
    )
}

/// The command line of a remote flash: `ssh` running [`remote_script`] (the bundle goes on
/// its stdin).
pub fn remote_command(
    host: &str,
    root: &str,
    remote_trust: &[String],
    require_signature: bool,
    remote_config: Option<&str>,
) -> Vec<OsString> {
    let script = remote_script(root, remote_trust, require_signature, remote_config);
    vec!["ssh".into(), "--".into(), host.into(), script.into()]
}

/// Runs `argv` with `stdin` as its standard input.
fn run_argv(argv: &[OsString], stdin: &Path) -> Result<()> {
    let input =
        std::fs::File::open(stdin).with_context(|| format!("opening {}", stdin.display()))?;
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(input)
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
    let robot = super::robot_config(&a.robot)?.robot_spec();
    match Target::parse(&a.to)? {
        Target::Dir(root) => {
            // A key the user meant to be checked must not be dropped in silence.
            anyhow::ensure!(
                a.remote_trust.is_empty(),
                "--remote-trust names a key file on a robot (user@host targets); --to {} is a \
                 directory on this machine: trust keys here with --trust",
                root.display()
            );
            anyhow::ensure!(
                a.remote_config.is_none(),
                "--remote-config names a runtime config on a robot (user@host targets); --to {} \
                 is a directory on this machine, checked against --robot",
                root.display()
            );
            let i = install::install(&root, &a.bundle, &trust, &robot)?;
            if i.already_current {
                println!("already the current bundle, nothing changed: {i}");
            } else {
                println!("installed into {i}");
            }
        }
        Target::Remote { host, root } => {
            // Refuse here what the robot would refuse, before anything is sent.
            let local_trust = Trust {
                require_signature: a.require_signature && !trust.keys.is_empty(),
                ..trust
            };
            let b = clawrl_bundle::read(&a.bundle, &local_trust)?;
            install::check_bundle(&b, &robot)?;
            let argv = remote_command(
                &host,
                &root,
                &a.remote_trust,
                a.require_signature,
                a.remote_config.as_deref(),
            );
            run_argv(&argv, &a.bundle)?;
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
    fn remote_flash_is_one_ssh_with_the_install_script() {
        let argv = remote_command(
            "pi@robot",
            "/var/lib/clawrl",
            &["/etc/clawrl/me.pub".into()],
            true,
            None,
        );
        assert_eq!(
            strings(&argv),
            [
                "ssh",
                "--",
                "pi@robot",
                "umask 077 && mkdir -p /var/lib/clawrl && f=$(mktemp /var/lib/clawrl/.incoming.XXXXXXXX) \
                 || exit 1; cat > \"$f\" && clawrl-runtime install \"$f\" --root /var/lib/clawrl \
                 --trust /etc/clawrl/me.pub --require-signature; status=$?; rm -f \"$f\"; exit $status"
            ]
        );
    }

    #[test]
    fn a_root_with_shell_characters_is_quoted_for_the_remote_shell() {
        let script = remote_script("/srv/my bundles;rm -rf ~", &[], false, None);
        assert!(
            script.starts_with("umask 077 && mkdir -p '/srv/my bundles;rm -rf ~' && "),
            "{script}"
        );
        assert!(
            script.contains("--root '/srv/my bundles;rm -rf ~';"),
            "{script}"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    /// `--remote-config` reaches the robot's install as `--config`, quoted for the remote shell
    /// (a space and a `;` stay inside one word); without it the script is what it was.
    #[test]
    fn a_remote_config_is_passed_to_the_install_quoted() {
        let plain = remote_script("/var/lib/clawrl", &[], false, None);
        assert!(!plain.contains("--config"), "{plain}");
        let with = remote_script(
            "/var/lib/clawrl",
            &[],
            false,
            Some("/etc/clawrl/robot.toml"),
        );
        assert_eq!(
            with,
            plain.replace(
                "--root /var/lib/clawrl;",
                "--root /var/lib/clawrl --config /etc/clawrl/robot.toml;"
            )
        );
        let odd = remote_script(
            "/var/lib/clawrl",
            &["/etc/k.pub".into()],
            true,
            Some("/etc/my robot;rm -rf ~/it's.toml"),
        );
        assert!(
            odd.contains(
                r"--root /var/lib/clawrl --config '/etc/my robot;rm -rf ~/it'\''s.toml' --trust /etc/k.pub --require-signature;"
            ),
            "{odd}"
        );
    }

    /// The script run by a real shell, with a stand-in `clawrl-runtime` on PATH that records
    /// what it was given: the bundle lands in a file only its owner can read or write, under
    /// the install root with a name nobody could predict, and is gone afterwards; the install's
    /// exit status is the script's.
    #[test]
    fn the_remote_script_installs_from_a_private_file_under_the_root() {
        let dir = std::env::temp_dir().join(format!("clawrl-flash-script-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (bin, root) = (dir.join("bin"), dir.join("robot root"));
        std::fs::create_dir_all(&bin).unwrap();
        let log = dir.join("log");
        let fake = bin.join("clawrl-runtime");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$2\" \"$(stat -c %a \"$2\")\" \"$(cat \"$2\")\" > '{}'\nexit 3\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let bundle = dir.join("b.clawrl");
        std::fs::write(&bundle, "the bundle's bytes").unwrap();
        let script = remote_script(root.to_str().unwrap(), &[], false, None);
        let status = Command::new("sh")
            .args(["-c", &script])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .stdin(std::fs::File::open(&bundle).unwrap())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3), "the install's exit status");
        let seen = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = seen.lines().collect();
        let file = Path::new(lines[0]);
        assert_eq!(file.parent(), Some(root.as_path()), "{seen}");
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with(".incoming.") && name.len() == ".incoming.".len() + 8,
            "{name}"
        );
        assert_eq!(lines[1], "600", "only its owner may read or write it");
        assert_eq!(lines[2], "the bundle's bytes");
        assert!(!file.exists(), "removed after the install");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
