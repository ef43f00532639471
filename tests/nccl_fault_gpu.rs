//! A kernel fault while NCCL communicators are alive (GPU, its own binary: the fault poisons the
//! context of device 0 for the rest of the process). In a child process per world size (1, 2 and
//! every visible GPU, `nccl_worlds`): an all-reduce works; a kernel on rank 0's stream writes
//! through an illegal address; later calls on rank 0 return errors, and so does an all-reduce over
//! every rank (on 2x H200 each rank's part and the group's end returned `ncclUnhandledCudaError`);
//! then every communicator, buffer and stream is dropped. The child must exit cleanly: a fault is
//! the caller's error to handle, never a crash or a hang of the process. compute-sanitizer reports
//! the planted fault, so sanitizer runs leave this binary out. Run on the GPU machine: `cargo test --release --features
//! nccl --test nccl_fault_gpu -- --include-ignored --nocapture`.
#![cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]

mod nccl_worlds;
mod planted_fault;

use prism_gpu::driver::CudaContext;
use prism_gpu::nccl::{group_end, group_start, Comm, ReduceOp};

const TEST: &str = "a_kernel_fault_beside_live_communicators_is_an_error_then_a_clean_exit";

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_fault_beside_live_communicators_is_an_error_then_a_clean_exit() {
    nccl_worlds::in_one_process(TEST, |world, _| fault_beside_communicators(world));
}

fn fault_beside_communicators(world: usize) {
    let streams: Vec<_> =
        (0..world).map(|o| CudaContext::new(o).expect("a CUDA GPU").default_stream()).collect();
    let comms = Comm::from_devices(streams.clone()).expect("NCCL communicators");
    // Rank r holds r + 1 in every element: the sum is world (world + 1) / 2.
    let n = 1001;
    let sends: Vec<_> =
        streams.iter().enumerate().map(|(r, s)| s.clone_htod(&vec![(r + 1) as f32; n]).unwrap()).collect();
    let mut recvs: Vec<_> = streams.iter().map(|s| s.clone_htod(&vec![f32::NAN; n]).unwrap()).collect();
    let all_reduce = |recvs: &mut Vec<_>| {
        group_start().unwrap();
        let calls: Vec<_> = comms
            .iter()
            .zip(&sends)
            .zip(recvs.iter_mut())
            .map(|((comm, send), recv)| comm.all_reduce(send, recv, &ReduceOp::Sum))
            .collect();
        (calls, group_end())
    };
    let (calls, ended) = all_reduce(&mut recvs);
    assert!(calls.iter().all(Result::is_ok) && ended.is_ok(), "{calls:?} {ended:?}");
    let want = (world * (world + 1) / 2) as f32;
    for (s, recv) in streams.iter().zip(&recvs) {
        assert!(s.clone_dtoh(recv).unwrap().iter().all(|&v| v == want), "the all-reduce before the fault");
    }

    let mut x = streams[0].clone_htod(&[0.0f32; 4]).unwrap();
    let write_far = planted_fault::launch_illegal_write(&streams[0], &mut x);
    let fault = streams[0].synchronize();
    println!("world of {world}: rank 0's stream after the fault: {fault:?}");
    assert!(fault.is_err(), "the planted fault is reported");
    assert!(streams[0].clone_dtoh(&recvs[0]).is_err(), "a copy on the faulted device is an error");

    // A collective after the fault (a data-parallel step after one GPU faulted): rank 0 must report
    // it. The other ranks are never synchronised: a part of theirs that NCCL did enqueue would wait
    // for rank 0 forever, and dropping the communicators must abort it.
    let (calls, ended) = all_reduce(&mut recvs);
    let after = streams[0].synchronize();
    println!(
        "world of {world}: all-reduce after the fault: {calls:?}, group end {ended:?}, rank 0 {after:?}"
    );
    assert!(
        calls[0].is_err() || ended.is_err() || after.is_err(),
        "a collective on a faulted device reports it"
    );
    // Communicators first (ncclCommAbort, on a faulted context for rank 0), then the rest.
    drop(comms);
    drop((sends, recvs, x, write_far, streams));
    println!("world of {world}: communicators and buffers dropped after the fault");
}
