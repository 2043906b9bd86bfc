// The ray-triangle test (Moller-Trumbore, the D3DXIntersectTri convention).
// Mirrored operation for operation by src/cpu/intersect.rs.
//
//   p = d x e2, det = e1 . p, s = o - v0, u = (s . p) / det,
//   q = s x e1, v = (d . q) / det, t = (e2 . q) / det
//
// Accepted when the determinant passes the culling test, u >= 0, v >= 0, u + v <= 1,
// tmin <= t <= tmax and t < best_t (strict, so earlier triangles win ties).
// Every comparison is written so that NaN rejects.

struct Candidate {
    t: f32,
    u: f32,
    v: f32,
    accepted: bool,
}

fn det_passes(det: f32, cull: u32) -> bool {
    switch cull {
        case CULL_BACK: { return det > 0.0; }
        case CULL_FRONT: { return det < 0.0; }
        default: { return det != 0.0; }
    }
}

fn intersect(ray: Ray, tri: PackedTriangle, cull: u32, best_t: f32) -> Candidate {
    let p = cross(ray.dir, tri.e2);
    let det = dot(tri.e1, p);
    let inv_det = 1.0 / det;
    let s = ray.origin - tri.v0;
    let u = dot(s, p) * inv_det;
    let q = cross(s, tri.e1);
    let v = dot(ray.dir, q) * inv_det;
    let t = dot(tri.e2, q) * inv_det;
    let accepted = det_passes(det, cull) && u >= 0.0 && v >= 0.0 && u + v <= 1.0
        && t >= ray.tmin && t <= ray.tmax && t < best_t;
    return Candidate(t, u, v, accepted);
}
