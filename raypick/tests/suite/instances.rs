//! Instance scenes: a transformed instance answers like the pre-transformed mesh,
//! the two-level traversal like a naive loop over every instance and triangle,
//! moving an instance like a fresh build (without touching any BLAS), the GPU like
//! the CPU bit for bit, and bad transforms are errors.

use std::sync::Arc;

use glam::{Mat4, Quat, Vec3, Vec4};
use raypick::cpu::intersect::{RayFrame, intersect};
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::instances::{Blas, Instance, InstanceError, InstanceHit, InstanceScene};
use raypick::prepare::{pack_mesh, sanitize_ray};
use raypick::{Cull, Error, Hit, Mesh, Mode, NodeLayout, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

pub(crate) const CULLS: [Cull; 3] = [Cull::None, Cull::Back, Cull::Front];
pub(crate) const MODES: [Mode; 2] = [Mode::Watertight, Mode::Fast];

pub(crate) fn options(cull: Cull, mode: Mode) -> TraceOptions {
    TraceOptions::default().with_cull(cull).with_mode(mode)
}

/// The mesh with every vertex mapped by `transform` in f64, then rounded to f32.
fn transformed_f64(mesh: &Mesh, transform: Mat4) -> Mesh {
    let m = transform.as_dmat4();
    let positions = mesh
        .positions()
        .iter()
        .map(|p| m.transform_point3(p.as_dvec3()).as_vec3())
        .collect();
    Mesh::new(positions, mesh.indices().to_vec()).expect("same indices")
}

/// A random rotation, non-uniform scale (0.5 .. 2 per axis, mirrored on one axis
/// with probability `mirror`) and translation inside `(lo, hi)`.
pub(crate) fn random_transform(rng: &mut Rng, mirror: f32, (lo, hi): (Vec3, Vec3)) -> Mat4 {
    let axis = rng.unit_vector();
    let rotation = Quat::from_axis_angle(axis, rng.range(0.0, std::f32::consts::TAU));
    let mut scale = Vec3::new(
        rng.range(0.5, 2.0),
        rng.range(0.5, 2.0),
        rng.range(0.5, 2.0),
    );
    if rng.chance(mirror) {
        scale[rng.below(3)] *= -1.0;
    }
    Mat4::from_scale_rotation_translation(scale, rotation, rng.point_in_box(lo, hi))
}

/// The hit's `(t, u, v, prim)` as a mesh hit.
fn as_hit(hit: &InstanceHit) -> Hit {
    Hit {
        t: hit.t,
        u: hit.u,
        v: hit.v,
        prim: hit.prim,
    }
}

/// The point `(1-u-v)*v0 + u*v1 + v*v2` of a hit on `mesh`, in f64.
fn barycentric_point(mesh: &Mesh, hit: &Hit) -> glam::DVec3 {
    let [v0, v1, v2] = mesh.triangle(hit.prim as usize).map(|v| v.as_dvec3());
    let (u, v) = (hit.u as f64, hit.v as f64);
    (1.0 - u - v) * v0 + u * v1 + v * v2
}

/// Distance from a hit's barycentric point to the nearest edge of its triangle:
/// each weight times the height over the opposite edge.
fn edge_distance(mesh: &Mesh, hit: &Hit) -> f64 {
    let [v0, v1, v2] = mesh.triangle(hit.prim as usize).map(|v| v.as_dvec3());
    let double_area = (v1 - v0).cross(v2 - v0).length();
    let (u, v) = (hit.u as f64, hit.v as f64);
    [(1.0 - u - v, v2 - v1), (u, v0 - v2), (v, v1 - v0)]
        .iter()
        .map(|(weight, edge)| weight.abs() * double_area / edge.length())
        .fold(f64::INFINITY, f64::min)
}

/// Meshes of the mixed scenes: an icosphere, the cube, a random soup and a grid
/// (shared vertices, closed meshes, slivers, a flat one).
pub(crate) fn meshes(rng: &mut Rng) -> Vec<Mesh> {
    vec![
        fixtures::icosphere(3, 1.0, Vec3::ZERO),
        fixtures::cube(),
        fixtures::soup(400, rng, (Vec3::splat(-1.0), Vec3::splat(1.0))),
        fixtures::grid(8, 8, 2.0),
    ]
}

/// `count` instances of the meshes with random transforms in a 6-unit box; the last
/// one is a copy of the first (with its own id), so hits on them tie on `t`.
pub(crate) fn random_instances(rng: &mut Rng, meshes: usize, count: usize) -> Vec<Instance> {
    let place = (Vec3::splat(-3.0), Vec3::splat(3.0));
    let mut instances: Vec<Instance> = (0..count - 1)
        .map(|i| {
            Instance::new(
                i % meshes,
                random_transform(rng, 0.3, place),
                1000 + i as u32,
            )
        })
        .collect();
    instances.push(Instance {
        id: 999,
        ..instances[0]
    });
    instances
}

/// [`meshes`] and a scene of `count` of their [`random_instances`].
pub(crate) fn random_scene(rng: &mut Rng, count: usize) -> (Vec<Mesh>, InstanceScene) {
    let meshes = meshes(rng);
    let instances = random_instances(rng, meshes.len(), count);
    let scene = InstanceScene::from_meshes(&meshes, instances).expect("valid scene");
    (meshes, scene)
}

/// Random rays and camera rays over the scene's box.
pub(crate) fn scene_rays(rng: &mut Rng, n: usize) -> Vec<Ray> {
    let bounds = (Vec3::splat(-4.0), Vec3::splat(4.0));
    let mut rays = fixtures::random_rays(n, rng, bounds);
    rays.extend(fixtures::camera_rays(bounds, 48, 32));
    rays
}

/// The nearest hit over every instance and every triangle, in the plain order of a
/// naive loop (the ray taken into each instance's object space), as
/// `(t, u, v, prim, instance)`.
fn naive(
    scene: &InstanceScene,
    packed: &[Vec<raypick::types::PackedTriangle>],
    ray: &Ray,
    options: &TraceOptions,
) -> (f32, f32, f32, u32, u32) {
    let mut best = (
        f32::INFINITY,
        0.0,
        0.0,
        raypick::types::MISS,
        raypick::types::MISS,
    );
    let ray = sanitize_ray(ray);
    if ray.dir == Vec3::ZERO {
        return best;
    }
    for (index, instance) in scene.instances().enumerate() {
        let Some(local) = scene.object_ray(index, &ray) else {
            continue;
        };
        let frame = RayFrame::new(&local);
        for tri in &packed[instance.mesh] {
            let c = intersect(
                &local,
                &frame,
                tri,
                options.cull,
                f32::INFINITY,
                options.mode,
            );
            // Instances are visited in index order and triangles in id order, so
            // only a strictly nearer hit replaces the best one.
            if c.accepted && c.t < best.0 {
                best = (c.t, c.u, c.v, tri.id, index as u32);
            }
        }
    }
    best
}

fn key(hit: &InstanceHit) -> (f32, f32, f32, u32, u32) {
    (hit.t, hit.u, hit.v, hit.prim, hit.instance)
}

#[test]
fn transformed_instance_matches_the_pretransformed_mesh() {
    let mut rng = Rng::new(0x1257_0001);
    let sphere = fixtures::icosphere(4, 1.0, Vec3::new(0.2, -0.1, 0.3));
    let soup = fixtures::soup(2000, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0)));
    let (mut compared, mut differing) = (0usize, 0usize);
    for mesh in [&sphere, &soup] {
        let blas = Arc::new(Blas::build(mesh));
        for case in 0..4 {
            let transform = random_transform(
                &mut rng,
                if case % 2 == 0 { 0.0 } else { 1.0 },
                (Vec3::splat(-3.0), Vec3::splat(3.0)),
            );
            let world = transformed_f64(mesh, transform);
            let bounds = world.bounds().expect("non-empty");
            let mut rays = fixtures::random_rays(3000, &mut rng, bounds);
            rays.extend(fixtures::incoherent_rays(2000, &mut rng, bounds));
            let scene =
                InstanceScene::new(vec![blas.clone()], vec![Instance::new(0, transform, 42)])
                    .expect("valid transform");
            for cull in CULLS {
                // A mirror reverses the world winding, but culling is decided in
                // object space: front faces of the instance are the faces the
                // transformed mesh sees as back faces.
                let world_cull = match (transform.determinant() < 0.0, cull) {
                    (true, Cull::Back) => Cull::Front,
                    (true, Cull::Front) => Cull::Back,
                    _ => cull,
                };
                let options = options(cull, Mode::Watertight);
                let got = scene.trace(&rays, &options);
                let want = CpuBackend::new().trace(
                    &CpuMesh::new(&world),
                    &rays,
                    &TraceOptions {
                        cull: world_cull,
                        ..options
                    },
                );
                for ((ray, g), w) in rays.iter().zip(&got).zip(&want) {
                    compared += 1;
                    let g = as_hit(g);
                    // The instance's rounded object-space ray and the rounded
                    // transformed vertices put a hit up to a few f32 ulps of the
                    // coordinates apart: 1e-5 of their magnitude.
                    let tolerance = 1e-5 * (1.0 + ray.origin.abs().max_element() as f64 + 3.0);
                    if g.prim != w.prim {
                        differing += 1;
                        // Each disagreement is a hit that close to an edge.
                        let near_edge = [g, *w]
                            .iter()
                            .filter(|h| h.is_hit())
                            .any(|h| edge_distance(&world, h) < tolerance);
                        assert!(near_edge, "{ray:?}: instance {g:?}, mesh {w:?}");
                        continue;
                    }
                    if g.is_hit() {
                        let (pg, pw) =
                            (barycentric_point(&world, &g), barycentric_point(&world, w));
                        assert!(
                            (g.t - w.t).abs() <= 1e-4 * w.t.abs().max(1.0)
                                && pg.distance(pw) <= tolerance,
                            "{ray:?}: instance {g:?}, mesh {w:?}"
                        );
                    }
                }
                // The world point and normal of every hit.
                for (ray, hit) in rays.iter().zip(&got).filter(|(_, h)| h.is_hit()) {
                    assert_eq!(hit.id, 42);
                    assert_eq!(hit.point, ray.origin + hit.t * ray.dir);
                    let [v0, v1, v2] = world.triangle(hit.prim as usize).map(|v| v.as_dvec3());
                    let mut n = (v1 - v0).cross(v2 - v0).normalize();
                    if transform.determinant() < 0.0 {
                        n = -n; // the mirror reversed the winding of the world vertices
                    }
                    assert!(hit.normal.as_dvec3().distance(n) < 1e-3, "{hit:?} vs {n}");
                    let front = ray.dir.as_dvec3().dot(n) < 0.0;
                    match cull {
                        Cull::Back => assert!(hit.front_face, "{hit:?}"),
                        Cull::Front => assert!(!hit.front_face, "{hit:?}"),
                        Cull::None => assert_eq!(hit.front_face, front, "{hit:?}"),
                    }
                }
            }
        }
    }
    eprintln!(
        "{differing} of {compared} rays hit another triangle, all within rounding of an edge"
    );
    assert!(differing * 1000 <= compared, "{differing} of {compared}");
}

#[test]
fn power_of_two_translations_and_axis_permutations_are_exact() {
    let mut rng = Rng::new(0x1257_0002);
    // Vertices and ray origins on a 1/1024 grid within [-4, 4]: moving them by a
    // power of two up to 32 is exact in f32.
    let snap = |v: Vec3| (v * 1024.0).round() / 1024.0;
    let soup = fixtures::soup(1500, &mut rng, (Vec3::splat(-3.0), Vec3::splat(3.0)));
    let positions = soup.positions().iter().map(|&p| snap(p)).collect();
    let mesh = Mesh::new(positions, soup.indices().to_vec()).expect("same indices");
    let blas = Arc::new(Blas::build(&mesh));
    let translation = Vec3::new(16.0, -8.0, 32.0);
    // x -> y -> z -> x (even) and x <-> y (odd, a mirror).
    let cyclic = Mat4::from_cols(Vec4::Y, Vec4::Z, Vec4::X, Vec4::W);
    let swap = Mat4::from_cols(Vec4::Y, Vec4::X, Vec4::Z, Vec4::W);
    let cases: [(Mat4, &[Mode], &[Cull]); 3] = [
        (Mat4::from_translation(translation), &MODES, &CULLS),
        (
            Mat4::from_translation(translation) * cyclic,
            &[Mode::Watertight],
            &CULLS,
        ),
        (
            Mat4::from_translation(translation) * swap,
            &[Mode::Watertight],
            &CULLS,
        ),
    ];
    for (transform, modes, culls) in cases {
        let world = transformed_f64(&mesh, transform);
        let bounds = world.bounds().expect("non-empty");
        let rays: Vec<Ray> = fixtures::random_rays(4000, &mut rng, bounds)
            .into_iter()
            .map(|r| Ray {
                origin: snap(r.origin),
                ..r
            })
            .collect();
        let scene = InstanceScene::new(vec![blas.clone()], vec![Instance::new(0, transform, 1)])
            .expect("valid transform");
        let mirrored = transform.determinant() < 0.0;
        for &mode in modes {
            for &cull in culls {
                let world_cull = match (mirrored, cull) {
                    (true, Cull::Back) => Cull::Front,
                    (true, Cull::Front) => Cull::Back,
                    _ => cull,
                };
                let got = scene.trace(&rays, &options(cull, mode));
                let want = CpuBackend::new().trace(
                    &CpuMesh::new(&world),
                    &rays,
                    &options(world_cull, mode),
                );
                let hits = want.iter().filter(|h| h.is_hit()).count();
                assert!(hits > 200, "only {hits} hits");
                for ((ray, g), w) in rays.iter().zip(&got).zip(&want) {
                    assert_eq!(as_hit(g), *w, "{transform} {mode:?} {cull:?} {ray:?}");
                }
            }
        }
    }
}

#[test]
fn two_level_traversal_equals_a_naive_loop() {
    let mut rng = Rng::new(0x1257_0003);
    let (meshes, scene) = random_scene(&mut rng, 40);
    let packed: Vec<_> = meshes.iter().map(pack_mesh).collect();
    let rays = scene_rays(&mut rng, 1500);
    let (mut hits, mut tied) = (0, 0);
    for cull in CULLS {
        for mode in MODES {
            let options = options(cull, mode);
            let fast = scene.trace(&rays, &options);
            let mirror = scene.trace_mirror(&rays, &options);
            for ((ray, f), m) in rays.iter().zip(&fast).zip(&mirror) {
                assert_eq!(f, m, "{ray:?}");
                // The copy of instance 0 (the last one) ties with it and never wins.
                assert_ne!(f.id, 999, "{ray:?}");
                tied += usize::from(f.id == 1000);
                assert_eq!(key(f), naive(&scene, &packed, ray, &options), "{ray:?}");
                hits += usize::from(f.is_hit());
            }
        }
    }
    assert!(hits > rays.len(), "only {hits} hits");
    assert!(tied > 0, "no ray hit the duplicated instance");
}

/// A batch of incoherent rays large enough that the CPU backend traces it in an
/// order of its own (sorted by where the rays enter the scene's box, more than
/// 16,384 rays) answers as the mirror's walk of the rays in the caller's order,
/// each hit in its ray's slot: nearest and any hit.
#[test]
fn reordered_instance_batches_answer_in_the_callers_slots() {
    let mut rng = Rng::new(0x1257_0009);
    let (_, scene) = random_scene(&mut rng, 40);
    let bounds = (Vec3::splat(-4.0), Vec3::splat(4.0));
    let rays = fixtures::incoherent_rays(20_000, &mut rng, bounds);
    let cpu = CpuBackend::with_threads(2).expect("a 2-thread pool");
    let options = options(Cull::None, Mode::Watertight);
    let traced = cpu.trace_instances(&scene, &rays, &options);
    let mirror = scene.trace_mirror(&rays, &options);
    assert_eq!(traced, mirror);
    let hits = traced.iter().filter(|hit| hit.is_hit()).count();
    assert!(hits > rays.len() / 10, "only {hits} hits");
    let occluded = cpu.occluded_instances(&scene, &rays, &options);
    assert!(
        occluded
            .iter()
            .zip(&mirror)
            .all(|(&any, hit)| any == hit.is_hit())
    );
}

#[test]
fn any_hit_is_a_hit_of_the_trace() {
    let mut rng = Rng::new(0x1257_000a);
    let (_, scene) = random_scene(&mut rng, 30);
    let mut rays = scene_rays(&mut rng, 1500);
    rays.push(Ray::new(Vec3::ZERO, Vec3::ZERO));
    rays.push(Ray::new(Vec3::splat(f32::NAN), Vec3::X));
    let picker = raypick::Picker::new(raypick::Backend::Cpu).expect("CPU picker");
    let prepared = picker.upload_instances(scene.clone()).expect("CPU scene");
    for cull in CULLS {
        for mode in MODES {
            let options = options(cull, mode);
            let want: Vec<bool> = scene
                .trace(&rays, &options)
                .iter()
                .map(InstanceHit::is_hit)
                .collect();
            let hits = want.iter().filter(|&&h| h).count();
            assert!(hits > rays.len() / 10 && hits < rays.len(), "{hits} hits");
            assert_eq!(scene.occluded(&rays, &options), want, "{cull:?} {mode:?}");
            let picked = picker
                .occluded_instances(&prepared, &rays, &options)
                .expect("any hit");
            assert_eq!(picked, want, "{cull:?} {mode:?}");
        }
    }
    // One ray on the calling thread, and f64 rays.
    let one = &rays[..1];
    assert_eq!(scene.occluded(one, &TraceOptions::default()).len(), 1);
    let wide: Vec<raypick::Ray64> = rays[..50]
        .iter()
        .map(|r| raypick::Ray64::from(*r))
        .collect();
    assert_eq!(
        picker
            .occluded_instances(&prepared, &wide, &TraceOptions::default())
            .expect("any hit"),
        scene.occluded(&rays[..50], &TraceOptions::default())
    );
}

#[test]
fn set_transform_equals_a_fresh_scene_and_keeps_the_blas() {
    let mut rng = Rng::new(0x1257_0004);
    let meshes = meshes(&mut rng);
    let mut instances = random_instances(&mut rng, meshes.len(), 30);
    let mut scene = InstanceScene::from_meshes(&meshes, instances.clone()).expect("valid");
    let blases: Vec<Arc<Blas>> = scene.meshes().to_vec();
    let nodes: Vec<*const _> = blases.iter().map(|b| b.bvh().nodes().as_ptr()).collect();
    let rays = scene_rays(&mut rng, 1500);
    // Move a third of the instances, some far away, one onto another.
    for i in (0..instances.len()).step_by(3) {
        let far = (Vec3::splat(-20.0), Vec3::splat(20.0));
        let transform = if i == 9 {
            instances[0].transform
        } else {
            random_transform(&mut rng, 0.3, far)
        };
        scene.set_transform(i, transform).expect("valid transform");
        instances[i].transform = transform;
    }
    let fresh = InstanceScene::new(blases.clone(), instances.clone()).expect("valid");
    for cull in CULLS {
        let options = options(cull, Mode::Watertight);
        let moved = scene.trace(&rays, &options);
        assert_eq!(moved, fresh.trace(&rays, &options));
        assert!(moved.iter().filter(|h| h.is_hit()).count() > rays.len() / 10);
    }
    for (a, b) in scene.meshes().iter().zip(&blases) {
        assert!(Arc::ptr_eq(a, b), "the BLAS was replaced");
    }
    let after: Vec<*const _> = scene
        .meshes()
        .iter()
        .map(|b| b.bvh().nodes().as_ptr())
        .collect();
    assert_eq!(after, nodes, "a BLAS was rebuilt");
    assert_eq!(scene.instances().cloned().collect::<Vec<_>>(), instances);
    // Rebuilding the refitted TLAS changes nothing either.
    let refitted = scene.trace(&rays, &TraceOptions::default());
    scene.rebuild_tlas();
    assert_eq!(scene.trace(&rays, &TraceOptions::default()), refitted);
}

#[test]
fn bad_transforms_are_errors() {
    let cube = Arc::new(Blas::build(&fixtures::cube()));
    let good = Mat4::from_translation(Vec3::new(0.0, 0.0, -5.0));
    let mut nan = good;
    nan.x_axis.y = f32::NAN;
    let mut infinite = good;
    infinite.w_axis.x = f32::INFINITY;
    let mut projective = good;
    projective.x_axis.w = 0.5;
    let flat = Mat4::from_scale(Vec3::new(1.0, 0.0, 1.0));
    let repeated = Mat4::from_cols(Vec4::X, Vec4::X, Vec4::Z, Vec4::W);
    let skewed = Mat4::from_cols(Vec4::X, Vec4::new(1.0, 1e-9, 0.0, 0.0), Vec4::Z, Vec4::W);
    let tiny = Mat4::from_scale(Vec3::splat(1e-39)); // the inverse overflows f32
    let cases = [
        (nan, InstanceError::NonFinite { instance: 1 }),
        (infinite, InstanceError::NonFinite { instance: 1 }),
        (projective, InstanceError::NotAffine { instance: 1 }),
        (flat, InstanceError::Singular { instance: 1 }),
        (repeated, InstanceError::Singular { instance: 1 }),
        (skewed, InstanceError::Singular { instance: 1 }),
        (tiny, InstanceError::NonFinite { instance: 1 }),
        (Mat4::ZERO, InstanceError::NotAffine { instance: 1 }),
    ];
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z);
    let mut scene = InstanceScene::new(
        vec![cube.clone()],
        vec![Instance::new(0, good, 1), Instance::new(0, good, 2)],
    )
    .expect("valid");
    let before = scene.trace(&[ray], &TraceOptions::default());
    assert_eq!(before[0].id, 1);
    for (transform, error) in cases {
        let instances = vec![Instance::new(0, good, 1), Instance::new(0, transform, 2)];
        let got = InstanceScene::new(vec![cube.clone()], instances).map(|_| ());
        assert_eq!(got, Err(error.clone()), "{transform}");
        assert_eq!(scene.set_transform(1, transform), Err(error), "{transform}");
        // A failed move leaves the scene as it was.
        assert_eq!(scene.trace(&[ray], &TraceOptions::default()), before);
    }
    // Large but representable scales are fine.
    for scale in [1e-20f32, 1e20] {
        scene
            .set_transform(1, Mat4::from_scale(Vec3::splat(scale)))
            .expect("invertible");
    }
    assert_eq!(
        scene.set_transform(2, good),
        Err(InstanceError::NoSuchInstance {
            instance: 2,
            instances: 2
        })
    );
    let unknown = InstanceScene::new(vec![cube], vec![Instance::new(1, good, 1)]).map(|_| ());
    assert_eq!(
        unknown,
        Err(InstanceError::UnknownMesh {
            instance: 0,
            mesh: 1,
            meshes: 1
        })
    );
    // The crate error carries the instance error.
    let error: Error = InstanceError::Singular { instance: 3 }.into();
    assert!(error.to_string().contains("instance 3"), "{error}");
}

#[test]
fn empty_scenes_and_empty_meshes_never_hit() {
    let mut rng = Rng::new(0x1257_0005);
    let rays = scene_rays(&mut rng, 500);
    let options = TraceOptions::default();
    let nothing = InstanceScene::new(Vec::new(), Vec::new()).expect("valid");
    assert!(nothing.is_empty());
    assert!(
        nothing
            .trace(&rays, &options)
            .iter()
            .all(|h| *h == InstanceHit::MISS)
    );
    let degenerate = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::X * 2.0]]);
    let meshes = [
        Mesh::default(),
        degenerate,
        fixtures::icosphere(2, 1.0, Vec3::ZERO),
    ];
    let place = Mat4::from_translation(Vec3::new(0.0, 0.0, 0.5));
    let empty_only = InstanceScene::from_meshes(
        &meshes,
        vec![Instance::new(0, place, 1), Instance::new(1, place, 2)],
    )
    .expect("valid");
    assert!(empty_only.tlas_nodes().is_empty());
    assert!(
        empty_only
            .trace(&rays, &options)
            .iter()
            .all(|h| *h == InstanceHit::MISS)
    );
    // Next to a real instance, the empty ones change nothing.
    let mut mixed = InstanceScene::from_meshes(
        &meshes,
        vec![
            Instance::new(0, place, 1),
            Instance::new(2, place, 3),
            Instance::new(1, place, 2),
        ],
    )
    .expect("valid");
    let alone =
        InstanceScene::from_meshes(&meshes, vec![Instance::new(2, place, 3)]).expect("valid");
    let hits = mixed.trace(&rays, &options);
    assert!(hits.iter().any(InstanceHit::is_hit));
    for (a, b) in hits.iter().zip(alone.trace(&rays, &options)) {
        assert_eq!((a.t, a.u, a.v, a.prim, a.id), (b.t, b.u, b.v, b.prim, b.id));
        assert!(!a.is_hit() || a.instance == 1);
    }
    mixed
        .set_transform(0, Mat4::IDENTITY)
        .expect("moving an empty instance is fine");
    assert_eq!(mixed.trace(&rays, &options), hits);
}

#[test]
fn hits_report_world_point_normal_and_facing_through_a_mirror() {
    // A unit square in z = 0, counter-clockwise seen from +z (normal +z), stretched
    // by 2 along x and mirrored in z: its front side now faces -z.
    let square = Mesh::new(
        vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y],
        vec![[0, 1, 2], [0, 2, 3]],
    )
    .expect("valid");
    let mirror = Mat4::from_translation(Vec3::new(10.0, 0.0, 0.0))
        * Mat4::from_scale(Vec3::new(2.0, 1.0, -1.0));
    let scene =
        InstanceScene::from_meshes(&[square], vec![Instance::new(0, mirror, 77)]).expect("valid");
    let down = Ray::new(Vec3::new(11.5, 0.25, 1.0), Vec3::new(0.0, 0.0, -2.0));
    let up = Ray::new(Vec3::new(11.5, 0.25, -1.0), Vec3::new(0.0, 0.0, 2.0));
    let trace = |ray: Ray, cull: Cull| scene.trace(&[ray], &options(cull, Mode::Watertight))[0];
    let hit = trace(down, Cull::None);
    assert_eq!((hit.prim, hit.instance, hit.id), (0, 0, 77));
    assert_eq!(hit.t, 0.5); // in units of the unnormalised direction
    assert_eq!((hit.u, hit.v), (0.5, 0.25));
    assert_eq!(hit.point, Vec3::new(11.5, 0.25, 0.0));
    assert_eq!(hit.normal, Vec3::NEG_Z);
    assert!(!hit.front_face);
    assert!(!trace(down, Cull::Back).is_hit());
    assert!(trace(down, Cull::Front).is_hit());
    let hit = trace(up, Cull::Back);
    assert!(hit.is_hit() && hit.front_face);
    assert!(!trace(up, Cull::Front).is_hit());
    // Invalid rays miss.
    for bad in [
        Ray::new(Vec3::splat(f32::NAN), Vec3::Z),
        Ray::new(Vec3::ZERO, Vec3::ZERO),
        Ray::with_interval(Vec3::ZERO, Vec3::Z, 1.0, 0.0),
    ] {
        assert_eq!(
            scene.trace(&[bad], &TraceOptions::default())[0],
            InstanceHit::MISS
        );
    }
}

#[test]
fn gpu_matches_cpu_bit_for_bit_before_and_after_moves() {
    if crate::support::gpu().is_none() {
        return;
    }
    // The meshes walked in either node layout.
    for layout in [NodeLayout::Binary, NodeLayout::Wide] {
        let gpu = raypick::gpu::GpuContext::with_options(raypick::gpu::GpuOptions {
            node_layout: layout,
            ..Default::default()
        })
        .expect("a context on the test adapter");
        gpu_matches_cpu_before_and_after_moves(&gpu, layout);
    }
}

fn gpu_matches_cpu_before_and_after_moves(gpu: &raypick::gpu::GpuContext, layout: NodeLayout) {
    let mut rng = Rng::new(0x1257_0006);
    let (_, scene) = random_scene(&mut rng, 40);
    let rays = scene_rays(&mut rng, 2000);
    let mut cpu_scene = scene.clone();
    let mut gpu_scene = gpu.upload_instances(scene).expect("upload");
    assert_eq!(gpu_scene.node_layout(), Some(layout));
    let compare = |cpu_scene: &InstanceScene, gpu_scene: &raypick::instances::GpuInstanceScene| {
        let mut hits = 0;
        for cull in CULLS {
            for mode in MODES {
                let options = options(cull, mode);
                let cpu = cpu_scene.trace(&rays, &options);
                let got = gpu
                    .trace_instances(gpu_scene, &rays, &options)
                    .expect("GPU trace");
                for ((ray, c), g) in rays.iter().zip(&cpu).zip(&got) {
                    assert_eq!(c, g, "{layout:?} {cull:?} {mode:?} {ray:?}");
                }
                let occluded = gpu
                    .occluded_instances(gpu_scene, &rays, &options)
                    .expect("GPU any hit");
                let want: Vec<bool> = cpu.iter().map(InstanceHit::is_hit).collect();
                assert_eq!(occluded, want, "{cull:?} {mode:?}");
                hits += cpu.iter().filter(|h| h.is_hit()).count();
            }
        }
        assert!(hits > rays.len(), "only {hits} hits");
    };
    compare(&cpu_scene, &gpu_scene);
    for i in (1..40).step_by(4) {
        let transform = random_transform(&mut rng, 0.5, (Vec3::splat(-4.0), Vec3::splat(4.0)));
        cpu_scene.set_transform(i, transform).expect("valid");
        gpu_scene.set_transform(i, transform).expect("valid");
    }
    compare(&cpu_scene, &gpu_scene);
    gpu_scene.rebuild_tlas();
    compare(&cpu_scene, &gpu_scene);
    // Bad input on the GPU scene: an error, and nothing changes.
    let bad = gpu_scene.set_transform(0, Mat4::ZERO);
    assert!(matches!(
        bad,
        Err(Error::Instance(InstanceError::NotAffine { instance: 0 }))
    ));
    compare(&cpu_scene, &gpu_scene);
}

#[test]
fn gpu_finishes_long_rays_on_the_cpu_and_refuses_oversized_scenes_through_a_picker() {
    if crate::support::gpu().is_none() {
        return;
    }
    // Few loop steps (most rays run out and are finished on the CPU) and small
    // bindings (rays split into dispatches of 2,048; large scenes refused).
    let gpu = raypick::gpu::GpuContext::with_options(raypick::gpu::GpuOptions {
        max_traversal_steps: Some(24),
        max_binding_bytes: Some(64 * 1024),
        ..Default::default()
    })
    .expect("a second context on the same adapter");
    let picker = raypick::Picker::from_gpu(gpu);
    let gpu = picker.gpu().expect("a GPU picker");
    let mut rng = Rng::new(0x1257_0007);
    let meshes = [fixtures::cube(), fixtures::icosphere(2, 1.0, Vec3::ZERO)];
    let scene =
        InstanceScene::from_meshes(&meshes, random_instances(&mut rng, 2, 24)).expect("valid");
    let rays = scene_rays(&mut rng, 3000);
    let options = TraceOptions::default();
    let want = scene.trace(&rays, &options);
    let mut moved = scene.clone();
    let uploaded = gpu.upload_instances(scene.clone()).expect("fits");
    assert_eq!(
        gpu.trace_instances(&uploaded, &rays, &options)
            .expect("trace"),
        want
    );
    // The same through the picker, before and after a move.
    let mut prepared = picker.upload_instances(scene.clone()).expect("fits");
    assert_eq!(prepared.backend(), raypick::Backend::Gpu);
    let trace = |prepared: &_| {
        picker
            .trace_instances(prepared, &rays, &options)
            .expect("trace")
    };
    assert_eq!(trace(&prepared), want);
    let transform = Mat4::from_rotation_z(0.5) * Mat4::from_translation(Vec3::X);
    picker
        .set_instance_transform(&mut prepared, 5, transform)
        .expect("move");
    moved.set_transform(5, transform).expect("move");
    assert_eq!(trace(&prepared), moved.trace(&rays, &options));
    // A scene prepared for the CPU is refused.
    let cpu_scene = raypick::Picker::new(raypick::Backend::Cpu)
        .expect("CPU picker")
        .upload_instances(scene)
        .expect("a CPU scene");
    assert!(matches!(
        picker.trace_instances(&cpu_scene, &rays, &options),
        Err(Error::WrongBackend)
    ));
    let big = InstanceScene::from_meshes(
        &[fixtures::icosphere(4, 1.0, Vec3::ZERO)],
        vec![Instance::new(0, Mat4::IDENTITY, 0)],
    )
    .expect("valid");
    let refused = gpu.upload_instances(big);
    assert!(
        matches!(
            refused,
            Err(Error::Instance(InstanceError::TooLarge { .. }))
        ),
        "{refused:?}"
    );
    // An eight-wide mesh stack of two entries: rays whose walk would push more are
    // finished on the CPU.
    let shallow = raypick::gpu::GpuContext::with_options(raypick::gpu::GpuOptions {
        max_traversal_stack: Some(2),
        node_layout: NodeLayout::Wide,
        ..Default::default()
    })
    .expect("a third context on the same adapter");
    let deep = InstanceScene::from_meshes(
        &[fixtures::icosphere(3, 1.0, Vec3::ZERO)],
        random_instances(&mut rng, 1, 6),
    )
    .expect("valid");
    let on_shallow = shallow.upload_instances(deep.clone()).expect("upload");
    assert_eq!(
        shallow
            .trace_instances(&on_shallow, &rays, &options)
            .expect("trace"),
        deep.trace(&rays, &options)
    );
    // A scene of another context is refused.
    let other = crate::support::gpu().expect("adapter");
    assert!(matches!(
        other.trace_instances(&uploaded, &rays, &options),
        Err(Error::WrongBackend)
    ));
}

/// A timed context counts an instance trace's passes and host stages as a mesh
/// trace's.
#[test]
fn gpu_instance_traces_are_timed() {
    if crate::support::gpu().is_none() {
        return;
    }
    let gpu = raypick::gpu::GpuContext::with_options(raypick::gpu::GpuOptions {
        timing: true,
        // 3,000 rays take several dispatches.
        max_rays_per_dispatch: Some(2048),
        ..Default::default()
    })
    .expect("a context on the test adapter");
    let mut rng = Rng::new(0x1257_0009);
    let (_, scene) = random_scene(&mut rng, 12);
    let rays = scene_rays(&mut rng, 3000);
    let options = TraceOptions::default();
    let uploaded = gpu.upload_instances(scene.clone()).expect("upload");
    gpu.take_times();
    assert_eq!(
        gpu.trace_instances(&uploaded, &rays, &options)
            .expect("trace"),
        scene.trace(&rays, &options)
    );
    let times = gpu.take_times().expect("timing on");
    let dispatches = rays.len().div_ceil(gpu.max_rays_per_dispatch()) as u64;
    assert!(dispatches > 1);
    assert_eq!(times.passes + times.untimed_passes, dispatches, "{times:?}");
    assert_eq!(times.kernel_ms.is_some(), gpu.has_kernel_timing());
    assert!(times.kernel_ms.is_none_or(|ms| ms > 0.0), "{times:?}");
    assert!(times.submit_ms > 0.0 && times.wait_ms > 0.0 && times.finish_ms > 0.0);
}

#[test]
fn gpu_empty_scenes_never_hit() {
    let Some(gpu) = crate::support::gpu() else {
        return;
    };
    let mut rng = Rng::new(0x1257_0008);
    let rays = scene_rays(&mut rng, 200);
    let options = TraceOptions::default();
    let nothing = gpu.upload_instances(InstanceScene::new(Vec::new(), Vec::new()).expect("valid"));
    let nothing = nothing.expect("upload");
    assert!(
        gpu.trace_instances(&nothing, &rays, &options)
            .expect("trace")
            .iter()
            .all(|h| *h == InstanceHit::MISS)
    );
    let meshes = [Mesh::default(), fixtures::icosphere(1, 1.0, Vec3::ZERO)];
    let instances = vec![
        Instance::new(0, Mat4::IDENTITY, 1),
        Instance::new(1, Mat4::IDENTITY, 2),
        Instance::new(0, Mat4::IDENTITY, 3),
    ];
    let scene = InstanceScene::from_meshes(&meshes, instances).expect("valid");
    let want = scene.trace(&rays, &options);
    let uploaded = gpu.upload_instances(scene).expect("upload");
    let got = gpu
        .trace_instances(&uploaded, &rays, &options)
        .expect("trace");
    assert_eq!(got, want);
    assert!(got.iter().all(|h| !h.is_hit() || h.id == 2));
}

#[test]
fn picker_traces_instances_on_its_backend() {
    let mut rng = Rng::new(0x1257_0009);
    let (_, scene) = random_scene(&mut rng, 12);
    let rays = scene_rays(&mut rng, 300);
    let options = TraceOptions::default();
    let picker = raypick::Picker::with_options(
        raypick::Backend::Cpu,
        raypick::PickerOptions {
            threads: Some(2),
            ..Default::default()
        },
    )
    .expect("threads");
    let mut prepared = picker.upload_instances(scene.clone()).expect("prepare");
    assert_eq!(
        picker
            .trace_instances(&prepared, &rays, &options)
            .expect("trace"),
        scene.trace(&rays, &options)
    );
    let moved = Mat4::from_translation(Vec3::splat(50.0));
    picker
        .set_instance_transform(&mut prepared, 0, moved)
        .expect("move");
    assert_eq!(
        prepared.scene().instance(0).map(|i| i.transform),
        Some(moved)
    );
    let bad = picker.set_instance_transform(&mut prepared, 99, moved);
    assert!(matches!(
        bad,
        Err(Error::Instance(InstanceError::NoSuchInstance { .. }))
    ));
}
