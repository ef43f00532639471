//! `prism_gpu::nccl` across the GPUs of one host: every collective and point-to-point call on f32,
//! bf16, f16 and i32, in worlds of 1, 2 and all visible GPUs, driven two ways: one process holding
//! every rank (`Comm::from_devices`, one stream per GPU, each call grouped as NCCL requires) and
//! one process per rank (`Comm::from_rank`, the `Id` passed from rank 0 to the others). Inputs are
//! fresh random data, the same in every process for the printed seed, so each process computes
//! every rank's reference (f64, independent of NCCL) and checks the ranks it holds; outputs are
//! poisoned first (NaN, `i32::MIN`). Worlds larger than the GPUs present are skipped with a line
//! saying so. Every NCCL process is a child started with `NCCL_NVLS_ENABLE=0` (`nccl_worlds`).
//! Run on the GPU machine: `cargo test --release --features nccl --test nccl_multi_gpu --
//! --include-ignored` (`PRISM_TEST_SEED=...` replays a seed).
#![cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]

mod nccl_worlds;

use std::fmt::Debug;

use half::{bf16, f16};
use nccl_worlds::Rank;
use prism_gpu::driver::{CudaContext, CudaSlice, DeviceRepr};
use prism_gpu::nccl::{group_end, group_start, Comm, NcclError, NcclType, ReduceOp};
use prism_gpu::rng::SplitMix64;

#[test]
#[ignore = "needs a CUDA GPU"]
fn collectives_across_the_devices_of_one_process() {
    nccl_worlds::in_one_process("collectives_across_the_devices_of_one_process", |world, seed| {
        every_collective(&Local::devices(world), seed)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn collectives_across_one_process_per_rank() {
    nccl_worlds::one_process_per_rank("collectives_across_one_process_per_rank", |rank| {
        every_collective(&Local::rank(&rank), rank.seed)
    });
}

fn every_collective(local: &Local, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    collectives::<f32>(local, &mut rng);
    collectives::<bf16>(local, &mut rng);
    collectives::<f16>(local, &mut rng);
    collectives::<i32>(local, &mut rng);
}

/// The ranks this process drives: all of the world, or one.
struct Local {
    comms: Vec<Comm>,
    world: usize,
}

impl Local {
    /// Every rank of a world of `world`, on GPUs `0..world`, from this thread.
    fn devices(world: usize) -> Self {
        let streams = (0..world).map(|o| CudaContext::new(o).expect("a CUDA GPU").default_stream()).collect();
        let comms = Comm::from_devices(streams).expect("NCCL communicators");
        assert_eq!(comms.iter().map(Comm::rank).collect::<Vec<_>>(), (0..world).collect::<Vec<_>>());
        assert!(comms.iter().all(|c| c.world_size() == world));
        Self { comms, world }
    }

    /// Rank `r.rank` of its world, on the GPU of that ordinal.
    fn rank(r: &Rank) -> Self {
        let stream = CudaContext::new(r.rank).expect("a CUDA GPU").default_stream();
        let comm = Comm::from_rank(stream, r.rank, r.world, r.id).expect("an NCCL communicator");
        assert_eq!((comm.rank(), comm.world_size(), comm.ordinal()), (r.rank, r.world, r.rank));
        Self { comms: vec![comm], world: r.world }
    }

    /// `call(i, comm)` for each local rank `i`, inside one NCCL group when `grouped` or when this
    /// thread drives several ranks (NCCL needs such calls grouped, else the first one waits for
    /// the others forever).
    fn run(&self, grouped: bool, mut call: impl FnMut(usize, &Comm) -> Result<(), NcclError>) {
        let group = grouped || self.comms.len() > 1;
        if group {
            group_start().unwrap();
        }
        for (i, comm) in self.comms.iter().enumerate() {
            call(i, comm).unwrap_or_else(|e| panic!("rank {}: {e}", comm.rank()));
        }
        if group {
            group_end().unwrap();
        }
    }

    /// Each local rank's buffer from `per_rank[rank]`.
    fn upload<T: Elem>(&self, per_rank: &[Vec<T>]) -> Vec<CudaSlice<T>> {
        self.comms.iter().map(|c| c.stream().clone_htod(&per_rank[c.rank()]).unwrap()).collect()
    }

    /// Each local rank's buffer of `len` poisoned elements.
    fn poisoned<T: Elem>(&self, len: usize) -> Vec<CudaSlice<T>> {
        self.upload(&vec![vec![T::POISON; len]; self.world])
    }

    /// Checks each local rank's buffer against `want(rank)`.
    fn check<T: Elem>(&self, what: &str, got: &[CudaSlice<T>], want: impl Fn(usize) -> Vec<Want>) {
        self.check_ranks(what, got, |_| true, want)
    }

    /// Checks the buffer of each local rank that `which` picks against `want(rank)`.
    fn check_ranks<T: Elem>(
        &self,
        what: &str,
        got: &[CudaSlice<T>],
        which: impl Fn(usize) -> bool,
        want: impl Fn(usize) -> Vec<Want>,
    ) {
        for (comm, buf) in self.comms.iter().zip(got).filter(|(c, _)| which(c.rank())) {
            let values = comm.stream().clone_dtoh(buf).unwrap();
            close(&format!("{what} {}", T::NAME), comm.rank(), &values, &want(comm.rank()));
        }
    }
}

/// An expected value and the error allowed.
#[derive(Debug, Clone, Copy)]
struct Want {
    value: f64,
    tolerance: f64,
}

impl Want {
    fn exact(value: f64) -> Self {
        Self { value, tolerance: 0.0 }
    }
}

fn close<T: Elem>(what: &str, rank: usize, got: &[T], want: &[Want]) {
    assert_eq!(got.len(), want.len(), "{what}, rank {rank}: length");
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let error = (g.to_f64() - w.value).abs();
        // A NaN (an element never written) fails here too.
        assert!(
            error <= w.tolerance,
            "{what}, rank {rank}, element {i}: got {g:?}, want {} within {:e}",
            w.value,
            w.tolerance
        );
        worst = worst.max(error);
    }
    println!("{what}, rank {rank}: {} elements, largest error {worst:e}", got.len());
}

/// An element type under test.
trait Elem: NcclType + DeviceRepr + Copy + Default + Debug + PartialEq {
    const NAME: &'static str;
    /// The gap between 1 and the next value (0 for integers, whose results are exact).
    const EPS: f64;
    /// What outputs hold before a call writes them.
    const POISON: Self;
    /// The half-width of the range of plain draws.
    const SPREAD: f64;
    /// `x` rounded to this type.
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    const EPS: f64 = f32::EPSILON as f64;
    const POISON: Self = f32::NAN;
    const SPREAD: f64 = 4.0;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// The 16-bit floats, with their `EPS` (2^-7 for bf16, 2^-10 for f16).
macro_rules! half_elem {
    ($($t:ident = $eps:expr),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const EPS: f64 = $eps;
            const POISON: Self = $t::NAN;
            const SPREAD: f64 = 4.0;
            fn from_f64(x: f64) -> Self {
                $t::from_f64(x)
            }
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
        }
    )*};
}
half_elem!(bf16 = 0.0078125, f16 = 0.0009765625);

impl Elem for i32 {
    const NAME: &'static str = "i32";
    const EPS: f64 = 0.0;
    const POISON: Self = i32::MIN;
    // Sums of up to 8 ranks stay far inside i32.
    const SPREAD: f64 = 4.0e6;
    fn from_f64(x: f64) -> Self {
        x.round() as i32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// How inputs are drawn.
#[derive(Debug, Clone, Copy)]
enum Draw {
    /// Uniform in `±SPREAD`.
    Any,
    /// Uniform in `[0, SPREAD)`: NCCL does not document how an integer average of negative sums
    /// rounds, so averages are checked on non-negative inputs.
    NonNegative,
    /// `±2^u`, `u` uniform in `[-1, 1)` (integers: ±1 or ±2): products of every rank stay in range.
    Factor,
}

/// Uniform in `[-1, 1)`.
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// `len` inputs for each of `world` ranks.
fn inputs<T: Elem>(rng: &mut SplitMix64, world: usize, len: usize, how: Draw) -> Vec<Vec<T>> {
    (0..world)
        .map(|_| {
            (0..len)
                .map(|_| {
                    let u = unit(rng);
                    T::from_f64(match how {
                        Draw::Any => u * T::SPREAD,
                        Draw::NonNegative => u.abs() * T::SPREAD,
                        Draw::Factor => u.signum() * unit(rng).exp2(),
                    })
                })
                .collect()
        })
        .collect()
}

/// An odd length between 1001 and 2999, the same in every process.
fn length(rng: &mut SplitMix64) -> usize {
    1001 + 2 * (rng.next_u64() % 1000) as usize
}

/// Element `i` of every rank's input reduced by `op` in f64, with the rounding error the type
/// allows: one rounding per combining step (n - 1 of them, so a world of one is exact), each
/// bounded by `EPS` times the magnitudes involved; integer averages truncate, as NCCL's do.
fn reduced<T: Elem>(inputs: &[Vec<T>], op: ReduceOp, i: usize) -> Want {
    let xs: Vec<f64> = inputs.iter().map(|v| v[i].to_f64()).collect();
    let n = xs.len() as f64;
    let steps = (n - 1.0) * T::EPS;
    let sum: f64 = xs.iter().sum();
    let magnitude: f64 = xs.iter().map(|x| x.abs()).sum();
    match op {
        ReduceOp::Sum => Want { value: sum, tolerance: steps * magnitude },
        ReduceOp::Prod => {
            let prod: f64 = xs.iter().product();
            Want { value: prod, tolerance: steps * prod.abs() }
        }
        ReduceOp::Max => Want::exact(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ReduceOp::Min => Want::exact(xs.iter().copied().fold(f64::INFINITY, f64::min)),
        ReduceOp::Avg if T::EPS == 0.0 => Want::exact((sum / n).trunc()),
        ReduceOp::Avg => Want { value: sum / n, tolerance: steps * magnitude },
    }
}

fn copied<T: Elem>(values: &[T]) -> Vec<Want> {
    values.iter().map(|v| Want::exact(v.to_f64())).collect()
}

fn collectives<T: Elem>(local: &Local, rng: &mut SplitMix64) {
    let world = local.world;
    let root = world - 1; // not rank 0 once there are two ranks

    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
        let how = match op {
            ReduceOp::Prod => Draw::Factor,
            ReduceOp::Avg => Draw::NonNegative,
            _ => Draw::Any,
        };
        let len = length(rng);
        let x = inputs::<T>(rng, world, len, how);
        let want = |_: usize| -> Vec<Want> { (0..len).map(|i| reduced(&x, op, i)).collect() };
        let send = local.upload(&x);
        let mut out = local.poisoned::<T>(len);
        local.run(false, |i, c| c.all_reduce(&send[i], &mut out[i], &op).map(drop));
        local.check(&format!("all_reduce {op:?}"), &out, want);
        if op == ReduceOp::Sum {
            let mut in_place = local.upload(&x);
            local.run(false, |i, c| c.all_reduce_in_place(&mut in_place[i], &op).map(drop));
            local.check("all_reduce_in_place Sum", &in_place, want);
        }
    }

    // reduce to the root; the other ranks pass no receive buffer.
    let len = length(rng);
    let x = inputs::<T>(rng, world, len, Draw::Any);
    let send = local.upload(&x);
    let mut out = local.poisoned::<T>(len);
    local.run(false, |i, c| {
        let recv = (c.rank() == root).then_some(&mut out[i]);
        c.reduce(&send[i], recv, &ReduceOp::Sum, root as i32).map(drop)
    });
    let want = |_: usize| -> Vec<Want> { (0..len).map(|i| reduced(&x, ReduceOp::Sum, i)).collect() };
    local.check_ranks(&format!("reduce Sum to {root}"), &out, |r| r == root, want);

    // broadcast from the root, which alone passes a send buffer.
    let len = length(rng);
    let x = inputs::<T>(rng, world, len, Draw::Any);
    let send = local.upload(&x);
    let mut out = local.poisoned::<T>(len);
    local.run(false, |i, c| {
        let from = (c.rank() == root).then_some(&send[i]);
        c.broadcast(from, &mut out[i], root as i32).map(drop)
    });
    local.check(&format!("broadcast from {root}"), &out, |_| copied(&x[root]));

    // all_gather: every rank's block, in rank order.
    let len = length(rng);
    let x = inputs::<T>(rng, world, len, Draw::Any);
    let send = local.upload(&x);
    let mut out = local.poisoned::<T>(len * world);
    local.run(false, |i, c| c.all_gather(&send[i], &mut out[i]).map(drop));
    local.check("all_gather", &out, |_| copied(&x.concat()));

    // reduce_scatter: rank r gets block r of the reduction.
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        let len = length(rng);
        let x = inputs::<T>(rng, world, len * world, Draw::Any);
        let send = local.upload(&x);
        let mut out = local.poisoned::<T>(len);
        local.run(false, |i, c| c.reduce_scatter(&send[i], &mut out[i], &op).map(drop));
        local.check(&format!("reduce_scatter {op:?}"), &out, |r| {
            (r * len..(r + 1) * len).map(|i| reduced(&x, op, i)).collect()
        });
    }

    // send/recv around a ring (to oneself in a world of one), as one group.
    let len = length(rng);
    let x = inputs::<T>(rng, world, len, Draw::Any);
    let send = local.upload(&x);
    let mut out = local.poisoned::<T>(len);
    local.run(true, |i, c| {
        let r = c.rank();
        c.send(&send[i], ((r + 1) % world) as i32)?;
        c.recv(&mut out[i], ((r + world - 1) % world) as i32).map(drop)
    });
    local.check("send/recv ring", &out, |r| copied(&x[(r + world - 1) % world]));

    // Three collectives launched as one group.
    let len = length(rng);
    let (a, b, d) = (
        inputs::<T>(rng, world, len, Draw::Any),
        inputs::<T>(rng, world, len, Draw::Any),
        inputs::<T>(rng, world, len, Draw::Any),
    );
    let (sa, sb, sd) = (local.upload(&a), local.upload(&b), local.upload(&d));
    let (mut oa, mut ob, mut od) =
        (local.poisoned::<T>(len), local.poisoned::<T>(len * world), local.poisoned::<T>(len));
    local.run(true, |i, c| {
        c.all_reduce(&sa[i], &mut oa[i], &ReduceOp::Min)?;
        c.all_gather(&sb[i], &mut ob[i])?;
        c.broadcast(Some(&sd[i]), &mut od[i], 0).map(drop)
    });
    local.check("group: all_reduce Min", &oa, |_| (0..len).map(|i| reduced(&a, ReduceOp::Min, i)).collect());
    local.check("group: all_gather", &ob, |_| copied(&b.concat()));
    local.check("group: broadcast from 0", &od, |_| copied(&d[0]));
}
