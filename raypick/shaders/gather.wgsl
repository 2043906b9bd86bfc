// Gather: reads triangles from a renderer's vertex and index buffers (positions at
// an offset and stride, 16- or 32-bit indices, a base vertex) and writes them packed
// as the kernels read them. Mirrored by src/cpu/gather.rs. Prepended with types.wgsl.
//
// Degeneracy is decided exactly like the CPU's f64 cross product, on integer bits:
// a product of two f32 is an odd integer below 2^48 times a power of two, so two
// products are compared exactly as (sign, 48-bit integer, exponent). An index whose
// vertex is out of range gives a degenerate (all-zero) triangle; no read goes past a
// buffer's end.

@group(0) @binding(0) var<uniform> gather_params: GatherParams;
@group(0) @binding(1) var<storage, read> vertex_words: array<u32>;
@group(0) @binding(2) var<storage, read> index_words: array<u32>;
@group(0) @binding(3) var<storage, read> order: array<u32>;
@group(0) @binding(4) var<storage, read_write> packed: array<PackedTriangle>;

const GATHER_WORKGROUP: u32 = 64u;
const NO_VERTEX: u32 = 0xffffffffu;
const F32_MAX: f32 = 3.40282347e38f;

// Index element `e` of the draw, or NO_VERTEX outside the index words.
fn read_index(e: u32) -> u32 {
    let element = gather_params.index_first + e;
    if gather_params.index_u16 == 1u {
        let word = element / 2u;
        if word >= arrayLength(&index_words) {
            return NO_VERTEX;
        }
        return (index_words[word] >> (16u * (element % 2u))) & 0xffffu;
    }
    if element >= arrayLength(&index_words) {
        return NO_VERTEX;
    }
    return index_words[element];
}

// The vertex index + base_vertex, or NO_VERTEX outside 0..vertex_count.
fn vertex_of(index: u32) -> u32 {
    let n = gather_params.vertex_count;
    let b = gather_params.base_vertex;
    if b >= 0 {
        let ub = u32(b);
        if index < n && ub < n - index {
            return index + ub;
        }
        return NO_VERTEX;
    }
    let nb = u32(-(b + 1)) + 1u;
    if index >= nb && index - nb < n {
        return index - nb;
    }
    return NO_VERTEX;
}

struct Corner {
    bits: vec3<u32>,
    ok: bool,
}

// The position bits of vertex `v`, not ok past the end of the vertex words.
fn load_vertex(v: u32) -> Corner {
    let word = gather_params.vertex_offset + v * gather_params.vertex_stride;
    if word + 2u >= arrayLength(&vertex_words) {
        return Corner(vec3<u32>(0u), false);
    }
    return Corner(vec3<u32>(vertex_words[word], vertex_words[word + 1u], vertex_words[word + 2u]), true);
}

fn finite_bits(bits: u32) -> bool {
    return ((bits >> 23u) & 0xffu) != 0xffu;
}

// An f32 as (sign, odd integer m, exponent e + 1000): value ±m·2^e; zero when m == 0.
fn odd_form(bits: u32) -> vec3<u32> {
    let sign = bits >> 31u;
    let exponent = (bits >> 23u) & 0xffu;
    let fraction = bits & 0x7fffffu;
    var m = fraction;
    var e = -149;
    if exponent != 0u {
        m = fraction | 0x800000u;
        e = i32(exponent) - 150;
    }
    if m == 0u {
        return vec3<u32>(0u);
    }
    let tz = countTrailingZeros(m);
    return vec3<u32>(sign, m >> tz, u32(e + i32(tz) + 1000));
}

// The exact product of two non-zero odd forms: (sign, high, low, exponent).
fn exact_product(a: vec3<u32>, b: vec3<u32>) -> vec4<u32> {
    let a1 = a.y >> 12u;
    let a0 = a.y & 0xfffu;
    let b1 = b.y >> 12u;
    let b0 = b.y & 0xfffu;
    let t0 = a0 * b0;
    let t1 = a1 * b0 + a0 * b1;
    let t2 = a1 * b1;
    let mid = t1 + (t0 >> 12u);
    let high = t2 + (mid >> 12u);
    let low = ((mid & 0xfffu) << 12u) | (t0 & 0xfffu);
    return vec4<u32>(a.x ^ b.x, high, low, a.z + b.z);
}

// Whether a·b == c·d exactly, for finite f32 bits.
fn products_equal(a: u32, b: u32, c: u32, d: u32) -> bool {
    let fa = odd_form(a);
    let fb = odd_form(b);
    let fc = odd_form(c);
    let fd = odd_form(d);
    let ab_zero = fa.y == 0u || fb.y == 0u;
    let cd_zero = fc.y == 0u || fd.y == 0u;
    if ab_zero || cd_zero {
        return ab_zero && cd_zero;
    }
    return all(exact_product(fa, fb) == exact_product(fc, fd));
}

// Whether cross(e1, e2) is exactly zero, for finite f32 bits.
fn cross_is_zero(e1: vec3<u32>, e2: vec3<u32>) -> bool {
    return products_equal(e1.y, e2.z, e1.z, e2.y)
        && products_equal(e1.z, e2.x, e1.x, e2.z)
        && products_equal(e1.x, e2.y, e1.y, e2.x);
}

fn degenerate(id: u32) -> PackedTriangle {
    return PackedTriangle(vec3<f32>(0.0), id, vec3<f32>(0.0), 0.0, vec3<f32>(0.0), 0u);
}

// Packs the triangle with these vertex bits like prepare.rs pack_triangle.
fn pack_bits(c0: vec3<u32>, c1: vec3<u32>, c2: vec3<u32>, id: u32) -> PackedTriangle {
    let v0 = bitcast<vec3<f32>>(c0);
    let v1 = bitcast<vec3<f32>>(c1);
    let v2 = bitcast<vec3<f32>>(c2);
    let e1 = v1 - v0;
    let e2 = v2 - v0;
    let b1 = bitcast<vec3<u32>>(e1);
    let b2 = bitcast<vec3<u32>>(e2);
    let finite = finite_bits(c0.x) && finite_bits(c0.y) && finite_bits(c0.z)
        && finite_bits(b1.x) && finite_bits(b1.y) && finite_bits(b1.z)
        && finite_bits(b2.x) && finite_bits(b2.y) && finite_bits(b2.z);
    if !finite || cross_is_zero(b1, b2) {
        return degenerate(id);
    }
    let norm = (abs(e1.x) + abs(e1.y) + abs(e1.z)) * (abs(e2.x) + abs(e2.y) + abs(e2.z));
    var edge_norm = norm;
    if !finite_bits(bitcast<u32>(norm)) {
        edge_norm = F32_MAX;
    }
    return PackedTriangle(v0, id, v1, edge_norm, v2, 0u);
}

// Triangle `id` of the draw, packed; degenerate when an index is out of range.
fn gather_triangle(id: u32) -> PackedTriangle {
    var corners: array<vec3<u32>, 3>;
    for (var c = 0u; c < 3u; c++) {
        let v = vertex_of(read_index(3u * id + c));
        if v == NO_VERTEX {
            return degenerate(id);
        }
        let corner = load_vertex(v);
        if !corner.ok {
            return degenerate(id);
        }
        corners[c] = corner.bits;
    }
    return pack_bits(corners[0], corners[1], corners[2], id);
}

@compute @workgroup_size(GATHER_WORKGROUP)
fn gather(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let slot = gid.y * groups.x * GATHER_WORKGROUP + gid.x;
    if slot >= gather_params.slot_count {
        return;
    }
    var id = slot;
    if gather_params.use_order == 1u {
        id = order[slot];
    }
    packed[slot] = gather_triangle(id);
}
