// The fast test: Moller-Trumbore (the D3DXIntersectTri convention).
// Mirrored operation for operation by src/cpu/moller_trumbore.rs.
//
//   e1 = v1 - v0, e2 = v2 - v0, p = d x e2, det = e1 . p, s = o - v0, U = s . p,
//   q = s x e1, V = d . q, T = e2 . q, W = det - (U + V)
//
// d is frame.dir, the direction scaled by a power of two (see RayFrame).
//
// W >= 0 is the test U + V <= det without its rounding of a comparison: the
// subtraction's sign is exact.

fn mul_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> vec3<f32> {
    return rounded3(a * b, one);
}

fn cross_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> vec3<f32> {
    return mul_rounded(a.yzx, b.zxy, one) - mul_rounded(a.zxy, b.yzx, one);
}

fn dot_rounded(a: vec3<f32>, b: vec3<f32>, one: f32) -> f32 {
    let m = mul_rounded(a, b, one);
    return (m.x + m.y) + m.z;
}

// The test on the offsets e1, e2 and s.
fn moller_trumbore_offsets(e1: vec3<f32>, e2: vec3<f32>, s: vec3<f32>, frame: RayFrame, edge_norm: f32, one: f32) -> Unnormalised {
    let p = cross_rounded(frame.dir, e2, one);
    let det = dot_rounded(e1, p, one);
    let big_u = dot_rounded(s, p, one);
    let q = cross_rounded(s, e1, one);
    let big_v = dot_rounded(frame.dir, q, one);
    let big_t = dot_rounded(e2, q, one);
    let big_w = det - (big_u + big_v);
    return Unnormalised(det, rounded(edge_norm * frame.dir_norm, one), big_u, big_v, big_w, big_t);
}

// The test on the triangle's edges and its offset s, redone on them scaled when its
// values are tiny (intersect.wgsl).
fn moller_trumbore(ray: Ray, frame: RayFrame, tri: PackedTriangle, one: f32) -> Unnormalised {
    let offsets = Offsets(tri.v1 - tri.v0, tri.v2 - tri.v0, ray.origin - tri.v0);
    return test_redone_if_tiny(offsets, frame, tri, MODE_FAST, one);
}
