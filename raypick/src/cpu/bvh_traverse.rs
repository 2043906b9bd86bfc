//! BVH traversal on the CPU, mirroring `shaders/bvh_traverse.wgsl`.
//!
//! Per ray: a fixed stack of [`MAX_DEPTH`] entries, both child boxes of a node tested
//! together, the nearer child visited first (leaves are tested on the spot), the
//! farther one pushed with its entry distance so it is skipped on pop once a nearer
//! hit is known. Box tests are conservative (padded boxes, a relative margin on the
//! slab distances) so no hit that brute force finds is ever culled; triangles are
//! tested with the same [`intersect`](super::intersect::intersect) as brute force,
//! and a hit replaces the best one when it is nearer or equally near with a lower
//! triangle id — so the answer is brute force's, bit for bit.
//!
//! The shader shapes its loops for SIMD drivers (nodes in an inner loop, a node's
//! leaf children in one loop after it; see its header) but does the same work in the
//! same order as this loop.

use super::bvh_walk::{RayBoxes, pop_pending};
use super::hit_list::HitList;
use super::intersect::{RayFrame, beyond};
use super::query::{AnyHit, Closest, Collect, test_triangles};
use crate::options::{Cull, Mode};
use crate::bvh::{Bvh, MAX_DEPTH};
use crate::types::{Hit, Ray};

/// Nearest hit of one ray (already sanitised); `cull` is a `crate::Cull`,
/// `mode` is a `crate::Mode`.
pub fn trace_ray(bvh: &Bvh, ray: &Ray, cull: Cull, mode: Mode) -> Hit {
    let mut closest = Closest::default();
    traverse(bvh, ray, cull, mode, &mut closest);
    closest.0
}

/// Whether one ray (already sanitised) hits anything.
pub fn occluded_ray(bvh: &Bvh, ray: &Ray, cull: Cull, mode: Mode) -> bool {
    let mut any = AnyHit::default();
    traverse(bvh, ray, cull, mode, &mut any);
    any.0
}

/// Adds the hits of one ray (already sanitised) to `list`.
pub fn collect_ray(bvh: &Bvh, ray: &Ray, cull: Cull, mode: Mode, list: &mut HitList) {
    traverse(bvh, ray, cull, mode, list);
}

/// Offers every accepted hit of one ray (already sanitised) that can change
/// `collect`'s result, until it says stop.
pub fn traverse(bvh: &Bvh, ray: &Ray, cull: Cull, mode: Mode, collect: &mut impl Collect) {
    traverse_tallied(bvh, ray, cull, mode, collect, &mut ());
}

/// The work of one ray's traversal, told as it is done: each node visited (its
/// child boxes tested; `leaves`: a leaf child's box was entered, which ends the
/// shader's inner node loop), each triangle tested, and the stack's depth after
/// each push; the CPU's wide traversal tells its node visits and leaves instead.
/// `()` tells nothing.
pub trait Tally {
    /// A node was visited.
    fn node(&mut self, _leaves: bool) {}
    /// A triangle was tested.
    fn triangle(&mut self) {}
    /// An entry was pushed; the stack now holds `depth`.
    fn stack(&mut self, _depth: usize) {}
    /// A wide node of the CPU's layout was visited: `tested` child boxes tested,
    /// `entered` of them entered.
    fn wide_node(&mut self, _tested: u32, _entered: u32) {}
    /// A leaf of the CPU's layout was tested: `blocks` leaf blocks.
    fn leaf_blocks(&mut self, _blocks: u32) {}
}

impl Tally for () {}

/// [`traverse`] (closest hit), telling `tally` its work.
pub fn traverse_tallied(
    bvh: &Bvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    collect: &mut impl Collect,
    tally: &mut impl Tally,
) {
    let Some(root) = bvh.nodes.first() else {
        return;
    };
    let frame = RayFrame::new(ray);
    let boxes = RayBoxes::new(ray, &frame);
    let mut stack = [(0u32, 0.0f32); MAX_DEPTH];
    let mut depth = 0;
    let mut node = root;
    loop {
        let limit = collect.bound().min(ray.tmax);
        let [a, b] = &node.children;
        let (ea, eb) = (boxes.enter(a, limit), boxes.enter(b, limit));
        tally.node((a.is_leaf() && ea.is_some()) || (b.is_leaf() && eb.is_some()));
        // Visit the nearer child first.
        let order = match (ea, eb) {
            (Some(ta), Some(tb)) if tb < ta => [(b, eb), (a, ea)],
            _ => [(a, ea), (b, eb)],
        };
        let mut next = None;
        for (child, entry) in order {
            let Some(entry) = entry else { continue };
            if child.is_leaf() {
                if beyond(entry, collect.bound()) {
                    continue; // a nearer leaf already beat this one
                }
                let first = child.index as usize;
                let leaf = &bvh.triangles[first..first + child.count as usize];
                if test_triangles(leaf, (ray, &frame), (cull, mode), collect, tally) {
                    return;
                }
            } else if next.is_none() {
                next = Some(child.index);
            } else {
                stack[depth] = (child.index, entry);
                depth += 1;
                tally.stack(depth);
            }
        }
        let index = match next {
            Some(index) => index,
            None => match pop_pending(&stack, &mut depth, collect.bound(), |&(_, t)| t) {
                Some((index, _)) => index,
                None => return,
            },
        };
        node = &bvh.nodes[index as usize];
    }
}

/// Traces `rays` into `hits` on the calling thread (the oracle of the traversal
/// tests; the backend traces through the wide layout).
#[cfg(any(test, feature = "kernels"))]
pub fn trace_rays(bvh: &Bvh, rays: &[Ray], hits: &mut [Hit], cull: Cull, mode: Mode) {
    for (ray, hit) in rays.iter().zip(hits) {
        *hit = trace_ray(bvh, &crate::prepare::sanitize_ray(ray), cull, mode);
    }
}
