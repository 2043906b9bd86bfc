// The watertight test (Woop, Benthin, Wald, "Watertight Ray/Triangle Intersection",
// JCGT 2013). Mirrored operation for operation by src/cpu/watertight.rs.
//
// The vertices are moved to the ray origin and sheared so that the ray runs along +z
// through (0, 0) (see RayFrame in intersect.wgsl):
//   a = v0 - o, x_a = a[kx] - shear.x * a[kz], y_a = a[ky] - shear.y * a[kz],
//   z_a = shear.z * a[kz]   (likewise b from v1, c from v2)
// and the 2D edge functions of the projected triangle decide inside-ness:
//   big_w = x_c * y_b - y_c * x_b   (edge v1 v2: the weight of v0, times det)
//   big_u = x_a * y_c - y_a * x_c   (edge v2 v0: the weight of v1, times det)
//   big_v = x_b * y_a - y_b * x_a   (edge v0 v1: the weight of v2, times det)
//   det = (big_w + big_u) + big_v, big_t = (big_w z_a + big_u z_b) + big_v z_c
// An edge shared by two triangles is evaluated from the same two projected vertices
// with the same two products, swapped: its value flips sign exactly between them, so
// a ray on the edge is inside at least one of them. Rounding never flips the sign of
// an edge function (rounding is monotonic), it can only make it zero; an exactly-zero
// value is recomputed exactly (below), so edges and vertices are decided as in exact
// arithmetic. t is a weighted mean of the vertex depths with non-negative weights, so
// it always lies within the triangle's depth range.
//
// The exact recomputation needs no 64-bit floats (WGSL has none in its core): with
// p = a * b rounded, Dekker's product a * b = p + e is exact in f32 (Veltkamp split
// into 12-bit halves), so when p - q rounds to zero, p == q and the exact value of
// a * b - c * d is e_ab - e_cd, rounded once. Valid while no product over- or
// underflows (sheared coordinates between about 1e-18 and 1e18).

const SPLITTER: f32 = 4097.0; // 2^12 + 1

// Veltkamp's split: a = hi + lo with 12-bit halves.
fn split(a: f32, one: f32) -> vec2<f32> {
    let c = rounded(SPLITTER * a, one);
    let hi = c - rounded(c - a, one);
    return vec2<f32>(hi, a - hi);
}

// The rounding error of p = a * b: a * b == p + product_error(a, b, p) exactly.
fn product_error(a: f32, b: f32, p: f32, one: f32) -> f32 {
    let x = split(a, one);
    let y = split(b, one);
    return ((rounded(x.x * y.x, one) - p) + rounded(x.x * y.y, one) + rounded(x.y * y.x, one)) + rounded(x.y * y.y, one);
}

// a * b - c * d, exact in sign; correctly rounded when the products round equal.
fn edge_function(a: f32, b: f32, c: f32, d: f32, one: f32) -> f32 {
    let p = rounded(a * b, one);
    let q = rounded(c * d, one);
    let e = p - q;
    if e != 0.0 {
        return e;
    }
    return product_error(a, b, p, one) - product_error(c, d, q, one);
}

// An offset from the ray's origin (a vertex minus the origin) in the ray's sheared
// frame: (x, y, z).
fn shear(a: vec3<f32>, frame: RayFrame, one: f32) -> vec3<f32> {
    let az = a[frame.axes.z];
    return vec3<f32>(
        a[frame.axes.x] - rounded(frame.shear.x * az, one),
        a[frame.axes.y] - rounded(frame.shear.y * az, one),
        rounded(frame.shear.z * az, one),
    );
}
// The test on the vertices' offsets from the ray's origin.
fn watertight_offsets(a0: vec3<f32>, a1: vec3<f32>, a2: vec3<f32>, frame: RayFrame, edge_norm: f32, one: f32) -> Unnormalised {
    let a = shear(a0, frame, one);
    let b = shear(a1, frame, one);
    let c = shear(a2, frame, one);
    let big_w = edge_function(c.x, b.y, c.y, b.x, one);
    let big_u = edge_function(a.x, c.y, a.y, c.x, one);
    let big_v = edge_function(b.x, a.y, b.y, a.x, one);
    let det = (big_w + big_u) + big_v;
    let big_t = (rounded(big_w * a.z, one) + rounded(big_u * b.z, one)) + rounded(big_v * c.z, one);
    return Unnormalised(det, rounded(edge_norm * frame.shear_norm, one), big_u, big_v, big_w, big_t);
}
// The test on the vertices' offsets from the ray's origin, redone on them scaled
// when its values are tiny (intersect.wgsl).
fn watertight(ray: Ray, frame: RayFrame, tri: PackedTriangle, one: f32) -> Unnormalised {
    let offsets = Offsets(tri.v0 - ray.origin, tri.v1 - ray.origin, tri.v2 - ray.origin);
    return test_redone_if_tiny(offsets, frame, tri, MODE_WATERTIGHT, one);
}
