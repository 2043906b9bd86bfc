//! What a traversal keeps of the hits it finds: the nearest one ([`Closest`]),
//! whether there is one at all ([`AnyHit`]), or a sorted list
//! ([`super::hit_list::HitList`]).
//!
//! The CPU kernels are generic over [`Collect`]; the shaders branch on the
//! dispatch's `query` at the same two places: the bound boxes are tested against,
//! and what an accepted hit does.

use super::bvh_traverse::Tally;
use super::bvh_walk::nearer;
use super::intersect::{RayFrame, intersect};
use crate::options::{Cull, Mode};
use crate::types::{Hit, PackedTriangle, Ray};

/// Receives the accepted hits of one ray.
pub trait Collect {
    /// The largest `t` a hit can have and still change the result: subtrees entered
    /// beyond it are skipped.
    fn bound(&self) -> f32;

    /// Offers an accepted hit; returns `true` when the search can stop.
    fn offer(&mut self, hit: Hit) -> bool;

    /// Offers an accepted hit that may have been offered before (a driver may report
    /// a box more than once, `super::ray_query`): the same result as offering each
    /// triangle once. Keeping the nearest hit or stopping at the first are unchanged
    /// by a repeat, so by default this is [`Collect::offer`].
    #[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
    fn offer_repeated(&mut self, hit: Hit) -> bool {
        self.offer(hit)
    }
}

/// Keeps the nearest hit (ties to the lowest triangle id). A [`Hit`] as it is in
/// memory, so that hits can be kept in the caller's slots.
#[derive(Clone, Copy, Debug, bytemuck::TransparentWrapper)]
#[repr(transparent)]
pub struct Closest(pub Hit);

impl Default for Closest {
    fn default() -> Self {
        Self(Hit::MISS)
    }
}

impl Closest {
    /// `hits` as the nearest hits kept so far, so that a walk keeps them in place.
    #[inline(always)]
    pub(crate) fn wrap_array<const N: usize>(hits: &mut [Hit; N]) -> &mut [Closest; N] {
        let wrapped: &mut [Closest] = bytemuck::TransparentWrapper::wrap_slice_mut(hits);
        wrapped.try_into().expect("as many as the hits")
    }
}

impl Collect for Closest {
    #[inline(always)]
    fn bound(&self) -> f32 {
        self.0.t
    }

    #[inline(always)]
    fn offer(&mut self, hit: Hit) -> bool {
        if nearer(hit.t, hit.prim, &self.0) {
            self.0 = hit;
        }
        false
    }
}

/// Stops at the first accepted hit.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyHit(pub bool);

impl Collect for AnyHit {
    #[inline(always)]
    fn bound(&self) -> f32 {
        f32::INFINITY
    }

    #[inline(always)]
    fn offer(&mut self, _hit: Hit) -> bool {
        self.0 = true;
        true
    }
}

/// Tests a leaf's `triangles` for one ray (whose frame is `frame`) in order,
/// telling `tally` each test and offering each accepted hit to `collect`; `true`
/// once it says stop. The BVH traversals' leaf loop (`test_triangle` in
/// `shaders/query.wgsl`).
#[inline(always)]
pub fn test_triangles(
    triangles: &[PackedTriangle],
    (ray, frame): (&Ray, &RayFrame),
    (cull, mode): (Cull, Mode),
    collect: &mut impl Collect,
    tally: &mut impl Tally,
) -> bool {
    for tri in triangles {
        tally.triangle();
        let c = intersect(ray, frame, tri, cull, f32::INFINITY, mode);
        let hit = Hit {
            t: c.t,
            u: c.u,
            v: c.v,
            prim: tri.id,
        };
        if c.accepted && collect.offer(hit) {
            return true;
        }
    }
    false
}
