//! Eight-wide BVH traversal on the CPU, mirroring `shaders/wide_bvh_traverse.wgsl`:
//! the GPU's walk of [`WideNodes`], one lane per ray.
//!
//! At each node the eight child boxes are decoded and tested like the binary
//! traversal's ([`RayBoxes::enter`]) and the entered children ordered nearest first
//! (ties in slot order). The entered interior children other than the nearest are
//! pushed farthest first, each with its entry distance; the entered leaves'
//! triangles are tested at once, nearest leaf first, a leaf skipped once a nearer
//! hit beats it; then the nearest interior child is visited, or the nearest pending
//! one that can still change the answer. A stack of [`STACK_ENTRIES`] entries (8
//! bytes each on the GPU) holds what is pending; a ray that would push beyond it
//! ([`Walk::StackFull`]) is finished by the binary traversal instead.
//!
//! Box tests are as conservative as the binary traversal's (quantized boxes hold
//! the binary ones) and triangles use the same
//! [`intersect`](super::intersect::intersect), so the answers are the binary
//! traversal's and brute force's, bit for bit.

use super::bvh_traverse::Tally;
use super::bvh_walk::{RayBoxes, pop_pending};
use super::intersect::{RayFrame, beyond};
use super::query::{AnyHit, Closest, Collect, test_triangles};
use super::wide_bvh::WIDTH;
use super::wide_nodes::WideNodes;
use crate::bvh::MAX_DEPTH;
use crate::options::{Cull, Mode};
use crate::types::{EMPTY_CHILD, Hit, PackedTriangle, Ray};

/// Entries of the traversal stack (the shader's `MAX_DEPTH`, as the binary
/// traversal's).
pub const STACK_ENTRIES: usize = MAX_DEPTH;

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Everything that could change the answer was visited (or the collector said
    /// stop).
    Done,
    /// A push would have overflowed the stack: the answer is incomplete.
    StackFull,
}

/// Nearest hit of one ray (already sanitised) through `wide` over `triangles` (the
/// binary tree's); `None` when the stack of `stack` entries would overflow.
pub fn trace_ray(
    wide: &WideNodes,
    triangles: &[PackedTriangle],
    ray: &Ray,
    test: (Cull, Mode),
    stack: usize,
) -> Option<Hit> {
    walk_with(wide, triangles, ray, test, stack, Closest::default()).map(|c| c.0)
}

/// Whether one ray (already sanitised) hits anything; `None` as for [`trace_ray`].
pub fn occluded_ray(
    wide: &WideNodes,
    triangles: &[PackedTriangle],
    ray: &Ray,
    test: (Cull, Mode),
    stack: usize,
) -> Option<bool> {
    walk_with(wide, triangles, ray, test, stack, AnyHit::default()).map(|any| any.0)
}

/// `collect` after the walk of one ray, or `None` when the stack would overflow.
fn walk_with<C: Collect>(
    wide: &WideNodes,
    triangles: &[PackedTriangle],
    ray: &Ray,
    test: (Cull, Mode),
    stack: usize,
    mut collect: C,
) -> Option<C> {
    let walk = traverse_tallied(wide, triangles, ray, test, stack, &mut collect, &mut ());
    (walk == Walk::Done).then_some(collect)
}

/// A child entered by the ray: index, triangle count, entry distance.
type Entered = (u32, u32, f32);

/// Offers every accepted hit of one ray (already sanitised) that can change
/// `collect`'s result, until it says stop, with a stack of at most `stack` entries
/// (at most [`STACK_ENTRIES`]), telling `tally` its work (as
/// [`traverse_tallied`](super::bvh_traverse::traverse_tallied) does).
pub fn traverse_tallied(
    wide: &WideNodes,
    triangles: &[PackedTriangle],
    ray: &Ray,
    (cull, mode): (Cull, Mode),
    stack: usize,
    collect: &mut impl Collect,
    tally: &mut impl Tally,
) -> Walk {
    if wide.nodes.is_empty() {
        return Walk::Done;
    }
    let frame = RayFrame::new(ray);
    let boxes = RayBoxes::new(ray, &frame);
    let capacity = stack.min(STACK_ENTRIES);
    let mut pending = [(0u32, 0.0f32); STACK_ENTRIES];
    let mut depth = 0;
    let mut next = 0;
    loop {
        // The entered children, nearest first.
        let mut entered = [(0u32, 0u32, 0.0f32); WIDTH];
        let mut n = 0;
        let limit = collect.bound().min(ray.tmax);
        for child in wide.children(next) {
            let Some(entry) = boxes.enter(&child, limit) else {
                continue;
            };
            let mut i = n;
            while i > 0 && entered[i - 1].2 > entry {
                entered[i] = entered[i - 1];
                i -= 1;
            }
            entered[i] = (child.index, child.count, entry);
            n += 1;
        }
        let entered = &entered[..n];
        let is_leaf = |e: &&Entered| e.1 > 0;
        tally.node(entered.iter().any(|e| is_leaf(&e)));
        let mut interior = entered.iter().filter(|e| !is_leaf(e));
        next = interior.next().map_or(EMPTY_CHILD, |e| e.0);
        for &(index, _, entry) in interior.rev() {
            if depth == capacity {
                return Walk::StackFull;
            }
            pending[depth] = (index, entry);
            depth += 1;
            tally.stack(depth);
        }
        for &(first, count, entry) in entered.iter().filter(is_leaf) {
            if beyond(entry, collect.bound()) {
                continue; // a nearer hit already beat this leaf
            }
            let leaf = &triangles[first as usize..(first + count) as usize];
            if test_triangles(leaf, (ray, &frame), (cull, mode), collect, tally) {
                return Walk::Done;
            }
        }
        if next == EMPTY_CHILD {
            match pop_pending(&pending, &mut depth, collect.bound(), |&(_, t)| t) {
                Some((index, _)) => next = index,
                None => return Walk::Done,
            }
        }
    }
}
