//! Triangle meshes as the caller hands them to raypick.

use glam::{DVec3, Vec3};

use crate::error::{Error, Result};
use crate::types::Hit;
use crate::world::{local_origin, world_point};

/// An indexed triangle mesh. Triangle `k` is `indices[k]`; its id in hits is `k`.
///
/// Vertices are f32 values relative to an f64 [`Mesh::origin`] (zero unless the mesh
/// was made with [`Mesh::from_f64`] or [`Mesh::with_origin`]): a mesh far from the
/// world origin keeps f32 precision relative to its own size (see [`Ray64`](crate::Ray64)).
/// [`Mesh::positions`], [`Mesh::triangle`] and [`Mesh::bounds`] are in that local
/// frame; [`Picker`](crate::Picker) moves rays into it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    positions: Vec<Vec3>,
    indices: Vec<[u32; 3]>,
    origin: DVec3,
}

impl Mesh {
    /// A mesh from vertex positions and triangle indices.
    ///
    /// Fails if an index refers to a vertex that does not exist, or if there are
    /// more triangles than a 32-bit triangle id can name. Degenerate triangles
    /// (zero area, non-finite coordinates) are accepted and never hit.
    pub fn new(positions: Vec<Vec3>, indices: Vec<[u32; 3]>) -> Result<Self> {
        check_indices(&indices, positions.len())?;
        Ok(Self {
            positions,
            indices,
            origin: DVec3::ZERO,
        })
    }

    /// A mesh from a flat index buffer (three indices per triangle), as graphics APIs
    /// hold them.
    ///
    /// Fails with [`Error::IndexCount`] when the buffer's length is not a multiple of 3,
    /// and like [`Mesh::new`] otherwise.
    pub fn from_flat_indices(positions: Vec<Vec3>, indices: &[u32]) -> Result<Self> {
        if !indices.len().is_multiple_of(3) {
            return Err(Error::IndexCount(indices.len()));
        }
        let triangles = indices
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        Self::new(positions, triangles)
    }

    /// A mesh from f64 world positions, stored relative to a mesh-local origin chosen
    /// by `local_origin` (a point on a power-of-two grid) from the bounds of the vertices that
    /// triangles use (leaving out non-finite ones and those beyond the range of f32).
    /// Each position is moved in f64, then rounded to f32; a triangle with a vertex
    /// that does not fit f32 in the local frame is degenerate and never hits.
    ///
    /// Shifting `positions` (and the rays traced against the mesh) by a multiple of
    /// the origin's grid step gives bit-identical hits; the exact guarantee is in
    /// [`Ray64`](crate::Ray64). Fails like [`Mesh::new`].
    pub fn from_f64(positions: &[DVec3], indices: Vec<[u32; 3]>) -> Result<Self> {
        check_indices(&indices, positions.len())?;
        let origin =
            world_bounds(positions, &indices).map_or(DVec3::ZERO, |(lo, hi)| local_origin(lo, hi));
        Ok(Self {
            positions: positions.iter().map(|p| (*p - origin).as_vec3()).collect(),
            indices,
            origin,
        })
    }

    /// A mesh from f32 positions that are already relative to `origin`.
    ///
    /// Fails like [`Mesh::new`], or with [`Error::Unsupported`] for a non-finite origin.
    pub fn with_origin(
        positions: Vec<Vec3>,
        indices: Vec<[u32; 3]>,
        origin: DVec3,
    ) -> Result<Self> {
        if !origin.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "a mesh origin must be finite, got {origin}"
            )));
        }
        let mut mesh = Self::new(positions, indices)?;
        mesh.origin = origin;
        Ok(mesh)
    }

    /// The f64 world position of the local frame's zero: world = origin + local.
    pub fn origin(&self) -> DVec3 {
        self.origin
    }

    /// A local position in f64 world coordinates.
    pub fn to_world(&self, local: Vec3) -> DVec3 {
        self.origin + local.as_dvec3()
    }

    /// The world-space point of a hit on this mesh,
    /// `origin + (1-u-v)*v0 + u*v1 + v*v2` in f64, or `None` for a miss or a
    /// triangle id the mesh does not have.
    pub fn hit_point(&self, hit: &Hit) -> Option<DVec3> {
        let k = hit.prim as usize;
        (k < self.indices.len())
            .then(|| world_point(self.origin, self.triangle(k), hit))
            .flatten()
    }

    /// A mesh from a triangle soup (three vertices per triangle, no sharing).
    pub fn from_triangles(triangles: &[[Vec3; 3]]) -> Self {
        let positions = triangles.iter().flatten().copied().collect();
        let indices = (0..triangles.len() as u32)
            .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
            .collect();
        Self {
            positions,
            indices,
            origin: DVec3::ZERO,
        }
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

    /// Axis-aligned bounds of all finite vertices used by triangles, in the local frame,
    /// or `None` if there are none.
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

/// Checks the triangle count and that every index names one of `vertices` vertices.
fn check_indices(indices: &[[u32; 3]], vertices: usize) -> Result<()> {
    if indices.len() >= crate::types::MISS as usize {
        return Err(Error::TooManyTriangles(indices.len()));
    }
    for (triangle, tri) in indices.iter().enumerate() {
        if let Some(&index) = tri.iter().find(|&&i| i as usize >= vertices) {
            return Err(Error::IndexOutOfRange {
                triangle,
                index,
                vertices,
            });
        }
    }
    Ok(())
}

/// f64 bounds of the positions that triangles use (indices must be in range), leaving
/// out those with a coordinate that is not finite or beyond the range of f32 (a
/// garbage vertex must not pull the origin away from the rest of the mesh).
fn world_bounds(positions: &[DVec3], indices: &[[u32; 3]]) -> Option<(DVec3, DVec3)> {
    let mut lo = DVec3::splat(f64::INFINITY);
    let mut hi = DVec3::splat(f64::NEG_INFINITY);
    for p in indices.iter().flatten().map(|&i| positions[i as usize]) {
        if p.is_finite() && p.abs().max_element() <= f64::from(f32::MAX) {
            lo = lo.min(p);
            hi = hi.max(p);
        }
    }
    (lo.x <= hi.x).then_some((lo, hi))
}
