//! Queries beyond the closest hit — any hit (occlusion) and all hits sorted by
//! `(t, id)` — on every engine (CPU and GPU, brute force and BVH, the GPU's ray
//! queries where it has them), every culling
//! mode and both ray–triangle tests.
//!
//! The all-hits oracle is independent of the list code: every triangle is traced on
//! its own with the CPU brute-force kernel, the hits are sorted by `(t, id)` and cut
//! to `max_hits`.

use crate::support::{CPU_BRUTE, Engine, all_options, engines, gpu, trace_with};
use glam::{Mat4, Vec3};
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::gpu::{GpuContext, GpuOptions};
use raypick::{Accel, AllHits, Backend, Hit, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

/// A named mesh and the rays traced against it.
struct Case {
    name: &'static str,
    mesh: Mesh,
    rays: Vec<Ray>,
}

/// A stack of `layers` copies of a grid, `gap` apart along z, each layer twice (the
/// same triangles under two ids: exact ties), plus degenerate triangles.
fn stacked_grids(layers: u32, gap: f32, rng: &mut Rng) -> Mesh {
    let grid = fixtures::grid(6, 6, 2.0);
    let mut parts = Vec::new();
    for layer in 0..layers {
        let moved = fixtures::transformed(
            &grid,
            Mat4::from_translation(Vec3::new(0.0, 0.0, layer as f32 * gap)),
        );
        parts.push(moved.clone());
        parts.push(moved);
    }
    fixtures::with_degenerates(&fixtures::concat(&parts), rng, 20)
}

fn cases() -> Vec<Case> {
    let mut rng = Rng::new(41);
    let mut cases = Vec::new();

    let soup = fixtures::soup(600, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0)));
    let mut rays = fixtures::random_rays(1_500, &mut rng, soup.bounds().unwrap());
    rays.extend(fixtures::incoherent_rays(
        500,
        &mut rng,
        soup.bounds().unwrap(),
    ));
    rays.extend(fixtures::adversarial_rays(&soup, &mut rng, 500));
    cases.push(Case {
        name: "soup",
        mesh: soup,
        rays,
    });

    let sphere = fixtures::concat(&[
        fixtures::icosphere(2, 1.0, Vec3::ZERO),
        fixtures::icosphere(1, 0.5, Vec3::new(0.3, 0.2, 0.1)),
    ]);
    let mut rays = fixtures::camera_rays(sphere.bounds().unwrap(), 40, 30);
    rays.extend(fixtures::adversarial_rays(&sphere, &mut rng, 600));
    cases.push(Case {
        name: "nested spheres",
        mesh: sphere,
        rays,
    });

    let stack = stacked_grids(6, 0.25, &mut rng);
    let mut rays = fixtures::camera_rays(stack.bounds().unwrap(), 32, 24);
    rays.extend(fixtures::random_rays(
        600,
        &mut rng,
        stack.bounds().unwrap(),
    ));
    rays.extend(fixtures::adversarial_rays(&stack, &mut rng, 600));
    // Straight down through the stack, some exactly through shared edges and vertices.
    for i in 0..200 {
        let x = -1.0 + (i % 20) as f32 * (1.0 / 6.0);
        let y = -1.0 + (i / 20) as f32 * 0.2;
        rays.push(Ray::new(Vec3::new(x, y, 3.0), Vec3::NEG_Z));
    }
    cases.push(Case {
        name: "stacked duplicate grids",
        mesh: stack,
        rays,
    });
    cases
}

/// The oracle: each ray's hits, from tracing every triangle on its own with the CPU
/// brute-force kernel, sorted by `(t, id)`.
fn enumerate_hits(mesh: &Mesh, rays: &[Ray], options: &TraceOptions) -> Vec<Vec<Hit>> {
    let cpu = CpuBackend::new();
    let mut lists = vec![Vec::new(); rays.len()];
    for id in 0..mesh.triangle_count() {
        let single = CpuMesh::with_accel(&Mesh::from_triangles(&[mesh.triangle(id)]), Accel::Brute);
        for (list, hit) in lists.iter_mut().zip(cpu.trace(&single, rays, options)) {
            if hit.is_hit() {
                list.push(Hit {
                    prim: id as u32,
                    ..hit
                });
            }
        }
    }
    for list in &mut lists {
        list.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.prim.cmp(&b.prim)));
    }
    lists
}

fn occluded(engine: Engine, mesh: &Mesh, rays: &[Ray], options: &TraceOptions) -> Vec<bool> {
    match engine.backend {
        Backend::Cpu => {
            CpuBackend::new().occluded(&CpuMesh::with_accel(mesh, engine.accel), rays, options)
        }
        _ => {
            let gpu = gpu().expect("GPU engine without an adapter");
            let uploaded = gpu.upload_with(mesh, engine.accel).unwrap();
            gpu.occluded(&uploaded, rays, options).unwrap()
        }
    }
}

fn trace_all(
    engine: Engine,
    mesh: &Mesh,
    rays: &[Ray],
    max_hits: usize,
    options: &TraceOptions,
) -> AllHits {
    match engine.backend {
        Backend::Cpu => CpuBackend::new()
            .trace_all(
                &CpuMesh::with_accel(mesh, engine.accel),
                rays,
                max_hits,
                options,
            )
            .unwrap(),
        _ => {
            let gpu = gpu().expect("GPU engine without an adapter");
            let uploaded = gpu.upload_with(mesh, engine.accel).unwrap();
            gpu.trace_all(&uploaded, rays, max_hits, options).unwrap()
        }
    }
}

/// Checks `all` against the oracle's lists: the first `max_hits` hits bit for bit,
/// MISS padding, and the truncation flag.
fn assert_lists(what: &str, all: &AllHits, expected: &[Vec<Hit>]) {
    let k = all.max_hits();
    assert_eq!(all.len(), expected.len(), "{what}");
    assert_eq!(all.slots().len(), k * expected.len(), "{what}");
    for (i, expected) in expected.iter().enumerate() {
        let listed = &expected[..expected.len().min(k)];
        assert_eq!(all.hits_of(i), listed, "{what}: ray {i}");
        assert_eq!(all.count(i), listed.len(), "{what}: ray {i}");
        assert_eq!(all.is_truncated(i), expected.len() > k, "{what}: ray {i}");
        let padding = &all.slots()[i * k + listed.len()..(i + 1) * k];
        assert!(padding.iter().all(|h| *h == Hit::MISS), "{what}: ray {i}");
    }
}

#[test]
fn any_hit_agrees_with_the_closest_hit_everywhere() {
    for case in cases() {
        for options in all_options() {
            let closest = trace_with(CPU_BRUTE, &case.mesh, &case.rays, &options);
            let expected: Vec<bool> = closest.iter().map(Hit::is_hit).collect();
            let hits = expected.iter().filter(|&&b| b).count();
            assert!(
                hits > 0 && hits < case.rays.len(),
                "{}: {hits} hits",
                case.name
            );
            for engine in engines() {
                let got = occluded(engine, &case.mesh, &case.rays, &options);
                let closest_here = trace_with(engine, &case.mesh, &case.rays, &options);
                let differ = (0..got.len())
                    .filter(|&i| got[i] != expected[i] || got[i] != closest_here[i].is_hit())
                    .collect::<Vec<_>>();
                assert!(
                    differ.is_empty(),
                    "{} {engine:?} {options:?}: {} rays differ, first {:?}",
                    case.name,
                    differ.len(),
                    differ.first().map(|&i| case.rays[i])
                );
            }
        }
    }
}

#[test]
fn all_hits_equal_an_independent_enumeration_on_every_engine() {
    for case in cases() {
        for options in all_options() {
            let expected = enumerate_hits(&case.mesh, &case.rays, &options);
            let deepest = expected.iter().map(Vec::len).max().unwrap();
            let closest = trace_with(CPU_BRUTE, &case.mesh, &case.rays, &options);
            for (i, list) in expected.iter().enumerate() {
                assert_eq!(list.first().copied().unwrap_or(Hit::MISS), closest[i]);
            }
            for max_hits in [1, 3, 64] {
                let mut first: Option<AllHits> = None;
                for engine in engines() {
                    let what = format!("{} {engine:?} {options:?} K={max_hits}", case.name);
                    let all = trace_all(engine, &case.mesh, &case.rays, max_hits, &options);
                    assert_lists(&what, &all, &expected);
                    // Bit for bit the same on every engine.
                    match &first {
                        Some(first) => assert_eq!(&all, first, "{what}"),
                        None => first = Some(all),
                    }
                }
            }
            assert!(deepest >= 2, "{}: some ray has several hits", case.name);
        }
    }
}

#[test]
fn truncated_lists_and_ties_are_exercised() {
    let mut rng = Rng::new(5);
    let mesh = stacked_grids(6, 0.25, &mut rng);
    let ray = Ray::new(Vec3::new(0.1, 0.15, 3.0), Vec3::NEG_Z);
    for engine in engines() {
        let all = trace_all(engine, &mesh, &[ray], 5, &TraceOptions::default());
        let hits = all.hits_of(0);
        assert_eq!(hits.len(), 5, "{engine:?}");
        assert!(all.is_truncated(0), "{engine:?}: 12 hits, 5 listed");
        // Each layer twice at the same t: the lower id first.
        assert_eq!(hits[0].t, hits[1].t, "{engine:?}");
        assert!(hits[0].prim < hits[1].prim, "{engine:?}");
        assert!(hits[1].t < hits[2].t, "{engine:?}");
        let whole = trace_all(engine, &mesh, &[ray], 12, &TraceOptions::default());
        assert_eq!(whole.count(0), 12, "{engine:?}");
        assert!(!whole.is_truncated(0), "{engine:?}: exactly 12 hits");
        assert_eq!(&whole.hits_of(0)[..5], hits, "{engine:?}");
    }
}

#[test]
fn one_hit_lists_are_the_closest_hits() {
    let case = &cases()[1];
    for options in all_options() {
        for engine in engines() {
            let closest = trace_with(engine, &case.mesh, &case.rays, &options);
            let all = trace_all(engine, &case.mesh, &case.rays, 1, &options);
            for (i, hit) in closest.iter().enumerate() {
                assert_eq!(all.slots()[i], *hit, "{engine:?} {options:?} ray {i}");
                assert_eq!(all.count(i), usize::from(hit.is_hit()));
            }
        }
    }
}

#[test]
fn bad_requests_are_errors() {
    let mesh = fixtures::cube();
    let rays = [Ray::new(Vec3::splat(3.0), Vec3::NEG_ONE)];
    let cpu = CpuBackend::new();
    let err = cpu
        .trace_all(&CpuMesh::new(&mesh), &rays, 0, &TraceOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("max_hits"), "{err}");
    let empty = cpu
        .trace_all(&CpuMesh::new(&mesh), &[], 4, &TraceOptions::default())
        .unwrap();
    assert!(empty.is_empty());
    let Some(gpu) = gpu() else { return };
    let uploaded = gpu.upload(&mesh).unwrap();
    assert!(
        gpu.trace_all(&uploaded, &rays, 0, &TraceOptions::default())
            .is_err()
    );
    let too_many = (gpu.max_binding_bytes() / 16) as usize + 1;
    let err = gpu
        .trace_all(&uploaded, &rays, too_many, &TraceOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("binding"), "{err}");
    assert_eq!(
        gpu.occluded(&uploaded, &[], &TraceOptions::default())
            .unwrap(),
        Vec::<bool>::new()
    );
}

/// Splitting a batch across dispatches, a mesh across bindings and triangle ranges,
/// and finishing rays out of loop steps on the CPU change no answer.
#[test]
fn split_batches_give_the_same_answers() {
    if gpu().is_none() {
        return;
    }
    let contexts = [
        GpuOptions {
            // 266 triangles or 200 BVH nodes per binding; 8 rays × 50 hits per dispatch.
            max_binding_bytes: Some(64 * 200),
            ..Default::default()
        },
        GpuOptions {
            max_rays_per_dispatch: Some(100),
            max_triangles_per_dispatch: Some(150),
            ..Default::default()
        },
        GpuOptions {
            max_traversal_steps: Some(20),
            ..Default::default()
        },
    ];
    let mut rng = Rng::new(17);
    let mesh = fixtures::concat(&[
        fixtures::soup(500, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0))),
        stacked_grids(4, 0.3, &mut rng),
    ]);
    let mut rays = fixtures::random_rays(800, &mut rng, mesh.bounds().unwrap());
    rays.extend(fixtures::camera_rays(mesh.bounds().unwrap(), 24, 20));
    let options = TraceOptions::default();
    let expected = enumerate_hits(&mesh, &rays, &options);
    let occluded_expected: Vec<bool> = expected.iter().map(|l| !l.is_empty()).collect();
    for gpu_options in contexts {
        let split = GpuContext::with_options(gpu_options.clone()).unwrap();
        for accel in [Accel::Brute, Accel::Bvh] {
            let what = format!("{accel:?} {gpu_options:?}");
            let uploaded = split.upload_with(&mesh, accel).unwrap();
            let all = split.trace_all(&uploaded, &rays, 50, &options).unwrap();
            assert_lists(&what, &all, &expected);
            let few = split.trace_all(&uploaded, &rays, 2, &options).unwrap();
            assert_lists(&what, &few, &expected);
            let occluded = split.occluded(&uploaded, &rays, &options).unwrap();
            assert_eq!(occluded, occluded_expected, "{what}");
        }
    }
}

/// Some drivers stop a shader loop after 65,535 iterations in total: lists over
/// meshes past that are still complete (every triangle offered, the highest ids too).
#[test]
fn lists_over_meshes_beyond_65536_triangles_are_complete() {
    if gpu().is_none() {
        return;
    }
    let grid = fixtures::grid(130, 130, 4.0); // 33,800 triangles, twice: ties everywhere
    let mesh = fixtures::concat(&[grid.clone(), grid]);
    assert!(mesh.triangle_count() > 65_536);
    let rays = fixtures::camera_rays(mesh.bounds().unwrap(), 32, 24);
    let options = TraceOptions::default();
    for max_hits in [1, 4] {
        let expected = trace_all(CPU_BRUTE, &mesh, &rays, max_hits, &options);
        let highest = (0..rays.len())
            .flat_map(|i| expected.hits_of(i).iter().map(|h| h.prim))
            .max()
            .unwrap();
        assert!(highest > 65_536 || max_hits == 1, "max id {highest}");
        for engine in engines().into_iter().filter(|&e| e != CPU_BRUTE) {
            let got = trace_all(engine, &mesh, &rays, max_hits, &options);
            assert_eq!(got, expected, "{engine:?} K={max_hits}");
        }
        let listed: usize = (0..rays.len()).map(|i| expected.count(i)).sum();
        assert!(listed > rays.len() / 4, "{listed} hits listed");
    }
}

#[test]
fn picker_queries_take_either_ray_precision_and_fill_caller_memory() {
    let mut rng = Rng::new(0x0CC1);
    let mesh = stacked_grids(3, 0.5, &mut rng);
    let rays = fixtures::incoherent_rays(2_000, &mut rng, mesh.bounds().unwrap());
    let wide: Vec<raypick::Ray64> = rays.iter().map(|&r| r.into()).collect();
    let options = TraceOptions::default();
    let mut backends = vec![Backend::Cpu];
    backends.extend(gpu().map(|_| Backend::Gpu));
    for backend in backends {
        let picker = raypick::Picker::new(backend).expect("picker");
        let uploaded = picker.upload(&mesh).expect("upload");
        let hits = picker.trace(&uploaded, &rays, &options).expect("trace");
        assert_eq!(picker.trace(&uploaded, &wide, &options).expect("f64"), hits);
        let want: Vec<bool> = hits.iter().map(Hit::is_hit).collect();
        assert!(want.iter().any(|&h| h) && want.iter().any(|&h| !h));
        assert_eq!(
            picker.occluded(&uploaded, &wide, &options).expect("f64"),
            want
        );
        let mut occluded = vec![true; rays.len()];
        picker
            .occluded_into(&uploaded, &rays, &options, &mut occluded)
            .expect("occluded_into");
        assert_eq!(occluded, want, "{backend:?}");
        let err = picker
            .occluded_into(&uploaded, &rays, &options, &mut occluded[1..])
            .expect_err("one slot short");
        assert!(matches!(err, raypick::Error::OutputLength { .. }), "{err}");
        let all = picker
            .trace_all(&uploaded, &wide, 1, &options)
            .expect("trace_all");
        for (i, hit) in hits.iter().enumerate() {
            assert_eq!(all.hits_of(i).first(), hit.is_hit().then_some(hit));
        }
    }
}
