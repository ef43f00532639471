//! cudarc 0.19's `nccl::result`: one function per NCCL call, the same names and signatures,
//! returning `Result<_, NcclError>` instead of a raw [`sys::ncclResult_t`].
//!
//! Every call goes through the process-wide NCCL ([`crate::sys::nccl_library()`]): without one, or with one
//! that lacks the entry point, the call returns `NcclError(ncclSystemError)` and
//! [`NcclError::load_error`] says why.

use core::ffi::{c_int, c_void, CStr};
use std::mem::MaybeUninit;

use super::sys;
use crate::sys::LoadError;

/// An NCCL call that did not succeed.
///
/// `Display` gives the status's name and NCCL's description of it (`ncclGetErrorString`); when
/// NCCL could not be loaded, the loader's reason instead, naming every library tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NcclError(pub sys::ncclResult_t);

/// What a call that did not fail returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NcclStatus {
    /// `ncclSuccess`.
    Success,
    /// `ncclInProgress`: a non-blocking communicator is still working.
    InProgress,
    /// `ncclNumResults` (not an error in cudarc either).
    NumResults,
}

impl sys::ncclResult_t {
    /// `Ok` for success, in-progress and `ncclNumResults` (as cudarc), else the status as an error.
    pub fn result(self) -> Result<NcclStatus, NcclError> {
        match self {
            sys::ncclResult_t::ncclSuccess => Ok(NcclStatus::Success),
            sys::ncclResult_t::ncclInProgress => Ok(NcclStatus::InProgress),
            sys::ncclResult_t::ncclNumResults => Ok(NcclStatus::NumResults),
            _ => Err(NcclError(self)),
        }
    }
}

impl NcclError {
    /// Why NCCL is unusable, when this error stands for that: `ncclSystemError` while the
    /// process-wide NCCL could not be loaded ([`LoadError::LibraryNotFound`] lists every name
    /// tried). `None` for an error NCCL itself returned.
    pub fn load_error(&self) -> Option<LoadError> {
        if self.0 != sys::ncclResult_t::ncclSystemError {
            return None;
        }
        crate::sys::nccl_library().err()
    }

    /// NCCL's description of the status, when an NCCL is loaded.
    #[doc(alias = "ncclGetErrorString")]
    fn description(&self) -> Option<String> {
        let nccl = crate::sys::nccl_library().ok()?;
        // SAFETY: ncclGetErrorString takes any status value and returns a static string or null.
        let text = unsafe { nccl.ncclGetErrorString(self.0) }.ok()?;
        // SAFETY: a non-null result is a NUL-terminated string NCCL keeps for the process's life.
        (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    }
}

impl std::fmt::Display for NcclError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.0.name();
        if let Some(load) = self.load_error() {
            return write!(f, "{name}: NCCL is not usable: {load}");
        }
        match self.description() {
            Some(text) => write!(f, "{name}: {text}"),
            None => f.write_str(name),
        }
    }
}

impl std::error::Error for NcclError {}

/// NCCL calls passed on as they are: `pub unsafe fn name(arguments) => ncclName;` calls the loaded
/// NCCL's `ncclName` with the same arguments and gives its result code as a `Result`. Each keeps the
/// C function's contract, stated in its `# Safety`.
macro_rules! forwarders {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $nccl:ident;)+) => {$(
        $(#[$attr])*
        pub unsafe fn $name($($arg: $ty),*) -> Result<NcclStatus, NcclError> {
            // SAFETY: forwarded from this function's contract.
            unsafe { sys::$nccl($($arg),*) }.result()
        }
    )+};
}

forwarders! {
    /// The status of `ncclCommFinalize`.
    ///
    /// # Safety
    /// `comm` is a live communicator.
    pub unsafe fn comm_finalize(comm: sys::ncclComm_t) => ncclCommFinalize;

    /// Frees `comm` after its work completes (`ncclCommDestroy`).
    ///
    /// # Safety
    /// `comm` is a live communicator, not used afterwards.
    pub unsafe fn comm_destroy(comm: sys::ncclComm_t) => ncclCommDestroy;

    /// Frees `comm`, abandoning its pending work (`ncclCommAbort`).
    ///
    /// # Safety
    /// `comm` is a live communicator, not used afterwards.
    pub unsafe fn comm_abort(comm: sys::ncclComm_t) => ncclCommAbort;
}

/// The loaded NCCL's version code (`22809` for 2.28.9), `ncclGetVersion`.
pub fn get_nccl_version() -> Result<c_int, NcclError> {
    let mut version: c_int = 0;
    // SAFETY: `version` is a valid out-pointer.
    unsafe { sys::ncclGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// A new rendezvous id for [`comm_init_rank`] (`ncclGetUniqueId`).
pub fn get_uniqueid() -> Result<sys::ncclUniqueId, NcclError> {
    let mut id = MaybeUninit::<sys::ncclUniqueId>::uninit();
    // SAFETY: `id` is a valid out-pointer of the declared type.
    unsafe { sys::ncclGetUniqueId(id.as_mut_ptr()) }.result()?;
    // SAFETY: on success NCCL wrote the whole id (any bytes are a valid `ncclUniqueId`).
    Ok(unsafe { id.assume_init() })
}

forwarders! {
    /// `ncclCommInitRankConfig`.
    ///
    /// # Safety
    /// `comm` is a valid out-pointer and `config` a valid, initialised config (or null).
    pub unsafe fn comm_init_rank_config(comm: *mut sys::ncclComm_t, nranks: c_int,
        comm_id: sys::ncclUniqueId, rank: c_int, config: *mut sys::ncclConfig_t) => ncclCommInitRankConfig;

    /// `ncclCommInitRank`: this process's (or thread's) rank of a world of `nranks`.
    ///
    /// # Safety
    /// `comm` is a valid out-pointer; the CUDA device of the calling thread is the rank's device.
    pub unsafe fn comm_init_rank(comm: *mut sys::ncclComm_t, nranks: c_int, comm_id: sys::ncclUniqueId,
        rank: c_int) => ncclCommInitRank;

    /// `ncclCommInitAll`: one communicator per device of `devlist`, from one thread.
    ///
    /// # Safety
    /// `comm` has room for `ndev` communicators and `devlist` holds `ndev` device ordinals.
    pub unsafe fn comm_init_all(comm: *mut sys::ncclComm_t, ndev: c_int, devlist: *const c_int)
        => ncclCommInitAll;

    /// `ncclCommSplit`.
    ///
    /// # Safety
    /// `comm` is live, `newcomm` a valid out-pointer, `config` a valid config or null.
    pub unsafe fn comm_split(comm: sys::ncclComm_t, color: c_int, key: c_int, newcomm: *mut sys::ncclComm_t,
        config: *mut sys::ncclConfig_t) => ncclCommSplit;
}

/// The number of ranks of `comm` (`ncclCommCount`).
///
/// # Safety
/// `comm` is a live communicator.
pub unsafe fn comm_count(comm: sys::ncclComm_t) -> Result<c_int, NcclError> {
    let mut count = 0;
    // SAFETY: `comm` per the contract; `count` is a valid out-pointer.
    unsafe { sys::ncclCommCount(comm, &mut count) }.result()?;
    Ok(count)
}

/// The CUDA device of `comm` (`ncclCommCuDevice`).
///
/// # Safety
/// `comm` is a live communicator.
pub unsafe fn comm_cu_device(comm: sys::ncclComm_t) -> Result<c_int, NcclError> {
    let mut device = 0;
    // SAFETY: `comm` per the contract; `device` is a valid out-pointer.
    unsafe { sys::ncclCommCuDevice(comm, &mut device) }.result()?;
    Ok(device)
}

/// The rank of `comm` (`ncclCommUserRank`).
///
/// # Safety
/// `comm` is a live communicator.
pub unsafe fn comm_user_rank(comm: sys::ncclComm_t) -> Result<c_int, NcclError> {
    let mut rank = 0;
    // SAFETY: `comm` per the contract; `rank` is a valid out-pointer.
    unsafe { sys::ncclCommUserRank(comm, &mut rank) }.result()?;
    Ok(rank)
}

forwarders! {
    /// `ncclRedOpCreatePreMulSum`. The op NCCL creates must fit [`sys::ncclRedOp_t`]'s variants
    /// (cudarc's enum has no room for the others): one that does not is `ncclInternalError`.
    ///
    /// # Safety
    /// `op` is a valid out-pointer, `scalar` points at one `datatype` where `residence` says, `comm`
    /// is live.
    pub unsafe fn reduce_op_create_pre_mul_sum(op: *mut sys::ncclRedOp_t, scalar: *mut c_void,
        datatype: sys::ncclDataType_t, residence: sys::ncclScalarResidence_t, comm: sys::ncclComm_t)
        => ncclRedOpCreatePreMulSum;

    /// `ncclRedOpDestroy`.
    ///
    /// # Safety
    /// `op` was created on `comm`, which is live.
    pub unsafe fn reduce_op_destroy(op: sys::ncclRedOp_t, comm: sys::ncclComm_t) => ncclRedOpDestroy;

    /// `ncclReduce`: `count` elements of every rank's `sendbuff`, reduced into `recvbuff` on `root`.
    ///
    /// # Safety
    /// The buffers are device memory of `comm`'s device holding `count` elements of `datatype` (the
    /// receive buffer only on `root`), alive until the work on `stream` completes.
    #[allow(clippy::too_many_arguments)] // NCCL's signature
    pub unsafe fn reduce(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize,
        datatype: sys::ncclDataType_t, op: sys::ncclRedOp_t, root: c_int, comm: sys::ncclComm_t,
        stream: sys::cudaStream_t) => ncclReduce;

    /// `ncclBroadcast`: `count` elements of `sendbuff` on `root` into every rank's `recvbuff`.
    ///
    /// # Safety
    /// As for [`reduce`]; `sendbuff` is read on `root` only.
    pub unsafe fn broadcast(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize,
        datatype: sys::ncclDataType_t, root: c_int, comm: sys::ncclComm_t, stream: sys::cudaStream_t)
        => ncclBroadcast;

    /// `ncclAllReduce`: `count` elements, reduced over every rank, into every rank's `recvbuff`.
    ///
    /// # Safety
    /// As for [`reduce`], on every rank.
    pub unsafe fn all_reduce(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize,
        datatype: sys::ncclDataType_t, op: sys::ncclRedOp_t, comm: sys::ncclComm_t,
        stream: sys::cudaStream_t) => ncclAllReduce;

    /// `ncclReduceScatter`: `recvcount × nranks` elements reduced, rank `r` receiving block `r`.
    ///
    /// # Safety
    /// `sendbuff` holds `recvcount × nranks` elements and `recvbuff` `recvcount`; otherwise as for
    /// [`reduce`].
    pub unsafe fn reduce_scatter(sendbuff: *const c_void, recvbuff: *mut c_void, recvcount: usize,
        datatype: sys::ncclDataType_t, op: sys::ncclRedOp_t, comm: sys::ncclComm_t,
        stream: sys::cudaStream_t) => ncclReduceScatter;

    /// `ncclAllGather`: every rank's `sendcount` elements, concatenated in rank order on every rank.
    ///
    /// # Safety
    /// `recvbuff` holds `sendcount × nranks` elements; otherwise as for [`reduce`].
    pub unsafe fn all_gather(sendbuff: *const c_void, recvbuff: *mut c_void, sendcount: usize,
        datatype: sys::ncclDataType_t, comm: sys::ncclComm_t, stream: sys::cudaStream_t) => ncclAllGather;

    /// `ncclSend`: `count` elements to `peer`, which posts a matching [`recv`].
    ///
    /// # Safety
    /// As for [`reduce`].
    pub unsafe fn send(sendbuff: *const c_void, count: usize, datatype: sys::ncclDataType_t, peer: c_int,
        comm: sys::ncclComm_t, stream: sys::cudaStream_t) => ncclSend;

    /// `ncclRecv`: `count` elements from `peer`, which posts a matching [`send`].
    ///
    /// # Safety
    /// As for [`reduce`].
    pub unsafe fn recv(recvbuff: *mut c_void, count: usize, datatype: sys::ncclDataType_t, peer: c_int,
        comm: sys::ncclComm_t, stream: sys::cudaStream_t) => ncclRecv;
}

/// Ends a group: the calls since [`group_start`] are launched together (`ncclGroupEnd`).
pub fn group_end() -> Result<NcclStatus, NcclError> {
    // SAFETY: no arguments; NCCL reports a group_end without a group_start as an error.
    unsafe { sys::ncclGroupEnd() }.result()
}

/// Starts a group of calls, launched together by [`group_end`] (`ncclGroupStart`).
pub fn group_start() -> Result<NcclStatus, NcclError> {
    // SAFETY: no arguments.
    unsafe { sys::ncclGroupStart() }.result()
}
