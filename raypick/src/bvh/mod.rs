//! Bounding volume hierarchy over a mesh's triangles, shared by both backends.
//!
//! [`Bvh::build`] runs an SAH builder ([`build`]: binning at the top, sweeps along a
//! Morton curve below) in parallel and lays the tree out as [`BvhNode`]s — two
//! child boxes per node, 64 bytes, depth-first so every
//! subtree is a contiguous run of nodes and of triangles. Triangles are reordered for
//! locality; each [`PackedTriangle`] keeps its original id, so hits report the
//! caller's ids and ties still go to the lowest original id.
//!
//! The depth (interior nodes on any root-to-leaf path) never exceeds [`MAX_DEPTH`],
//! so a traversal stack of that size cannot overflow: SAH splits are used for the top
//! [`SAH_DEPTH`] levels only, below which nodes are split at the median, which halves
//! the triangle count at every level (and 32 halvings reach one triangle from 2^32).

pub mod build;
pub(crate) mod memory;
mod morton;
mod nodes;
pub mod refit;
mod split;
mod validate;

pub use build::{BuildOptions, vertices_box};
pub(crate) use morton::spread;
pub use refit::{RefitError, Refitted};
pub use split::BvhChunk;
pub use validate::BvhError;

use glam::Vec3;

use crate::Mesh;
use crate::types::{BvhNode, PackedTriangle};

/// Largest number of interior nodes on any root-to-leaf path: the size of the
/// traversal stack on both backends.
pub const MAX_DEPTH: usize = 64;

/// Levels (from the root) split by the surface area heuristic; deeper ones are split
/// at the median. `SAH_DEPTH + 32 <= MAX_DEPTH`.
pub const SAH_DEPTH: usize = 32;

const _: () = assert!(SAH_DEPTH + 32 <= MAX_DEPTH);

/// A BVH over the hittable triangles of a mesh (degenerate triangles are left out:
/// they can never be hit).
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    pub(crate) nodes: Vec<BvhNode>,
    pub(crate) triangles: Vec<PackedTriangle>,
    pub(crate) depth: usize,
    pub(crate) mesh_triangles: usize,
}

impl Bvh {
    /// Builds a BVH with the default options, in parallel on rayon's thread pool.
    pub fn build(mesh: &Mesh) -> Self {
        Self::build_with(mesh, &BuildOptions::default())
    }

    /// Builds a BVH with the given options.
    pub fn build_with(mesh: &Mesh, options: &BuildOptions) -> Self {
        build::build_tree(mesh, options, build::Bottom::Split).into_bvh()
    }

    /// The nodes; node 0 is the root.
    pub fn nodes(&self) -> &[BvhNode] {
        &self.nodes
    }

    /// The hittable triangles in leaf order (each knows its original id).
    pub fn triangles(&self) -> &[PackedTriangle] {
        &self.triangles
    }

    /// Interior nodes on the longest root-to-leaf path (at most [`MAX_DEPTH`]).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Triangles of the mesh the BVH was built from (degenerate ones included).
    pub fn mesh_triangle_count(&self) -> usize {
        self.mesh_triangles
    }

    /// Bytes of node and triangle data.
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val(self.nodes.as_slice())
            + std::mem::size_of_val(self.triangles.as_slice())
    }

    /// Bounds of everything in the BVH (padded), or `None` when it is empty.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let children = &self.nodes.first()?.children;
        let lo = children[0].lo.min(children[1].lo);
        let hi = children[0].hi.max(children[1].hi);
        (lo.x <= hi.x).then_some((lo, hi))
    }

    /// Triangle range `(first, end)` under each node. Children follow their parent
    /// in the depth-first layout, so one backward sweep sees children first.
    pub(crate) fn subtree_ranges(&self) -> Vec<(u32, u32)> {
        let mut ranges = vec![(u32::MAX, 0u32); self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            ranges[i] = self.nodes[i]
                .children
                .iter()
                .filter(|c| !c.is_empty())
                .map(|c| {
                    if c.is_leaf() {
                        (c.index, c.index + c.count)
                    } else {
                        ranges[c.index as usize]
                    }
                })
                .fold((u32::MAX, 0), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
        }
        ranges
    }

    /// Checks the structural invariants against the mesh it was built from: every
    /// hittable triangle of the mesh in exactly one leaf (degenerate ones in none),
    /// with the mesh's data; every child box inside its parent's box; every leaf's
    /// triangles inside its box; the depth within [`MAX_DEPTH`].
    pub fn validate(&self, mesh: &Mesh) -> Result<(), BvhError> {
        validate::validate(self, mesh)
    }
}
