//! cudarc 0.19's safe NCCL layer: [`Comm`], [`Id`], [`ReduceOp`], [`NcclType`].
//!
//! Each collective checks, before anything is enqueued, what NCCL would otherwise take on trust:
//! the buffers belong to the communicator's context and hold the elements NCCL reads or writes,
//! roots and peers are ranks of the world. A failed check is `ncclInvalidArgument`.

use core::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use super::result::{self, NcclError, NcclStatus};
use super::sys;
use crate::driver::{sys::CUdeviceptr, CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice};

pub use result::{group_end, group_start};

fn invalid_argument() -> NcclError {
    NcclError(sys::ncclResult_t::ncclInvalidArgument)
}

/// One rank's communicator: a device (the context of its stream), its rank and the world size.
///
/// Not `Send`, as in cudarc. Dropping it aborts the communicator (`ncclCommAbort`).
#[derive(Debug)]
pub struct Comm {
    comm: sys::ncclComm_t,
    stream: Arc<CudaStream>,
    rank: usize,
    world_size: usize,
}

/// The rendezvous id every rank of one world passes to [`Comm::from_rank`].
#[derive(Debug, Clone, Copy)]
pub struct Id {
    id: sys::ncclUniqueId,
}

impl Id {
    /// A new id (`ncclGetUniqueId`); make it on one rank and send [`Id::internal`] to the others.
    pub fn new() -> Result<Self, NcclError> {
        Ok(Self { id: result::get_uniqueid()? })
    }

    /// The id whose bytes another rank got from [`Id::internal`].
    pub fn uninit(internal: [c_char; 128]) -> Self {
        Self { id: sys::ncclUniqueId { internal } }
    }

    /// The id's bytes, to send to the other ranks.
    pub fn internal(&self) -> &[c_char; 128] {
        &self.id.internal
    }
}

/// A built-in reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Average (sum divided by the world size).
    Avg,
}

impl ReduceOp {
    /// NCCL's op for `T`; sums, products and averages of `char`s are refused (they can leave
    /// values that are not `char`s).
    fn for_type<T: NcclType>(self) -> Result<sys::ncclRedOp_t, NcclError> {
        use sys::ncclRedOp_t as Op;
        match self {
            ReduceOp::Max => Ok(Op::ncclMax),
            ReduceOp::Min => Ok(Op::ncclMin),
            _ if !T::ARITHMETIC => Err(invalid_argument()),
            ReduceOp::Sum => Ok(Op::ncclSum),
            ReduceOp::Prod => Ok(Op::ncclProd),
            ReduceOp::Avg => Ok(Op::ncclAvg),
        }
    }
}

mod sealed {
    /// Only this crate names NCCL types: a wrong element size would let NCCL write past a buffer.
    pub trait Sealed {
        /// Whether sums, products and averages of values are values.
        const ARITHMETIC: bool = true;
    }
}

/// An element type NCCL moves and reduces: f32, f64, i8, i32, i64, u8, u32, u64, char, f16, bf16.
pub trait NcclType: sealed::Sealed {
    /// NCCL's name for the type (of the same size).
    fn as_nccl_type() -> sys::ncclDataType_t;
}

macro_rules! nccl_types {
    ($($t:ty => $nccl:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl NcclType for $t {
            fn as_nccl_type() -> sys::ncclDataType_t {
                sys::ncclDataType_t::$nccl
            }
        }
    )*};
}

nccl_types!(
    f32 => ncclFloat32,
    f64 => ncclFloat64,
    i8 => ncclInt8,
    i32 => ncclInt32,
    i64 => ncclInt64,
    u8 => ncclUint8,
    u32 => ncclUint32,
    u64 => ncclUint64,
    half::f16 => ncclFloat16,
    half::bf16 => ncclBfloat16,
);

// A `char` is 4 bytes: moved as u32 (cudarc's u8 moves a quarter of the data).
impl sealed::Sealed for char {
    const ARITHMETIC: bool = false;
}
impl NcclType for char {
    fn as_nccl_type() -> sys::ncclDataType_t {
        sys::ncclDataType_t::ncclUint32
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // Errors cannot be returned from Drop; the communicator is gone either way.
        if self.stream.context().bind_to_thread().is_ok() {
            // SAFETY: `comm` came from NCCL's init and is not used after this.
            let _ = unsafe { result::comm_abort(self.comm) };
        }
    }
}

impl Comm {
    /// One communicator per stream, ranks in the order given, from this thread
    /// (`ncclCommInitAll` on the streams' devices; NCCL uses each device's primary context).
    ///
    /// An empty list is `ncclInvalidArgument`.
    pub fn from_devices(streams: Vec<Arc<CudaStream>>) -> Result<Vec<Self>, NcclError> {
        let world_size = streams.len();
        let ndev = c_int::try_from(world_size).map_err(|_| invalid_argument())?;
        if ndev == 0 {
            return Err(invalid_argument());
        }
        let ordinals = streams
            .iter()
            .map(|s| c_int::try_from(s.context().ordinal()).map_err(|_| invalid_argument()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut comms = vec![std::ptr::null_mut(); world_size];
        // SAFETY: `comms` has room for `ndev` communicators and `ordinals` holds `ndev` ordinals.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), ndev, ordinals.as_ptr()) }?;
        Ok(comms
            .into_iter()
            .zip(streams)
            .enumerate()
            .map(|(rank, (comm, stream))| Self { comm, stream, rank, world_size })
            .collect())
    }

    /// This rank's communicator of a world of `world_size`, met through `id`
    /// (`ncclCommInitRank`, in the context of `stream`). Blocks until every rank has joined.
    ///
    /// A rank outside `0..world_size`, or sizes beyond `i32`, are `ncclInvalidArgument`.
    pub fn from_rank(
        stream: Arc<CudaStream>,
        rank: usize,
        world_size: usize,
        id: Id,
    ) -> Result<Self, NcclError> {
        let nranks = c_int::try_from(world_size).map_err(|_| invalid_argument())?;
        if rank >= world_size {
            return Err(invalid_argument());
        }
        // In range of `world_size`, so of `c_int`.
        let rank_int = rank as c_int;
        bind(&stream)?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is a valid out-pointer; the stream's context is current.
        unsafe { result::comm_init_rank(&mut comm, nranks, id.id, rank_int) }?;
        Ok(Self { comm, stream, rank, world_size })
    }

    /// The stream collectives are ordered on.
    pub fn stream(&self) -> Arc<CudaStream> {
        self.stream.clone()
    }

    /// The context of [`Comm::stream`].
    pub fn context(&self) -> &Arc<CudaContext> {
        self.stream.context()
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.stream.context().ordinal()
    }

    /// This communicator's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// `rank` as NCCL's `int`, or `ncclInvalidArgument` when it is not a rank of the world.
    fn check_rank(&self, rank: i32) -> Result<c_int, NcclError> {
        match usize::try_from(rank) {
            Ok(r) if r < self.world_size => Ok(rank),
            _ => Err(invalid_argument()),
        }
    }

    /// `Ok` when `buffer` is of this communicator's context and holds at least `len` elements.
    fn check_buffer<T>(&self, buffer: &impl DeviceSlice<T>, len: usize) -> Result<(), NcclError> {
        // The built-in launchers' context check (`kernels::args::same_context`), written out: NCCL
        // sits below the kernels.
        let (ours, theirs) = (self.stream.context(), buffer.stream().context());
        if !(Arc::ptr_eq(ours, theirs) || ours == theirs) {
            return Err(invalid_argument());
        }
        if buffer.len() < len {
            return Err(invalid_argument());
        }
        Ok(())
    }

    /// `count × world size` elements, or `ncclInvalidArgument` on overflow.
    fn times_world(&self, count: usize) -> Result<usize, NcclError> {
        count.checked_mul(self.world_size).ok_or_else(invalid_argument)
    }

    fn cu_stream(&self) -> sys::cudaStream_t {
        self.stream.cu_stream as sys::cudaStream_t
    }

    /// Sends `data` to rank `peer` (`ncclSend`), which receives as many elements.
    pub fn send<S: DevicePtr<T>, T: NcclType>(&self, data: &S, peer: i32) -> Result<(), NcclError> {
        let peer = self.check_rank(peer)?;
        self.check_buffer(data, 0)?;
        let (src, _read) = data.device_ptr(&self.stream);
        bind(&self.stream)?;
        // SAFETY: `src` holds `data.len()` elements of `T` in this communicator's context and stays
        // alive (stream-ordered free) until the work on `stream` completes.
        unsafe {
            result::send(address(src), data.len(), T::as_nccl_type(), peer, self.comm, self.cu_stream())
        }?;
        Ok(())
    }

    /// Receives `buff.len()` elements from rank `peer` (`ncclRecv`), which sends as many.
    pub fn recv<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        buff: &mut R,
        peer: i32,
    ) -> Result<NcclStatus, NcclError> {
        let peer = self.check_rank(peer)?;
        self.check_buffer(buff, 0)?;
        let count = buff.len();
        let (dst, _write) = buff.device_ptr_mut(&self.stream);
        bind(&self.stream)?;
        // SAFETY: `dst` holds `count` elements of `T` in this context (as in `send`).
        unsafe { result::recv(address_mut(dst), count, T::as_nccl_type(), peer, self.comm, self.cu_stream()) }
    }

    /// Copies `recvbuff.len()` elements of `sendbuff` on rank `root` into every rank's `recvbuff`
    /// (`ncclBroadcast`). `sendbuff` is read on `root` only, where it must be given and hold as many
    /// elements.
    pub fn broadcast<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: Option<&S>,
        recvbuff: &mut R,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let root = self.check_rank(root)?;
        let count = recvbuff.len();
        self.check_buffer(recvbuff, count)?;
        match sendbuff {
            Some(s) => self.check_buffer(s, if self.rank == root as usize { count } else { 0 })?,
            None if self.rank == root as usize => return Err(invalid_argument()),
            None => {}
        }
        let (src, _read) = sendbuff.map(|b| b.device_ptr(&self.stream)).unzip();
        let (dst, _write) = recvbuff.device_ptr_mut(&self.stream);
        let src = src.map_or(std::ptr::null(), address);
        bind(&self.stream)?;
        // SAFETY: `dst` holds `count` elements and, on the root, `src` too (checked above), all in
        // this communicator's context.
        unsafe {
            result::broadcast(
                src,
                address_mut(dst),
                count,
                T::as_nccl_type(),
                root,
                self.comm,
                self.cu_stream(),
            )
        }
    }

    /// [`Comm::broadcast`] from and into `recvbuff`.
    pub fn broadcast_in_place<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        recvbuff: &mut R,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let root = self.check_rank(root)?;
        self.in_place(recvbuff, |src, dst, count| {
            // SAFETY: `dst` holds `count` elements in this context; NCCL allows in-place broadcast.
            unsafe {
                result::broadcast(src, dst, count, T::as_nccl_type(), root, self.comm, self.cu_stream())
            }
        })
    }

    /// Every rank's `sendbuff`, concatenated in rank order into every rank's `recvbuff`
    /// (`ncclAllGather`), which must hold `sendbuff.len() × world size` elements.
    pub fn all_gather<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
    ) -> Result<NcclStatus, NcclError> {
        let count = sendbuff.len();
        self.out_of_place(sendbuff, count, recvbuff, self.times_world(count)?, |src, dst| {
            // SAFETY: `src` holds `count` and `dst` `count × world size` elements in this context.
            unsafe { result::all_gather(src, dst, count, T::as_nccl_type(), self.comm, self.cu_stream()) }
        })
    }

    /// `sendbuff` reduced over every rank into every rank's `recvbuff` (`ncclAllReduce`), which
    /// must hold at least `sendbuff.len()` elements.
    pub fn all_reduce<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let op = reduce_op.for_type::<T>()?;
        let count = sendbuff.len();
        self.out_of_place(sendbuff, count, recvbuff, count, |src, dst| {
            // SAFETY: both buffers hold `count` elements in this context (checked).
            unsafe { result::all_reduce(src, dst, count, T::as_nccl_type(), op, self.comm, self.cu_stream()) }
        })
    }

    /// [`Comm::all_reduce`] from and into `buff`.
    pub fn all_reduce_in_place<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        buff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let op = reduce_op.for_type::<T>()?;
        self.in_place(buff, |src, dst, count| {
            // SAFETY: `dst` holds `count` elements in this context; NCCL allows in-place all-reduce.
            unsafe { result::all_reduce(src, dst, count, T::as_nccl_type(), op, self.comm, self.cu_stream()) }
        })
    }

    /// `sendbuff` reduced over every rank into `recvbuff` on rank `root` (`ncclReduce`); there
    /// `recvbuff` must be given and hold at least `sendbuff.len()` elements, elsewhere it is unused.
    pub fn reduce<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: Option<&mut R>,
        reduce_op: &ReduceOp,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let root = self.check_rank(root)?;
        let op = reduce_op.for_type::<T>()?;
        let count = sendbuff.len();
        self.check_buffer(sendbuff, count)?;
        match recvbuff.as_deref() {
            Some(r) => self.check_buffer(r, if self.rank == root as usize { count } else { 0 })?,
            None if self.rank == root as usize => return Err(invalid_argument()),
            None => {}
        }
        let (src, _read) = sendbuff.device_ptr(&self.stream);
        let (dst, _write) = recvbuff.map(|b| b.device_ptr_mut(&self.stream)).unzip();
        let dst = dst.map_or(std::ptr::null_mut(), address_mut);
        bind(&self.stream)?;
        // SAFETY: `src` holds `count` elements and, on the root, `dst` too, in this context.
        unsafe {
            result::reduce(address(src), dst, count, T::as_nccl_type(), op, root, self.comm, self.cu_stream())
        }
    }

    /// [`Comm::reduce`] from and into `recvbuff` (its contents are undefined on other ranks).
    pub fn reduce_in_place<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        recvbuff: &mut R,
        reduce_op: &ReduceOp,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let root = self.check_rank(root)?;
        let op = reduce_op.for_type::<T>()?;
        self.in_place(recvbuff, |src, dst, count| {
            // SAFETY: `dst` holds `count` elements in this context; NCCL allows in-place reduce.
            unsafe {
                result::reduce(src, dst, count, T::as_nccl_type(), op, root, self.comm, self.cu_stream())
            }
        })
    }

    /// `sendbuff` (`recvbuff.len() × world size` elements at least) reduced over every rank, rank
    /// `r` receiving block `r` in `recvbuff` (`ncclReduceScatter`).
    pub fn reduce_scatter<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let op = reduce_op.for_type::<T>()?;
        let count = recvbuff.len();
        self.out_of_place(sendbuff, self.times_world(count)?, recvbuff, count, |src, dst| {
            // SAFETY: `src` holds `count × world size` and `dst` `count` elements in this context.
            unsafe {
                result::reduce_scatter(src, dst, count, T::as_nccl_type(), op, self.comm, self.cu_stream())
            }
        })
    }

    /// An in-place collective: checks `buff`, takes its address for this stream, binds the
    /// context and runs `call(address, address, buff.len())` while the address is held.
    fn in_place<R: DevicePtrMut<T>, T, U>(
        &self,
        buff: &mut R,
        call: impl FnOnce(*const c_void, *mut c_void, usize) -> Result<U, NcclError>,
    ) -> Result<U, NcclError> {
        self.check_buffer(buff, 0)?;
        let count = buff.len();
        let (dst, _write) = buff.device_ptr_mut(&self.stream);
        bind(&self.stream)?;
        call(address(dst), address_mut(dst), count)
    }

    /// An out-of-place collective: checks that `sendbuff` holds `send_len` and `recvbuff`
    /// `recv_len` elements in this context, takes their addresses for this stream, binds the
    /// context and runs `call(send, recv)` while the addresses are held.
    fn out_of_place<S: DevicePtr<T>, R: DevicePtrMut<T>, T, U>(
        &self,
        sendbuff: &S,
        send_len: usize,
        recvbuff: &mut R,
        recv_len: usize,
        call: impl FnOnce(*const c_void, *mut c_void) -> Result<U, NcclError>,
    ) -> Result<U, NcclError> {
        self.check_buffer(sendbuff, send_len)?;
        self.check_buffer(recvbuff, recv_len)?;
        let (src, _read) = sendbuff.device_ptr(&self.stream);
        let (dst, _write) = recvbuff.device_ptr_mut(&self.stream);
        bind(&self.stream)?;
        call(address(src), address_mut(dst))
    }
}

/// Makes `stream`'s context current: NCCL enqueues into the calling thread's context.
fn bind(stream: &CudaStream) -> Result<(), NcclError> {
    stream.context().bind_to_thread().map_err(|_| NcclError(sys::ncclResult_t::ncclUnhandledCudaError))
}

fn address(ptr: CUdeviceptr) -> *const c_void {
    ptr as usize as *const c_void
}

fn address_mut(ptr: CUdeviceptr) -> *mut c_void {
    ptr as usize as *mut c_void
}

#[cfg(test)]
mod tests {
    use super::*;
    use sys::ncclRedOp_t as Op;

    #[test]
    fn chars_are_four_bytes_and_only_compared() {
        assert_eq!(char::as_nccl_type(), sys::ncclDataType_t::ncclUint32);
        assert_eq!(ReduceOp::Max.for_type::<char>(), Ok(Op::ncclMax));
        assert_eq!(ReduceOp::Min.for_type::<char>(), Ok(Op::ncclMin));
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Avg] {
            assert_eq!(op.for_type::<char>(), Err(invalid_argument()));
        }
    }

    #[test]
    fn numbers_take_every_op() {
        let ops = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];
        let nccl = [Op::ncclSum, Op::ncclProd, Op::ncclMax, Op::ncclMin, Op::ncclAvg];
        for (op, expected) in ops.into_iter().zip(nccl) {
            assert_eq!(op.for_type::<f32>(), Ok(expected));
            assert_eq!(op.for_type::<half::bf16>(), Ok(expected));
        }
    }
}
