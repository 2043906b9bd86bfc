//! The one shape every mesh loader produces: f64 positions and triangle indices.
//!
//! Each format reads its coordinates at the precision it stores them (PLY `double`,
//! OBJ text as f64, glTF and binary STL as f32 widened exactly), and
//! [`LoadedMesh::into_mesh`] is the single place where they become a [`Mesh`].

use std::path::Path;

use glam::{DVec3, Vec3};

use super::errors::format_error;
use crate::error::Result;
use crate::mesh::Mesh;

/// A triangle mesh as read from a file, before it becomes a [`Mesh`].
///
/// Triangle `k` is `indices[k]`, in the order of `docs/contracts.md` §2 (file order,
/// polygons fan-triangulated). Loaders only hand out meshes whose indices are in range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedMesh {
    /// Vertex positions at the precision the file holds them.
    pub positions: Vec<[f64; 3]>,
    /// Triangles as indices into `positions`.
    pub indices: Vec<[u32; 3]>,
}

impl LoadedMesh {
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.indices.len()
    }

    /// The three vertices of every triangle, in triangle-id order.
    ///
    /// # Panics
    /// If an index is out of range (never for a mesh a loader returned).
    pub fn triangles(&self) -> impl ExactSizeIterator<Item = [[f64; 3]; 3]> + '_ {
        self.indices
            .iter()
            .map(|tri| tri.map(|i| self.positions[i as usize]))
    }

    /// The mesh the pickers take: positions rounded to the nearest f32.
    ///
    /// Fails with [`crate::Error::TooManyTriangles`] past the 32-bit triangle id range.
    pub fn into_mesh(self) -> Result<Mesh> {
        let positions = self
            .positions
            .iter()
            .map(|p| Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32))
            .collect();
        Mesh::new(positions, self.indices)
    }

    /// The mesh the pickers take, stored relative to a mesh-local f64 origin
    /// ([`Mesh::from_f64`]): coordinates far from the world origin keep their
    /// precision. Meshes whose bounds contain the origin get origin zero and equal
    /// [`LoadedMesh::into_mesh`].
    pub fn into_rebased_mesh(self) -> Result<Mesh> {
        let positions: Vec<DVec3> = self.positions.iter().map(|&p| DVec3::from(p)).collect();
        Mesh::from_f64(&positions, self.indices)
    }

    /// The index the next pushed vertex gets, or a format error naming `path` when
    /// 32-bit indices cannot address it.
    pub(crate) fn next_index(&self, path: &Path) -> Result<u32> {
        u32::try_from(self.positions.len())
            .map_err(|_| format_error(path, "more vertices than 32-bit indices can address"))
    }

    /// Appends the polygon `corners` (indices into `positions`) fan-triangulated from
    /// its first corner: `a b c d` gives `a b c`, `a c d`. Fewer than three corners
    /// give no triangle.
    pub(crate) fn push_fan(&mut self, corners: &[u32]) {
        if let Some((&first, rest)) = corners.split_first() {
            self.indices
                .extend(rest.windows(2).map(|pair| [first, pair[0], pair[1]]));
        }
    }

    /// Checks that every index names a vertex; the error names `path`, the triangle
    /// and the bad index.
    pub(crate) fn check_indices(&self, path: &Path) -> Result<()> {
        let vertices = self.positions.len();
        for (triangle, tri) in self.indices.iter().enumerate() {
            if let Some(&index) = tri.iter().find(|&&i| i as usize >= vertices) {
                return Err(format_error(
                    path,
                    format!(
                        "triangle {triangle} uses vertex {index}, but the file has {vertices} \
                         vertices"
                    ),
                ));
            }
        }
        Ok(())
    }
}
