// Hardware ray queries (Accel::RayQuery): one invocation per ray. The driver's
// acceleration structure holds one box per hittable triangle (a procedural, AABB
// geometry) and reports the boxes a ray crosses; this stage runs raypick's own
// triangle test on each (intersect.wgsl), keeps the answer itself and commits a
// distance back to the driver so that it stops reporting boxes beyond it. The hits
// are therefore the BVH traversal's, bit for bit.
// The decisions are mirrored by src/cpu/ray_query.rs (the driver's traversal has no
// twin). This file opens the module, its `enable` directive first, followed by
// types.wgsl, the intersection files, hit_list.wgsl and segments.wgsl.
//
// - The driver takes rays with 0 <= tmin <= tmax: the part of [tmin, tmax] behind
//   the origin is searched by a second ray query pointing the other way (BEHIND,
//   first), the part ahead by one along the ray (AHEAD). A hit is offered only in
//   the segment of its sign (t < 0 behind, t >= 0 ahead), so each triangle is
//   offered once. Both use the ray's frame.dir (a power-of-two scaling of its
//   direction), so distances are in its units, and bounds are widened by
//   SEGMENT_MARGIN before the driver sees them.
// - Candidates arrive in no particular order: the nearest hit is kept with ties to
//   the lowest id (hit_before), QUERY_ANY stops at the first accepted hit, and
//   QUERY_ALL inserts into the ray's sorted list, leaving out a triangle listed
//   already (a driver may report a box twice).
// - Ahead of the origin, the bound of what can still change the answer (the nearest
//   hit's t, or the full list's last) is committed, widened, with
//   rayQueryGenerateIntersection: the driver then skips boxes entered beyond it.
//   Nothing is committed behind the origin (the driver prunes away from it, the
//   answer lies the other way); the segment ahead is skipped when the bound is
//   already behind the origin.
// - The boxes are the triangles' padded boxes widened by a fraction of the mesh's
//   magnitude (see src/cpu/ray_query.rs), which covers the rounding of the test for
//   rays from within far_limit. Rays from farther out, and rays that take more than
//   max_steps candidates (plus list moves), are reported UNFINISHED and completed
//   on the CPU by the BVH traversal. When `accumulate` is set, the best hit so far
//   (or the list state) comes from earlier chunks of a mesh too large for one
//   acceleration structure or storage binding.

enable wgpu_ray_query;

@group(0) @binding(0) var<uniform> params: TraverseParams;
@group(0) @binding(1) var scene: acceleration_structure;
@group(0) @binding(2) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(5) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;

// Writes a ray's result: `best`, or for QUERY_ALL the list state; UNFINISHED for a
// ray left to the CPU.
fn finish(ray_index: u32, best: Hit, state: u32, unfinished: bool) {
    var result = best;
    if unfinished {
        result = Hit(params.miss_t, 0.0, 0.0, UNFINISHED);
    }
    hits[ray_index] = carried(result, state, params.miss_t);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn ray_query_trace(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    let listing = QUERY == QUERY_ALL;
    let first = ray_index * params.max_hits;
    let resumed = resume(hits[ray_index], params.accumulate != 0u, params.miss_t);
    if resumed.stop {
        return;
    }
    var best = resumed.best;
    var state = resumed.state; // the list state of QUERY_ALL
    if is_far(ray.origin, params.far_limit) {
        finish(ray_index, best, state, true);
        return;
    }
    let frame = ray_frame(ray, params.one);
    if !frame.live {
        finish(ray_index, best, state, false); // an invalid ray
        return;
    }
    var rq: ray_query;
    var steps = 0u;
    var done = false; // QUERY_ANY found a hit
    var unfinished = false;
    for (var side = BEHIND; side <= AHEAD; side++) {
        let seg = segment(ray, frame, side);
        if !seg.live {
            continue;
        }
        var bound = best.t;
        if listing {
            bound = list_bound(first, params.max_hits, state, params.miss_t);
        }
        var committed = first_commit(seg, side, bound, frame);
        if committed < 0.0 {
            break; // nothing ahead can change the answer
        }
        let dir = select(frame.dir, -frame.dir, side == BEHIND);
        rayQueryInitialize(&rq, scene, RayDesc(RAY_FLAG_NONE, 0xffu, seg.tmin, committed, ray.origin, dir));
        loop {
            if !rayQueryProceed(&rq) {
                break;
            }
            steps += 1u;
            if steps > params.max_steps {
                unfinished = true;
                rayQueryTerminate(&rq);
                break;
            }
            let candidate = rayQueryGetCandidateIntersection(&rq);
            if candidate.kind != RAY_QUERY_INTERSECTION_AABB {
                continue;
            }
            let tri = triangles[candidate.primitive_index];
            let c = intersect(ray, frame, tri, params.cull, params.miss_t, params.one, MODE);
            if !c.accepted || (c.t < 0.0) != (side == BEHIND) {
                continue;
            }
            let hit = Hit(c.t, c.u, c.v, tri.id);
            if listing {
                steps += state & ~LIST_TRUNCATED; // the scan for a repeat
                if !list_holds(first, state, hit) {
                    steps += list_insert(first, params.max_hits, &state, hit);
                }
                bound = list_bound(first, params.max_hits, state, params.miss_t);
            } else if hit_before(hit, best) {
                best = hit;
                bound = best.t;
                if QUERY == QUERY_ANY {
                    done = true;
                    rayQueryTerminate(&rq);
                    break;
                }
            }
            let lower = lowered(seg, side, bound, frame, committed);
            if lower < committed {
                committed = lower;
                rayQueryGenerateIntersection(&rq, lower);
            }
        }
        if done || unfinished {
            break;
        }
    }
    finish(ray_index, best, state, unfinished);
}
