//! The one comparison of two hit lists for the same rays (two backends, two
//! acceleration structures, or a backend and a file read back).
//!
//! Hits are compared **bit for bit** (`t`, `u`, `v` and `prim`, so `-0.0` differs from
//! `+0.0`): the hit contract promises identical answers on every backend. What is not
//! identical is sorted into:
//! - *close*: the same triangle, `t`, `u`, `v` within 1e-5 (rounding, not a different
//!   answer);
//! - *explained*: a different triangle at the same `t` (a tie), or a hit near an edge,
//!   grazing, or at an interval end, where two correct tests may round differently;
//! - *unexplained*: anything else, always a failure.
//!
//! [`Parity::assert_identical`] asks for every ray identical;
//! [`Parity::assert_bounded`] allows close and explained differences, at most one ray
//! in `per` for each.

use std::collections::BTreeMap;

use raypick::{Hit, Mesh, Ray};

use crate::reference;

/// Whether `a` and `b` are within `rel` of each other, relative to the larger.
pub fn rel_close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
}

/// Whether two hits are bit-for-bit identical (`-0.0` and `+0.0` differ).
pub fn identical(a: &Hit, b: &Hit) -> bool {
    let bits = |h: &Hit| (h.t.to_bits(), h.u.to_bits(), h.v.to_bits(), h.prim);
    bits(a) == bits(b)
}

/// The tolerance of [`close`]: on `t` relative, on `u` and `v` absolute.
pub const CLOSE: f32 = 1e-5;

/// Whether two hits of the same ray are the same answer up to rounding: same
/// triangle, `t` within [`CLOSE`] relative, `u` and `v` within [`CLOSE`] (two misses
/// are the same answer only when both are the miss marker).
pub fn close(a: &Hit, b: &Hit) -> bool {
    if a.prim != b.prim {
        return false;
    }
    if !a.is_hit() {
        return a == b;
    }
    rel_close(a.t as f64, b.t as f64, CLOSE as f64)
        && (a.u - b.u).abs() <= CLOSE
        && (a.v - b.v).abs() <= CLOSE
}

/// Why two different answers for `ray` are both acceptable, if they are: a tie (two
/// triangles the f64 reference hits at the same `t`), or a hit within 1e-6
/// barycentric of an edge, grazing (the ray nearly in the triangle's plane) or at an
/// end of the ray's interval.
pub fn explain(mesh: &Mesh, ray: &Ray, a: &Hit, b: &Hit) -> Option<&'static str> {
    const EDGE: f64 = 1e-6;
    let tri = |h: &Hit| mesh.triangle(h.prim as usize);
    if a.is_hit() && b.is_hit() && a.prim != b.prim && rel_close(a.t as f64, b.t as f64, 1e-5) {
        let ta = reference::intersect_f64(ray, tri(a), EDGE);
        let tb = reference::intersect_f64(ray, tri(b), EDGE);
        if let (Some(ta), Some(tb)) = (ta, tb)
            && rel_close(ta.t, tb.t, 1e-5)
        {
            return Some("tie");
        }
    }
    for h in [a, b].into_iter().filter(|h| h.is_hit()) {
        let [v0, v1, v2] = tri(h);
        let n = (v1 - v0).as_dvec3().cross((v2 - v0).as_dvec3());
        let grazing = n.normalize().dot(ray.dir.as_dvec3().normalize()).abs() < 1e-5;
        let (u, v) = (h.u as f64, h.v as f64);
        let near_edge = u.min(v).min(1.0 - u - v) < EDGE;
        let at_bound = rel_close(h.t as f64, ray.tmin as f64, 1e-5)
            || rel_close(h.t as f64, ray.tmax as f64, 1e-5);
        if near_edge {
            return Some("near an edge");
        }
        if grazing {
            return Some("grazing");
        }
        if at_bound {
            return Some("at an interval bound");
        }
    }
    None
}

/// How two hit lists for the same rays compare (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Parity {
    /// Rays compared.
    pub rays: usize,
    /// Bit-identical hits.
    pub identical: usize,
    /// Same triangle, `t`, `u`, `v` within 1e-5, not identical.
    pub close: usize,
    /// Different answers with an explanation ([`explain`]).
    pub explained: usize,
    /// How many rays each explanation covers.
    pub reasons: BTreeMap<&'static str, usize>,
    /// Different answers with none: `(ray index, a, b)`.
    pub unexplained: Vec<(usize, Hit, Hit)>,
    /// The first few rays that are not identical: `(ray index, a, b)`.
    pub first_differences: Vec<(usize, Hit, Hit)>,
}

/// How many non-identical rays [`Parity`] keeps as examples.
const EXAMPLES: usize = 5;

impl Parity {
    /// Rays whose hits are not bit-identical.
    pub fn differing(&self) -> usize {
        self.rays - self.identical
    }

    /// Fails unless every ray's hits are bit-identical.
    pub fn assert_identical(&self, what: &str) {
        eprintln!("{what}: {self:?}");
        assert!(self.rays > 0, "{what}: no rays compared");
        assert_eq!(
            self.identical,
            self.rays,
            "{what}: {} of {} rays differ ({} close, {} explained {:?}, {} unexplained); first: {:?}",
            self.differing(),
            self.rays,
            self.close,
            self.explained,
            self.reasons,
            self.unexplained.len(),
            self.first_differences
        );
    }

    /// Fails on any unexplained difference, and unless close and explained
    /// differences are each at most one ray in `per`.
    pub fn assert_bounded(&self, what: &str, per: usize) {
        eprintln!("{what}: {self:?}");
        assert!(self.rays > 0, "{what}: no rays compared");
        assert!(
            self.unexplained.is_empty(),
            "{what}: {} unexplained disagreements, first: {:?}",
            self.unexplained.len(),
            &self.unexplained[..self.unexplained.len().min(EXAMPLES)]
        );
        for (kind, count) in [("close", self.close), ("tie/edge", self.explained)] {
            assert!(
                count * per <= self.rays,
                "{what}: {count} {kind} differences in {} rays is more than 1 in {per}; first: {:?}",
                self.rays,
                self.first_differences
            );
        }
    }
}

/// Compares hits `a` and `b` for `rays` traced against `mesh`.
pub fn compare(mesh: &Mesh, rays: &[Ray], a: &[Hit], b: &[Hit]) -> Parity {
    assert_eq!(a.len(), rays.len(), "one hit per ray");
    assert_eq!(b.len(), rays.len(), "one hit per ray");
    let mut parity = Parity {
        rays: rays.len(),
        ..Default::default()
    };
    for (i, ((ray, a), b)) in rays.iter().zip(a).zip(b).enumerate() {
        if identical(a, b) {
            parity.identical += 1;
            continue;
        }
        if parity.first_differences.len() < EXAMPLES {
            parity.first_differences.push((i, *a, *b));
        }
        if close(a, b) {
            parity.close += 1;
        } else if let Some(reason) = explain(mesh, ray, a, b) {
            parity.explained += 1;
            *parity.reasons.entry(reason).or_default() += 1;
        } else {
            parity.unexplained.push((i, *a, *b));
        }
    }
    parity
}

/// Checks the hit contract ([`assert_contract`]) for every ray of a batch and its hit.
pub fn assert_contracts(mesh: &Mesh, rays: &[Ray], hits: &[Hit]) {
    assert_eq!(rays.len(), hits.len(), "one hit per ray");
    for (ray, hit) in rays.iter().zip(hits) {
        assert_contract(mesh, ray, hit);
    }
}

/// Checks the hit contract for one ray: a hit has finite `t` in the interval, `u`, `v`
/// in range, and its barycentric point equals `o + t*d` within f32 rounding; a miss
/// is exactly the marker.
pub fn assert_contract(mesh: &Mesh, ray: &Ray, hit: &Hit) {
    assert!(
        !hit.t.is_nan() && !hit.u.is_nan() && !hit.v.is_nan(),
        "NaN in {hit:?} for {ray:?}"
    );
    if !hit.is_hit() {
        assert_eq!(*hit, Hit::MISS, "miss marker for {ray:?}");
        return;
    }
    assert!(
        hit.t.is_finite() && hit.t >= ray.tmin && hit.t <= ray.tmax,
        "{hit:?} outside {ray:?}"
    );
    // The GPU may round `u + v` differently from the reported u and v (one ulp).
    assert!(
        hit.u >= 0.0 && hit.v >= 0.0 && hit.u + hit.v <= 1.0 + 2.5e-7,
        "{hit:?}"
    );
    let [v0, v1, v2] = mesh.triangle(hit.prim as usize);
    let (u, v) = (hit.u as f64, hit.v as f64);
    let on_triangle = (1.0 - u - v) * v0.as_dvec3() + u * v1.as_dvec3() + v * v2.as_dvec3();
    let on_ray = ray.origin.as_dvec3() + hit.t as f64 * ray.dir.as_dvec3();
    // f32 rounding error grows with the coordinates' magnitude, with how badly
    // conditioned the triangle is (slivers: |e1||e2| / |e1 x e2| large) and with how
    // grazing the ray is (t moves by 1 / |cos| of the angle to the normal).
    let (e1, e2) = ((v1 - v0).as_dvec3(), (v2 - v0).as_dvec3());
    let normal = e1.cross(e2);
    let cos = normal.normalize().dot(ray.dir.as_dvec3().normalize()).abs();
    let condition = (e1.length() * e2.length() / normal.length()).max(1.0) / cos.max(1e-12);
    let scale = [v0, v1, v2, ray.origin, ray.at(hit.t)]
        .iter()
        .map(|p| p.as_dvec3().abs().max_element())
        .fold(1.0, f64::max);
    let err = on_triangle.distance(on_ray);
    let tolerance = 1e-5 * scale * condition;
    assert!(
        err <= tolerance,
        "hit point off by {err} (tolerance {tolerance}, condition {condition}) for {ray:?} {hit:?}"
    );
}

/// Fails unless `got` and `want` are bit-for-bit the same hits, naming the first
/// rays that differ (for lists whose mesh and rays are not at hand, such as hit
/// files read back).
pub fn assert_bits_equal(got: &[Hit], want: &[Hit], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}: one hit per ray");
    let differing: Vec<(usize, Hit, Hit)> = (0..got.len())
        .filter(|&i| !identical(&got[i], &want[i]))
        .map(|i| (i, got[i], want[i]))
        .collect();
    assert!(
        differing.is_empty(),
        "{context}: {} of {} rays differ, first (ray, got, want): {:?}",
        differing.len(),
        got.len(),
        &differing[..differing.len().min(EXAMPLES)]
    );
}
