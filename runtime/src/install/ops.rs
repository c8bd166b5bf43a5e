//! Install, rollback and status: the operations, in terms of slots and atomic files.
use super::*;

/// Installs `bundle_path` under `root`: verifies it with `trust`, checks it against `robot`,
/// copies it into the slot `current` does not point at, reads the copy back, then switches
/// `current` to it and `previous` to the old slot. See the module documentation for the
/// layout and the crash-safety argument.
pub fn install(
    root: &Path,
    bundle_path: &Path,
    trust: &Trust,
    robot: &RobotSpec,
) -> Result<Installed, InstallError> {
    install_with_hook(root, bundle_path, trust, robot, |_| {})
}

/// [`install`], calling `before(step)` right before each [`Step`] (after the [`ABORT_ENV`]
/// hook): a test seam, so that a test can change the slot between two steps (as another
/// process, or a failing disk, could). [`install`] passes a hook that does nothing.
#[doc(hidden)]
pub fn install_with_hook(
    root: &Path,
    bundle_path: &Path,
    trust: &Trust,
    robot: &RobotSpec,
    mut before: impl FnMut(Step),
) -> Result<Installed, InstallError> {
    let abort_at = abort_step()?;
    let mut step = |s: Step| {
        at(s, abort_at);
        before(s);
    };

    // The file is read once: the bytes verified are the bytes copied, so a source swapped for
    // another bundle after verification cannot slip in (and a source inside the slot about to
    // be cleared survives). The copy is read back against the verified digest too.
    let bytes = fs::read(bundle_path).map_err(io_err("read", bundle_path))?;
    step(Step::Verify);
    let bundle = clawrl_bundle::read_bytes(bundle_path, &bytes, trust)?;
    check_bundle(&bundle, robot)?;

    for d in [root.to_path_buf(), Slot::A.dir(root), Slot::B.dir(root)] {
        fs::create_dir_all(&d).map_err(io_err("create directory", &d))?;
    }
    let _lock = lock(root)?;
    let old = read_link(root, "current")?;
    // The bundle that is already current, again: nothing to do, and doing it would overwrite
    // the previous bundle (the inactive slot) with a second copy of the current one.
    if let Some(current) = old.and_then(|c| verify_slot(c, root).ok())
        && current.record.sha256 == bundle.sha256_hex()
    {
        return Ok(Installed {
            already_current: true,
            ..current
        });
    }
    let target = old.map_or(Slot::A, Slot::other);
    let dir = target.dir(root);

    step(Step::ClearRecord);
    remove_if_exists(&target.record(root))?;
    sync_dir(&dir)?;

    step(Step::DropPrevious);
    if read_link(root, "previous")? == Some(target) {
        remove_if_exists(&root.join("previous"))?;
        sync_dir(root)?;
    }

    step(Step::ClearSlot);
    remove_if_exists(&target.bundle(root))?;
    remove_leftovers(&dir)?;
    sync_dir(&dir)?;

    step(Step::CopyTemp);
    let tmp = dir.join(format!(".{BUNDLE_FILE}.tmp"));
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(&bytes).map_err(io_err("write", &tmp))?;

    step(Step::Fsync);
    f.sync_all().map_err(io_err("sync", &tmp))?;
    drop(f);

    step(Step::RenameIntoSlot);
    let installed = target.bundle(root);
    fs::rename(&tmp, &installed).map_err(io_err("rename into slot", &installed))?;
    sync_dir(&dir)?;

    step(Step::VerifyCopy);
    let copy = clawrl_bundle::read(&installed, trust)?;
    if copy.sha256 != bundle.sha256 {
        return Err(InstallError::CopyMismatch {
            path: installed,
            detail: format!(
                "content sha256 {}, verified {}",
                copy.sha256_hex(),
                bundle.sha256_hex()
            ),
        });
    }
    check_bundle(&copy, robot)?;

    step(Step::WriteRecord);
    let record = Record {
        sha256: bundle.sha256_hex(),
        file_sha256: clawrl_bundle::file_sha256(&installed).map_err(io_err("hash", &installed))?,
        source: fs::canonicalize(bundle_path).unwrap_or_else(|_| bundle_path.to_path_buf()),
        installed_unix_s: now_unix_s(),
        signer: bundle.signer.map(|k| hex(k.as_bytes())),
        provenance: ProvenanceSummary::of(&bundle),
    };
    let json = serde_json::to_string_pretty(&record).expect("a record always serialises");
    write_file_atomically(&dir, RECORD_FILE, json.as_bytes())?;

    step(Step::LinkTemp);
    let tmp = temp_link(root, "current", target)?;

    // `previous` is set before the switch, so every interruption leaves `current` on the old
    // slot (and at worst `previous` on it too, which `rollback` refuses by name and `status`
    // reports as no previous bundle, both by `rollback_target`).
    step(Step::SetPrevious);
    if let Some(old) = old {
        set_link(root, "previous", old)?;
    }

    step(Step::SwitchCurrent);
    commit_link(root, &tmp, "current")?;

    Ok(Installed {
        slot: target,
        bundle: installed,
        record,
        already_current: false,
    })
}

/// Switches `current` back to `previous` (and `previous` to what was current), after checking
/// that the previous bundle still verifies and matches its record: the one [`rollback_target`]
/// names, which is also what `status` reports as previous.
pub fn rollback(root: &Path) -> Result<Installed, InstallError> {
    let not_installed = || InstallError::NotInstalled {
        root: root.to_path_buf(),
    };
    read_link(root, "current")?.ok_or_else(not_installed)?;
    let _lock = lock(root)?;
    let current = read_link(root, "current")?.ok_or_else(not_installed)?;
    let back = rollback_target(root, current)?.map_err(|reason| InstallError::NoPrevious {
        root: root.to_path_buf(),
        reason,
    })?;
    set_link(root, "current", back.slot)?;
    set_link(root, "previous", current)?;
    Ok(back)
}

/// The bundle [`rollback`] would restore while `current` points at `current`, or why there is
/// none. The one answer for both `rollback` and [`status`], so that they cannot disagree: the
/// `previous` link must exist, point at the other slot, and that slot's bundle must verify
/// against its record. An interrupted install can leave `previous` on the current slot (killed
/// before its switch) or on a slot it had started to clear (killed after removing its record):
/// neither is a bundle to roll back to.
fn rollback_target(root: &Path, current: Slot) -> Result<Result<Installed, String>, InstallError> {
    let Some(previous) = read_link(root, "previous")? else {
        return Ok(Err(format!(
            "{} does not exist (one bundle was installed, or an install was interrupted after clearing the old slot)",
            root.join("previous").display()
        )));
    };
    if previous == current {
        return Ok(Err(format!(
            "previous and current both point at {current} (an install was interrupted before it switched)"
        )));
    }
    Ok(verify_slot(previous, root).map_err(|e| {
        format!(
            "the previous bundle in {previous} no longer verifies (an install into it may have been interrupted): {e}"
        )
    }))
}

/// The bundle `current` points at, for `clawrl-runtime run`.
pub fn current_bundle(root: &Path) -> Result<PathBuf, InstallError> {
    let slot = read_link(root, "current")?.ok_or_else(|| InstallError::NotInstalled {
        root: root.to_path_buf(),
    })?;
    let path = slot.bundle(root);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(InstallError::Layout {
            path,
            detail: "is not a regular file".into(),
        }),
        Err(e) => Err(io_err("current bundle", &path)(e)),
    }
}

/// What a slot holds.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotState {
    Empty,
    Installed(Box<Installed>),
    /// Something is there but does not verify (an interrupted install into the inactive slot,
    /// or damage): why.
    Broken(String),
}

/// Both slots, where `current` points, and what [`rollback`] would return to.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub root: PathBuf,
    pub current: Option<Slot>,
    /// The slot [`rollback`] would restore (a verified bundle in the slot `current` does not
    /// point at); `None` exactly when rollback would refuse, and [`Status::no_previous`] says
    /// why.
    pub previous: Option<Slot>,
    /// Why there is nothing to roll back to (the reason [`rollback`] would give), when
    /// `previous` is `None`.
    pub no_previous: Option<String>,
    /// Where the `previous` link itself points, whether or not rollback can use it (an
    /// interrupted install can leave it on the current slot, or on a half-cleared one).
    pub previous_link: Option<Slot>,
    pub slots: [(Slot, SlotState); 2],
}

impl Status {
    /// The current slot's bundle, if it verifies.
    pub fn current_installed(&self) -> Option<&Installed> {
        let c = self.current?;
        self.slots.iter().find_map(|(s, st)| match st {
            SlotState::Installed(i) if *s == c => Some(&**i),
            _ => None,
        })
    }
}

/// Reads both slots (each bundle is verified for integrity and against its record).
pub fn status(root: &Path) -> Result<Status, InstallError> {
    if !root.is_dir() {
        return Err(InstallError::NotInstalled {
            root: root.to_path_buf(),
        });
    }
    let current = read_link(root, "current")?;
    let previous_link = read_link(root, "previous")?;
    let (previous, no_previous) = match current {
        None => (
            None,
            Some(format!(
                "nothing is installed ({} does not exist)",
                root.join("current").display()
            )),
        ),
        Some(c) => match rollback_target(root, c)? {
            Ok(back) => (Some(back.slot), None),
            Err(why) => (None, Some(why)),
        },
    };
    let state = |slot: Slot| {
        let bundle = slot.bundle(root);
        if !bundle.exists() && !slot.record(root).exists() {
            return SlotState::Empty;
        }
        match verify_slot(slot, root) {
            Ok(i) => SlotState::Installed(Box::new(i)),
            Err(e) => SlotState::Broken(e.to_string()),
        }
    };
    Ok(Status {
        root: root.to_path_buf(),
        current,
        previous,
        no_previous,
        previous_link,
        slots: [(Slot::A, state(Slot::A)), (Slot::B, state(Slot::B))],
    })
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |s: Option<Slot>| s.map_or("none".to_string(), |s| s.to_string());
        let previous = match (&self.previous, &self.no_previous) {
            (Some(p), _) => p.to_string(),
            (None, Some(why)) => format!("none ({why})"),
            (None, None) => "none".to_string(),
        };
        writeln!(
            f,
            "clawrl bundles under {}: current {}, previous {previous}",
            self.root.display(),
            name(self.current),
        )?;
        for (slot, state) in &self.slots {
            let mut roles = Vec::new();
            if self.current == Some(*slot) {
                roles.push("current");
            }
            if self.previous == Some(*slot) {
                roles.push("previous");
            }
            let roles = if roles.is_empty() {
                String::new()
            } else {
                format!(" ({})", roles.join(", "))
            };
            match state {
                SlotState::Empty => writeln!(f, "{slot}{roles}: empty")?,
                SlotState::Broken(why) => writeln!(f, "{slot}{roles}: does not verify: {why}")?,
                SlotState::Installed(i) => {
                    let text = i.to_string();
                    let body = text.strip_prefix(&slot.to_string()).unwrap_or(&text);
                    writeln!(f, "{slot}{roles}{body}")?;
                }
            }
        }
        Ok(())
    }
}
