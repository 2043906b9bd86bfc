// Two-level traversal of an instance scene: one invocation per ray, nearest hit kept.
// Mirrored by src/cpu/instance_traverse.rs. Prepended with types.wgsl, the
// intersection files, bvh_walk.wgsl (the walk's steps shared with bvh_traverse.wgsl:
// the top level's node visit, the stacks), wide_walk.wgsl (the eight-wide walk
// shared with wide_bvh_traverse.wgsl) and instance_space.wgsl.
//
// One loop walks two trees. The top level (TLAS) holds one instance per leaf; its
// nodes are handled like a mesh BVH's (both child boxes tested together, the nearer
// child taken next, the farther pushed with its entry distance and skipped on pop
// once a nearer hit is known), except that a leaf is also an item taken or pushed:
// taking it enters the instance. Entering an instance takes the ray into object
// space by the rows of the inverse transform (origin as a point, direction as a
// vector, not renormalised, so t means the same in both spaces; every product
// multiplied by `one` so it is rounded on its own, as on the CPU) and walks the
// instance's mesh BVH, whose nodes and triangles sit in the shared arrays at the
// instance's offsets, with a stack of its own; when that stack runs empty, the top
// level goes on. The meshes' node layout is fixed when the module is assembled
// (BINARY_MESHES, prepended by src/shaders.rs): binary nodes (BvhNode), visited as
// bvh_traverse.wgsl visits a mesh's, or eight-wide ones (WideBvhNode), as
// wide_bvh_traverse.wgsl does. The top-level stack and the binary mesh stack hold
// MAX_DEPTH entries (the trees are depth-bounded), the eight-wide mesh stack
// params.max_stack: a ray that would push beyond is reported UNFINISHED.
//
// A hit replaces the best one when nearer, or as near with a lower instance index,
// or the same instance and a lower triangle id: the answer of a naive loop over all
// instances and triangles, whatever the visiting order. The loops are bounded by
// params.max_steps (top-level items, mesh nodes and triangle tests); a ray that runs
// out is reported UNFINISHED and the host completes it on the CPU.
//
// The loops are shaped for drivers that run invocations as SIMD lanes under a mask,
// like bvh_traverse.wgsl's (see its header): one loop takes top-level items until a
// lane enters an instance or has none left, one visits mesh nodes until a lane has
// leaf children to test or its mesh is done, and one tests those leaves' triangles.
// MODE (a pipeline constant) selects the triangle test, QUERY the nearest hit or
// any hit (QUERY_ANY: the first accepted hit ends the walk).

@group(0) @binding(0) var<uniform> params: TraverseParams;
// BvhNode (the top level), PackedInstance, WideBvhNode and its exact boxes (every
// mesh's, one after the other), and PackedTriangle, read as rows of 16 bytes
// (tlas_node_at, instance_at, wide_node_at, triangle_at).
@group(0) @binding(1) var<storage, read> tlas: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> instances: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> nodes: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> triangles: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> rays: array<Ray>;
@group(0) @binding(6) var<storage, read_write> hits: array<InstanceHitRecord>;

const WORKGROUP_SIZE: u32 = 64u;
// Marks a top-level item that is an instance (a leaf), not a node.
const LEAF_BIT: u32 = 0x80000000u;
// No item / no instance.
const NONE: u32 = 0xffffffffu;

// Top-level node n.
fn tlas_node_at(n: u32) -> BvhNode {
    return bvh_node(tlas[n * 4u], tlas[n * 4u + 1u], tlas[n * 4u + 2u], tlas[n * 4u + 3u]);
}

// Offers triangle `index` of the shared array to a ray of `instance` in its object
// space (local, frame): kept in *best when it beats it. True when the walk is over
// (QUERY_ANY: the first accepted hit will do).
fn offer_triangle(index: u32, local: Ray, frame: RayFrame, instance: u32, best: ptr<function, InstanceHitRecord>) -> bool {
    let tri = triangle_at(index);
    let cand = intersect(local, frame, tri, params.cull, params.miss_t, params.one, MODE);
    if cand.accepted && nearer_instance(cand.t, instance, tri.id, *best) {
        *best = InstanceHitRecord(cand.t, cand.u, cand.v, tri.id, instance, 0u, 0u, 0u);
        return QUERY == QUERY_ANY;
    }
    return false;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn instance_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    var best = no_hit();
    if all(ray.dir == vec3<f32>(0.0)) {
        hits[ray_index] = best; // an invalid ray
        return;
    }
    let one = params.one;
    let world = ray_frame(ray, one);
    let world_boxes = ray_boxes(ray, world);
    // Pending top-level items and mesh nodes: index and entry distance (as bits).
    var tlas_stack: array<vec2<u32>, MAX_DEPTH>;
    var tlas_depth = 0u;
    var blas_stack: array<vec2<u32>, MAX_DEPTH>;
    var blas_depth = 0u;
    // The top-level item to take next (NONE: pop one).
    var next_item = 0u;
    // The instance whose mesh BVH is being walked (NONE: the top level), where its
    // mesh sits in the shared arrays, the ray in its object space, and the mesh node
    // to visit (EMPTY_CHILD: pop one).
    var instance = NONE;
    var node_offset = 0u;
    var tri_offset = 0u;
    var local = ray;
    var frame = world;
    var boxes = world_boxes;
    var node_index = EMPTY_CHILD;
    // The mesh stack's entries (the top level's tree is depth-bounded).
    let capacity = min(params.max_stack, MAX_DEPTH);
    // The last mesh node visited, its children's entry distances, and its entered
    // leaves not yet tested (bit per lane).
    var node = WideRows();
    var entry: array<f32, WIDTH>;
    var leaves = 0u;
    // The last binary mesh node visited (BINARY_MESHES).
    var visit = NO_VISIT;
    var steps = 0u;
    var finished = false; // nothing left to visit, out of steps, or out of stack
    loop {
        // Top level: take items until this lane enters an instance, or none is left.
        loop {
            if instance != NONE {
                break;
            }
            let item = take_next(next_item, &tlas_stack, &tlas_depth, best.t);
            next_item = NONE;
            if item == NONE {
                finished = true;
                break;
            }
            if out_of_steps(&steps, params.max_steps) {
                best = unfinished();
                finished = true;
                break;
            }
            if (item & LEAF_BIT) != 0u {
                // Enter the instance: the ray in its object space, limited to the
                // best t so far.
                let index = item & ~LEAF_BIT;
                let inst = instance_at(index);
                var entered = object_ray(inst, ray, one);
                if inst.node_count > 0u && object_ray_live(entered) {
                    instance = index;
                    node_offset = inst.node_offset;
                    tri_offset = inst.tri_offset;
                    entered.tmax = min(ray.tmax, best.t);
                    local = entered;
                    frame = ray_frame(local, one);
                    boxes = ray_boxes(local, frame);
                    node_index = 0u;
                }
                continue;
            }
            // Take the nearer child next, push the farther.
            let order = order_children(tlas_node_at(item), world_boxes, min(best.t, ray.tmax), one);
            let near_in = order.entry_near != NOT_ENTERED;
            let far_in = order.entry_far != NOT_ENTERED;
            let near_item = select(order.near.index, order.near.index | LEAF_BIT, order.near.count > 0u);
            let far_item = select(order.far.index, order.far.index | LEAF_BIT, order.far.count > 0u);
            next_item = select(select(NONE, far_item, far_in), near_item, near_in);
            if near_in && far_in {
                tlas_stack[tlas_depth] = vec2<u32>(far_item, bitcast<u32>(order.entry_far));
                tlas_depth += 1u;
            }
        }
        if finished {
            break;
        }
        // Bottom level: visit the mesh's nodes until one has leaf children to test,
        // or the mesh is done (back to the top level).
        visit = NO_VISIT;
        loop {
            node_index = take_next(node_index, &blas_stack, &blas_depth, best.t);
            if node_index == EMPTY_CHILD {
                instance = NONE;
                break;
            }
            if out_of_steps(&steps, params.max_steps) {
                best = unfinished();
                finished = true;
                break;
            }
            if BINARY_MESHES {
                visit = visit_node(node_at(node_offset + node_index), boxes, min(best.t, local.tmax), best.t, one);
                node_index = follow(visit, &blas_stack, &blas_depth);
                if visit.count_a + visit.count_b > 0u {
                    break;
                }
            } else {
                node = wide_node_at(node_offset + node_index);
                let wide = visit_wide(node, boxes, min(best.t, local.tmax), one, &entry, &leaves, &blas_stack, &blas_depth, capacity);
                if wide.overflow {
                    best = unfinished();
                    finished = true;
                    break;
                }
                node_index = wide.next;
                if leaves != 0u {
                    break;
                }
            }
        }
        if finished {
            break;
        }
        // The leaves' triangles, nearest leaf first (none when the mesh is done).
        var walk = LeafWalk(0u, 0u, 0u);
        var taken = 0u;
        loop {
            var i = EMPTY_CHILD;
            if BINARY_MESHES {
                if taken < visit.count_a + visit.count_b {
                    i = leaf_triangle(visit, taken, best.t);
                    taken += 1u;
                }
            } else {
                i = next_triangle(&walk, node, &entry, &leaves, best.t);
            }
            if i == EMPTY_CHILD {
                break;
            }
            steps += 1u;
            if offer_triangle(tri_offset + i, local, frame, instance, &best) {
                finished = true;
                break;
            }
        }
        if finished {
            break;
        }
    }
    hits[ray_index] = best;
}
