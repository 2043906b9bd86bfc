// BVH traversal: one invocation per ray, nearest hit kept.
// Mirrored by src/cpu/bvh_traverse.rs. Prepended with types.wgsl, the intersection
// files and hit_list.wgsl.
//
// A fixed private stack of MAX_DEPTH entries (the builder bounds the depth), both
// child boxes of a node tested together, the nearer child visited first, leaves
// tested on the spot, the farther child pushed with its entry distance and skipped on
// pop once a nearer hit is known. Box tests are conservative (padded boxes and a
// relative margin), triangles use the brute-force test, and a hit replaces the best
// one when nearer or equally near with a lower triangle id: the same answer as brute
// force. The loop is bounded by params.max_steps (node visits plus triangle tests;
// some drivers stop loops after 65,535 iterations): a ray that runs out is reported
// as UNFINISHED and the host completes it on the CPU. When `accumulate` is set, the
// best hit so far comes from the hit buffer (earlier chunks of a BVH too large for
// one binding).
//
// QUERY (a pipeline constant) selects what is kept (see brute_force.wgsl): the
// nearest hit, any hit (the
// traversal ends at the first accepted one), or the `max_hits` nearest in `all_hits`
// with the list state in `hits[ray].prim` (moves of listed hits count as loop steps).
// Subtrees are skipped when entered beyond `bound`: the nearest hit's t, +inf for
// any hit, and for the list the t of its last hit once it is full and more hits are
// known to exist (list_bound), so a subtree that could still change the answer is
// always visited.

@group(0) @binding(0) var<uniform> params: TraverseParams;
@group(0) @binding(1) var<storage, read> nodes: array<BvhNode>;
@group(0) @binding(2) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(5) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;
const MAX_DEPTH: u32 = 64u;
const UNFINISHED: u32 = 0xfffffffeu;
// A box entry distance meaning "not entered".
const NOT_ENTERED: f32 = -3.0e38;

// Entry distance into `child`'s box when the ray overlaps it within [tmin, limit]
// (conservatively), else NOT_ENTERED (also for an empty slot). Box distances are in
// units of the scaled direction (frame.dir, see RayFrame): inv_dir, tmin and limit
// are in those units, the entry distance is scaled back by t_scale.
fn enter(child: BvhChild, origin: vec3<f32>, inv_dir: vec3<f32>, tmin: f32, limit: f32, t_scale: f32) -> f32 {
    if child.index == EMPTY_CHILD && child.count == 0u {
        return NOT_ENTERED;
    }
    let t0 = (child.lo - origin) * inv_dir;
    let t1 = (child.hi - origin) * inv_dir;
    let lo = min(t0, t1);
    let hi = max(t0, t1);
    let near = max(max(max(lo.x, lo.y), lo.z), tmin);
    let far = min(min(min(hi.x, hi.y), hi.z), limit);
    if overlaps(near, far, params.one) {
        return near * t_scale;
    }
    return NOT_ENTERED;
}

fn nearer(t: f32, id: u32, best: Hit) -> bool {
    return t < best.t || (t == best.t && id < best.prim);
}

// Writes a ray's result: `best`, or for QUERY_ALL the list state (UNFINISHED when
// `best` says so).
fn finish(ray_index: u32, best: Hit, state: u32) {
    if QUERY == QUERY_ALL && best.prim != UNFINISHED {
        hits[ray_index] = Hit(params.miss_t, 0.0, 0.0, state);
    } else {
        hits[ray_index] = best;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn bvh_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    let listing = QUERY == QUERY_ALL;
    let first = ray_index * params.max_hits;
    var best = Hit(params.miss_t, 0.0, 0.0, MISS);
    var state = 0u; // the list state of QUERY_ALL
    if params.accumulate != 0u {
        best = hits[ray_index];
        if best.prim == UNFINISHED {
            return;
        }
        if QUERY == QUERY_ANY && best.prim != MISS {
            return; // an earlier chunk found a hit
        }
        if listing {
            state = best.prim;
            best.prim = MISS;
        }
    }
    if all(ray.dir == vec3<f32>(0.0)) {
        finish(ray_index, best, state); // an invalid ray
        return;
    }
    var bound = best.t;
    if listing {
        bound = list_bound(first, params.max_hits, state, params.miss_t);
    }
    let frame = ray_frame(ray);
    let inv_dir = frame.inv_dir;
    let to_frame = 1.0 / frame.t_scale;
    let tmin = ray.tmin * to_frame;
    // Pending subtrees: node index and entry distance (as bits).
    var stack: array<vec2<u32>, MAX_DEPTH>;
    var depth = 0u;
    var node_index = 0u;
    var steps = 0u;
    var done = false; // QUERY_ANY found a hit
    loop {
        steps += 1u;
        if steps > params.max_steps {
            best = Hit(params.miss_t, 0.0, 0.0, UNFINISHED);
            break;
        }
        let a = nodes[node_index].children[0];
        let b = nodes[node_index].children[1];
        let limit = min(bound, ray.tmax) * to_frame;
        let entry_a = enter(a, ray.origin, inv_dir, tmin, limit, frame.t_scale);
        let entry_b = enter(b, ray.origin, inv_dir, tmin, limit, frame.t_scale);
        // Visit the nearer child first.
        let swap = entry_a != NOT_ENTERED && entry_b != NOT_ENTERED && entry_b < entry_a;
        var near = a;
        var far = b;
        if swap {
            near = b;
            far = a;
        }
        let entry_near = select(entry_a, entry_b, swap);
        let entry_far = select(entry_b, entry_a, swap);
        var next = EMPTY_CHILD;
        for (var k = 0u; k < 2u; k++) {
            var child = near;
            if k == 1u {
                child = far;
            }
            let t_entry = select(entry_near, entry_far, k == 1u);
            if t_entry == NOT_ENTERED {
                continue;
            }
            if child.count > 0u {
                if beyond(t_entry, bound) {
                    continue; // a nearer leaf already beat this one
                }
                // One loop per kind of query (QUERY is fixed when the pipeline is
                // built, so only one remains). Entering the list's loop and each hit
                // it moves count as steps.
                if listing {
                    for (var i = child.index; i < child.index + child.count; i++) {
                        steps += 1u;
                        let tri = triangles[i];
                        let cand = intersect(ray, frame, tri, params.cull, params.miss_t, params.one, params.mode);
                        if cand.accepted {
                            let hit = Hit(cand.t, cand.u, cand.v, tri.id);
                            steps += 1u + list_insert(first, params.max_hits, &state, hit);
                            bound = list_bound(first, params.max_hits, state, params.miss_t);
                        }
                    }
                } else {
                    for (var i = child.index; i < child.index + child.count; i++) {
                        steps += 1u;
                        let tri = triangles[i];
                        let cand = intersect(ray, frame, tri, params.cull, params.miss_t, params.one, params.mode);
                        if cand.accepted && nearer(cand.t, tri.id, best) {
                            best = Hit(cand.t, cand.u, cand.v, tri.id);
                            bound = best.t;
                            if QUERY == QUERY_ANY {
                                done = true;
                                break;
                            }
                        }
                    }
                }
                if done {
                    break;
                }
            } else if next == EMPTY_CHILD {
                next = child.index;
            } else {
                stack[depth] = vec2<u32>(child.index, bitcast<u32>(t_entry));
                depth += 1u;
            }
        }
        if done {
            break;
        }
        if next == EMPTY_CHILD {
            // Pop the nearest pending subtree that can still change the answer.
            loop {
                if depth == 0u {
                    break;
                }
                depth -= 1u;
                let pending = stack[depth];
                let t_entry = bitcast<f32>(pending.y);
                if !beyond(t_entry, bound) {
                    next = pending.x;
                    break;
                }
            }
            if next == EMPTY_CHILD {
                break;
            }
        }
        node_index = next;
    }
    finish(ray_index, best, state);
}
