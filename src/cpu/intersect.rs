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

/// A determinant within `DET_TOLERANCE · |e1|₁ · |e2|₁ · |d|₁` of zero counts as zero
/// (the ray is parallel to the triangle). The bound covers the rounding error of the
/// determinant, so its sign is reliable whenever a hit is reported and near-parallel
/// rays cannot produce hits far from the triangle. `2^-20`.
pub const DET_TOLERANCE: f32 = 9.536_743e-7;

/// Whether a determinant passes the parallel test and the culling mode
/// (`crate::Cull::to_u32`); `det_bound` is `|e1|₁ · |e2|₁ · |d|₁`. Degenerate
/// triangles (bound and determinant zero) always fail.
#[inline(always)]
pub fn det_passes(det: f32, det_bound: f32, cull: u32) -> bool {
    let tolerance = DET_TOLERANCE * det_bound;
    match cull {
        1 => det > tolerance,
        2 => det < -tolerance,
        _ => det.abs() > tolerance,
    }
}

/// `|d|₁` of a ray direction, the ray's part of the determinant bound.
#[inline(always)]
pub fn dir_norm(ray: &Ray) -> f32 {
    ray.dir.abs().element_sum()
}

/// The products of one ray–triangle test, before normalisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unnormalised {
    /// `e1 · (d × e2)`.
    pub det: f32,
    /// `|e1|₁ · |e2|₁ · |d|₁`, which scales the determinant tolerance.
    pub det_bound: f32,
    /// `s · p`, i.e. `u * det`.
    pub big_u: f32,
    /// `d · q`, i.e. `v * det`.
    pub big_v: f32,
    /// `e2 · q`, i.e. `t * det`.
    pub big_t: f32,
}

/// Möller–Trumbore on scalars, in the order of `intersect.wgsl`:
/// `p = d × e2`, `det = e1·p`, `s = o − v0`, `U = s·p`, `q = s × e1`, `V = d·q`,
/// `T = e2·q`. Dot products sum left to right; every product is rounded on its own
/// (Rust never fuses into FMA).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn intersect_lane(
    [ox, oy, oz]: [f32; 3],
    [dx, dy, dz]: [f32; 3],
    dir_norm: f32,
    [v0x, v0y, v0z]: [f32; 3],
    [e1x, e1y, e1z]: [f32; 3],
    edge_norm: f32,
    [e2x, e2y, e2z]: [f32; 3],
) -> Unnormalised {
    let px = dy * e2z - dz * e2y;
    let py = dz * e2x - dx * e2z;
    let pz = dx * e2y - dy * e2x;
    let det = e1x * px + e1y * py + e1z * pz;
    let sx = ox - v0x;
    let sy = oy - v0y;
    let sz = oz - v0z;
    let big_u = sx * px + sy * py + sz * pz;
    let qx = sy * e1z - sz * e1y;
    let qy = sz * e1x - sx * e1z;
    let qz = sx * e1y - sy * e1x;
    let big_v = dx * qx + dy * qy + dz * qz;
    let big_t = e2x * qx + e2y * qy + e2z * qz;
    Unnormalised {
        det,
        det_bound: edge_norm * dir_norm,
        big_u,
        big_v,
        big_t,
    }
}

/// Normalises and applies the acceptance test of `intersect.wgsl`: returns
/// `(t, u, v, accepted)`. Inside-the-triangle decisions use the unnormalised values
/// (signs flipped when `det < 0`); every comparison rejects NaN.
#[inline(always)]
pub fn accept(n: Unnormalised, ray: &Ray, cull: u32, best_t: f32) -> (f32, f32, f32, bool) {
    let inv_det = 1.0 / n.det;
    let t = n.big_t * inv_det;
    let sign = if n.det > 0.0 { 1.0 } else { -1.0 };
    let inside = (n.big_u * sign >= 0.0)
        & (n.big_v * sign >= 0.0)
        & ((n.big_u + n.big_v) * sign <= n.det * sign);
    let accepted = det_passes(n.det, n.det_bound, cull)
        & inside
        & (t >= ray.tmin)
        & (t <= ray.tmax)
        & (t < best_t);
    (t, n.big_u * inv_det, n.big_v * inv_det, accepted)
}

/// Tests one ray against one packed triangle (the scalar form of the kernel).
/// `dir_norm` is [`dir_norm`] of the ray, computed once per ray.
#[inline]
pub fn intersect(
    ray: &Ray,
    dir_norm: f32,
    tri: &PackedTriangle,
    cull: u32,
    best_t: f32,
) -> Candidate {
    let n = intersect_lane(
        ray.origin.into(),
        ray.dir.into(),
        dir_norm,
        tri.v0.into(),
        tri.e1.into(),
        tri.edge_norm,
        tri.e2.into(),
    );
    let (t, u, v, accepted) = accept(n, ray, cull, best_t);
    Candidate { t, u, v, accepted }
}

/// `N` packed triangles as structure of arrays (x, y, z rows of `v0`, `e1`, `e2`),
/// the layout the SIMD kernels test one ray against. Unused lanes are zero, i.e.
/// degenerate, and never hit.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct SoaTriangles<const N: usize> {
    v0: [[f32; N]; 3],
    e1: [[f32; N]; 3],
    e2: [[f32; N]; 3],
    edge_norm: [f32; N],
}

impl<const N: usize> Default for SoaTriangles<N> {
    fn default() -> Self {
        Self {
            v0: [[0.0; N]; 3],
            e1: [[0.0; N]; 3],
            e2: [[0.0; N]; 3],
            edge_norm: [0.0; N],
        }
    }
}

impl<const N: usize> SoaTriangles<N> {
    /// Lays `triangles` (at most `N`) out in lanes `0..triangles.len()`.
    pub fn new(triangles: &[PackedTriangle]) -> Self {
        let mut soa = Self::default();
        for (lane, tri) in triangles.iter().take(N).enumerate() {
            for axis in 0..3 {
                soa.v0[axis][lane] = tri.v0[axis];
                soa.e1[axis][lane] = tri.e1[axis];
                soa.e2[axis][lane] = tri.e2[axis];
            }
            soa.edge_norm[lane] = tri.edge_norm;
        }
        soa
    }

    /// [`intersect_lane`] for the triangle in `lane`; `o`, `d` and `d_norm` are the
    /// ray's origin, direction and [`dir_norm`].
    #[inline(always)]
    pub fn intersect(&self, lane: usize, o: [f32; 3], d: [f32; 3], d_norm: f32) -> Unnormalised {
        let column = |rows: &[[f32; N]; 3]| [rows[0][lane], rows[1][lane], rows[2][lane]];
        intersect_lane(
            o,
            d,
            d_norm,
            column(&self.v0),
            column(&self.e1),
            self.edge_norm[lane],
            column(&self.e2),
        )
    }
}
