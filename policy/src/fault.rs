//! Fault points: places where a test may stop the process at a chosen moment, such as halfway
//! through writing a checkpoint, to prove that a kill there loses nothing.
//!
//! Compiled in only with the `fault-injection` feature (enabled by the `cli` crate's tests, never
//! in a release build). When `CLAWRL_FAULT_PAUSE` names the point (`NAME`, or `NAME@TEXT` to
//! stop only where the point's subject contains TEXT, such as a file name), the process writes
//! the file named by `CLAWRL_FAULT_MARKER` (so the test knows it got there) and sleeps until
//! killed.

/// A named fault point about `subject` (a path, say); a no-op unless the feature is on and the
/// environment asks for it.
#[inline]
pub fn point(name: &str, subject: &str) {
    #[cfg(feature = "fault-injection")]
    pause_if_asked(name, subject);
    #[cfg(not(feature = "fault-injection"))]
    let _ = (name, subject);
}

#[cfg(feature = "fault-injection")]
fn pause_if_asked(name: &str, subject: &str) {
    let Ok(want) = std::env::var("CLAWRL_FAULT_PAUSE") else {
        return;
    };
    let (want_name, want_subject) = want.split_once('@').unwrap_or((&want, ""));
    if want_name != name || !subject.contains(want_subject) {
        return;
    }
    if let Ok(marker) = std::env::var("CLAWRL_FAULT_MARKER") {
        let _ = std::fs::write(marker, name);
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
