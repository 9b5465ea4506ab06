//! The step across ranks under `mpirun`, with 1, 2, 4 and 8 ranks (`--oversubscribe`: this
//! machine has fewer cores). MPI initialises once a process, so each case launches a binary
//! of its own (`same_answers`, or the `gas_across_ranks` example, which `cargo test` builds);
//! each run has a time limit, past which the test kills it and fails (never a hung test). As
//! root, OpenMPI needs its allow-run-as-root settings, set here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one `mpirun` may take: the 8-rank run takes a few seconds here.
const LIMIT: Duration = Duration::from_secs(300);

/// Runs `same_answers` with `args` on `ranks` ranks; its output, or why it failed.
fn mpirun(ranks: u32, args: &[&str]) -> Result<String, String> {
    mpirun_program(Path::new(env!("CARGO_BIN_EXE_same_answers")), ranks, args)
}

/// Runs `program` with `args` on `ranks` ranks; its output, or why it failed.
fn mpirun_program(program: &Path, ranks: u32, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(program)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("mpirun could not start ({error}); install openmpi-bin"))?;
    let start = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            return Err(format!("{ranks} ranks: no answer within {LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        Ok(text)
    } else {
        Err(format!("{ranks} ranks: {}\n{text}", output.status))
    }
}

/// Every step of every world of `same_answers` (open and periodic boxes, uniform and
/// clustered bodies, walls and groups, bodies migrating every step, a bullet pair across the
/// faces, centres on the faces, empty bricks) gives one process's answers to the bit.
#[test]
fn ranks_give_one_process_answers_to_the_bit() {
    for ranks in [1, 2, 4, 8] {
        let output = mpirun(ranks, &[]).unwrap_or_else(|why| panic!("{why}"));
        let same = output.matches("same answers").count();
        eprint!("{output}");
        assert_eq!(
            same, 18,
            "{ranks} ranks: 6 worlds of 3 steps each\n{output}"
        );
    }
}

/// A bad body on one rank is a typed error on every rank, and so are a halo too wide for the
/// bricks and, on one rank, values for the halo or the migration not one a body, a body left
/// in another rank's brick, bricks that differ from the other ranks', and values of another
/// width (`K`) or another message length than the other ranks'.
#[test]
fn an_error_on_one_rank_is_an_error_on_every_rank() {
    for ranks in [1, 2, 4] {
        let output = mpirun(ranks, &["--errors"]).unwrap_or_else(|why| panic!("{why}"));
        let typed = output
            .matches(
                "a bad body typed, a halo too wide typed, values not one a body typed, \
                 a body in another brick typed, bricks that differ typed, \
                 settings that differ typed",
            )
            .count();
        assert_eq!(typed, ranks as usize, "{output}");
    }
}

/// A rank that exits, or panics, in the middle of the run ends the job: `mpirun` fails within
/// its time limit, never hangs. (A panic that unwinds into `MPI_Finalize` while the other
/// ranks wait in a collective hangs: `exit_on_panic` exits instead.)
#[test]
fn a_crashed_rank_ends_the_job() {
    for ranks in [1, 2, 4] {
        for how in ["--crash", "--panic"] {
            match mpirun(ranks, &[how]) {
                Ok(output) => {
                    panic!("{ranks} ranks, {how}: the job passed with a crashed rank\n{output}")
                }
                Err(why) => assert!(!why.contains("no answer within"), "{how}: {why}"),
            }
        }
    }
}

/// The `gas_across_ranks` example, which `cargo test` builds beside the binaries.
fn gas_example() -> PathBuf {
    let binaries = Path::new(env!("CARGO_BIN_EXE_same_answers"))
        .parent()
        .expect("the binaries' folder");
    let example = binaries.join("examples").join("gas_across_ranks");
    assert!(
        example.exists(),
        "{} is not built: run the whole `cargo test --manifest-path mpi/Cargo.toml` (it builds \
         the examples), or `cargo build --manifest-path mpi/Cargo.toml --examples`",
        example.display()
    );
    example
}

/// The example's gas, in a closed box (walls in open space) and in a slab (a periodic box on
/// x and y, a floor and a ceiling: walls in a periodic box), both with collision groups,
/// bodies migrating every frame: the same contacts every frame and the same final state, to
/// the bit, on 1, 2, 3, 4 and 8 ranks as the one process (`--check`), and a picture. (3 ranks:
/// three bricks on a periodic axis; 8: values relayed on z from x and y.) On 3 and 8 ranks
/// every halo, migration and values message is split into messages of 7 words (bodies and
/// values across messages, and sends of a multiple of 7 ended by an empty one): the answers
/// must not change.
#[test]
fn the_gas_across_ranks_is_the_one_process_gas_to_the_bit() {
    let example = gas_example();
    for scene in ["closed", "slab"] {
        for ranks in [1, 2, 3, 4, 8] {
            let picture =
                std::env::temp_dir().join(format!("gas_across_ranks_{scene}_{ranks}.png"));
            let _ = std::fs::remove_file(&picture);
            let words = if ranks == 3 || ranks == 8 {
                "7"
            } else {
                "268435456"
            };
            let args = [
                "--scene",
                scene,
                "--groups",
                "--bodies",
                "4000",
                "--frames",
                "10",
                "--check",
                "--message-words",
                words,
                "--out",
                picture.to_str().expect("a path in UTF-8"),
            ];
            let output =
                mpirun_program(&example, ranks, &args).unwrap_or_else(|why| panic!("{why}"));
            eprint!("{output}");
            assert!(
                output.contains(
                    "check: the same contacts and final state as one process, to the bit"
                ),
                "{scene}, {ranks} ranks:\n{output}"
            );
            let written = std::fs::metadata(&picture).map(|m| m.len()).unwrap_or(0);
            assert!(
                written > 0,
                "{scene}, {ranks} ranks: no picture at {}",
                picture.display()
            );
        }
    }
}
