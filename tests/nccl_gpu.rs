//! `prism_gpu::nccl` on one GPU through the real NCCL: a world of one rank, where every collective
//! is the identity (a sum over one rank is its input, a gather of one rank is its buffer), on
//! fresh random data with printed seeds and outputs poisoned first; and the checks that refuse
//! bad ranks and buffers too short before NCCL sees them. Run on the GPU machine with
//! `cargo test --test nccl_gpu -- --include-ignored` (NCCL 2.28 at /usr/lib/x86_64-linux-gnu).
#![cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]

mod support;

use std::sync::Arc;

use half::bf16;
use prism_gpu::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use prism_gpu::nccl::sys::ncclResult_t;
use prism_gpu::nccl::{group_end, group_start, Comm, Id, NcclError, NcclType, ReduceOp};

use support::Rng;

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];

impl Rng {
    /// An odd length between 1001 and 2999.
    fn len(&mut self) -> usize {
        1001 + 2 * (self.next() % 1000) as usize
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit()).collect()
    }
}

fn stream() -> Arc<CudaStream> {
    CudaContext::new(0).expect("a CUDA GPU").default_stream()
}

/// A world of one rank on device 0.
fn world_of_one(stream: &Arc<CudaStream>) -> Comm {
    let mut comms = Comm::from_devices(vec![stream.clone()]).expect("NCCL and a GPU");
    assert_eq!(comms.len(), 1);
    comms.remove(0)
}

fn upload<T: DeviceRepr>(stream: &Arc<CudaStream>, values: &[T]) -> CudaSlice<T> {
    stream.clone_htod(values).unwrap()
}

fn nan(stream: &Arc<CudaStream>, n: usize) -> CudaSlice<f32> {
    upload(stream, &vec![f32::NAN; n])
}

fn download<T: DeviceRepr + Default + Clone>(stream: &Arc<CudaStream>, slice: &CudaSlice<T>) -> Vec<T> {
    stream.clone_dtoh(slice).unwrap()
}

fn invalid() -> NcclError {
    NcclError(ncclResult_t::ncclInvalidArgument)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_world_of_one_knows_itself() {
    let stream = stream();
    let comm = world_of_one(&stream);
    assert_eq!((comm.rank(), comm.world_size(), comm.ordinal()), (0, 1, 0));
    assert!(Arc::ptr_eq(comm.context(), stream.context()));
    assert_eq!(*comm.stream(), *stream);
    let version = prism_gpu::nccl::result::get_nccl_version().unwrap();
    println!("NCCL version code {version}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_reduction_of_one_rank_is_its_input() {
    let mut rng = Rng::seeded("every_reduction_of_one_rank_is_its_input");
    let stream = stream();
    let comm = world_of_one(&stream);
    for op in OPS {
        let n = rng.len();
        let x = rng.f32s(n);
        let send = upload(&stream, &x);

        let mut out = nan(&stream, n);
        comm.all_reduce(&send, &mut out, &op).unwrap();
        assert_eq!(download(&stream, &out), x, "all_reduce {op:?}");

        let mut in_place = upload(&stream, &x);
        comm.all_reduce_in_place(&mut in_place, &op).unwrap();
        assert_eq!(download(&stream, &in_place), x, "all_reduce_in_place {op:?}");

        let mut out = nan(&stream, n);
        comm.reduce(&send, Some(&mut out), &op, 0).unwrap();
        assert_eq!(download(&stream, &out), x, "reduce {op:?}");

        let mut in_place = upload(&stream, &x);
        comm.reduce_in_place(&mut in_place, &op, 0).unwrap();
        assert_eq!(download(&stream, &in_place), x, "reduce_in_place {op:?}");

        // World of one: the scattered block is the whole buffer.
        let mut out = nan(&stream, n);
        comm.reduce_scatter(&send, &mut out, &op).unwrap();
        assert_eq!(download(&stream, &out), x, "reduce_scatter {op:?}");
    }
}

/// all_reduce(Sum) of one rank for another element type: the input, bit for bit.
fn sum_is_identity<T: NcclType + DeviceRepr + Default + Clone + PartialEq + std::fmt::Debug>(
    stream: &Arc<CudaStream>,
    comm: &Comm,
    x: Vec<T>,
    poison: T,
) {
    let send = upload(stream, &x);
    let mut out = upload(stream, &vec![poison; x.len()]);
    comm.all_reduce(&send, &mut out, &ReduceOp::Sum).unwrap();
    assert_eq!(download(stream, &out), x, "{}", std::any::type_name::<T>());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_element_type_crosses_unchanged() {
    let mut rng = Rng::seeded("every_element_type_crosses_unchanged");
    let stream = stream();
    let comm = world_of_one(&stream);
    let n = rng.len();
    let x = rng.f32s(n);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| v as f64 * 1e-3).collect(), f64::NAN);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v * 1e6) as i32).collect(), i32::MIN);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v * 1e15) as i64).collect(), i64::MIN);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v * 120.0) as i8).collect(), i8::MIN);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v.abs() * 250.0) as u8).collect(), 0xA5);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v.abs() * 4e9) as u32).collect(), 0xA5A5_A5A5);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| (v.abs() * 1e18) as u64).collect(), u64::MAX);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| half::f16::from_f32(v)).collect(), half::f16::NAN);
    sum_is_identity(&stream, &comm, x.iter().map(|&v| bf16::from_f32(v)).collect(), bf16::NAN);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn broadcast_gather_and_point_to_point_copy() {
    let mut rng = Rng::seeded("broadcast_gather_and_point_to_point_copy");
    let stream = stream();
    let comm = world_of_one(&stream);
    let n = rng.len();
    let x = rng.f32s(n);
    let send = upload(&stream, &x);

    let mut out = nan(&stream, n);
    comm.broadcast(Some(&send), &mut out, 0).unwrap();
    assert_eq!(download(&stream, &out), x, "broadcast");

    let mut in_place = upload(&stream, &x);
    comm.broadcast_in_place(&mut in_place, 0).unwrap();
    assert_eq!(download(&stream, &in_place), x, "broadcast_in_place");

    let mut out = nan(&stream, n);
    comm.all_gather(&send, &mut out).unwrap();
    assert_eq!(download(&stream, &out), x, "all_gather");

    // A view at an odd offset gathers its own elements only.
    let mut out = nan(&stream, n);
    comm.all_gather(&send.slice(3..n), &mut out.slice_mut(1..n - 2)).unwrap();
    let got = download(&stream, &out);
    assert!(got[0].is_nan() && got[n - 2..].iter().all(|v| v.is_nan()), "outside the view");
    assert_eq!(got[1..n - 2], x[3..], "all_gather of views");

    // Send to and receive from oneself: only as one group.
    let mut out = nan(&stream, n);
    group_start().unwrap();
    comm.send(&send, 0).unwrap();
    comm.recv(&mut out, 0).unwrap();
    group_end().unwrap();
    assert_eq!(download(&stream, &out), x, "send/recv to self");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_group_launches_its_collectives_together() {
    let mut rng = Rng::seeded("a_group_launches_its_collectives_together");
    let stream = stream();
    let comm = world_of_one(&stream);
    let n = rng.len();
    let (x, y) = (rng.f32s(n), rng.f32s(n));
    let (sx, sy) = (upload(&stream, &x), upload(&stream, &y));
    let (mut ox, mut oy) = (nan(&stream, n), nan(&stream, n));
    group_start().unwrap();
    comm.all_reduce(&sx, &mut ox, &ReduceOp::Sum).unwrap();
    comm.all_gather(&sy, &mut oy).unwrap();
    group_end().unwrap();
    assert_eq!(download(&stream, &ox), x);
    assert_eq!(download(&stream, &oy), y);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_from_an_id_works_alone() {
    let mut rng = Rng::seeded("a_rank_from_an_id_works_alone");
    let stream = stream();
    let id = Id::new().unwrap();
    let id = Id::uninit(*id.internal());
    let comm = Comm::from_rank(stream.clone(), 0, 1, id).unwrap();
    let n = rng.len();
    let x = rng.f32s(n);
    let send = upload(&stream, &x);
    let mut out = nan(&stream, x.len());
    comm.all_reduce(&send, &mut out, &ReduceOp::Sum).unwrap();
    assert_eq!(download(&stream, &out), x);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_ranks_and_short_buffers_are_refused_before_nccl() {
    let mut rng = Rng::seeded("bad_ranks_and_short_buffers_are_refused_before_nccl");
    let stream = stream();
    assert_eq!(Comm::from_devices(vec![]).map(|_| ()), Err(invalid()));
    assert_eq!(Comm::from_rank(stream.clone(), 1, 1, Id::uninit([0; 128])).map(|_| ()), Err(invalid()));
    assert_eq!(Comm::from_rank(stream.clone(), 0, 0, Id::uninit([0; 128])).map(|_| ()), Err(invalid()));
    let comm = world_of_one(&stream);
    let n = rng.len();
    let x = rng.f32s(n);
    let send = upload(&stream, &x);
    let mut short = nan(&stream, n - 1);
    let mut out = nan(&stream, n);

    for rank in [1, -1, i32::MAX] {
        assert_eq!(comm.send(&send, rank), Err(invalid()), "send to {rank}");
        assert_eq!(comm.recv(&mut out, rank), Err(invalid()), "recv from {rank}");
        assert_eq!(comm.broadcast(Some(&send), &mut out, rank), Err(invalid()), "broadcast from {rank}");
        assert_eq!(comm.broadcast_in_place(&mut out, rank), Err(invalid()));
        assert_eq!(comm.reduce(&send, Some(&mut out), &ReduceOp::Sum, rank), Err(invalid()));
        assert_eq!(comm.reduce_in_place(&mut out, &ReduceOp::Sum, rank), Err(invalid()));
    }
    assert_eq!(comm.all_reduce(&send, &mut short, &ReduceOp::Sum), Err(invalid()));
    assert_eq!(comm.all_gather(&send, &mut short), Err(invalid()));
    assert_eq!(comm.reduce(&send, Some(&mut short), &ReduceOp::Sum, 0), Err(invalid()));
    // Root without its buffer.
    assert_eq!(comm.reduce(&send, None::<&mut CudaSlice<f32>>, &ReduceOp::Sum, 0), Err(invalid()));
    assert_eq!(comm.broadcast(None::<&CudaSlice<f32>>, &mut out, 0), Err(invalid()));
    // The root's send buffer shorter than the receive buffer.
    assert_eq!(comm.broadcast(Some(&short), &mut out, 0), Err(invalid()));
    // reduce_scatter reads recv.len() × world size elements.
    let mut long = nan(&stream, n + 1);
    assert_eq!(comm.reduce_scatter(&send, &mut long, &ReduceOp::Sum), Err(invalid()));

    // Nothing was enqueued: the poisoned outputs are untouched and the communicator still works.
    assert!(download(&stream, &out).iter().chain(&download(&stream, &short)).all(|v| v.is_nan()));
    comm.all_reduce(&send, &mut out, &ReduceOp::Sum).unwrap();
    assert_eq!(download(&stream, &out), x);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_of_another_context_are_refused() {
    let stream = stream();
    let comm = world_of_one(&stream);
    let other = CudaContext::new_non_primary(0, 0).unwrap().default_stream();
    let foreign = other.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut out = nan(&stream, 3);
    assert_eq!(comm.all_reduce(&foreign, &mut out, &ReduceOp::Sum), Err(invalid()));
    assert_eq!(comm.send(&foreign, 0), Err(invalid()));
}
