//! Runs a test's case in a child process (the test binary itself, filtered to that test)
//! under a timeout and an address-space limit, so that a case that could hang or exhaust
//! memory fails its test instead of stalling or killing the whole run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that tells the child which case it is to run.
const CASE: &str = "SWEEPCAST_ISOLATED_CASE";

/// Runs `case` in a child process: the test binary run again with `filter` (a substring of
/// the calling test's name, unique among the binary's tests), under `ulimit -v` of
/// `max_bytes` and killed after `timeout`. Panics (failing the test) if the child fails,
/// runs out of time, or is killed; in the child, runs `case` itself.
pub fn isolated(filter: &str, timeout: Duration, max_bytes: u64, case: impl FnOnce()) {
    if std::env::var(CASE).as_deref() == Ok(filter) {
        case();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let script = format!(
        "ulimit -v {} && exec \"$0\" \"$1\" --nocapture --test-threads=1",
        max_bytes / 1024
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .arg(&exe)
        .arg(filter)
        .env(CASE, filter)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawning the test binary");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            assert!(
                status.success(),
                "{filter}: the isolated case failed ({status})"
            );
            return;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{filter}: the isolated case ran past {timeout:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
