// Two-level traversal of an instance scene: one invocation per ray, nearest hit kept.
// Mirrored by src/instances/instance_traverse.rs. Prepended with types.wgsl and the
// intersection files.
//
// One loop walks two trees. The top level (TLAS) holds one instance per leaf; its
// nodes are handled like bvh_traverse.wgsl's (both child boxes tested together, the
// nearer child taken next, the farther pushed with its entry distance and skipped
// on pop once a nearer hit is known), except that a leaf is also an item taken or
// pushed: taking it enters the instance. Entering an instance takes the ray into
// object space by the rows of the inverse transform (origin as a point, direction as
// a vector, not renormalised, so t means the same in both spaces; every product
// multiplied by `one` so it is rounded on its own, as on the CPU) and walks the
// instance's mesh BVH, whose nodes and triangles sit in the shared arrays at the
// instance's offsets, with a stack of its own; when that stack runs empty, the top
// level goes on. Both stacks hold MAX_DEPTH entries (both trees are depth-bounded).
//
// A hit replaces the best one when nearer, or as near with a lower instance index,
// or the same instance and a lower triangle id: the answer of a naive loop over all
// instances and triangles. The loop is bounded by params.max_steps (top-level
// items, mesh nodes and triangle tests); a ray that runs out is reported UNFINISHED
// and the host completes it on the CPU.

@group(0) @binding(0) var<uniform> params: TraverseParams;
@group(0) @binding(1) var<storage, read> tlas: array<BvhNode>;
@group(0) @binding(2) var<storage, read> instances: array<PackedInstance>;
@group(0) @binding(3) var<storage, read> nodes: array<BvhNode>;
@group(0) @binding(4) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(5) var<storage, read> rays: array<Ray>;
@group(0) @binding(6) var<storage, read_write> hits: array<InstanceHitRecord>;

const WORKGROUP_SIZE: u32 = 64u;
const MAX_DEPTH: u32 = 64u;
const UNFINISHED: u32 = 0xfffffffeu;
// Marks a top-level item that is an instance (a leaf), not a node.
const LEAF_BIT: u32 = 0x80000000u;
// No item / no instance.
const NONE: u32 = 0xffffffffu;

fn nearer_instance(t: f32, instance: u32, prim: u32, best: InstanceHitRecord) -> bool {
    return t < best.t || (t == best.t && (instance < best.instance || (instance == best.instance && prim < best.prim)));
}

// Whether every component is finite (no WGSL built-in says so).
fn finite3(v: vec3<f32>) -> bool {
    let exponent = bitcast<vec3<u32>>(v) & vec3<u32>(0x7f800000u);
    return all(exponent != vec3<u32>(0x7f800000u));
}

// Object-space coordinate of a world point: ((r.x * x + r.y * y) + r.z * z) + r.w.
fn transform_point(r: vec4<f32>, p: vec3<f32>, one: f32) -> f32 {
    return (((r.x * p.x) * one + (r.y * p.y) * one) + (r.z * p.z) * one) + r.w;
}

// Object-space coordinate of a world vector: (r.x * x + r.y * y) + r.z * z.
fn transform_vector(r: vec4<f32>, v: vec3<f32>, one: f32) -> f32 {
    return ((r.x * v.x) * one + (r.y * v.y) * one) + (r.z * v.z) * one;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn instance_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    var best = InstanceHitRecord(params.miss_t, 0.0, 0.0, MISS, MISS, 0u, 0u, 0u);
    if all(ray.dir == vec3<f32>(0.0)) {
        hits[ray_index] = best; // an invalid ray
        return;
    }
    let one = params.one;
    let world_inv_dir = inverse_dir(ray.dir);
    // Pending top-level items and mesh nodes: index and entry distance (as bits).
    var tlas_stack: array<vec2<u32>, MAX_DEPTH>;
    var tlas_depth = 0u;
    var blas_stack: array<vec2<u32>, MAX_DEPTH>;
    var blas_depth = 0u;
    // The top-level item to take next (NONE: pop one).
    var next_item = 0u;
    // The instance whose mesh BVH is being walked (NONE: the top level), its record,
    // the ray in its object space, and the mesh node to visit.
    var instance = NONE;
    var inst: PackedInstance;
    var local = ray;
    var frame = ray_frame(ray);
    var local_inv_dir = world_inv_dir;
    var node_index = 0u;
    var steps = 0u;
    loop {
        steps += 1u;
        if steps > params.max_steps {
            best = InstanceHitRecord(params.miss_t, 0.0, 0.0, UNFINISHED, MISS, 0u, 0u, 0u);
            break;
        }
        if instance == NONE {
            // Top level: take the next item, or pop the nearest one that can still
            // hold a nearer hit.
            var item = next_item;
            next_item = NONE;
            if item == NONE {
                loop {
                    if tlas_depth == 0u {
                        break;
                    }
                    tlas_depth -= 1u;
                    let pending = tlas_stack[tlas_depth];
                    let t_entry = bitcast<f32>(pending.y);
                    if !beyond(t_entry, best.t) {
                        item = pending.x;
                        break;
                    }
                }
                if item == NONE {
                    break;
                }
            }
            if (item & LEAF_BIT) != 0u {
                // Enter the instance: the ray in its object space, limited to the
                // best t so far.
                let index = item & ~LEAF_BIT;
                inst = instances[index];
                let origin = vec3<f32>(
                    transform_point(inst.inv0, ray.origin, one),
                    transform_point(inst.inv1, ray.origin, one),
                    transform_point(inst.inv2, ray.origin, one),
                );
                let dir = vec3<f32>(
                    transform_vector(inst.inv0, ray.dir, one),
                    transform_vector(inst.inv1, ray.dir, one),
                    transform_vector(inst.inv2, ray.dir, one),
                );
                let live = finite3(origin) && finite3(dir) && any(dir != vec3<f32>(0.0));
                if inst.node_count > 0u && live {
                    instance = index;
                    local = Ray(origin, ray.tmin, dir, min(ray.tmax, best.t));
                    frame = ray_frame(local);
                    local_inv_dir = inverse_dir(dir);
                    node_index = 0u;
                    blas_depth = 0u;
                }
                continue;
            }
            let limit = min(best.t, ray.tmax);
            // Take the nearer child next, push the farther.
            let order = order_children(tlas[item], ray.origin, world_inv_dir, ray.tmin, limit, 1.0, params.one);
            for (var k = 0u; k < 2u; k++) {
                var child = order.near;
                if k == 1u {
                    child = order.far;
                }
                let t_entry = select(order.entry_near, order.entry_far, k == 1u);
                if t_entry == NOT_ENTERED {
                    continue;
                }
                let child_item = select(child.index, child.index | LEAF_BIT, child.count > 0u);
                if next_item == NONE {
                    next_item = child_item;
                } else {
                    tlas_stack[tlas_depth] = vec2<u32>(child_item, bitcast<u32>(t_entry));
                    tlas_depth += 1u;
                }
            }
            continue;
        }
        // Bottom level: one node of the instance's mesh BVH.
        let limit = min(best.t, local.tmax);
        let order = order_children(nodes[inst.node_offset + node_index], local.origin, local_inv_dir, local.tmin, limit, 1.0, params.one);
        var next = EMPTY_CHILD;
        for (var k = 0u; k < 2u; k++) {
            var child = order.near;
            if k == 1u {
                child = order.far;
            }
            let t_entry = select(order.entry_near, order.entry_far, k == 1u);
            if t_entry == NOT_ENTERED {
                continue;
            }
            if child.count > 0u {
                if beyond(t_entry, best.t) {
                    continue; // a nearer hit already beat this leaf
                }
                let first = inst.tri_offset + child.index;
                for (var i = first; i < first + child.count; i++) {
                    steps += 1u;
                    let tri = triangles[i];
                    let cand = intersect(local, frame, tri, params.cull, params.miss_t, one, params.mode);
                    if cand.accepted && nearer_instance(cand.t, instance, tri.id, best) {
                        best = InstanceHitRecord(cand.t, cand.u, cand.v, tri.id, instance, 0u, 0u, 0u);
                    }
                }
            } else if next == EMPTY_CHILD {
                next = child.index;
            } else {
                blas_stack[blas_depth] = vec2<u32>(child.index, bitcast<u32>(t_entry));
                blas_depth += 1u;
            }
        }
        if next == EMPTY_CHILD {
            loop {
                if blas_depth == 0u {
                    break;
                }
                blas_depth -= 1u;
                let pending = blas_stack[blas_depth];
                let t_entry = bitcast<f32>(pending.y);
                if !beyond(t_entry, best.t) {
                    next = pending.x;
                    break;
                }
            }
            if next == EMPTY_CHILD {
                instance = NONE; // this mesh is done: back to the top level
                continue;
            }
        }
        node_index = next;
    }
    hits[ray_index] = best;
}
