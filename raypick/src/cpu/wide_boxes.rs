//! One ray against the eight boxes of a wide node ([`WideNode`]): the boxes decoded
//! once into vector registers ([`Planes`]), the slab test of a ray against all eight
//! at once ([`Slabs::enter`]), and the entered children ordered nearest first
//! ([`nearest_first`]). Used by the lone-ray and the packet traversals alike.
//!
//! The arithmetic is that of every other traversal, lane by lane: plane minus
//! origin times `1 / dir`, the largest entry and smallest exit with `tmin` and the
//! bound, and the margin of [`overlaps`](super::intersect::overlaps). So a box that
//! holds a triangle's padded box is entered no later and left no earlier than that
//! box, on every vector unit ([`Lanes8`]).

use super::intersect::{BOX_MARGIN, RayFrame, lanes};
use super::vector::Lanes8;
use super::wide_bvh::{EMPTY, WIDTH, WideBvh, WideNode};
use crate::types::Ray;

/// A node's eight boxes, decoded: minima and maxima per axis (unused slots decode
/// to some point; [`WideNode::occupied`] masks them).
#[derive(Clone, Copy)]
pub(super) struct Planes<L: Lanes8> {
    lo: [L::V; 3],
    hi: [L::V; 3],
}

impl<L: Lanes8> Planes<L> {
    /// The decoded boxes of `node` (its exact ones where it keeps them).
    #[inline(always)]
    pub(super) fn of(wide: &WideBvh, node: &WideNode) -> Self {
        if node.exact != EMPTY {
            let exact = &wide.exact[node.exact as usize];
            let load = |planes: &[[f32; WIDTH]; 3]| each_axis(|axis| L::load(&planes[axis]));
            return Self {
                lo: load(&exact.lo),
                hi: load(&exact.hi),
            };
        }
        let decode = |codes: &[[u8; WIDTH]; 3]| {
            each_axis(|axis| L::decode(&codes[axis], node.origin[axis], node.step[axis]))
        };
        Self {
            lo: decode(&node.lo),
            hi: decode(&node.hi),
        }
    }
}

/// `[f(0), f(1), f(2)]`, written out: closures handed to library functions (as
/// `array::map` takes them) may be compiled apart from the caller, without its
/// vector unit, and vector operations there become calls.
#[inline(always)]
fn each_axis<T>(f: impl Fn(usize) -> T) -> [T; 3] {
    [f(0), f(1), f(2)]
}

/// One ray, ready for slab tests against wide nodes: its values in every lane.
#[derive(Clone, Copy)]
pub(super) struct Slabs<L: Lanes8> {
    origin: [L::V; 3],
    /// `1 / dir` of the scaled direction.
    inv: [L::V; 3],
    /// Which scaled direction components are negative: those axes enter at the box
    /// maximum. From the scaled direction, whose tiny components may have become
    /// -0.0 (whose `1 / dir` is the positive `BIG`).
    negative: [bool; 3],
    /// `tmin` in units of the scaled direction.
    tmin: L::V,
    /// Frame units to the caller's (`t_scale`) and back.
    t_scale: f32,
    to_frame: f32,
    tmax: f32,
}

impl<L: Lanes8> Slabs<L> {
    /// The slabs of `ray`, whose frame is `frame`.
    #[inline(always)]
    pub(super) fn new(ray: &Ray, frame: &RayFrame) -> Self {
        // Box distances in units of the scaled direction, as in `bvh_traverse`.
        let to_frame = 1.0 / frame.t_scale;
        Self {
            origin: each_axis(|axis| L::splat(ray.origin[axis])),
            inv: each_axis(|axis| L::splat(frame.inv_dir[axis])),
            negative: frame.dir.map(|d| d < 0.0),
            tmin: L::splat(ray.tmin * to_frame),
            t_scale: frame.t_scale,
            to_frame,
            tmax: ray.tmax,
        }
    }

    /// The children among `occupied` (bit per lane) whose `planes` the ray enters
    /// before `bound` (in the caller's units), as a lane mask, and every lane's entry
    /// distance (in the caller's units).
    #[inline(always)]
    pub(super) fn enter(&self, planes: &Planes<L>, bound: f32, occupied: u32) -> (u32, [f32; WIDTH]) {
        let limit = if bound < self.tmax { bound } else { self.tmax } * self.to_frame;
        let slab = |axis: usize| {
            let (near, far) = if self.negative[axis] {
                (planes.hi[axis], planes.lo[axis])
            } else {
                (planes.lo[axis], planes.hi[axis])
            };
            let distance = |plane| L::mul(L::sub(plane, self.origin[axis]), self.inv[axis]);
            (distance(near), distance(far))
        };
        let ((nx, fx), (ny, fy), (nz, fz)) = (slab(0), slab(1), slab(2));
        let near = L::max(L::max(nx, ny), L::max(nz, self.tmin));
        let far = L::min(L::min(fx, fy), L::min(fz, L::splat(limit)));
        // `overlaps(near, far)`, lane by lane.
        let margin = L::splat(BOX_MARGIN);
        let entered = L::le(
            L::sub(near, L::mul(L::abs(near), margin)),
            L::add(far, L::mul(L::abs(far), margin)),
        );
        (
            entered & occupied,
            L::store(L::mul(near, L::splat(self.t_scale))),
        )
    }
}

/// Writes the lanes of `entered` to `order`, nearest first by `near` (insertion into
/// a list that is usually one to three long); returns how many there are.
#[inline(always)]
pub(super) fn nearest_first(
    entered: u32,
    near: &[f32; WIDTH],
    order: &mut [usize; WIDTH],
) -> usize {
    if entered.is_power_of_two() {
        // One lane, the most common case: nothing to order.
        order[0] = entered.trailing_zeros() as usize;
        return 1;
    }
    let mut count = 0;
    for lane in lanes(entered) {
        let mut i = count;
        while i > 0 && near[order[i - 1]] > near[lane] {
            order[i] = order[i - 1];
            i -= 1;
        }
        order[i] = lane;
        count += 1;
    }
    count
}
