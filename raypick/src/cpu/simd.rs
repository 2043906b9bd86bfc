//! Run-time selection of the widest vector unit for the CPU kernels.

use std::sync::atomic::{AtomicU8, Ordering};

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
/// [`WALKS`] says so.
macro_rules! simd_dispatch {
    // A body generic over the lanes of the box tests (`body::<Lanes8>`): AVX2
    // registers in the AVX-512 and AVX2 builds, portable arrays in the baseline one.
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:ident::<Lanes8>) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body::<$crate::cpu::vector::Avx2>,
            baseline: $body::<$crate::cpu::vector::Portable>,
            unit: $crate::cpu::simd::WALKS);
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $crate::cpu::simd::simd_dispatch!(@emit [$(#[$meta])*] $vis $name($($arg: $ty),*)
            wide: $body, baseline: $body, unit: $crate::cpu::simd::BLOCKS);
    };
    (@emit [$(#[$meta:meta])*] $vis:vis $name:ident($($arg:ident: $ty:ty),*) wide: $wide:expr, baseline: $baseline:expr, unit: $unit:path) => {
        $(#[$meta])*
        // Compiled apart, as is each variant, and every way out a jump to one: no
        // frame, so that a call (a pick) reaches its variant in a few instructions.
        #[inline(never)]
        $vis fn $name($($arg: $ty),*) {
            #[cfg_attr(target_arch = "x86_64", inline(never))]
            fn baseline($($arg: $ty),*) {
                $baseline($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,fma,bmi1,bmi2,lzcnt,popcnt")]
                fn avx512($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
                fn avx2($($arg: $ty),*) {
                    $wide($($arg),*)
                }
                /// The first call: works the unit out, then dispatches.
                #[cold]
                #[inline(never)]
                fn first($($arg: $ty),*) {
                    $unit.get();
                    $name($($arg),*)
                }
                match $unit.known() {
                    // SAFETY: the CPU supports AVX-512 (F, VL, BW, DQ) and FMA: the
                    // unit is `Avx512` only where it does (`Unit::of_cpu`).
                    Some($crate::cpu::simd::Unit::Avx512) => unsafe { avx512($($arg),*) },
                    // SAFETY: the CPU supports AVX2 and FMA: the unit is `Avx2` only
                    // where it does (`Unit::of_cpu`).
                    Some($crate::cpu::simd::Unit::Avx2) => unsafe { avx2($($arg),*) },
                    Some($crate::cpu::simd::Unit::Baseline) => baseline($($arg),*),
                    None => first($($arg),*),
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            baseline($($arg),*);
        }
    };
}

pub(crate) use simd_dispatch;

/// A vector unit the CPU kernels are compiled for ([`simd_dispatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Unit {
    /// The compile target's own (e.g. SSE2 on x86-64).
    Baseline = 1,
    /// AVX2 and FMA, with the bit instructions of the same CPUs.
    Avx2 = 2,
    /// AVX-512 (F, VL, BW, DQ) and FMA, with the same bit instructions.
    Avx512 = 3,
}

impl Unit {
    /// The widest unit this CPU has ([`has_avx512`], [`has_avx2`]).
    fn of_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512() {
                return Self::Avx512;
            }
            if has_avx2() {
                return Self::Avx2;
            }
        }
        Self::Baseline
    }
}

/// The unit a kind of kernel runs on, worked out once (`find`) and then read
/// with one load.
pub(crate) struct UnitCache {
    /// The unit (`Unit as u8`), 0 until worked out.
    unit: AtomicU8,
    /// How the unit is worked out.
    find: fn() -> Unit,
}

impl UnitCache {
    const fn new(find: fn() -> Unit) -> Self {
        Self { unit: AtomicU8::new(0), find }
    }

    /// The unit, if worked out already.
    #[inline(always)]
    pub(crate) fn known(&self) -> Option<Unit> {
        const BASELINE: u8 = Unit::Baseline as u8;
        const AVX2: u8 = Unit::Avx2 as u8;
        const AVX512: u8 = Unit::Avx512 as u8;
        match self.unit.load(Ordering::Relaxed) {
            BASELINE => Some(Unit::Baseline),
            AVX2 => Some(Unit::Avx2),
            AVX512 => Some(Unit::Avx512),
            _ => None,
        }
    }

    /// The unit, worked out the first time.
    pub(crate) fn get(&self) -> Unit {
        self.known().unwrap_or_else(|| {
            let unit = (self.find)();
            self.unit.store(unit as u8, Ordering::Relaxed);
            unit
        })
    }
}

/// The unit brute force's blocks run on: the widest the CPU has.
pub(crate) static BLOCKS: UnitCache = UnitCache::new(Unit::of_cpu);

/// The unit the tree walks run on: the widest the CPU has, but AVX2 on Intel
/// cores, where the AVX2 variant walks faster (single rays, picks and camera
/// batches; incoherent batches level), while brute force's blocks still gain
/// from AVX-512 there: the compiler widens some of the walks' work to 512-bit
/// registers, which those cores run on fused ports.
pub(crate) static WALKS: UnitCache = UnitCache::new(|| match Unit::of_cpu() {
    #[cfg(target_arch = "x86_64")]
    Unit::Avx512 if intel() => Unit::Avx2,
    unit => unit,
});

/// Whether the CPU has what the AVX-512 variant uses: AVX-512F, FMA, the VL,
/// BW and DQ extensions, which give the 256-bit lanes of the kernels the
/// AVX-512 encodings (32 registers, compares into mask registers), and the bit
/// instructions ([`has_bit_ops`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("fma")
        && has_bit_ops()
}

/// Whether the CPU's vendor is Intel (CPUID leaf 0's "GenuineIntel").
#[cfg(target_arch = "x86_64")]
fn intel() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    [id.ebx, id.edx, id.ecx].map(u32::to_le_bytes) == [*b"Genu", *b"ineI", *b"ntel"]
}

/// Whether the CPU has what the AVX2 variant uses: AVX2, FMA and the bit
/// instructions ([`has_bit_ops`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") && has_bit_ops()
}

/// Whether the CPU has the scalar bit instructions that every CPU with AVX2 has
/// (BMI1, BMI2, LZCNT, POPCNT), which the vector variants are compiled with: a
/// walk's lane masks are counted, cleared and searched in one instruction each.
#[cfg(target_arch = "x86_64")]
fn has_bit_ops() -> bool {
    std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("lzcnt")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// The vector unit the CPU kernels run on here: `"avx512f"`, `"avx2"`, or
/// `"baseline"` (the compile target's own, e.g. SSE2 on x86-64); `"avx512f (tree
/// walks: avx2)"` where brute force runs on AVX-512 and the tree walks on AVX2
/// (Intel cores).
pub fn simd_level() -> &'static str {
    match (BLOCKS.get(), WALKS.get()) {
        (Unit::Avx512, Unit::Avx512) => "avx512f",
        (Unit::Avx512, _) => "avx512f (tree walks: avx2)",
        (Unit::Avx2, _) => "avx2",
        (Unit::Baseline, _) => "baseline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache knows no unit until asked for it, then keeps the one it worked
    /// out; the CPU's caches hold its widest unit (the walks AVX2 instead of
    /// AVX-512 on Intel cores).
    #[test]
    fn units_are_worked_out_once_and_kept() {
        let cache = UnitCache::new(|| Unit::Avx2);
        assert_eq!(cache.known(), None);
        assert_eq!(cache.get(), Unit::Avx2);
        assert_eq!(cache.known(), Some(Unit::Avx2));
        assert_eq!(BLOCKS.get(), Unit::of_cpu());
        assert_eq!(BLOCKS.known(), Some(Unit::of_cpu()));
        let walks = WALKS.get();
        assert!(walks == BLOCKS.get() || (walks, BLOCKS.get()) == (Unit::Avx2, Unit::Avx512), "{walks:?}");
        assert!(simd_level().starts_with(match BLOCKS.get() {
            Unit::Avx512 => "avx512f",
            Unit::Avx2 => "avx2",
            Unit::Baseline => "baseline",
        }));
    }
}
