//! Structural checks of a built [`Bvh`].

use super::{Bvh, MAX_DEPTH};
use crate::Mesh;
use crate::prepare::{is_hittable, pack_mesh, pack_triangle};
use crate::types::BvhChild;

/// A broken BVH invariant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BvhError {
    /// A triangle is in no leaf or in several.
    #[error("triangle {0} is referenced by {1} leaves")]
    TriangleCoverage(u32, usize),
    /// A child's box is not inside its parent's box.
    #[error("node {0}: child box not inside the parent box")]
    ChildOutsideParent(u32),
    /// A triangle lies outside its leaf's box.
    #[error("triangle {0} is outside its leaf box")]
    TriangleOutsideLeaf(u32),
    /// A child index points outside the node or triangle array.
    #[error("node {0}: child index out of range")]
    IndexOutOfRange(u32),
    /// A triangle's data differs from the mesh's.
    #[error("triangle {0} does not match the mesh")]
    TriangleData(u32),
    /// The BVH was built from a mesh with a different triangle count.
    #[error("the BVH was built from another mesh")]
    WrongMesh,
    /// The tree is deeper than [`MAX_DEPTH`].
    #[error("depth {0} exceeds {MAX_DEPTH}")]
    TooDeep(usize),
}

fn inside(inner: &BvhChild, outer_lo: glam::Vec3, outer_hi: glam::Vec3) -> bool {
    inner.lo.cmpge(outer_lo).all() && inner.hi.cmple(outer_hi).all()
}

pub(super) fn validate(bvh: &Bvh, mesh: &Mesh) -> Result<(), BvhError> {
    if mesh.triangle_count() != bvh.mesh_triangles {
        return Err(BvhError::WrongMesh);
    }
    let mut seen = vec![0usize; bvh.mesh_triangles];
    let mut depth_max = 0;
    // (node, its box, depth in interior nodes)
    let root = &bvh.nodes[0];
    let lo = root.children[0].lo.min(root.children[1].lo);
    let hi = root.children[0].hi.max(root.children[1].hi);
    let mut stack = vec![(0u32, lo, hi, 1usize)];
    while let Some((index, lo, hi, depth)) = stack.pop() {
        depth_max = depth_max.max(depth);
        if depth > MAX_DEPTH {
            return Err(BvhError::TooDeep(depth));
        }
        let node = bvh
            .nodes
            .get(index as usize)
            .ok_or(BvhError::IndexOutOfRange(index))?;
        for child in &node.children {
            if child.is_empty() {
                continue;
            }
            if !inside(child, lo, hi) {
                return Err(BvhError::ChildOutsideParent(index));
            }
            if !child.is_leaf() {
                stack.push((child.index, child.lo, child.hi, depth + 1));
                continue;
            }
            let range = child.index as usize..child.index as usize + child.count as usize;
            let tris = bvh
                .triangles
                .get(range)
                .ok_or(BvhError::IndexOutOfRange(index))?;
            for tri in tris {
                let corners = [tri.v0, tri.v1, tri.v2];
                if corners
                    .iter()
                    .any(|p| p.cmplt(child.lo).any() || p.cmpgt(child.hi).any())
                {
                    return Err(BvhError::TriangleOutsideLeaf(tri.id));
                }
                let slot = seen
                    .get_mut(tri.id as usize)
                    .ok_or(BvhError::IndexOutOfRange(index))?;
                *slot += 1;
            }
        }
    }
    if depth_max != bvh.depth {
        return Err(BvhError::TooDeep(depth_max));
    }
    for (packed, &n) in pack_mesh(mesh).iter().zip(&seen) {
        if n != usize::from(is_hittable(packed)) {
            return Err(BvhError::TriangleCoverage(packed.id, n));
        }
    }
    for tri in &bvh.triangles {
        if pack_triangle(mesh.triangle(tri.id as usize), tri.id) != *tri {
            return Err(BvhError::TriangleData(tri.id));
        }
    }
    Ok(())
}
