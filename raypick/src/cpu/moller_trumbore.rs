//! The fast test, Möller–Trumbore, operation for operation the same as
//! `shaders/moller_trumbore.wgsl`:
//! `e1 = v1 − v0`, `e2 = v2 − v0`, `p = d × e2`, `det = e1·p`, `s = o − v0`, `U = s·p`,
//! `q = s × e1`, `V = d·q`, `T = e2·q`, `W = det − (U + V)`. Dot products sum left to
//! right; every product is rounded on its own (Rust never fuses into FMA). `d` is
//! [`RayFrame::dir`], the direction scaled by a power of two.

use super::intersect::{
    LaneTest, RayFrame, SoaTriangles, Unnormalised, redo_if_tiny,
};
use super::vector::Lanes8;

/// Möller–Trumbore on the offsets `e1`, `e2` and `s`.
#[inline(always)]
fn moller_trumbore_offsets(
    frame: &RayFrame,
    [e1x, e1y, e1z]: [f32; 3],
    [e2x, e2y, e2z]: [f32; 3],
    [sx, sy, sz]: [f32; 3],
    edge_norm: f32,
) -> Unnormalised {
    let [dx, dy, dz] = frame.dir;
    let px = dy * e2z - dz * e2y;
    let py = dz * e2x - dx * e2z;
    let pz = dx * e2y - dy * e2x;
    let det = e1x * px + e1y * py + e1z * pz;
    let big_u = sx * px + sy * py + sz * pz;
    let qx = sy * e1z - sz * e1y;
    let qy = sz * e1x - sx * e1z;
    let qz = sx * e1y - sy * e1x;
    let big_v = dx * qx + dy * qy + dz * qz;
    let big_t = e2x * qx + e2y * qy + e2z * qz;
    Unnormalised {
        det,
        det_bound: edge_norm * frame.dir_norm,
        big_u,
        big_v,
        big_w: det - (big_u + big_v),
        big_t,
    }
}

/// The fast test's offsets of a triangle (`[v0, v1, v2]`): `[e1, e2, s]`.
#[inline(always)]
fn offsets(frame: &RayFrame, [v0, v1, v2]: [[f32; 3]; 3]) -> [[f32; 3]; 3] {
    let from_v0 = |a: [f32; 3]| [a[0] - v0[0], a[1] - v0[1], a[2] - v0[2]];
    [from_v0(v1), from_v0(v2), from_v0(frame.origin)]
}

/// Möller–Trumbore on scalars for one ray and one triangle (`[v0, v1, v2]`),
/// without the redo of tiny values: what the block kernels' lanes compute first.
#[inline(always)]
pub(super) fn moller_trumbore_unscaled(
    frame: &RayFrame,
    vertices: [[f32; 3]; 3],
    edge_norm: f32,
) -> Unnormalised {
    let [e1, e2, s] = offsets(frame, vertices);
    moller_trumbore_offsets(frame, e1, e2, s, edge_norm)
}

/// The values the fast test decides by (see [`tiny`](super::intersect::tiny)):
/// `det`, `big_u`, `big_v`, `big_t`.
#[inline(always)]
pub(super) fn fast_deciding(n: &Unnormalised) -> [f32; 4] {
    [n.det, n.big_u, n.big_v, n.big_t]
}

/// Möller–Trumbore on scalars for one ray and one triangle (`[v0, v1, v2]`);
/// `edge_norm` is [`crate::types::PackedTriangle::edge_norm`]. Redone on scaled
/// offsets when its deciding values are [`tiny`](super::intersect::tiny) (by
/// [`offset_scale`](super::intersect::offset_scale)).
#[inline(always)]
pub fn moller_trumbore(frame: &RayFrame, vertices: [[f32; 3]; 3], edge_norm: f32) -> Unnormalised {
    let offsets = offsets(frame, vertices);
    let on = |[e1, e2, s]: [[f32; 3]; 3], edge_norm| moller_trumbore_offsets(frame, e1, e2, s, edge_norm);
    redo_if_tiny(on(offsets, edge_norm), fast_deciding, offsets, vertices, on)
}

/// One vertex of eight lanes (`x`, `y`, `z` rows).
#[inline(always)]
fn rows<L: Lanes8>(v: &[[f32; 8]; 3]) -> [L::V; 3] {
    [L::load(&v[0]), L::load(&v[1]), L::load(&v[2])]
}

/// `a - b`, component by component, lane by lane.
#[inline(always)]
fn minus<L: Lanes8>(a: [L::V; 3], b: [L::V; 3]) -> [L::V; 3] {
    [L::sub(a[0], b[0]), L::sub(a[1], b[1]), L::sub(a[2], b[2])]
}

/// `a · b`, summed left to right, lane by lane.
#[inline(always)]
fn dot_lanes<L: Lanes8>(a: [L::V; 3], b: [L::V; 3]) -> L::V {
    L::add(L::add(L::mul(a[0], b[0]), L::mul(a[1], b[1])), L::mul(a[2], b[2]))
}

/// [`moller_trumbore`] for a block of eight triangles (a wide BVH's leaf block) on
/// explicit vector lanes, operation for operation.
#[inline(always)]
pub(super) fn moller_trumbore_block<L: Lanes8>(soa: &SoaTriangles<8>, frame: &RayFrame) -> LaneTest<L> {
    let [v0, v1, v2] = &soa.vertices;
    let (a, b, c) = (rows::<L>(v0), rows::<L>(v1), rows::<L>(v2));
    let d = [L::splat(frame.dir[0]), L::splat(frame.dir[1]), L::splat(frame.dir[2])];
    let o = [L::splat(frame.origin[0]), L::splat(frame.origin[1]), L::splat(frame.origin[2])];
    let (e1, e2) = (minus::<L>(b, a), minus::<L>(c, a));
    let p = [
        L::mul_sub_mul(d[1], e2[2], d[2], e2[1]),
        L::mul_sub_mul(d[2], e2[0], d[0], e2[2]),
        L::mul_sub_mul(d[0], e2[1], d[1], e2[0]),
    ];
    let det = dot_lanes::<L>(e1, p);
    let s = minus::<L>(o, a);
    let big_u = dot_lanes::<L>(s, p);
    let q = [
        L::mul_sub_mul(s[1], e1[2], s[2], e1[1]),
        L::mul_sub_mul(s[2], e1[0], s[0], e1[2]),
        L::mul_sub_mul(s[0], e1[1], s[1], e1[0]),
    ];
    let big_v = dot_lanes::<L>(d, q);
    let test = LaneTest {
        det,
        det_bound: L::mul(L::load(&soa.edge_norm), L::splat(frame.dir_norm)),
        big_u,
        big_v,
        big_w: L::sub(det, L::add(big_u, big_v)),
        big_t: dot_lanes::<L>(e2, q),
    };
    // Lanes with tiny values are redone by `moller_trumbore`.
    let deciding = [test.det, test.big_u, test.big_v, test.big_t];
    if LaneTest::<L>::tiny(soa, deciding) != 0 {
        return LaneTest::load(&soa.test::<false>(frame));
    }
    test
}
