//! Host-side preparation shared by both backends: triangles are packed into the form
//! the kernels read, and invalid rays are turned into rays that can never hit.
//!
//! Doing this once on the host, in one place, is what lets the CPU and GPU kernels
//! stay branch-free on bad input and still agree exactly.

use glam::{DVec3, Vec3};

use crate::types::{PackedTriangle, Ray};

/// Packs triangle `id`: its vertices unchanged, and `edge_norm = |e1|₁ · |e2|₁`
/// (`e1 = v1 - v0`, `e2 = v2 - v0` in f32, as the fast test computes them) for the
/// determinant tolerance.
///
/// Degenerate triangles — a non-finite coordinate or edge, or edges whose cross
/// product is exactly zero — become all zeros, whose determinant is exactly zero for
/// every ray, so they never hit. The cross product is evaluated in f64, where each
/// product of two f32 values is exact, so the zero test is exact.
pub fn pack_triangle(vertices: [Vec3; 3], id: u32) -> PackedTriangle {
    if !hittable(vertices) {
        return PackedTriangle {
            id,
            ..Default::default()
        };
    }
    pack_hittable(vertices, id)
}

/// Whether a triangle with these vertices can ever be hit, the rule of
/// [`pack_triangle`]: every coordinate and edge finite, and the edges' cross
/// product not exactly zero (in f64, where each product of two f32 values is
/// exact). A build that needs only the answer and the box asks this rather than
/// packing the triangle.
#[inline(always)]
pub(crate) fn hittable([v0, v1, v2]: [Vec3; 3]) -> bool {
    let (e1, e2) = (v1 - v0, v2 - v0);
    v0.is_finite() && e1.is_finite() && e2.is_finite() && e1.as_dvec3().cross(e2.as_dvec3()) != DVec3::ZERO
}

/// [`pack_triangle`] of a triangle known to be [`hittable`]: the checks left out.
#[inline(always)]
pub(crate) fn pack_hittable([v0, v1, v2]: [Vec3; 3], id: u32) -> PackedTriangle {
    let (e1, e2) = (v1 - v0, v2 - v0);
    PackedTriangle {
        v0,
        id,
        v1,
        edge_norm: (e1.abs().element_sum() * e2.abs().element_sum()).min(f32::MAX),
        v2,
        ..Default::default()
    }
}

/// Whether a packed triangle can ever be hit: [`pack_triangle`] zeroes the vertices
/// of degenerate ones, and any other has `v1 != v0` (its edge `e1` is non-zero).
pub fn is_hittable(tri: &PackedTriangle) -> bool {
    tri.v1 != tri.v0
}

/// Packs every triangle of a mesh in id order.
pub fn pack_mesh(mesh: &crate::Mesh) -> Vec<PackedTriangle> {
    mesh.triangles()
        .enumerate()
        .map(|(k, tri)| pack_triangle(tri, k as u32))
        .collect()
}

/// The ray every invalid ray is replaced with: a zero direction, so every
/// determinant is exactly zero and nothing is hit.
pub const DEAD_RAY: Ray = Ray {
    origin: Vec3::ZERO,
    tmin: 0.0,
    dir: Vec3::ZERO,
    tmax: 0.0,
};

/// Whether a ray is valid. Invalid: a non-finite origin or direction, a zero
/// direction, a NaN bound or `tmin > tmax`. Infinite bounds are valid.
#[inline]
pub fn is_valid_ray(ray: &Ray) -> bool {
    ray.origin.is_finite() && ray.dir.is_finite() && ray.dir != Vec3::ZERO && ray.tmin <= ray.tmax // false for NaN bounds
}

/// Returns the ray unchanged if it is valid ([`is_valid_ray`]), else [`DEAD_RAY`].
#[inline]
pub fn sanitize_ray(ray: &Ray) -> Ray {
    if is_valid_ray(ray) { *ray } else { DEAD_RAY }
}
