//! Refitting: new vertex positions, same triangles, same tree.
//!
//! A deforming mesh keeps its topology; only its vertices move. Rebuilding the tree
//! every frame would be wasteful, so [`Bvh::refit`] keeps every node and leaf and
//! packs the triangles again; the boxes are then recomputed bottom-up by the twin of
//! `shaders/refit.wgsl` (`cpu/refit.rs`): each leaf box is the union of its
//! triangles' padded boxes (the very boxes the builder uses), and each interior box
//! the union of its children's.
//!
//! A refit of an unchanged mesh reproduces the built tree bit for bit; after the
//! vertices move, the tree answers exactly as a fresh build (the nearest hit does not
//! depend on the tree's shape), though traversal may visit more boxes when the
//! motion was large (rebuild then).

use rayon::prelude::*;

use super::Bvh;
use crate::Mesh;
use crate::prepare::{is_hittable, pack_triangle};
use crate::types::PackedTriangle;

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
    /// degenerate at build time can now be hit) and was built again; a mesh for
    /// hardware ray queries ([`Accel::RayQuery`](crate::Accel::RayQuery)) is always
    /// built again, by the driver.
    Rebuilt,
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
}
