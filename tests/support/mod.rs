//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::process::Command;

/// Builds `tests/support/fake_libcuda.c` into a shared library (once per variant and test binary)
/// with the system C compiler (`$CC`, else `cc`) and returns its path.
pub fn fake_libcuda(stub: bool) -> PathBuf {
    let name = if stub { "libcuda-stub.so" } else { "libcuda-fake.so" };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-libcuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating the fake driver's folder");
    let out = dir.join(name);
    if !out.exists() {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_libcuda.c");
        let partial = dir.join(format!("{name}.{:?}.partial", std::thread::current().id()));
        let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
        cc.args(["-shared", "-fPIC", "-O1", "-o"]).arg(&partial).arg(&source);
        if stub {
            cc.arg("-DFAKE_STUB");
        }
        let status = cc.status().expect("running the C compiler for the fake libcuda");
        assert!(status.success(), "compiling the fake libcuda failed: {status}");
        std::fs::rename(&partial, &out).expect("moving the fake driver into place");
    }
    out
}

/// Whether checks that make deliberately failing CUDA calls are switched off, and says so when
/// they are: `PRISM_SKIP_FAILING_CALLS=1`, which `scripts/device-run-tests` sets under
/// compute-sanitizer (it counts every failing API call as an error).
pub fn skip_failing_calls(what: &str) -> bool {
    let skip = std::env::var_os("PRISM_SKIP_FAILING_CALLS").is_some_and(|v| v == "1");
    if skip {
        eprintln!("skipped (PRISM_SKIP_FAILING_CALLS=1): {what}");
    }
    skip
}

/// A small xorshift64 generator for the randomised tests; each binary adds the draws it needs.
pub struct Rng(pub u64);

impl Rng {
    /// Seeded from the clock (odd, never zero); the seed is printed under `name`.
    pub fn seeded(name: &str) -> Self {
        let seed = clock_seed();
        println!("{name}: seed {seed:#x}");
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [-1, 1), from the top 24 bits of the next draw.
    pub fn unit(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// An odd seed from the clock's nanoseconds.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
}
