// The segments of a ray searched by the ray-query stages (ray_query.wgsl,
// instance_ray_query.wgsl) and the distances they commit to the driver; mirrors
// the segment functions of src/cpu/ray_query.rs.
//
// The driver takes rays with 0 <= tmin <= tmax: the part of [tmin, tmax] behind
// the origin is searched by a ray pointing the other way (BEHIND, first), the part
// ahead by one along the ray (AHEAD), both along frame.dir (a power-of-two scaling
// of the ray's direction), so distances are in its units. Bounds are widened by
// SEGMENT_MARGIN before the driver sees them. Ahead of the origin, the bound of
// what can still change the answer is committed; nothing is committed behind it
// (the driver prunes away from the origin, the answer lies the other way).

// Relative widening of segment bounds and committed distances (2^-12).
const SEGMENT_MARGIN: f32 = 0.000244140625;
// The largest distance given to the driver (f32::MAX).
const MAX_T: f32 = 3.40282347e38;
// The two segments of a ray.
const BEHIND: u32 = 0u;
const AHEAD: u32 = 1u;

// x >= 0 widened by SEGMENT_MARGIN, at most MAX_T.
fn grow(x: f32) -> f32 {
    return min(x * (1.0 + SEGMENT_MARGIN), MAX_T);
}

// x >= 0 narrowed by SEGMENT_MARGIN.
fn shrink(x: f32) -> f32 {
    return x * (1.0 - SEGMENT_MARGIN);
}

// The distances searched on one side of the origin (units of frame.dir); live is
// false when the interval has no part there the driver could search.
struct Segment {
    tmin: f32,
    tmax: f32,
    live: bool,
}

// Mirrors segment in src/cpu/ray_query.rs.
fn segment(ray: Ray, frame: RayFrame, side: u32) -> Segment {
    let to_frame = reciprocal(frame.t_scale);
    let lo = ray.tmin * to_frame;
    let hi = ray.tmax * to_frame;
    var s = Segment(0.0, 0.0, false);
    if side == BEHIND {
        if lo < 0.0 {
            s = Segment(shrink(max(-hi, 0.0)), grow(-lo), true);
        }
    } else if hi >= 0.0 {
        s = Segment(shrink(max(lo, 0.0)), grow(hi), true);
    }
    s.live = s.live && s.tmin <= s.tmax;
    return s;
}

// The distance committed ahead of the origin for a bound in the caller's units.
// Mirrors commit_bound in src/cpu/ray_query.rs.
fn commit_bound(bound: f32, frame: RayFrame) -> f32 {
    return grow(bound * reciprocal(frame.t_scale));
}

// The distance first committed for the segment `seg` on `side` when the bound of
// what can still change the answer is `bound` (caller's units); negative when
// nothing in the segment can. Mirrors Segment::first_commit.
fn first_commit(seg: Segment, side: u32, bound: f32, frame: RayFrame) -> f32 {
    if side == BEHIND {
        return seg.tmax;
    }
    if bound < 0.0 {
        return -1.0; // every hit ahead is beaten already
    }
    let committed = min(seg.tmax, commit_bound(bound, frame));
    return select(-1.0, committed, committed >= seg.tmin);
}

// The distance to commit once the bound has become `bound`: lower than
// `committed` only ahead of the origin, else `committed` itself. Mirrors
// Segment::lowered.
fn lowered(seg: Segment, side: u32, bound: f32, frame: RayFrame, committed: f32) -> f32 {
    let limit = commit_bound(bound, frame);
    if side == AHEAD && limit < committed && limit >= seg.tmin {
        return limit;
    }
    return committed;
}

// Whether an origin lies beyond `far_limit` on some axis: the ray is then left to
// the CPU. Mirrors is_far in src/cpu/ray_query.rs.
fn is_far(origin: vec3<f32>, far_limit: f32) -> bool {
    let o = abs(origin);
    return max(max(o.x, o.y), o.z) > far_limit;
}
