//! Bottom-level structures: one BVH per mesh, built once and shared by every
//! instance of the mesh.

use std::sync::OnceLock;

use glam::{DVec3, Vec3};

use crate::Mesh;
use crate::bvh::Bvh;
use crate::cpu::wide_bvh::WideBvh;
use crate::cpu::wide_nodes::WideNodes;
use crate::types::PackedTriangle;

/// A mesh's BVH in its layouts: the binary one (built first, and what a ray the
/// GPU leaves unfinished is finished with), the CPU's 8-wide one, and the GPU's
/// eight-wide nodes, made when first needed (same boxes, same triangles, same
/// answers).
#[derive(Debug)]
pub struct Blas {
    bvh: Bvh,
    wide: WideBvh,
    /// The GPU's eight-wide layout of `bvh`, made the first time a scene of the mesh
    /// is uploaded to a GPU or traced by the traversal mirror.
    gpu_wide: OnceLock<WideNodes>,
    /// Position in `bvh.triangles()` of each triangle id (`u32::MAX`: degenerate).
    slots: Vec<u32>,
}

impl Blas {
    /// Builds the BVH of `mesh` (in parallel on rayon's pool).
    pub fn build(mesh: &Mesh) -> Self {
        Self::from_bvh(Bvh::build(mesh))
    }

    /// Wraps a BVH already built.
    pub fn from_bvh(bvh: Bvh) -> Self {
        let mut slots = vec![u32::MAX; bvh.mesh_triangle_count()];
        for (slot, tri) in bvh.triangles().iter().enumerate() {
            if let Some(s) = slots.get_mut(tri.id as usize) {
                *s = slot as u32;
            }
        }
        Self {
            wide: WideBvh::from_bvh(&bvh),
            gpu_wide: OnceLock::new(),
            bvh,
            slots,
        }
    }

    /// The binary BVH.
    pub fn bvh(&self) -> &Bvh {
        &self.bvh
    }

    /// The CPU's wide BVH.
    pub(crate) fn wide(&self) -> &WideBvh {
        &self.wide
    }

    /// The GPU's eight-wide nodes of the BVH (same boxes, same triangles), made on
    /// first use.
    pub(crate) fn gpu_wide(&self) -> &WideNodes {
        self.gpu_wide.get_or_init(|| WideNodes::from_bvh(&self.bvh))
    }

    /// Triangles of the mesh (degenerate ones included).
    pub fn triangle_count(&self) -> usize {
        self.bvh.mesh_triangle_count()
    }

    /// Object-space bounds (padded), or `None` when nothing can be hit.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        self.bvh.bounds()
    }

    /// Triangle `id` as the kernels read it, if it can be hit.
    pub(crate) fn triangle(&self, id: u32) -> Option<&PackedTriangle> {
        let slot = *self.slots.get(id as usize)?;
        self.bvh.triangles().get(slot as usize)
    }

    /// Geometric normal `cross(v1 - v0, v2 - v0)` of triangle `id` in f64 (zero if it
    /// cannot be hit).
    pub(crate) fn normal(&self, id: u32) -> DVec3 {
        self.triangle(id).map_or(DVec3::ZERO, |t| {
            let (v0, v1, v2) = (t.v0.as_dvec3(), t.v1.as_dvec3(), t.v2.as_dvec3());
            (v1 - v0).cross(v2 - v0)
        })
    }
}
