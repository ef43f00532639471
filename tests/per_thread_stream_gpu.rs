//! GPU test of the per-thread default stream's bookkeeping, in a process of its own: its context
//! synchronisation (when a second thread first uses the stream) must not land inside another
//! test's graph capture, which driver_gpu's tests do in the same primary context. Under
//! compute-sanitizer racecheck, beside driver_gpu's tests, runs hung or failed (H100, 2026-11-26),
//! and driver_gpu alone failed 2 of 5 racecheck runs too; alone, this test passed every run (plain,
//! memcheck, racecheck). cudarc 0.19 never orders two threads' per-thread streams (it counts the
//! per-thread stream as no stream), so this tests prism-gpu's engine only.
#![cfg(not(feature = "legacy-gpu"))]

mod driver_common;

use driver_common::*;

/// candle's pattern: one thread's per-thread default stream, with the default stream beside it,
/// costs no events (both are blocking streams, which the driver orders); a second thread using
/// the same stream object submits to its own per-thread stream, which must then wait for the
/// first thread's pending write.
#[test]
#[ignore = "needs a CUDA GPU"]
fn per_thread_stream_is_single_stream_until_a_second_thread_uses_it() {
    let (ctx, module) = setup();
    let slow = module.load_function("slow_affine").unwrap();
    let affine = module.load_function("affine").unwrap();
    let pts = ctx.per_thread_stream();
    let default = ctx.default_stream();
    let n = 4099;
    let mut rng = Rng::new(29);
    let xh = rng.f32s(n);
    let x = pts.clone_htod(&xh).unwrap();
    let mut y = pts.clone_htod(&vec![f32::NAN; n]).unwrap();
    launch_slow(&pts, &slow, &mut y, &x);
    // The default stream is ordered after the per-thread stream's slow write.
    let want: Vec<f32> = xh.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_close(&default.clone_dtoh(&y).unwrap(), &want, "default stream after the per-thread stream");
    assert!(!ctx.is_in_multi_stream_mode(), "one thread's per-thread stream needs no events");

    // Rewrite y slowly on this thread's per-thread stream, then read it on another thread's.
    launch_slow(&pts, &slow, &mut y, &x);
    let want_z: Vec<f32> = want.iter().map(|v| -3.0 * v + 0.25).collect();
    let got_z = std::thread::scope(|s| {
        s.spawn(|| {
            let mut z = pts.clone_htod(&vec![f32::NAN; n]).unwrap();
            launch_affine(&pts, &affine, &mut z, &y, -3.0, 0.25);
            pts.clone_dtoh(&z).unwrap()
        })
        .join()
        .unwrap()
    });
    assert!(ctx.is_in_multi_stream_mode(), "a second thread's per-thread stream is another stream");
    assert_close(&got_z, &want_z, "kernel on the second thread's per-thread stream");
    assert_eq!(module.load_function("affine").unwrap().cu_function(), affine.cu_function());
    ctx.check_err().unwrap();
}
