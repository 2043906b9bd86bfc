//! Hardware ray queries (`Accel::RayQuery`): the driver finds the boxes a ray
//! crosses, raypick's test decides each hit, and the answers are CPU brute force's
//! bit for bit.
//!
//! - The stage's decisions (segments behind and ahead of the origin, committed
//!   bounds, far rays, boxes) are checked on the CPU with a driver whose box test is
//!   exact ([`ExactBoxSearch`]), on the parity suite's meshes and rays and on rays
//!   with intervals behind their origin, far origins and extreme direction lengths.
//! - On a GPU with ray queries: the same rays in every culling mode and both tests,
//!   any hit, hit lists, meshes split into several structures and batches into
//!   several dispatches, rays left to the CPU, empty and degenerate meshes, refit,
//!   the pick service, the CPU copy after a fallback.
//! - Without ray queries (the CPU backend, a device opened without the feature, a
//!   test GPU that lacks it): `Error::NoRayQueries`, never a panic.

use std::sync::Arc;

use glam::Vec3;
use rayon::prelude::*;
use raypick::bvh::Bvh;
use raypick::cpu::bvh_traverse;
use raypick::cpu::hit_list::HitList;
use raypick::cpu::query::{AnyHit, Closest};
use raypick::cpu::ray_query::{DriverBoxes, ExactBoxSearch, traverse};
use raypick::gpu::{GpuContext, GpuOptions};
use raypick::prepare::{pack_mesh, sanitize_ray};
use raypick::types::LIST_TRUNCATED;
use raypick::{Accel, Backend, Cull, Error, Hit, Mesh, Mode, Picker, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};
use raypick_testkit::parity::assert_bits_equal;

use crate::parity::{meshes, rays_for};
use crate::support::{CPU_BRUTE, all_options, assert_contracts, compare, gpu, trace_with};

/// The test GPU when it has ray queries. Without an adapter this skips (or fails
/// under `RAYPICK_REQUIRE_GPU=1`, in `gpu()`); an adapter without ray queries is
/// reported, and uploading for them is checked to be `Error::NoRayQueries`.
fn ray_query_gpu() -> Option<&'static GpuContext> {
    let gpu = gpu()?;
    if gpu.has_ray_queries() {
        return Some(gpu);
    }
    eprintln!(
        "the GPU {:?} has no ray queries: checking Error::NoRayQueries instead",
        gpu.adapter()
    );
    let mesh = fixtures::icosphere(1, 1.0, Vec3::ZERO);
    let err = gpu.upload_with(&mesh, Accel::RayQuery).unwrap_err();
    assert!(matches!(err, Error::NoRayQueries(_)), "{err}");
    None
}

/// Rays that stress the segments given to the driver: intervals reaching behind
/// the origin (down to `-inf`), lying wholly behind it, or starting past it; origins
/// far from the mesh (left to the CPU); directions from `2^-100` to `2^100` long.
/// Built from random rays through the mesh's box by moving the origin along the
/// line and the interval with it, so most still hit.
fn interval_rays(mesh: &Mesh, rng: &mut Rng, n: usize) -> Vec<Ray> {
    let bounds = mesh.bounds().expect("finite vertices");
    let diag = (bounds.1 - bounds.0).length();
    let base = fixtures::incoherent_rays(n, rng, bounds);
    base.into_iter()
        .enumerate()
        .map(|(i, ray)| {
            let scale = 2f32.powi(rng.below(201) as i32 - 100);
            let dir = ray.dir * scale;
            // t along `dir` of the base ray's [0, 3 diag] (it starts a diagonal away).
            let reach = 3.0 * diag / scale;
            let shift = rng.range(0.0, 1.0) * reach;
            let origin = ray.origin + dir * shift;
            let (tmin, tmax) = match i % 6 {
                0 => (-shift, f32::INFINITY),
                1 => (f32::NEG_INFINITY, f32::INFINITY),
                2 => (f32::NEG_INFINITY, rng.range(-1.0, 0.0) * shift),
                3 => (-shift, rng.range(-1.0, 1.0) * shift),
                4 => (rng.range(0.0, 0.5) * reach, f32::INFINITY),
                // Far away: 10 to 1e6 diagonals out, back along the line.
                _ => {
                    let far = diag * rng.log_range(10.0, 1e6) / scale;
                    let origin = ray.origin - dir * far;
                    return Ray::with_interval(origin, dir, 0.0, f32::INFINITY);
                }
            };
            Ray::with_interval(origin, dir, tmin, tmax)
        })
        .collect()
}

/// The parity suite's rays for a mesh (100k) plus 30k [`interval_rays`].
fn test_rays(mesh: &Mesh, seed: u64) -> Vec<Ray> {
    let mut rays = rays_for(mesh, seed);
    rays.extend(interval_rays(mesh, &mut Rng::new(seed ^ 0x5eed), 30_000));
    rays
}

/// A smaller mix of the same kinds (25k) for the queries traced many times over.
fn few_rays(mesh: &Mesh, seed: u64) -> Vec<Ray> {
    let mut rng = Rng::new(seed);
    let bounds = mesh.bounds().expect("finite vertices");
    let mut rays = fixtures::random_rays(8_000, &mut rng, bounds);
    rays.extend(fixtures::incoherent_rays(4_000, &mut rng, bounds));
    rays.extend(fixtures::adversarial_rays(mesh, &mut rng, 8_000));
    rays.extend(interval_rays(mesh, &mut rng, 5_000));
    rays
}

/// What the stage's decisions give on the CPU over a driver with an exact box test:
/// closest hits, with far rays finished by the BVH as the GPU path does.
fn twin_trace(mesh: &Mesh, rays: &[Ray], options: &TraceOptions) -> Vec<Hit> {
    let boxes = DriverBoxes::new(&pack_mesh(mesh));
    let bvh = Bvh::build(mesh);
    let how = (options.cull, options.mode);
    rays.par_iter()
        .map(|ray| {
            let ray = sanitize_ray(ray);
            let mut search = ExactBoxSearch::new(&boxes.boxes);
            let mut closest = Closest::default();
            if traverse(&boxes, &mut search, &ray, how, &mut closest) {
                closest.0
            } else {
                bvh_traverse::trace_ray(&bvh, &ray, options.cull, options.mode)
            }
        })
        .collect()
}

#[test]
fn decisions_over_an_exact_driver_equal_brute_force() {
    for (seed, (name, mesh)) in meshes().into_iter().enumerate() {
        let rays = test_rays(&mesh, 300 + seed as u64);
        for options in all_options() {
            let expected = trace_with(CPU_BRUTE, &mesh, &rays, &options);
            let got = twin_trace(&mesh, &rays, &options);
            compare(&mesh, &rays, &expected, &got)
                .assert_identical(&format!("{name} {options:?}: exact driver"));
        }
    }
}

#[test]
fn any_hit_and_lists_over_an_exact_driver_equal_brute_force() {
    let (name, mesh) = meshes().remove(0);
    let rays = few_rays(&mesh, 7);
    let boxes = DriverBoxes::new(&pack_mesh(&mesh));
    let cpu = raypick::cpu::CpuBackend::new();
    let brute = raypick::cpu::CpuMesh::with_accel(&mesh, Accel::Brute);
    for options in all_options() {
        let how = (options.cull, options.mode);
        let occluded = cpu.occluded(&brute, &rays, &options);
        let lists = cpu.trace_all(&brute, &rays, 4, &options).unwrap();
        (0..rays.len()).into_par_iter().for_each(|i| {
            let ray = sanitize_ray(&rays[i]);
            let mut search = ExactBoxSearch::new(&boxes.boxes);
            let mut any = AnyHit::default();
            if !traverse(&boxes, &mut search, &ray, how, &mut any) {
                return; // far: the BVH's
            }
            assert_eq!(any.0, occluded[i], "{name} {options:?} ray {i}");
            let mut slots = [Hit::MISS; 4];
            let mut list = HitList::new(&mut slots, 0);
            traverse(&boxes, &mut search, &ray, how, &mut list);
            let truncated = list.state() & LIST_TRUNCATED != 0;
            assert_eq!(&slots[..], &lists.slots()[4 * i..4 * i + 4], "ray {i}");
            assert_eq!(truncated, lists.is_truncated(i), "ray {i}");
        });
    }
}

/// GPU ray queries against CPU brute force on the parity meshes, bit for bit.
fn gpu_parity(cull: Cull, mode: Mode) {
    let Some(gpu) = ray_query_gpu() else { return };
    let options = TraceOptions::default().with_cull(cull).with_mode(mode);
    for (seed, (name, mesh)) in meshes().into_iter().enumerate() {
        let rays = test_rays(&mesh, 100 + seed as u64);
        let expected = trace_with(CPU_BRUTE, &mesh, &rays, &options);
        let uploaded = gpu.upload_with(&mesh, Accel::RayQuery).expect("upload");
        assert_eq!(uploaded.accel(), Accel::RayQuery);
        let got = gpu.trace(&uploaded, &rays, &options).expect("trace");
        assert_contracts(&mesh, &rays, &got);
        compare(&mesh, &rays, &expected, &got)
            .assert_identical(&format!("{name} cull={cull:?} mode={mode:?} ray queries"));
    }
}

#[test]
fn gpu_parity_double_sided() {
    gpu_parity(Cull::None, Mode::Watertight);
}

#[test]
fn gpu_parity_cull_back() {
    gpu_parity(Cull::Back, Mode::Watertight);
}

#[test]
fn gpu_parity_cull_front() {
    gpu_parity(Cull::Front, Mode::Watertight);
}

#[test]
fn gpu_parity_fast_double_sided() {
    gpu_parity(Cull::None, Mode::Fast);
}

#[test]
fn gpu_parity_fast_cull_back() {
    gpu_parity(Cull::Back, Mode::Fast);
}

#[test]
fn gpu_parity_fast_cull_front() {
    gpu_parity(Cull::Front, Mode::Fast);
}

#[test]
fn any_hit_and_hit_lists_equal_the_cpu() {
    let Some(gpu) = ray_query_gpu() else { return };
    let cpu = raypick::cpu::CpuBackend::new();
    let mut rng = Rng::new(21);
    // Ties: every triangle twice, under two ids.
    let grid = fixtures::grid(12, 12, 2.0);
    let doubled = fixtures::with_degenerates(&fixtures::concat(&[grid.clone(), grid]), &mut rng, 8);
    for mesh in [meshes().remove(1).1, doubled] {
        let rays = few_rays(&mesh, 11);
        let uploaded = gpu.upload_with(&mesh, Accel::RayQuery).unwrap();
        let brute = raypick::cpu::CpuMesh::with_accel(&mesh, Accel::Brute);
        for options in all_options() {
            let occluded = gpu.occluded(&uploaded, &rays, &options).unwrap();
            assert_eq!(
                occluded,
                cpu.occluded(&brute, &rays, &options),
                "{options:?}"
            );
            for max_hits in [1, 3, 16] {
                let got = gpu.trace_all(&uploaded, &rays, max_hits, &options).unwrap();
                let want = cpu.trace_all(&brute, &rays, max_hits, &options).unwrap();
                assert_eq!(got, want, "{options:?} max_hits {max_hits}");
            }
        }
    }
}

#[test]
fn meshes_split_into_several_structures_and_batches_into_several_dispatches() {
    let Some(whole) = ray_query_gpu() else { return };
    let mesh = fixtures::soup(
        1_000,
        &mut Rng::new(3),
        (Vec3::splat(-1.0), Vec3::splat(1.0)),
    );
    let rays = few_rays(&mesh, 5);
    let split = GpuContext::with_options(GpuOptions {
        // 97 triangles per structure, and so 145 rays per dispatch.
        max_binding_bytes: Some(48 * 97),
        ..Default::default()
    })
    .expect("second context on the same adapter");
    let options = TraceOptions::default();
    let uploaded = split.upload_with(&mesh, Accel::RayQuery).unwrap();
    assert_eq!(uploaded.buffer_count(), 1_000usize.div_ceil(97));
    let got = split.trace(&uploaded, &rays, &options).unwrap();
    let one = whole.upload_with(&mesh, Accel::RayQuery).unwrap();
    assert_eq!(one.buffer_count(), 1);
    let expected = trace_with(CPU_BRUTE, &mesh, &rays, &options);
    assert_bits_equal(&got, &expected, "split mesh and batches");
    assert_bits_equal(
        &whole.trace(&one, &rays, &options).unwrap(),
        &expected,
        "whole",
    );
    let lists = split.trace_all(&uploaded, &rays, 3, &options).unwrap();
    assert_eq!(lists, whole.trace_all(&one, &rays, 3, &options).unwrap());
}

#[test]
fn rays_over_the_candidate_budget_are_finished_on_the_cpu() {
    if ray_query_gpu().is_none() {
        return;
    }
    let tight = GpuContext::with_options(GpuOptions {
        max_traversal_steps: Some(3),
        ..Default::default()
    })
    .unwrap();
    let mut rng = Rng::new(8);
    let mesh = fixtures::with_degenerates(&fixtures::grid(30, 30, 2.0), &mut rng, 20);
    let rays = few_rays(&mesh, 9);
    let uploaded = tight.upload_with(&mesh, Accel::RayQuery).unwrap();
    for options in all_options() {
        let expected = trace_with(CPU_BRUTE, &mesh, &rays, &options);
        let got = tight.trace(&uploaded, &rays, &options).unwrap();
        assert_bits_equal(
            &got,
            &expected,
            &format!("{options:?}, 3 candidates per ray"),
        );
        let occluded: Vec<bool> = expected.iter().map(Hit::is_hit).collect();
        assert_eq!(
            tight.occluded(&uploaded, &rays, &options).unwrap(),
            occluded
        );
    }
}

#[test]
fn empty_and_all_degenerate_meshes_miss() {
    let Some(gpu) = ray_query_gpu() else { return };
    let degenerate = Mesh::from_triangles(&[
        [Vec3::ZERO, Vec3::X, Vec3::X * 2.0],
        [Vec3::ONE, Vec3::ONE, Vec3::ONE],
        [Vec3::new(f32::NAN, 0.0, 0.0), Vec3::Y, Vec3::Z],
    ]);
    let empty = Mesh::from_triangles(&[]);
    let rays = fixtures::random_rays(500, &mut Rng::new(2), (Vec3::splat(-1.0), Vec3::splat(2.0)));
    for mesh in [empty, degenerate] {
        let uploaded = gpu.upload_with(&mesh, Accel::RayQuery).unwrap();
        assert_eq!(uploaded.triangle_count(), mesh.triangle_count());
        let options = TraceOptions::default();
        assert!(
            gpu.trace(&uploaded, &rays, &options)
                .unwrap()
                .iter()
                .all(|h| *h == Hit::MISS)
        );
        assert!(
            !gpu.occluded(&uploaded, &rays, &options)
                .unwrap()
                .contains(&true)
        );
        let lists = gpu.trace_all(&uploaded, &rays, 2, &options).unwrap();
        assert!((0..rays.len()).all(|i| lists.count(i) == 0));
        assert_eq!(
            gpu.trace(&uploaded, &[], &options).unwrap(),
            Vec::<Hit>::new()
        );
    }
}

#[test]
fn picker_meshes_refit_and_fall_back_to_their_bvh() {
    if ray_query_gpu().is_none() {
        return;
    }
    let picker = Picker::new(Backend::Gpu).unwrap();
    let mesh = fixtures::builtin_scene(3_000);
    let rays = few_rays(&mesh, 13);
    let options = TraceOptions::default().with_cull(Cull::Back);
    let mut uploaded = picker.upload_with(&mesh, Accel::RayQuery).unwrap();
    assert_eq!(uploaded.accel(), Accel::RayQuery);
    let got = picker.trace(&uploaded, &rays, &options).unwrap();
    assert_bits_equal(
        &got,
        &trace_with(CPU_BRUTE, &mesh, &rays, &options),
        "picker",
    );
    // The CPU copy a fallback traces: the BVH of the host triangles.
    let on_cpu = raypick::cpu::CpuBackend::new().trace(
        &uploaded.gpu().unwrap().to_cpu_mesh(),
        &rays,
        &options,
    );
    assert_bits_equal(&on_cpu, &got, "CPU copy");
    // Moving vertices: the driver builds the structures again.
    let moved = fixtures::waved(&mesh, 0.7);
    let refitted = picker.refit(&mut uploaded, &moved).unwrap();
    assert_eq!(refitted, raypick::Refitted::Rebuilt);
    assert_eq!(uploaded.accel(), Accel::RayQuery);
    let got = picker.trace(&uploaded, &rays, &options).unwrap();
    assert_bits_equal(
        &got,
        &trace_with(CPU_BRUTE, &moved, &rays, &options),
        "refitted",
    );
}

#[test]
fn the_pick_service_answers_ray_query_meshes() {
    if ray_query_gpu().is_none() {
        return;
    }
    let picker = Arc::new(Picker::new(Backend::Gpu).unwrap());
    let mesh = fixtures::builtin_scene(2_000);
    let uploaded = picker.upload_with(&mesh, Accel::RayQuery).unwrap();
    let mut service = raypick::service::PickService::new(picker.clone());
    let rays = few_rays(&mesh, 17);
    let picks: Vec<&[Ray]> = rays.chunks(4_200).collect();
    let options = TraceOptions::default();
    for rays in &picks {
        service.submit(&uploaded, rays, &options).unwrap();
    }
    let mut results = Vec::new();
    while results.len() < picks.len() {
        service.poll();
        results.extend(service.drain_results());
        std::thread::yield_now();
    }
    for (result, rays) in results.into_iter().zip(&picks) {
        let expected = trace_with(CPU_BRUTE, &mesh, rays, &options);
        assert_bits_equal(&result.hits.unwrap(), &expected, "pick service");
    }
}

#[test]
fn without_ray_queries_uploading_for_them_is_a_typed_error() {
    let mesh = fixtures::icosphere(1, 1.0, Vec3::ZERO);
    assert_eq!("ray-query".parse::<Accel>().unwrap(), Accel::RayQuery);
    assert_eq!(Accel::RayQuery.to_string(), "ray-query");
    // The CPU backend.
    let cpu = Picker::new(Backend::Cpu).unwrap();
    let err = cpu.upload_with(&mesh, Accel::RayQuery).unwrap_err();
    assert!(matches!(err, Error::NoRayQueries(_)), "{err}");
    assert!(err.to_string().contains("CPU"), "{err}");
    // A device opened without the feature (as a renderer opens its own).
    if let Some(r) = crate::support::renderer() {
        let shared =
            GpuContext::from_device(r.device.clone(), r.queue.clone(), &r.adapter).unwrap();
        assert!(!shared.has_ray_queries());
        let err = shared.upload_with(&mesh, Accel::RayQuery).unwrap_err();
        assert!(matches!(err, Error::NoRayQueries(_)), "{err}");
        let picker = Picker::from_gpu(shared);
        assert!(matches!(
            picker.upload_with(&mesh, Accel::RayQuery),
            Err(Error::NoRayQueries(_))
        ));
        // The portable structures still work there.
        picker.upload_with(&mesh, Accel::Bvh).unwrap();
    }
    // A mesh read from a renderer's buffers: not for ray queries.
    if let Some(gpu) = gpu() {
        let buffers = raypick_testkit::gpu::RendererMesh::new(gpu.device(), &mesh);
        let err = gpu
            .upload_buffers(&buffers.buffers(), Accel::RayQuery)
            .unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
    }
}

/// A mesh prepared without naming a structure gets ray queries only on a hardware
/// GPU that has them: the CPU, a device without them and a software adapter (whose
/// ray queries run slower than the BVH) keep the BVH.
#[test]
fn ray_queries_are_the_default_on_hardware_gpus_only() {
    let mesh = fixtures::icosphere(1, 1.0, Vec3::ZERO);
    let cpu = Picker::new(Backend::Cpu).unwrap();
    assert_eq!(cpu.default_accel(), Accel::Bvh);
    assert_eq!(cpu.upload(&mesh).unwrap().accel(), Accel::Bvh);
    let Some(gpu) = gpu() else { return };
    let expected = |gpu: &GpuContext| {
        let software = gpu.adapter().device_type == "Cpu";
        if gpu.has_ray_queries() && !software {
            Accel::RayQuery
        } else {
            Accel::Bvh
        }
    };
    assert_eq!(gpu.default_accel(), expected(gpu), "{:?}", gpu.adapter());
    assert_eq!(gpu.upload(&mesh).unwrap().accel(), expected(gpu));
    if gpu.has_ray_queries() && gpu.adapter().device_type == "Cpu" {
        let reason = gpu.default_accel_reason();
        assert!(reason.contains("software"), "{reason}");
    }
    let picker = Picker::new(Backend::Gpu).unwrap();
    let on = picker.gpu().expect("a GPU picker");
    assert_eq!(picker.default_accel(), expected(on));
    assert_eq!(picker.upload(&mesh).unwrap().accel(), expected(on));
}
