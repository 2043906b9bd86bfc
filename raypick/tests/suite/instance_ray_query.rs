//! Instance scenes traced with hardware ray queries (`Accel::RayQuery`): the driver
//! holds one structure per mesh and one instance per scene instance, takes rays
//! into object space by its own inverse of each transform, and raypick's test
//! decides each candidate in raypick's object space, so the answers are the
//! instance traversal's bit for bit.
//!
//! - The stage's decisions are checked on the CPU with drivers whose box test is
//!   exact and whose inverse transforms are glam's f32 ones, as they are or
//!   perturbed to the error the padding allows, on ordinary scenes and on scenes of
//!   small, distant, anisotropic and sheared instances, with rays aimed at
//!   vertices and edges and intervals reaching behind the origin.
//! - On a GPU with ray queries: the same rays in every culling mode and both
//!   tests, before and after moves, rays left to the CPU, empty meshes, the picker.

use glam::{Mat4, Quat, Vec3, Vec4};
use rayon::prelude::*;
use raypick::cpu::instance_ray_query::{
    ExactInstanceSearch, InstanceDriverBoxes, MAX_INSTANCE_PADDING, TRANSFORM_ERROR, traverse,
};
use raypick::cpu::instance_traverse;
use raypick::cpu::ray_query::{DRIVER_PADDING, FAR_FACTOR};
use raypick::gpu::{GpuContext, GpuOptions};
use raypick::instances::{GpuInstanceScene, Instance, InstanceError, InstanceHit, InstanceScene};
use raypick::prepare::sanitize_ray;
use raypick::{Accel, Backend, Cull, Error, Mesh, Mode, Picker, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

use crate::instances::{
    CULLS, MODES, meshes, options, random_instances, random_scene, random_transform, scene_rays,
};

/// Rays aimed at vertices and edge points of random instances (world points in
/// f32), from random origins within a few instance sizes: some with intervals
/// reaching behind the origin, directions from 2^-60 to 2^60 long or along an axis,
/// and a few invalid ones.
fn aimed_rays(scene: &InstanceScene, meshes: &[Mesh], rng: &mut Rng, n: usize) -> Vec<Ray> {
    let live: Vec<usize> = (0..scene.len())
        .filter(|&i| scene.world_box(i).is_some())
        .collect();
    (0..n)
        .map(|k| {
            let index = live[rng.below(live.len())];
            let instance = scene.instance(index).expect("an instance");
            let mesh = &meshes[instance.mesh];
            let tri = rng.below(mesh.triangle_count());
            let corners = mesh.indices()[tri].map(|v| mesh.positions()[v as usize]);
            let w = rng.range(0.0, 1.0);
            let point = match k % 3 {
                0 => corners[rng.below(3)],
                _ => corners[0] * w + corners[1] * (1.0 - w),
            };
            let target = instance.transform.transform_point3(point);
            let (lo, hi) = scene.world_box(index).expect("hittable");
            let size = (hi - lo).max_element();
            let origin = rng.point_in_box(lo - size * 2.0, hi + size * 2.0);
            let dir = target - origin;
            match k % 8 {
                0 => Ray::with_interval(origin, dir, f32::NEG_INFINITY, f32::INFINITY),
                1 => Ray::with_interval(origin - dir * 2.0, dir, -4.0, 4.0),
                // Directions from 2^-60 to 2^60 long.
                2 => Ray::new(origin, dir * 2f32.powi(rng.below(121) as i32 - 60)),
                // Along an axis (two zero components), onto the target.
                3 => {
                    let axis = Vec3::AXES[rng.below(3)] * if rng.chance(0.5) { 1.0 } else { -1.0 };
                    Ray::new(target - axis * size * 3.0, axis)
                }
                // Invalid: a zero direction, a NaN origin (misses, never errors).
                4 if k % 16 == 4 => Ray::new(origin, Vec3::ZERO),
                4 => Ray::new(Vec3::new(f32::NAN, origin.y, origin.z), dir),
                _ => Ray::new(origin, dir),
            }
        })
        .collect()
}

/// Small, distant, anisotropic, sheared and large instances of `meshes` (four of
/// them), with copies that tie.
fn hard_instances(rng: &mut Rng) -> Vec<Instance> {
    let shear = Mat4::from_cols(
        Vec4::new(1.0, 0.3, 0.0, 0.0),
        Vec4::new(0.0, 1.0, 0.7, 0.0),
        Vec4::new(0.2, 0.0, 1.0, 0.0),
        Vec4::new(3.0, -2.0, 1.0, 1.0),
    );
    let rotation = Quat::from_axis_angle(rng.unit_vector(), 1.1);
    let transforms = [
        Mat4::from_scale_rotation_translation(
            Vec3::splat(0.01),
            rotation,
            Vec3::new(50.0, 0.0, 0.0),
        ),
        Mat4::from_scale_rotation_translation(Vec3::new(40.0, 0.4, 4.0), rotation, Vec3::ZERO),
        Mat4::from_scale_rotation_translation(Vec3::splat(10.0), rotation, Vec3::splat(-300.0)),
        Mat4::from_scale_rotation_translation(
            Vec3::new(-200.0, 200.0, 200.0),
            rotation,
            Vec3::ZERO,
        ),
        shear,
        Mat4::from_scale_rotation_translation(
            Vec3::splat(0.25),
            Quat::IDENTITY,
            Vec3::new(-7.0, 3.0, 1e3),
        ),
        random_transform(rng, 0.5, (Vec3::splat(-3.0), Vec3::splat(3.0))),
    ];
    let mut instances: Vec<Instance> = transforms
        .iter()
        .enumerate()
        .map(|(i, &t)| Instance::new(i % 4, t, i as u32))
        .collect();
    instances.push(Instance {
        id: 99,
        ..instances[4]
    });
    instances
}

/// Traces `rays` through `scene` with the stage's decisions over a driver whose
/// inverses are off by `error` per unit of condition; returns how many rays the
/// stage handled (not left to the CPU as far) and the first whose hit differs from
/// the instance traversal's.
fn check(
    scene: &InstanceScene,
    rays: &[Ray],
    how: (Cull, Mode),
    error: f32,
) -> (usize, Option<Ray>) {
    let boxes = InstanceDriverBoxes::new(scene);
    let far_limit = boxes.far_limit(scene);
    let results: Vec<(bool, bool)> = rays
        .par_iter()
        .map(|ray| {
            let ray = sanitize_ray(ray);
            let want = instance_traverse::trace_ray(scene, &ray, how.0, how.1);
            let mut search = ExactInstanceSearch::new(scene, &boxes, error);
            match traverse(scene, &boxes, far_limit, &mut search, &ray, how) {
                Some(got) => (true, got == want),
                None => (false, true),
            }
        })
        .collect();
    let handled = results.iter().filter(|r| r.0).count();
    let wrong = results.iter().position(|r| !r.1).map(|i| rays[i]);
    (handled, wrong)
}

#[test]
fn decisions_over_exact_drivers_equal_the_instance_traversal() {
    let mut rng = Rng::new(0x1257_1001);
    let (meshes, ordinary) = random_scene(&mut rng, 24);
    let hard = InstanceScene::from_meshes(&meshes, hard_instances(&mut rng)).expect("valid scene");
    let hows = [(Cull::None, Mode::Watertight), (Cull::Back, Mode::Fast)];
    // glam's inverse as it is, and perturbed to half of what the padding allows
    // (glam's own rounding takes a few units more).
    let errors = [0.0, (TRANSFORM_ERROR / 2.0) as f32];
    for (name, scene, min_share) in [("ordinary", &ordinary, 0.9), ("hard", &hard, 0.8)] {
        let mut rays = scene_rays(&mut rng, 600);
        rays.extend(aimed_rays(scene, &meshes, &mut rng, 1500));
        for how in hows {
            let hits = rays
                .iter()
                .map(|r| instance_traverse::trace_ray(scene, &sanitize_ray(r), how.0, how.1))
                .filter(|h| h.prim != raypick::types::MISS)
                .count();
            assert!(hits > rays.len() / 3, "{name}: only {hits} hits");
            for error in errors {
                let (handled, wrong) = check(scene, &rays, how, error);
                assert_eq!(wrong, None, "{name} {how:?} error {error:e}");
                assert!(
                    handled as f64 >= min_share * rays.len() as f64,
                    "{name}: {handled} of {} rays handled",
                    rays.len()
                );
            }
        }
        // The rays reach the boxes' edges: a driver far beyond the allowance
        // (1024 times) misses hits.
        let (_, wrong) = check(scene, &rays, hows[0], (TRANSFORM_ERROR * 1024.0) as f32);
        assert!(
            wrong.is_some(),
            "{name}: no ray tells a far too loose driver apart"
        );
    }
}

#[test]
fn padding_and_far_limit_follow_the_instances() {
    let sphere = fixtures::icosphere(2, 1.0, Vec3::ZERO);
    let one = |transform: Mat4| {
        InstanceScene::from_meshes(
            std::slice::from_ref(&sphere),
            vec![Instance::new(0, transform, 0)],
        )
        .expect("valid")
    };
    // One untransformed instance: the mesh stage's padding, and origins out to at
    // least FAR_FACTOR magnitudes.
    let plain = one(Mat4::IDENTITY);
    let boxes = InstanceDriverBoxes::new(&plain);
    assert_eq!(boxes.structures.len(), 1);
    assert_eq!(boxes.structures[0].padding, DRIVER_PADDING);
    let magnitude = boxes.structures[0].boxes.magnitude;
    assert!(boxes.far_limit(&plain) >= FAR_FACTOR * magnitude);
    // A small instance far out beside a plain one: a structure of its own with more
    // padding, and a far limit within reach of it.
    let small = Mat4::from_scale_rotation_translation(
        Vec3::splat(0.01),
        Quat::IDENTITY,
        Vec3::new(30.0, 0.0, 0.0),
    );
    let mut both = InstanceScene::from_meshes(
        std::slice::from_ref(&sphere),
        vec![
            Instance::new(0, Mat4::IDENTITY, 0),
            Instance::new(0, small, 1),
            Instance::new(0, Mat4::from_translation(Vec3::X), 2),
        ],
    )
    .expect("valid");
    let boxes = InstanceDriverBoxes::new(&both);
    assert_eq!(boxes.structures.len(), 2);
    assert_eq!(boxes.of_instance, [Some(0), Some(1), Some(0)]);
    let padding = boxes.structures[1].padding;
    assert!(
        padding > DRIVER_PADDING && padding <= MAX_INSTANCE_PADDING,
        "{padding}"
    );
    assert_eq!(padding.to_bits() & 0x7f_ffff, 0, "a power of two");
    let far = boxes.far_limit(&both);
    assert!(far > 30.0 && far < 1e5, "{far}");
    // Moved much farther (no new structures): every origin becomes far.
    let distant = Mat4::from_scale_rotation_translation(
        Vec3::splat(0.01),
        Quat::IDENTITY,
        Vec3::new(3e5, 0.0, 0.0),
    );
    both.set_transform(1, distant).expect("valid");
    assert!(boxes.far_limit(&both) < 0.0);
    // Nothing to hit: nothing is far.
    let empty = InstanceScene::from_meshes(
        &[Mesh::default()],
        vec![Instance::new(0, Mat4::IDENTITY, 0)],
    )
    .expect("valid");
    assert_eq!(InstanceDriverBoxes::new(&empty).far_limit(&empty), f32::MAX);
}

/// The test GPU when it has ray queries (see `ray_query::ray_query_gpu`: without
/// an adapter this skips, or fails under `RAYPICK_REQUIRE_GPU=1`).
fn ray_query_gpu() -> Option<&'static GpuContext> {
    let gpu = crate::support::gpu()?;
    if gpu.has_ray_queries() {
        return Some(gpu);
    }
    eprintln!("the GPU {:?} has no ray queries", gpu.adapter());
    let scene = InstanceScene::new(Vec::new(), Vec::new()).expect("valid");
    let err = gpu
        .upload_instances_with(scene, Accel::RayQuery)
        .unwrap_err();
    assert!(matches!(err, Error::NoRayQueries(_)), "{err}");
    None
}

/// Asserts the GPU scene answers `rays` like the CPU scene in every culling mode
/// and both tests; returns the hits over all of them.
fn assert_gpu_equals_cpu(
    gpu: &GpuContext,
    cpu: &InstanceScene,
    uploaded: &GpuInstanceScene,
    rays: &[Ray],
) -> usize {
    let mut hits = 0;
    for cull in CULLS {
        for mode in MODES {
            let options = options(cull, mode);
            let want = cpu.trace(rays, &options);
            let got = gpu
                .trace_instances(uploaded, rays, &options)
                .expect("GPU trace");
            for ((ray, w), g) in rays.iter().zip(&want).zip(&got) {
                assert_eq!(w, g, "{cull:?} {mode:?} {ray:?}");
            }
            let occluded = gpu
                .occluded_instances(uploaded, rays, &options)
                .expect("GPU any hit");
            let hit: Vec<bool> = want.iter().map(InstanceHit::is_hit).collect();
            assert_eq!(occluded, hit, "{cull:?} {mode:?}");
            hits += want.iter().filter(|h| h.is_hit()).count();
        }
    }
    hits
}

#[test]
fn gpu_equals_the_cpu_bit_for_bit_before_and_after_moves() {
    let Some(gpu) = ray_query_gpu() else {
        return;
    };
    let mut rng = Rng::new(0x1257_1003);
    let meshes = meshes(&mut rng);
    let scenes = [
        random_instances(&mut rng, meshes.len(), 30),
        hard_instances(&mut rng),
    ];
    for instances in scenes {
        let mut cpu = InstanceScene::from_meshes(&meshes, instances).expect("valid");
        let mut rays = scene_rays(&mut rng, 800);
        rays.extend(aimed_rays(&cpu, &meshes, &mut rng, 800));
        let mut uploaded = gpu
            .upload_instances_with(cpu.clone(), Accel::RayQuery)
            .expect("upload");
        assert_eq!(uploaded.accel(), Accel::RayQuery);
        let hits = assert_gpu_equals_cpu(gpu, &cpu, &uploaded, &rays);
        assert!(hits > rays.len() * 2, "only {hits} hits");
        // Moves, and a rebuild of raypick's own TLAS (the CPU's copy).
        for i in (1..cpu.len()).step_by(3) {
            let transform = random_transform(&mut rng, 0.5, (Vec3::splat(-4.0), Vec3::splat(4.0)));
            cpu.set_transform(i, transform).expect("valid");
            uploaded.set_transform(i, transform).expect("valid");
        }
        assert_gpu_equals_cpu(gpu, &cpu, &uploaded, &rays);
        uploaded.rebuild_tlas();
        cpu.rebuild_tlas();
        assert_gpu_equals_cpu(gpu, &cpu, &uploaded, &rays);
        // An instance moved far out and shrunk (its padding covers no origin, so
        // every ray goes to the CPU), then back.
        let before = *cpu.instance(0).expect("an instance");
        let far = Mat4::from_scale_rotation_translation(
            Vec3::splat(0.01),
            Quat::IDENTITY,
            Vec3::splat(5e4),
        );
        for transform in [far, before.transform] {
            cpu.set_transform(0, transform).expect("valid");
            uploaded.set_transform(0, transform).expect("valid");
            assert_gpu_equals_cpu(gpu, &cpu, &uploaded, &rays[..500]);
        }
        // Bad input: an error, and nothing changes.
        assert!(matches!(
            uploaded.set_transform(1, Mat4::ZERO),
            Err(Error::Instance(InstanceError::NotAffine { instance: 1 }))
        ));
        assert_gpu_equals_cpu(gpu, &cpu, &uploaded, &rays[..200]);
    }
}

#[test]
fn gpu_finishes_rays_over_the_candidate_budget_and_empty_scenes_miss() {
    if ray_query_gpu().is_none() {
        return;
    }
    // Few loop steps: most rays run out and are finished on the CPU; small
    // bindings: rays split into dispatches of 2,048.
    let gpu = GpuContext::with_options(GpuOptions {
        max_traversal_steps: Some(3),
        max_binding_bytes: Some(64 * 1024),
        ..Default::default()
    })
    .expect("a second context on the same adapter");
    let mut rng = Rng::new(0x1257_1004);
    let meshes = [
        fixtures::cube(),
        fixtures::icosphere(2, 1.0, Vec3::ZERO),
        Mesh::default(),
    ];
    let mut instances = random_instances(&mut rng, 2, 16);
    instances.push(Instance::new(2, Mat4::IDENTITY, 77));
    let scene = InstanceScene::from_meshes(&meshes, instances).expect("valid");
    let rays = scene_rays(&mut rng, 3000);
    let uploaded = gpu
        .upload_instances_with(scene.clone(), Accel::RayQuery)
        .expect("fits");
    let hits = assert_gpu_equals_cpu(&gpu, &scene, &uploaded, &rays);
    assert!(hits > rays.len() / 2, "only {hits} hits");
    // Too large for one binding: refused, as for raypick's BVHs.
    let big = InstanceScene::from_meshes(
        &[fixtures::icosphere(4, 1.0, Vec3::ZERO)],
        vec![Instance::new(0, Mat4::IDENTITY, 0)],
    )
    .expect("valid");
    let refused = gpu.upload_instances_with(big, Accel::RayQuery);
    assert!(
        matches!(
            refused,
            Err(Error::Instance(InstanceError::TooLarge { .. }))
        ),
        "{refused:?}"
    );
    // Scenes with nothing to hit.
    let options = TraceOptions::default();
    for scene in [
        InstanceScene::new(Vec::new(), Vec::new()).expect("valid"),
        InstanceScene::from_meshes(&meshes[2..], vec![Instance::new(0, Mat4::IDENTITY, 1)])
            .expect("valid"),
    ] {
        let uploaded = gpu
            .upload_instances_with(scene, Accel::RayQuery)
            .expect("upload");
        let got = gpu
            .trace_instances(&uploaded, &rays, &options)
            .expect("trace");
        assert!(got.iter().all(|h| *h == InstanceHit::MISS));
    }
}

#[test]
fn pickers_prepare_instances_with_the_structure_asked_for() {
    let mut rng = Rng::new(0x1257_1005);
    let (_, scene) = random_scene(&mut rng, 8);
    let rays = scene_rays(&mut rng, 300);
    let options = TraceOptions::default();
    let want = scene.trace(&rays, &options);
    // The CPU: raypick's BVHs only.
    let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
    let err = cpu
        .upload_instances_with(scene.clone(), Accel::RayQuery)
        .unwrap_err();
    assert!(matches!(err, Error::NoRayQueries(_)), "{err}");
    assert!(err.to_string().contains("CPU"), "{err}");
    let err = cpu
        .upload_instances_with(scene.clone(), Accel::Brute)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let prepared = cpu
        .upload_instances_with(scene.clone(), Accel::Bvh)
        .expect("CPU scene");
    assert_eq!(prepared.accel(), Accel::Bvh);
    assert_eq!(
        cpu.trace_instances(&prepared, &rays, &options)
            .expect("trace"),
        want
    );
    let Some(gpu) = crate::support::gpu() else {
        return;
    };
    // A software adapter keeps raypick's BVHs by default; a hardware one with ray
    // queries takes the driver's.
    let expected = if gpu.default_accel() == Accel::RayQuery {
        Accel::RayQuery
    } else {
        Accel::Bvh
    };
    assert_eq!(
        gpu.upload_instances(scene.clone()).expect("upload").accel(),
        expected
    );
    let err = gpu
        .upload_instances_with(scene.clone(), Accel::Brute)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    if !gpu.has_ray_queries() {
        return;
    }
    let picker = Picker::from_gpu(
        GpuContext::with_options(GpuOptions::default()).expect("a second context"),
    );
    let mut prepared = picker
        .upload_instances_with(scene.clone(), Accel::RayQuery)
        .expect("upload");
    assert_eq!(prepared.accel(), Accel::RayQuery);
    assert_eq!(
        picker
            .trace_instances(&prepared, &rays, &options)
            .expect("trace"),
        want
    );
    let transform = Mat4::from_rotation_z(0.5) * Mat4::from_translation(Vec3::X);
    picker
        .set_instance_transform(&mut prepared, 3, transform)
        .expect("move");
    let mut moved = scene.clone();
    moved.set_transform(3, transform).expect("move");
    assert_eq!(
        picker
            .trace_instances(&prepared, &rays, &options)
            .expect("trace"),
        moved.trace(&rays, &options)
    );
}
