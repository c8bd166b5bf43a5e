//! The file system underneath: directories synced, files written under a temporary name and
//! renamed into place, symlinks switched by rename, the lock, a slot read back and verified.
use super::*;

pub(super) fn sync_dir(dir: &Path) -> Result<(), InstallError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("sync directory", dir))
}

pub(super) fn remove_if_exists(path: &Path) -> Result<(), InstallError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("remove", path)(e)),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `dir/.NAME.tmp`, syncs it and renames it to `dir/NAME`, then syncs `dir`.
pub(super) fn write_file_atomically(
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<(), InstallError> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))?;
    sync_dir(dir)
}

/// Makes a symlink to `slot` under the temporary name `root/.NAME.tmp` (see [`commit_link`]).
pub(super) fn temp_link(root: &Path, name: &str, slot: Slot) -> Result<PathBuf, InstallError> {
    let tmp = root.join(format!(".{name}.tmp"));
    remove_if_exists(&tmp)?;
    symlink(&slot.link_target(), &tmp).map_err(io_err("create symlink", &tmp))?;
    Ok(tmp)
}

/// Renames the temporary link over `root/NAME` (one atomic `rename(2)`) and syncs the root.
pub(super) fn commit_link(root: &Path, tmp: &Path, name: &str) -> Result<(), InstallError> {
    let link = root.join(name);
    fs::rename(tmp, &link).map_err(io_err("switch symlink", &link))?;
    sync_dir(root)
}

/// Points the symlink `root/NAME` at `slot` atomically.
pub(super) fn set_link(root: &Path, name: &str, slot: Slot) -> Result<(), InstallError> {
    let tmp = temp_link(root, name, slot)?;
    commit_link(root, &tmp, name)
}

#[cfg(unix)]
pub(super) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
pub(super) fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::other("slot links need a Unix file system"))
}

/// The slot `root/NAME` points at; `None` when the link does not exist.
pub(super) fn read_link(root: &Path, name: &str) -> Result<Option<Slot>, InstallError> {
    let link = root.join(name);
    let target = match fs::read_link(&link) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read symlink", &link)(e)),
    };
    Slot::BOTH
        .into_iter()
        .find(|s| target == s.link_target())
        .map(Some)
        .ok_or_else(|| InstallError::Layout {
            path: link,
            detail: format!(
                "points at {}, expected slots/a or slots/b (not written by clawrl-runtime install?)",
                target.display()
            ),
        })
}

/// Holds `root/.lock` until dropped.
pub(super) struct Lock(#[allow(dead_code)] File);

pub(super) fn lock(root: &Path) -> Result<Lock, InstallError> {
    let path = root.join(".lock");
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err("open lock", &path))?;
    // A lock just released can look held for a moment: flock belongs to the open file, and a
    // child forked by another thread of this process (before its exec closes the inherited
    // descriptor) still shares the old one. So "busy" means held for LOCK_WAIT, not once.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(Lock(f)),
            Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(InstallError::Busy {
                    root: root.to_path_buf(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(io_err("lock", &path)(e)),
        }
    }
}

/// How long a held root lock is waited for before an install or rollback reports it busy.
pub(super) const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

pub(super) fn read_record(slot: Slot, root: &Path) -> Result<Record, InstallError> {
    let path = slot.record(root);
    let text = fs::read_to_string(&path).map_err(io_err("read install record", &path))?;
    serde_json::from_str(&text).map_err(|e| InstallError::Layout {
        path,
        detail: format!("not an install record: {e}"),
    })
}

/// Reads the bundle in `slot` (integrity and, when present, signature) and its record, and
/// checks they agree.
pub(super) fn verify_slot(slot: Slot, root: &Path) -> Result<Installed, InstallError> {
    let bundle = slot.bundle(root);
    let b = clawrl_bundle::read(&bundle, &Trust::default())?;
    let record = read_record(slot, root)?;
    if record.sha256 != b.sha256_hex() {
        return Err(InstallError::Layout {
            path: slot.record(root),
            detail: format!(
                "records sha256 {}, but {} holds {}",
                record.sha256,
                bundle.display(),
                b.sha256_hex()
            ),
        });
    }
    Ok(Installed {
        slot,
        bundle,
        record,
        already_current: false,
    })
}

/// Removes what an interrupted install may have left in `dir`: files whose names start with a
/// dot (the temporary copy and record of [`write_file_atomically`] and the install's own copy).
pub(super) fn remove_leftovers(dir: &Path) -> Result<(), InstallError> {
    let entries = fs::read_dir(dir).map_err(io_err("list", dir))?;
    for entry in entries {
        let path = entry.map_err(io_err("list", dir))?.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            remove_if_exists(&path)?;
        }
    }
    Ok(())
}

pub(super) fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
