//! An f64 reference intersector for tests, fixtures and tools: the same
//! Möller–Trumbore formulas as the kernels, evaluated in double precision from the
//! f32 inputs (or from f64 world coordinates: [`intersect_world`],
//! [`nearest_world`]), with no culling.

use glam::{DVec3, Vec3};

use crate::{Mesh, Ray, Ray64};

/// A hit found in f64: ray parameter and barycentric weights of `v1` and `v2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HitF64 {
    /// Ray parameter (any sign).
    pub t: f64,
    /// Barycentric weight of `v1`.
    pub u: f64,
    /// Barycentric weight of `v2`.
    pub v: f64,
}

/// Intersects the line of `ray` with a triangle in f64, accepting barycentric
/// coordinates up to `slack` outside the triangle. `None` when the line is parallel
/// to the triangle's plane, the triangle is degenerate or the point is outside.
pub fn intersect_f64(ray: &Ray, [v0, v1, v2]: [Vec3; 3], slack: f64) -> Option<HitF64> {
    let (o, d) = (ray.origin.as_dvec3(), ray.dir.as_dvec3());
    intersect_lines(
        o,
        d,
        v0.as_dvec3(),
        (v1 - v0).as_dvec3(),
        (v2 - v0).as_dvec3(),
        slack,
    )
}

/// [`intersect_f64`] for an f64 ray and f64 vertices (world coordinates, edges taken
/// in f64).
pub fn intersect_world(ray: &Ray64, [v0, v1, v2]: [DVec3; 3], slack: f64) -> Option<HitF64> {
    intersect_lines(ray.origin, ray.dir, v0, v1 - v0, v2 - v0, slack)
}

/// The line `o + t*d` against the triangle `v0, v0 + e1, v0 + e2`.
fn intersect_lines(
    o: DVec3,
    d: DVec3,
    v0: DVec3,
    e1: DVec3,
    e2: DVec3,
    slack: f64,
) -> Option<HitF64> {
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let s = o - v0;
    let u = s.dot(p) / det;
    let q = s.cross(e1);
    let v = d.dot(q) / det;
    let t = e2.dot(q) / det;
    (u >= -slack && v >= -slack && u + v <= 1.0 + slack).then_some(HitF64 { t, u, v })
}

/// The nearest hit of `ray` in its `[tmin, tmax]` over all triangles of `mesh`, in
/// f64, ties to the lowest triangle id; `(triangle id, hit)`.
pub fn nearest_f64(mesh: &Mesh, ray: &Ray) -> Option<(u32, HitF64)> {
    let (tmin, tmax) = (ray.tmin as f64, ray.tmax as f64);
    let mut best: Option<(u32, HitF64)> = None;
    for (k, tri) in mesh.triangles().enumerate() {
        if let Some(hit) = intersect_f64(ray, tri, 0.0)
            && hit.t >= tmin
            && hit.t <= tmax
            && best.is_none_or(|(_, b)| hit.t < b.t)
        {
            best = Some((k as u32, hit));
        }
    }
    best
}

/// [`nearest_f64`] in f64 world coordinates: the nearest hit of `ray` in its
/// `[tmin, tmax]` over the triangles `indices` of `positions`, ties to the lowest id.
///
/// # Panics
/// If an index is out of range.
pub fn nearest_world(
    positions: &[DVec3],
    indices: &[[u32; 3]],
    ray: &Ray64,
) -> Option<(u32, HitF64)> {
    let mut best: Option<(u32, HitF64)> = None;
    for (k, tri) in indices.iter().enumerate() {
        let tri = tri.map(|i| positions[i as usize]);
        if let Some(hit) = intersect_world(ray, tri, 0.0)
            && hit.t >= ray.tmin
            && hit.t <= ray.tmax
            && best.is_none_or(|(_, b)| hit.t < b.t)
        {
            best = Some((k as u32, hit));
        }
    }
    best
}
