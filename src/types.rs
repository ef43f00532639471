//! cudarc's `types` module: [`CudaTypeName`] maps a Rust element type to the name of the same type in
//! CUDA C++ (`f32` is `float`), for callers that generate kernel source per element type.

/// The CUDA C++ name of a Rust type, as kernel source spells it.
pub trait CudaTypeName {
    /// The type's name in CUDA C++ (`"float"` for `f32`).
    const NAME: &'static str;
}

macro_rules! cuda_type_names {
    ($($(#[$meta:meta])* $rust:ty => $cuda:literal,)*) => {
        $(
            $(#[$meta])*
            impl CudaTypeName for $rust {
                const NAME: &'static str = $cuda;
            }
        )*
    };
}

// The same names as cudarc 0.19's `types.rs` (64-bit Linux: `long` is 64 bits wide).
cuda_type_names! {
    bool => "bool",
    i8 => "char",
    i16 => "short",
    i32 => "int",
    i64 => "long",
    isize => "intptr_t",
    u8 => "unsigned char",
    u16 => "unsigned short",
    u32 => "unsigned int",
    u64 => "unsigned long",
    usize => "size_t",
    f32 => "float",
    f64 => "double",
    // `half` is always a dependency; cudarc has these names under `f16`, which is harmless to follow.
    #[cfg(feature = "f16")]
    half::f16 => "__half",
    #[cfg(feature = "f16")]
    half::bf16 => "__nv_bfloat16",
    #[cfg(feature = "f8")]
    float8::F8E4M3 => "__nv_fp8_e4m3",
    #[cfg(feature = "f8")]
    float8::F8E5M2 => "__nv_fp8_e5m2",
    #[cfg(feature = "f4")]
    float4::F4E2M1 => "__nv_fp4_e2m1",
    #[cfg(feature = "f4")]
    float4::F4E2M1x2 => "__nv_fp4x2_e2m1",
    #[cfg(feature = "f4")]
    float4::E8M0 => "__nv_fp8_e8m0",
}

#[cfg(test)]
mod tests {
    use super::CudaTypeName;

    fn name<T: CudaTypeName>() -> &'static str {
        T::NAME
    }

    #[test]
    fn names_match_cuda_cpp() {
        assert_eq!(name::<f32>(), "float");
        assert_eq!(name::<u64>(), "unsigned long");
        assert_eq!(name::<usize>(), "size_t");
        assert_eq!(name::<i8>(), "char");
        #[cfg(feature = "f16")]
        assert_eq!(name::<half::bf16>(), "__nv_bfloat16");
        #[cfg(feature = "f8")]
        assert_eq!(name::<float8::F8E5M2>(), "__nv_fp8_e5m2");
        #[cfg(feature = "f4")]
        assert_eq!(name::<float4::F4E2M1x2>(), "__nv_fp4x2_e2m1");
    }
}
