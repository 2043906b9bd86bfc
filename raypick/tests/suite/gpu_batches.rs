//! Batches larger than one dispatch or one storage binding are split transparently,
//! and the answers do not change.

use crate::support::{CPU_BRUTE, CPU_BVH, GPU_BRUTE, GPU_BVH, gpu, trace};
use glam::Vec3;
use raypick::gpu::{GpuContext, GpuOptions};
use raypick::{Accel, Cull, Hit, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};
use raypick_testkit::parity::assert_bits_equal;

/// A triangle soup in the box ±1 and `random` random rays followed by
/// `adversarial` adversarial ones, from one seed.
fn soup_and_rays(
    seed: u64,
    triangles: usize,
    random: usize,
    adversarial: usize,
) -> (Mesh, Vec<Ray>) {
    let mut rng = Rng::new(seed);
    let mesh = fixtures::soup(triangles, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0)));
    let mut rays = fixtures::random_rays(random, &mut rng, mesh.bounds().unwrap());
    rays.extend(fixtures::adversarial_rays(&mesh, &mut rng, adversarial));
    (mesh, rays)
}

#[test]
fn split_meshes_and_batches_give_the_same_hits() {
    let Some(whole) = gpu() else { return };
    let (mesh, rays) = soup_and_rays(3, 1_000, 9_000, 3_000);
    let split = GpuContext::with_options(GpuOptions {
        // 97 triangles per buffer (11 buffers), and so 145 rays per dispatch.
        max_binding_bytes: Some(48 * 97),
        ..Default::default()
    })
    .expect("second context on the same adapter");
    assert_eq!(split.max_rays_per_dispatch(), 48 * 97 / 32);
    for cull in [Cull::None, Cull::Back] {
        let options = TraceOptions::default().with_cull(cull);
        let uploaded = split.upload_with(&mesh, Accel::Brute).unwrap();
        assert_eq!(uploaded.buffer_count(), 11);
        let got = split.trace(&uploaded, &rays, &options).unwrap();
        let expected = whole
            .trace(
                &whole.upload_with(&mesh, Accel::Brute).unwrap(),
                &rays,
                &options,
            )
            .unwrap();
        assert_eq!(
            got, expected,
            "splitting changed the answer (cull {cull:?})"
        );
    }
}

#[test]
fn ten_million_rays_in_one_call() {
    if gpu().is_none() {
        return;
    }
    let mesh = fixtures::grid(4, 4, 2.0);
    let rays = fixtures::camera_rays(mesh.bounds().unwrap(), 4_000, 2_500);
    assert_eq!(rays.len(), 10_000_000);
    let gpu_hits = trace(GPU_BRUTE, &mesh, &rays, Cull::None);
    let cpu_hits = trace(CPU_BRUTE, &mesh, &rays, Cull::None);
    assert_eq!(gpu_hits.len(), rays.len());
    let hits = gpu_hits.iter().filter(|h| h.is_hit()).count();
    assert!(hits > rays.len() / 10, "{hits} hits");
    assert_bits_equal(&gpu_hits, &cpu_hits, "10M rays, GPU vs CPU brute force");
}

#[test]
fn async_trace_equals_blocking_trace() {
    let Some(gpu) = gpu() else { return };
    let mesh = fixtures::icosphere(2, 1.0, Vec3::ZERO);
    let rays = fixtures::incoherent_rays(5_000, &mut Rng::new(9), mesh.bounds().unwrap());
    let uploaded = gpu.upload(&mesh).unwrap();
    let options = TraceOptions::default();
    let blocking = gpu.trace(&uploaded, &rays, &options).unwrap();
    let asynchronous = pollster::block_on(gpu.trace_async(&uploaded, &rays, &options)).unwrap();
    assert_eq!(blocking, asynchronous);
}

#[test]
fn meshes_do_not_cross_contexts() {
    let Some(first) = gpu() else { return };
    let second = GpuContext::new().unwrap();
    let mesh = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]);
    let uploaded = first.upload(&mesh).unwrap();
    let err = second
        .trace(&uploaded, &[], &TraceOptions::default())
        .unwrap_err();
    assert!(matches!(err, raypick::Error::WrongBackend), "{err}");
    assert_eq!(
        first
            .trace(&uploaded, &[], &TraceOptions::default())
            .unwrap(),
        Vec::<Hit>::new()
    );
}

/// Threads that each open their own context, trace and drop it, all at once, get
/// the CPU's hits.
#[test]
fn contexts_opened_on_many_threads_at_once_trace_correctly() {
    if gpu().is_none() {
        return;
    }
    let (mesh, rays) = soup_and_rays(11, 2_000, 2_000, 500);
    let want = trace(CPU_BVH, &mesh, &rays, Cull::None);
    let barrier = std::sync::Barrier::new(12);
    std::thread::scope(|scope| {
        for i in 0..12 {
            let (mesh, rays, want, barrier) = (&mesh, &rays, &want, &barrier);
            scope.spawn(move || {
                barrier.wait();
                let own = GpuContext::new().expect("a context on every thread");
                let accel = if i % 2 == 0 { Accel::Bvh } else { Accel::Brute };
                let uploaded = own.upload_with(mesh, accel).unwrap();
                let hits = own
                    .trace(&uploaded, rays, &TraceOptions::default())
                    .unwrap();
                assert_bits_equal(&hits, want, &format!("thread {i}, {accel:?}"));
            });
        }
    });
}

/// Some drivers stop a shader loop after 65,535 iterations; meshes past that must still
/// be tested against every triangle (the highest ids included).
#[test]
fn meshes_beyond_65536_triangles_are_traced_completely() {
    if gpu().is_none() {
        return;
    }
    let mesh = fixtures::grid(190, 190, 4.0); // 72,200 triangles
    assert!(mesh.triangle_count() > 70_000);
    let rays = fixtures::camera_rays(mesh.bounds().unwrap(), 48, 40);
    let gpu_hits = trace(GPU_BRUTE, &mesh, &rays, Cull::None);
    let cpu_hits = trace(CPU_BRUTE, &mesh, &rays, Cull::None);
    let top = cpu_hits
        .iter()
        .filter(|h| h.is_hit())
        .map(|h| h.prim)
        .max()
        .unwrap();
    assert!(top > 70_000, "rays reach the last triangles (max id {top})");
    let differ = gpu_hits
        .iter()
        .zip(&cpu_hits)
        .filter(|(g, c)| g != c)
        .count();
    assert_eq!(
        differ,
        0,
        "{differ} of {} rays differ from the CPU",
        rays.len()
    );
}

/// Few rays against many triangles: each dispatch's triangles are split across rows
/// of workgroups and the rows merged. Every triangle appears twice (ids `i` and
/// `i + 6000`), so ties cross rows: the lower id must win, as on the CPU.
#[test]
fn few_rays_split_across_rows_keep_the_cpus_hits_and_ties() {
    if gpu().is_none() {
        return;
    }
    let (soup, rays) = soup_and_rays(12, 6_000, 200, 100);
    let mesh = fixtures::concat(&[soup.clone(), soup]);
    let contexts = [
        // One dispatch, split into rows, then the merge: two timed passes.
        (GpuOptions::default(), 2),
        // Three triangle buffers of 4,000, each split into four rows of 1,000 (the
        // dispatch limit) and merged, each merge on top of the hits before it.
        (
            GpuOptions {
                max_triangles_per_dispatch: Some(1_000),
                max_binding_bytes: Some(48 * 4_000),
                ..Default::default()
            },
            6,
        ),
    ];
    for (options, passes) in contexts {
        let limited = options.max_triangles_per_dispatch.is_some();
        let gpu = GpuContext::with_options(GpuOptions {
            timing: true,
            ..options
        })
        .unwrap();
        let uploaded = gpu.upload_with(&mesh, Accel::Brute).unwrap();
        for cull in [Cull::None, Cull::Back] {
            for mode in [raypick::Mode::Watertight, raypick::Mode::Fast] {
                let options = TraceOptions::default().with_cull(cull).with_mode(mode);
                let want = crate::support::trace_with(CPU_BRUTE, &mesh, &rays, &options);
                assert!(want.iter().filter(|h| h.is_hit()).count() > 50);
                let context = format!("limited {limited}, {cull:?} {mode:?}");
                gpu.take_times();
                let got = gpu.trace(&uploaded, &rays, &options).unwrap();
                assert_bits_equal(&got, &want, &context);
                let times = gpu.take_times().expect("timing on");
                assert_eq!(times.passes + times.untimed_passes, passes, "{context}");
                let occluded = gpu.occluded(&uploaded, &rays, &options).unwrap();
                let hit: Vec<bool> = want.iter().map(Hit::is_hit).collect();
                assert_eq!(occluded, hit, "{context}");
            }
        }
    }
}

#[test]
fn small_triangle_ranges_per_dispatch_give_the_same_hits() {
    let Some(whole) = gpu() else { return };
    let split = GpuContext::with_options(GpuOptions {
        max_triangles_per_dispatch: Some(100),
        ..Default::default()
    })
    .unwrap();
    let (mesh, rays) = soup_and_rays(4, 1_050, 0, 5_000);
    let options = TraceOptions::default();
    let got = split
        .trace(
            &split.upload_with(&mesh, Accel::Brute).unwrap(),
            &rays,
            &options,
        )
        .unwrap();
    let expected = whole
        .trace(
            &whole.upload_with(&mesh, Accel::Brute).unwrap(),
            &rays,
            &options,
        )
        .unwrap();
    assert_eq!(got, expected);
}

#[test]
fn a_bvh_split_across_bindings_gives_the_same_hits() {
    let Some(whole) = gpu() else { return };
    let (mesh, rays) = soup_and_rays(8, 3_000, 6_000, 4_000);
    let split = GpuContext::with_options(GpuOptions {
        max_binding_bytes: Some(64 * 200), // 200 nodes or 266 triangles per chunk
        ..Default::default()
    })
    .unwrap();
    let options = TraceOptions::default();
    let uploaded = split.upload(&mesh).unwrap();
    assert!(
        uploaded.buffer_count() > 8,
        "{} chunks",
        uploaded.buffer_count()
    );
    let got = split.trace(&uploaded, &rays, &options).unwrap();
    let expected = trace(CPU_BRUTE, &mesh, &rays, Cull::None);
    let differ: Vec<_> = (0..rays.len())
        .filter(|&i| got[i] != expected[i])
        .map(|i| (i, rays[i], got[i], expected[i]))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} rays differ from brute force: {differ:?}",
        differ.len(),
        rays.len()
    );
    let unsplit = whole
        .trace(&whole.upload(&mesh).unwrap(), &rays, &options)
        .unwrap();
    assert_eq!(unsplit, got);
}

/// Rays that run out of GPU loop steps are completed on the CPU, with the same answer.
#[test]
fn rays_out_of_traversal_steps_are_finished_on_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let short = GpuContext::with_options(GpuOptions {
        max_traversal_steps: Some(3),
        ..Default::default()
    })
    .unwrap();
    let mesh = fixtures::icosphere(3, 1.0, Vec3::ZERO);
    let rays = fixtures::incoherent_rays(4_000, &mut Rng::new(2), mesh.bounds().unwrap());
    let got = short
        .trace(
            &short.upload(&mesh).unwrap(),
            &rays,
            &TraceOptions::default(),
        )
        .unwrap();
    assert_eq!(got, trace(CPU_BVH, &mesh, &rays, Cull::None));
    assert_eq!(got, trace(GPU_BVH, &mesh, &rays, Cull::None));
}

#[test]
fn timing_counts_every_pass_and_resets_when_taken() {
    let Some(plain) = gpu() else { return };
    assert!(plain.take_times().is_none(), "timing is off by default");
    assert!(!plain.has_kernel_timing());
    let (mesh, rays) = soup_and_rays(5, 1_000, 900, 100);
    let timed = GpuContext::with_options(GpuOptions {
        timing: true,
        // 11 triangle buffers, 145 rays per dispatch: 7 batches of 11 passes.
        max_binding_bytes: Some(48 * 97),
        ..Default::default()
    })
    .expect("second context on the same adapter");
    eprintln!(
        "kernel timing on {}: {}",
        timed.adapter().name,
        timed.has_kernel_timing()
    );
    let adapter = timed.adapter();
    if adapter.backend == "Vulkan" && adapter.name.starts_with("llvmpipe") {
        assert!(timed.has_kernel_timing(), "lavapipe has timestamp queries");
    }
    let options = TraceOptions::default();
    let uploaded = timed.upload_with(&mesh, Accel::Brute).unwrap();
    let fresh = timed.take_times().expect("timing on");
    assert_eq!((fresh.passes, fresh.untimed_passes), (0, 0));
    let hits = timed.trace(&uploaded, &rays, &options).unwrap();
    assert_bits_equal(&hits, &trace(CPU_BRUTE, &mesh, &rays, Cull::None), "timed");
    let times = timed.take_times().expect("timing on");
    let batches = rays.len().div_ceil(timed.max_rays_per_dispatch()) as u64;
    assert_eq!(batches, 7);
    assert!(times.submit_ms > 0.0 && times.wait_ms > 0.0, "{times:?}");
    if timed.has_kernel_timing() {
        assert_eq!(times.passes, batches * 11, "{times:?}");
        assert_eq!(times.untimed_passes, 0);
        let kernel = times.kernel_ms.expect("kernel time");
        assert!(kernel > 0.0 && kernel.is_finite(), "{times:?}");
    } else {
        assert_eq!((times.kernel_ms, times.passes), (None, 0), "{times:?}");
    }
    // Taken: counting starts again.
    let again = timed.take_times().expect("timing on");
    assert_eq!(again.passes, 0);
    assert_eq!(again.submit_ms, 0.0);
    assert_eq!(again.kernel_ms.is_some(), timed.has_kernel_timing());
}
