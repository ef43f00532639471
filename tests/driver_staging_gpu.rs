//! GPU tests of large pageable copies (which prism-gpu's engine stages through page-locked
//! buffers of 8 MiB, four per copy): odd sizes around the chunk and pipeline boundaries in both
//! directions, several threads at once, and two streams without a host sync between them. Each
//! staged copy is checked against a direct copy through pinned memory, on random data, with
//! poisoned destinations. Run with `cargo test --release -- --include-ignored` on a CUDA machine.
//!
//! Our engine only: the staging is ours, and cudarc 0.19's `memcpy_dtoh` into a host slice longer
//! than the source copies the destination's length and fails with CUDA_ERROR_INVALID_VALUE (seen
//! on the H100 with `legacy-gpu`), where ours copies the source's length as the docs promise.
#![cfg(not(feature = "legacy-gpu"))]

use std::sync::Arc;

use prism_gpu::driver::{CudaContext, CudaSlice, CudaStream};

const MIB: usize = 1 << 20;
const CHUNK: usize = 8 * MIB;
const POISON: u8 = 0xA5;

/// Byte counts around the staging threshold, a chunk, and the four-buffer pipeline.
const SIZES: [usize; 8] = [
    CHUNK - 1,
    CHUNK,
    CHUNK + 1,
    2 * CHUNK + 4093,
    4 * CHUNK - 3,
    4 * CHUNK,
    4 * CHUNK + 1,
    5 * CHUNK + 12_345,
];

/// xorshift64*: deterministic random data with no extra dependency.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            out.extend_from_slice(&self.0.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        out.truncate(n);
        out
    }
}

fn context() -> Arc<CudaContext> {
    CudaContext::new(0).expect("a CUDA device")
}

/// The first differing index, for a readable failure.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        panic!(
            "{what}: first difference at byte {i} of {}: got {:#x}, want {:#x}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// Uploads `data` through pinned memory (never staged).
fn upload_pinned(stream: &Arc<CudaStream>, data: &[u8]) -> CudaSlice<u8> {
    // SAFETY: fully written before the copy reads it.
    let mut pinned = unsafe { stream.context().alloc_pinned::<u8>(data.len()) }.unwrap();
    pinned.as_mut_slice().unwrap().copy_from_slice(data);
    let mut dev = stream.alloc_zeros::<u8>(data.len()).unwrap();
    stream.memcpy_htod(&pinned, &mut dev).unwrap();
    stream.synchronize().unwrap();
    dev
}

/// Downloads `dev` through pinned memory (never staged).
fn download_pinned(stream: &Arc<CudaStream>, dev: &CudaSlice<u8>) -> Vec<u8> {
    // SAFETY: overwritten by the copy before being read.
    let mut pinned = unsafe { stream.context().alloc_pinned::<u8>(dev.len()) }.unwrap();
    pinned.as_mut_slice().unwrap().fill(POISON);
    stream.memcpy_dtoh(dev, &mut pinned).unwrap();
    stream.synchronize().unwrap();
    pinned.as_slice().unwrap().to_vec()
}

/// One size both ways on `stream`: a staged upload into the middle of a poisoned buffer (checked
/// through pinned memory, with the poisoned margins intact), a staged download into a poisoned
/// Vec, and a staged `clone_dtoh`.
fn round_trip(stream: &Arc<CudaStream>, size: usize, seed: u64) {
    let data = Rng::new(seed).bytes(size);
    let margin = 4099;
    let mut dev = upload_pinned(stream, &vec![POISON; size + 2 * margin]);
    stream.memcpy_htod(&data, &mut dev.slice_mut(margin..margin + size)).unwrap();
    let back = download_pinned(stream, &dev);
    assert!(back[..margin].iter().chain(&back[margin + size..]).all(|&b| b == POISON), "{size}: margins");
    assert_same(&back[margin..margin + size], &data, &format!("{size} bytes host -> device"));

    let src = upload_pinned(stream, &data);
    let mut host = vec![POISON; size + margin];
    stream.memcpy_dtoh(&src, &mut host).unwrap();
    assert!(host[size..].iter().all(|&b| b == POISON), "{size}: tail of the Vec");
    assert_same(&host[..size], &data, &format!("{size} bytes device -> existing Vec"));
    assert_same(&stream.clone_dtoh(&src).unwrap(), &data, &format!("{size} bytes device -> new Vec"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pageable_copies_around_the_chunk_boundaries() {
    let ctx = context();
    let stream = ctx.default_stream();
    for (i, &size) in SIZES.iter().enumerate() {
        round_trip(&stream, size, 11 + i as u64);
    }
    ctx.check_err().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pageable_copies_of_wider_types_from_views() {
    let ctx = context();
    let stream = ctx.default_stream();
    let n = (3 * CHUNK + 6) / 4 + 1; // u32s: the chunks split elements
    let data: Vec<u32> =
        Rng::new(5).bytes(4 * n).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut dev = stream.clone_htod(&vec![0xDEAD_BEEF_u32; n + 3]).unwrap();
    stream.memcpy_htod(&data[..], &mut dev.slice_mut(1..n + 1)).unwrap();
    let mut back = vec![0x5A5A_5A5A_u32; n + 3];
    stream.memcpy_dtoh(&dev, &mut back).unwrap();
    assert_eq!(back[0], 0xDEAD_BEEF);
    assert_eq!(&back[n + 1..], &[0xDEAD_BEEF; 2]);
    assert!(back[1..n + 1] == data[..], "u32 round trip through a view");
    let mut part = vec![7u32; n - 2];
    stream.memcpy_dtoh(&dev.slice(2..n), &mut part).unwrap();
    assert!(part[..] == data[1..n - 1], "u32 download of a view");
    ctx.check_err().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn threads_copy_at_once_on_their_own_streams() {
    let ctx = context();
    // More threads than the pool lends buffers for at once: some copies take the direct path.
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let ctx = ctx.clone();
            std::thread::spawn(move || {
                let stream = ctx.new_stream().unwrap();
                for round in 0..3u64 {
                    let size = SIZES[((t + round) as usize * 3) % SIZES.len()] + t as usize;
                    let data = Rng::new(100 + 10 * t + round).bytes(size);
                    let dev = stream.clone_htod(&data).unwrap();
                    assert_same(&download_pinned(&stream, &dev), &data, &format!("thread {t}: up"));
                    let mut host = vec![POISON; size];
                    stream.memcpy_dtoh(&dev, &mut host).unwrap();
                    assert_same(&host, &data, &format!("thread {t}: down"));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a copying thread panicked");
    }
    ctx.check_err().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_copies_on_two_streams_stay_ordered() {
    let ctx = context();
    let (a, b) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let size = 6 * CHUNK + 777;
    let mut dev = a.alloc_zeros::<u8>(size).unwrap();
    for round in 0..3u64 {
        let data = Rng::new(900 + round).bytes(size);
        // Written on one stream (its last chunks may still be in flight when the call returns),
        // read back at once on the other, with no host sync between.
        let (writer, reader) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        writer.memcpy_htod(&data, &mut dev).unwrap();
        let mut host = vec![POISON; size];
        reader.memcpy_dtoh(&dev, &mut host).unwrap();
        assert_same(&host, &data, &format!("round {round}: other stream, existing Vec"));
        assert_same(
            &reader.clone_dtoh(&dev).unwrap(),
            &data,
            &format!("round {round}: other stream, new Vec"),
        );
    }
    ctx.check_err().unwrap();
}
