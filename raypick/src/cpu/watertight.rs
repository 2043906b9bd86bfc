//! The watertight test (Woop, Benthin, Wald, JCGT 2013), operation for operation the
//! same as `shaders/watertight.wgsl` (whose header explains the method).
//!
//! Vertices are moved to the ray origin and sheared so that the ray runs along +z;
//! 2D edge functions of the projected triangle decide inside-ness. Rounding never
//! flips an edge function's sign, it can only make it zero; an exactly-zero edge
//! function is recomputed exactly with Dekker's error-free product in f32 (what the
//! shader can do without 64-bit floats; [`edge_function`] is checked against f64 in
//! the tests). A test whose deciding values are tiny runs again on its offsets
//! scaled by a power of two
//! ([`offset_scale`](super::intersect::offset_scale)), so that no product falls
//! below f32's normal range, where GPUs may flush.
//!
//! The block kernel ([`watertight_lanes`]) first evaluates every lane with rounded
//! edge functions, which vectorises, then redoes the rare lanes with an exactly-zero
//! or tiny edge function with [`watertight`]: the same values the shader computes.
//! The wide BVH's leaf blocks take the same arithmetic on explicit vector lanes
//! (`watertight_block`).

use super::intersect::{
    LaneTest, Lanes, RayFrame, SoaTriangles, Unnormalised, redo_if_tiny, tiny,
};
use super::vector::Lanes8;

/// Veltkamp's splitting constant for f32: `2^12 + 1`.
const SPLITTER: f32 = 4097.0;

/// Veltkamp's split: `a == hi + lo` with 12-bit halves.
#[inline(always)]
fn split(a: f32) -> (f32, f32) {
    let c = SPLITTER * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

/// The rounding error of `p = a * b` (rounded): `a * b == p + product_error(a, b, p)`
/// exactly, while nothing over- or underflows (Dekker).
#[inline(always)]
pub fn product_error(a: f32, b: f32, p: f32) -> f32 {
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    ((ah * bh - p) + ah * bl + al * bh) + al * bl
}

/// `a * b - c * d` with the sign of the exact value: the rounded difference of the
/// rounded products, or, when that is exactly zero (the products round equal), the
/// exact difference of their rounding errors, rounded once.
#[inline(always)]
pub fn edge_function(a: f32, b: f32, c: f32, d: f32) -> f32 {
    let p = a * b;
    let q = c * d;
    let e = p - q;
    if e != 0.0 {
        return e;
    }
    product_error(a, b, p) - product_error(c, d, q)
}

/// `a * b - c * d` rounded, without the exact recomputation of zeros.
#[inline(always)]
fn edge_function_rounded(a: f32, b: f32, c: f32, d: f32) -> f32 {
    a * b - c * d
}

/// The ray origin's coordinates in the frame's axis order `[kx, ky, kz]`.
#[inline(always)]
fn permuted_origin(frame: &RayFrame) -> [f32; 3] {
    frame.axes.map(|axis| frame.origin[axis])
}

/// A vertex's offset from the ray's origin, in the frame's axis order; `origin` is
/// [`permuted_origin`].
#[inline(always)]
fn offset(v: [f32; 3], origin: [f32; 3], frame: &RayFrame) -> [f32; 3] {
    let [x, y, z] = frame.axes.map(|axis| v[axis]);
    [x - origin[0], y - origin[1], z - origin[2]]
}

/// An [`offset`] in the ray's sheared frame.
#[inline(always)]
fn shear([ax, ay, az]: [f32; 3], frame: &RayFrame) -> [f32; 3] {
    let [sx, sy, sz] = frame.shear;
    [ax - sx * az, ay - sy * az, sz * az]
}

/// The watertight test on vertices already in the ray's sheared frame, with edge
/// functions from `edge`.
#[inline(always)]
fn watertight_sheared(
    frame: &RayFrame,
    [[ax, ay, az], [bx, by, bz], [cx, cy, cz]]: [[f32; 3]; 3],
    edge_norm: f32,
    edge: impl Fn(f32, f32, f32, f32) -> f32,
) -> Unnormalised {
    let big_w = edge(cx, by, cy, bx);
    let big_u = edge(ax, cy, ay, cx);
    let big_v = edge(bx, ay, by, ax);
    Unnormalised {
        det: big_w + big_u + big_v,
        det_bound: edge_norm * frame.shear_norm,
        big_u,
        big_v,
        big_w,
        big_t: big_w * az + big_u * bz + big_v * cz,
    }
}

/// The values the watertight test decides by (see
/// [`tiny`](super::intersect::tiny)): `big_u`, `big_v`, `big_w`, `big_t`.
#[inline(always)]
fn deciding(n: &Unnormalised) -> [f32; 4] {
    [n.big_u, n.big_v, n.big_w, n.big_t]
}

/// The watertight test for one ray and one triangle (`[v0, v1, v2]`), redone on
/// scaled offsets when its deciding values are [`tiny`](super::intersect::tiny)
/// (by [`offset_scale`](super::intersect::offset_scale)).
#[inline(always)]
pub fn watertight(frame: &RayFrame, vertices: [[f32; 3]; 3], edge_norm: f32) -> Unnormalised {
    let origin = permuted_origin(frame);
    let offsets = vertices.map(|v| offset(v, origin, frame));
    let on = |offsets: [[f32; 3]; 3], edge_norm| {
        watertight_sheared(frame, offsets.map(|a| shear(a, frame)), edge_norm, edge_function)
    };
    redo_if_tiny(on(offsets, edge_norm), deciding, offsets, vertices, on)
}

/// [`shear`] of the [`offset`] of one vertex of every lane: on whole rows, one output row
/// per statement, on copies of the rows in the frame's axis order, so that it
/// vectorises.
#[inline(always)]
fn shear_rows<const N: usize>(
    vertex: &[[f32; N]; 3],
    [ox, oy, oz]: [f32; 3],
    frame: &RayFrame,
) -> [[f32; N]; 3] {
    let [kx, ky, kz] = frame.axes;
    let (x, y, z) = (vertex[kx], vertex[ky], vertex[kz]);
    let [sx, sy, sz] = frame.shear;
    let mut out = [[0.0f32; N]; 3];
    for lane in 0..N {
        let az = z[lane] - oz;
        out[0][lane] = (x[lane] - ox) - sx * az;
        out[1][lane] = (y[lane] - oy) - sy * az;
        out[2][lane] = sz * az;
    }
    out
}

/// The watertight test of every lane of a block. The axis permutation is applied
/// to whole rows once per block, so the per-lane arithmetic has no indexing and
/// vectorises; it is operation for operation [`watertight`]'s.
#[inline(always)]
pub fn watertight_lanes<const N: usize>(soa: &SoaTriangles<N>, frame: &RayFrame) -> Lanes<N> {
    let origin = permuted_origin(frame);
    let [v0, v1, v2] = &soa.vertices;
    let sheared = [
        shear_rows(v0, origin, frame),
        shear_rows(v1, origin, frame),
        shear_rows(v2, origin, frame),
    ];
    let mut lanes = Lanes::default();
    let mut redo = false;
    for (lane, &edge_norm) in soa.edge_norm.iter().enumerate() {
        let vertex = |v: usize| {
            [
                sheared[v][0][lane],
                sheared[v][1][lane],
                sheared[v][2][lane],
            ]
        };
        let n = watertight_sheared(
            frame,
            [vertex(0), vertex(1), vertex(2)],
            edge_norm,
            edge_function_rounded,
        );
        redo |= soa.hittable(lane) & tiny(deciding(&n));
        lanes.set(lane, n);
    }
    if redo {
        lanes = lanes.redo_tiny(soa, deciding, |lane| {
            watertight(frame, soa.triangle(lane), soa.edge_norm[lane])
        });
    }
    lanes
}

/// One vertex row of eight lanes (`rows[axis]`), sheared as [`shear_rows`] does:
/// `[x, y, z]` in the frame's axis order, origin and shear given per lane.
#[inline(always)]
fn shear_vertex<L: Lanes8>(rows: &[[f32; 8]; 3], axes: [usize; 3], origin: [L::V; 3], shear: [L::V; 3]) -> [L::V; 3] {
    let az = L::sub(L::load(&rows[axes[2]]), origin[2]);
    [
        L::sub(L::sub(L::load(&rows[axes[0]]), origin[0]), L::mul(shear[0], az)),
        L::sub(L::sub(L::load(&rows[axes[1]]), origin[1]), L::mul(shear[1], az)),
        L::mul(shear[2], az),
    ]
}

/// The watertight test of a block of eight triangles (a wide BVH's leaf block) on
/// explicit vector lanes: operation for operation [`watertight_lanes`]'s
/// arithmetic, kept in registers. A block with an exactly-zero or tiny edge
/// function takes [`watertight_lanes`]' values instead, which redo that lane.
#[inline(always)]
pub(super) fn watertight_block<L: Lanes8>(soa: &SoaTriangles<8>, frame: &RayFrame) -> LaneTest<L> {
    let [ox, oy, oz] = permuted_origin(frame);
    let origin = [L::splat(ox), L::splat(oy), L::splat(oz)];
    let shear = [L::splat(frame.shear[0]), L::splat(frame.shear[1]), L::splat(frame.shear[2])];
    let [v0, v1, v2] = &soa.vertices;
    let [ax, ay, az] = shear_vertex::<L>(v0, frame.axes, origin, shear);
    let [bx, by, bz] = shear_vertex::<L>(v1, frame.axes, origin, shear);
    let [cx, cy, cz] = shear_vertex::<L>(v2, frame.axes, origin, shear);
    // As `watertight_sheared`, with `edge_function_rounded`.
    let big_w = L::mul_sub_mul(cx, by, cy, bx);
    let big_u = L::mul_sub_mul(ax, cy, ay, cx);
    let big_v = L::mul_sub_mul(bx, ay, by, ax);
    let test = LaneTest {
        det: L::add(L::add(big_w, big_u), big_v),
        det_bound: L::mul(L::load(&soa.edge_norm), L::splat(frame.shear_norm)),
        big_u,
        big_v,
        big_w,
        big_t: L::add(L::add(L::mul(big_w, az), L::mul(big_u, bz)), L::mul(big_v, cz)),
    };
    let deciding = [test.big_u, test.big_v, test.big_w, test.big_t];
    if LaneTest::<L>::tiny(soa, deciding) != 0 {
        return LaneTest::load(&watertight_lanes(soa, frame));
    }
    test
}
