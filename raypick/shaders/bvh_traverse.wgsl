// BVH traversal: one invocation per ray, nearest hit kept.
// Mirrored by src/cpu/bvh_traverse.rs. Prepended with types.wgsl, the intersection
// files, hit_list.wgsl, query.wgsl (what is kept of the hits, shared with the
// eight-wide traversal) and bvh_walk.wgsl (the walk's steps, shared with the
// instance traversal).
//
// A fixed private stack of MAX_DEPTH entries (the builder bounds the depth), both
// child boxes of a node tested together, the nearer child visited first, leaf
// children tested before the next node is visited (the nearer leaf first), the
// farther child pushed with its entry distance and skipped on pop once a nearer hit
// is known. Box tests are conservative (padded boxes and a
// relative margin), triangles use the brute-force test, and a hit replaces the best
// one when nearer or equally near with a lower triangle id: the same answer as brute
// force. The loop is bounded by params.max_steps (node visits plus triangle tests;
// some drivers stop loops after 65,535 iterations): a ray that runs out is reported
// as UNFINISHED and the host completes it on the CPU. When `accumulate` is set, the
// best hit so far comes from the hit buffer (earlier chunks of a BVH too large for
// one binding).
//
// QUERY (a pipeline constant) selects what is kept (query.wgsl): the
// nearest hit, any hit (the
// traversal ends at the first accepted one), or the `max_hits` nearest in `all_hits`
// with the list state in `hits[ray].prim` (moves of listed hits count as loop steps).
// Subtrees are skipped when entered beyond `bound`: the nearest hit's t, +inf for
// any hit, and for the list the t of its last hit once it is full and more hits are
// known to exist (list_bound), so a subtree that could still change the answer is
// always visited.
//
// The loops are shaped for drivers that run invocations as SIMD lanes under a mask
// (llvmpipe; GPUs when lanes diverge): there every branch of an `if` costs all lanes,
// and a loop body runs at least once and then as long as any lane needs it. So the
// inner loop only visits nodes (popping the stack when a lane has none to go on
// with) until each lane has leaf children to test or nothing left, and then one loop
// tests the leaves, both leaf children of a node in turn. The order of work is the
// CPU mirror's, so the answers and step counts are the same. Every loop runs at most
// max_steps + 1 times per ray.

@group(0) @binding(0) var<uniform> params: TraverseParams;
// BvhNode and PackedTriangle, read as rows of 16 bytes (node_at, triangle_at).
@group(0) @binding(1) var<storage, read> nodes: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> triangles: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(5) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn bvh_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    let first = ray_index * params.max_hits;
    let start = start_ray(ray_index, ray, first);
    if !start.go {
        return;
    }
    var kept = start.kept;
    let frame = ray_frame(ray, params.one);
    let boxes = ray_boxes(ray, frame);
    // Pending subtrees: node index and entry distance (as bits).
    var stack: array<vec2<u32>, MAX_DEPTH>;
    var depth = 0u;
    var node_index = 0u;
    var steps = 0u;
    var finished = false; // nothing left to visit, or out of steps
    loop {
        // Visit nodes until one has leaf children to test, or none is left.
        var visit = NO_VISIT;
        loop {
            node_index = take_next(node_index, &stack, &depth, kept.bound);
            if node_index == EMPTY_CHILD {
                finished = true;
                break;
            }
            if out_of_steps(&steps, params.max_steps) {
                give_up(&kept);
                finished = true;
                break;
            }
            visit = visit_node(node_at(node_index), boxes, min(kept.bound, ray.tmax), kept.bound, params.one);
            node_index = follow(visit, &stack, &depth);
            if visit.count_a + visit.count_b > 0u {
                break;
            }
        }
        let total = visit.count_a + visit.count_b;
        for (var j = 0u; j < total; j++) {
            let i = leaf_triangle(visit, j, kept.bound);
            if i == EMPTY_CHILD {
                break;
            }
            test_triangle(i, ray, frame, first, &kept, &steps);
            if kept.done {
                break;
            }
        }
        if kept.done || finished {
            break;
        }
    }
    finish(ray_index, kept);
}
