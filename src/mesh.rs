//! Triangle meshes as the caller hands them to raypick.

use glam::Vec3;

use crate::error::{Error, Result};

/// An indexed triangle mesh. Triangle `k` is `indices[k]`; its id in hits is `k`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    positions: Vec<Vec3>,
    indices: Vec<[u32; 3]>,
}

impl Mesh {
    /// A mesh from vertex positions and triangle indices.
    ///
    /// Fails if an index refers to a vertex that does not exist, or if there are
    /// more triangles than a 32-bit triangle id can name. Degenerate triangles
    /// (zero area, non-finite coordinates) are accepted and never hit.
    pub fn new(positions: Vec<Vec3>, indices: Vec<[u32; 3]>) -> Result<Self> {
        if indices.len() >= crate::MISS as usize {
            return Err(Error::TooManyTriangles(indices.len()));
        }
        for (triangle, tri) in indices.iter().enumerate() {
            if let Some(&index) = tri.iter().find(|&&i| i as usize >= positions.len()) {
                return Err(Error::IndexOutOfRange {
                    triangle,
                    index,
                    vertices: positions.len(),
                });
            }
        }
        Ok(Self { positions, indices })
    }

    /// A mesh from a triangle soup (three vertices per triangle, no sharing).
    pub fn from_triangles(triangles: &[[Vec3; 3]]) -> Self {
        let positions = triangles.iter().flatten().copied().collect();
        let indices = (0..triangles.len() as u32)
            .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
            .collect();
        Self { positions, indices }
    }

    /// Vertex positions.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Triangle indices.
    pub fn indices(&self) -> &[[u32; 3]] {
        &self.indices
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.indices.len()
    }

    /// Whether the mesh has no triangles.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The three vertices of triangle `k`.
    ///
    /// # Panics
    /// If `k >= self.triangle_count()`.
    pub fn triangle(&self, k: usize) -> [Vec3; 3] {
        self.indices[k].map(|i| self.positions[i as usize])
    }

    /// Iterator over all triangles in id order.
    pub fn triangles(&self) -> impl ExactSizeIterator<Item = [Vec3; 3]> + '_ {
        (0..self.indices.len()).map(|k| self.triangle(k))
    }

    /// Axis-aligned bounds of all finite vertices used by triangles, or `None` if there are none.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for p in self
            .indices
            .iter()
            .flatten()
            .map(|&i| self.positions[i as usize])
        {
            if p.is_finite() {
                lo = lo.min(p);
                hi = hi.max(p);
            }
        }
        (lo.x <= hi.x).then_some((lo, hi))
    }
}
