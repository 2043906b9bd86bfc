//! The CPU mirror of `shaders/gather.wgsl`: reads triangles from vertex and index
//! words laid out as a renderer draws them (see [`crate::gather`]) and packs them
//! exactly like [`crate::prepare::pack_triangle`], with the same functions and
//! loop order as the shader. Everything is decided on integer bits, so the GPU
//! gets the same answer as the CPU's f64 test without f64 arithmetic.

use glam::Vec3;

use crate::types::{GatherParams, PackedTriangle};

/// Marks an index or vertex that does not exist.
pub const NO_VERTEX: u32 = u32::MAX;

/// Index element `e` of the draw (relative to `index_first`), or [`NO_VERTEX`]
/// when it lies outside the index words.
pub fn read_index(params: &GatherParams, index_words: &[u32], e: u32) -> u32 {
    let element = params.index_first + e;
    if params.index_u16 == 1 {
        let word = element / 2;
        if word as usize >= index_words.len() {
            return NO_VERTEX;
        }
        return (index_words[word as usize] >> (16 * (element % 2))) & 0xffff;
    }
    if element as usize >= index_words.len() {
        return NO_VERTEX;
    }
    index_words[element as usize]
}

/// The vertex `index + base_vertex`, or [`NO_VERTEX`] outside `0..vertex_count`
/// (computed without overflow in 32-bit unsigned arithmetic, as in WGSL).
pub fn vertex_of(params: &GatherParams, index: u32) -> u32 {
    let n = params.vertex_count;
    let b = params.base_vertex;
    if b >= 0 {
        let ub = b as u32;
        if index < n && ub < n - index {
            return index + ub;
        }
        return NO_VERTEX;
    }
    let nb = (-(b + 1)) as u32 + 1;
    if index >= nb && index - nb < n {
        return index - nb;
    }
    NO_VERTEX
}

/// The position bits of vertex `v`, or `None` past the end of the vertex words.
pub fn load_vertex(params: &GatherParams, vertex_words: &[u32], v: u32) -> Option<[u32; 3]> {
    let word = params.vertex_offset as usize + v as usize * params.vertex_stride as usize;
    if word + 2 >= vertex_words.len() {
        return None;
    }
    Some([
        vertex_words[word],
        vertex_words[word + 1],
        vertex_words[word + 2],
    ])
}

/// Whether the f32 with these bits is finite.
pub fn finite_bits(bits: u32) -> bool {
    (bits >> 23) & 0xff != 0xff
}

/// An f32 as `sign`, an odd integer `m` and an exponent `e` (value
/// `±m · 2^e`), or `None` for zero.
pub fn odd_form(bits: u32) -> Option<(u32, u32, i32)> {
    let sign = bits >> 31;
    let exponent = (bits >> 23) & 0xff;
    let fraction = bits & 0x7f_ffff;
    let (m, e) = if exponent == 0 {
        (fraction, -149)
    } else {
        (fraction | 0x80_0000, exponent as i32 - 150)
    };
    if m == 0 {
        return None;
    }
    let tz = m.trailing_zeros();
    Some((sign, m >> tz, e + tz as i32))
}

/// The exact product of two odd forms as (sign, high, low, exponent): the
/// 48-bit product of the integers in two canonical parts (`low` holds 24 bits).
pub fn exact_product(a: (u32, u32, i32), b: (u32, u32, i32)) -> (u32, u32, u32, i32) {
    let (a1, a0) = (a.1 >> 12, a.1 & 0xfff);
    let (b1, b0) = (b.1 >> 12, b.1 & 0xfff);
    let t0 = a0 * b0;
    let t1 = a1 * b0 + a0 * b1;
    let t2 = a1 * b1;
    let mid = t1 + (t0 >> 12);
    let high = t2 + (mid >> 12);
    let low = ((mid & 0xfff) << 12) | (t0 & 0xfff);
    (a.0 ^ b.0, high, low, a.2 + b.2)
}

/// Whether `a·b == c·d` exactly (as real numbers), for finite f32 bits.
pub fn products_equal(a: u32, b: u32, c: u32, d: u32) -> bool {
    let ab = odd_form(a).zip(odd_form(b));
    let cd = odd_form(c).zip(odd_form(d));
    match (ab, cd) {
        (None, None) => true,
        (Some((a, b)), Some((c, d))) => exact_product(a, b) == exact_product(c, d),
        _ => false,
    }
}

/// Whether `cross(e1, e2)` is exactly zero, for finite f32 bits.
pub fn cross_is_zero(e1: [u32; 3], e2: [u32; 3]) -> bool {
    products_equal(e1[1], e2[2], e1[2], e2[1])
        && products_equal(e1[2], e2[0], e1[0], e2[2])
        && products_equal(e1[0], e2[1], e1[1], e2[0])
}

/// Packs the triangle with these vertex bits like [`crate::prepare::pack_triangle`].
pub fn pack_bits(corners: [[u32; 3]; 3], id: u32) -> PackedTriangle {
    let [v0, v1, v2] = corners.map(|c| Vec3::from_array(c.map(f32::from_bits)));
    let e1 = v1 - v0;
    let e2 = v2 - v0;
    let bits = |v: Vec3| v.to_array().map(f32::to_bits);
    let finite = corners[0]
        .into_iter()
        .chain(bits(e1))
        .chain(bits(e2))
        .all(finite_bits);
    if !finite || cross_is_zero(bits(e1), bits(e2)) {
        return PackedTriangle {
            id,
            ..Default::default()
        };
    }
    let norm = (e1.x.abs() + e1.y.abs() + e1.z.abs()) * (e2.x.abs() + e2.y.abs() + e2.z.abs());
    PackedTriangle {
        v0,
        id,
        v1,
        edge_norm: if finite_bits(norm.to_bits()) {
            norm
        } else {
            f32::MAX
        },
        v2,
        ..Default::default()
    }
}

/// Triangle `id` of the draw, packed; degenerate when an index is out of range.
pub fn gather_triangle(
    params: &GatherParams,
    vertex_words: &[u32],
    index_words: &[u32],
    id: u32,
) -> PackedTriangle {
    let mut corners = [[0u32; 3]; 3];
    for (c, corner) in corners.iter_mut().enumerate() {
        let v = vertex_of(params, read_index(params, index_words, 3 * id + c as u32));
        if v == NO_VERTEX {
            return PackedTriangle {
                id,
                ..Default::default()
            };
        }
        match load_vertex(params, vertex_words, v) {
            Some(bits) => *corner = bits,
            None => {
                return PackedTriangle {
                    id,
                    ..Default::default()
                };
            }
        }
    }
    pack_bits(corners, id)
}

/// Every output slot: slot `j` takes triangle `order[j]` (or `j` without an order).
pub fn gather(
    params: &GatherParams,
    vertex_words: &[u32],
    index_words: &[u32],
    order: &[u32],
) -> Vec<PackedTriangle> {
    (0..params.slot_count)
        .map(|slot| {
            let id = if params.use_order == 1 {
                order[slot as usize]
            } else {
                slot
            };
            gather_triangle(params, vertex_words, index_words, id)
        })
        .collect()
}
