// The arithmetic self-check (src/gpu/arithmetic.rs, `GpuContext::check_arithmetic`):
// every stage of the triangle test for case i, written as bits for the host to
// compare with the CPU's (WORDS words per case; the host names them). Prepended with
// types.wgsl and the intersection files.
const WORDS: u32 = 40u;

@group(0) @binding(0) var<uniform> opaque: vec4<f32>;
@group(0) @binding(1) var<storage, read> rays: array<Ray>;
@group(0) @binding(2) var<storage, read> tris: array<PackedTriangle>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn put(i: u32, k: u32, x: f32) {
    out[i * WORDS + k] = bitcast<u32>(x);
}

fn put_test(i: u32, k: u32, n: Unnormalised, c: Candidate) {
    put(i, k, n.det);
    put(i, k + 1u, n.det_bound);
    put(i, k + 2u, n.big_u);
    put(i, k + 3u, n.big_v);
    put(i, k + 4u, n.big_w);
    put(i, k + 5u, n.big_t);
    // t, u and v mean something only for an accepted hit.
    put(i, k + 6u, select(0.0, c.t, c.accepted));
    put(i, k + 7u, select(0.0, c.u, c.accepted));
    put(i, k + 8u, select(0.0, c.v, c.accepted));
    out[i * WORDS + k + 9u] = u32(c.accepted);
}

@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= arrayLength(&rays) {
        return;
    }
    let one = opaque.x;
    let ray = rays[i];
    let tri = tris[i];
    let f = ray_frame(ray, one);
    put(i, 0u, f.dir.x);
    put(i, 1u, f.dir.y);
    put(i, 2u, f.dir.z);
    put(i, 3u, f.dir_norm);
    put(i, 4u, f.shear.x);
    put(i, 5u, f.shear.y);
    put(i, 6u, f.shear.z);
    put(i, 7u, f.shear_norm);
    put(i, 8u, f.t_scale);
    put(i, 9u, f.inv_dir.x);
    put(i, 10u, f.inv_dir.y);
    put(i, 11u, f.inv_dir.z);
    out[i * WORDS + 12u] = f.axes.x | (f.axes.y << 4u) | (f.axes.z << 8u);
    out[i * WORDS + 13u] = u32(f.live);
    let never = bitcast<f32>(0x7f800000u);
    let w = watertight(ray, f, tri, one);
    put_test(i, 14u, w, accept(w, ray, f, tri, CULL_NONE, never, one));
    let m = moller_trumbore(ray, f, tri, one);
    put_test(i, 24u, m, accept(m, ray, f, tri, CULL_NONE, never, one));
    // The correction steps, from first guesses up to 6 units off.
    put(i, 34u, reciprocal_from(ray.dir.x, i32(i % 13u) - 6));
    put(i, 35u, opaque.y / ray.dir.x);
    put(i, 36u, ray.dir.x * ray.dir.y + ray.origin.x);
    // Subnormal numbers: one read, one made by a product (kept, or flushed to zero).
    put(i, 37u, opaque.w * one);
    put(i, 38u, opaque.z * opaque.z);
}
