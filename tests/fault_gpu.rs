//! Sticky faults (GPU, its own binary: the fault poisons the whole context, so no other test may
//! share it; compute-sanitizer reports the planted fault, so leave this binary out of sanitizer
//! runs). A kernel compiled with NVRTC writes through an illegal address; every later runtime call
//! fails with `Error::ContextFaulted` naming that first fault; `recover` resets the device's
//! primary context and says so; the runtime computes again, on the GPU or (where CUDA refuses the
//! device for the rest of the process, as it does after an illegal address) on the CPU fallback,
//! and handles made before the reset are inert. Run on a machine with a CUDA GPU:
//! `cargo test --release --test fault_gpu -- --include-ignored --nocapture`.
#![cfg(not(feature = "legacy-gpu"))]

mod planted_fault;

use prism_gpu::driver::sys;
use prism_gpu::{Error, ProductionGpuRuntime};

fn first_fault(r: prism_gpu::Result<impl std::fmt::Debug>) -> (sys::CUresult, String) {
    match r {
        Err(e @ Error::ContextFaulted { .. }) => {
            let Error::ContextFaulted { first, .. } = &e else { unreachable!() };
            (*first, e.to_string())
        }
        other => panic!("expected ContextFaulted, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_fault_is_named_by_every_later_call_and_recover_resets() {
    let mut rt = ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU");
    assert_eq!(rt.add(&[1.0], &[2.0]).unwrap(), [3.0]);
    let ops = rt.gpu().unwrap();
    let before = ops.upload(&[4.0f32, 5.0]).unwrap();
    let ctx = rt.context().unwrap().clone();
    let mut x = ops.upload(&[0.0f32; 4]).unwrap();
    let _write_far = planted_fault::launch_illegal_write(ops.stream(), &mut x);

    // The first call after the fault names it, and so does every later one, of every kind.
    let (first, text) = first_fault(rt.add(&[1.0], &[2.0]));
    eprintln!("{text}");
    assert_eq!(first, sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, "{text}");
    assert!(text.contains("CUDA_ERROR_ILLEGAL_ADDRESS") && text.contains("recover"), "{text}");
    for (what, r) in [
        ("relu", first_fault(rt.relu(&[1.0, -1.0]))),
        ("matmul", first_fault(rt.matmul(&[1.0; 4], &[1.0; 4], 2, 2, 2))),
        ("sum", first_fault(rt.sum(&[1.0; 9]))),
        ("upload", first_fault(rt.gpu().unwrap().upload(&[1.0f32]))),
        ("download", first_fault(rt.gpu().unwrap().download(&before))),
    ] {
        assert_eq!(r.0, first, "{what}: {}", r.1);
    }

    // Recovery: says what it did, and the runtime computes again.
    drop(x);
    // SAFETY: this test's thread is the only one using the device.
    let said = unsafe { rt.recover() }.expect("recover");
    eprintln!("{said}");
    assert!(said.contains("reset") && said.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{said}");
    assert!(ctx.is_stale(), "the old context object is stale after the reset");
    // Either the device works again, or (an illegal address: CUDA refuses the device for the rest
    // of the process) the runtime says it continues on the CPU fallback. Both compute.
    let reopened = rt.gpu().is_ok();
    assert_eq!(reopened, !said.contains("CPU fallback"), "{said}");
    assert_eq!(rt.add(&[1.0, 2.0], &[0.5, 0.5]).unwrap(), [1.5, 2.5]);
    assert_eq!(
        rt.matmul(&[1.0, 2.0, 3.0, 4.0], &[1.0, 0.0, 0.0, 1.0], 2, 2, 2).unwrap(),
        [1.0, 2.0, 3.0, 4.0]
    );
    if reopened {
        // A buffer from before the reset is inert: using it is an error (not a read of whatever
        // now lives at its address), and dropping it frees nothing.
        assert!(rt.gpu().unwrap().download(&before).is_err());
    }
    assert!(ctx.synchronize().is_err());
    drop(before);
    drop(ctx);
    assert_eq!(rt.sum(&[1.0, 2.0, 3.0]).unwrap(), 6.0);
    // Recovering a healthy runtime does nothing and says so.
    // SAFETY: as above.
    let said = unsafe { rt.recover() }.unwrap();
    assert!(said.contains("no fault"), "{said}");
}
