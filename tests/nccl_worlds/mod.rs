//! Worlds of NCCL ranks for the multi-GPU tests (`nccl_multi_gpu.rs`, `nccl_data_parallel_gpu.rs`).
//!
//! A test never calls NCCL in the process libtest started: it starts its own binary again, once per
//! world size (1, 2 and every visible GPU), running only itself (`--exact`), with the world and a
//! seed in the environment, and `NCCL_NVLS_ENABLE=0` set by [`Command::env`] (NVLink multicast
//! stays off in every process that may make a communicator; setting it from inside a running,
//! multi-threaded test process would race with NCCL's and libtest's reads of the environment).
//!
//! - [`in_one_process`]: one child per world, which drives every rank (`Comm::from_devices`).
//! - [`one_process_per_rank`]: one child per rank. Rank 0 makes the NCCL `Id` and prints its 128
//!   bytes as hex on a line of its own; this process passes them to the other ranks in their
//!   environment (as a launcher such as torchrun does), and each calls `Comm::from_rank`.
//!   Processes, not threads, because that is how ranks are usually placed (one process per GPU) and
//!   because each then has its own NCCL state and environment.
//!
//! The seed is drawn once (or read from `PRISM_TEST_SEED` to replay a run), printed, and given to
//! every child, so all ranks draw the same inputs and each can compute every rank's reference.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prism_gpu::driver::CudaContext;
use prism_gpu::nccl::Id;
use prism_gpu::rng::SplitMix64;

/// NCCL's switch for NVLink multicast (NVLS), off in every child.
pub const NVLS_OFF: (&str, &str) = ("NCCL_NVLS_ENABLE", "0");
const WORLD: &str = "PRISM_TEST_WORLD";
const RANK: &str = "PRISM_TEST_RANK";
const SEED: &str = "PRISM_TEST_SEED";
const ID: &str = "PRISM_TEST_NCCL_ID";
/// How rank 0 announces the id on its standard output.
const ID_LINE: &str = "prism-nccl-id ";
/// A world that has not finished by then is killed: a rank that never joins would hang NCCL.
const DEADLINE: Duration = Duration::from_secs(600);

/// One rank of a world started by [`one_process_per_rank`].
pub struct Rank {
    /// This process's rank; its GPU is the device of the same ordinal.
    pub rank: usize,
    /// The number of ranks.
    pub world: usize,
    /// The world's rendezvous id.
    pub id: Id,
    /// The seed every rank shares.
    pub seed: u64,
}

/// The world sizes to run on `gpus` visible GPUs: 1, 2 and all of them (each once); prints the
/// sizes left out for want of GPUs.
pub fn worlds(test: &str, gpus: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = [1, 2, gpus].into_iter().filter(|&w| w >= 1 && w <= gpus).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if gpus < 2 {
        println!("{test}: a world of 2 ranks skipped: {gpus} GPU(s) visible, 2 needed (one per rank)");
    }
    sizes
}

/// Runs `body(world, seed)` in a child process per world size, each driving every rank of its
/// world from one thread. In a child, runs `body` for the child's world.
pub fn in_one_process(test: &str, body: impl FnOnce(usize, u64)) {
    if let Some(world) = env(WORLD) {
        return body(world, env(SEED).expect("the parent passes the seed"));
    }
    let (gpus, seed) = start(test);
    for world in worlds(test, gpus) {
        let child = spawn(test, &[(WORLD, world.to_string()), (SEED, seed.to_string())], false);
        let outcome = wait_all(vec![child]);
        report(test, &format!("world of {world} in one process"), outcome);
    }
}

/// Runs `body` in a child process per rank, for each world size. In a child, runs `body` for the
/// child's rank (rank 0 makes and announces the id first).
pub fn one_process_per_rank(test: &str, body: impl FnOnce(Rank)) {
    if let Some(rank) = env(RANK) {
        let world = env(WORLD).expect("the parent passes the world size");
        let seed = env(SEED).expect("the parent passes the seed");
        let id = match std::env::var(ID) {
            Ok(hex) => Id::uninit(id_from_hex(&hex)),
            Err(_) => {
                assert_eq!(rank, 0, "only rank 0 makes the id");
                let id = Id::new().expect("NCCL makes an id");
                // Its own line on stdout, which the parent reads before it starts the other ranks.
                println!("\n{ID_LINE}{}", id_to_hex(id.internal()));
                id
            }
        };
        return body(Rank { rank, world, id, seed });
    }
    let (gpus, seed) = start(test);
    for world in worlds(test, gpus) {
        let vars = |rank: usize| {
            vec![(RANK, rank.to_string()), (WORLD, world.to_string()), (SEED, seed.to_string())]
        };
        let mut first = spawn(test, &vars(0), true);
        let mut lines = BufReader::new(first.child.stdout.take().expect("piped"));
        let mut seen = String::new();
        let hex = loop {
            let mut line = String::new();
            if lines.read_line(&mut line).expect("reading rank 0's output") == 0 {
                let outcome = wait_all(vec![first]);
                panic!("{test}: rank 0 of {world} ended before announcing the id:\n{seen}{outcome:?}");
            }
            if let Some(hex) = line.trim_end().strip_prefix(ID_LINE) {
                break hex.to_string();
            }
            seen.push_str(&line);
        };
        // The rest of rank 0's output, drained so that it never blocks on a full pipe.
        first.stdout = Some(drain(lines));
        let mut children = vec![first];
        for rank in 1..world {
            let mut v = vars(rank);
            v.push((ID, hex.clone()));
            children.push(spawn(test, &v, false));
        }
        let mut outcome = wait_all(children);
        outcome[0].1.insert_str(0, &seen);
        report(test, &format!("world of {world}, one process per rank"), outcome);
    }
}

/// The GPU count and the run's seed (both printed).
fn start(test: &str) -> (usize, u64) {
    let gpus = CudaContext::device_count().expect("a CUDA driver") as usize;
    assert!(gpus >= 1, "{test} needs a CUDA GPU; the driver sees none");
    let seed = env(SEED).unwrap_or_else(|| SplitMix64::from_time().next_u64());
    println!("{test}: {gpus} GPU(s) visible, seed {seed} (replay with {SEED}={seed})");
    (gpus, seed)
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// A child and the threads collecting its output.
struct Running {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: JoinHandle<String>,
}

/// Starts this test binary again, running `test` alone with `vars` and NVLink multicast off.
/// With `read_stdout` the caller reads the child's standard output itself.
fn spawn(test: &str, vars: &[(&str, String)], read_stdout: bool) -> Running {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(NVLS_OFF.0, NVLS_OFF.1)
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting a rank");
    let stderr = drain(child.stderr.take().expect("piped"));
    let stdout = if read_stdout { None } else { Some(drain(child.stdout.take().expect("piped"))) };
    Running { child, stdout, stderr }
}

fn drain(mut from: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

/// Waits for every child; each one's exit status and its output. Once one has failed, or at the
/// deadline, the others are killed (status None): ranks whose peer is gone wait for it forever.
fn wait_all(mut children: Vec<Running>) -> Vec<(Option<std::process::ExitStatus>, String)> {
    let deadline = Instant::now() + DEADLINE;
    let mut statuses = vec![None; children.len()];
    let failed = |s: &[Option<std::process::ExitStatus>]| s.iter().flatten().any(|s| !s.success());
    while statuses.iter().any(Option::is_none) && !failed(&statuses) && Instant::now() < deadline {
        for (status, running) in statuses.iter_mut().zip(&mut children) {
            if status.is_none() {
                *status = running.child.try_wait().expect("polling a rank");
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    children
        .into_iter()
        .zip(statuses)
        .map(|(mut running, status)| {
            if status.is_none() {
                // A peer failed or the deadline passed: this child only, by its handle.
                let _ = running.child.kill();
                let _ = running.child.wait();
            }
            let out = running.stdout.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
            (status, out + &running.stderr.join().unwrap_or_default())
        })
        .collect()
}

/// Prints every child's output and fails unless all succeeded.
fn report(test: &str, what: &str, outcome: Vec<(Option<std::process::ExitStatus>, String)>) {
    for (i, (status, out)) in outcome.iter().enumerate() {
        println!("---- {test}, {what}: process {i} ({status:?}) ----\n{out}");
    }
    // A failure first: the processes killed because of it are not the news.
    if let Some((i, s)) =
        outcome.iter().enumerate().find_map(|(i, (s, _))| s.filter(|s| !s.success()).map(|s| (i, s)))
    {
        panic!("{test}, {what}: process {i} failed ({s}); its output is above");
    }
    if let Some(i) = outcome.iter().position(|(s, _)| s.is_none()) {
        panic!("{test}, {what}: process {i} was still running after {DEADLINE:?} and was killed");
    }
    println!("{test}, {what}: every process passed");
}

fn id_to_hex(bytes: &[std::ffi::c_char; 128]) -> String {
    bytes.iter().map(|&b| format!("{:02x}", b as u8)).collect()
}

fn id_from_hex(hex: &str) -> [std::ffi::c_char; 128] {
    assert_eq!(hex.len(), 256, "an NCCL id is 128 bytes");
    let mut bytes = [0 as std::ffi::c_char; 128];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits") as std::ffi::c_char;
    }
    bytes
}
