//! A test's case run in a child process under a timeout and an address-space limit, so that
//! a case that hangs or exhausts memory (an abort, an endless loop) fails its test rather
//! than stalling or killing the whole run.
//!
//! The child is the test binary itself, running only the named test with
//! [`CASE_VARIABLE`] set to the case; the test sees it with [`isolated_case`] and runs that
//! case alone:
//!
//! ```ignore
//! #[test]
//! fn a_pile_is_a_typed_error() {
//!     if let Some(case) = common::isolated_case() {
//!         return run_case(&case); // in the child: the case itself, which may abort
//!     }
//!     for case in ["cpu", "gpu"] {
//!         let outcome = common::run_isolated("a_pile_is_a_typed_error", case, TIMEOUT, 4 << 30);
//!         assert!(outcome.passed(), "{outcome}");
//!     }
//! }
//! ```
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that names the case a child runs.
pub const CASE_VARIABLE: &str = "SWEEPCAST_ISOLATED_CASE";

/// The case this process was started to run by [`run_isolated`], or `None` in the test run
/// itself.
pub fn isolated_case() -> Option<String> {
    std::env::var(CASE_VARIABLE).ok()
}

/// How a child of [`run_isolated`] ended.
#[derive(Debug)]
pub struct Outcome {
    /// The test and case it ran.
    pub test: String,
    pub case: String,
    /// Its exit code, or `None` where a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it (`SIGABRT`, 6, for a failed allocation; `SIGKILL`, 9, after
    /// the timeout), or `None`.
    pub signal: Option<i32>,
    /// Whether it was killed for outlasting the timeout.
    pub timed_out: bool,
    /// How long it ran.
    pub elapsed: Duration,
    /// Its standard output, then its standard error.
    pub output: String,
}

impl Outcome {
    /// Whether the child's test ran and passed within the timeout: exit code 0 and the test
    /// harness's word that exactly one test passed (a name that matches no test also exits
    /// with 0).
    pub fn passed(&self) -> bool {
        !self.timed_out && self.code == Some(0) && self.output.contains("test result: ok. 1 passed")
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match (self.timed_out, self.code, self.signal) {
            (true, _, _) => "killed after the timeout".to_string(),
            (_, Some(code), _) => format!("exit code {code}"),
            (_, _, Some(signal)) => format!("killed by signal {signal}"),
            _ => "an unknown end".to_string(),
        };
        write!(
            f,
            "isolated {} (case {}): {how} after {:.1?}; its output:\n{}",
            self.test, self.case, self.elapsed, self.output
        )
    }
}

/// Runs the test named `test` (its full name within the binary, as `--exact` matches it) in
/// a child process with [`CASE_VARIABLE`] set to `case`, at most `max_bytes` of address space
/// (`RLIMIT_AS`: an allocation beyond it fails, which aborts the child) and at most `timeout`
/// of wall clock, after which the child and its process group are killed.
///
/// # Panics
/// When the child cannot be started or waited for.
pub fn run_isolated(test: &str, case: &str, timeout: Duration, max_bytes: u64) -> Outcome {
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_VARIABLE, case)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that the timeout ends whatever it started too.
        .process_group(0);
    let limit = libc::rlimit {
        rlim_cur: max_bytes as libc::rlim_t,
        rlim_max: max_bytes as libc::rlim_t,
    };
    // SAFETY: `setrlimit` is async-signal-safe and touches no memory of the parent's; the
    // closure allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let start = Instant::now();
    let mut child = command.spawn().expect("the test binary starts again");
    // Both pipes read on threads of their own, so that a child that writes much never
    // blocks on a full pipe.
    let stdout = read_to_end(child.stdout.take());
    let stderr = read_to_end(child.stderr.take());
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let group = child.id() as libc::pid_t;
            // SAFETY: a plain system call on the child's own process group (its id is the
            // child's, which has not been reaped yet, so it names no other group).
            unsafe { libc::kill(-group, libc::SIGKILL) };
            break child.wait().expect("waiting for the killed child");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let output = format!(
        "{}{}",
        stdout.join().expect("stdout read"),
        stderr.join().expect("stderr read")
    );
    Outcome {
        test: test.to_string(),
        case: case.to_string(),
        code: status.code(),
        signal: status.signal(),
        timed_out,
        elapsed,
        output,
    }
}

/// Reads `pipe` to its end on a thread of its own, as text.
fn read_to_end(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `case` as the test `test` (its exact name) in a child process of [`run_isolated`],
/// failing the test unless the child passes; in the child, runs `case` itself. For a test
/// that is one case.
pub fn isolated(test: &str, timeout: Duration, max_bytes: u64, case: impl FnOnce()) {
    if isolated_case().is_some() {
        case();
        return;
    }
    let outcome = run_isolated(test, "the case", timeout, max_bytes);
    assert!(outcome.passed(), "{outcome}");
}
