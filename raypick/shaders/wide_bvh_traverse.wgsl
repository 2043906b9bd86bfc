// Eight-wide BVH traversal: one invocation per ray, nearest hit kept.
// Mirrored by src/cpu/wide_bvh_traverse.rs. Prepended with types.wgsl, the
// intersection files, hit_list.wgsl, query.wgsl (what is kept of the hits),
// bvh_walk.wgsl (triangle_at, pop_pending, take_next, out_of_steps) and
// wide_walk.wgsl (the node, its visit and its leaves).
//
// Nodes are WideBvhNode (types.wgsl): eight children, boxes quantized outward to 8
// bits per plane, leaves the binary tree's own (first triangle and count in the
// triangle buffer), exact boxes after the nodes for the few that cannot quantize.
// At each node every child's box is decoded and tested as the binary traversal
// tests its two (enter_child), and the entered children are ordered nearest first
// (ties in slot order). The entered interior children but the nearest are pushed
// farthest first with their entry distances; the entered leaves' triangles are
// tested at once, nearest leaf first, a leaf skipped once a nearer hit beats it;
// then the nearest interior child is visited, or the nearest pending entry that
// can still change the answer. The answers are the binary traversal's, bit for
// bit: decoded boxes hold the binary boxes and triangles use the same test.
//
// The stack holds MAX_DEPTH entries of 8 bytes (node index, entry distance as
// bits), of which params.max_stack are used: a ray that would push beyond is
// reported as UNFINISHED and the host completes it on the CPU, as it does a ray
// that runs out of params.max_steps (node visits plus triangle tests). `accumulate`
// and QUERY work as in bvh_traverse.wgsl, and so do the loops' shapes: an inner
// loop visits nodes until one has leaves to test or none is left, then one loop
// tests those leaves' triangles.

@group(0) @binding(0) var<uniform> params: TraverseParams;
// WideBvhNode rows and exact boxes (wide_node_at, wide_child), PackedTriangle rows
// (triangle_at).
@group(0) @binding(1) var<storage, read> nodes: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> triangles: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(5) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn wide_bvh_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    let first_slot = ray_index * params.max_hits;
    let start = start_ray(ray_index, ray, first_slot);
    if !start.go {
        return;
    }
    var kept = start.kept;
    let frame = ray_frame(ray, params.one);
    let boxes = ray_boxes(ray, frame);
    let capacity = min(params.max_stack, MAX_DEPTH);
    // Pending subtrees: node index and entry distance (as bits).
    var stack: array<vec2<u32>, MAX_DEPTH>;
    var depth = 0u;
    var node_index = 0u;
    var steps = 0u;
    var finished = false; // nothing left to visit, out of steps, or out of stack
    // The last node visited, its children's entry distances, and its entered leaves
    // not yet tested (bit per lane).
    var node = WideRows();
    var entry: array<f32, WIDTH>;
    var leaves = 0u;
    loop {
        // Visit nodes until one has leaves to test, or none is left.
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
            node = wide_node_at(node_index);
            let limit = min(kept.bound, ray.tmax);
            let visit = visit_wide(node, boxes, limit, params.one, &entry, &leaves, &stack, &depth, capacity);
            if visit.overflow {
                give_up(&kept);
                finished = true;
                break;
            }
            node_index = visit.next;
            if leaves != 0u {
                break;
            }
        }
        if finished {
            break; // no leaves left to test, or given up
        }
        // The leaves' triangles, nearest leaf first.
        var walk = LeafWalk(0u, 0u, 0u);
        loop {
            let i = next_triangle(&walk, node, &entry, &leaves, kept.bound);
            if i == EMPTY_CHILD {
                break;
            }
            test_triangle(i, ray, frame, first_slot, &kept, &steps);
            if kept.done {
                break;
            }
        }
        if kept.done {
            break;
        }
    }
    finish(ray_index, kept);
}
