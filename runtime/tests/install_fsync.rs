//! The durability order of an install, read from the system calls the real `clawrl-runtime`
//! binary makes (strace): every file is fsynced before it is renamed into place, and the
//! directory that holds it is fsynced after the rename, before the next one. A power cut can
//! then leave the old name or the new one, never a new name over a file whose bytes were not
//! on disk yet. The install's kill-at-every-step test (tests/install.rs) cannot see this: a
//! killed process still leaves its writes in the page cache.
mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clawrl_runtime::install::ABORT_ENV;
use common::quadruped_bundle;

/// One traced call, in the order the kernel saw them.
#[derive(Debug, PartialEq)]
enum Call {
    /// fsync/fdatasync of the file or directory at this path (strace -y names the fd).
    Sync(PathBuf),
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
}

/// Why strace cannot be used here, if it cannot: not installed, or not allowed to trace (a
/// container can forbid ptrace). The durability test fails on either rather than skipping, so
/// that a machine without strace cannot pass it without checking anything.
fn strace_unusable() -> Option<String> {
    match Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .output()
    {
        Err(e) => Some(format!(
            "strace could not be run ({e}): install it (Debian/Ubuntu: `apt-get install -y strace`; \
             scripts/bootstrap.sh does so when it runs as root)"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "strace is installed but cannot trace here ({}): {} (a container needs ptrace allowed, \
             e.g. docker run --cap-add=SYS_PTRACE)",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// The successful fsync and rename calls of one `clawrl-runtime ARGS` run, and the raw log
/// (shown when a check fails: the parse depends on strace's output format).
fn traced(dir: &Path, args: &[&std::ffi::OsStr]) -> (Vec<Call>, String) {
    let log = dir.join("strace.log");
    let o = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "4096", "-e"])
        .arg("trace=fsync,fdatasync,rename,renameat,renameat2")
        .arg("-o")
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_clawrl-runtime"))
        .args(args)
        .env_remove(ABORT_ENV)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let raw = std::fs::read_to_string(&log).unwrap();
    (parse(&raw), raw)
}

/// A strace line without its process prefix: `12 `, `[pid 12] ` or none (whether strace
/// writes one depends on its version and on how many processes it traced).
fn without_pid(line: &str) -> &str {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("[pid ") {
        return rest.split_once(']').map_or(line, |(_, r)| r.trim_start());
    }
    match line.split_once(' ') {
        // strace pads the pid (`8959  fsync(...)`): the call starts after the spaces.
        Some((pid, rest)) if pid.bytes().all(|b| b.is_ascii_digit()) => rest.trim_start(),
        _ => line,
    }
}

/// Parses strace lines such as `12 fsync(3</r/slots/b/.bundle.clawrl.tmp>) = 0` and
/// `12 renameat2(AT_FDCWD</x>, "/r/.current.tmp", AT_FDCWD</x>, "/r/current", 0) = 0`.
fn parse(log: &str) -> Vec<Call> {
    let quoted =
        |s: &str| -> Vec<PathBuf> { s.split('"').skip(1).step_by(2).map(PathBuf::from).collect() };
    log.lines()
        .filter(|l| l.trim_end().ends_with("= 0"))
        .filter_map(|l| {
            let call = without_pid(l);
            if call.starts_with("fsync(") || call.starts_with("fdatasync(") {
                let path = call.split_once('<')?.1.split_once('>')?.0;
                Some(Call::Sync(PathBuf::from(path)))
            } else if call.starts_with("rename") {
                let p = quoted(call);
                Some(Call::Rename {
                    from: p.first()?.clone(),
                    to: p.get(1)?.clone(),
                })
            } else {
                None
            }
        })
        .collect()
}

/// Every rename under `root`: a regular file was fsynced before it (a symlink has no data of
/// its own to sync), and its directory is fsynced after it, before the next rename.
fn check_order(calls: &[Call], root: &Path) -> Result<usize, String> {
    let mut renames = 0;
    for (i, c) in calls.iter().enumerate() {
        let Call::Rename { from, to } = c else {
            continue;
        };
        if !to.starts_with(root) {
            continue;
        }
        renames += 1;
        let is_link = std::fs::symlink_metadata(to).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link && !calls[..i].contains(&Call::Sync(from.clone())) {
            return Err(format!(
                "{} renamed to {} unsynced",
                from.display(),
                to.display()
            ));
        }
        let dir = to.parent().unwrap().to_path_buf();
        let synced_after = calls[i + 1..]
            .iter()
            .take_while(|c| !matches!(c, Call::Rename { .. }))
            .any(|c| *c == Call::Sync(dir.clone()));
        if !synced_after {
            return Err(format!(
                "{} not synced after the rename to {}",
                dir.display(),
                to.display()
            ));
        }
    }
    Ok(renames)
}

#[test]
fn an_install_syncs_each_file_before_its_rename_and_the_directory_after() {
    if let Some(why) = strace_unusable() {
        panic!("this test reads the install's system calls with strace: {why}");
    }
    let dir = tempfile::tempdir().unwrap();
    // Canonical: strace names paths as the kernel resolves them.
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let config = common::repo().join("configs/runtime/robot.toml");
    let (mut calls, mut raw) = (Vec::new(), String::new());
    // The first install (the current link is created) and a second one (the previous link
    // too), so every rename an install makes is seen.
    for seed in [1, 2] {
        let bundle = quadruped_bundle(&base, seed);
        let args = [
            "install".as_ref(),
            bundle.as_os_str(),
            "--root".as_ref(),
            root.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
        ];
        let (c, r) = traced(&base, &args);
        calls.extend(c);
        raw.push_str(&r);
    }
    let renames = check_order(&calls, &root).unwrap_or_else(|e| panic!("{e}\n{calls:#?}"));
    // Per install: the bundle and its record into the slot, the new current link; from the
    // second on, the previous link as well.
    assert!(
        renames >= 7,
        "only {renames} renames traced:\n{calls:#?}\nstrace log:\n{raw}"
    );
    let dirs: HashSet<_> = calls
        .iter()
        .filter_map(|c| match c {
            Call::Sync(p) if p.is_dir() => Some(p.clone()),
            _ => None,
        })
        .collect();
    assert!(dirs.contains(&root), "the root never synced: {dirs:?}");
}

#[test]
fn the_order_check_refuses_a_rename_before_its_sync_and_a_missing_directory_sync() {
    let (root, dir) = (Path::new("/r"), PathBuf::from("/r/slots/a"));
    let tmp = dir.join(".bundle.clawrl.tmp");
    let rename = || Call::Rename {
        from: tmp.clone(),
        to: dir.join("bundle.clawrl"),
    };
    let (sync_tmp, sync_dir) = (|| Call::Sync(tmp.clone()), || Call::Sync(dir.clone()));
    assert_eq!(
        check_order(&[sync_tmp(), rename(), sync_dir()], root),
        Ok(1)
    );
    let e = check_order(&[rename(), sync_tmp(), sync_dir()], root).unwrap_err();
    assert!(e.contains("unsynced"), "{e}");
    let e = check_order(&[sync_tmp(), rename(), rename(), sync_dir()], root).unwrap_err();
    assert!(e.contains("not synced after"), "{e}");
}

#[test]
fn strace_lines_parse_into_syncs_and_renames() {
    let log = "\
7 fsync(3</r/slots/b/.bundle.clawrl.tmp>) = 0
7 rename(\"/r/slots/b/.bundle.clawrl.tmp\", \"/r/slots/b/bundle.clawrl\") = 0
7 renameat2(AT_FDCWD</x>, \"/r/.current.tmp\", AT_FDCWD</x>, \"/r/current\", 0) = 0
7 fsync(4</r>) = 0
7 fsync(5</r/gone>) = -1 EIO (Input/output error)
[pid 8] fsync(6</r/slots>) = 0
fdatasync(7</r/log>) = 0
rename(\"/r/a\", \"/r/b\") = 0
8959  fsync(6</r/padded>) = 0
";
    let p = PathBuf::from;
    assert_eq!(
        parse(log),
        [
            Call::Sync(p("/r/slots/b/.bundle.clawrl.tmp")),
            Call::Rename {
                from: p("/r/slots/b/.bundle.clawrl.tmp"),
                to: p("/r/slots/b/bundle.clawrl")
            },
            Call::Rename {
                from: p("/r/.current.tmp"),
                to: p("/r/current")
            },
            Call::Sync(p("/r")),
            Call::Sync(p("/r/slots")),
            Call::Sync(p("/r/log")),
            Call::Rename {
                from: p("/r/a"),
                to: p("/r/b")
            },
            Call::Sync(p("/r/padded")),
        ]
    );
}
