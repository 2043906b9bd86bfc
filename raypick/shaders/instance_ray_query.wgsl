// Instance scenes through hardware ray queries (Accel::RayQuery): one invocation
// per ray, nearest hit kept. The driver's top-level structure holds one instance
// per scene instance (its transform, its index as custom data) of a bottom-level
// structure of its mesh's boxes in object space, padded for the instance (see
// src/cpu/instance_ray_query.rs); the driver reports the boxes a ray crosses. For
// each, this stage takes the world ray into the candidate instance's object space
// itself (object_ray, the rows instance_traverse.wgsl uses, not the driver's
// inverse), runs raypick's own test on the candidate triangle and keeps the
// nearest hit with the ties of instance_traverse.wgsl (nearer_instance), so the
// hits are the instance traversal's, bit for bit.
// The decisions are mirrored by src/cpu/instance_ray_query.rs (the driver's
// traversal has no twin). This file opens the module, its `enable` directive
// first, followed by types.wgsl, the intersection files, segments.wgsl and
// instance_space.wgsl.
//
// - The world ray is searched in two segments (segments.wgsl), the part behind the
//   origin first; a hit is offered only in the segment of its sign. Ahead of the
//   origin the nearest hit's t is committed, widened, so the driver skips boxes
//   entered beyond it (t means the same in world and object space).
// - QUERY (a pipeline constant) is QUERY_CLOSEST or QUERY_ANY: with QUERY_ANY the
//   first accepted hit ends the ray's queries.
// - Rays whose origin lies beyond params.far_limit (where the boxes' padding no
//   longer covers the difference between the driver's object-space ray and
//   raypick's), and rays that take more than max_steps candidates, are reported
//   UNFINISHED and completed on the CPU by the instance traversal.

enable wgpu_ray_query;

@group(0) @binding(0) var<uniform> params: TraverseParams;
@group(0) @binding(1) var scene: acceleration_structure;
// PackedInstance records read as rows of 16 bytes (instance_at): the inverse rows
// and, in tri_offset, where the instance's structure's triangles start.
@group(0) @binding(2) var<storage, read> instances: array<vec4<f32>>;
// Every structure's triangles in box order, one after the other.
@group(0) @binding(3) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(4) var<storage, read> rays: array<Ray>;
@group(0) @binding(5) var<storage, read_write> hits: array<InstanceHitRecord>;

const WORKGROUP_SIZE: u32 = 64u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn instance_ray_query(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    if is_far(ray.origin, params.far_limit) {
        hits[ray_index] = unfinished();
        return;
    }
    var best = no_hit();
    if all(ray.dir == vec3<f32>(0.0)) {
        hits[ray_index] = best; // an invalid ray
        return;
    }
    let one = params.one;
    let frame = ray_frame(ray, one);
    var rq: ray_query;
    var steps = 0u;
    var out_of_steps = false;
    var found_any = false; // QUERY_ANY found a hit
    for (var side = BEHIND; side <= AHEAD; side++) {
        let seg = segment(ray, frame, side);
        if !seg.live {
            continue;
        }
        var committed = first_commit(seg, side, best.t, frame);
        if committed < 0.0 {
            break; // nothing ahead can change the answer
        }
        // (A ray query must be a local variable of the function that uses it:
        // the loop over candidates cannot be shared with the other ray-query stage.)
        let dir = select(frame.dir, -frame.dir, side == BEHIND);
        rayQueryInitialize(&rq, scene, RayDesc(RAY_FLAG_NONE, 0xffu, seg.tmin, committed, ray.origin, dir));
        loop {
            if !rayQueryProceed(&rq) {
                break;
            }
            steps += 1u;
            if steps > params.max_steps {
                out_of_steps = true;
                rayQueryTerminate(&rq);
                break;
            }
            let candidate = rayQueryGetCandidateIntersection(&rq);
            if candidate.kind != RAY_QUERY_INTERSECTION_AABB {
                continue;
            }
            let index = candidate.instance_custom_data;
            let inst = instance_at(index);
            let local = object_ray(inst, ray, one);
            if !object_ray_live(local) {
                continue;
            }
            let tri = triangles[inst.tri_offset + candidate.primitive_index];
            let c = intersect(local, ray_frame(local, one), tri, params.cull, params.miss_t, one, MODE);
            if !c.accepted || (c.t < 0.0) != (side == BEHIND) || !nearer_instance(c.t, index, tri.id, best) {
                continue;
            }
            best = InstanceHitRecord(c.t, c.u, c.v, tri.id, index, 0u, 0u, 0u);
            if QUERY == QUERY_ANY {
                found_any = true; // any hit will do
                rayQueryTerminate(&rq);
                break;
            }
            let lower = lowered(seg, side, best.t, frame, committed);
            if lower < committed {
                committed = lower;
                rayQueryGenerateIntersection(&rq, lower);
            }
        }
        if out_of_steps || found_any {
            break;
        }
    }
    if out_of_steps {
        best = unfinished();
    }
    hits[ray_index] = best;
}
