// The ray-triangle test (Moller-Trumbore, the D3DXIntersectTri convention).
// Mirrored operation for operation by src/cpu/intersect.rs.
//
//   p = d x e2, det = e1 . p, s = o - v0, U = s . p, q = s x e1, V = d . q, T = e2 . q
//   u = U / det, v = V / det, t = T / det   (1 / det computed once)
//
// Inside-the-triangle decisions use the unnormalised U, V and det (no division), so
// they depend only on correctly rounded products and sums: U, V >= 0 and U + V <= det,
// with the signs flipped when det < 0. A hit is accepted when det passes the culling
// test, it is inside, tmin <= t <= tmax and t < best_t (strict, so earlier triangles
// win ties). Every comparison is written so that NaN rejects.
//
// A determinant within DET_TOLERANCE * |e1|1 * |e2|1 * |d|1 of zero counts as zero
// (the ray is parallel to the triangle): that bound covers the rounding error of det,
// so its sign is reliable whenever a hit is reported, and near-parallel rays cannot
// produce hits far from the triangle.
//
// GPU compilers may fuse a * b + c into one FMA; the CPU rounds the product first.
// Products are therefore multiplied by `one`, an opaque 1.0 from a uniform: the
// compiler cannot drop it, and fusing (a * b) * one + c is exact, so every product is
// rounded on its own, as on the CPU.

struct Candidate {
    t: f32,
    u: f32,
    v: f32,
    accepted: bool,
}

const DET_TOLERANCE: f32 = 9.5367431640625e-7; // 2^-20

fn det_passes(det: f32, det_bound: f32, cull: u32) -> bool {
    let tolerance = DET_TOLERANCE * det_bound;
    switch cull {
        case CULL_BACK: { return det > tolerance; }
        case CULL_FRONT: { return det < -tolerance; }
        default: { return abs(det) > tolerance; }
    }
}

fn mul_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> vec3<f32> {
    return (a * b) * one;
}

fn cross_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> vec3<f32> {
    return mul_rounded(a.yzx, b.zxy, one) - mul_rounded(a.zxy, b.yzx, one);
}

fn dot_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> f32 {
    let m = mul_rounded(a, b, one);
    return (m.x + m.y) + m.z;
}

// `dir_norm` is |ray.dir|1, computed once per ray.
fn intersect(ray: Ray, dir_norm: f32, tri: PackedTriangle, cull: u32, best_t: f32, one: f32) -> Candidate {
    let p = cross_rounded(ray.dir, tri.e2, one);
    let det = dot_rounded(tri.e1, p, one);
    let s = ray.origin - tri.v0;
    let big_u = dot_rounded(s, p, one);
    let q = cross_rounded(s, tri.e1, one);
    let big_v = dot_rounded(ray.dir, q, one);
    let big_t = dot_rounded(tri.e2, q, one);
    let inv_det = 1.0 / det;
    let t = big_t * inv_det;
    let sign = select(-1.0, 1.0, det > 0.0);
    let inside = big_u * sign >= 0.0 && big_v * sign >= 0.0 && (big_u + big_v) * sign <= det * sign;
    let accepted = det_passes(det, tri.edge_norm * dir_norm, cull) && inside && t >= ray.tmin && t <= ray.tmax && t < best_t;
    return Candidate(t, big_u * inv_det, big_v * inv_det, accepted);
}
