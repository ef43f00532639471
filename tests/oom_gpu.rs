//! Out of device memory (GPU, its own binary so no other test shares the context): an
//! allocation beyond the device's total memory fails after the pool is trimmed and the
//! allocation retried once, with an error naming the request and the free and total memory;
//! `memory_stats()` counts the retry and the failure; the runtime keeps working. Run on a machine
//! with a CUDA GPU: `cargo test --release --test oom_gpu -- --include-ignored --nocapture`.
#![cfg(not(feature = "legacy-gpu"))]

use prism_gpu::{Error, ProductionGpuRuntime};

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_allocation_beyond_the_device_is_a_clear_error() {
    let rt = ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU");
    let ctx = rt.context().unwrap().clone();
    let total = ctx.total_mem().unwrap();
    let before = rt.memory_stats().unwrap();
    eprintln!("total {total} bytes; stats before: {before:?}");

    // A buffer that is held: the pool's in-use and peak figures see it.
    let held_len = (1usize << 28) + 7; // 1 GiB + 28 bytes of f32
    let held = rt.gpu().unwrap().fill(held_len, 2.5).unwrap();
    let during = rt.memory_stats().unwrap();
    assert!(
        during.in_use >= (held_len * 4) as u64,
        "in use {} with a {}-byte buffer held",
        during.in_use,
        held_len * 4
    );
    assert!(during.peak >= during.in_use && during.reserved >= during.in_use, "{during:?}");

    // More than the device has: retried once, then a clear error.
    let n = total / 4 + 1;
    let err = match rt.gpu().unwrap().fill(n, 1.0) {
        Err(e) => e,
        Ok(_) => panic!("allocated {} bytes on a device of {total}", n * 4),
    };
    let text = err.to_string();
    eprintln!("{text}");
    match err {
        Error::OutOfMemory { requested, free, total: t } => {
            assert_eq!(requested, n * 4, "the request is named");
            assert_eq!(t, total, "the total is the device's");
            assert!(free < total, "free {free} of {total}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert!(text.contains(&(n * 4).to_string()) && text.contains(&total.to_string()), "{text}");
    assert!(text.contains("retrying once"), "{text}");
    let after = rt.memory_stats().unwrap();
    eprintln!("stats after: {after:?}");
    assert_eq!(after.allocation_retries, before.allocation_retries + 1);
    assert_eq!(after.out_of_memory, before.out_of_memory + 1);
    assert_eq!(after.last_failed_request, n * 4);

    // The runtime and the held buffer are fine.
    assert_eq!(rt.add(&[1.0, 2.0, 3.0], &[0.5, 0.25, 0.125]).unwrap(), [1.5, 2.25, 3.125]);
    let back = rt.gpu().unwrap().download(&held).unwrap();
    assert!(back.iter().all(|&v| v == 2.5) && back.len() == held_len);
    drop(held);
    ctx.synchronize().unwrap();
    let released = rt.memory_stats().unwrap();
    assert!(
        released.in_use < during.in_use,
        "in use {} after the free, {} before",
        released.in_use,
        during.in_use
    );
}
