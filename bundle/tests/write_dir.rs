//! Where a write puts its temporary file: next to the bundle, whatever the current directory.
//! Its own test binary: it changes the process's current directory.
mod common;

use clawrl_bundle::*;
use common::*;

#[test]
fn the_temporary_file_sits_next_to_the_bundle() {
    let (m, t) = quadruped();
    // A bare file name: the bundle and its temporary file go in the current directory.
    let here = tempfile::tempdir().unwrap();
    std::env::set_current_dir(here.path()).unwrap();
    let sha = write(std::path::Path::new("q.clawrl"), &m, &t, None).unwrap();
    let names: Vec<String> = std::fs::read_dir(here.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["q.clawrl"]);
    assert_eq!(
        read(here.path().join("q.clawrl"), &Trust::default())
            .unwrap()
            .sha256,
        sha
    );
    // With the current directory gone, a bundle written elsewhere does not need it.
    let gone = tempfile::tempdir().unwrap();
    std::env::set_current_dir(gone.path()).unwrap();
    std::fs::remove_dir(gone.path()).unwrap();
    let there = tempfile::tempdir().unwrap();
    let path = there.path().join("q.clawrl");
    assert_eq!(write(&path, &m, &t, None).unwrap(), sha);
    std::env::set_current_dir(there.path()).unwrap();
}
