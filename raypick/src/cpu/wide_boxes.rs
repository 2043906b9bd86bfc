//! Rays against the eight boxes of a wide node ([`ExactNode`]): the planes loaded
//! into vector registers ([`Planes`]), the slab test of a lone ray against all
//! eight at once ([`Slabs::enter`]), and of the sixteen rays of a packet against
//! one box at a time, the rays across the lanes ([`PacketSlabs::enter_child`]),
//! each lane with a lone ray's operations.
//!
//! Two slab tests: the plain one is the arithmetic of every other traversal, lane
//! by lane (plane minus origin times `1 / dir`, the largest entry and smallest exit
//! with `tmin` and the bound, and the margin of
//! [`overlaps`](super::intersect::overlaps)); the folded one, used for every ray
//! whose distances are far from overflow, is one multiply-add per plane, in the
//! caller's units, with a slack that makes it enter every box the plain one
//! enters. So a box that holds a
//! triangle's padded box is entered no later and left no earlier than that box, on
//! every vector unit ([`Lanes8`]).

use super::intersect::{
    BoxFrame, finite_lanes, overlaps_lanes, padded_above, padded_above_lanes, padded_below,
    padded_below_lanes, ray_lanes, slab_reciprocal_lanes,
};
use super::vector::Lanes8;
use super::wide_bvh::{self, ExactNode, WIDTH, WideBvh};
use crate::types::Ray;

/// A node's eight boxes, ready for slab tests: per axis, each child's near and far
/// plane for one ray's direction ([`PlaneRows`]). Unused slots hold an inverted
/// box, which no ray enters; [`ExactNode::occupied`] masks them as well.
#[derive(Clone, Copy)]
pub(super) struct Planes<L: Lanes8> {
    near: [L::V; 3],
    far: [L::V; 3],
}

impl<L: Lanes8> Planes<L> {
    /// The boxes of `node`, oriented by `rows`. The rows are loaded at their
    /// offsets, so a visit makes no choice on the ray's signs.
    #[inline(always)]
    pub(super) fn of(node: &ExactNode, rows: &PlaneRows) -> Self {
        let planes = node.boxes.rows();
        Self {
            near: load3::<L>(&rows.near, planes),
            far: load3::<L>(&rows.far, planes),
        }
    }
}

/// The plane rows `rows` of `planes`, loaded. A function rather than a closure,
/// as are the other steps on vector lanes here: a closure may be compiled apart
/// from the dispatched caller, without its vector unit.
#[inline(always)]
fn load3<L: Lanes8>(rows: &[Row; 3], planes: &wide_bvh::Rows) -> [L::V; 3] {
    [
        L::load(rows[0].of_planes(planes)),
        L::load(rows[1].of_planes(planes)),
        L::load(rows[2].of_planes(planes)),
    ]
}

/// Which of a node's six plane rows ([`Rows`](super::wide_bvh::Rows): minima, then
/// maxima) a ray meets first and last on each axis: the minima where its direction
/// is positive, the maxima where it is negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PlaneRows {
    near: [Row; 3],
    far: [Row; 3],
}

/// Bytes of one plane row.
const ROW_BYTES: u8 = size_of::<[f32; WIDTH]>() as u8;

/// One of a node's six plane rows, whose value is its offset in bytes in the
/// rows ([`wide_bvh::Rows`]). An enum rather than an index, so that a row kept
/// in memory is known to be in range when loaded, with no check at every visit;
/// and an offset rather than an index, so that a visit adds it to the node's
/// address as it is, with no multiply on the way to the loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Row {
    MinX = 0,
    MinY = ROW_BYTES,
    MinZ = 2 * ROW_BYTES,
    MaxX = 3 * ROW_BYTES,
    MaxY = 4 * ROW_BYTES,
    MaxZ = 5 * ROW_BYTES,
}

impl Row {
    /// This row of a node's `planes`.
    #[inline(always)]
    fn of_planes(self, planes: &wide_bvh::Rows) -> &[f32; WIDTH] {
        const _: () = assert!(Row::MaxZ as usize + size_of::<[f32; WIDTH]>() == size_of::<wide_bvh::Rows>());
        // SAFETY: every row's value is the offset of a whole row of `Rows` (the
        // last one ends where `Rows` ends, checked above), and `Rows` is an array
        // of rows with no padding, so the pointer is in bounds and aligned for
        // `[f32; WIDTH]`.
        unsafe { &*std::ptr::from_ref(planes).cast::<u8>().add(self as usize).cast::<[f32; WIDTH]>() }
    }

    /// The row of the minima (`max` false) or maxima on `axis` (0, 1 or 2).
    const fn of(axis: usize, max: bool) -> Self {
        match (axis, max) {
            (0, false) => Self::MinX,
            (1, false) => Self::MinY,
            (_, false) => Self::MinZ,
            (0, true) => Self::MaxX,
            (1, true) => Self::MaxY,
            (_, true) => Self::MaxZ,
        }
    }
}

impl PlaneRows {
    /// The rows for each of the eight octants of a direction, by the octant's
    /// index (bit `a` set where the component on axis `a` is negative,
    /// [`PlaneRows::for_negative_axes`]): a table, so that a ray's rows are one
    /// load rather than a choice per row.
    const FOR_OCTANT: [Self; 8] = {
        let mut table = [Self::for_octant(0); 8];
        let mut octant = 1;
        while octant < 8 {
            table[octant] = Self::for_octant(octant);
            octant += 1;
        }
        table
    };

    /// The rows for a direction whose component on axis `a` is negative where bit
    /// `a` of `octant` is set.
    const fn for_octant(octant: usize) -> Self {
        let [x, y, z] = [octant & 1 == 1, octant >> 1 & 1 == 1, octant >> 2 & 1 == 1];
        Self {
            near: [Row::of(0, x), Row::of(1, y), Row::of(2, z)],
            far: [Row::of(0, !x), Row::of(1, !y), Row::of(2, !z)],
        }
    }

    /// The rows for a direction whose components are negative where `negative`
    /// says.
    #[inline(always)]
    fn for_signs(negative: [bool; 3]) -> Self {
        Self::for_negative_axes(u32::from(negative[0]) | u32::from(negative[1]) << 1 | u32::from(negative[2]) << 2)
    }

    /// The rows for a direction whose component on axis `a` is negative where
    /// bit `a` of `negative` is set (its octant's index; higher bits ignored).
    #[inline(always)]
    fn for_negative_axes(negative: u32) -> Self {
        Self::FOR_OCTANT[(negative & 0b111) as usize]
    }
}

/// A ray's three axes on the lanes of one vector, in lanes 0 to 2 (the others
/// carry values no result reads), for the work a walk does once per ray
/// ([`Slabs::for_ray`]).
struct AxisLanes;

impl AxisLanes {
    /// Lanes 0 to 2 of the axes.
    const AXES: u32 = 0b111;
    /// The lanes that move a ray's values (`ox oy oz tmin dx dy dz tmax`,
    /// [`ray_lanes`]) so that its direction is in the axes' lanes.
    const DIRECTION: [u32; 8] = [4, 5, 6, 7, 0, 1, 2, 3];
    /// The lanes that move each axis's value to the previous axis's lane
    /// (cyclically: x takes y's, y takes z's, z takes x's).
    const NEXT_AXIS: [u32; 8] = [1, 2, 0, 3, 4, 5, 6, 7];
    /// The lanes that move each axis's value two axes back (x takes z's).
    const AXIS_AFTER_NEXT: [u32; 8] = [2, 0, 1, 3, 4, 5, 6, 7];

    /// Whether every axis's bit of a lane mask is set.
    #[inline(always)]
    fn all(lanes: u32) -> bool {
        lanes & Self::AXES == Self::AXES
    }

    /// The axes' values.
    #[inline(always)]
    fn axes<L: Lanes8>(lanes: L::V) -> [f32; 3] {
        let [x, y, z, ..] = L::store(lanes);
        [x, y, z]
    }
}

/// Each of three values in every lane; written out, as [`each_axis`] explains.
#[inline(always)]
fn splat3<L: Lanes8>([x, y, z]: [f32; 3]) -> [L::V; 3] {
    [L::splat(x), L::splat(y), L::splat(z)]
}

/// `[f(0), f(1), f(2)]`, written out: closures handed to library functions (as
/// `array::map` takes them) may be compiled apart from the caller, without its
/// vector unit, and vector operations there become calls.
#[inline(always)]
fn each_axis<T>(f: impl Fn(usize) -> T) -> [T; 3] {
    [f(0), f(1), f(2)]
}

/// Relative slack of the folded slab distances ([`Slabs::enter`]), on the bound
/// `(reach + |origin|) · |1 / dir|` of every distance of the ray: above
/// [`BOX_MARGIN`](super::intersect::BOX_MARGIN) plus the rounding of both tests (eleven units of 2^-24 at most).
const FOLDED_SLACK: f32 = 1.25e-5;

/// Largest distance bound, in frame units, for which the folded test is used:
/// far from overflow, so that every distance and slack either test computes is
/// finite.
const FOLDED_LIMIT: f32 = 1e30;

/// Largest direction scale ([`BoxFrame::t_scale`], `2^16`) for which the folded
/// test is used: the plain test's rounding below f32's normal range, a few
/// `2^-149` in frame units, is then a few `2^-133` in the caller's, far under the
/// folded slack's `MIN_POSITIVE` (`2^-126`).
const FOLDED_MAX_SCALE: f32 = 65_536.0;

/// Whether a ray takes the folded test: its distances are far from overflow in
/// both units (`bounds`, in the caller's, times `to_frame` bound them in the
/// frame's), its scale is at most [`FOLDED_MAX_SCALE`], and no component of its
/// direction (`dir`) became zero when scaled (`scaled`), so that both tests
/// treat the same components as parallel.
#[cfg(test)]
fn folds(bounds: [f32; 3], to_frame: f32, t_scale: f32, dir: [f32; 3], scaled: [f32; 3]) -> bool {
    let axis = |a: usize| (bounds[a] * to_frame <= FOLDED_LIMIT) & ((dir[a] == 0.0) == (scaled[a] == 0.0));
    axis(0) & axis(1) & axis(2) & (t_scale <= FOLDED_MAX_SCALE)
}

/// Which slab test a ray takes ([`Slabs::enter`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlabTest {
    /// The plain test: for rays whose distances could overflow ([`folds`]).
    Plain,
    /// The folded test, its entries and exits compared as numbers: for rays that
    /// look back from `tmin`, below `+0.0`.
    Folded,
    /// The folded test, its entries and exits compared by their bits
    /// ([`Lanes8::max_bits`]): for rays that look forward from `tmin`, whose padded
    /// `tmin` is `+0.0` or above. The same lanes entered at the same distances, bit
    /// for bit, in integer steps shorter than the numbers' ([`clip`]).
    Forward,
}

impl SlabTest {
    /// The folded test for a ray whose padded `tmin` is `padded_tmin`: by bits where
    /// that is a number whose sign bit is clear (not NaN, not `-0.0`).
    #[inline(always)]
    fn folded_for(padded_tmin: f32) -> Self {
        if padded_tmin.is_sign_positive() && padded_tmin >= 0.0 { Self::Forward } else { Self::Folded }
    }

    /// [`clip`] by bits for [`SlabTest::Forward`], by the numbers otherwise: the
    /// one place a folded test's choice becomes code.
    #[inline(always)]
    fn clip<L: Lanes8>(self, near: [L::V; 4], far: [L::V; 4]) -> (u32, L::V) {
        if self == Self::Forward { clip::<L, true>(near, far) } else { clip::<L, false>(near, far) }
    }
}

/// The entered lanes and their entries, given each lane's padded entries `near`
/// (into the three slabs, and the padded `tmin`) and exits `far` (out of the
/// three slabs, and the padded limit): the largest entry, the smallest exit and
/// whether the one is no later than the other.
///
/// `BITS` takes them by the numbers' bits ([`Lanes8::max_bits`], `min_bits`,
/// `le_bits`), for [`SlabTest::Forward`] rays, and gives the numbers' answer bit
/// for bit. Why: no entry or exit of a slab is NaN or `-0.0` (each is a
/// multiply-add onto an offset that is neither `+0.0` nor `-0.0`, since the slack
/// is at least `MIN_POSITIVE`; the ray's range keeps them finite, [`folds`]), nor
/// is the padded limit (`x + |x|·m` is `+0.0` for `x = -0.0`), and the padded
/// `tmin` is a number with its sign bit clear. So the largest entry is at least
/// the padded `tmin`, and the same by bits; where every exit has its sign bit
/// clear, the smallest is the same by bits too, and where one is negative, both
/// ways give a negative exit, before the entry either way.
#[inline(always)]
fn clip<L: Lanes8, const BITS: bool>([nx, ny, nz, tmin]: [L::V; 4], [fx, fy, fz, limit]: [L::V; 4]) -> (u32, L::V) {
    if BITS {
        let near = L::max_bits(L::max_bits(nx, ny), L::max_bits(nz, tmin));
        let far = L::min_bits(L::min_bits(fx, fy), L::min_bits(fz, limit));
        (L::le_bits(near, far), near)
    } else {
        let near = L::max(L::max(nx, ny), L::max(nz, tmin));
        let far = L::min(L::min(fx, fy), L::min(fz, limit));
        (L::le(near, far), near)
    }
}

/// One ray's folded-test factors (`1 / dir`) and terms (the offsets) in every
/// lane, per axis: the same at every node, so a lone ray works them out once
/// ([`Slabs::terms`]) and tests each plane with one multiply-add (a packet
/// keeps them as rows for all its rays, [`PacketSlabs`]).
#[derive(Clone, Copy)]
pub(super) struct RayTerms<L: Lanes8> {
    inv: [L::V; 3],
    near: [L::V; 3],
    far: [L::V; 3],
}

/// How far a ray's box tests reach ([`Slabs::limit`]): in frame units for the
/// plain test, and padded in the caller's units, in every lane, for the folded
/// one.
#[derive(Clone, Copy)]
pub(super) struct Limit<L: Lanes8> {
    plain: f32,
    padded: L::V,
}

/// One ray, ready for slab tests against wide nodes.
///
/// Two slab tests: the plain one in units of the scaled direction, as every
/// other traversal ([`BoxFrame`]); the folded one in the caller's units, from
/// the ray's own direction, so that a walk's first box test does not wait on
/// the scale (the rays it takes have the same distances in both units, up to the
/// rounding its slack covers).
#[derive(Clone, Copy)]
pub(super) struct Slabs<L: Lanes8> {
    /// The ray origin.
    origin: [f32; 3],
    /// `1 / dir` of the scaled direction: the plain test's factors.
    inv_dir: [f32; 3],
    /// `1 / dir` of the caller's direction ([`BIG`](super::intersect::BIG) for a
    /// zero component): the folded test's factors.
    folded_inv: [f32; 3],
    /// `-origin / dir` (caller's units), less the slack (for near planes) and plus
    /// it (for far ones): the folded test's offsets.
    near_offset: [f32; 3],
    far_offset: [f32; 3],
    /// The plane rows the folded test meets first and last: on the axes where the
    /// caller's direction is negative it enters at the box maximum (-0.0, whose
    /// `1 / dir` is the positive `BIG`, counts as positive).
    rows: PlaneRows,
    /// `tmin` in units of the scaled direction.
    tmin: f32,
    /// `tmin` in the caller's units, less its margin: the folded test's earliest
    /// entry, in every lane.
    padded_tmin: L::V,
    /// The test the ray takes: a folded one where it applies ([`folds`]).
    test: SlabTest,
    /// Frame units to the caller's (`t_scale`) and back.
    t_scale: f32,
    to_frame: f32,
    tmax: f32,
}

impl<L: Lanes8> Slabs<L> {
    /// The slabs of `ray`, whose frame is `frame`, for the nodes of `wide`, axis
    /// by axis: the scalar steps that [`Slabs::for_ray`] takes on vector lanes,
    /// which its tests hold it to.
    #[cfg(test)]
    pub(super) fn new(wide: &WideBvh, ray: &Ray, frame: &BoxFrame) -> Self {
        // The plain test's distances are in units of the scaled direction, as in
        // `bvh_traverse`; the folded test's in the caller's.
        use super::intersect::{reciprocal_scale, slab_reciprocal};
        let to_frame = reciprocal_scale(frame.t_scale);
        let dir = ray.dir.to_array();
        let folded_inv = dir.map(slab_reciprocal);
        let reach = |axis: usize| (wide.reach[axis] + ray.origin[axis].abs()) * folded_inv[axis].abs();
        let bounds = each_axis(reach);
        // Underflow loses at most a few 2^-149 per operation: MIN_POSITIVE covers
        // them.
        let slack = each_axis(|axis| FOLDED_SLACK * bounds[axis] + f32::MIN_POSITIVE);
        let start = each_axis(|axis| -(ray.origin[axis] * folded_inv[axis]));
        let padded_tmin = padded_below(ray.tmin);
        let test = if folds(bounds, to_frame, frame.t_scale, dir, frame.dir) {
            SlabTest::folded_for(padded_tmin)
        } else {
            SlabTest::Plain
        };
        Self {
            origin: ray.origin.into(),
            inv_dir: frame.inv_dir,
            folded_inv,
            near_offset: each_axis(|axis| start[axis] - slack[axis]),
            far_offset: each_axis(|axis| start[axis] + slack[axis]),
            rows: PlaneRows::for_signs(dir.map(|d| d < 0.0)),
            tmin: ray.tmin * to_frame,
            padded_tmin: L::splat(padded_tmin),
            test,
            t_scale: frame.t_scale,
            to_frame,
            tmax: ray.tmax,
        }
    }

    /// [`BoxFrame::new`] and [`Slabs::new`] of `ray` for the nodes of `wide` at
    /// once, worked out on the lanes of one vector, an axis in each of lanes 0 to
    /// 2 ([`AxisLanes`]): every value the scalar steps give, bit for bit (the
    /// same operations on each axis), in a third of their instructions and fewer
    /// dependent steps before a walk's first box test.
    #[inline(always)]
    pub(super) fn for_ray(wide: &WideBvh, ray: &Ray) -> (BoxFrame, Self) {
        let values = ray_lanes::<L>(ray);
        let origin = values;
        let dir = L::permute(values, L::load_u32(&AxisLanes::DIRECTION));
        // As `ray_scale`: the largest magnitude by its bits, in every axis's lane.
        let magnitude = L::abs(dir);
        let next = L::permute(magnitude, L::load_u32(&AxisLanes::NEXT_AXIS));
        let after_next = L::permute(magnitude, L::load_u32(&AxisLanes::AXIS_AFTER_NEXT));
        let t_scale = L::direction_scale(L::max_bits(L::max_bits(magnitude, next), after_next));
        let scaled = L::mul(dir, t_scale);
        let (inv_dir, scaled_zeros) = slab_reciprocal_lanes::<L>(scaled);
        let to_frame = L::reciprocal_scale(t_scale);
        let (folded_inv, dir_zeros) = slab_reciprocal_lanes::<L>(dir);
        let [rx, ry, rz] = wide.reach;
        let reach = L::load(&[rx, ry, rz, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let bounds = L::mul(L::add(reach, L::abs(origin)), L::abs(folded_inv));
        let slack = L::add(L::mul(L::splat(FOLDED_SLACK), bounds), L::splat(f32::MIN_POSITIVE));
        let start = L::mul(L::mul(origin, folded_inv), L::splat(-1.0));
        // As `folds`, an axis per lane.
        let near_limit = L::le(L::mul(bounds, to_frame), L::splat(FOLDED_LIMIT));
        let zeros_kept = !(dir_zeros ^ scaled_zeros);
        let (t_scale, to_frame) = (L::store(t_scale)[0], L::store(to_frame)[0]);
        let padded_tmin = padded_below(ray.tmin);
        let test = if AxisLanes::all(near_limit & zeros_kept) & (t_scale <= FOLDED_MAX_SCALE) {
            SlabTest::folded_for(padded_tmin)
        } else {
            SlabTest::Plain
        };
        let boxes = BoxFrame {
            dir: AxisLanes::axes::<L>(scaled),
            t_scale,
            inv_dir: AxisLanes::axes::<L>(inv_dir),
        };
        let slabs = Self {
            origin: ray.origin.into(),
            inv_dir: boxes.inv_dir,
            folded_inv: AxisLanes::axes::<L>(folded_inv),
            near_offset: AxisLanes::axes::<L>(L::sub(start, slack)),
            far_offset: AxisLanes::axes::<L>(L::add(start, slack)),
            rows: PlaneRows::for_negative_axes(L::lt(dir, L::splat(0.0))),
            tmin: ray.tmin * to_frame,
            padded_tmin: L::splat(padded_tmin),
            test,
            t_scale,
            to_frame,
            tmax: ray.tmax,
        };
        (boxes, slabs)
    }

    /// This ray's [`RayTerms`].
    #[inline(always)]
    pub(super) fn terms(&self) -> RayTerms<L> {
        RayTerms {
            inv: splat3::<L>(self.folded_inv),
            near: splat3::<L>(self.near_offset),
            far: splat3::<L>(self.far_offset),
        }
    }

    /// The limit of the box tests for a collector whose bound is `bound` (in the
    /// caller's units): the smaller of it and `tmax`. A walk makes it when the
    /// bound changes, not at every node.
    #[inline(always)]
    pub(super) fn limit(&self, bound: f32) -> Limit<L> {
        let limit = if bound < self.tmax { bound } else { self.tmax };
        Limit {
            plain: limit * self.to_frame,
            padded: L::splat(padded_above(limit)),
        }
    }

    /// The test this ray takes ([`folds`]).
    #[inline(always)]
    pub(super) fn test(&self) -> SlabTest {
        self.test
    }

    /// The children among `node`'s occupied ones that the ray enters within
    /// `limit` ([`Slabs::limit`]), as a lane mask, and every lane's entry distance
    /// (in the caller's units); `test` is this ray's ([`Slabs::test`]), `terms`
    /// its [`Slabs::terms`]. A walk that passes the test as a constant is compiled
    /// for that test alone, with no choice at every node.
    ///
    /// Every child that the plain test ([`Slabs::enter_plain`], the arithmetic of
    /// every other traversal) enters is entered, so the answers are the same; the
    /// folded test ([`Slabs::enter_folded`]) takes fewer, shorter dependent steps
    /// and is used whenever the ray's distances are far from overflow ([`folds`]),
    /// by bits for rays that look forward ([`SlabTest::Forward`]).
    #[inline(always)]
    pub(super) fn enter(&self, test: SlabTest, node: &ExactNode, limit: &Limit<L>, terms: &RayTerms<L>) -> (u32, L::V) {
        debug_assert_eq!(test, self.test);
        let planes = Planes::of(node, &self.rows);
        let (entered, near) = match test {
            folded @ (SlabTest::Forward | SlabTest::Folded) => self.enter_folded(folded, &planes, limit.padded, terms),
            SlabTest::Plain => {
                let (entered, near) = self.enter_plain(&planes, limit.plain);
                (entered, L::mul(near, L::splat(self.t_scale)))
            }
        };
        (entered & u32::from(node.occupied), near)
    }

    /// The plain distances to the planes of every lane on `axis`, nearer first:
    /// plane minus origin times `1 / dir` of the scaled direction, for both
    /// planes, the smaller and the larger. The planes come oriented for the
    /// caller's direction, whose signs the scaled one keeps but where a component
    /// became zero (then `1 / dir` is `BIG` and the order may be the other);
    /// rounding is monotone, so either way these are the distances to the
    /// planes the scaled direction meets first and last.
    #[inline(always)]
    fn plain_slab(&self, planes: &Planes<L>, axis: usize) -> (L::V, L::V) {
        let origin = L::splat(self.origin[axis]);
        let inv = L::splat(self.inv_dir[axis]);
        let first = L::mul(L::sub(planes.near[axis], origin), inv);
        let last = L::mul(L::sub(planes.far[axis], origin), inv);
        (L::min(first, last), L::max(first, last))
    }

    /// The folded, padded distances to the near and far planes of every lane on
    /// `axis` ([`Slabs::enter_folded`]): one multiply-add each.
    #[inline(always)]
    fn folded_slab(&self, planes: &Planes<L>, axis: usize, terms: &RayTerms<L>) -> (L::V, L::V) {
        let inv = terms.inv[axis];
        (
            L::mul_add(planes.near[axis], inv, terms.near[axis]),
            L::mul_add(planes.far[axis], inv, terms.far[axis]),
        )
    }

    /// The plain slab test up to `limit` (frame units): plane minus origin times
    /// `1 / dir` of the scaled direction, the largest entry and the smallest exit,
    /// padded by the relative margin of [`overlaps`](super::intersect::overlaps).
    /// Entered lanes (among the occupied ones: an unused slot's inverted box may
    /// pass) and their entries (frame units).
    #[inline(always)]
    fn enter_plain(&self, planes: &Planes<L>, limit: f32) -> (u32, L::V) {
        let (nx, fx) = self.plain_slab(planes, 0);
        let (ny, fy) = self.plain_slab(planes, 1);
        let (nz, fz) = self.plain_slab(planes, 2);
        let near = L::max(L::max(nx, ny), L::max(nz, L::splat(self.tmin)));
        let far = L::min(L::min(fx, fy), L::min(fz, L::splat(limit)));
        (overlaps_lanes::<L>(near, far), near)
    }

    /// The folded slab test up to `padded_limit` (the limit in the caller's units,
    /// padded, in every lane): the distance in one multiply-add per plane,
    /// `plane · (1 / dir) + (-origin / dir ∓ slack)`, already padded, from the
    /// caller's direction. Entered lanes and their (padded) entries, in the
    /// caller's units; by bits where `test` is [`SlabTest::Forward`] ([`clip`]), the
    /// same either way.
    ///
    /// Why it enters whatever [`Slabs::enter_plain`] enters: the plain test pads
    /// its largest entry `n` to `n - |n|·m` and its smallest exit `f` to `f + |f|·m`
    /// (`m` = [`BOX_MARGIN`](super::intersect::BOX_MARGIN)). Both paddings are
    /// monotone, so padding each axis's distance before the largest entry and
    /// smallest exit are taken gives the same interval. Scaled to the caller's
    /// units by `t_scale`, a power of two, its values and their rounding scale
    /// with it wherever they are normal numbers. Every distance of the ray, and
    /// each term of it, is at most `B = (reach + |origin|) · |1 / dir|` in size in
    /// the units it is computed in ([`WideBvh::reach`] bounds every plane). So the
    /// plain distance pads by at most `m·B` and rounds (subtraction, product,
    /// padding) by at most `5·2^-24·B`, and the folded one (the offset, the
    /// multiply-add, fused or not) by at most `5·2^-24·B` plus a trace of the
    /// slack; below the normal range each test rounds by a few `2^-149` more in
    /// its own units, which for the plain test's is a few `2^-133` at most in the
    /// caller's ([`FOLDED_MAX_SCALE`]). The slack, [`FOLDED_SLACK`]`·B +
    /// MIN_POSITIVE`, exceeds their sum, so every folded entry is no later and
    /// every folded exit no earlier than the plain test's padded one. Both tests
    /// take the same components as parallel (with
    /// [`BIG`](super::intersect::BIG) for `1 / 0`; [`folds`]). The padded `tmin`
    /// and limit are padded as the plain test pads them.
    #[inline(always)]
    fn enter_folded(&self, test: SlabTest, planes: &Planes<L>, padded_limit: L::V, terms: &RayTerms<L>) -> (u32, L::V) {
        let (nx, fx) = self.folded_slab(planes, 0, terms);
        let (ny, fy) = self.folded_slab(planes, 1, terms);
        let (nz, fz) = self.folded_slab(planes, 2, terms);
        test.clip::<L>([nx, ny, nz, self.padded_tmin], [fx, fy, fz, padded_limit])
    }
}

/// Rays of a packet tested together: sixteen rays across the lanes of two vectors.
pub(super) const PACKET_RAYS: usize = 16;

/// A value of each ray of a packet, rays `0..8` in the first vector and `8..16` in
/// the second.
pub(super) type Rows<L> = [<L as Lanes8>::V; 2];

/// The [`Slabs`] of a packet's rays across vector lanes, to test one child box
/// against all of them at once ([`PacketSlabs::enter_child`]): each lane does the
/// operations of [`Slabs::enter`]'s folded test for its ray, in the same order, so
/// it enters the same boxes at the same distances, bit for bit. Only for rays that
/// all take the folded test and whose directions share the sign of every
/// component, so that one choice of near and far planes serves them all.
pub(super) struct PacketSlabs<L: Lanes8> {
    /// `1 / dir` and the offsets: the folded test's terms.
    terms: SlabTerms<L>,
    /// `tmin`, less its margin.
    padded_tmin: Rows<L>,
    /// `tmax`.
    tmax: Rows<L>,
    /// The plane rows every ray meets first and last: the signs of their direction
    /// components are the same.
    rows: PlaneRows,
    /// [`SlabTest::Forward`] where every ray takes it, else [`SlabTest::Folded`].
    test: SlabTest,
    /// The terms' bounds across the rays, for [`PacketSlabs::maybe_entered`].
    span: Span<L>,
    /// Each ray's box frame ([`PacketSlabs::box_frame`]).
    frames: BoxFrames,
}

/// The values of each packet ray's [`BoxFrame`], a row per field, worked out on
/// the lanes with [`BoxFrame::new`]'s operations (so the same bits): a ray's
/// triangle frame at its first leaf starts from them instead of a division per
/// axis of its own.
struct BoxFrames {
    dir: [[f32; PACKET_RAYS]; 3],
    t_scale: [f32; PACKET_RAYS],
    inv_dir: [[f32; PACKET_RAYS]; 3],
}

/// Bounds across a packet's rays of their folded terms, each in every lane: the
/// least and greatest `1 / dir` and the least near and greatest far offset per
/// axis, and the least padded `tmin`.
struct Span<L: Lanes8> {
    inv: [(L::V, L::V); 3],
    near: [L::V; 3],
    far: [L::V; 3],
    tmin: L::V,
}

impl<L: Lanes8> Span<L> {
    /// The bounds of `terms` and `padded_tmin` across the rays.
    #[inline(always)]
    fn of(terms: &SlabTerms<L>, padded_tmin: &Rows<L>) -> Self {
        let (inv, near, far) = (&terms.inv, &terms.near, &terms.far);
        Self {
            inv: [
                (least::<L>(&inv[0]), greatest::<L>(&inv[0])),
                (least::<L>(&inv[1]), greatest::<L>(&inv[1])),
                (least::<L>(&inv[2]), greatest::<L>(&inv[2])),
            ],
            near: [least::<L>(&near[0]), least::<L>(&near[1]), least::<L>(&near[2])],
            far: [greatest::<L>(&far[0]), greatest::<L>(&far[1]), greatest::<L>(&far[2])],
            tmin: least::<L>(padded_tmin),
        }
    }

    /// Bounds on `axis`, for each child of the node of `planes`, of every ray's
    /// folded distance to its near plane (none less) and far plane (none more):
    /// a folded distance is one multiply-add, `plane · inv + offset`, whose
    /// rounded value never falls as the offset grows, and never falls (a plane at
    /// or above zero) or never rises (below zero) as `inv` grows, so its value
    /// for any ray lies between its values at the bounds, whichever the plane's
    /// sign.
    #[inline(always)]
    fn slab(&self, planes: &PacketPlanes<'_>, axis: usize) -> (L::V, L::V) {
        let (near, far) = (L::load(planes.near[axis]), L::load(planes.far[axis]));
        let (lo, hi) = self.inv[axis];
        (
            L::min(L::mul_add(near, lo, self.near[axis]), L::mul_add(near, hi, self.near[axis])),
            L::max(L::mul_add(far, lo, self.far[axis]), L::mul_add(far, hi, self.far[axis])),
        )
    }
}

/// The least value of `rows` across the rays, in every lane.
#[inline(always)]
fn least<L: Lanes8>(rows: &Rows<L>) -> L::V {
    L::splat(L::min_lane(L::min(rows[0], rows[1])))
}

/// The greatest value of `rows` across the rays, in every lane.
#[inline(always)]
fn greatest<L: Lanes8>(rows: &Rows<L>) -> L::V {
    L::splat(max_lane::<L>(L::max(rows[0], rows[1])))
}

/// The greatest lane of `a`: [`Lanes8::min_lane`] of its negation (exact).
#[inline(always)]
fn max_lane<L: Lanes8>(a: L::V) -> f32 {
    -L::min_lane(L::mul(a, L::splat(-1.0)))
}

/// Each field of `rays` as two vectors of eight, in the ray's memory order
/// (`ox oy oz tmin dx dy dz tmax`): each ray loaded whole, then eight rays at a
/// time transposed on the lanes, rather than sixteen scalars stored and loaded
/// again per field.
#[inline(always)]
fn ray_rows<L: Lanes8>(rays: &[Ray; PACKET_RAYS]) -> [Rows<L>; 8] {
    let mut halves = [[L::splat(0.0); 8]; 2];
    for (h, half) in halves.iter_mut().enumerate() {
        let mut rows = [L::splat(0.0); 8];
        for (r, row) in rows.iter_mut().enumerate() {
            *row = ray_lanes::<L>(&rays[WIDTH * h + r]);
        }
        *half = L::transpose(rows);
    }
    let mut fields = [[L::splat(0.0); 2]; 8];
    for (f, field) in fields.iter_mut().enumerate() {
        *field = [halves[0][f], halves[1][f]];
    }
    fields
}

/// Whether every ray of a packet, given by its rows, is valid
/// ([`is_valid_ray`](crate::prepare::is_valid_ray): origin and direction finite,
/// the direction not zero, `tmin <= tmax`) and starts at `first` (as `==`
/// compares them: `-0.0` and `0.0` are one origin).
#[inline(always)]
fn valid_from_one_origin<L: Lanes8>(
    first: [f32; 3],
    origin: &[Rows<L>; 3],
    dir: &[Rows<L>; 3],
    tmin: &Rows<L>,
    tmax: &Rows<L>,
) -> bool {
    let zero = L::splat(0.0);
    let mut valid = true;
    for h in 0..2 {
        let (mut finite, mut zero_dir, mut same) = (0xff, 0xff, 0xff);
        for axis in 0..3 {
            finite &= finite_lanes::<L>(origin[axis][h]) & finite_lanes::<L>(dir[axis][h]);
            zero_dir &= L::eq(dir[axis][h], zero);
            same &= L::eq(origin[axis][h], L::splat(first[axis]));
        }
        valid &= (finite == 0xff) & (zero_dir == 0) & (same == 0xff) & (L::le(tmin[h], tmax[h]) == 0xff);
    }
    valid
}

/// `values` as two vectors of eight.
#[inline(always)]
pub(super) fn load_rows<L: Lanes8>(values: &[f32; PACKET_RAYS]) -> Rows<L> {
    let half = |h: usize| -> &[f32; WIDTH] {
        values[WIDTH * h..WIDTH * (h + 1)].try_into().expect("eight values")
    };
    [L::load(half(0)), L::load(half(1))]
}

/// The values of `rows`, one per ray: [`load_rows`] undone.
#[inline(always)]
fn store_rows<L: Lanes8>(rows: &Rows<L>) -> [f32; PACKET_RAYS] {
    let mut values = [0.0f32; PACKET_RAYS];
    let (low, high) = values.split_at_mut(WIDTH);
    low.copy_from_slice(&L::store(rows[0]));
    high.copy_from_slice(&L::store(rows[1]));
    values
}

/// The box tests' limits of a packet's rays ([`PacketSlabs::limits`]): they change
/// only where a ray's nearest hit does, so a packet makes them again only then,
/// not at every node.
pub(super) struct PacketLimits<L: Lanes8> {
    /// Each ray's padded limit.
    rows: Rows<L>,
    /// The greatest of them, in every lane ([`PacketSlabs::maybe_entered`]).
    greatest: L::V,
}

/// A node's planes for [`PacketSlabs`]: per axis, the rows of its children's near
/// and far planes.
pub(super) struct PacketPlanes<'a> {
    near: [&'a [f32; WIDTH]; 3],
    far: [&'a [f32; WIDTH]; 3],
}

/// The folded test's factors (`1 / dir`) and terms (the offsets), per axis and
/// ray.
pub(super) struct SlabTerms<L: Lanes8> {
    inv: [Rows<L>; 3],
    near: [Rows<L>; 3],
    far: [Rows<L>; 3],
}

impl<L: Lanes8> SlabTerms<L> {
    /// The folded distances of rays `8 h .. 8 h + 8` to the near and far planes of
    /// `child` on `axis`: a function rather than a closure, which could be compiled
    /// apart from the caller's vector unit.
    #[inline(always)]
    fn slab(&self, planes: &PacketPlanes<'_>, axis: usize, child: usize, h: usize) -> (L::V, L::V) {
        let (near, far) = (L::splat(planes.near[axis][child]), L::splat(planes.far[axis][child]));
        (
            L::mul_add(near, self.inv[axis][h], self.near[axis][h]),
            L::mul_add(far, self.inv[axis][h], self.far[axis][h]),
        )
    }
}

impl<L: Lanes8> PacketSlabs<L> {
    /// The rows of `rays`' slabs, each lane the operations of [`Slabs::new`] for
    /// its ray (so the same bits), worked out eight rays at a time; `None` when the
    /// rays are not one packet: some ray invalid
    /// ([`is_valid_ray`](crate::prepare::is_valid_ray)) or from another origin, the
    /// rays' directions differing in sign somewhere, or some ray not taking the
    /// folded test. Checked on the rows, a few vector steps for all the rays.
    #[inline(always)]
    pub(super) fn for_rays(wide: &WideBvh, rays: &[Ray; PACKET_RAYS]) -> Option<Self> {
        // First whether the rays are one packet at all: a batch of incoherent rays
        // asks this of every group.
        let [ox, oy, oz, tmin, dx, dy, dz, tmax] = ray_rows::<L>(rays);
        let (origin, dir) = ([ox, oy, oz], [dx, dy, dz]);
        if !valid_from_one_origin::<L>(rays[0].origin.to_array(), &origin, &dir, &tmin, &tmax) {
            return None;
        }
        // As `ray_scale`: the scale of each direction's largest magnitude, taken
        // by its bits, on the lanes.
        let (mut t_scale, mut to_frame) = ([L::splat(0.0); 2], [L::splat(0.0); 2]);
        for h in 0..2 {
            let largest = L::max_bits(L::max_bits(L::abs(dir[0][h]), L::abs(dir[1][h])), L::abs(dir[2][h]));
            t_scale[h] = L::direction_scale(largest);
            to_frame[h] = L::reciprocal_scale(t_scale[h]);
        }
        let zero = L::splat(0.0);
        // As `folds`.
        let max_scale = L::splat(FOLDED_MAX_SCALE);
        let mut folded = L::le(t_scale[0], max_scale) & L::le(t_scale[1], max_scale) == 0xff;
        let mut negative = [false; 3];
        let mut terms = SlabTerms {
            inv: [[zero; 2]; 3],
            near: [[zero; 2]; 3],
            far: [[zero; 2]; 3],
        };
        let mut frames = BoxFrames {
            dir: [[0.0; PACKET_RAYS]; 3],
            t_scale: store_rows::<L>(&t_scale),
            inv_dir: [[0.0; PACKET_RAYS]; 3],
        };
        for axis in 0..3 {
            let mut signs = 0;
            // As `BoxFrame::new`: the scaled direction and its reciprocal.
            let (mut scaled_dir, mut inv_scaled) = ([zero; 2], [zero; 2]);
            for h in 0..2 {
                // As `Slabs::new`: the caller's direction and its reciprocal.
                let d = dir[axis][h];
                let (inv, zeros) = slab_reciprocal_lanes::<L>(d);
                signs |= L::lt(d, zero) << (WIDTH * h);
                // The distance bound, the slack and the offsets.
                let bound = L::mul(L::add(L::splat(wide.reach[axis]), L::abs(origin[axis][h])), L::abs(inv));
                let scaled = L::mul(d, t_scale[h]);
                let (scaled_inv, scaled_zeros) = slab_reciprocal_lanes::<L>(scaled);
                (scaled_dir[h], inv_scaled[h]) = (scaled, scaled_inv);
                folded &= L::le(L::mul(bound, to_frame[h]), L::splat(FOLDED_LIMIT)) == 0xff;
                folded &= zeros == scaled_zeros;
                let slack = L::add(L::mul(L::splat(FOLDED_SLACK), bound), L::splat(f32::MIN_POSITIVE));
                // `-(origin · inv) ∓ slack`, as `Slabs::new` (a negation by -1 is
                // exact).
                let start = L::mul(L::splat(-1.0), L::mul(origin[axis][h], inv));
                terms.inv[axis][h] = inv;
                terms.near[axis][h] = L::sub(start, slack);
                terms.far[axis][h] = L::add(start, slack);
            }
            frames.dir[axis] = store_rows::<L>(&scaled_dir);
            frames.inv_dir[axis] = store_rows::<L>(&inv_scaled);
            if signs != 0 && signs != u32::MAX >> (32 - PACKET_RAYS) {
                return None;
            }
            negative[axis] = signs != 0;
        }
        if !folded {
            return None;
        }
        let padded_tmin = [padded_below_lanes::<L>(tmin[0]), padded_below_lanes::<L>(tmin[1])];
        // By bits only where every ray would take them alone.
        let mut test = SlabTest::Forward;
        for row in padded_tmin {
            for t in L::store(row) {
                if SlabTest::folded_for(t) == SlabTest::Folded {
                    test = SlabTest::Folded;
                }
            }
        }
        Some(Self {
            span: Span::of(&terms, &padded_tmin),
            terms,
            padded_tmin,
            tmax,
            rows: PlaneRows::for_signs(negative),
            test,
            frames,
        })
    }

    /// The box frame of ray `r`: [`BoxFrame::new`] of it, bit for bit.
    #[inline(always)]
    pub(super) fn box_frame(&self, r: usize) -> BoxFrame {
        let BoxFrames { dir, t_scale, inv_dir } = &self.frames;
        BoxFrame {
            dir: [dir[0][r], dir[1][r], dir[2][r]],
            t_scale: t_scale[r],
            inv_dir: [inv_dir[0][r], inv_dir[1][r], inv_dir[2][r]],
        }
    }

    /// The near and far planes of each child of `node` on each axis, oriented for
    /// these rays ([`PacketSlabs::rows`]).
    #[inline(always)]
    pub(super) fn planes<'a>(&self, node: &'a ExactNode) -> PacketPlanes<'a> {
        let planes = node.boxes.rows();
        PacketPlanes {
            near: each_axis(|axis| self.rows.near[axis].of_planes(planes)),
            far: each_axis(|axis| self.rows.far[axis].of_planes(planes)),
        }
    }

    /// Each ray's padded limit of the folded test, for its `bound` (in the caller's
    /// units), as [`Slabs::enter`] pads it, and the greatest of them.
    #[inline(always)]
    pub(super) fn limits(&self, bounds: &[f32; PACKET_RAYS]) -> PacketLimits<L> {
        let bound = load_rows::<L>(bounds);
        let rows = [
            padded_above_lanes::<L>(L::min(bound[0], self.tmax[0])),
            padded_above_lanes::<L>(L::min(bound[1], self.tmax[1])),
        ];
        PacketLimits {
            greatest: greatest::<L>(&rows),
            rows,
        }
    }

    /// The children of the node of `planes` that some of these rays may enter
    /// before their `limits` ([`PacketSlabs::limits`]), a lane per child: every
    /// child that [`PacketSlabs::enter_child`] finds entered by some ray, tested
    /// once for all the rays, on the bounds of their terms (`Span`), so that the
    /// children no ray enters are not tested ray by ray. Each ray's entry and exit
    /// lie between the bounds' (`Span::slab`; the padded `tmin` and limit between
    /// the least and greatest of the rays'), so where a ray enters a child, the
    /// largest of the least entries is no later than the smallest of the greatest
    /// exits.
    #[inline(always)]
    pub(super) fn maybe_entered(&self, planes: &PacketPlanes<'_>, limits: &PacketLimits<L>) -> u32 {
        let span = &self.span;
        let (nx, fx) = span.slab(planes, 0);
        let (ny, fy) = span.slab(planes, 1);
        let (nz, fz) = span.slab(planes, 2);
        clip::<L, false>([nx, ny, nz, span.tmin], [fx, fy, fz, limits.greatest]).0
    }

    /// The rays among `rays` (bit `r` for ray `r`) that enter child `child` of the
    /// node of `planes` before their `limits` ([`PacketSlabs::limits`]), each
    /// ray's entry distance in the caller's units, and the nearest entry of the
    /// rays that enter (infinite when none does).
    #[inline(always)]
    pub(super) fn enter_child(
        &self,
        planes: &PacketPlanes<'_>,
        child: usize,
        limits: &PacketLimits<L>,
        rays: u32,
    ) -> (u32, [f32; PACKET_RAYS], f32) {
        let mut entered = 0;
        let mut entry = [L::splat(0.0); 2];
        let mut nearest = [L::splat(f32::INFINITY); 2];
        for h in 0..2 {
            let (nx, fx) = self.terms.slab(planes, 0, child, h);
            let (ny, fy) = self.terms.slab(planes, 1, child, h);
            let (nz, fz) = self.terms.slab(planes, 2, child, h);
            let (near, far) = ([nx, ny, nz, self.padded_tmin[h]], [fx, fy, fz, limits.rows[h]]);
            let (entered_here, near) = self.test.clip::<L>(near, far);
            let these = entered_here & (rays >> (WIDTH * h));
            entered |= these << (WIDTH * h);
            nearest[h] = L::fill_outside(near, these, f32::INFINITY);
            entry[h] = near;
        }
        (entered, store_rows::<L>(&entry), L::min_lane(L::min(nearest[0], nearest[1])))
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;
    use crate::bvh::Bvh;
    use crate::cpu::intersect::lanes;
    use crate::cpu::vector::Portable;
    use crate::kit::{self, Rng, fixtures};
    use crate::prepare::is_valid_ray;

    /// A direction of every octant meets the minima first on each axis where it
    /// is positive and the maxima where it is negative, and leaves by the others.
    #[test]
    fn rows_of_every_octant_face_the_ray() {
        let rows = |axis: usize| [(Row::MinX, Row::MaxX), (Row::MinY, Row::MaxY), (Row::MinZ, Row::MaxZ)][axis];
        for x in [false, true] {
            for y in [false, true] {
                for z in [false, true] {
                    let negative = [x, y, z];
                    let planes = PlaneRows::for_signs(negative);
                    for axis in 0..3 {
                        let (min, max) = rows(axis);
                        let expected = if negative[axis] { (max, min) } else { (min, max) };
                        assert_eq!((planes.near[axis], planes.far[axis]), expected, "{negative:?}, axis {axis}");
                    }
                }
            }
        }
    }

    /// Rays for the folded test: random ones, adversarial ones, and rays that graze
    /// child boxes (aimed at a corner from afar or from near, moved
    /// sideways by up to a few box margins), some with a direction component a
    /// millionth of the others.
    fn grazing_rays(wide: &WideBvh, mesh: &raypick_testkit::raypick::Mesh, rng: &mut Rng) -> Vec<Ray> {
        let bounds = mesh.bounds().expect("a finite mesh");
        let mut rays = kit::rays(fixtures::random_rays(300, rng, bounds));
        rays.extend(kit::rays(fixtures::adversarial_rays(mesh, rng, 200)));
        let diag = (bounds.1 - bounds.0).length();
        for node in wide.nodes.iter().step_by(wide.nodes.len() / 50 + 1) {
            let boxes = &node.boxes;
            for lane in (0..WIDTH).filter(|&lane| node.occupied & (1 << lane) != 0) {
                let corner = Vec3::from(std::array::from_fn(|axis| {
                    if rng.chance(0.5) { boxes.lo[axis][lane] } else { boxes.hi[axis][lane] }
                }));
                let mut dir = rng.unit_vector();
                dir[rng.below(3)] *= if rng.chance(0.3) { 1e-6 } else { 1.0 };
                let dir = dir.normalize();
                let back = if rng.chance(0.5) { diag } else { diag * 1e-4 };
                // Sideways by up to a few box margins of the distance: some of
                // these rays enter the box only through the plain test's margin.
                let aside = dir.any_orthonormal_vector() * back * rng.range(-4e-5, 4e-5);
                rays.push(Ray::new(corner + aside - dir * back, dir));
            }
        }
        look_back(&mut rays, rng);
        rays
    }

    /// Gives a third of `rays` a `tmin` other than 0: some that look back
    /// (negative, `-0.0`, `-inf`), some forward from a positive one.
    fn look_back(rays: &mut [Ray], rng: &mut Rng) {
        for ray in rays {
            if rng.chance(0.33) {
                ray.tmin = [-0.0, -1e-3, -1e3, f32::NEG_INFINITY, 1e-3][rng.below(5)];
            }
        }
    }

    /// Asserts that for every ray the folded test applies to, at every node and
    /// for two bounds, it enters each lane the plain test enters, no later, and
    /// by bits just as by the numbers where the ray looks forward; returns how
    /// many rays it applied to, and how many of them looked forward.
    fn check_units<L: Lanes8>(wide: &WideBvh, rays: &[Ray]) -> (usize, usize) {
        let (mut folded_rays, mut forward_rays) = (0, 0);
        for ray in rays.iter().filter(|ray| is_valid_ray(ray)) {
            let slabs = Slabs::<L>::new(wide, ray, &BoxFrame::new(ray));
            let forward = match slabs.test {
                SlabTest::Plain => continue,
                SlabTest::Folded => false,
                SlabTest::Forward => true,
            };
            assert_eq!(forward, ray.tmin.is_sign_positive(), "{ray:?}");
            folded_rays += 1;
            forward_rays += usize::from(forward);
            let terms = slabs.terms();
            for node in &wide.nodes {
                let planes = Planes::<L>::of(node, &slabs.rows);
                for bound in [ray.tmax, (ray.tmin + ray.tmax.min(1e30)) * 0.5] {
                    let limit = slabs.limit(bound);
                    let (plain, plain_near) = slabs.enter_plain(&planes, limit.plain);
                    let (folded, folded_near) = slabs.enter_folded(SlabTest::Folded, &planes, limit.padded, &terms);
                    if forward {
                        let (by_bits, by_bits_near) = slabs.enter_folded(SlabTest::Forward, &planes, limit.padded, &terms);
                        assert_eq!(by_bits, folded, "{ray:?} bound {bound} node {node:?}");
                        let bits = |near: L::V| L::store(near).map(f32::to_bits);
                        assert_eq!(bits(by_bits_near), bits(folded_near), "{ray:?} bound {bound} node {node:?}");
                    }
                    let plain = plain & node.occupied as u32;
                    assert_eq!(plain & !folded, 0, "{ray:?} bound {bound} node {node:?}");
                    // The plain entries in the caller's units, as `Slabs::enter` gives them.
                    let plain_near = L::mul(plain_near, L::splat(slabs.t_scale));
                    let (plain_near, folded_near) = (L::store(plain_near), L::store(folded_near));
                    for lane in lanes(plain) {
                        assert!(folded_near[lane] <= plain_near[lane], "{ray:?} node {node:?}");
                    }
                }
            }
        }
        (folded_rays, forward_rays)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn check_avx2(wide: &WideBvh, rays: &[Ray]) -> (usize, usize) {
        check_units::<crate::cpu::vector::Avx2>(wide, rays)
    }

    /// The folded slab test enters every child the plain test enters, no later,
    /// on meshes from tiny to huge and far from the origin, with both vector units;
    /// by bits, it enters the same children at the same distances as by the numbers.
    #[test]
    fn folded_test_enters_what_the_plain_test_enters() {
        let mut rng = Rng::new(29);
        for (centre, size) in [(0.0, 1.0), (1e6, 10.0), (-3e4, 1e4), (1e-15, 1e-15), (1e20, 1e17)] {
            let bounds = (Vec3::splat(centre - size), Vec3::splat(centre + size));
            let soup = fixtures::soup(2000, &mut rng, bounds);
            let wide = WideBvh::from_bvh(&Bvh::build(&kit::mesh(soup.clone())));
            let rays = grazing_rays(&wide, &soup, &mut rng);
            let (folded, forward) = check_units::<Portable>(&wide, &rays);
            assert!(folded * 2 > rays.len(), "{folded} of {} rays folded", rays.len());
            assert!(forward * 3 > folded && forward * 10 < folded * 9, "{forward} of {folded} folded rays forward");
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::simd::has_avx2() {
                // SAFETY: AVX2 and FMA are present (checked just above).
                assert_eq!(unsafe { check_avx2(&wide, &rays) }, (folded, forward));
            }
        }
    }

    /// Asserts that a packet holds each ray's slab values and box frame, and that
    /// its test of each child gives each ray the bits its own
    /// test gives (entered or not, entry distance) at every node of `wide`, for
    /// the packets of `rays` that can share it, with random bounds, and that the
    /// children it tests ray by ray ([`PacketSlabs::maybe_entered`]) hold every
    /// child some ray enters and leave out most of the others; returns how many
    /// packets it checked.
    fn check_packets<L: Lanes8>(wide: &WideBvh, rays: &[Ray], rng: &mut Rng) -> usize {
        // Occupied children left out by `maybe_entered`, and entered by no ray.
        let (mut spared, mut untested) = (0, 0);
        let mut packets = 0;
        for group in rays.chunks_exact(PACKET_RAYS) {
            let group: &[Ray; PACKET_RAYS] = group.try_into().expect("a full group");
            let slabs: [Slabs<L>; PACKET_RAYS] =
                std::array::from_fn(|r| Slabs::new(wide, &group[r], &BoxFrame::new(&group[r])));
            let shareable = slabs.iter().all(|s| s.test != SlabTest::Plain && s.rows == slabs[0].rows);
            let Some(packet) = PacketSlabs::<L>::for_rays(wide, group) else {
                assert!(!shareable, "{group:?}");
                continue;
            };
            assert!(shareable, "{group:?}");
            let forward = slabs.iter().all(|s| s.test == SlabTest::Forward);
            assert_eq!(packet.test == SlabTest::Forward, forward, "{group:?}");
            assert_rows_match(&packet, &slabs);
            assert_box_frames_match(&packet, group);
            packets += 1;
            let bounds: [f32; PACKET_RAYS] =
                std::array::from_fn(|_| if rng.chance(0.3) { f32::INFINITY } else { rng.range(0.0, 4.0) });
            let limits = packet.limits(&bounds);
            for (index, node) in (0..).zip(&wide.nodes) {
                let rows = packet.planes(node);
                let used = node.occupied as u32;
                let alone: Vec<(u32, [f32; WIDTH])> = (0..PACKET_RAYS)
                    .map(|r| {
                        let (entered, near) = slabs[r].enter(slabs[r].test(), node, &slabs[r].limit(bounds[r]), &slabs[r].terms());
                        (entered, L::store(near))
                    })
                    .collect();
                // The children tested ray by ray hold every child some ray enters.
                let maybe = packet.maybe_entered(&rows, &limits);
                for (r, (entered, _)) in alone.iter().enumerate() {
                    assert_eq!(entered & !maybe, 0, "{:?} node {index}", group[r]);
                }
                let all_rays = alone.iter().fold(0, |all, (entered, _)| all | entered);
                spared += (used & !maybe).count_ones() as usize;
                untested += (used & !all_rays).count_ones() as usize;
                // Some rays of the packet may have left it: they enter nothing.
                let rays = if rng.chance(0.5) { u32::MAX >> (32 - PACKET_RAYS) } else { rng.next_u32() & 0xffff };
                for lane in lanes(used) {
                    let (by_ray, entry, nearest) = packet.enter_child(&rows, lane, &limits, rays);
                    let mut expected_nearest = f32::INFINITY;
                    for (r, (entered, near)) in alone.iter().enumerate() {
                        let ray = &group[r];
                        let wanted = entered >> lane & rays >> r & 1;
                        assert_eq!(by_ray >> r & 1, wanted, "{ray:?} node {index} lane {lane}");
                        assert_eq!(entry[r].to_bits(), near[lane].to_bits(), "{ray:?} node {index} lane {lane}");
                        if wanted != 0 {
                            expected_nearest = expected_nearest.min(near[lane]);
                        }
                    }
                    assert_eq!(nearest, expected_nearest, "node {index} lane {lane}");
                }
            }
        }
        // The children no ray enters are mostly spared the rays' tests.
        assert!(spared * 2 > untested, "{spared} of {untested} children spared");
        packets
    }

    /// Asserts that `packet`'s rows hold each ray's values of `slabs`, bit for bit.
    fn assert_rows_match<L: Lanes8>(packet: &PacketSlabs<L>, slabs: &[Slabs<L>; PACKET_RAYS]) {
        let bits = |rows: &Rows<L>| -> Vec<u32> {
            rows.iter().flat_map(|&row| L::store(row)).map(f32::to_bits).collect()
        };
        let of_rays = |value: &dyn Fn(&Slabs<L>) -> f32| -> Vec<u32> {
            slabs.iter().map(|s| value(s).to_bits()).collect()
        };
        for axis in 0..3 {
            let scale = of_rays(&|s| s.folded_inv[axis]);
            assert_eq!(bits(&packet.terms.inv[axis]), scale, "axis {axis}");
            assert_eq!(bits(&packet.terms.near[axis]), of_rays(&|s| s.near_offset[axis]), "axis {axis}");
            assert_eq!(bits(&packet.terms.far[axis]), of_rays(&|s| s.far_offset[axis]), "axis {axis}");
        }
        assert_eq!(bits(&packet.padded_tmin), of_rays(&|s| L::store(s.padded_tmin)[0]));
        assert_eq!(bits(&packet.tmax), of_rays(&|s| s.tmax));
        assert_eq!(packet.rows, slabs[0].rows);
    }

    /// A box frame's values as bits.
    fn frame_bits(f: BoxFrame) -> ([u32; 3], u32, [u32; 3]) {
        (f.dir.map(f32::to_bits), f.t_scale.to_bits(), f.inv_dir.map(f32::to_bits))
    }

    /// Asserts that `packet` holds each of `rays`' box frame, bit for bit.
    fn assert_box_frames_match<L: Lanes8>(packet: &PacketSlabs<L>, rays: &[Ray; PACKET_RAYS]) {
        for (r, ray) in rays.iter().enumerate() {
            assert_eq!(frame_bits(packet.box_frame(r)), frame_bits(BoxFrame::new(ray)), "{ray:?}");
        }
    }

    /// Asserts that [`Slabs::for_ray`] gives `ray` the box frame and the slabs of
    /// [`BoxFrame::new`] and [`Slabs::new`], bit for bit.
    fn assert_set_up_matches<L: Lanes8>(wide: &WideBvh, ray: &Ray) {
        let frame = BoxFrame::new(ray);
        let slabs = Slabs::<L>::new(wide, ray, &frame);
        let (lane_frame, lane_slabs) = Slabs::<L>::for_ray(wide, ray);
        assert_eq!(frame_bits(lane_frame), frame_bits(frame), "{ray:?}");
        let axes = |s: &Slabs<L>| [s.origin, s.inv_dir, s.folded_inv, s.near_offset, s.far_offset].map(|v| v.map(f32::to_bits));
        let scalars = |s: &Slabs<L>| [s.tmin, L::store(s.padded_tmin)[0], s.t_scale, s.to_frame, s.tmax].map(f32::to_bits);
        assert_eq!(axes(&lane_slabs), axes(&slabs), "{ray:?}");
        assert_eq!(scalars(&lane_slabs), scalars(&slabs), "{ray:?}");
        assert_eq!((lane_slabs.rows, lane_slabs.test), (slabs.rows, slabs.test), "{ray:?}");
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn assert_set_up_matches_avx2(wide: &WideBvh, ray: &Ray) {
        assert_set_up_matches::<crate::cpu::vector::Avx2>(wide, ray);
    }

    /// A walk's set-up on vector lanes gives each ray the values of the scalar
    /// steps, bit for bit, with both vector units: grazing rays on meshes from
    /// tiny to huge, and directions with zero, `-0.0`, subnormal and huge
    /// components, in every octant, some of them scaled to zero or taking the
    /// plain test.
    #[test]
    fn lane_set_up_is_the_scalar_one() {
        let mut rng = Rng::new(37);
        let odd = [0.0, -0.0, 1e-45, -1e-40, 1e-30, 3.0, -0.5, 1e30, -3e38, f32::MAX];
        for (centre, size) in [(0.0, 1.0), (1e6, 10.0), (1e-15, 1e-15), (1e20, 1e17), (-3e37, 1e37)] {
            let bounds = (Vec3::splat(centre - size), Vec3::splat(centre + size));
            let soup = fixtures::soup(500, &mut rng, bounds);
            let wide = WideBvh::from_bvh(&Bvh::build(&kit::mesh(soup.clone())));
            let mut rays = grazing_rays(&wide, &soup, &mut rng);
            for _ in 0..500 {
                let dir = Vec3::from(std::array::from_fn(|_| odd[rng.below(odd.len())]));
                let origin = Vec3::from(std::array::from_fn(|_| centre + size * rng.range(-2.0, 2.0)));
                rays.push(Ray::with_interval(origin, dir, [0.0, -0.0, -1.0, 1e-3][rng.below(4)], f32::INFINITY));
            }
            let mut checked = 0;
            for ray in rays.iter().filter(|ray| is_valid_ray(ray)) {
                assert_set_up_matches::<Portable>(&wide, ray);
                #[cfg(target_arch = "x86_64")]
                if crate::cpu::simd::has_avx2() {
                    // SAFETY: AVX2 and FMA are present (checked just above).
                    unsafe { assert_set_up_matches_avx2(&wide, ray) };
                }
                checked += 1;
            }
            assert!(checked * 3 > rays.len(), "{checked} of {} rays valid", rays.len());
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn check_packets_avx2(wide: &WideBvh, rays: &[Ray], rng: &mut Rng) -> usize {
        check_packets::<crate::cpu::vector::Avx2>(wide, rays, rng)
    }

    /// Camera rays in packets enter each child box as each of them does alone, bit
    /// for bit, on every vector unit; packets whose rays cannot share the test are
    /// refused: some ray outside the folded test's range, or a direction component
    /// that scaling makes -0.0 in one ray and leaves negative in another.
    #[test]
    fn packets_enter_what_each_ray_enters() {
        let mut rng = Rng::new(31);
        let mesh = kit::mesh(fixtures::builtin_scene(5_000));
        let wide = WideBvh::from_bvh(&Bvh::build(&mesh));
        let bounds = mesh.bounds().expect("a finite mesh");
        let camera = kit::rays(fixtures::camera_rays(bounds, 64, 32));
        // Rays that look back in some packets: those take the test by the numbers,
        // while the others of the packet look forward, alone by bits.
        let mut mixed = camera.clone();
        for group in mixed.chunks_exact_mut(PACKET_RAYS).step_by(3) {
            look_back(group, &mut rng);
        }
        for rays in [camera, mixed] {
            // Groups that straddle the image's middle row or column mix signs.
            let packets = check_packets::<Portable>(&wide, &rays, &mut rng);
            assert!(packets * 4 >= rays.len() / PACKET_RAYS * 3, "{packets} packets");
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::simd::has_avx2() {
                assert_eq!(unsafe { check_packets_avx2(&wide, &rays, &mut rng) }, packets);
            }
        }

        let origin = Vec3::new(0.1, 0.2, -3.0);
        let packet = |dirs: [Vec3; 2]| {
            let rays: [Ray; PACKET_RAYS] = std::array::from_fn(|r| Ray::new(origin, dirs[r % 2]));
            PacketSlabs::<Portable>::for_rays(&wide, &rays)
        };
        assert!(packet([Vec3::new(0.1, 0.2, 1.0), Vec3::new(0.2, 0.1, 1.0)]).is_some());
        // 1e30 scales to about 1, and -1e-30 with it to -0.0.
        assert!(packet([Vec3::new(0.1, -0.2, 1.0), Vec3::new(1e30, -1e-30, 1.0)]).is_none());
        assert!(packet([Vec3::new(0.1, 0.2, 1.0), Vec3::new(0.0, 0.2, 1.0)]).is_none());
    }

    /// A packet of rays whose directions have several lengths, so several scales,
    /// holds each ray's own box frame.
    #[test]
    fn packets_hold_each_rays_box_frame() {
        let mut rng = Rng::new(32);
        let wide = WideBvh::from_bvh(&Bvh::build(&kit::mesh(fixtures::builtin_scene(500))));
        let origin = Vec3::new(0.1, 0.2, -3.0);
        let rays: [Ray; PACKET_RAYS] = std::array::from_fn(|r| {
            let dir = Vec3::new(rng.range(0.1, 0.3), rng.range(0.1, 0.3), 1.0);
            Ray::new(origin, dir * [0.25, 1.0, 8.0, 0.5][r % 4])
        });
        let scales: std::collections::HashSet<u32> = rays.iter().map(|ray| BoxFrame::new(ray).t_scale.to_bits()).collect();
        assert_eq!(scales.len(), 4);
        let packet = PacketSlabs::<Portable>::for_rays(&wide, &rays).expect("the rays share their box tests");
        assert_box_frames_match(&packet, &rays);
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::simd::has_avx2() {
            // SAFETY: AVX2 and FMA are present (checked just above).
            unsafe { check_box_frames_avx2(&wide, &rays) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn check_box_frames_avx2(wide: &WideBvh, rays: &[Ray; PACKET_RAYS]) {
        let packet = PacketSlabs::<crate::cpu::vector::Avx2>::for_rays(wide, rays).expect("the rays share their box tests");
        assert_box_frames_match(&packet, rays);
    }

    /// Rays whose distances could overflow (a zero direction component against a
    /// mesh away from the origin), meshes with infinite planes, rays whose scale
    /// is above `2^16` and rays with a component that scaling takes to zero take
    /// the plain test.
    #[test]
    fn overflowing_distances_take_the_plain_test() {
        let mut rng = Rng::new(30);
        let bounds = (Vec3::splat(1.0), Vec3::splat(2.0));
        let mesh = kit::mesh(fixtures::soup(100, &mut rng, bounds));
        let wide = WideBvh::from_bvh(&Bvh::build(&mesh));
        let slabs = |ray: Ray| Slabs::<Portable>::new(&wide, &ray, &BoxFrame::new(&ray)).test != SlabTest::Plain;
        assert!(slabs(Ray::new(Vec3::ZERO, Vec3::new(1.0, 0.5, 0.25))));
        assert!(!slabs(Ray::new(Vec3::ZERO, Vec3::new(1.0, 0.5, 0.0))));
        let mut unbounded = wide.clone();
        unbounded.reach[1] = f32::INFINITY;
        let ray = Ray::new(Vec3::ZERO, Vec3::new(1.0, 0.5, 0.25));
        assert_eq!(Slabs::<Portable>::new(&unbounded, &ray, &BoxFrame::new(&ray)).test, SlabTest::Plain);
        // Scales 2^14 and 2^20.
        assert!(slabs(Ray::new(Vec3::ZERO, Vec3::new(1e-4, 0.5e-4, 0.25e-4))));
        assert!(!slabs(Ray::new(Vec3::ZERO, Vec3::new(1e-6, 0.5e-6, 0.25e-6))));
        // Scaled by 2^-25, a component of 2^-126 becomes zero (the plain test's
        // parallel) and one of 2^-100 does not; so near the origin, the distances
        // stay far from overflow either way.
        let near_origin = kit::mesh(fixtures::soup(100, &mut rng, (Vec3::splat(1e-16), Vec3::splat(2e-16))));
        let near_origin = WideBvh::from_bvh(&Bvh::build(&near_origin));
        let folds = |dir: Vec3| {
            let ray = Ray::new(Vec3::ZERO, dir);
            Slabs::<Portable>::new(&near_origin, &ray, &BoxFrame::new(&ray)).test != SlabTest::Plain
        };
        assert!(folds(Vec3::new(2f32.powi(25), 2f32.powi(-100), 1.0)));
        assert!(!folds(Vec3::new(2f32.powi(25), -f32::MIN_POSITIVE, 1.0)));
    }
}
