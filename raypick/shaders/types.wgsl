// Structs shared by every raypick compute stage. Each one mirrors a `#[repr(C)]`
// struct in src/types.rs; tests/layout.rs checks sizes and member offsets with naga.

// A ray o + t*d over [tmin, tmax]; same layout as the `.rays` file (32 bytes).
struct Ray {
    origin: vec3<f32>,
    tmin: f32,
    dir: vec3<f32>,
    tmax: f32,
}

// Nearest hit of one ray (16 bytes); prim == MISS for a miss.
struct Hit {
    t: f32,
    u: f32,
    v: f32,
    prim: u32,
}

// The three vertices as the mesh gives them, and |v1 - v0|1 * |v2 - v0|1 (48 bytes).
// Degenerate triangles are all zeros and never hit.
struct PackedTriangle {
    v0: vec3<f32>,
    id: u32,
    v1: vec3<f32>,
    edge_norm: f32,
    v2: vec3<f32>,
    _pad2: u32,
}

// Per-dispatch parameters (uniform, 48 bytes).
struct TraceParams {
    ray_count: u32,
    tri_count: u32,
    tri_base: u32,
    cull: u32,
    accumulate: u32,
    miss_t: f32,
    one: f32,
    tri_first: u32,
    mode: u32,
    max_hits: u32,
    chunk_size: u32,
    _pad2: u32,
}

// One child of a BVH node: padded box, and a node index (count == 0) or a leaf of
// `count` triangles starting at `index`. An empty slot has index EMPTY_CHILD.
struct BvhChild {
    lo: vec3<f32>,
    index: u32,
    hi: vec3<f32>,
    count: u32,
}

// A BVH node: the boxes of both children (64 bytes).
struct BvhNode {
    children: array<BvhChild, 2>,
}

// A BvhNode from its four 16-byte rows (the stages read nodes row by row).
fn bvh_node(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>) -> BvhNode {
    return BvhNode(array<BvhChild, 2>(
        BvhChild(a.xyz, bitcast<u32>(a.w), b.xyz, bitcast<u32>(b.w)),
        BvhChild(c.xyz, bitcast<u32>(c.w), d.xyz, bitcast<u32>(d.w)),
    ));
}

// An eight-wide BVH node (128 bytes; mirrors WideBvhNode in src/types.rs): child c's
// box is origin + q * step per axis, q byte c % 4 of word c / 4 of the axis's pair
// of words in lo (minima) or hi (maxima); exact: first row of the node's exact
// boxes (8 minima per axis, then 8 maxima per axis, as f32) or EMPTY_CHILD; child:
// node index, first triangle or EMPTY_CHILD; count: a leaf's triangles, a byte per
// child. The stage reads it row by row (wide_node_at).
struct WideBvhNode {
    origin: vec3<f32>,
    exact: u32,
    step: vec3<f32>,
    _pad0: u32,
    lo: array<u32, 6>,
    hi: array<u32, 6>,
    child: array<u32, 8>,
    count: array<u32, 2>,
    _pad1: array<u32, 2>,
}

// Per-dispatch parameters of the traversal stages: BVH, instances and ray queries
// (uniform, 48 bytes; far_limit is read by the ray-query stage only, max_stack by the
// eight-wide BVH traversal only).
struct TraverseParams {
    ray_count: u32,
    cull: u32,
    accumulate: u32,
    miss_t: f32,
    one: f32,
    max_steps: u32,
    max_hits: u32,
    far_limit: f32,
    max_stack: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// One instance of the two-level traversal (64 bytes): rows of the inverse affine
// transform (object x = dot(inv0.xyz, world) + inv0.w), and where its mesh's BVH
// starts in the concatenated node and triangle arrays (node_count 0: nothing to hit).
struct PackedInstance {
    inv0: vec4<f32>,
    inv1: vec4<f32>,
    inv2: vec4<f32>,
    node_offset: u32,
    tri_offset: u32,
    node_count: u32,
    _pad0: u32,
}

// Nearest hit in an instance scene (32 bytes): a Hit plus the instance index.
struct InstanceHitRecord {
    t: f32,
    u: f32,
    v: f32,
    prim: u32,
    instance: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Parameters of the gather stage (uniform, 32 bytes); offsets and strides in words.
struct GatherParams {
    vertex_offset: u32,
    vertex_stride: u32,
    vertex_count: u32,
    index_u16: u32,
    index_first: u32,
    slot_count: u32,
    base_vertex: i32,
    use_order: u32,
}

// Parameters of one refit dispatch: the nodes of one tree level (uniform, 16 bytes).
struct RefitParams {
    first: u32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
}

const MISS: u32 = 0xffffffffu;
// The triangle id a traversal reports for a ray it leaves to the CPU (out of loop
// steps, or too far for the ray-query stage).
const UNFINISHED: u32 = 0xfffffffeu;
const EMPTY_CHILD: u32 = 0xffffffffu;
const CULL_NONE: u32 = 0u;
const CULL_BACK: u32 = 1u;
const CULL_FRONT: u32 = 2u;
const MODE_FAST: u32 = 0u;
const MODE_WATERTIGHT: u32 = 1u;
// The triangle test of the brute-force, BVH and instance stages (MODE_FAST or
// MODE_WATERTIGHT): a pipeline constant for the reason QUERY is one (below).
override MODE: u32 = MODE_WATERTIGHT;
// What a pipeline seeks (QUERY): the nearest hit, any hit, or the `max_hits` nearest
// hits sorted by (t, id). A pipeline constant, so each pipeline compiles only its own
// query's code (a driver that runs both sides of a branch under a mask would pay
// for all three).
const QUERY_CLOSEST: u32 = 0u;
const QUERY_ANY: u32 = 1u;
const QUERY_ALL: u32 = 2u;
override QUERY: u32 = QUERY_CLOSEST;
// Per-ray state of the all-hits query: number of listed hits, plus this flag when
// more hits exist than the list holds.
const LIST_TRUNCATED: u32 = 0x80000000u;

// An axis-aligned box.
struct Box {
    lo: vec3<f32>,
    hi: vec3<f32>,
}

// Pads a box outward like bvh/build.rs `pad`.
fn pad_box(lo: vec3<f32>, hi: vec3<f32>) -> Box {
    let a = max(abs(lo), abs(hi));
    let d = hi - lo;
    let magnitude = max(max(max(a.x, a.y), a.z), max(max(d.x, d.y), d.z));
    let margin = magnitude * 0x1p-18f + 0x1p-126f;
    return Box(lo - margin, hi + margin);
}

// The padded box of a triangle, like bvh/build.rs `triangle_box`: the box the BVH
// builder and refit give it.
fn triangle_box(t: PackedTriangle) -> Box {
    return pad_box(min(min(t.v0, t.v1), t.v2), max(max(t.v0, t.v1), t.v2));
}
