//! Eight `f32` lanes with the operations the wide BVH's box and leaf tests need, written
//! once for every vector unit ([`Lanes8`]): plain arrays the compiler vectorises
//! ([`Portable`]) or AVX2 registers with FMA ([`Avx2`], x86-64). Every operation
//! but [`Lanes8::mul_add`] is the scalar one lane by lane, with its rounding and
//! its NaN rules; `mul_add` rounds once or twice, as the unit does it fastest, and
//! is only used where a slack covers either (the folded slab test of
//! [`Slabs`](super::wide_boxes::Slabs)). So the traversals give the same answers
//! bit for bit on every unit.

/// A vector unit: how eight lanes are held and computed. Picked by
/// [`simd_dispatch`](super::simd::simd_dispatch) for the unit the CPU has.
///
/// # Safety
/// Implementations may use instructions the baseline target lacks; they must only
/// run on CPUs that have them (the dispatch checks before choosing one).
pub(crate) unsafe trait Lanes8: Copy + 'static {
    /// Eight `f32` lanes.
    type V: Copy;

    /// `x` in every lane.
    fn splat(x: f32) -> Self::V;
    /// The lanes of `x`.
    fn load(x: &[f32; 8]) -> Self::V;
    /// `a + b`.
    fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    fn sub(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b - c * d`, each product rounded on its own (the triangle tests' edge
    /// functions and cross products).
    #[inline(always)]
    fn mul_sub_mul(a: Self::V, b: Self::V, c: Self::V, d: Self::V) -> Self::V {
        Self::sub(Self::mul(a, b), Self::mul(c, d))
    }
    /// `a / b`.
    fn div(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, rounded once (fused) or twice, whichever the unit does fastest.
    fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `if a > b { a } else { b }` (so `b` when either is NaN).
    fn max(a: Self::V, b: Self::V) -> Self::V;
    /// `if a < b { a } else { b }` (so `b` when either is NaN).
    fn min(a: Self::V, b: Self::V) -> Self::V;
    /// The larger of `a` and `b` by their bits read as `i32`, which order the
    /// numbers whose sign bit is clear as the numbers, and every number whose sign
    /// bit is set below them: the larger number where neither is NaN and one has
    /// its sign bit clear. An integer step, shorter than [`Lanes8::max`]'s.
    fn max_bits(a: Self::V, b: Self::V) -> Self::V;
    /// The smaller of `a` and `b` by their bits read as `i32` ([`Lanes8::max_bits`]):
    /// the smaller number where neither is NaN and both have their sign bit clear;
    /// one whose sign bit is set where either has.
    fn min_bits(a: Self::V, b: Self::V) -> Self::V;
    /// Bit `lane` set where `a`'s bits read as `i32` are at most `b`'s
    /// ([`Lanes8::max_bits`]): `a <= b` where neither is NaN or `-0.0` and `a`'s
    /// sign bit is clear.
    fn le_bits(a: Self::V, b: Self::V) -> u32;
    /// `|a|`.
    fn abs(a: Self::V) -> Self::V;
    /// Bit `lane` set where `a <= b` (false for NaN).
    fn le(a: Self::V, b: Self::V) -> u32;
    /// Bit `lane` set where `a < b` (false for NaN).
    fn lt(a: Self::V, b: Self::V) -> u32;
    /// Bit `lane` set where `a == b` (false for NaN; `-0.0 == 0.0`).
    fn eq(a: Self::V, b: Self::V) -> u32;
    /// The lanes as an array.
    fn store(a: Self::V) -> [f32; 8];
    /// `a` with every lane outside `mask` (bit per lane) replaced by `x`.
    fn fill_outside(a: Self::V, mask: u32, x: f32) -> Self::V;
    /// The smallest lane of `a`, by [`Lanes8::min`] on pairs in a fixed order:
    /// lane `i` with lane `i + 4`, then those four as two pairs, then the last
    /// pair. So every unit gives the same bits, even where `min` depends on the
    /// order of its operands (`-0.0` against `0.0`, NaN).
    fn min_lane(a: Self::V) -> f32;

    /// The transpose of eight rows: lane `j` of row `i` is lane `i` of row `j` of
    /// the result (eight records of eight fields, such as rays, as a row per field).
    fn transpose(rows: [Self::V; 8]) -> [Self::V; 8];
    /// [`direction_scale`](super::intersect::direction_scale) lane by lane: the
    /// power of two read from each lane's exponent bits.
    fn direction_scale(max_abs: Self::V) -> Self::V;
    /// [`reciprocal_scale`](super::intersect::reciprocal_scale) lane by lane, for
    /// lanes that hold a [`Lanes8::direction_scale`].
    fn reciprocal_scale(scale: Self::V) -> Self::V;

    /// Eight `u32` lanes: lane indices, and the children's fields they pick.
    type U: Copy;
    /// The lanes of `x`.
    fn load_u32(x: &[u32; 8]) -> Self::U;
    /// The lanes of `x`, each widened to `u32`.
    fn load_u8(x: &[u8; 8]) -> Self::U;
    /// The lanes as an array.
    fn store_u32(a: Self::U) -> [u32; 8];
    /// Lane `i` is lane `order[i]` of `a` (`order` holds lane indices, `0..8`).
    fn permute(a: Self::V, order: Self::U) -> Self::V;
    /// Lane `i` is lane `order[i]` of `a` (`order` holds lane indices, `0..8`).
    fn permute_u32(a: Self::U, order: Self::U) -> Self::U;
    /// The lanes in the order a walk pushes a node's children: by [`push_key`]
    /// of each lane's entry distance `near` (lanes of `entered` first, from the
    /// farthest to the nearest, then the others from lane 7 down), as lane indices.
    /// Sorted without a branch, so no order of distances costs a mispredicted one.
    #[inline(always)]
    fn push_order(near: Self::V, entered: u32) -> Self::U {
        Self::key_order(Self::push_keys(near, entered))
    }
    /// The [`push_key`] of each lane's entry distance `near` (entered where
    /// `entered` has its bit), the keys [`Lanes8::push_order`] sorts.
    fn push_keys(near: Self::V, entered: u32) -> Self::U;
    /// The lanes of `keys` ([`Lanes8::push_keys`]) from the largest key to the
    /// smallest, as lane indices: [`Lanes8::push_order`] of keys already made.
    fn key_order(keys: Self::U) -> Self::U;
}

/// The key [`Lanes8::push_order`] sorts on, descending: for an entered lane,
/// `near`'s bits mapped to `u32` in the order of the numbers (negative ones
/// flipped whole, the others their sign bit set), the lowest three bits replaced
/// by the lane (so every key differs, and entries that differ only in those bits
/// are ordered by lane); for another lane, the lane alone, below every entered
/// one (a number's key is at least `2^23` unless it is NaN, which no entered lane
/// is).
#[inline(always)]
pub(crate) fn push_key(near: f32, lane: usize, entered: bool) -> u32 {
    if !entered {
        return lane as u32;
    }
    let bits = near.to_bits();
    let ordered = bits ^ (((bits as i32 >> 31) as u32) | 1 << 31);
    (ordered & !7) | lane as u32
}

/// The bits of `x` read as `i32`: the order of [`Lanes8::max_bits`].
#[inline(always)]
fn signed(x: f32) -> i32 {
    x.to_bits() as i32
}

/// `if a < b { a } else { b }`: [`Lanes8::min`] of one lane.
#[inline(always)]
fn min1(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// Arrays of eight lanes, computed lane by lane (vectorised by the compiler for
/// whatever unit the caller is compiled for).
#[derive(Clone, Copy)]
pub(crate) struct Portable;

// SAFETY: plain Rust, no instructions beyond the caller's target.
unsafe impl Lanes8 for Portable {
    type V = [f32; 8];

    #[inline(always)]
    fn splat(x: f32) -> Self::V {
        [x; 8]
    }
    #[inline(always)]
    fn load(x: &[f32; 8]) -> Self::V {
        *x
    }
    #[inline(always)]
    fn add(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    fn sub(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    fn mul(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    fn div(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] / b[i])
    }
    #[inline(always)]
    fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        // Two roundings: a fused `f32::mul_add` is a library call on units
        // without FMA, and this unit may be one of them.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    fn max(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if a[i] > b[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn min(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| min1(a[i], b[i]))
    }
    #[inline(always)]
    fn max_bits(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| f32::from_bits(signed(a[i]).max(signed(b[i])) as u32))
    }
    #[inline(always)]
    fn min_bits(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| f32::from_bits(signed(a[i]).min(signed(b[i])) as u32))
    }
    #[inline(always)]
    fn le_bits(a: Self::V, b: Self::V) -> u32 {
        (0..8).fold(0, |bits, i| bits | ((signed(a[i]) <= signed(b[i])) as u32) << i)
    }
    #[inline(always)]
    fn abs(a: Self::V) -> Self::V {
        a.map(f32::abs)
    }
    #[inline(always)]
    fn le(a: Self::V, b: Self::V) -> u32 {
        (0..8).fold(0, |bits, i| bits | (((a[i] <= b[i]) as u32) << i))
    }
    #[inline(always)]
    fn lt(a: Self::V, b: Self::V) -> u32 {
        (0..8).fold(0, |bits, i| bits | (((a[i] < b[i]) as u32) << i))
    }
    #[inline(always)]
    fn eq(a: Self::V, b: Self::V) -> u32 {
        (0..8).fold(0, |bits, i| bits | (((a[i] == b[i]) as u32) << i))
    }
    #[inline(always)]
    fn store(a: Self::V) -> [f32; 8] {
        a
    }
    #[inline(always)]
    fn fill_outside(a: Self::V, mask: u32, x: f32) -> Self::V {
        std::array::from_fn(|i| if mask >> i & 1 != 0 { a[i] } else { x })
    }
    #[inline(always)]
    fn min_lane(a: Self::V) -> f32 {
        let quad: [f32; 4] = std::array::from_fn(|i| min1(a[i], a[i + 4]));
        min1(min1(quad[0], quad[2]), min1(quad[1], quad[3]))
    }

    #[inline(always)]
    fn transpose(rows: [Self::V; 8]) -> [Self::V; 8] {
        let mut out = [[0.0; 8]; 8];
        for (i, row) in rows.iter().enumerate() {
            for (j, &x) in row.iter().enumerate() {
                out[j][i] = x;
            }
        }
        out
    }

    #[inline(always)]
    fn direction_scale(max_abs: Self::V) -> Self::V {
        max_abs.map(super::intersect::direction_scale)
    }
    #[inline(always)]
    fn reciprocal_scale(scale: Self::V) -> Self::V {
        scale.map(super::intersect::reciprocal_scale)
    }

    type U = [u32; 8];

    #[inline(always)]
    fn load_u32(x: &[u32; 8]) -> Self::U {
        *x
    }
    #[inline(always)]
    fn load_u8(x: &[u8; 8]) -> Self::U {
        x.map(u32::from)
    }
    #[inline(always)]
    fn store_u32(a: Self::U) -> [u32; 8] {
        a
    }
    #[inline(always)]
    fn permute(a: Self::V, order: Self::U) -> Self::V {
        order.map(|lane| a[lane as usize & 7])
    }
    #[inline(always)]
    fn permute_u32(a: Self::U, order: Self::U) -> Self::U {
        order.map(|lane| a[lane as usize & 7])
    }
    #[inline(always)]
    fn push_keys(near: Self::V, entered: u32) -> Self::U {
        std::array::from_fn(|i| push_key(near[i], i, entered >> i & 1 != 0))
    }
    #[inline(always)]
    fn key_order(mut keys: Self::U) -> Self::U {
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.map(|key| key & 7)
    }
}

/// AVX2 registers with FMA (x86-64 only; also what the AVX-512 build of a kernel
/// uses, on the lower 256 bits).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2;

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Avx2, Lanes8};

    /// Bit `i` in lane `i`: a lane mask from a bit mask.
    #[inline(always)]
    unsafe fn lane_bits() -> __m256i {
        unsafe { _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128) }
    }

    // SAFETY: chosen only by the dispatch, after it found AVX2 and FMA; each
    // intrinsic is the lane-wise operation named in the trait.
    unsafe impl Lanes8 for Avx2 {
        type V = __m256;

        #[inline(always)]
        fn splat(x: f32) -> Self::V {
            unsafe { _mm256_set1_ps(x) }
        }
        #[inline(always)]
        fn load(x: &[f32; 8]) -> Self::V {
            // SAFETY: eight readable f32s.
            unsafe { _mm256_loadu_ps(x.as_ptr()) }
        }
        #[inline(always)]
        fn add(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_add_ps(a, b) }
        }
        #[inline(always)]
        fn sub(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        fn mul(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        fn div(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_div_ps(a, b) }
        }
        #[inline(always)]
        fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V {
            unsafe { _mm256_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        fn max(a: Self::V, b: Self::V) -> Self::V {
            // `maxps` returns its second operand unless the first is greater.
            unsafe { _mm256_max_ps(a, b) }
        }
        #[inline(always)]
        fn min(a: Self::V, b: Self::V) -> Self::V {
            // `minps` returns its second operand unless the first is less.
            unsafe { _mm256_min_ps(a, b) }
        }
        #[inline(always)]
        fn max_bits(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_castsi256_ps(_mm256_max_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b))) }
        }
        #[inline(always)]
        fn min_bits(a: Self::V, b: Self::V) -> Self::V {
            unsafe { _mm256_castsi256_ps(_mm256_min_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b))) }
        }
        #[inline(always)]
        fn le_bits(a: Self::V, b: Self::V) -> u32 {
            let greater = unsafe { _mm256_cmpgt_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)) };
            let mut greater = unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(greater)) } as u32;
            // The mask is hidden from the optimiser, which would otherwise, where a
            // walk takes this or `le` as the ray says, join the two masks as lanes
            // of one bit each and turn them into bits with a chain of shuffles.
            // SAFETY: an empty instruction string: nothing runs, `greater` is kept.
            unsafe { std::arch::asm!("/* {0:e} */", inout(reg) greater, options(pure, nomem, nostack, preserves_flags)) };
            !greater & 0xff
        }
        #[inline(always)]
        fn abs(a: Self::V) -> Self::V {
            unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), a) }
        }
        #[inline(always)]
        fn le(a: Self::V, b: Self::V) -> u32 {
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(a, b)) as u32 }
        }
        #[inline(always)]
        fn lt(a: Self::V, b: Self::V) -> u32 {
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(a, b)) as u32 }
        }
        #[inline(always)]
        fn eq(a: Self::V, b: Self::V) -> u32 {
            unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(a, b)) as u32 }
        }
        #[inline(always)]
        fn store(a: Self::V) -> [f32; 8] {
            let mut out = [0.0; 8];
            // SAFETY: room for eight f32s.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), a) };
            out
        }
        #[inline(always)]
        fn fill_outside(a: Self::V, mask: u32, x: f32) -> Self::V {
            unsafe {
                let bits = lane_bits();
                let inside = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(mask as i32), bits), bits);
                _mm256_blendv_ps(_mm256_set1_ps(x), a, _mm256_castsi256_ps(inside))
            }
        }
        #[inline(always)]
        fn min_lane(a: Self::V) -> f32 {
            unsafe {
                // Lane `i` with lane `i + 4`, then lanes 0 and 1 with lanes 2
                // and 3, then lane 0 with lane 1.
                let quad = _mm_min_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
                let pair = _mm_min_ps(quad, _mm_movehl_ps(quad, quad));
                _mm_cvtss_f32(_mm_min_ss(pair, _mm_shuffle_ps::<0b01_01_01_01>(pair, pair)))
            }
        }
        #[inline(always)]
        fn transpose([r0, r1, r2, r3, r4, r5, r6, r7]: [Self::V; 8]) -> [Self::V; 8] {
            unsafe {
                // Pairs of rows interleaved, then quads, each within 128-bit
                // halves; then the halves swapped across.
                let (a0, a1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
                let (a2, a3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
                let (a4, a5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
                let (a6, a7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
                const LOW: i32 = 0b01_00_01_00;
                const HIGH: i32 = 0b11_10_11_10;
                let (b0, b1) = (_mm256_shuffle_ps::<LOW>(a0, a2), _mm256_shuffle_ps::<HIGH>(a0, a2));
                let (b2, b3) = (_mm256_shuffle_ps::<LOW>(a1, a3), _mm256_shuffle_ps::<HIGH>(a1, a3));
                let (b4, b5) = (_mm256_shuffle_ps::<LOW>(a4, a6), _mm256_shuffle_ps::<HIGH>(a4, a6));
                let (b6, b7) = (_mm256_shuffle_ps::<LOW>(a5, a7), _mm256_shuffle_ps::<HIGH>(a5, a7));
                const FIRST_HALVES: i32 = 0x20;
                const SECOND_HALVES: i32 = 0x31;
                [
                    _mm256_permute2f128_ps::<FIRST_HALVES>(b0, b4),
                    _mm256_permute2f128_ps::<FIRST_HALVES>(b1, b5),
                    _mm256_permute2f128_ps::<FIRST_HALVES>(b2, b6),
                    _mm256_permute2f128_ps::<FIRST_HALVES>(b3, b7),
                    _mm256_permute2f128_ps::<SECOND_HALVES>(b0, b4),
                    _mm256_permute2f128_ps::<SECOND_HALVES>(b1, b5),
                    _mm256_permute2f128_ps::<SECOND_HALVES>(b2, b6),
                    _mm256_permute2f128_ps::<SECOND_HALVES>(b3, b7),
                ]
            }
        }
        #[inline(always)]
        fn direction_scale(max_abs: Self::V) -> Self::V {
            unsafe {
                // `254 - exponent`, clamped to `1..=253` (an exponent of 255 gives
                // -1, which the clamp takes to 1, as the saturating step does).
                let exponent = _mm256_and_si256(_mm256_srli_epi32::<23>(_mm256_castps_si256(max_abs)), _mm256_set1_epi32(0xff));
                let biased = _mm256_sub_epi32(_mm256_set1_epi32(254), exponent);
                let clamped = _mm256_min_epi32(_mm256_max_epi32(biased, _mm256_set1_epi32(1)), _mm256_set1_epi32(253));
                _mm256_castsi256_ps(_mm256_slli_epi32::<23>(clamped))
            }
        }
        #[inline(always)]
        fn reciprocal_scale(scale: Self::V) -> Self::V {
            unsafe { _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_set1_epi32(254 << 23), _mm256_castps_si256(scale))) }
        }

        type U = __m256i;

        #[inline(always)]
        fn load_u32(x: &[u32; 8]) -> Self::U {
            // SAFETY: eight readable u32s.
            unsafe { _mm256_loadu_si256(x.as_ptr().cast()) }
        }
        #[inline(always)]
        fn load_u8(x: &[u8; 8]) -> Self::U {
            // SAFETY: eight readable bytes.
            unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(x.as_ptr().cast())) }
        }
        #[inline(always)]
        fn store_u32(a: Self::U) -> [u32; 8] {
            let mut out = [0; 8];
            // SAFETY: room for eight u32s.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), a) };
            out
        }
        #[inline(always)]
        fn permute(a: Self::V, order: Self::U) -> Self::V {
            unsafe { _mm256_permutevar8x32_ps(a, order) }
        }
        #[inline(always)]
        fn permute_u32(a: Self::U, order: Self::U) -> Self::U {
            unsafe { _mm256_permutevar8x32_epi32(a, order) }
        }
        #[inline(always)]
        fn push_keys(near: Self::V, entered: u32) -> Self::U {
            unsafe {
                // `push_key` lane by lane.
                let bits = _mm256_castps_si256(near);
                let flip = _mm256_or_si256(_mm256_srai_epi32::<31>(bits), _mm256_set1_epi32(i32::MIN));
                let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                let keyed = _mm256_or_si256(_mm256_andnot_si256(_mm256_set1_epi32(7), _mm256_xor_si256(bits, flip)), lane);
                let flags = lane_bits();
                let inside = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(entered as i32), flags), flags);
                _mm256_blendv_epi8(lane, keyed, inside)
            }
        }
        #[inline(always)]
        fn key_order(keys: Self::U) -> Self::U {
            unsafe { _mm256_and_si256(sort_descending(keys), _mm256_set1_epi32(7)) }
        }
    }

    /// `keys` sorted, largest first: the bitonic network of eight, each stage a
    /// lane exchange and an unsigned minimum and maximum.
    #[inline(always)]
    unsafe fn sort_descending(keys: __m256i) -> __m256i {
        unsafe {
            // Partners: the neighbour (lane ^ 1), two lanes away (lane ^ 2), the
            // other half (lane ^ 4). Shuffles, not closures, which could be
            // compiled apart from the caller's vector unit.
            const ONE: i32 = 0b10_11_00_01;
            const TWO: i32 = 0b01_00_11_10;
            let keys = exchange::<0b1001_1001>(keys, _mm256_shuffle_epi32::<ONE>(keys));
            let keys = exchange::<0b1100_0011>(keys, _mm256_shuffle_epi32::<TWO>(keys));
            let keys = exchange::<0b1010_0101>(keys, _mm256_shuffle_epi32::<ONE>(keys));
            let keys = exchange::<0b0000_1111>(keys, _mm256_permute4x64_epi64::<TWO>(keys));
            let keys = exchange::<0b0011_0011>(keys, _mm256_shuffle_epi32::<TWO>(keys));
            exchange::<0b0101_0101>(keys, _mm256_shuffle_epi32::<ONE>(keys))
        }
    }

    /// One stage of [`sort_descending`]: each lane keeps the larger of its key and
    /// its partner's where `LARGER` has its bit, else the smaller.
    #[inline(always)]
    unsafe fn exchange<const LARGER: i32>(keys: __m256i, partners: __m256i) -> __m256i {
        unsafe {
            _mm256_blend_epi32::<LARGER>(_mm256_min_epu32(keys, partners), _mm256_max_epu32(keys, partners))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Rng;

    /// The push order lists every lane once: the entered ones first, from the
    /// farthest to the nearest (equal entries from the highest lane down, and
    /// entries that differ only in the last three bits ordered by lane alone),
    /// then the others from lane 7 down; negative entries in the order of the
    /// numbers, -0.0 below 0.0.
    #[test]
    fn push_order_sorts_entered_lanes_farthest_first() {
        let lanes = |order: [u32; 8]| order.map(|lane| lane as usize);
        let near = [2.0, -1.0, 0.0, -0.0, 5.0, 2.0, 1e-30, -3.5];
        assert_eq!(lanes(Portable::push_order(near, 0xff)), [4, 5, 0, 6, 2, 3, 1, 7]);
        assert_eq!(lanes(Portable::push_order(near, 0b0101_0010)), [4, 6, 1, 7, 5, 3, 2, 0]);
        assert_eq!(lanes(Portable::push_order(near, 0)), [7, 6, 5, 4, 3, 2, 1, 0]);
        let close = [1.0, f32::from_bits(1.0f32.to_bits() + 1), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(lanes(Portable::push_order(close, 0b11))[..2], [1, 0]);
        let mut rng = Rng::new(3);
        for _ in 0..500 {
            let near: [f32; 8] = std::array::from_fn(|_| rng.range(-4.0, 4.0).round() * 0.5);
            let entered = rng.next_u32() & 0xff;
            let order = lanes(Portable::push_order(near, entered));
            let mut seen = order;
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3, 4, 5, 6, 7]);
            let count = entered.count_ones() as usize;
            assert!(order[..count].iter().all(|&lane| entered >> lane & 1 != 0));
            for pair in order[..count].windows(2) {
                // `total_cmp`: the order of the numbers, -0.0 below 0.0.
                let (a, b) = (near[pair[0]], near[pair[1]]);
                let farther = a.total_cmp(&b).then(pair[0].cmp(&pair[1]));
                assert!(farther.is_gt(), "{near:?} {entered:#x} {order:?}");
            }
            assert!(order[count..].windows(2).all(|pair| pair[0] > pair[1]));
        }
    }

    /// One of `special` a third of the time, else a number in `-within..within`.
    fn mixed(rng: &mut Rng, special: &[f32], within: f32) -> f32 {
        if rng.next_u32().is_multiple_of(3) {
            special[rng.next_u32() as usize % special.len()]
        } else {
            rng.range(-within, within)
        }
    }

    /// The operations on bits give the numbers' answers where their documents say
    /// so, on ordinary and special numbers.
    #[test]
    fn bit_order_is_the_order_of_the_numbers_where_documented() {
        let special = [0.0, -0.0, 1.0, -1.5, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE / 4.0, f32::MAX];
        let mut rng = Rng::new(5);
        let mut pick = || mixed(&mut rng, &special, 10.0);
        let clear = |x: f32| x.is_sign_positive();
        for _ in 0..20_000 {
            let (a, b) = (pick(), pick());
            let lane = |v: [f32; 8]| v[0];
            let (va, vb) = (Portable::splat(a), Portable::splat(b));
            let (max, min) = (lane(Portable::max_bits(va, vb)), lane(Portable::min_bits(va, vb)));
            if clear(a) || clear(b) {
                assert_eq!(max, a.max(b), "{a} {b}");
            }
            if clear(a) && clear(b) {
                assert_eq!(min, a.min(b), "{a} {b}");
            } else {
                assert!(!clear(min), "{a} {b}");
            }
            if clear(a) && b.to_bits() != (-0.0f32).to_bits() {
                assert_eq!(Portable::le_bits(va, vb) == 0xff, a <= b, "{a} {b}");
            }
        }
    }

    /// Every operation of [`Avx2`] gives [`Portable`]'s bits, NaNs, infinities,
    /// signed zeros and subnormals included; `mul_add` gives the fused result on
    /// [`Avx2`] and the twice-rounded one on [`Portable`].
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_lanes_match_portable_bit_for_bit() {
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma"))
        {
            return;
        }
        // SAFETY: AVX2 and FMA are present (checked above).
        unsafe { compare_units() }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn compare_units() {
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE / 4.0,
            f32::MAX,
            -f32::MAX,
        ];
        let mut rng = Rng::new(7);
        let mut masks = Rng::new(11);
        let mut pick = || mixed(&mut rng, &special, 500.0);
        let bits = |v: [f32; 8]| v.map(f32::to_bits);
        for _ in 0..2000 {
            let a: [f32; 8] = std::array::from_fn(|_| pick());
            let b: [f32; 8] = std::array::from_fn(|_| pick());
            let (pa, pb) = (Portable::load(&a), Portable::load(&b));
            let (va, vb) = (Avx2::load(&a), Avx2::load(&b));
            let pairs = [
                (Portable::add(pa, pb), Avx2::add(va, vb)),
                (Portable::sub(pa, pb), Avx2::sub(va, vb)),
                (Portable::mul(pa, pb), Avx2::mul(va, vb)),
                (Portable::div(pa, pb), Avx2::div(va, vb)),
                (Portable::max(pa, pb), Avx2::max(va, vb)),
                (Portable::min(pa, pb), Avx2::min(va, vb)),
                (Portable::abs(pa), Avx2::abs(va)),
                (Portable::max_bits(pa, pb), Avx2::max_bits(va, vb)),
                (Portable::min_bits(pa, pb), Avx2::min_bits(va, vb)),
                (Portable::splat(a[3]), Avx2::splat(a[3])),
            ];
            for (portable, avx2) in pairs {
                assert_eq!(bits(portable), bits(Avx2::store(avx2)), "{a:?} {b:?}");
            }
            let c: [f32; 8] = std::array::from_fn(|_| pick());
            let fused = std::array::from_fn(|i| a[i].mul_add(b[i], c[i]));
            let twice = std::array::from_fn(|i| a[i] * b[i] + c[i]);
            let (pc, vc) = (Portable::load(&c), Avx2::load(&c));
            // Which NaN a multiply-add returns is the unit's (and the library's)
            // choice: any NaN stands for all.
            let value = |v: [f32; 8]| v.map(|x| if x.is_nan() { f32::NAN.to_bits() } else { x.to_bits() });
            let fma = Avx2::store(Avx2::mul_add(va, vb, vc));
            assert_eq!(value(fma), value(fused), "{a:?} {b:?} {c:?}");
            assert_eq!(value(Portable::store(Portable::mul_add(pa, pb, pc))), value(twice));
            assert_eq!(Portable::le(pa, pb), Avx2::le(va, vb), "{a:?} {b:?}");
            assert_eq!(Portable::lt(pa, pb), Avx2::lt(va, vb), "{a:?} {b:?}");
            assert_eq!(Portable::eq(pa, pb), Avx2::eq(va, vb), "{a:?} {b:?}");
            assert_eq!(Portable::le_bits(pa, pb), Avx2::le_bits(va, vb), "{a:?} {b:?}");
            let mask = masks.next_u32() & 0xff;
            let (filled, x) = (Portable::fill_outside(pa, mask, b[0]), b[0]);
            assert_eq!(bits(filled), bits(Avx2::store(Avx2::fill_outside(va, mask, x))), "{a:?} {mask:#x}");
            let order = Portable::push_order(pa, mask);
            assert_eq!(order, Avx2::store_u32(Avx2::push_order(va, mask)), "{a:?} {mask:#x}");
            assert_eq!(Portable::push_keys(pa, mask), Avx2::store_u32(Avx2::push_keys(va, mask)), "{a:?} {mask:#x}");
            let index = Portable::load_u32(&order);
            let (vindex, vb) = (Avx2::load_u32(&order), Avx2::load_u32(&b.map(f32::to_bits)));
            assert_eq!(bits(Portable::permute(pb, index)), bits(Avx2::store(Avx2::permute(Avx2::load(&b), vindex))));
            assert_eq!(
                Portable::permute_u32(Portable::load_u32(&b.map(f32::to_bits)), index),
                Avx2::store_u32(Avx2::permute_u32(vb, vindex))
            );
            let bytes = b.map(|x| x.to_bits() as u8);
            assert_eq!(Portable::load_u8(&bytes), Avx2::store_u32(Avx2::load_u8(&bytes)));
            let (portable, avx2) = (Portable::min_lane(pa), Avx2::min_lane(va));
            assert_eq!(portable.to_bits(), avx2.to_bits(), "{a:?}");
            if !a.iter().any(|x| x.is_nan()) {
                assert_eq!(portable, a.iter().copied().fold(f32::INFINITY, f32::min), "{a:?}");
            }
            let scales = Portable::direction_scale(pa);
            assert_eq!(bits(scales), bits(Avx2::store(Avx2::direction_scale(va))), "{a:?}");
            let inverse = Avx2::store(Avx2::reciprocal_scale(Avx2::load(&scales)));
            assert_eq!(bits(Portable::reciprocal_scale(scales)), bits(inverse), "{a:?}");
            let rows: [[f32; 8]; 8] = std::array::from_fn(|_| std::array::from_fn(|_| pick()));
            let avx2 = Avx2::transpose(rows.map(|row| Avx2::load(&row))).map(Avx2::store);
            assert_eq!(Portable::transpose(rows).map(bits), avx2.map(bits), "{rows:?}");
        }
    }

    /// The transpose moves lane `j` of row `i` to lane `i` of row `j`.
    #[test]
    fn transpose_swaps_rows_and_lanes() {
        let rows: [[f32; 8]; 8] = std::array::from_fn(|i| std::array::from_fn(|j| (8 * i + j) as f32));
        let columns = Portable::transpose(rows);
        for (j, column) in columns.iter().enumerate() {
            assert_eq!(*column, std::array::from_fn(|i| (8 * i + j) as f32));
        }
    }
}
