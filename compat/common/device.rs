#![allow(dead_code)] // each program uses part of this
                     // Shared by the compatibility programs (`#[path]`-included): opens device 0, or says why there is none.
                     // prism-gpu returns CUDA_ERROR_NO_DEVICE when no driver loads; the real cudarc panics when it cannot
                     // load libcuda ("Unable to dynamically load ..."), so that panic is caught too. Any other error or panic
                     // is passed on: on a GPU machine the programs must compute.
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, DriverError};

pub fn open(program: &str) -> Result<Option<Arc<CudaContext>>, DriverError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let opened = std::panic::catch_unwind(|| CudaContext::new(0));
    std::panic::set_hook(hook);
    match opened {
        Ok(Ok(ctx)) => Ok(Some(ctx)),
        Ok(Err(e @ DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE))) => {
            println!("{program}: no CUDA device here ({e}), nothing to run");
            Ok(None)
        }
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            if message.contains("Unable to dynamically load") {
                let first = message.split(" - ").next().unwrap_or_default();
                println!("{program}: no CUDA driver here (cudarc: {first}), nothing to run");
                Ok(None)
            } else {
                std::panic::resume_unwind(panic)
            }
        }
    }
}

/// Deterministic inputs that are not zeros: a 64-bit xorshift mapped to [-1, 1).
pub fn inputs(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// FNV-1a over the values' bits: the two engines run the same PTX, so their results match bit for bit.
pub fn digest(bits: impl IntoIterator<Item = u64>) -> u64 {
    bits.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b).wrapping_mul(0x0100_0000_01b3))
}
