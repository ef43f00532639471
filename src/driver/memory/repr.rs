//! The marker traits of what may live in device memory: [`DeviceRepr`], [`ValidAsZeroBits`].

/// Types whose all-zero bit pattern is a valid value.
///
/// # Safety
/// Only implement for types where every field may be zero (no references, `NonZero`, enums
/// without a zero discriminant, ...).
pub unsafe trait ValidAsZeroBits {}

/// Types that can live in device memory and be passed to kernels by value.
///
/// # Safety
/// The type must have a layout the kernel agrees on (`#[repr(C)]` for structs) and hold no
/// host pointers or references the device would misread.
pub unsafe trait DeviceRepr {}

macro_rules! marker_impls {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: a plain number: fixed layout, every bit pattern (incl. zero) valid on both sides.
            unsafe impl DeviceRepr for $t {}
            // SAFETY: zero is a valid value of this number type.
            unsafe impl ValidAsZeroBits for $t {}
        )*
    };
}
marker_impls!(bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
marker_impls!(half::f16, half::bf16);

// The float8 / float4 crates' types are `#[repr(transparent)]` over one `u8` (checked by the
// `narrow_floats_are_one_byte` test), so they have a byte's layout on host and device.
#[cfg(any(feature = "f8", feature = "f4"))]
macro_rules! byte_float_impls {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: `#[repr(transparent)]` over `u8`: one byte, alignment 1, no pointers; a kernel
            // reads it as the CUDA type of the same width (`__nv_fp8_e4m3`, ...).
            unsafe impl DeviceRepr for $t {}
            // SAFETY: the all-zero byte is a valid value of these types (+0.0, or 2^-127 for `E8M0`).
            unsafe impl ValidAsZeroBits for $t {}
        )*
    };
}
#[cfg(feature = "f8")]
byte_float_impls!(float8::F8E4M3, float8::F8E5M2);
#[cfg(feature = "f4")]
byte_float_impls!(float4::F4E2M1, float4::F4E2M1x2, float4::E8M0);

// SAFETY: an array of device-representable values is laid out the same on host and device.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: an array of zeroable values is zeroable.
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}

macro_rules! zero_tuples {
    ($($name:ident)+) => {
        // SAFETY: a tuple whose fields are all zeroable is zeroable (padding bytes are not read).
        unsafe impl<$($name: ValidAsZeroBits),+> ValidAsZeroBits for ($($name,)+) {}
    };
}
zero_tuples!(A);
zero_tuples!(A B);
zero_tuples!(A B C);
zero_tuples!(A B C D);
zero_tuples!(A B C D E);
zero_tuples!(A B C D E F);
zero_tuples!(A B C D E F G);
zero_tuples!(A B C D E F G H);
zero_tuples!(A B C D E F G H I);
zero_tuples!(A B C D E F G H I J);
zero_tuples!(A B C D E F G H I J K);
zero_tuples!(A B C D E F G H I J K L);

#[cfg(test)]
mod tests {
    /// The `DeviceRepr` / `ValidAsZeroBits` impls for the narrow float types assume one byte each, and
    /// that the zero byte is the value the type's crate calls zero (or 2^-127 for `E8M0`).
    #[cfg(any(feature = "f8", feature = "f4"))]
    #[test]
    fn narrow_floats_are_one_byte() {
        use std::mem::{align_of, size_of};
        #[cfg(feature = "f8")]
        {
            assert_eq!((size_of::<float8::F8E4M3>(), align_of::<float8::F8E4M3>()), (1, 1));
            assert_eq!((size_of::<float8::F8E5M2>(), align_of::<float8::F8E5M2>()), (1, 1));
            assert_eq!(float8::F8E4M3::from_bits(0).to_f32(), 0.0);
            assert_eq!(float8::F8E5M2::from_bits(0).to_f32(), 0.0);
            assert_eq!(float8::F8E4M3::from_f32(-1.5).to_bits(), 0xBC);
        }
        #[cfg(feature = "f4")]
        {
            assert_eq!(size_of::<float4::F4E2M1>(), 1);
            assert_eq!(size_of::<float4::F4E2M1x2>(), 1);
            assert_eq!(size_of::<float4::E8M0>(), 1);
            assert_eq!(float4::F4E2M1::from_bits(0).to_f64(), 0.0);
        }
    }
}
