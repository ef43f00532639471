//! The commit the command line was built from (`PRISM_COMMIT`), quoted with every benchmark run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // cli/ sits in the repository root.
    let root = manifest.parent().unwrap_or(&manifest);
    println!("cargo:rustc-env=PRISM_COMMIT={}", commit(root));
}

/// The short hash of the checked-out commit, `+dirty` when the work tree differs; `unknown` outside git.
///
/// Reruns when a commit moves HEAD or a branch, and when the sources built into the library change
/// (so `+dirty` follows edits); not on index refreshes, which `git status` makes all the time.
fn commit(root: &Path) -> String {
    for watched in
        [".git/HEAD", ".git/refs/heads", ".git/packed-refs", "src", "cuda", "Cargo.toml", "cli/src"]
    {
        let path = root.join(watched);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let git = |args: &[&str]| Command::new("git").current_dir(root).args(args).output().ok();
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(out) if out.status.success() => {
            let hash = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
            if dirty {
                format!("{hash}+dirty")
            } else {
                hash
            }
        }
        _ => "unknown".to_string(),
    }
}
