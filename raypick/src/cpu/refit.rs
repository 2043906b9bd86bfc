//! The CPU twin of `shaders/refit.wgsl`: a BVH's boxes recomputed from its
//! triangles after the vertices moved, leaves first, then every interior node from
//! its children (the GPU does one tree level per dispatch; here the leaves go in
//! parallel and the interior nodes in one backward sweep, which sees every child
//! before its parent because nodes are laid out depth-first). Same boxes, bit for
//! bit, as a fresh build's.

use rayon::prelude::*;

use crate::bvh::Bvh;
use crate::bvh::build::triangle_box;
use crate::prepare::is_hittable;
use crate::types::{BvhChild, PackedTriangle};

/// The box of the hittable triangles `tris` (padded like the builder's), or an
/// inverted box (`lo = f32::MAX`, `hi = -f32::MAX`) when none can be hit.
pub(crate) fn leaf_box(tris: &[PackedTriangle]) -> (glam::Vec3, glam::Vec3) {
    tris.iter()
        .filter(|t| is_hittable(t))
        .map(triangle_box)
        .fold(
            (BvhChild::EMPTY.lo, BvhChild::EMPTY.hi),
            |(lo, hi), (a, b)| (lo.min(a), hi.max(b)),
        )
}

impl Bvh {
    /// Recomputes every box from the triangles (leaves in parallel, then interior
    /// nodes in one backward sweep).
    pub(crate) fn refit_boxes(&mut self) {
        let triangles = &self.triangles;
        self.nodes.par_iter_mut().for_each(|node| {
            for child in node.children.iter_mut().filter(|c| c.is_leaf()) {
                let first = child.index as usize;
                (child.lo, child.hi) = leaf_box(&triangles[first..first + child.count as usize]);
            }
        });
        for i in (0..self.nodes.len()).rev() {
            for c in 0..2 {
                let child = self.nodes[i].children[c];
                if child.is_leaf() || child.is_empty() {
                    continue;
                }
                let [a, b] = self.nodes[child.index as usize].children;
                let slot = &mut self.nodes[i].children[c];
                slot.lo = a.lo.min(b.lo);
                slot.hi = a.hi.max(b.hi);
            }
        }
    }
}
