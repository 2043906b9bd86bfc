//! The decisions of the ray-query stage, mirroring `shaders/ray_query.wgsl`.
//!
//! With [`Accel::RayQuery`](crate::Accel::RayQuery) the driver builds an
//! acceleration structure over one box per hittable triangle ([`DriverBoxes`]) and
//! finds, for a ray, the boxes it crosses; raypick's own test ([`intersect`]) decides
//! each candidate, so the hits are the BVH's bit for bit. The driver's traversal
//! has no CPU twin (it is the driver's); what raypick decides around it does, here:
//!
//! - **Boxes** ([`DriverBoxes::new`]): each triangle's padded box (the BVH's,
//!   [`crate::bvh::build::triangle_box`]) widened by [`DRIVER_PADDING`] of the mesh's
//!   magnitude, so that a driver whose box test is conservative reports every box
//!   whose triangle the test can accept: the test's rounding moves an accepted ray by
//!   less than that for rays from within [`FAR_FACTOR`] of the mesh's magnitude.
//! - **Far rays** ([`is_far`]): rays from farther out are left to the CPU (the BVH
//!   traversal, [`super::bvh_traverse`], which gives the same answers).
//! - **Segments** ([`segments`]): the driver takes only `0 <= tmin <= tmax`, so the
//!   part of `[tmin, tmax]` behind the origin is searched as a second ray pointing
//!   the other way. Each accepted hit is offered in the segment of its sign (`t < 0`
//!   behind, `t >= 0` ahead), so every triangle is offered once; the segment behind
//!   comes first, and the one ahead is skipped once the bound is behind the origin.
//! - **Pruning** ([`commit_bound`]): ahead of the origin, the bound of what can still
//!   change the answer (the nearest hit, the full list's last hit) is committed to the
//!   driver, a little farther out ([`SEGMENT_MARGIN`]), so it stops reporting boxes
//!   beyond it. Ties on equal `t` go to the lowest id ([`Collect`]), since the driver
//!   reports candidates in no particular order.
//!
//! [`traverse`] runs these decisions over any [`BoxSearch`] (the tests drive it with
//! [`ExactBoxSearch`], a driver with an exact box test).

use glam::Vec3;

use super::intersect::{RayFrame, intersect};
use super::query::Collect;
use crate::bvh::build::triangle_box;
use crate::options::{Cull, Mode};
use crate::prepare::is_hittable;
use crate::types::{Hit, PackedTriangle, Ray};

/// How far the driver's boxes reach beyond the triangles' padded boxes, relative to
/// the mesh's magnitude (the largest coordinate magnitude or extent of its hittable
/// triangles): `2^-12`.
///
/// A hit the test accepts lies on a ray that passes within the test's rounding of
/// the triangle. For the watertight test that is a few `2^-24` of the distance from
/// the ray's origin (the vertices are moved into the ray's frame by a subtraction and
/// a shear), some 30 times less than this padding for origins within [`FAR_FACTOR`]
/// magnitudes, so a driver whose box test is conservative reports the box. The fast
/// test's rounding grows as the ray turns parallel to an edge (bounded only by the
/// box tests' relative margin); there the padding rests on the tests: the parity
/// rays pass with origins out to 1024 magnitudes, 64 times farther than used.
/// Padding costs candidates: on the built-in scene 1.85 per camera ray against 1.62
/// with none (`2^-10`: 2.7).
pub const DRIVER_PADDING: f32 = 1.0 / 4096.0;

/// Rays whose origin has a coordinate beyond this many mesh magnitudes are finished
/// on the CPU ([`is_far`]).
pub const FAR_FACTOR: f32 = 16.0;

/// Relative margin by which segment bounds and committed distances are widened
/// before the driver sees them: `2^-12`, far above the rounding of a box entry.
pub const SEGMENT_MARGIN: f32 = 1.0 / 4096.0;

/// The largest `t` a segment passes to the driver (its `tmax` must be finite here).
const MAX_T: f32 = f32::MAX;

/// The boxes the driver builds its acceleration structure over: one per hittable
/// triangle, in id order, and those triangles (a candidate's primitive index
/// names both).
#[derive(Clone, Debug, Default)]
pub struct DriverBoxes {
    /// `[lo, hi]` of each box.
    pub boxes: Vec<[Vec3; 2]>,
    /// The hittable triangles, each knowing its id.
    pub triangles: Vec<PackedTriangle>,
    /// The mesh's magnitude: the largest coordinate magnitude or extent of its
    /// hittable triangles' padded boxes (0 for none).
    pub magnitude: f32,
}

impl DriverBoxes {
    /// The boxes of `packed` (a mesh's packed triangles; degenerate ones are left out),
    /// widened by [`DRIVER_PADDING`].
    pub fn new(packed: &[PackedTriangle]) -> Self {
        Self::with_padding(packed, DRIVER_PADDING)
    }

    /// The boxes of `packed` widened by `padding` of the mesh's magnitude (at least
    /// [`DRIVER_PADDING`]: the instance stage pads more, see
    /// [`super::instance_ray_query`]).
    pub fn with_padding(packed: &[PackedTriangle], padding: f32) -> Self {
        let triangles: Vec<PackedTriangle> =
            packed.iter().filter(|t| is_hittable(t)).copied().collect();
        let padded: Vec<(Vec3, Vec3)> = triangles.iter().map(triangle_box).collect();
        let magnitude = mesh_magnitude(&padded);
        let pad = Vec3::splat(magnitude * padding.max(DRIVER_PADDING));
        let boxes = padded
            .iter()
            .map(|&(lo, hi)| [clamp_finite(lo - pad), clamp_finite(hi + pad)])
            .collect();
        Self {
            boxes,
            triangles,
            magnitude,
        }
    }

    /// Origins with a coordinate beyond this are far for the mesh stage ([`is_far`]):
    /// [`FAR_FACTOR`] magnitudes.
    pub fn far_limit(&self) -> f32 {
        self.magnitude * FAR_FACTOR
    }
}

/// The largest coordinate magnitude or extent of the union of `boxes` (0 for none).
fn mesh_magnitude(boxes: &[(Vec3, Vec3)]) -> f32 {
    let Some(&first) = boxes.first() else {
        return 0.0;
    };
    let (lo, hi) = boxes
        .iter()
        .fold(first, |(lo, hi), &(a, b)| (lo.min(a), hi.max(b)));
    lo.abs()
        .max(hi.abs())
        .max_element()
        .max((hi - lo).max_element())
        .min(f32::MAX)
}

/// `v` with infinite coordinates replaced by `±f32::MAX` (the driver takes finite boxes).
fn clamp_finite(v: Vec3) -> Vec3 {
    v.clamp(Vec3::splat(-f32::MAX), Vec3::splat(f32::MAX))
}

/// Whether `ray`'s origin lies beyond `far_limit` on some axis: its hits are then left
/// to the CPU.
#[inline]
pub fn is_far(ray: &Ray, far_limit: f32) -> bool {
    ray.origin.abs().max_element() > far_limit
}

/// Which way a segment's ray points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Against the ray's direction: the part of `[tmin, tmax]` below 0.
    Behind,
    /// Along it: the part at or above 0.
    Ahead,
}

impl Direction {
    /// Whether a hit at `t` belongs to this segment: `t < 0` behind, `t >= 0` ahead
    /// (`-0.0` ahead), so each hit is offered in exactly one segment.
    #[inline]
    pub fn holds(self, t: f32) -> bool {
        (t < 0.0) == (self == Direction::Behind)
    }
}

/// The part of a ray's interval on one side of its origin, as a ray for the driver:
/// direction `±frame.dir`, `0 <= tmin <= tmax` in units of `frame.dir`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Which way it points.
    pub direction: Direction,
    /// Smallest distance searched.
    pub tmin: f32,
    /// Largest distance searched (finite).
    pub tmax: f32,
}

impl Segment {
    /// The segment's direction for the driver.
    pub fn dir(&self, frame: &RayFrame) -> Vec3 {
        let dir = Vec3::from(frame.dir);
        match self.direction {
            Direction::Behind => -dir,
            Direction::Ahead => dir,
        }
    }
}

impl Segment {
    /// The distance first committed to the driver for this segment when the bound
    /// of what can still change the answer is `bound` (units of the caller's
    /// direction), or `None` when nothing in the segment can: ahead of the origin,
    /// the segment's `tmax` lowered to the widened bound ([`commit_bound`]).
    #[inline]
    pub fn first_commit(&self, bound: f32, frame: &RayFrame) -> Option<f32> {
        if self.direction == Direction::Behind {
            return Some(self.tmax);
        }
        if bound < 0.0 {
            return None; // every hit ahead is beaten already
        }
        let committed = self.tmax.min(commit_bound(bound, frame));
        (committed >= self.tmin).then_some(committed)
    }

    /// The distance to commit once the bound has become `bound`, when it lowers
    /// `committed` (ahead of the origin only: nothing is committed behind it).
    #[inline]
    pub fn lowered(&self, bound: f32, frame: &RayFrame, committed: f32) -> Option<f32> {
        let limit = commit_bound(bound, frame);
        (self.direction == Direction::Ahead && limit < committed && limit >= self.tmin)
            .then_some(limit)
    }
}

/// `x >= 0` widened by [`SEGMENT_MARGIN`], at most [`MAX_T`].
#[inline]
fn grow(x: f32) -> f32 {
    (x * (1.0 + SEGMENT_MARGIN)).min(MAX_T)
}

/// `x >= 0` narrowed by [`SEGMENT_MARGIN`].
#[inline]
fn shrink(x: f32) -> f32 {
    x * (1.0 - SEGMENT_MARGIN)
}

/// The segment searched in `direction`, `None` when the ray's interval has no part
/// there (or none the driver could search: an infinite `tmin`). `ray` is sanitised
/// and live (`frame.live`).
pub fn segment(ray: &Ray, frame: &RayFrame, direction: Direction) -> Option<Segment> {
    let to_frame = frame.inv_t_scale();
    let (lo, hi) = (ray.tmin * to_frame, ray.tmax * to_frame);
    let (tmin, tmax) = match direction {
        Direction::Behind if lo < 0.0 => (shrink((-hi).max(0.0)), grow(-lo)),
        Direction::Ahead if hi >= 0.0 => (shrink(lo.max(0.0)), grow(hi)),
        _ => return None,
    };
    (tmin <= tmax).then_some(Segment {
        direction,
        tmin,
        tmax,
    })
}

/// Both segments, the one behind the origin first.
pub fn segments(ray: &Ray, frame: &RayFrame) -> [Option<Segment>; 2] {
    [Direction::Behind, Direction::Ahead].map(|d| segment(ray, frame, d))
}

/// The distance committed to the driver ahead of the origin for a bound (units of
/// the caller's direction, `>= 0`): the bound in units of `frame.dir`, widened by
/// [`SEGMENT_MARGIN`]; boxes entered beyond it cannot change the answer.
#[inline]
pub fn commit_bound(bound: f32, frame: &RayFrame) -> f32 {
    grow(bound * (1.0 / frame.t_scale))
}

/// The driver's side of one segment: it reports, in any order and possibly more than
/// once, every box the segment's ray crosses within `[tmin, committed]`, where the
/// committed distance starts at `tmax` and only shrinks.
pub trait BoxSearch {
    /// What the driver reports of a candidate: the box's index in
    /// [`DriverBoxes::boxes`] for a mesh, `(instance, box)` for an instance scene.
    type Candidate;
    /// Starts a search along `origin + t * dir`, `t` in `[tmin, tmax]`.
    fn start(&mut self, origin: Vec3, dir: Vec3, tmin: f32, tmax: f32);
    /// The next candidate, `None` when done.
    fn proceed(&mut self) -> Option<Self::Candidate>;
    /// Lowers the committed distance to `t` (`tmin <= t <=` the committed distance).
    fn commit(&mut self, t: f32);
}

/// Offers every accepted hit of one ray (already sanitised) that can change
/// `collect`'s result, over the candidates `search` reports for each segment of the
/// ray, until it says stop. Returns `false`, offering nothing, for a far ray
/// ([`is_far`]), which the caller finishes with the BVH.
pub fn traverse(
    boxes: &DriverBoxes,
    search: &mut impl BoxSearch<Candidate = u32>,
    ray: &Ray,
    (cull, mode): (Cull, Mode),
    collect: &mut impl Collect,
) -> bool {
    if is_far(ray, boxes.far_limit()) {
        return false;
    }
    let frame = RayFrame::new(ray);
    if !frame.live {
        return true;
    }
    for segment in segments(ray, &frame).into_iter().flatten() {
        let Some(mut committed) = segment.first_commit(collect.bound(), &frame) else {
            return true;
        };
        search.start(ray.origin, segment.dir(&frame), segment.tmin, committed);
        while let Some(index) = search.proceed() {
            let tri = &boxes.triangles[index as usize];
            let c = intersect(ray, &frame, tri, cull, f32::INFINITY, mode);
            if !c.accepted || !segment.direction.holds(c.t) {
                continue;
            }
            let hit = Hit {
                t: c.t,
                u: c.u,
                v: c.v,
                prim: tri.id,
            };
            if collect.offer_repeated(hit) {
                return true;
            }
            if let Some(lower) = segment.lowered(collect.bound(), &frame, committed) {
                committed = lower;
                search.commit(lower);
            }
        }
    }
    true
}

/// A driver with an exact box test (in f64, no margin): the strictest conservative
/// driver, which reports boxes in a scrambled order and prunes at once on commit.
#[cfg(any(test, feature = "kernels"))]
#[derive(Clone, Debug)]
pub struct ExactBoxSearch<'a> {
    boxes: &'a [[Vec3; 2]],
    origin: glam::DVec3,
    inv_dir: glam::DVec3,
    tmin: f64,
    committed: f64,
    next: usize,
    /// A prime not dividing the box count: `i -> i * stride mod n` visits every box.
    stride: usize,
}

#[cfg(any(test, feature = "kernels"))]
impl<'a> ExactBoxSearch<'a> {
    /// A search over `boxes`.
    pub fn new(boxes: &'a [[Vec3; 2]]) -> Self {
        Self {
            boxes,
            origin: glam::DVec3::ZERO,
            inv_dir: glam::DVec3::ZERO,
            tmin: 0.0,
            committed: 0.0,
            next: 0,
            // (1, id order, only for counts that both primes divide.)
            stride: [7919, 7927]
                .into_iter()
                .find(|&p| !boxes.len().is_multiple_of(p))
                .unwrap_or(1),
        }
    }

    /// Whether the current ray crosses box `i` within `[tmin, committed]`.
    fn crosses(&self, i: usize) -> bool {
        let [lo, hi] = self.boxes[i].map(|v| v.as_dvec3());
        let (mut near, mut far) = (self.tmin, self.committed);
        for axis in 0..3 {
            let inv = self.inv_dir[axis];
            let (a, b) = (lo[axis] - self.origin[axis], hi[axis] - self.origin[axis]);
            if inv.is_infinite() {
                // Parallel to the slab: inside it or never.
                if a > 0.0 || b < 0.0 {
                    return false;
                }
                continue;
            }
            let (t0, t1) = (a * inv, b * inv);
            near = near.max(t0.min(t1));
            far = far.min(t0.max(t1));
        }
        near <= far
    }
}

#[cfg(any(test, feature = "kernels"))]
impl BoxSearch for ExactBoxSearch<'_> {
    type Candidate = u32;

    fn start(&mut self, origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) {
        self.origin = origin.as_dvec3();
        self.inv_dir = dir.as_dvec3().recip();
        (self.tmin, self.committed) = (tmin as f64, tmax as f64);
        self.next = 0;
    }

    fn proceed(&mut self) -> Option<u32> {
        let n = self.boxes.len();
        while self.next < n {
            // Visit indices in a scrambled order (a stride coprime with n), so that
            // no answer hangs on the driver reporting boxes in id order.
            let i = (self.next * self.stride + 13) % n;
            self.next += 1;
            if self.crosses(i) {
                return Some(i as u32);
            }
        }
        None
    }

    fn commit(&mut self, t: f32) {
        self.committed = self.committed.min(t as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::query::Closest;
    use crate::prepare::pack_triangle;

    fn frame_of(ray: &Ray) -> RayFrame {
        RayFrame::new(ray)
    }

    #[test]
    fn segments_split_the_interval_at_the_origin() {
        let ray = Ray::with_interval(Vec3::ZERO, Vec3::new(0.0, 0.0, 4.0), -2.0, 3.0);
        let frame = frame_of(&ray);
        // frame.dir = (0, 0, 1): t in frame units is 4 t.
        let [behind, ahead] = segments(&ray, &frame);
        let behind = behind.unwrap();
        let ahead = ahead.unwrap();
        assert_eq!(behind.direction, Direction::Behind);
        assert_eq!(behind.tmin, 0.0);
        assert!(behind.tmax >= 8.0 && behind.tmax < 8.01);
        assert_eq!(ahead.tmin, 0.0);
        assert!(ahead.tmax >= 12.0 && ahead.tmax < 12.01);
        assert_eq!(behind.dir(&frame), Vec3::NEG_Z);
    }

    #[test]
    fn segments_of_one_sided_and_unbounded_intervals() {
        let forward = Ray::new(Vec3::ZERO, Vec3::X);
        let [behind, ahead] = segments(&forward, &frame_of(&forward));
        assert!(behind.is_none());
        assert_eq!(ahead.unwrap().tmax, f32::MAX);
        let back = Ray::with_interval(Vec3::ZERO, Vec3::X, f32::NEG_INFINITY, -1.0);
        let [behind, ahead] = segments(&back, &frame_of(&back));
        assert!(ahead.is_none());
        let behind = behind.unwrap();
        assert_eq!(behind.tmax, f32::MAX);
        assert!(behind.tmin <= 1.0 && behind.tmin > 0.99);
        // An infinite tmin leaves nothing the driver could search.
        let never = Ray::with_interval(Vec3::ZERO, Vec3::X, f32::INFINITY, f32::INFINITY);
        assert_eq!(segments(&never, &frame_of(&never)), [None, None]);
    }

    #[test]
    fn a_hit_belongs_to_one_segment() {
        assert!(Direction::Ahead.holds(0.0));
        assert!(Direction::Ahead.holds(-0.0));
        assert!(!Direction::Behind.holds(-0.0));
        assert!(Direction::Behind.holds(-1e-30));
        assert!(!Direction::Ahead.holds(-1e-30));
    }

    #[test]
    fn driver_boxes_hold_the_padded_boxes_and_skip_degenerate_triangles() {
        let packed = [
            pack_triangle([Vec3::ZERO, Vec3::X, Vec3::Y], 0),
            pack_triangle([Vec3::ZERO, Vec3::X, Vec3::X * 2.0], 1),
            pack_triangle([Vec3::splat(4.0), Vec3::new(5.0, 4.0, 4.0), Vec3::splat(5.0)], 2),
        ];
        let boxes = DriverBoxes::new(&packed);
        assert_eq!(boxes.triangles.iter().map(|t| t.id).collect::<Vec<_>>(), [0, 2]);
        // The magnitude: the largest coordinate of the padded boxes, a hair over 5.
        let magnitude = boxes.magnitude;
        assert!((5.0..5.001).contains(&magnitude), "{magnitude}");
        for (b, tri) in boxes.boxes.iter().zip(&boxes.triangles) {
            let (lo, hi) = triangle_box(tri);
            let pad = magnitude * DRIVER_PADDING;
            assert!(b[0].cmple(lo - pad * 0.99).all() && b[1].cmpge(hi + pad * 0.99).all());
        }
        assert!(DriverBoxes::new(&packed[1..2]).boxes.is_empty());
    }

    #[test]
    fn far_rays_are_left_to_the_cpu() {
        let packed = [pack_triangle([Vec3::ZERO, Vec3::X, Vec3::Y], 0)];
        let boxes = DriverBoxes::new(&packed);
        let near = Ray::new(Vec3::new(0.25, 0.25, 10.0), Vec3::NEG_Z);
        let far = Ray::new(Vec3::new(0.25, 0.25, 1e3), Vec3::NEG_Z);
        let mut search = ExactBoxSearch::new(&boxes.boxes);
        let options = (Cull::None, Mode::Watertight);
        let mut closest = Closest::default();
        assert!(traverse(&boxes, &mut search, &near, options, &mut closest));
        assert_eq!(closest.0.prim, 0);
        assert_eq!(closest.0.t, 10.0);
        let mut closest = Closest::default();
        assert!(!traverse(&boxes, &mut search, &far, options, &mut closest));
        assert_eq!(closest.0, Hit::MISS);
    }
}
