// What the instance stages (instance_traverse.wgsl, instance_ray_query.wgsl)
// share: instance records, rays taken into an instance's object space, and the
// order of hits. Mirrored by object_ray in src/instances/transform.rs and nearer in
// src/cpu/instance_traverse.rs. The including stage binds `instances` (a
// PackedInstance as four rows of 16 bytes) and `params`.

// Instance i (a PackedInstance is four rows).
fn instance_at(i: u32) -> PackedInstance {
    let d = bitcast<vec4<u32>>(instances[i * 4u + 3u]);
    return PackedInstance(instances[i * 4u], instances[i * 4u + 1u], instances[i * 4u + 2u], d.x, d.y, d.z, d.w);
}

// The record of a ray that has hit nothing (yet).
fn no_hit() -> InstanceHitRecord {
    return InstanceHitRecord(params.miss_t, 0.0, 0.0, MISS, MISS, 0u, 0u, 0u);
}

// The record of a ray left to the CPU (out of loop steps, or too far out).
fn unfinished() -> InstanceHitRecord {
    return InstanceHitRecord(params.miss_t, 0.0, 0.0, UNFINISHED, MISS, 0u, 0u, 0u);
}

// Whether a hit (t, instance, prim) beats `best`: nearer, or as near with a lower
// instance index, or the same instance and a lower triangle id.
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
    return ((rounded(r.x * p.x, one) + rounded(r.y * p.y, one)) + rounded(r.z * p.z, one)) + r.w;
}

// Object-space coordinate of a world vector: (r.x * x + r.y * y) + r.z * z.
fn transform_vector(r: vec4<f32>, v: vec3<f32>, one: f32) -> f32 {
    return (rounded(r.x * v.x, one) + rounded(r.y * v.y, one)) + rounded(r.z * v.z, one);
}

// The world ray in the instance's object space: origin as a point, direction as a
// vector, not renormalised (t means the same in both spaces), the interval kept;
// every product through `rounded` so it is rounded on its own, as on the CPU.
fn object_ray(inst: PackedInstance, ray: Ray, one: f32) -> Ray {
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
    return Ray(origin, ray.tmin, dir, ray.tmax);
}

// Whether an object-space ray can hit anything: finite, with a non-zero direction
// (a far-off origin or an extreme scale can overflow). Mirrors is_live in
// src/instances/transform.rs.
fn object_ray_live(r: Ray) -> bool {
    return finite3(r.origin) && finite3(r.dir) && any(r.dir != vec3<f32>(0.0));
}
