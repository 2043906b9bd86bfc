//! An f64 reference intersector for tests, fixtures and tools: the same
//! Möller–Trumbore formulas as the kernels, evaluated in double precision from the
//! f32 inputs (or from f64 world coordinates: [`intersect_world`],
//! [`nearest_world`]), with no culling.

use glam::{DVec3, Vec3};

use raypick::{Mesh, Ray, Ray64};

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

/// Unit roundoff of `f32`: `2^-24`.
const EPS_F32: f64 = 5.960_464_477_539_063e-8;

/// The smallest positive subnormal `f32`, `2^-149`: the absolute rounding error of a
/// product that underflows.
const ETA_F32: f64 = 1.401_298_464_324_817e-45;

/// How many rounding errors of the unit size the tolerance model allows (the kernels
/// take a few dozen rounding steps; this is a generous count).
pub const TOLERANCE_STEPS: f64 = 64.0;

/// How far an `f32` kernel's answer may stray from the f64 one for one ray and one
/// triangle ([`kernel_tolerance`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Allowed error of `u`, `v` and `1 - u - v` (also how far outside the triangle
    /// an accepted hit may be, in barycentric units).
    pub bary: f64,
    /// Allowed error of `t` beyond its own rounding (see [`Tolerance::t_error`]).
    pub t_scale: f64,
    /// Allowed absolute error of `t` from products that underflow: `t·det` is cubic
    /// in the triangle's reach, so it underflows long before `det` does.
    pub t_floor: f64,
}

impl Tolerance {
    /// Allowed `|t_f32 - t_f64|` for a hit whose f64 parameter is `t`.
    pub fn t_error(&self, t: f64) -> f64 {
        self.bary * (self.t_scale + t.abs())
            + TOLERANCE_STEPS * (EPS_F32 * t.abs() + ETA_F32)
            + self.t_floor
    }
}

/// The tolerance model of the `f32` kernels (both modes) for `ray` and a triangle.
///
/// With `A = max_i |v_i - o|∞` (how far the triangle reaches from the origin),
/// `D = |d|∞` and the f64 determinant `det = e1 · (d × e2)`, every unnormalised value
/// of either test (`det`, `u·det`, `v·det`, `t·det`; the watertight test's are those
/// divided by the dominant direction component, which it divides out again) is a sum
/// of products of terms bounded by `A` and `D`, each rounded a few times. Their
/// absolute error is at most `k · (ε A² D + η (A + 1)(D + 1))` for `ε = 2^-24`,
/// `η = 2^-149` (products that underflow) and a small count `k`
/// ([`TOLERANCE_STEPS`] is generous). Divided by `|det|` this bounds the error of
/// `u` and `v` ([`Tolerance::bary`]); `t` is a ratio of such values whose numerator
/// is up to `A / D` times larger, hence [`Tolerance::t_scale`] `= A / D`. The
/// numerator `t·det` is a sum of products of three terms bounded by `A`, so on tiny
/// geometry it underflows even where `det` does not: its absolute error
/// `2k · η (A + 1)` (in the tests' frame, where the direction's scale cancels),
/// divided by `|det|`, is [`Tolerance::t_floor`].
///
/// Where f64 sees no determinant at all (exactly parallel or underflowed), the
/// bounds are infinite: the model then only requires a hit to be finite and inside
/// the ray interval.
pub fn kernel_tolerance(ray: &Ray, [v0, v1, v2]: [Vec3; 3]) -> Tolerance {
    let (o, d) = (ray.origin.as_dvec3(), ray.dir.as_dvec3());
    let reach = [v0, v1, v2]
        .iter()
        .map(|v| (v.as_dvec3() - o).abs().max_element())
        .fold(0.0, f64::max);
    let dmax = d.abs().max_element();
    let (e1, e2) = ((v1 - v0).as_dvec3(), (v2 - v0).as_dvec3());
    let det = e1.dot(d.cross(e2)).abs();
    let error = EPS_F32 * reach * reach * dmax + ETA_F32 * (reach + 1.0) * (dmax + 1.0);
    let (bary, t_floor) = if det > 0.0 && det.is_finite() {
        // The watertight test divides by the dominant direction component (at
        // most 2 in its frame): hence the 2.
        let underflow = 2.0 * ETA_F32 * (reach + 1.0);
        (
            TOLERANCE_STEPS * error / det,
            TOLERANCE_STEPS * underflow / det,
        )
    } else {
        (f64::INFINITY, f64::INFINITY)
    };
    Tolerance {
        bary,
        t_scale: reach / dmax,
        t_floor,
    }
}

/// The f64 ray interval `[entry, exit]` through the triangle's padded box (the box
/// the kernels clamp `t` into, `cpu::intersect::place`), over the axes the ray is
/// not parallel to; `None` when it is empty.
pub fn padded_box_interval(ray: &Ray, triangle: [Vec3; 3]) -> Option<(f64, f64)> {
    let (lo, hi) = raypick::bvh::vertices_box(triangle);
    let (o, d) = (ray.origin.as_dvec3(), ray.dir.as_dvec3());
    let (mut entry, mut exit) = (f64::NEG_INFINITY, f64::INFINITY);
    for axis in (0..3).filter(|&axis| d[axis] != 0.0) {
        let t0 = (lo.as_dvec3()[axis] - o[axis]) / d[axis];
        let t1 = (hi.as_dvec3()[axis] - o[axis]) / d[axis];
        entry = entry.max(t0.min(t1));
        exit = exit.min(t0.max(t1));
    }
    (entry <= exit).then_some((entry, exit))
}

/// Checks a hit `(t, u, v)` that an `f32` kernel reported for `ray` and a triangle
/// against the f64 reference and [`kernel_tolerance`]: `t`, `u`, `v` finite, `t` in
/// the ray's `[tmin, tmax]`, the f64 barycentrics inside the triangle within the
/// tolerance, and `t`, `u`, `v` each within it of the f64 values, `t` of the f64
/// one clamped into [`padded_box_interval`] as the kernels clamp theirs (only a
/// point a hair outside the triangle can lie outside that box: a hit the tolerance
/// admits, far along a ray nearly parallel to a long sliver). The error says what
/// failed.
pub fn check_kernel_hit(
    ray: &Ray,
    triangle: [Vec3; 3],
    (t, u, v): (f32, f32, f32),
) -> Result<(), String> {
    if !(t.is_finite() && u.is_finite() && v.is_finite()) {
        return Err(format!("non-finite hit t={t} u={u} v={v}"));
    }
    if !(t >= ray.tmin && t <= ray.tmax) {
        return Err(format!(
            "t={t} outside the ray interval [{}, {}]",
            ray.tmin, ray.tmax
        ));
    }
    let tol = kernel_tolerance(ray, triangle);
    if tol.bary.is_infinite() {
        return Ok(());
    }
    let Some(exact) = intersect_f64(ray, triangle, tol.bary) else {
        return Err(format!(
            "f64 puts the point outside the triangle by more than {:e} (barycentric)",
            tol.bary
        ));
    };
    let (du, dv) = ((u as f64 - exact.u).abs(), (v as f64 - exact.v).abs());
    let exact_t = padded_box_interval(ray, triangle)
        .map_or(exact.t, |(entry, exit)| exact.t.clamp(entry, exit));
    let dt = (t as f64 - exact_t).abs();
    if du > tol.bary || dv > tol.bary || dt > tol.t_error(exact_t) {
        return Err(format!(
            "f32 (t={t}, u={u}, v={v}) vs f64 {exact:?}: errors t {dt:e} u {du:e} v {dv:e} \
             exceed the tolerance (bary {:e}, t {:e})",
            tol.bary,
            tol.t_error(exact_t)
        ));
    }
    Ok(())
}
