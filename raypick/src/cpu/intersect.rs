//! The ray–triangle test, operation for operation the same as `shaders/intersect.wgsl`:
//! per-ray set-up ([`RayFrame`]), the choice between the fast test
//! ([`super::moller_trumbore`]) and the watertight one ([`super::watertight`]), and
//! the acceptance rule they share ([`accept`]).
//!
//! The tests are written on plain `f32` scalars, so the block kernels ([`SoaTriangles`])
//! call them once per SIMD lane and the compiler vectorises the loop, while the scalar
//! [`intersect`] calls the very same code.

use super::moller_trumbore::{fast_deciding, moller_trumbore, moller_trumbore_unscaled};
use super::vector::Lanes8;
use super::watertight::{watertight, watertight_lanes};
use crate::options::{Cull, Mode};
use crate::types::{PackedTriangle, Ray};


/// The result of one ray–triangle test (after acceptance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Ray parameter.
    pub t: f32,
    /// Barycentric weight of `v1`.
    pub u: f32,
    /// Barycentric weight of `v2`.
    pub v: f32,
    /// Whether the hit passes culling, the barycentric range, the ray interval and
    /// is strictly nearer than the best hit so far.
    pub accepted: bool,
}

/// Stands in for `1 / 0` in box tests so that they never compute `0 * inf`.
pub const BIG: f32 = 1e38;

/// `1 / d` for a box test's direction component `d`, [`BIG`] for zero.
#[inline(always)]
pub fn slab_reciprocal(d: f32) -> f32 {
    if d == 0.0 { BIG } else { 1.0 / d }
}

/// [`slab_reciprocal`] lane by lane (the same operations, so the same bits), and
/// the lanes where `d` is zero (bit per lane).
#[inline(always)]
pub(super) fn slab_reciprocal_lanes<L: Lanes8>(d: L::V) -> (L::V, u32) {
    let zeros = L::eq(d, L::splat(0.0));
    (L::fill_outside(L::div(L::splat(1.0), d), !zeros & 0xff, BIG), zeros)
}

/// Relative margin on slab distances: far above the few ulps of rounding in a box
/// test and in Möller–Trumbore's `t` for non-grazing rays.
pub const BOX_MARGIN: f32 = 1e-5;

/// `x` moved down by the relative [`BOX_MARGIN`] (`x - |x| · margin`): how the box
/// tests pad a slab entry.
#[inline(always)]
pub fn padded_below(x: f32) -> f32 {
    x - x.abs() * BOX_MARGIN
}

/// `x` moved up by the relative [`BOX_MARGIN`] (`x + |x| · margin`): how the box
/// tests pad a slab exit.
#[inline(always)]
pub fn padded_above(x: f32) -> f32 {
    x + x.abs() * BOX_MARGIN
}

/// [`padded_below`] lane by lane (the same operations, so the same bits).
#[inline(always)]
pub(super) fn padded_below_lanes<L: Lanes8>(x: L::V) -> L::V {
    L::sub(x, L::mul(L::abs(x), L::splat(BOX_MARGIN)))
}

/// [`padded_above`] lane by lane (the same operations, so the same bits).
#[inline(always)]
pub(super) fn padded_above_lanes<L: Lanes8>(x: L::V) -> L::V {
    L::add(x, L::mul(L::abs(x), L::splat(BOX_MARGIN)))
}

/// Whether a slab interval `[near, far]` is non-empty up to the relative
/// [`BOX_MARGIN`]: the box tests' overlap rule, used by every traversal and by the
/// kernel on the triangle's own box.
#[inline(always)]
pub fn overlaps(near: f32, far: f32) -> bool {
    padded_below(near) <= padded_above(far)
}

/// [`overlaps`] lane by lane, as a lane mask.
#[inline(always)]
pub(super) fn overlaps_lanes<L: Lanes8>(near: L::V, far: L::V) -> u32 {
    L::le(padded_below_lanes::<L>(near), padded_above_lanes::<L>(far))
}

/// `f32::is_finite` lane by lane, as a lane mask.
#[inline(always)]
pub(super) fn finite_lanes<L: Lanes8>(x: L::V) -> u32 {
    L::le(L::abs(x), L::splat(f32::MAX))
}

/// Whether a box entered at `entry` lies beyond `bound` by more than the relative
/// [`BOX_MARGIN`]: then nothing in it can change the answer, and the traversals
/// skip it.
#[inline(always)]
pub fn beyond(entry: f32, bound: f32) -> bool {
    padded_beyond(padded_below(entry), bound)
}

/// [`beyond`] of an entry already padded down ([`padded_below`]).
#[inline(always)]
pub fn padded_beyond(padded_entry: f32, bound: f32) -> bool {
    padded_entry > bound
}

/// [`beyond`] lane by lane, as a lane mask.
#[inline(always)]
pub(super) fn beyond_lanes<L: Lanes8>(entry: L::V, bound: L::V) -> u32 {
    L::lt(bound, padded_below_lanes::<L>(entry))
}

/// A determinant within `DET_TOLERANCE · |e1|₁ · |e2|₁ · (ray factor)` of zero counts
/// as zero (the ray is parallel to the triangle). The bound covers the rounding error
/// of the determinant, so its sign is reliable whenever a hit is reported and
/// near-parallel rays cannot produce hits far from the triangle. `2^-20`.
pub const DET_TOLERANCE: f32 = 9.536_743e-7;

/// Whether a determinant passes the parallel test and the culling mode
/// (a `crate::Cull`). Degenerate triangles (bound and determinant zero) always
/// fail.
#[inline(always)]
pub fn det_passes(det: f32, det_bound: f32, cull: Cull) -> bool {
    const BACK: u32 = Cull::Back as u32;
    const FRONT: u32 = Cull::Front as u32;
    let tolerance = DET_TOLERANCE * det_bound;
    // Matched on the discriminant with a catch-all arm: the lane loops that call
    // this stay vectorised, which a match over the enum's three variants (as
    // measured) does not keep them.
    match cull as u32 {
        BACK => det > tolerance,
        FRONT => det < -tolerance,
        _ => det.abs() > tolerance,
    }
}

/// The values of one ray–triangle test before normalisation:
/// `u = big_u / det`, `v = big_v / det`, `t = big_t / det`, and `big_w / det` is the
/// weight of `v0`. The ray is inside the triangle when `big_u`, `big_v` and `big_w`
/// all have the sign of `det`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Unnormalised {
    /// The determinant (twice the signed area of the triangle seen along the ray).
    pub det: f32,
    /// Scales the determinant tolerance: `|e1|₁ · |e2|₁` times the ray's factor.
    pub det_bound: f32,
    /// `u * det`.
    pub big_u: f32,
    /// `v * det`.
    pub big_v: f32,
    /// `(1 - u - v) * det`.
    pub big_w: f32,
    /// `t * det`.
    pub big_t: f32,
}

/// What the tests need of a ray, computed once per ray (`RayFrame` in the WGSL).
///
/// The tests see the direction scaled by a power of two, `dir = ray.dir · 2^-k`,
/// with its largest component in `[1, 2)`, so their `t` is in units of that
/// direction, `2^k` times the caller's, and is scaled back by
/// [`RayFrame::t_scale`] `= 2^-k`. Scaling by a power of two is exact, so the answer is
/// the same as with the caller's direction, except where that one would over- or
/// underflow: a direction of `1e37` (or `1e-37`) works as well as a unit one, and `t`
/// stays in units of the caller's direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayFrame {
    /// Ray origin.
    pub origin: [f32; 3],
    /// Ray direction, scaled: its largest component is in `[1, 2)` (see the type).
    pub dir: [f32; 3],
    /// `|dir|₁`: the ray's part of the fast test's determinant bound.
    pub dir_norm: f32,
    /// `[kx, ky, kz]`: `kz` is the axis of the largest `|dir|` component, `kx`, `ky`
    /// the next two in cyclic order, swapped when `dir[kz] < 0` to keep the winding.
    pub axes: [usize; 3],
    /// `[dir[kx] / dir[kz], dir[ky] / dir[kz], 1 / dir[kz]]` (by the reciprocal).
    pub shear: [f32; 3],
    /// `dir_norm · |shear[2]|`: the ray's part of the watertight determinant bound.
    pub shear_norm: f32,
    /// `2^-k`, the direction's scale: multiplies the tests' `t` into units of the
    /// caller's direction.
    pub t_scale: f32,
    /// `1 / dir`, with [`BIG`] for zero components: the slab tests' factors.
    pub inv_dir: [f32; 3],
    /// False for a zero direction: such a ray never hits.
    pub live: bool,
}

/// The power of two `2^-k` for the largest direction component `max_abs`:
/// `max_abs · 2^-k` is in `[1, 2)` for every normal `max_abs` below `2^127` (in
/// `[2, 4)` above, and at least `2^-23` for subnormals). Read from the exponent bits,
/// so it is exact and the same in the WGSL (`direction_scale`).
#[inline(always)]
pub fn direction_scale(max_abs: f32) -> f32 {
    let exponent = (max_abs.to_bits() >> 23) & 0xff;
    f32::from_bits(254u32.saturating_sub(exponent).clamp(1, 253) << 23)
}

/// The part of a ray's [`RayFrame`] that the box tests need: its scaled direction,
/// the scale, and `1 / dir`. Cheaper than the whole frame, whose triangle-test
/// part (the shear) a ray that reaches no leaf never uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxFrame {
    /// As [`RayFrame::dir`].
    pub dir: [f32; 3],
    /// As [`RayFrame::t_scale`].
    pub t_scale: f32,
    /// As [`RayFrame::inv_dir`].
    pub inv_dir: [f32; 3],
}

impl BoxFrame {
    /// The box frame of `ray`: the same values as in [`RayFrame::new`]`(ray)`, which
    /// works them out with this.
    #[inline(always)]
    pub fn new(ray: &Ray) -> Self {
        let t_scale = ray_scale(ray);
        let dir: [f32; 3] = (ray.dir * t_scale).into();
        let inv_dir = dir.map(slab_reciprocal);
        Self { dir, t_scale, inv_dir }
    }
}

/// The scale of `ray`'s direction: [`direction_scale`] of its largest component.
/// The largest is found on the bits of the magnitudes, whose order is theirs
/// (NaN above every number): integer steps, shorter than float `max`'s NaN
/// handling on the way from the ray to its first box test.
#[inline(always)]
pub fn ray_scale(ray: &Ray) -> f32 {
    let magnitude = |x: f32| x.to_bits() & !SIGN_BIT;
    let largest = magnitude(ray.dir.x).max(magnitude(ray.dir.y)).max(magnitude(ray.dir.z));
    direction_scale(f32::from_bits(largest))
}

/// `1 / scale` for a [`direction_scale`] (a power of two from `2^-126` to
/// `2^126`), exact and without a division: its exponent bits are the difference
/// from 254.
#[inline(always)]
pub fn reciprocal_scale(scale: f32) -> f32 {
    f32::from_bits((254 << 23) - scale.to_bits())
}

/// `2^-90`: a test one of whose deciding values (below) is under this in
/// magnitude is redone with [`offset_scale`]. Where all of them are above it, no
/// value below f32's normal range (which a GPU may flush to zero) changes any of
/// them or the rest of the test: each product below `2^-126` is then under an
/// eighth of the last place of the sum it enters. Zeros are under it too: the
/// watertight test's exactly-zero edge functions are recomputed exactly in the
/// same redo.
pub const TINY: f32 = f32::from_bits((127 - 90) << 23);

/// Whether one of a test's four deciding `values` is under [`TINY`]: the
/// watertight test's `big_u`, `big_v`, `big_w`, `big_t` (its `det` is their sum),
/// the fast test's `det`, `big_u`, `big_v`, `big_t` (its `big_w` their
/// difference). The least magnitude is found on the bits (the order of
/// non-negative floats, NaN above every number), which vectorises in the lane
/// loops in fewer instructions than four comparisons.
#[inline(always)]
pub fn tiny(values: [f32; 4]) -> bool {
    let least = values.iter().fold(u32::MAX, |least, v| least.min(v.to_bits() & !SIGN_BIT));
    least < TINY.to_bits()
}

/// The sign bit of an f32.
const SIGN_BIT: u32 = 1 << 31;

/// The power of two `2^k` (`k >= 1`) that brings `largest`, the largest offset of
/// a test (a vertex from the ray's origin, an edge), into `[1, 2)` when it is a
/// normal number below 1; `None` otherwise. A test with [`tiny`] values runs again
/// on its offsets scaled by it: its products of two and three offsets then stay
/// above f32's normal range, where a GPU that flushes subnormal numbers to zero
/// computes what the CPU does, and, scaling by a power of two being exact, the
/// answer is the one the unscaled test gives wherever that one stays in the normal
/// range. Read from the exponent bits, the same in the WGSL (`offset_scale`).
#[inline(always)]
pub fn offset_scale(largest: f32) -> Option<f32> {
    const NORMAL_BELOW_ONE: std::ops::Range<u32> = 1..127;
    let exponent = (largest.to_bits() >> 23) & 0xff;
    NORMAL_BELOW_ONE
        .contains(&exponent)
        .then(|| f32::from_bits((254 - exponent) << 23))
}

/// `n`, the values of a test that `on` ran on `offsets` (the vertices' offsets
/// from the ray's origin, or the fast test's `e1`, `e2`, `s`) with the triangle's
/// stored edge norm; when its deciding values (`deciding`) are [`tiny`], `on`
/// again on the offsets scaled by [`offset_scale`], its `big_t` scaled back by one
/// factor of it so that `t = big_t / det` keeps the caller's units.
#[inline(always)]
pub(super) fn redo_if_tiny(
    n: Unnormalised,
    deciding: fn(&Unnormalised) -> [f32; 4],
    offsets: [[f32; 3]; 3],
    vertices: [[f32; 3]; 3],
    on: impl Fn([[f32; 3]; 3], f32) -> Unnormalised,
) -> Unnormalised {
    if !tiny(deciding(&n)) {
        return n;
    }
    let largest = offsets.as_flattened().iter().fold(0.0f32, |m, a| m.max(a.abs()));
    let Some(scale) = offset_scale(largest) else {
        return n;
    };
    let mut n = on(offsets.map(|a| a.map(|x| x * scale)), scaled_edge_norm(vertices, scale));
    n.big_t *= reciprocal_scale(scale);
    n
}

/// `|v|₁` summed left to right, as [`PackedTriangle::edge_norm`]'s factors.
#[inline(always)]
fn l1_norm(v: [f32; 3]) -> f32 {
    v[0].abs() + v[1].abs() + v[2].abs()
}

/// [`PackedTriangle::edge_norm`] of `vertices` with its edges scaled by `scale`
/// ([`offset_scale`]), worked out again from the vertices: `scale²` times the
/// stored one where that is a normal number, and not lost where the stored one
/// falls below the normal range (edges shorter than about `1e-19`).
#[inline(always)]
fn scaled_edge_norm([v0, v1, v2]: [[f32; 3]; 3], scale: f32) -> f32 {
    let edge = |v: [f32; 3]| [v[0] - v0[0], v[1] - v0[1], v[2] - v0[2]];
    (l1_norm(edge(v1)) * scale) * (l1_norm(edge(v2)) * scale)
}

impl RayFrame {
    /// `1 / t_scale` (exact, [`reciprocal_scale`]).
    #[inline(always)]
    pub fn inv_t_scale(&self) -> f32 {
        reciprocal_scale(self.t_scale)
    }

    /// The frame of `ray`.
    #[inline(always)]
    pub fn new(ray: &Ray) -> Self {
        Self::with_boxes(ray, &BoxFrame::new(ray))
    }

    /// The frame of `ray`, whose box frame is `boxes` ([`BoxFrame::new`]): the
    /// rest worked out later than the box tests' part, as a walk that reaches a
    /// leaf needs it.
    #[inline(always)]
    pub fn with_boxes(ray: &Ray, boxes: &BoxFrame) -> Self {
        let BoxFrame { dir, t_scale: scale, inv_dir } = *boxes;
        let a = dir.map(f32::abs);
        let kz = if a[0] > a[1] {
            if a[0] > a[2] { 0 } else { 2 }
        } else if a[1] > a[2] {
            1
        } else {
            2
        };
        let (mut kx, mut ky) = ((kz + 1) % 3, (kz + 2) % 3);
        let dz = dir[kz];
        if dz < 0.0 {
            std::mem::swap(&mut kx, &mut ky);
        }
        let live = dz != 0.0;
        // `1 / dz` itself when the ray is live (`dz` is not zero, so not `BIG`).
        let inv_dz = if live { inv_dir[kz] } else { 0.0 };
        let dir_norm = a[0] + a[1] + a[2];
        Self {
            origin: ray.origin.into(),
            dir,
            dir_norm,
            axes: [kx, ky, kz],
            shear: [dir[kx] * inv_dz, dir[ky] * inv_dz, inv_dz],
            shear_norm: dir_norm * inv_dz.abs(),
            t_scale: scale,
            inv_dir,
            live,
        }
    }
}

/// [`is_valid_ray`](crate::prepare::is_valid_ray) on the lanes of one vector: the
/// ray's eight values (`ox oy oz tmin dx dy dz tmax`) loaded at once, the origin
/// and direction finite, the direction not zero, and `tmin <= tmax` (false for a
/// NaN bound), in a few instructions and one branch where the traversal asks.
#[inline(always)]
pub(super) fn is_valid_ray_on<L: Lanes8>(ray: &Ray) -> bool {
    valid_lanes::<L>(ray_lanes::<L>(ray), ray)
}

/// Lanes of a ray's values (`ox oy oz tmin dx dy dz tmax`) that hold its origin.
pub(super) const ORIGIN_LANES: u32 = 0b0000_0111;

/// Lanes of a ray's values that hold its direction.
pub(super) const DIR_LANES: u32 = 0b0111_0000;

/// A ray's eight values in the lanes of one vector.
#[inline(always)]
pub(super) fn ray_lanes<L: Lanes8>(ray: &Ray) -> L::V {
    L::load(bytemuck::cast_ref::<Ray, [f32; 8]>(ray))
}

/// [`is_valid_ray_on`] of `ray`, whose values are already in `values`
/// ([`ray_lanes`]): origin and direction finite, the direction not zero, and
/// `tmin <= tmax` (false for a NaN bound).
#[inline(always)]
pub(super) fn valid_lanes<L: Lanes8>(values: L::V, ray: &Ray) -> bool {
    const ORIGIN_AND_DIR: u32 = ORIGIN_LANES | DIR_LANES;
    let finite = finite_lanes::<L>(values) & ORIGIN_AND_DIR;
    let zero = L::eq(values, L::splat(0.0)) & DIR_LANES;
    (finite == ORIGIN_AND_DIR) & (zero != DIR_LANES) & (ray.tmin <= ray.tmax)
}

/// Normalises the values of one test and applies every acceptance rule of
/// `intersect.wgsl` that does not involve the ray's interval: the determinant test
/// (`cull` is a `crate::Cull`), inside-ness (from the unnormalised values,
/// signs flipped when `det < 0`) and finiteness. Returns `(t, u, v, candidate)`,
/// `t` in units of the frame's direction and not yet clamped ([`place`] finishes
/// it); every comparison rejects NaN.
///
/// Only finite values are ever accepted: `1 / det`, `t`, `u` and `v` must all be
/// finite. A determinant small enough that its reciprocal overflows (tiny or
/// subnormal triangles) would otherwise give `u = 0 · ∞ = NaN`, and a `t` that
/// overflows would be reported as `±∞` (accepted by an infinite `tmin` or `tmax`).
#[inline(always)]
pub fn candidate(n: Unnormalised, frame: &RayFrame, cull: Cull) -> (f32, f32, f32, bool) {
    let inv_det = 1.0 / n.det;
    let t = n.big_t * inv_det;
    let u = n.big_u * inv_det;
    let v = n.big_v * inv_det;
    let finite = inv_det.is_finite() & t.is_finite() & u.is_finite() & v.is_finite();
    (t, u, v, passes_before_division(n, frame, cull) & finite)
}

/// The rules of [`candidate`] that need no division: a live ray, the determinant
/// test with culling, and inside-ness (from the unnormalised values, signs flipped
/// when `det < 0`).
#[inline(always)]
fn passes_before_division(n: Unnormalised, frame: &RayFrame, cull: Cull) -> bool {
    let sign = if n.det > 0.0 { 1.0 } else { -1.0 };
    let inside = (n.big_u * sign >= 0.0) & (n.big_v * sign >= 0.0) & (n.big_w * sign >= 0.0);
    frame.live & det_passes(n.det, n.det_bound, cull) & inside
}

/// The set bits of `mask` (lanes of a block or node, or rays of a packet), lowest
/// first.
#[inline(always)]
pub fn lanes(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let lane = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            lane
        })
    })
}

/// The ray's interval `(entry, exit)` through the triangle's padded box (the box the
/// BVH builder and refit give it, [`crate::bvh::build::triangle_box`]), in units of the
/// frame's direction, by the slab arithmetic of the BVH traversals' box tests (with
/// [`BIG`] for `1 / 0`): every BVH box that holds the triangle holds this box, so
/// it is entered no later and left no earlier (rounding is monotonic).
#[inline(always)]
pub fn box_interval(frame: &RayFrame, vertices: [[f32; 3]; 3]) -> (f32, f32) {
    let (lo, hi) = crate::bvh::vertices_box(vertices.map(glam::Vec3::from));
    let (mut entry, mut exit) = (f32::NEG_INFINITY, f32::INFINITY);
    for axis in 0..3 {
        let inv = frame.inv_dir[axis];
        let (near, far) = if inv < 0.0 {
            (hi[axis], lo[axis])
        } else {
            (lo[axis], hi[axis])
        };
        let near = (near - frame.origin[axis]) * inv;
        let far = (far - frame.origin[axis]) * inv;
        entry = if near > entry { near } else { entry };
        exit = if far < exit { far } else { exit };
    }
    (entry, exit)
}

/// Finishes a [`candidate`]: rejects it when the ray misses the triangle's padded
/// box ([`box_interval`] empty by the box tests' own rule, [`overlaps`]), clamps its
/// `t` (frame units) into that interval (never before the entry), scales it into
/// units of the caller's direction and tests it against the ray's interval and the
/// best hit so far (`t < best_t`, strict, so earlier triangles win ties). Returns
/// `(t, accepted)`.
///
/// This is what makes BVH culling exact. Every BVH box that holds the triangle holds
/// its padded box, and slab rounding is monotonic, so such a box is entered no later
/// and left no earlier. Far from the ray origin, at grazing angles or for rays
/// nearly parallel to the triangle, the test's `t` can round to well outside the
/// box: a box entered after the best hit would then be culled although a triangle
/// in it ties with that hit (a duplicate, say), and a box the ray misses would hide
/// a hit that brute force reports. Clamped and checked here, a hit is never before
/// the entry of a box that holds it nor outside a box it must be in, so the boxes
/// the traversals cull never hold an answer, whatever the order of traversal. The
/// clamp only acts when the test's error exceeds the padding (a relative `2^-18`
/// of the box's coordinates); true hits lie inside the unpadded box.
#[inline(always)]
pub fn place(
    t: f32,
    ray: &Ray,
    frame: &RayFrame,
    vertices: [[f32; 3]; 3],
    best_t: f32,
) -> (f32, bool) {
    let (entry, exit) = box_interval(frame, vertices);
    let below_exit = if t > exit { exit } else { t };
    let clamped = if below_exit < entry {
        entry
    } else {
        below_exit
    };
    let t = clamped * frame.t_scale;
    let accepted =
        overlaps(entry, exit) & t.is_finite() & (t >= ray.tmin) & (t <= ray.tmax) & (t < best_t);
    (t, accepted)
}

/// [`candidate`], then [`place`] for a candidate: the whole acceptance test of
/// `intersect.wgsl` for the ray of `frame` and the triangle `vertices`. Returns
/// `(t, u, v, accepted)`, `t` in units of the caller's direction.
#[inline(always)]
pub fn accept(
    n: Unnormalised,
    ray: &Ray,
    frame: &RayFrame,
    cull: Cull,
    best_t: f32,
    vertices: [[f32; 3]; 3],
) -> (f32, f32, f32, bool) {
    let (t, u, v, candidate) = candidate(n, frame, cull);
    if !candidate {
        return (t * frame.t_scale, u, v, false);
    }
    let (t, accepted) = place(t, ray, frame, vertices, best_t);
    (t, u, v, accepted)
}

/// The test of `mode` (a `crate::Mode`) for the ray of `frame` and the
/// triangle `vertices` (`edge_norm` is [`PackedTriangle::edge_norm`]).
#[inline(always)]
pub fn test(frame: &RayFrame, vertices: [[f32; 3]; 3], edge_norm: f32, mode: Mode) -> Unnormalised {
    if mode == Mode::Watertight {
        watertight(frame, vertices, edge_norm)
    } else {
        moller_trumbore(frame, vertices, edge_norm)
    }
}

/// Tests one ray against one packed triangle (the scalar form of the kernel);
/// `mode` is a `crate::Mode`, `cull` is a `crate::Cull`.
#[inline]
pub fn intersect(
    ray: &Ray,
    frame: &RayFrame,
    tri: &PackedTriangle,
    cull: Cull,
    best_t: f32,
    mode: Mode,
) -> Candidate {
    let vertices = [tri.v0.into(), tri.v1.into(), tri.v2.into()];
    let n = test(frame, vertices, tri.edge_norm, mode);
    let (t, u, v, accepted) = accept(n, ray, frame, cull, best_t, vertices);
    Candidate { t, u, v, accepted }
}

/// One [`Unnormalised`] per lane of a [`SoaTriangles`] block, as structure of arrays.
#[derive(Clone, Copy, Debug)]
pub struct Lanes<const N: usize> {
    /// Determinants.
    pub det: [f32; N],
    /// Determinant bounds.
    pub det_bound: [f32; N],
    /// `u * det`.
    pub big_u: [f32; N],
    /// `v * det`.
    pub big_v: [f32; N],
    /// `(1 - u - v) * det`.
    pub big_w: [f32; N],
    /// `t * det`.
    pub big_t: [f32; N],
}

impl<const N: usize> Lanes<N> {
    /// These values with every lane of `soa` that can be hit and whose deciding
    /// values (`deciding`) are [`tiny`] replaced by `test(lane)`: the rare lanes a
    /// block kernel redoes with the scalar test, out of line so that the common
    /// path keeps its values in registers (the lane loops only reduce whether
    /// there are any).
    #[cold]
    #[inline(never)]
    pub(super) fn redo_tiny(
        mut self,
        soa: &SoaTriangles<N>,
        deciding: fn(&Unnormalised) -> [f32; 4],
        test: impl Fn(usize) -> Unnormalised,
    ) -> Self {
        for lane in 0..N {
            if soa.hittable(lane) && tiny(deciding(&self.get(lane))) {
                self.set(lane, test(lane));
            }
        }
        self
    }
}

impl<const N: usize> Default for Lanes<N> {
    fn default() -> Self {
        Self {
            det: [0.0; N],
            det_bound: [0.0; N],
            big_u: [0.0; N],
            big_v: [0.0; N],
            big_w: [0.0; N],
            big_t: [0.0; N],
        }
    }
}

/// [`candidate`] of every lane of a block, as structure of arrays.
#[derive(Clone, Copy, Debug)]
pub struct Candidates<const N: usize> {
    /// `t` in units of the frame's direction, before [`place`].
    pub t: [f32; N],
    /// Barycentric weights of `v1`.
    pub u: [f32; N],
    /// Barycentric weights of `v2`.
    pub v: [f32; N],
    /// The candidate lanes, bit `lane` set for each.
    pub mask: u32,
}

impl<const N: usize> Candidates<N> {
    /// The candidate lanes, in order.
    #[inline(always)]
    pub fn lanes(&self) -> impl Iterator<Item = usize> + use<N> {
        lanes(self.mask)
    }

    /// Whether any lane is a candidate.
    #[inline(always)]
    pub fn any(&self) -> bool {
        self.mask != 0
    }

    /// These candidates of the ray of `frame` in `block`, each [`place`]d with no
    /// best hit yet (`t` in the caller's units): the accepted hits.
    #[inline(always)]
    pub fn placed(mut self, block: &SoaTriangles<N>, ray: &Ray, frame: &RayFrame) -> Self {
        for lane in lanes(self.mask) {
            let accepted;
            (self.t[lane], accepted) = place(self.t[lane], ray, frame, block.triangle(lane), f32::INFINITY);
            if !accepted {
                self.mask &= !(1 << lane);
            }
        }
        self
    }
}

impl<const N: usize> Lanes<N> {
    /// [`candidate`] of every lane (vectorised when `cull` is a constant, as in
    /// brute force's kernels; [`place`] is left to the rare candidates).
    #[inline(always)]
    pub fn candidates(&self, frame: &RayFrame, cull: Cull) -> Candidates<N> {
        // First the lanes that pass `passes_before_division`: every candidate lane
        // is among them, and most blocks have none and skip the division.
        let mut maybe = 0u32;
        for lane in 0..N {
            maybe |= (passes_before_division(self.get(lane), frame, cull) as u32) << lane;
        }
        let mut c = Candidates {
            t: [0.0; N],
            u: [0.0; N],
            v: [0.0; N],
            mask: maybe,
        };
        if maybe == 0 {
            return c;
        }
        let mut mask = 0u32;
        for lane in 0..N {
            let ok;
            (c.t[lane], c.u[lane], c.v[lane], ok) = candidate(self.get(lane), frame, cull);
            mask |= (ok as u32) << lane;
        }
        c.mask = mask;
        c
    }

    /// The values of `lane`.
    #[inline(always)]
    pub fn get(&self, lane: usize) -> Unnormalised {
        Unnormalised {
            det: self.det[lane],
            det_bound: self.det_bound[lane],
            big_u: self.big_u[lane],
            big_v: self.big_v[lane],
            big_w: self.big_w[lane],
            big_t: self.big_t[lane],
        }
    }

    /// Stores the values of `lane`.
    #[inline(always)]
    pub fn set(&mut self, lane: usize, n: Unnormalised) {
        self.det[lane] = n.det;
        self.det_bound[lane] = n.det_bound;
        self.big_u[lane] = n.big_u;
        self.big_v[lane] = n.big_v;
        self.big_w[lane] = n.big_w;
        self.big_t[lane] = n.big_t;
    }
}

/// [`Unnormalised`] values of the eight lanes of a block on explicit vector lanes
/// (a wide BVH's leaf block, tested by `watertight_block` or
/// `moller_trumbore_block`): kept in registers until the block's accepted hits
/// are known ([`LaneTest::accepted`]); most blocks a traversal tests fail the rules
/// that need no division ([`passes_before_division`]) in every lane.
#[derive(Clone, Copy)]
pub(super) struct LaneTest<L: Lanes8> {
    pub(super) det: L::V,
    pub(super) det_bound: L::V,
    pub(super) big_u: L::V,
    pub(super) big_v: L::V,
    pub(super) big_w: L::V,
    pub(super) big_t: L::V,
}

impl<L: Lanes8> LaneTest<L> {
    /// The lanes (bit per lane) a leaf-block kernel redoes: those of `soa` that can
    /// be hit ([`SoaTriangles::hittable`]) where one of the four `deciding` vectors
    /// (as in [`tiny`]) is under [`TINY`] in magnitude.
    #[inline(always)]
    pub(super) fn tiny(soa: &SoaTriangles<8>, deciding: [L::V; 4]) -> u32 {
        let [v0, v1, _] = &soa.vertices;
        // No closures: one may be compiled apart from the dispatched caller,
        // without its vector unit.
        let degenerate = L::eq(L::load(&v0[0]), L::load(&v1[0]))
            & L::eq(L::load(&v0[1]), L::load(&v1[1]))
            & L::eq(L::load(&v0[2]), L::load(&v1[2]));
        let [a, b, c, d] = deciding;
        let least = L::min(L::min(L::abs(a), L::abs(b)), L::min(L::abs(c), L::abs(d)));
        L::lt(least, L::splat(TINY)) & !degenerate & 0xff
    }

    /// The values of `lanes`.
    #[inline(always)]
    pub(super) fn load(lanes: &Lanes<8>) -> Self {
        Self {
            det: L::load(&lanes.det),
            det_bound: L::load(&lanes.det_bound),
            big_u: L::load(&lanes.big_u),
            big_v: L::load(&lanes.big_v),
            big_w: L::load(&lanes.big_w),
            big_t: L::load(&lanes.big_t),
        }
    }

    /// The accepted hits among these lanes, the test of `ray` (whose frame is
    /// `frame`) against `block`, whose triangles' box margins are `margins`
    /// ([`box_margins`]), for culling `cull`: [`Lanes::candidates`], then
    /// [`place`] with no best hit yet, lane by lane the same operations (`t` in
    /// the caller's units). `None` when no lane passes the rules that need no
    /// division ([`passes_before_division`]), which most blocks a traversal tests
    /// fail.
    #[inline(always)]
    pub(super) fn accepted(
        &self,
        block: &SoaTriangles<8>,
        margins: &[f32; 8],
        ray: &Ray,
        frame: &RayFrame,
        cull: Cull,
    ) -> Option<Candidates<8>> {
        if !frame.live {
            return None;
        }
        let zero = L::splat(0.0);
        let (u, v, w) = (self.big_u, self.big_v, self.big_w);
        // The signs of `big_u`, `big_v` and `big_w` agree with the determinant's
        // (`> 0`, else taken as negative).
        let positive = L::lt(zero, self.det);
        let inside_positive = L::le(zero, u) & L::le(zero, v) & L::le(zero, w);
        let inside_negative = L::le(u, zero) & L::le(v, zero) & L::le(w, zero);
        let inside = (positive & inside_positive) | (!positive & inside_negative);
        // `det_passes`: `-(a · b)` is `(-a) · b` exactly.
        let passes = match cull {
            Cull::Back => L::lt(L::mul(L::splat(DET_TOLERANCE), self.det_bound), self.det),
            Cull::Front => L::lt(self.det, L::mul(L::splat(-DET_TOLERANCE), self.det_bound)),
            Cull::None => L::lt(L::mul(L::splat(DET_TOLERANCE), self.det_bound), L::abs(self.det)),
        };
        let maybe = inside & passes & 0xff;
        if maybe == 0 {
            return None;
        }
        // As `candidate`: every value finite.
        let inv_det = L::div(L::splat(1.0), self.det);
        let (t, u, v) = (L::mul(self.big_t, inv_det), L::mul(u, inv_det), L::mul(v, inv_det));
        let finite = finite_lanes::<L>(inv_det) & finite_lanes::<L>(t);
        let candidates = maybe & finite & finite_lanes::<L>(u) & finite_lanes::<L>(v);
        let (t, placed) = place_lanes::<L>(t, block, margins, ray, frame);
        Some(Candidates {
            t: L::store(t),
            u: L::store(u),
            v: L::store(v),
            mask: candidates & placed,
        })
    }
}

/// [`place`] of every lane of a block at once, with no best hit yet: each lane's
/// `t` clamped into its triangle's padded box and scaled into the caller's units,
/// and the lanes accepted, with [`box_interval`]'s and [`place`]'s operations lane
/// by lane. The vertices are finite (unhittable triangles are stored as zeros), so
/// the order in which the box's minima and maxima are taken does not matter.
///
/// Each lane's padding is its stored margin ([`box_margins`], worked out when
/// the block was packed): the box's magnitude and margin are the longest chain
/// of dependent steps of the block's whole test, longer than the triangle test
/// and its division, and an accepted block's hit would wait on it. The entry and
/// exit are [`box_interval`]'s fold over the axes without its infinite start,
/// which no distance (never NaN) loses to.
#[inline(always)]
fn place_lanes<L: Lanes8>(
    t: L::V,
    block: &SoaTriangles<8>,
    margins: &[f32; 8],
    ray: &Ray,
    frame: &RayFrame,
) -> (L::V, u32) {
    let [v0, v1, v2] = &block.vertices;
    let margin = L::load(margins);
    let mut near = [L::splat(0.0); 3];
    let mut far = [L::splat(0.0); 3];
    for axis in 0..3 {
        let (a, b, c) = (L::load(&v0[axis]), L::load(&v1[axis]), L::load(&v2[axis]));
        let lo = L::sub(L::min(L::min(a, b), c), margin);
        let hi = L::add(L::max(L::max(a, b), c), margin);
        let (origin, inv) = (L::splat(frame.origin[axis]), L::splat(frame.inv_dir[axis]));
        // The near plane's distance is the smaller (rounding keeps the order), so
        // no branch on the direction's sign; the planes are finite and `inv` is
        // not zero, so neither is NaN.
        let (to_lo, to_hi) = (L::mul(L::sub(lo, origin), inv), L::mul(L::sub(hi, origin), inv));
        near[axis] = L::min(to_lo, to_hi);
        far[axis] = L::max(to_lo, to_hi);
    }
    // Later axes first, as `box_interval` keeps the earlier of equal distances.
    let entry = L::max(near[2], L::max(near[1], near[0]));
    let exit = L::min(far[2], L::min(far[1], far[0]));
    let clamped = L::max(entry, L::min(exit, t));
    let t = L::mul(clamped, L::splat(frame.t_scale));
    let within = L::le(L::splat(ray.tmin), t) & L::le(t, L::splat(ray.tmax));
    (t, overlaps_lanes::<L>(entry, exit) & finite_lanes::<L>(t) & within)
}

/// The margin by which each lane's triangle box is padded
/// ([`vertices_margin`](crate::bvh::build::vertices_margin), the BVH builder's
/// padding), as [`place_lanes`] takes them: a wide BVH keeps them beside each
/// leaf block.
pub(crate) fn box_margins(block: &SoaTriangles<8>) -> [f32; 8] {
    std::array::from_fn(|lane| crate::bvh::build::vertices_margin(block.triangle(lane).map(glam::Vec3A::from)))
}

/// `N` packed triangles as structure of arrays (x, y, z rows of the three vertices),
/// the layout the SIMD kernels test one ray against. Unused lanes are zero, i.e.
/// degenerate, and never hit.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct SoaTriangles<const N: usize> {
    pub(crate) vertices: [[[f32; N]; 3]; 3],
    pub(crate) edge_norm: [f32; N],
}

impl<const N: usize> Default for SoaTriangles<N> {
    fn default() -> Self {
        Self {
            vertices: [[[0.0; N]; 3]; 3],
            edge_norm: [0.0; N],
        }
    }
}

impl<const N: usize> SoaTriangles<N> {
    /// Lays `triangles` (at most `N`) out in lanes `0..triangles.len()`.
    pub fn new(triangles: &[PackedTriangle]) -> Self {
        let mut soa = Self::default();
        for (lane, triangle) in triangles.iter().take(N).enumerate() {
            soa.set_lane(lane, triangle);
        }
        soa
    }

    /// Lays `triangle` out in `lane`.
    #[inline(always)]
    pub(crate) fn set_lane(&mut self, lane: usize, triangle: &PackedTriangle) {
        for (rows, vertex) in self.vertices.iter_mut().zip([triangle.v0, triangle.v1, triangle.v2]) {
            for axis in 0..3 {
                rows[axis][lane] = vertex[axis];
            }
        }
        self.edge_norm[lane] = triangle.edge_norm;
    }

    /// The vertices of the triangle in `lane`.
    #[inline(always)]
    pub fn triangle(&self, lane: usize) -> [[f32; 3]; 3] {
        let v = &self.vertices;
        [
            [v[0][0][lane], v[0][1][lane], v[0][2][lane]],
            [v[1][0][lane], v[1][1][lane], v[1][2][lane]],
            [v[2][0][lane], v[2][1][lane], v[2][2][lane]],
        ]
    }

    /// Whether the triangle in `lane` can be hit: degenerate triangles and unused
    /// lanes have all vertices zero (their tests' values are zeros, never hits).
    #[inline(always)]
    pub fn hittable(&self, lane: usize) -> bool {
        let [v0, v1, _] = &self.vertices;
        (v0[0][lane] != v1[0][lane]) | (v0[1][lane] != v1[1][lane]) | (v0[2][lane] != v1[2][lane])
    }

    /// Tests the ray of `frame` against every lane: the watertight test when
    /// `WATERTIGHT`, else the fast one, whose lanes with [`tiny`] values are redone
    /// by [`moller_trumbore`].
    #[inline(always)]
    pub fn test<const WATERTIGHT: bool>(&self, frame: &RayFrame) -> Lanes<N> {
        if WATERTIGHT {
            return watertight_lanes(self, frame);
        }
        let (lanes, redo) = self.fast_lanes(frame);
        if !redo {
            return lanes;
        }
        lanes.redo_tiny(self, fast_deciding, |lane| {
            moller_trumbore(frame, self.triangle(lane), self.edge_norm[lane])
        })
    }

    /// The fast test's lanes before any redo, and whether one of them is [`tiny`].
    #[inline(always)]
    fn fast_lanes(&self, frame: &RayFrame) -> (Lanes<N>, bool) {
        let mut lanes = Lanes::default();
        let mut redo = false;
        for lane in 0..N {
            let n = moller_trumbore_unscaled(frame, self.triangle(lane), self.edge_norm[lane]);
            redo |= tiny(fast_deciding(&n));
            lanes.set(lane, n);
        }
        (lanes, redo)
    }

    /// [`Self::test`]'s [`Lanes::candidates`]: what the brute-force walks take of a
    /// block. The fast test's lanes only say whether one of them is tiny, and such
    /// a block is worked out again out of line ([`Self::test`]): its common path
    /// keeps its values in registers, where handing them to the redo would keep
    /// them in memory.
    #[inline(always)]
    pub fn candidates<const WATERTIGHT: bool>(&self, frame: &RayFrame, cull: Cull) -> Candidates<N> {
        if WATERTIGHT {
            return watertight_lanes(self, frame).candidates(frame, cull);
        }
        let (lanes, redo) = self.fast_lanes(frame);
        if redo {
            return self.redone_candidates(frame, cull);
        }
        lanes.candidates(frame, cull)
    }

    /// [`Self::candidates`] of a block with tiny values, out of line.
    #[cold]
    #[inline(never)]
    fn redone_candidates(&self, frame: &RayFrame, cull: Cull) -> Candidates<N> {
        self.test::<false>(frame).candidates(frame, cull)
    }
}

#[cfg(test)]
mod tests {
    /// The lanes' validity test says what [`is_valid_ray`](crate::prepare::is_valid_ray)
    /// says, on every kind of bad value in every slot and on good rays.
    #[test]
    fn lane_validity_is_is_valid_ray() {
        use crate::cpu::vector::Portable;
        use crate::prepare::is_valid_ray;
        let good = [1.0, -2.0, 0.5, 0.0, 0.3, -0.4, 1.0, 9.0];
        let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MAX, -1e-45, 10.0];
        let mut rays = vec![bytemuck::cast::<[f32; 8], Ray>(good)];
        for slot in 0..8 {
            for value in bad {
                let mut values = good;
                values[slot] = value;
                rays.push(bytemuck::cast(values));
            }
        }
        for dir in [[0.0, 0.0, 0.0], [-0.0, 0.0, -0.0], [0.0, -0.0, 1e-45], [0.0, f32::NAN, 0.0]] {
            let mut values = good;
            values[4..7].copy_from_slice(&dir);
            rays.push(bytemuck::cast(values));
        }
        let mut checked = 0;
        for ray in &rays {
            let expected = is_valid_ray(ray);
            assert_eq!(is_valid_ray_on::<Portable>(ray), expected, "{ray:?}");
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::simd::has_avx2() {
                // SAFETY: the CPU has AVX2, checked just above.
                assert_eq!(unsafe { avx2_valid(ray) }, expected, "{ray:?}");
            }
            checked += usize::from(expected);
        }
        // Both kinds, many of each.
        assert!(checked > 20 && rays.len() - checked > 20, "{checked} of {} valid", rays.len());

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn avx2_valid(ray: &Ray) -> bool {
            is_valid_ray_on::<crate::cpu::vector::Avx2>(ray)
        }
    }

    use super::*;
    use crate::bvh::Bvh;
    use crate::cpu::moller_trumbore::moller_trumbore_block;
    use crate::cpu::vector::Portable;
    use crate::cpu::watertight::watertight_block;
    use crate::cpu::wide_bvh::WideBvh;
    use crate::kit::{self, Rng, fixtures};

    /// `inv_t_scale` is `1 / t_scale` bit for bit for every scale a frame can have:
    /// directions whose largest component spans every exponent (subnormal to
    /// `f32::MAX`), and the zero direction.
    #[test]
    fn inv_t_scale_is_the_scales_reciprocal() {
        let mut magnitudes = vec![0.0, f32::from_bits(1), f32::MIN_POSITIVE, f32::MAX];
        magnitudes.extend((-149..128).map(|e| 2f32.powi(e) * 1.5));
        for m in magnitudes {
            for dir in [glam::Vec3::new(m, m * 0.25, -m), glam::Vec3::new(0.0, -m, 0.0)] {
                let frame = RayFrame::new(&Ray::new(glam::Vec3::ZERO, dir));
                assert_eq!(frame.inv_t_scale().to_bits(), (1.0 / frame.t_scale).to_bits(), "{dir:?}");
            }
        }
    }

    /// A block's candidates: lanes, and each one's `t`, `u`, `v` bits.
    fn listed(c: Option<Candidates<8>>) -> (u32, Vec<[u32; 3]>) {
        let Some(c) = c else {
            return (0, Vec::new());
        };
        let values = lanes(c.mask).map(|l| [c.t[l], c.u[l], c.v[l]].map(f32::to_bits)).collect();
        (c.mask, values)
    }

    /// Asserts that the block tests on `L`'s lanes find the block kernel's
    /// candidates, bit for bit, in both modes and every culling; returns how many
    /// (block, ray, culling) triples had candidates and how many (block, ray) pairs
    /// had an exactly-zero watertight edge function.
    fn check_unit<L: Lanes8>(blocks: &[(SoaTriangles<8>, [f32; 8])], rays: &[Ray]) -> (usize, usize) {
        let (mut hits, mut exact) = (0, 0);
        for ray in rays {
            let frame = RayFrame::new(ray);
            for (block, margins) in blocks {
                let watertight = block.test::<true>(&frame);
                exact += (0..8).any(|l| {
                    let n = watertight.get(l);
                    n.det_bound != 0.0 && (n.big_u == 0.0 || n.big_v == 0.0 || n.big_w == 0.0)
                }) as usize;
                let fast = block.test::<false>(&frame);
                let on_lanes = [
                    (watertight, watertight_block::<L>(block, &frame)),
                    (fast, moller_trumbore_block::<L>(block, &frame)),
                ];
                for (kernel, test) in on_lanes {
                    for cull in [Cull::None, Cull::Back, Cull::Front] {
                        let expected = kernel.candidates(&frame, cull).placed(block, ray, &frame);
                        let got = listed(test.accepted(block, margins, ray, &frame, cull));
                        let expected = listed(Some(expected));
                        assert_eq!(got, expected, "{ray:?} cull {cull}");
                        hits += (expected.0 != 0) as usize;
                    }
                }
            }
        }
        (hits, exact)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn check_avx2(blocks: &[(SoaTriangles<8>, [f32; 8])], rays: &[Ray]) -> (usize, usize) {
        check_unit::<crate::cpu::vector::Avx2>(blocks, rays)
    }

    /// The wide BVH's leaf tests on vector lanes find the block kernel's
    /// candidates bit for bit, in both modes and every culling, on both vector
    /// units: on random, camera and adversarial rays (aimed at vertices and edges,
    /// where watertight edge functions are exactly zero) and a zero direction, with
    /// degenerate triangles among the blocks.
    #[test]
    fn leaf_tests_on_lanes_find_the_block_kernels_candidates() {
        let mut rng = Rng::new(53);
        let scene = fixtures::with_degenerates(&fixtures::builtin_scene(3_000), &mut rng, 40);
        let mut rays = kit::rays(fixtures::adversarial_rays(&scene, &mut rng, 600));
        let mesh = kit::mesh(scene);
        let bounds = mesh.bounds().expect("a finite mesh");
        rays.extend(kit::rays(fixtures::camera_rays(bounds, 16, 12)));
        rays.extend(kit::rays(fixtures::random_rays(200, &mut rng, bounds)));
        rays.push(Ray::new(glam::Vec3::ZERO, glam::Vec3::ZERO));
        let wide = WideBvh::from_bvh(&Bvh::build(&mesh));
        // Each block with the margins its tree keeps beside it.
        let blocks: Vec<_> = wide.blocks.iter().zip(&wide.lookups).map(|(block, lookup)| (*block, lookup.margins)).collect();
        let (hits, exact) = check_unit::<Portable>(&blocks, &rays);
        assert!(hits > rays.len(), "{hits} candidate blocks");
        assert!(exact > 100, "{exact} blocks with an exactly-zero edge function");
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::simd::has_avx2() {
            // SAFETY: AVX2 and FMA are present (checked just above).
            assert_eq!(unsafe { check_avx2(&blocks, &rays) }, (hits, exact));
        }
    }
}
