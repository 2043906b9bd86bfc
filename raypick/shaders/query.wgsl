// What the BVH traversals (bvh_traverse.wgsl, wide_bvh_traverse.wgsl) keep of the
// hits they find, as QUERY (a pipeline constant) selects: the nearest hit, any hit
// (the traversal ends at the first accepted one), or the `max_hits` nearest in
// `all_hits` (hit_list.wgsl). Mirrors Collect in src/cpu/query.rs. A stage that
// includes this file declares `params` (TraverseParams) and the `hits` and
// `all_hits` bindings.

fn nearer(t: f32, id: u32, best: Hit) -> bool {
    return t < best.t || (t == best.t && id < best.prim);
}

// One ray's search so far: its nearest hit (UNFINISHED once it gives up), its list
// state under QUERY_ALL, the bound subtrees are skipped beyond (the nearest hit's t,
// +inf for any hit, list_bound for the list: a subtree that could still change the
// answer is always visited), and whether an any-hit query is done.
struct Kept {
    best: Hit,
    state: u32,
    bound: f32,
    done: bool,
}

// Where ray `ray_index` (its list at `first`) starts in this dispatch: resumed from
// its hit-buffer entry (resume), the bound set from what is kept. `go` is false when
// there is nothing to do: nothing was left by earlier dispatches, or the ray is
// invalid (its miss is written here).
struct Start {
    kept: Kept,
    go: bool,
}

fn start_ray(ray_index: u32, ray: Ray, first: u32) -> Start {
    let resumed = resume(hits[ray_index], params.accumulate != 0u, params.miss_t);
    var kept = Kept(resumed.best, resumed.state, resumed.best.t, false);
    if resumed.stop {
        return Start(kept, false);
    }
    if QUERY == QUERY_ALL {
        kept.bound = list_bound(first, params.max_hits, resumed.state, params.miss_t);
    }
    if all(ray.dir == vec3<f32>(0.0)) {
        finish(ray_index, kept); // an invalid ray
        return Start(kept, false);
    }
    return Start(kept, true);
}

// Tests triangle `i` of the stage's `triangles` for `ray` and keeps its hit if it
// changes the answer; `steps` counts the test and the moves of listed hits.
fn test_triangle(i: u32, ray: Ray, frame: RayFrame, first: u32, kept: ptr<function, Kept>, steps: ptr<function, u32>) {
    *steps += 1u;
    let tri = triangle_at(i);
    let cand = intersect(ray, frame, tri, params.cull, params.miss_t, params.one, MODE);
    if !cand.accepted {
        return;
    }
    if QUERY == QUERY_ALL {
        let hit = Hit(cand.t, cand.u, cand.v, tri.id);
        var state = (*kept).state;
        *steps += 1u + list_insert(first, params.max_hits, &state, hit);
        (*kept).state = state;
        (*kept).bound = list_bound(first, params.max_hits, state, params.miss_t);
    } else if nearer(cand.t, tri.id, (*kept).best) {
        (*kept).best = Hit(cand.t, cand.u, cand.v, tri.id);
        (*kept).bound = cand.t;
        (*kept).done = QUERY == QUERY_ANY;
    }
}

// Gives the search up (out of loop steps or stack): the ray is reported UNFINISHED
// and the host finishes it on the CPU.
fn give_up(kept: ptr<function, Kept>) {
    (*kept).best = Hit(params.miss_t, 0.0, 0.0, UNFINISHED);
}

// Writes a ray's result: its nearest hit, or for QUERY_ALL the list state
// (UNFINISHED when the search gave up).
fn finish(ray_index: u32, kept: Kept) {
    hits[ray_index] = carried(kept.best, kept.state, params.miss_t);
}
