//! Run-time selection of the widest vector unit for the CPU kernels.

/// Defines `$name` as a call of the `#[inline(always)]` function `$body`, compiled
/// three times — for AVX-512, for AVX2 and for the baseline target — with the
/// variant picked at run time. The kernels are written on fixed-size arrays so the
/// compiler vectorises them for whichever unit is enabled; results are bit for bit
/// the same on every variant (IEEE division, and no fused multiply-add but the box
/// tests' [`Lanes8::mul_add`](super::vector::Lanes8::mul_add), whose slack covers
/// both roundings, so that it decides nothing).
///
/// Brute force's blocks take the AVX-512 variant wherever the CPU has it. The tree
/// walks (a body over [`Lanes8`](super::vector::Lanes8)) take it only where
/// [`walks_use_avx512`] says so.
macro_rules! simd_dispatch {
    // A body generic over the lanes of the box tests (`body::<Lanes8>`): AVX2
    // registers in the AVX-512 and AVX2 builds, portable arrays in the baseline one.
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:ident::<Lanes8>) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body::<$crate::cpu::vector::Avx2>,
            baseline: $body::<$crate::cpu::vector::Portable>,
            avx512: $crate::cpu::simd::walks_use_avx512());
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body, baseline: $body, avx512: $crate::cpu::simd::has_avx512());
    };
    (@emit [$(#[$meta:meta])*] $vis:vis $name:ident($($arg:ident: $ty:ty),*) wide: $wide:expr, baseline: $baseline:expr, avx512: $avx512:expr) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,fma")]
                fn avx512($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                if $avx512 {
                    // SAFETY: the CPU supports AVX-512 (F, VL, BW, DQ) and FMA, checked
                    // just above (`walks_use_avx512` implies `has_avx512`).
                    return unsafe { avx512($($arg),*) };
                }
                if $crate::cpu::simd::has_avx2() {
                    // SAFETY: the CPU supports AVX2 and FMA, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $baseline($($arg),*)
        }
    };
}

pub(crate) use simd_dispatch;

/// Whether the CPU has what the AVX-512 variant uses: AVX-512F, FMA, and the
/// VL, BW and DQ extensions, which give the 256-bit lanes of the kernels the
/// AVX-512 encodings (32 registers, compares into mask registers).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("fma")
}

/// Whether the tree walks run their AVX-512 variant: where the CPU has it
/// ([`has_avx512`]) and is not an Intel core. On Intel cores the AVX2 variant
/// walks faster (single rays, picks and camera batches; incoherent batches
/// level), while brute force's blocks still gain from AVX-512 there: the compiler
/// widens some of the walks' work to 512-bit registers, which those cores run on
/// fused ports. Worked out once, then read from a cache.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn walks_use_avx512() -> bool {
    static CHOICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| has_avx512() && !intel())
}

/// Whether the CPU's vendor is Intel (CPUID leaf 0's "GenuineIntel").
#[cfg(target_arch = "x86_64")]
fn intel() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    [id.ebx, id.edx, id.ecx].map(u32::to_le_bytes) == [*b"Genu", *b"ineI", *b"ntel"]
}

/// Whether the CPU has what the AVX2 variant uses: AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The vector unit the CPU kernels run on here: `"avx512f"`, `"avx2"`, or
/// `"baseline"` (the compile target's own, e.g. SSE2 on x86-64); `"avx512f (tree
/// walks: avx2)"` where brute force runs on AVX-512 and the tree walks on AVX2
/// (Intel cores).
pub fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if walks_use_avx512() {
            return "avx512f";
        }
        if has_avx512() {
            return "avx512f (tree walks: avx2)";
        }
        if has_avx2() {
            return "avx2";
        }
    }
    "baseline"
}
