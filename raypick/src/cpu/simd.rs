//! Run-time selection of the widest vector unit for the CPU kernels.

/// Defines `$name` as a call of the `#[inline(always)]` function `$body`, compiled
/// three times — for AVX-512, for AVX2 and for the baseline target — with the
/// variant picked at run time. The kernels are written on fixed-size arrays so the
/// compiler vectorises them for whichever unit is enabled; results are bit for bit
/// the same on every variant (no fused multiply-add, IEEE division).
macro_rules! simd_dispatch {
    // A body generic over the lanes of the box tests (`body::<Lanes8>`): AVX2
    // registers in the AVX-512 and AVX2 builds, portable arrays in the baseline one.
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:ident::<Lanes8>) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body::<$crate::cpu::vector::Avx2>,
            baseline: $body::<$crate::cpu::vector::Portable>);
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body, baseline: $body);
    };
    (@emit [$(#[$meta:meta])*] $vis:vis $name:ident($($arg:ident: $ty:ty),*) wide: $wide:expr, baseline: $baseline:expr) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $baseline($($arg),*)
        }
    };
}

pub(crate) use simd_dispatch;

/// The vector unit the CPU kernels run on here: `"avx512f"`, `"avx2"`, or
/// `"baseline"` (the compile target's own, e.g. SSE2 on x86-64).
pub fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "avx2";
        }
    }
    "baseline"
}
