//! An on-disk cache of NVRTC compilations, used by [`compile_ptx`](super::compile_ptx) and
//! [`compile_ptx_with_opts`](super::compile_ptx_with_opts). (A prism-gpu extension.)
//!
//! An entry is found by a [`Key`]: a SHA-256 of what the output depends on (the source, the full
//! option list, the program name, NVRTC's version and the target architecture), never of the
//! output itself. Each entry is one file `<key in hex>.nvrtc` holding a header (magic, key,
//! length, SHA-256 of the payload) and NVRTC's PTX exactly as it returned it.
//!
//! - Writes go to a temporary file in the same folder, then are renamed over the entry: a reader
//!   (another thread or process) sees no entry or a whole one, never a partial file.
//! - An entry that fails its checks (truncated, damaged, another key) is a miss and is removed.
//! - Above the size cap, the least recently used entries go first (a hit refreshes the file's
//!   modification time).
//! - Anything the cache cannot do (create its folder, read, write) makes a miss, never an error;
//!   a compile error is returned as is and not cached.
//!
//! Configuration, read once per process ([`NvrtcCache::global`]): `PRISM_CACHE_DIR` (the folder;
//! `off` or empty disables the cache; default `$XDG_CACHE_HOME/prism-gpu/nvrtc`, else
//! `~/.cache/prism-gpu/nvrtc`) and `PRISM_CACHE_MAX_BYTES` (the cap, default 256 MiB).

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use super::compile::{compile_to_bytes, CompileError, CompileOptions, Ptx};

use sha2::{Digest, Sha256};

/// The variable naming the cache folder (`off` or empty: no cache).
pub const DIR_VAR: &str = "PRISM_CACHE_DIR";
/// The variable giving the size cap in bytes.
pub const MAX_BYTES_VAR: &str = "PRISM_CACHE_MAX_BYTES";
/// The size cap when [`MAX_BYTES_VAR`] is not set (or not a number).
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// First bytes of every entry; a new layout gets a new magic (old entries then read as misses).
const MAGIC: &[u8; 8] = b"PRNVRTC1";
/// Magic, key, payload length, payload checksum.
const HEADER_LEN: usize = 8 + 32 + 8 + 32;
const ENTRY_SUFFIX: &str = ".nvrtc";
const TEMP_PREFIX: &str = ".tmp-";
/// A temporary file this old was left by a process that died mid-write.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// What a compilation's output depends on, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl Key {
    /// The key of compiling `source` with `options` (as [`CompileOptions::build`] makes them) and
    /// program `name` on NVRTC `nvrtc_version` (`nvrtcVersion`'s major, minor), for the
    /// architecture `--gpu-architecture`/`-arch` names, else NVRTC's default (which its version
    /// fixes).
    ///
    /// `None` when the output may depend on files the key cannot see: an include path or
    /// pre-included header among the options, or an `#include` that is not `<...>` (angle
    /// includes without an include path are NVRTC's built-in headers, fixed by its version).
    pub fn of_program(
        source: &str,
        options: &[String],
        name: Option<&str>,
        nvrtc_version: (i32, i32),
    ) -> Option<Key> {
        if reads_user_files(source, options) {
            return None;
        }
        let mut h = Sha256::new();
        // Every field is length-prefixed, so no two different inputs hash the same bytes.
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"prism-gpu nvrtc cache v1");
        field(&nvrtc_version.0.to_le_bytes());
        field(&nvrtc_version.1.to_le_bytes());
        field(target_arch(options).unwrap_or("nvrtc-default").as_bytes());
        match name {
            None => field(b"unnamed"),
            Some(name) => {
                field(b"named");
                field(name.as_bytes());
            }
        }
        field(&(options.len() as u64).to_le_bytes());
        for option in options {
            field(option.as_bytes());
        }
        field(source.as_bytes());
        Some(Key(h.finalize().into()))
    }

    fn file_name(&self) -> String {
        let mut name: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        name.push_str(ENTRY_SUFFIX);
        name
    }
}

/// The architecture the options name (the last one given), if any.
fn target_arch(options: &[String]) -> Option<&str> {
    let mut arch = None;
    let mut options = options.iter();
    while let Some(option) = options.next() {
        for flag in ["--gpu-architecture", "-arch"] {
            if let Some(rest) = option.strip_prefix(flag) {
                if let Some(value) = rest.strip_prefix('=') {
                    arch = Some(value);
                } else if rest.is_empty() {
                    arch = options.next().map(String::as_str);
                }
            }
        }
    }
    arch
}

/// Whether the compilation may read files from disk (see [`Key::of_program`]).
fn reads_user_files(source: &str, options: &[String]) -> bool {
    let file_options = ["-I", "--include-path", "--pre-include", "-include"];
    let by_option = options.iter().any(|o| file_options.iter().any(|f| o.starts_with(f)));
    let by_directive = source.lines().any(|line| {
        let Some(directive) = line.trim_start().strip_prefix('#') else { return false };
        let Some(rest) = directive.trim_start().strip_prefix("include") else { return false };
        // `include_next` too; anything but `<...>` (a quoted name, a macro) may be a user file.
        let target = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        !target.trim_start().starts_with('<')
    });
    by_option || by_directive
}

/// The cache: a folder (or none: off), a size cap, and this process's hit and miss counts.
#[derive(Debug)]
pub struct NvrtcCache {
    dir: Option<PathBuf>,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What [`NvrtcCache::stats`] finds (or [`NvrtcCache::clear`] removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    /// The folder; `None` when the cache is off.
    pub dir: Option<PathBuf>,
    /// Entries.
    pub entries: u64,
    /// Their size on disk.
    pub bytes: u64,
    /// The size cap.
    pub max_bytes: u64,
}

impl NvrtcCache {
    /// A cache in `dir` (created when first written) holding at most `max_bytes`.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self::with_dir(Some(dir.into()), max_bytes)
    }

    /// No cache: every compilation is a miss.
    pub fn off() -> Self {
        Self::with_dir(None, DEFAULT_MAX_BYTES)
    }

    fn with_dir(dir: Option<PathBuf>, max_bytes: u64) -> Self {
        NvrtcCache { dir, max_bytes, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The cache `PRISM_CACHE_DIR` and `PRISM_CACHE_MAX_BYTES` describe (see the module docs).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let max_bytes =
            var(MAX_BYTES_VAR).and_then(|v| v.to_str()?.trim().parse().ok()).unwrap_or(DEFAULT_MAX_BYTES);
        Self::with_dir(crate::cache_dir::folder(&var, DIR_VAR, "nvrtc"), max_bytes)
    }

    /// The process's cache, configured from the environment when first used; the compile
    /// functions go through it.
    pub fn global() -> &'static NvrtcCache {
        static GLOBAL: OnceLock<NvrtcCache> = OnceLock::new();
        GLOBAL.get_or_init(Self::from_env)
    }

    /// The folder, `None` when the cache is off.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Compilations this cache answered from disk.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Compilations this cache passed on to the compiler.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// [`compile_ptx_with_opts`](super::compile_ptx_with_opts) through this cache. The result is
    /// byte for byte what the compiler returned when the entry was made.
    pub fn compile_ptx_with_opts<S: AsRef<str>>(
        &self,
        src: S,
        opts: CompileOptions,
    ) -> Result<Ptx, CompileError> {
        let src = src.as_ref();
        let options = opts.clone().build();
        // Without NVRTC's version there is no key (and the compile reports why NVRTC is missing).
        let key = super::result::version()
            .ok()
            .and_then(|version| Key::of_program(src, &options, opts.name.as_deref(), version));
        match key {
            Some(key) => self.get_or_compile(&key, || compile_to_bytes(src, opts)),
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                compile_to_bytes(src, opts)
            }
        }
        .map(Ptx::from_nvrtc_bytes)
    }

    /// The bytes stored under `key`, or else `compile()`'s, stored when it succeeds (an error is
    /// returned as is, not stored). The cache itself never fails: what it cannot do is a miss.
    pub fn get_or_compile<E>(
        &self,
        key: &Key,
        compile: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Vec<u8>, E> {
        let Some(dir) = &self.dir else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return compile();
        };
        let path = dir.join(key.file_name());
        if let Some(payload) = read_entry(&path, key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            // Least recently used goes first: a hit makes the entry the newest. A read-only
            // cache still serves hits.
            let _ = fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(SystemTime::now()));
            return Ok(payload);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let payload = compile()?;
        // An entry larger than the whole cache is not kept (nor would it evict the others).
        let fits = (HEADER_LEN + payload.len()) as u64 <= self.max_bytes;
        if fits && Self::store(dir, &path, key, &payload).is_ok() {
            self.evict(dir, &path);
        }
        Ok(payload)
    }

    /// Writes the entry to a temporary file beside it, then renames it into place (atomic on the
    /// same file system). No fsync: an entry a crash leaves short fails its checksum (a miss).
    fn store(dir: &Path, path: &Path, key: &Key, payload: &[u8]) -> io::Result<()> {
        let entry = encode_entry(key, payload);
        fs::create_dir_all(dir)?;
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{}-{}-{}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed),
            key.file_name()
        ));
        let written = fs::write(&temp, &entry).and_then(|()| fs::rename(&temp, path));
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }

    /// Removes the least recently used entries (never `keep`, the one just written) until the
    /// cache fits its cap, and temporary files left by dead writers. Failures are ignored:
    /// another process may be evicting the same files.
    fn evict(&self, dir: &Path, keep: &Path) {
        let Ok(listing) = Listing::of(dir) else { return };
        let now = SystemTime::now();
        for temp in &listing.temps {
            if now.duration_since(temp.modified).is_ok_and(|age| age > STALE_TEMP) {
                let _ = fs::remove_file(&temp.path);
            }
        }
        let mut total: u64 = listing.entries.iter().map(|e| e.len).sum();
        let mut entries = listing.entries;
        entries.sort_by_key(|e| e.modified);
        for entry in entries.iter().filter(|e| e.path != keep) {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&entry.path).is_ok() {
                total -= entry.len;
            }
        }
    }

    /// The entries on disk now.
    pub fn stats(&self) -> CacheStats {
        let listing = self.dir.as_deref().and_then(|dir| Listing::of(dir).ok()).unwrap_or_default();
        self.summary(&listing.entries)
    }

    /// Removes every entry (and temporary file); returns what was removed. An error only when a
    /// file that is there cannot be removed.
    pub fn clear(&self) -> io::Result<CacheStats> {
        let listing = match self.dir.as_deref() {
            Some(dir) if dir.is_dir() => Listing::of(dir)?,
            _ => Listing::default(), // off, or never created: nothing to remove
        };
        for file in listing.entries.iter().chain(&listing.temps) {
            match fs::remove_file(&file.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(self.summary(&listing.entries))
    }

    fn summary(&self, entries: &[FileInfo]) -> CacheStats {
        CacheStats {
            dir: self.dir.clone(),
            entries: entries.len() as u64,
            bytes: entries.iter().map(|e| e.len).sum(),
            max_bytes: self.max_bytes,
        }
    }
}

/// The entries' checksum.
fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

fn encode_entry(key: &Key, payload: &[u8]) -> Vec<u8> {
    let mut entry = Vec::with_capacity(HEADER_LEN + payload.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&key.0);
    entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    entry.extend_from_slice(&sha256(payload));
    entry.extend_from_slice(payload);
    entry
}

/// The payload of the entry at `path` if it is whole and belongs to `key`; a damaged entry is
/// removed (a later write replaces it anyway).
fn read_entry(path: &Path, key: &Key) -> Option<Vec<u8>> {
    let mut entry = fs::read(path).ok()?;
    let valid = entry.len() >= HEADER_LEN
        && entry[..8] == MAGIC[..]
        && entry[8..40] == key.0
        && entry[40..48] == ((entry.len() - HEADER_LEN) as u64).to_le_bytes()
        && entry[48..80] == sha256(&entry[HEADER_LEN..]);
    if !valid {
        let _ = fs::remove_file(path);
        return None;
    }
    Some(entry.split_off(HEADER_LEN))
}

/// A cache file's path, size and modification time.
#[derive(Debug)]
struct FileInfo {
    path: PathBuf,
    len: u64,
    modified: SystemTime,
}

/// The cache's files in a folder: entries and temporary files (anything else is left alone).
#[derive(Debug, Default)]
struct Listing {
    entries: Vec<FileInfo>,
    temps: Vec<FileInfo>,
}

impl Listing {
    fn of(dir: &Path) -> io::Result<Self> {
        let mut listing = Listing::default();
        for item in fs::read_dir(dir)? {
            // A file removed by another process while we list is skipped.
            let Ok(item) = item else { continue };
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let list = if name.starts_with(TEMP_PREFIX) {
                &mut listing.temps
            } else if name.ends_with(ENTRY_SUFFIX) {
                &mut listing.entries
            } else {
                continue;
            };
            let Ok(meta) = item.metadata() else { continue };
            if meta.is_file() {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                list.push(FileInfo { path: item.path(), len: meta.len(), modified });
            }
        }
        Ok(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::{Arc, Barrier};

    /// A fresh folder under the system's temp folder, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            static COUNT: AtomicU64 = AtomicU64::new(0);
            let unique = format!(
                "prism-nvrtc-cache-{name}-{}-{}-{}",
                std::process::id(),
                COUNT.fetch_add(1, Ordering::Relaxed),
                SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos()
            );
            TempDir(std::env::temp_dir().join(unique))
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn key(source: &str) -> Key {
        Key::of_program(source, &[], None, (12, 8)).unwrap()
    }

    /// A stand-in for NVRTC: output that depends on the source, counting its calls.
    fn fake_ptx(source: &str, calls: &Cell<u32>) -> Result<Vec<u8>, String> {
        calls.set(calls.get() + 1);
        let mut out = format!("// PTX of {source}\n.version 9.0\n").into_bytes();
        out.push(0);
        Ok(out)
    }

    fn entry_files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
    }

    #[test]
    fn hit_after_miss_returns_the_same_bytes() {
        let dir = TempDir::new("hit");
        let cache = NvrtcCache::new(&dir.0, DEFAULT_MAX_BYTES);
        let calls = Cell::new(0);
        let k = key("kernel a");
        let cold = cache.get_or_compile(&k, || fake_ptx("kernel a", &calls)).unwrap();
        let warm = cache.get_or_compile(&k, || fake_ptx("kernel a", &calls)).unwrap();
        assert_eq!(calls.get(), 1, "the second call is a hit");
        assert_eq!(warm, cold);
        assert_eq!(warm, fake_ptx("kernel a", &Cell::new(0)).unwrap());
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
        // Another cache object on the same folder (another process) hits too.
        let other = NvrtcCache::new(&dir.0, DEFAULT_MAX_BYTES);
        assert_eq!(other.get_or_compile(&k, || Err("must not compile".to_string())).unwrap(), cold);
        let stats = other.stats();
        assert_eq!((stats.entries, stats.bytes), (1, (HEADER_LEN + cold.len()) as u64));
        assert_eq!(stats.dir.as_deref(), Some(dir.0.as_path()));
    }

    #[test]
    fn compile_errors_are_not_cached() {
        let dir = TempDir::new("error");
        let cache = NvrtcCache::new(&dir.0, DEFAULT_MAX_BYTES);
        let k = key("broken");
        let err = cache.get_or_compile(&k, || Err::<Vec<u8>, _>("syntax error".to_string()));
        assert_eq!(err, Err("syntax error".to_string()));
        assert_eq!(cache.stats().entries, 0);
        let calls = Cell::new(0);
        cache.get_or_compile(&k, || fake_ptx("broken", &calls)).unwrap();
        assert_eq!(calls.get(), 1, "the failed compile left nothing behind");
    }

    #[test]
    fn key_depends_on_every_input() {
        let src = "extern \"C\" __global__ void k() {}";
        let opts = |o: &[&str]| o.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let base = Key::of_program(src, &opts(&["--ftz=true"]), None, (12, 8)).unwrap();
        assert_eq!(base, Key::of_program(src, &opts(&["--ftz=true"]), None, (12, 8)).unwrap());
        let variants = [
            Key::of_program("extern \"C\" __global__ void j() {}", &opts(&["--ftz=true"]), None, (12, 8)),
            Key::of_program(src, &opts(&["--ftz=false"]), None, (12, 8)),
            Key::of_program(src, &opts(&[]), None, (12, 8)),
            Key::of_program(src, &opts(&["--ftz=true", "--fmad=false"]), None, (12, 8)),
            Key::of_program(src, &opts(&["--ftz=true"]), Some("k.cu"), (12, 8)),
            Key::of_program(src, &opts(&["--ftz=true"]), None, (12, 9)),
            Key::of_program(src, &opts(&["--ftz=true"]), None, (13, 8)),
            Key::of_program(src, &opts(&["--ftz=true", "--gpu-architecture=compute_90"]), None, (12, 8)),
            Key::of_program(src, &opts(&["--ftz=true", "--gpu-architecture=sm_90"]), None, (12, 8)),
            // Option boundaries matter: one option is not two.
            Key::of_program(src, &opts(&["--ftz=true--fmad=false"]), None, (12, 8)),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(v.unwrap(), base, "variant {i}");
            for (j, w) in variants.iter().enumerate().skip(i + 1) {
                assert_ne!(v.unwrap(), w.unwrap(), "variants {i} and {j}");
            }
        }
    }

    #[test]
    fn key_is_stable_across_builds() {
        // The key's bytes, computed independently (Python's hashlib over the documented field
        // encoding): a change here orphans every cache on disk, so it must be deliberate.
        let options = ["--ftz=true".to_string(), "--gpu-architecture=compute_90".to_string()];
        let k =
            Key::of_program("extern \"C\" __global__ void k() {}", &options, Some("k.cu"), (12, 8)).unwrap();
        assert_eq!(k.file_name(), "45cc19ab2e8e2076c3f3a07385ac882b79da6857fd550671301158783529cd15.nvrtc");
    }

    #[test]
    fn architecture_comes_from_any_spelling_of_the_option() {
        let arch =
            |o: &[&str]| target_arch(&o.iter().map(|s| s.to_string()).collect::<Vec<_>>()).map(String::from);
        assert_eq!(arch(&[]), None);
        assert_eq!(arch(&["--ftz=true"]), None);
        assert_eq!(arch(&["--gpu-architecture=compute_80"]).as_deref(), Some("compute_80"));
        assert_eq!(arch(&["-arch=sm_90a"]).as_deref(), Some("sm_90a"));
        assert_eq!(arch(&["-arch", "sm_75", "--ftz=true"]).as_deref(), Some("sm_75"));
        assert_eq!(arch(&["--gpu-architecture", "compute_90"]).as_deref(), Some("compute_90"));
        assert_eq!(arch(&["-arch=sm_80", "-arch=sm_90"]).as_deref(), Some("sm_90"), "the last one wins");
    }

    #[test]
    fn compilations_that_read_files_are_not_keyed() {
        let v = (12, 8);
        let none: &[String] = &[];
        assert!(Key::of_program("#include <cuda_fp16.h>\n__global__ void k() {}", none, None, v).is_some());
        assert!(Key::of_program("  #  include <cuda_fp16.h>", none, None, v).is_some());
        assert!(Key::of_program("#include \"mine.h\"", none, None, v).is_none());
        assert!(Key::of_program("# include HEADER_MACRO", none, None, v).is_none());
        assert!(Key::of_program("#include_next \"x.h\"", none, None, v).is_none());
        for option in ["-I/usr/include", "--include-path=/x", "--pre-include=a.h", "-include", "-Iinc"] {
            let options = [option.to_string()];
            assert!(Key::of_program("__global__ void k() {}", &options, None, v).is_none(), "{option}");
        }
    }

    #[test]
    fn damaged_entries_are_misses_and_are_removed() {
        let dir = TempDir::new("damaged");
        let cache = NvrtcCache::new(&dir.0, DEFAULT_MAX_BYTES);
        let k = key("kernel d");
        let good = cache.get_or_compile(&k, || fake_ptx("kernel d", &Cell::new(0))).unwrap();
        let path = dir.0.join(k.file_name());
        let whole = fs::read(&path).unwrap();
        let mut flipped_payload = whole.clone();
        *flipped_payload.last_mut().unwrap() ^= 1;
        let mut flipped_checksum = whole.clone();
        flipped_checksum[50] ^= 0x80;
        let mut other_key = whole.clone();
        other_key[8..40].copy_from_slice(&key("another kernel").0);
        let mut longer = whole.clone();
        longer.push(b'x');
        let damages: [(&str, Vec<u8>); 7] = [
            ("empty", Vec::new()),
            ("truncated header", whole[..HEADER_LEN - 1].to_vec()),
            ("truncated payload", whole[..whole.len() - 3].to_vec()),
            ("flipped payload bit", flipped_payload),
            ("flipped checksum bit", flipped_checksum),
            ("another key's entry", other_key),
            ("trailing byte", longer),
        ];
        for (what, bytes) in damages {
            fs::write(&path, &bytes).unwrap();
            let calls = Cell::new(0);
            let got = cache.get_or_compile(&k, || fake_ptx("kernel d", &calls)).unwrap();
            assert_eq!(calls.get(), 1, "{what}: a miss");
            assert_eq!(got, good, "{what}: the compiler's bytes, not the damaged ones");
            assert_eq!(fs::read(&path).unwrap(), whole, "{what}: replaced by a whole entry");
        }
        // Damaged and left alone (no compile succeeds): removed, not kept.
        fs::write(&path, b"garbage").unwrap();
        assert!(cache.get_or_compile(&k, || Err::<Vec<u8>, _>("fails")).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn an_unusable_folder_is_a_miss_not_an_error() {
        let dir = TempDir::new("unusable");
        fs::create_dir_all(&dir.0).unwrap();
        let file = dir.0.join("a-file");
        fs::write(&file, b"not a folder").unwrap();
        // A folder that cannot be created (its parent is a file) ...
        let cache = NvrtcCache::new(file.join("nvrtc"), DEFAULT_MAX_BYTES);
        let calls = Cell::new(0);
        for _ in 0..2 {
            let got = cache.get_or_compile(&key("kernel u"), || fake_ptx("kernel u", &calls)).unwrap();
            assert_eq!(got, fake_ptx("kernel u", &Cell::new(0)).unwrap());
        }
        assert_eq!((calls.get(), cache.hits(), cache.misses()), (2, 0, 2));
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.clear().unwrap().entries, 0);
        // ... and a read-only one (where permissions bind: not for root).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let ro = dir.0.join("read-only");
            fs::create_dir(&ro).unwrap();
            fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
            let cache = NvrtcCache::new(&ro, DEFAULT_MAX_BYTES);
            let got = cache.get_or_compile(&key("kernel r"), || fake_ptx("kernel r", &Cell::new(0))).unwrap();
            assert_eq!(got, fake_ptx("kernel r", &Cell::new(0)).unwrap());
            fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Off: never touches the disk.
        let off = NvrtcCache::off();
        let calls = Cell::new(0);
        off.get_or_compile(&key("kernel o"), || fake_ptx("kernel o", &calls)).unwrap();
        off.get_or_compile(&key("kernel o"), || fake_ptx("kernel o", &calls)).unwrap();
        assert_eq!(calls.get(), 2);
        assert_eq!(off.stats(), CacheStats { dir: None, entries: 0, bytes: 0, max_bytes: DEFAULT_MAX_BYTES });
    }

    #[test]
    fn least_recently_used_entries_go_first() {
        let dir = TempDir::new("lru");
        let payload = |i: u8| vec![i; 1000];
        let entry_len = (HEADER_LEN + 1000) as u64;
        // Room for three entries, not four.
        let cache = NvrtcCache::new(&dir.0, 3 * entry_len + entry_len / 2);
        let keys: Vec<Key> = (0..4).map(|i| key(&format!("kernel {i}"))).collect();
        let hour = Duration::from_secs(3600);
        let start = SystemTime::now() - 10 * hour;
        for (i, k) in keys[..3].iter().enumerate() {
            cache.get_or_compile(k, || Ok::<_, ()>(payload(i as u8))).unwrap();
            // Explicit times: file systems with coarse clocks would otherwise tie.
            let f = fs::OpenOptions::new().write(true).open(dir.0.join(k.file_name())).unwrap();
            f.set_modified(start + hour * i as u32).unwrap();
        }
        // Entry 0 is the oldest written but the most recently used.
        assert_eq!(cache.get_or_compile(&keys[0], || Err(())).unwrap(), payload(0));
        cache.get_or_compile(&keys[3], || Ok::<_, ()>(payload(3))).unwrap();
        let kept: Vec<bool> = keys.iter().map(|k| dir.0.join(k.file_name()).exists()).collect();
        assert_eq!(kept, [true, false, true, true], "entry 1 was the least recently used");
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes), (3, 3 * entry_len));
        assert!(stats.bytes <= stats.max_bytes);
        // An entry larger than the whole cache is returned but not kept.
        let small = NvrtcCache::new(&dir.0, entry_len - 1);
        assert_eq!(small.get_or_compile(&key("big"), || Ok::<_, ()>(payload(9))).unwrap(), payload(9));
        assert!(!dir.0.join(key("big").file_name()).exists());
        // Clearing removes them all and says what it removed.
        let cleared = cache.clear().unwrap();
        assert_eq!((cleared.entries, cleared.bytes), (3, 3 * entry_len));
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn concurrent_writers_leave_one_whole_entry() {
        let dir = TempDir::new("concurrent");
        let threads = 8;
        let barrier = Arc::new(Barrier::new(threads));
        let k = key("kernel c");
        // Large enough that writes overlap in time.
        let expected: Vec<u8> = (0..400_000u32).map(|i| (i % 253) as u8).collect();
        let results: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let barrier = barrier.clone();
                    let expected = &expected;
                    let dir = &dir.0;
                    s.spawn(move || {
                        // One cache object per thread: like separate processes.
                        let cache = NvrtcCache::new(dir, DEFAULT_MAX_BYTES);
                        barrier.wait();
                        cache.get_or_compile(&k, || Ok::<_, ()>(expected.clone())).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(|r| *r == expected));
        assert_eq!(entry_files(&dir.0), [dir.0.join(k.file_name())], "one entry, no temporary files");
        let cache = NvrtcCache::new(&dir.0, DEFAULT_MAX_BYTES);
        assert_eq!(cache.get_or_compile(&k, || Err(())).unwrap(), expected, "and it is whole");
    }

    #[test]
    fn readers_never_see_a_partial_file() {
        let dir = TempDir::new("readers");
        fs::create_dir_all(&dir.0).unwrap();
        let k = key("kernel p");
        let path = dir.0.join(k.file_name());
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let whole = encode_entry(&k, &payload);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut whole_reads = 0;
                while !done.load(Ordering::Relaxed) {
                    // The file is absent (not yet written) or whole, never short.
                    if let Ok(bytes) = fs::read(&path) {
                        assert!(bytes == whole, "read {} of {} bytes", bytes.len(), whole.len());
                        whole_reads += 1;
                    }
                }
                whole_reads
            });
            let writers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..30 {
                            NvrtcCache::store(&dir.0, &path, &k, &payload).unwrap();
                        }
                    })
                })
                .collect();
            writers.into_iter().for_each(|w| w.join().unwrap());
            done.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0, "the reader read while the writers wrote");
        });
        assert_eq!(entry_files(&dir.0), [path], "no temporary files left");
    }

    #[test]
    fn configuration_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(v))
        };
        let cache = NvrtcCache::from_vars(vars(&[("HOME", "/home/u")]));
        assert_eq!(cache.dir(), Some(Path::new("/home/u/.cache/prism-gpu/nvrtc")));
        assert_eq!(cache.max_bytes, DEFAULT_MAX_BYTES);
        let cache = NvrtcCache::from_vars(vars(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]));
        assert_eq!(cache.dir(), Some(Path::new("/xdg/prism-gpu/nvrtc")));
        // A relative XDG_CACHE_HOME is invalid by the XDG spec: ignored.
        let cache = NvrtcCache::from_vars(vars(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "rel")]));
        assert_eq!(cache.dir(), Some(Path::new("/home/u/.cache/prism-gpu/nvrtc")));
        let cache =
            NvrtcCache::from_vars(vars(&[("HOME", "/h"), (DIR_VAR, "/c"), (MAX_BYTES_VAR, " 4096 ")]));
        assert_eq!((cache.dir(), cache.max_bytes), (Some(Path::new("/c")), 4096));
        assert_eq!(NvrtcCache::from_vars(vars(&[("HOME", "/h"), (DIR_VAR, "off")])).dir(), None);
        assert_eq!(NvrtcCache::from_vars(vars(&[("HOME", "/h"), (DIR_VAR, "")])).dir(), None);
        assert_eq!(NvrtcCache::from_vars(vars(&[])).dir(), None, "nowhere to put it");
        let cache = NvrtcCache::from_vars(vars(&[(DIR_VAR, "/c"), (MAX_BYTES_VAR, "lots")]));
        assert_eq!(cache.max_bytes, DEFAULT_MAX_BYTES);
    }
}
