//! The ray–triangle test, operation for operation the same as `shaders/intersect.wgsl`.
//!
//! The arithmetic lives in [`intersect_lane`], on plain `f32` scalars, so the block
//! kernel in [`super::brute_force`] can call it once per SIMD lane and the compiler
//! vectorises the loop, while the scalar [`intersect`] calls the very same code.

use crate::types::{PackedTriangle, Ray};

/// The unnormalised result of one ray–triangle test (before acceptance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Ray parameter.
    pub t: f32,
    /// Barycentric weight of `v1`.
    pub u: f32,
    /// Barycentric weight of `v2`.
    pub v: f32,
    /// Whether the hit passes culling, the barycentric range, the ray interval and
    /// is strictly nearer than the best hit so far.
    pub accepted: bool,
}

/// Whether a determinant passes the culling mode (`crate::Cull::to_u32`).
/// Zero always fails, so parallel rays and degenerate triangles never hit.
#[inline(always)]
pub fn det_passes(det: f32, cull: u32) -> bool {
    match cull {
        1 => det > 0.0,
        2 => det < 0.0,
        _ => det != 0.0,
    }
}

/// Möller–Trumbore on scalars: returns `(det, t, u, v)`.
///
/// `p = d × e2`, `det = e1·p`, `s = o − v0`, `u = (s·p)/det`, `q = s × e1`,
/// `v = (d·q)/det`, `t = (e2·q)/det` — with `1/det` computed once.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn intersect_lane(
    [ox, oy, oz]: [f32; 3],
    [dx, dy, dz]: [f32; 3],
    [v0x, v0y, v0z]: [f32; 3],
    [e1x, e1y, e1z]: [f32; 3],
    [e2x, e2y, e2z]: [f32; 3],
) -> (f32, f32, f32, f32) {
    let px = dy * e2z - dz * e2y;
    let py = dz * e2x - dx * e2z;
    let pz = dx * e2y - dy * e2x;
    let det = e1x * px + e1y * py + e1z * pz;
    let inv_det = 1.0 / det;
    let sx = ox - v0x;
    let sy = oy - v0y;
    let sz = oz - v0z;
    let u = (sx * px + sy * py + sz * pz) * inv_det;
    let qx = sy * e1z - sz * e1y;
    let qy = sz * e1x - sx * e1z;
    let qz = sx * e1y - sy * e1x;
    let v = (dx * qx + dy * qy + dz * qz) * inv_det;
    let t = (e2x * qx + e2y * qy + e2z * qz) * inv_det;
    (det, t, u, v)
}

/// The acceptance test of `intersect.wgsl`; every comparison rejects NaN.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn accepts(det: f32, t: f32, u: f32, v: f32, ray: &Ray, cull: u32, best_t: f32) -> bool {
    det_passes(det, cull)
        & (u >= 0.0)
        & (v >= 0.0)
        & (u + v <= 1.0)
        & (t >= ray.tmin)
        & (t <= ray.tmax)
        & (t < best_t)
}

/// Tests one ray against one packed triangle (the scalar form of the kernel).
#[inline]
pub fn intersect(ray: &Ray, tri: &PackedTriangle, cull: u32, best_t: f32) -> Candidate {
    let (det, t, u, v) = intersect_lane(
        ray.origin.into(),
        ray.dir.into(),
        tri.v0.into(),
        tri.e1.into(),
        tri.e2.into(),
    );
    Candidate {
        t,
        u,
        v,
        accepted: accepts(det, t, u, v, ray, cull, best_t),
    }
}
