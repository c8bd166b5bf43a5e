//! `clawrl ... | head -1`: a reader that goes away early ends the command quietly, with no
//! panic and no backtrace on stderr (issue 27 item 13).
mod common;

use std::process::Stdio;

use common::{clawrl, text, tmp};

#[test]
fn a_closed_stdout_ends_the_command_without_a_panic() {
    let dir = tmp("pipe");
    // A pipe whose reading end is closed before the command starts: its first print fails
    // with EPIPE, as under `| head -1` once head has exited.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = clawrl(&["keygen", "--out"])
        .arg(dir.join("me"))
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(
        !err.contains("panicked") && !err.contains("backtrace") && !err.contains("Broken pipe"),
        "{err}"
    );
    // Killed by SIGPIPE like any Unix tool (or done, had it written nothing more); never the
    // panic's exit code 101.
    use std::os::unix::process::ExitStatusExt;
    assert!(
        o.status.success() || o.status.signal() == Some(13),
        "{:?}\n{err}",
        o.status
    );
    let _ = std::fs::remove_dir_all(&dir);
}
