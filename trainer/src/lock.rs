//! One writer per run folder: an exclusive lock held for the life of the process.
//!
//! The lock is the kernel's advisory file lock (`flock`) on `<run>/.clawrl.lock`, so it goes
//! away with the process however it dies (kill -9 included) and a second trainer is refused at
//! once instead of interleaving rows into the same metrics.csv. The file also records who holds
//! it (pid, start time, command line) for the refusal message. A record left by a process that
//! is gone (a stale lock) is reported when the next writer takes the folder over.
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub const LOCK_FILE: &str = ".clawrl.lock";

/// Held while a process writes into a run folder; released on drop or process exit.
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

/// Who holds (or last held) a lock, as written in the lock file.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub record: String,
}

impl RunLock {
    /// Takes the lock of `dir` (created if needed), or says who holds it.
    pub fn acquire(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening the run lock {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let who = read_holder(&mut file)
                    .map(|h| format!("process {} ({})", h.pid, h.record))
                    .unwrap_or_else(|| "another process".into());
                bail!(
                    "{} is in use: {who} is writing into it. Wait for it to finish, stop it, or \
                     write into another folder with --out",
                    dir.display()
                );
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        if let Some(old) = read_holder(&mut file).filter(|h| h.pid != std::process::id()) {
            tracing::warn!(
                "{}: cleared a stale lock of process {} ({}), which ended without releasing it",
                dir.display(),
                old.pid,
                old.record
            );
        }
        let record = format!(
            "pid {}\nsince unix {}\ncommand {}\n",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(record.as_bytes())?;
        file.sync_all()?;
        Ok(Self { file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Clear the record, keep the file: removing it would let a waiting opener lock an
        // unlinked inode while a third process locks a new file.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    let pid = text
        .lines()
        .next()?
        .strip_prefix("pid ")?
        .trim()
        .parse()
        .ok()?;
    let record = text
        .lines()
        .skip(1)
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(", ");
    Some(Holder { pid, record })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("clawrl-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tmp("two");
        let a = RunLock::acquire(&dir).unwrap();
        let e = RunLock::acquire(&dir).unwrap_err().to_string();
        assert!(
            e.contains("is in use") && e.contains(&format!("process {}", std::process::id())),
            "{e}"
        );
        drop(a);
        let b = RunLock::acquire(&dir).unwrap();
        assert!(b.path().exists());
        drop(b);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_stale_record_does_not_block() {
        let dir = tmp("stale");
        std::fs::create_dir_all(&dir).unwrap();
        // A process that died without cleaning up left its record but holds no lock.
        std::fs::write(
            dir.join(LOCK_FILE),
            "pid 4194303\nsince unix 1\ncommand clawrl train\n",
        )
        .unwrap();
        let l = RunLock::acquire(&dir).unwrap();
        let text = std::fs::read_to_string(l.path()).unwrap();
        assert!(
            text.starts_with(&format!("pid {}\n", std::process::id())),
            "{text}"
        );
        drop(l);
        std::fs::remove_dir_all(dir).ok();
    }
}
