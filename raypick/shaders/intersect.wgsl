// The ray-triangle test: per-ray set-up, the choice between the two tests
// (moller_trumbore.wgsl, watertight.wgsl) and the acceptance rule they share.
// Mirrored operation for operation by src/cpu/intersect.rs.
//
// Both tests produce unnormalised values: det, and big_u, big_v, big_w, big_t with
//   u = big_u / det, v = big_v / det, t = big_t / det   (1 / det computed once)
// where big_w / det is the weight of v0. Inside-the-triangle decisions use the
// unnormalised values (no division): big_u, big_v and big_w all have the sign of
// det. A hit is accepted when det passes the culling test, it is inside,
// tmin <= t <= tmax and t < best_t (strict, so earlier triangles win ties), t first
// clamped into the ray's interval through the triangle's padded box (see accept). Every
// comparison is written so that NaN rejects, and only finite values are accepted:
// 1 / det, t, u and v must all be finite (a determinant whose reciprocal overflows
// would give u = 0 * inf = NaN; an overflowing t would pass an infinite tmin or tmax).
// Finiteness is read from the bits, which no float optimisation can assume away.
//
// A determinant within DET_TOLERANCE * |e1|1 * |e2|1 * (ray factor) of zero counts as
// zero (the ray is parallel to the triangle): that bound covers the rounding error of
// det, so its sign is reliable whenever a hit is reported, and near-parallel rays
// cannot produce hits far from the triangle.
//
// GPU compilers may fuse a * b + c into one FMA, and may rewrite a * b + c * d
// algebraically (one driver turned (a * b) * k + (c * d) * k into
// (a * b + c * d) * k, then fused it); the CPU rounds each product first. Every
// product the tests add or subtract therefore goes through `rounded`, an XOR of its
// bits with zero bits the compiler cannot know (from `one`, an opaque 1.0 in a
// uniform): no float rewrite crosses an integer operation on unknown bits, so the
// product is rounded on its own, as on the CPU. Divisions are `reciprocal`'s, exact.

// x, as rounded where it was computed (see above): x's bits XOR the zero bits of
// `one`'s difference from 1.0.
fn rounded(x: f32, one: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ (bitcast<u32>(one) ^ 0x3f800000u));
}

// `rounded`, component by component.
fn rounded3(x: vec3<f32>, one: f32) -> vec3<f32> {
    return bitcast<vec3<f32>>(bitcast<vec3<u32>>(x) ^ vec3<u32>(bitcast<u32>(one) ^ 0x3f800000u));
}

struct Candidate {
    t: f32,
    u: f32,
    v: f32,
    accepted: bool,
}

struct Unnormalised {
    det: f32,
    det_bound: f32,
    big_u: f32,
    big_v: f32,
    big_w: f32,
    big_t: f32,
}

// What the tests need of a ray, computed once per ray.
//   dir: the direction scaled by a power of two, 2^-k, so that its largest component
//     is in [1, 2) (see direction_scale); the tests see only this one, so their t
//     is 2^k times the caller's and is scaled back by t_scale = 2^-k. Exact, so
//     answers are those of the caller's direction, except where that one would
//     over- or underflow;
//   dir_norm: |dir|1, the ray's part of the fast test's determinant bound;
//   axes: (kx, ky, kz), kz the axis of the largest |dir| component, (kx, ky) the next
//     two in cyclic order, swapped when dir[kz] < 0 to keep the winding;
//   shear: (dir[kx] / dir[kz], dir[ky] / dir[kz], 1 / dir[kz]);
//   shear_norm: dir_norm * |shear.z|, the watertight determinant's ray factor;
//   t_scale: 2^-k, multiplies the tests' t into units of the caller's direction;
//   inv_dir: 1 / dir with BIG for zero components, the slab tests' factors;
//   live: false for a zero direction (such a ray never hits).
struct RayFrame {
    dir: vec3<f32>,
    dir_norm: f32,
    axes: vec3<u32>,
    shear: vec3<f32>,
    shear_norm: f32,
    t_scale: f32,
    inv_dir: vec3<f32>,
    live: bool,
}

const DET_TOLERANCE: f32 = 9.5367431640625e-7; // 2^-20
// Stands in for 1 / 0 in box tests so that they never compute 0 * inf.
const BIG: f32 = 1e38;
// Relative margin on slab distances: far above the few ulps of rounding in a box test.
const BOX_MARGIN: f32 = 1e-5;

// Whether a slab interval [near, far] is non-empty up to the relative BOX_MARGIN: the
// box tests' overlap rule, used by the traversals and by the kernel on the
// triangle's own box (the products are kept from fusing, as in the tests).
fn overlaps(near: f32, far: f32, one: f32) -> bool {
    return near - rounded(abs(near) * BOX_MARGIN, one) <= far + rounded(abs(far) * BOX_MARGIN, one);
}

// Whether a box entered at `entry` lies beyond `bound` by more than the relative
// BOX_MARGIN: then nothing in it can change the answer, and the traversals skip it.
fn beyond(entry: f32, bound: f32) -> bool {
    return entry - abs(entry) * BOX_MARGIN > bound;
}

// A box entry distance meaning "not entered".
const NOT_ENTERED: f32 = -3.0e38;

// What the box tests need of a ray (mirrors RayBoxes in src/cpu/bvh_traverse.rs):
// they run on the direction scaled by t_scale (RayFrame::dir), so their distances
// are in its units, the interval scaled into them (to_frame) and the entry distance
// back out (t_scale), and huge or tiny directions neither overflow 1 / dir nor make
// BIG a distance real hits reach.
struct RayBoxes {
    origin: vec3<f32>,
    inv_dir: vec3<f32>,
    tmin: f32,
    to_frame: f32,
    t_scale: f32,
}

fn ray_boxes(ray: Ray, frame: RayFrame) -> RayBoxes {
    let to_frame = reciprocal(frame.t_scale);
    return RayBoxes(ray.origin, frame.inv_dir, ray.tmin * to_frame, to_frame, frame.t_scale);
}

// Entry distance into `child`'s box when the ray overlaps it within [tmin, limit]
// (conservatively, by overlaps), else NOT_ENTERED (also for an empty slot); `limit`
// and the entry distance in the units of the ray's direction. Mirrored by
// RayBoxes::enter in src/cpu/bvh_traverse.rs.
fn enter_child(child: BvhChild, boxes: RayBoxes, limit: f32, one: f32) -> f32 {
    if child.index == EMPTY_CHILD && child.count == 0u {
        return NOT_ENTERED;
    }
    let t0 = (child.lo - boxes.origin) * boxes.inv_dir;
    let t1 = (child.hi - boxes.origin) * boxes.inv_dir;
    let lo = min(t0, t1);
    let hi = max(t0, t1);
    let near = max(max(max(lo.x, lo.y), lo.z), boxes.tmin);
    let far = min(min(min(hi.x, hi.y), hi.z), limit * boxes.to_frame);
    if overlaps(near, far, one) {
        return near * boxes.t_scale;
    }
    return NOT_ENTERED;
}

// A node's two children in visiting order, with their entry distances (enter_child):
// the nearer one first when both are entered, else in slot order.
struct ChildOrder {
    near: BvhChild,
    far: BvhChild,
    entry_near: f32,
    entry_far: f32,
}

fn order_children(node: BvhNode, boxes: RayBoxes, limit: f32, one: f32) -> ChildOrder {
    let a = node.children[0];
    let b = node.children[1];
    let entry_a = enter_child(a, boxes, limit, one);
    let entry_b = enter_child(b, boxes, limit, one);
    if entry_a != NOT_ENTERED && entry_b != NOT_ENTERED && entry_b < entry_a {
        return ChildOrder(b, a, entry_b, entry_a);
    }
    return ChildOrder(a, b, entry_a, entry_b);
}

// 1 / x correctly rounded (to nearest), as the CPU's division: Vulkan lets a
// driver's division be 2.5 ulp off, and some drivers' are (an approximate
// reciprocal). With x = M * 2^(e-23), M in [2^23, 2^24) (subnormals normalised), the
// result's significand is Y = round(2^47 / M) in [2^23, 2^24]. The driver's own
// division of 1 by M's significand gives a Y within a few units; the exact
// remainder d = 2^47 - M * Y is what the low 32 bits of M * Y say (|d| < 2^31), and
// Y steps towards 2^47 / M until |d| <= M / 2 (never equal: 2^47 / M is never a
// half-integer). A subnormal result rounds Y's dropped bits plus d / M once more,
// exactly. Zeros, infinities and NaN as IEEE 754.
fn reciprocal(x: f32) -> f32 {
    return reciprocal_from(x, 0);
}

// reciprocal, its first Y `skew` units off the driver's (the tests' way to reach
// every correction on drivers whose division is exact).
fn reciprocal_from(x: f32, skew: i32) -> f32 {
    let bits = bitcast<u32>(x);
    let sign = bits & 0x80000000u;
    let exponent = (bits >> 23u) & 0xffu;
    var m = bits & 0x7fffffu;
    if exponent == 0xffu {
        // 1 / NaN is NaN, 1 / inf is a zero of the same sign.
        return select(bitcast<f32>(sign), x, m != 0u);
    }
    if exponent == 0u && m == 0u {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    // Unbiased exponent of the normalised significand m in [2^23, 2^24).
    var e = i32(exponent) - 127;
    if exponent == 0u {
        let shift = countLeadingZeros(m) - 8u;
        m = m << shift;
        e = -126 - i32(shift);
    } else {
        m = m | 0x800000u;
    }
    // The result's biased exponent, were its significand Y / 2^23.
    let biased = 126 - e;
    if biased >= 255 {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    // 1 / (M / 2^23) is in (1/2, 1], so times 2^24 it is an integer.
    let estimate = 1.0 / bitcast<f32>(m | 0x3f800000u);
    var y = u32(i32(estimate * 16777216.0) + skew);
    var d = bitcast<i32>(0u - m * y);
    let mi = i32(m);
    for (var i = 0u; i < 8u; i++) {
        if 2 * d > mi {
            y += 1u;
            d -= mi;
        } else if 2 * d < -mi {
            y -= 1u;
            d += mi;
        } else {
            break;
        }
    }
    if biased <= 0 {
        // Subnormal: 2^47 / M = y + d / M, shifted right by `drop` (1 or 2) and
        // rounded to nearest (never a tie: 2^47 / M is an integer only for
        // M = 2^23, whose dropped bits are zeros).
        let drop = u32(1 - biased);
        let kept = y >> drop;
        let rest = i32(y & ((1u << drop) - 1u)) * mi + d; // (dropped bits) * M
        let up = rest > (mi << (drop - 1u));
        // Rounding up to 2^23 gives the smallest normal's bits.
        return bitcast<f32>(sign | (kept + u32(up)));
    }
    // y = 2^24 carries into the exponent field by itself (to infinity past the
    // largest finite value).
    return bitcast<f32>(sign | ((u32(biased - 1) << 23u) + y));
}

// 1 / dir, with BIG for zero components.
fn inverse_dir(dir: vec3<f32>) -> vec3<f32> {
    let inverse = vec3<f32>(reciprocal(dir.x), reciprocal(dir.y), reciprocal(dir.z));
    return select(inverse, vec3<f32>(BIG), dir == vec3<f32>(0.0));
}

// 2^-k for the largest direction component max_abs, from its exponent bits:
// max_abs * 2^-k is in [1, 2) for normal values below 2^127 (in [2, 4) above, and
// at least 2^-23 for subnormals).
fn direction_scale(max_abs: f32) -> f32 {
    let exponent = (bitcast<u32>(max_abs) >> 23u) & 0xffu;
    return bitcast<f32>(clamp(254u - min(exponent, 254u), 1u, 253u) << 23u);
}

// A direction component x times scale (a direction_scale), as on the CPU also
// where x is subnormal: a driver may flush such an x to zero when it computes
// with it, so it is rebuilt from its integer significand, x = m * 2^-149, as
// (m * (scale * 2^-75)) * 2^-74, exact wherever the result is a normal number
// (scale is then at least 1). For other x, x * scale.
fn scaled_component(x: f32, scale: f32, one: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (bits & 0x7f800000u) != 0u {
        return rounded(x * scale, one);
    }
    let significand = f32(bits & 0x007fffffu) * rounded(scale * 2.646977960169689e-23, one); // 2^-75
    let magnitude = rounded(significand * 5.293955920339377e-23, one); // 2^-74
    return bitcast<f32>(bitcast<u32>(magnitude) | (bits & 0x80000000u));
}

fn ray_frame(ray: Ray, one: f32) -> RayFrame {
    let raw = abs(ray.dir);
    let scale = direction_scale(max(max(raw.x, raw.y), raw.z));
    let dir = vec3<f32>(
        scaled_component(ray.dir.x, scale, one),
        scaled_component(ray.dir.y, scale, one),
        scaled_component(ray.dir.z, scale, one),
    );
    let a = abs(dir);
    var kz = 2u;
    if a.x > a.y {
        if a.x > a.z {
            kz = 0u;
        }
    } else if a.y > a.z {
        kz = 1u;
    }
    var kx = (kz + 1u) % 3u;
    var ky = (kx + 1u) % 3u;
    let dz = dir[kz];
    if dz < 0.0 {
        let swap = kx;
        kx = ky;
        ky = swap;
    }
    let live = dz != 0.0;
    let inv_dz = select(0.0, reciprocal(dz), live);
    let shear = vec3<f32>(dir[kx] * inv_dz, dir[ky] * inv_dz, inv_dz);
    let dir_norm = (a.x + a.y) + a.z;
    return RayFrame(dir, dir_norm, vec3<u32>(kx, ky, kz), shear, dir_norm * abs(inv_dz), scale, inverse_dir(dir), live);
}

// 2^-90: a test one of whose deciding values (below) is under this in magnitude is
// redone with offset_scale. Where all of them are above it, no value below f32's
// normal range (which a driver may flush to zero) changes any of them or the rest
// of the test: each product below 2^-126 is then under an eighth of the last place
// of the sum it enters. Mirrors TINY in src/cpu/intersect.rs.
const TINY: f32 = 8.077935669463161e-28;

// Whether one of the four values a test of `mode` decides by is under TINY: the
// watertight test's big_u, big_v, big_w, big_t (its det is their sum), the fast
// test's det, big_u, big_v, big_t (its big_w their difference).
//
// Each stage declares SCALE_EVERY_TEST: true runs every test on offsets scaled by
// offset_scale, one copy of the test in the code (what the BVH stages, bound by
// memory, afford best); false redoes only tests with tiny values, scaled (what
// brute force, bound by arithmetic, does best). The answers are the same: scaling
// changes nothing where the unscaled test has no tiny values.
fn tiny(n: Unnormalised, mode: u32) -> bool {
    var first = n.det;
    if mode == MODE_WATERTIGHT {
        first = n.big_w;
    }
    return min(min(abs(first), abs(n.big_u)), min(abs(n.big_v), abs(n.big_t))) < TINY;
}

// The offsets a test scales: the watertight test's vertices minus the ray's origin,
// the fast test's e1, e2 and s.
struct Offsets {
    a: vec3<f32>,
    b: vec3<f32>,
    c: vec3<f32>,
}

// The largest component of a test's offsets.
fn largest(o: Offsets) -> f32 {
    let m = max(max(abs(o.a), abs(o.b)), abs(o.c));
    return max(max(m.x, m.y), m.z);
}

// The power of two 2^k (k >= 1) that brings largest, the largest offset of a test
// (a vertex from the ray's origin, an edge), into [1, 2) when it is a normal number
// below 1; 1.0 otherwise. A test with tiny values runs again on its offsets scaled
// by it: its products of two and three offsets then stay above f32's normal range,
// where a driver that flushes subnormal numbers computes what the CPU does, and,
// scaling by a power of two being exact, the answer is the one the unscaled test
// gives wherever that one stays in the normal range. Mirrors offset_scale in
// src/cpu/intersect.rs.
fn offset_scale(largest: f32) -> f32 {
    let exponent = (bitcast<u32>(largest) >> 23u) & 0xffu;
    if exponent >= 1u && exponent < 127u {
        return bitcast<f32>((254u - exponent) << 23u);
    }
    return 1.0;
}

// The triangle's edge_norm for offsets scaled by `scale` (offset_scale), worked out
// again from its vertices: scale^2 times the stored one where that is a normal
// number, and not lost where the stored one falls below the normal range (edges
// shorter than about 1e-19). The stored one for a scale of 1. Mirrors
// scaled_edge_norm in src/cpu/intersect.rs.
fn scaled_edge_norm(tri: PackedTriangle, scale: f32, one: f32) -> f32 {
    if scale == 1.0 {
        return tri.edge_norm;
    }
    let e1 = tri.v1 - tri.v0;
    let e2 = tri.v2 - tri.v0;
    let n1 = rounded(((abs(e1.x) + abs(e1.y)) + abs(e1.z)) * scale, one);
    let n2 = rounded(((abs(e2.x) + abs(e2.y)) + abs(e2.z)) * scale, one);
    return rounded(n1 * n2, one);
}

// 1 / scale for an offset_scale or direction_scale, exact: its exponent bits are
// the difference from 254.
fn reciprocal_scale(scale: f32) -> f32 {
    return bitcast<f32>((254u << 23u) - bitcast<u32>(scale));
}

fn det_passes(det: f32, det_bound: f32, cull: u32) -> bool {
    let tolerance = DET_TOLERANCE * det_bound;
    switch cull {
        case CULL_BACK: { return det > tolerance; }
        case CULL_FRONT: { return det < -tolerance; }
        default: { return abs(det) > tolerance; }
    }
}

// Whether x is neither infinite nor NaN (its exponent bits are not all ones).
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// The ray's interval (entry, exit) through the triangle's padded box (the box the
// BVH builder and refit give it, triangle_box), in units of frame.dir, by the slab
// arithmetic of the traversals' box tests: every BVH box that holds the triangle
// holds this box, so it is entered no later and left no earlier (rounding is
// monotonic). Mirrored by box_interval in src/cpu/intersect.rs.
fn box_interval(origin: vec3<f32>, frame: RayFrame, tri: PackedTriangle) -> vec2<f32> {
    let b = triangle_box(tri);
    let negative = frame.inv_dir < vec3<f32>(0.0);
    let near = (select(b.lo, b.hi, negative) - origin) * frame.inv_dir;
    let far = (select(b.hi, b.lo, negative) - origin) * frame.inv_dir;
    var entry = -bitcast<f32>(0x7f800000u);
    var exit = bitcast<f32>(0x7f800000u);
    for (var axis = 0u; axis < 3u; axis++) {
        entry = select(entry, near[axis], near[axis] > entry);
        exit = select(exit, far[axis], far[axis] < exit);
    }
    return vec2<f32>(entry, exit);
}

// The acceptance rule. A candidate (det passes culling, inside, finite) is then
// checked against the ray's interval through the triangle's padded box: rejected
// when the ray misses that box by the box tests' own rule (overlaps), its t clamped
// into it (never before the entry). This makes BVH culling exact: every BVH box
// that holds the triangle holds its padded box, so a hit is never before the entry
// of such a box nor outside a box it must be in, and the boxes the traversals cull
// never hold an answer. The clamp only acts when the test's error exceeds the
// padding. Mirrored by candidate and place in src/cpu/intersect.rs.
fn accept(n: Unnormalised, ray: Ray, frame: RayFrame, tri: PackedTriangle, cull: u32, best_t: f32, one: f32) -> Candidate {
    let sign = select(-1.0, 1.0, n.det > 0.0);
    let inside = n.big_u * sign >= 0.0 && n.big_v * sign >= 0.0 && n.big_w * sign >= 0.0;
    if !(frame.live && det_passes(n.det, n.det_bound, cull) && inside) {
        // Rejected before the division (its t, u and v are never read).
        return Candidate(0.0, 0.0, 0.0, false);
    }
    let inv_det = reciprocal(n.det);
    var t = n.big_t * inv_det;
    let u = n.big_u * inv_det;
    let v = n.big_v * inv_det;
    var candidate = is_finite(inv_det) && is_finite(t) && is_finite(u) && is_finite(v);
    if candidate {
        let interval = box_interval(ray.origin, frame, tri);
        t = select(t, interval.y, t > interval.y);
        t = select(t, interval.x, t < interval.x);
        candidate = overlaps(interval.x, interval.y, one);
    }
    t = t * frame.t_scale;
    let accepted = candidate && is_finite(t) && t >= ray.tmin && t <= ray.tmax && t < best_t;
    return Candidate(t, u, v, accepted);
}

// The test of `mode` on offsets `o`, with the edge norm given.
fn test_offsets(o: Offsets, frame: RayFrame, edge_norm: f32, mode: u32, one: f32) -> Unnormalised {
    if mode == MODE_WATERTIGHT {
        return watertight_offsets(o.a, o.b, o.c, frame, edge_norm, one);
    }
    return moller_trumbore_offsets(o.a, o.b, o.c, frame, edge_norm, one);
}

// The test of `mode` on the offsets scaled by `scale` (offset_scale; 1.0 leaves
// them), its edge norm scaled too and its big_t scaled back by one factor of
// `scale`, so that t = big_t / det keeps the caller's units.
fn scaled_test(o: Offsets, scale: f32, frame: RayFrame, tri: PackedTriangle, mode: u32, one: f32) -> Unnormalised {
    let scaled = Offsets(rounded3(o.a * scale, one), rounded3(o.b * scale, one), rounded3(o.c * scale, one));
    var n = test_offsets(scaled, frame, scaled_edge_norm(tri, scale, one), mode, one);
    n.big_t = rounded(n.big_t * reciprocal_scale(scale), one);
    return n;
}

// The test of `mode` on the offsets `o` of `tri`, redone on them scaled when its
// values are tiny, or run scaled every time in a stage that says SCALE_EVERY_TEST
// (the same answers). Mirrors redo_if_tiny in src/cpu/intersect.rs.
fn test_redone_if_tiny(o: Offsets, frame: RayFrame, tri: PackedTriangle, mode: u32, one: f32) -> Unnormalised {
    if SCALE_EVERY_TEST {
        return scaled_test(o, offset_scale(largest(o)), frame, tri, mode, one);
    }
    let n = test_offsets(o, frame, tri.edge_norm, mode, one);
    if !tiny(n, mode) {
        return n;
    }
    let scale = offset_scale(largest(o));
    if scale == 1.0 {
        return n;
    }
    return scaled_test(o, scale, frame, tri, mode, one);
}

fn intersect(ray: Ray, frame: RayFrame, tri: PackedTriangle, cull: u32, best_t: f32, one: f32, mode: u32) -> Candidate {
    var n: Unnormalised;
    if mode == MODE_WATERTIGHT {
        n = watertight(ray, frame, tri, one);
    } else {
        n = moller_trumbore(ray, frame, tri, one);
    }
    return accept(n, ray, frame, tri, cull, best_t, one);
}
