//! cudarc 0.19 modules that prism-gpu does not provide.
//!
//! Each module's Cargo feature exists so that a cudarc dependency line naming it still builds. With the
//! feature on, the module exists and holds the entry points callers reach first (`cudnn::Cudnn::new`,
//! `cufft::CudaFft::plan_1d`, ...), but each of them carries a `where PhantomData<&'a ()>: NotProvided` bound
//! that nothing satisfies (the lifetime makes it a bound checked at each call, not at the definition): calling one is a compile error (also under `cargo check`) whose message names the
//! module, instead of a program that builds and fails at run time. The types are uninhabited.

/// Generates one unprovided module: its `NotProvided` trait (the failing bound, with the message) and
/// its entry points. `@items [trait path]` generates items bound on that trait (the one of the module holding
/// them, whatever their nesting); `@here` puts the trait and the items in an existing module.
macro_rules! unprovided {
    (
        $(#[$meta:meta])*
        pub mod $name:ident, $message:literal { $($body:tt)* }
    ) => {
        $(#[$meta])*
        pub mod $name {
            $crate::unprovided::unprovided!(
                @here [$crate::unprovided::$name::NotProvided], $message { $($body)* }
            );
        }
    };
    // The trait and the items in place, inside an existing module whose path is given.
    (@here [$tr:path], $message:literal { $($body:tt)* }) => {
        /// Implemented by no type: the bound every entry point of cudarc's module of this name
        /// carries, so that calling one fails to compile with a message naming it.
        #[diagnostic::on_unimplemented(
            message = $message,
            label = "prism-gpu does not provide this cudarc module",
            note = "keep the real cudarc for this module, or drop the call; see prism-gpu's README, \
                    \"Switching from cudarc\""
        )]
        pub trait NotProvided {
            /// A value of an uninhabited type: unreachable, since nothing implements the trait.
            const NEVER: ::core::convert::Infallible;
        }
        $crate::unprovided::unprovided!(@items [$tr]; $($body)*);
    };
    (@items [$tr:path];) => {};
    (@items [$tr:path];
        pub struct $ty:ident { $(fn $f:ident($($arg:ident),*) -> $ret:ty;)* }
        $($rest:tt)*
    ) => {
        /// Not provided by prism-gpu (an uninhabited type); its constructors do not compile.
        #[derive(Debug)]
        pub struct $ty(::core::convert::Infallible);
        impl $ty {
            $($crate::unprovided::unprovided!(@fn [$tr] $f($($arg),*) -> $ret);)*
        }
        $crate::unprovided::unprovided!(@items [$tr]; $($rest)*);
    };
    (@items [$tr:path];
        pub fn $f:ident($($arg:ident),*) -> $ret:ty;
        $($rest:tt)*
    ) => {
        $crate::unprovided::unprovided!(@fn [$tr] $f($($arg),*) -> $ret);
        $crate::unprovided::unprovided!(@items [$tr]; $($rest)*);
    };
    // One entry point, a free function or a method: bound on the trait nothing implements.
    (@fn [$tr:path] $f:ident($($arg:ident),*) -> $ret:ty) => {
        /// Not provided by prism-gpu: calling this is a compile error.
        #[allow(clippy::new_ret_no_self, clippy::too_many_arguments)]
        pub fn $f<'a>($($arg: impl Sized),*) -> $ret
        where
            ::core::marker::PhantomData<&'a ()>: $tr,
        {
            $(let _ = $arg;)*
            match <::core::marker::PhantomData<&'a ()> as $tr>::NEVER {}
        }
    };
    (@items [$tr:path];
        pub enum $err:ident;
        $($rest:tt)*
    ) => {
        /// The module's error type; uninhabited, since nothing in the module can run.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $err {}
        impl ::core::fmt::Display for $err {
            fn fmt(&self, _: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match *self {}
            }
        }
        impl ::std::error::Error for $err {}
        $crate::unprovided::unprovided!(@items [$tr]; $($rest)*);
    };
    (@items [$tr:path];
        pub mod $sub:ident { $($inner:tt)* }
        $($rest:tt)*
    ) => {
        /// Not provided by prism-gpu.
        pub mod $sub {
            $crate::unprovided::unprovided!(@items [$tr]; $($inner)*);
        }
        $crate::unprovided::unprovided!(@items [$tr]; $($rest)*);
    };
}

// Return types follow cudarc's (`Result<Arc<Self>, E>` where its constructor returns an `Arc`), so
// that code after the call type-checks as it would against cudarc and only our error is reported.

unprovided! {
    /// cudarc's cuDNN module: **not provided by prism-gpu** (feature `cudnn` / `cudnn-0xxxx` accepted).
    /// Calling `Cudnn::new` is a compile error.
    #[cfg(feature = "cudnn")]
    pub mod cudnn, "prism-gpu does not provide cudarc::cudnn (cuDNN)" {
        pub enum CudnnError;
        pub struct Cudnn { fn new(stream) -> Result<::std::sync::Arc<Self>, CudnnError>; }
    }
}

unprovided! {
    /// cudarc's cuFFT module: **not provided by prism-gpu** (feature `cufft` accepted). Calling
    /// `CudaFft::plan_1d` / `plan_2d` / `plan_3d` / `plan_many` is a compile error.
    #[cfg(feature = "cufft")]
    pub mod cufft, "prism-gpu does not provide cudarc::cufft (cuFFT)" {
        pub struct CudaFft {
            fn plan_1d(nx, type_, batch, stream) -> Result<Self, result::CufftError>;
            fn plan_2d(nx, ny, type_, stream) -> Result<Self, result::CufftError>;
            fn plan_3d(nx, ny, nz, type_, stream) -> Result<Self, result::CufftError>;
            fn plan_many(
                rank, n, inembed, istride, idist, onembed, ostride, odist, type_, batch, stream
            ) -> Result<Self, result::CufftError>;
        }
        pub mod result {
            pub enum CufftError;
        }
    }
}

unprovided! {
    /// cudarc's cuFile (GPUDirect Storage) module: **not provided by prism-gpu** (feature `cufile`
    /// accepted). Calling `Cufile::new` is a compile error.
    #[cfg(feature = "cufile")]
    pub mod cufile, "prism-gpu does not provide cudarc::cufile (cuFile / GPUDirect Storage)" {
        pub enum CufileError;
        pub struct Cufile { fn new() -> Result<::std::sync::Arc<Self>, CufileError>; }
    }
}

unprovided! {
    /// cudarc's CUPTI module: **not provided by prism-gpu** (feature `cupti` accepted). Calling
    /// `result::subscribe` or `result::activity::enable` is a compile error.
    #[cfg(feature = "cupti")]
    pub mod cupti, "prism-gpu does not provide cudarc::cupti (CUPTI)" {
        pub mod result {
            pub enum CuptiError;
            pub fn subscribe(subscriber, callback, user_data) -> Result<(), CuptiError>;
            pub mod activity {
                pub fn enable(kind) -> Result<(), super::CuptiError>;
            }
        }
    }
}

unprovided! {
    /// cudarc's cuSOLVER module: **not provided by prism-gpu** (feature `cusolver` accepted). Calling
    /// `DnHandle::new`, `SpHandle::new` or `RfHandle::new` is a compile error.
    #[cfg(feature = "cusolver")]
    pub mod cusolver, "prism-gpu does not provide cudarc::cusolver (cuSOLVER)" {
        pub enum CusolverError;
        pub struct DnHandle { fn new(stream) -> Result<Self, CusolverError>; }
        pub struct SpHandle { fn new(stream) -> Result<Self, CusolverError>; }
        pub struct RfHandle { fn new() -> Result<Self, CusolverError>; }
    }
}

unprovided! {
    /// cudarc's cuSOLVERMg module: **not provided by prism-gpu** (feature `cusolvermg` accepted).
    /// Calling `MgHandle::new` is a compile error.
    #[cfg(feature = "cusolvermg")]
    pub mod cusolvermg, "prism-gpu does not provide cudarc::cusolvermg (cuSOLVERMg)" {
        pub enum CusolverMgError;
        pub struct MgHandle { fn new() -> Result<Self, CusolverMgError>; }
    }
}

unprovided! {
    /// cudarc's cuSPARSE module: **not provided by prism-gpu** (feature `cusparse` accepted). Calling
    /// `result::create` is a compile error.
    #[cfg(feature = "cusparse")]
    pub mod cusparse, "prism-gpu does not provide cudarc::cusparse (cuSPARSE)" {
        pub mod result {
            pub enum CusparseError;
            pub fn create() -> Result<(), CusparseError>;
        }
    }
}

unprovided! {
    /// cudarc's cuTENSOR module: **not provided by prism-gpu** (feature `cutensor` /
    /// `cutensor-020xx` accepted). Calling `result::create_handle` is a compile error.
    #[cfg(feature = "cutensor")]
    pub mod cutensor, "prism-gpu does not provide cudarc::cutensor (cuTENSOR)" {
        pub mod result {
            pub enum CutensorError;
            pub fn create_handle() -> Result<(), CutensorError>;
        }
    }
}

unprovided! {
    /// cudarc's NVTX module: **not provided by prism-gpu** (feature `nvtx` accepted). Calling
    /// `scoped_range`, `mark` or `Event::message` is a compile error.
    #[cfg(feature = "nvtx")]
    pub mod nvtx, "prism-gpu does not provide cudarc::nvtx (NVTX)" {
        pub fn scoped_range(msg) -> ();
        pub fn mark(msg) -> ();
        pub struct Event { fn message(message) -> Self; }
    }
}

// cudarc's CUDA runtime API module (`cudarc::runtime`, feature `runtime`, in cudarc's default set) is
// not provided either; its entry points (`runtime::result::...`) sit in prism-gpu's own `runtime`
// module, which has that name already (see `src/runtime/mod.rs`).
#[allow(unused_imports)] // used only when one of the module features is on
pub(crate) use unprovided;
