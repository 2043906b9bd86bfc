//! Refitting CPU meshes to moved vertices: brute-force blocks packed again, the
//! wide layout collapsed again from the binary tree that `refit` (the twin of
//! `shaders/refit.wgsl`) moved.
//!
//! The wide layout is collapsed again from the refitted binary tree, which it keeps
//! for this purpose: the collapse is one linear pass over the nodes, far cheaper than
//! a build, and gives exactly the layout a collapse of the same tree always gives.

use std::sync::Arc;

use super::CpuMesh;
use super::brute_force::TriangleBlocks;
use super::wide_bvh::WideBvh;
use crate::Mesh;
use crate::bvh::{Bvh, RefitError, Refitted};
use crate::prepare::pack_mesh;

impl WideBvh {
    /// Collapses `bvh` (like [`WideBvh::from_bvh`]) and keeps it, so that
    /// [`WideBvh::refit`] can follow vertex motion later (at the memory cost of the
    /// binary tree).
    pub fn refittable(bvh: Bvh) -> Self {
        let bvh = Arc::new(bvh);
        Self {
            binary: Some(bvh.clone()),
            ..Self::from_bvh(&bvh)
        }
    }

    /// Refits the kept binary tree to `mesh` ([`Bvh::refit`]) and collapses it
    /// again. Fails with [`RefitError::NotRefittable`] when made by
    /// [`WideBvh::from_bvh`], which keeps no binary tree.
    pub fn refit(&mut self, mesh: &Mesh) -> Result<(), RefitError> {
        let mut binary = self.binary.take().ok_or(RefitError::NotRefittable)?;
        let result = Arc::make_mut(&mut binary).refit(mesh);
        if result.is_ok() {
            *self = Self::from_bvh(&binary);
        }
        self.binary = Some(binary);
        result
    }

    /// The binary tree kept for refits, if any.
    pub fn binary(&self) -> Option<&Bvh> {
        self.binary.as_deref()
    }
}

impl CpuMesh {
    /// Prepares a mesh that can follow vertex motion with [`CpuMesh::refit`]: a BVH
    /// that keeps its binary tree ([`WideBvh::refittable`]).
    pub fn refittable(mesh: &Mesh) -> Self {
        CpuMesh::Bvh(WideBvh::refittable(Bvh::build(mesh)))
    }

    /// Moves the mesh to `mesh`'s vertex positions (same triangles): brute force
    /// packs the triangles again; a BVH made by [`CpuMesh::refittable`] is refitted,
    /// or built again when a triangle left out as degenerate can now be hit
    /// ([`Refitted::Rebuilt`]).
    pub fn refit(&mut self, mesh: &Mesh) -> Result<Refitted, RefitError> {
        if mesh.triangle_count() != self.triangle_count() {
            return Err(RefitError::TriangleCount {
                mesh: mesh.triangle_count(),
                tree: self.triangle_count(),
            });
        }
        match self {
            CpuMesh::Brute(blocks) => {
                *blocks = TriangleBlocks::new(&pack_mesh(mesh));
                Ok(Refitted::Refit)
            }
            CpuMesh::Bvh(wide) => match wide.refit(mesh) {
                Ok(()) => Ok(Refitted::Refit),
                Err(RefitError::NoLeafFor(_)) => {
                    *wide = WideBvh::refittable(Bvh::build(mesh));
                    Ok(Refitted::Rebuilt)
                }
                Err(e) => Err(e),
            },
        }
    }
}
