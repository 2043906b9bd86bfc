// The sorted hit list of the all-hits query (QUERY_ALL), shared by the brute-force
// and BVH stages. Mirrored by src/cpu/hit_list.rs.
//
// Each ray owns `k` slots all_hits[first .. first + k] (the stage declares the
// `all_hits` binding) holding its nearest hits so far in increasing (t, id) order,
// and a state: the number of hits held, plus LIST_TRUNCATED once a hit was left out
// or pushed out of a full list. Every triangle is offered at most once per ray, so
// the final list is the k smallest (t, id) pairs whatever the offering order; it
// carries over between dispatches (triangle ranges, BVH chunks) in the buffer.

// The next two carry a ray's search between the dispatches of one trace (triangle
// ranges, chunks of a mesh) through its hit-buffer entry: GPU plumbing without a CPU
// twin, the CPU traces a mesh in one pass.
//
// Where a ray's search resumes in a dispatch: from a miss in the first one
// (`accumulate` false); after it from `carried`, the ray's entry of the hit buffer
// (the best hit so far, or under QUERY_ALL the list state in `prim`). `stop`: nothing
// is left to do (the ray ran out of loop steps, or an any-hit query already hit).
struct Resume {
    best: Hit,
    state: u32,
    stop: bool,
}

fn resume(carried: Hit, accumulate: bool, miss_t: f32) -> Resume {
    var r = Resume(Hit(miss_t, 0.0, 0.0, MISS), 0u, false);
    if accumulate {
        r.best = carried;
        if carried.prim == UNFINISHED {
            r.stop = true;
        } else if QUERY == QUERY_ANY && carried.prim != MISS {
            r.stop = true; // an earlier chunk found a hit
        } else if QUERY == QUERY_ALL {
            r.state = carried.prim;
            r.best.prim = MISS;
        }
    }
    return r;
}

// What a ray's hit-buffer entry holds after a dispatch: `best`, or under QUERY_ALL the
// list state (in `prim` of a miss); a ray marked UNFINISHED stays so.
fn carried(best: Hit, state: u32, miss_t: f32) -> Hit {
    if QUERY == QUERY_ALL && best.prim != UNFINISHED {
        return Hit(miss_t, 0.0, 0.0, state);
    }
    return best;
}

// Whether `a` comes before `b`: nearer, or as near with a lower triangle id.
fn hit_before(a: Hit, b: Hit) -> bool {
    return a.t < b.t || (a.t == b.t && a.prim < b.prim);
}

// Inserts `hit` in order. Returns the number of hits moved one slot down (loop
// iterations, which the caller counts against its budget).
fn list_insert(first: u32, k: u32, state: ptr<function, u32>, hit: Hit) -> u32 {
    var count = *state & ~LIST_TRUNCATED;
    if count == k {
        *state = *state | LIST_TRUNCATED;
        if !hit_before(hit, all_hits[first + k - 1u]) {
            return 0u;
        }
        count = k - 1u; // the last hit drops out
    }
    var slot = count;
    var moved = 0u;
    loop {
        if slot == 0u {
            break;
        }
        let previous = all_hits[first + slot - 1u];
        if !hit_before(hit, previous) {
            break;
        }
        all_hits[first + slot] = previous;
        slot -= 1u;
        moved += 1u;
    }
    all_hits[first + slot] = hit;
    *state = (*state & LIST_TRUNCATED) | (count + 1u);
    return moved;
}

// Whether the triangle of `hit` is listed already (a driver may report a box more
// than once). Mirrors HitList::holds.
fn list_holds(first: u32, state: u32, hit: Hit) -> bool {
    let count = state & ~LIST_TRUNCATED;
    var found = false;
    for (var slot = 0u; slot < count; slot++) {
        if all_hits[first + slot].prim == hit.prim {
            found = true;
            break;
        }
    }
    return found;
}

// The largest t at which a hit can still enter the list: the last listed hit's once
// the list is full and more hits are known to exist, else miss_t (+inf). Subtrees
// entered beyond it can be skipped.
fn list_bound(first: u32, k: u32, state: u32, miss_t: f32) -> f32 {
    if (state & LIST_TRUNCATED) != 0u {
        return all_hits[first + k - 1u].t;
    }
    return miss_t;
}
