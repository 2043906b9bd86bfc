//! Refitting: new vertex positions, same triangles, same tree.
//!
//! A deforming mesh keeps its topology; only its vertices move. Rebuilding the tree
//! every frame would be wasteful, so [`Bvh::refit`] keeps every node and leaf and
//! recomputes the boxes bottom-up: each leaf box is the union of its triangles'
//! padded boxes (the very boxes the builder uses), and each interior box the union
//! of its children's. Nodes are laid out depth-first, so children follow their
//! parent and one backward sweep sees every child before its parent.
//!
//! A refit of an unchanged mesh reproduces the built tree bit for bit; after the
//! vertices move, the tree answers exactly as a fresh build (the nearest hit does not
//! depend on the tree's shape), though traversal may visit more boxes when the
//! motion was large (rebuild then).

use rayon::prelude::*;

use super::Bvh;
use super::build::triangle_box;
use crate::Mesh;
use crate::prepare::{is_hittable, pack_triangle};
use crate::types::{BvhChild, PackedTriangle};

/// Why a tree cannot be refitted to a mesh (rebuild it instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefitError {
    /// The mesh has a different number of triangles than the tree was built from.
    #[error("the mesh has {mesh} triangles, the tree was built from {tree}")]
    TriangleCount {
        /// Triangles of the mesh given to the refit.
        mesh: usize,
        /// Triangles of the mesh the tree was built from.
        tree: usize,
    },
    /// A triangle that was degenerate when the tree was built (and so left out of
    /// it) can now be hit: the tree has no leaf for it.
    #[error("triangle {0} was degenerate at build time and is not degenerate now")]
    NoLeafFor(u32),
    /// The tree was prepared without the data a refit needs (see
    /// [`Picker::upload_refittable`](crate::Picker::upload_refittable)).
    #[error("this mesh was prepared without refit support")]
    NotRefittable,
}

/// How a prepared mesh followed its vertices' motion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refitted {
    /// Same tree, boxes recomputed (or triangles packed again for brute force).
    Refit,
    /// The tree could not follow ([`RefitError::NoLeafFor`]: a triangle that was
    /// degenerate at build time can now be hit) and was built again.
    Rebuilt,
}

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
    /// Moves the tree to `mesh`'s vertex positions, keeping its structure: the
    /// triangles are packed again in leaf order and every box is recomputed
    /// bottom-up (see the [module docs](self)).
    ///
    /// `mesh` must have the triangles (indices) of the mesh the tree was built
    /// from, with any positions; the triangle count is checked. A triangle that
    /// becomes degenerate stays in its leaf and never hits; one that was degenerate
    /// at build time has no leaf, so if it can now be hit the refit fails with
    /// [`RefitError::NoLeafFor`] and leaves the tree unchanged.
    pub fn refit(&mut self, mesh: &Mesh) -> Result<(), RefitError> {
        if mesh.triangle_count() != self.mesh_triangles {
            return Err(RefitError::TriangleCount {
                mesh: mesh.triangle_count(),
                tree: self.mesh_triangles,
            });
        }
        // Packed in id order first (the mesh is read in order), then gathered in
        // leaf order: reading the mesh in leaf order would jump around it.
        let positions = mesh.positions();
        let packed: Vec<PackedTriangle> = mesh
            .indices()
            .par_iter()
            .enumerate()
            .map(|(k, idx)| pack_triangle(idx.map(|i| positions[i as usize]), k as u32))
            .collect();
        if self.triangles.len() < self.mesh_triangles {
            let mut in_tree = vec![false; self.mesh_triangles];
            for tri in &self.triangles {
                in_tree[tri.id as usize] = true;
            }
            let revived = (0..self.mesh_triangles)
                .into_par_iter()
                .find_first(|&k| !in_tree[k] && is_hittable(&packed[k]));
            if let Some(k) = revived {
                return Err(RefitError::NoLeafFor(k as u32));
            }
        }
        self.triangles
            .par_iter_mut()
            .for_each(|tri| *tri = packed[tri.id as usize]);
        self.refit_boxes();
        Ok(())
    }

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
