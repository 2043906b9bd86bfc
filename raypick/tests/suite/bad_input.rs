//! Bad input through the library's front door ([`Picker`]): every case is a typed
//! error or a documented miss, never a panic, and no output ever holds a NaN.
//!
//! The hit contract's own bad-input cases on each kernel are in `tests/contract.rs`;
//! here the same kinds of input go through the public API (f32 and f64 meshes and
//! rays, every backend and acceleration structure), together with the failures of
//! the device itself: no adapter, a lost device, a mesh past the memory budget.

use glam::{DVec3, Vec3};
use raypick::gpu::{AdapterKinds, GpuOptions};
use raypick::{
    Accel, Backend, Error, Hit, Mesh, PickMesh, Picker, PickerOptions, Ray, Ray64, TraceOptions,
};

/// Every picker to test: the CPU always, the GPU when there is one (or required).
fn pickers() -> Vec<Picker> {
    let mut all = vec![Picker::new(Backend::Cpu).expect("CPU picker")];
    if crate::support::gpu().is_some() {
        all.push(Picker::new(Backend::Gpu).expect("GPU picker"));
    }
    all
}

fn upload(picker: &Picker, mesh: &Mesh, accel: Accel) -> PickMesh {
    picker.upload_with(mesh, accel).expect("upload")
}

/// Asserts that no hit holds a NaN and that every miss is exactly the marker.
/// Options that let `Backend::Auto` open the test adapter even when it is a
/// software one (as on CI), to test its fallbacks.
fn any_adapter() -> PickerOptions {
    PickerOptions {
        gpu: GpuOptions {
            adapters: Some(AdapterKinds::Any),
            ..GpuOptions::default()
        },
        threads: None,
    }
}

fn assert_clean(hits: &[Hit]) {
    for hit in hits {
        assert!(
            !hit.t.is_nan() && !hit.u.is_nan() && !hit.v.is_nan(),
            "NaN in {hit:?}"
        );
        if !hit.is_hit() {
            assert_eq!(*hit, Hit::MISS);
        }
    }
}

/// Traces f64 rays on every picker and acceleration structure; each result is
/// checked with [`assert_clean`] and handed to `check`.
fn for_every_engine(mesh: &Mesh, rays: &[Ray64], check: impl Fn(&str, &[Hit])) {
    for picker in pickers() {
        for accel in [Accel::Brute, Accel::Bvh] {
            let uploaded = upload(&picker, mesh, accel);
            let hits = picker
                .trace(&uploaded, rays, &TraceOptions::default())
                .expect("trace");
            assert_eq!(hits.len(), rays.len());
            assert_clean(&hits);
            check(&format!("{} {accel:?}", picker.device_name()), &hits);
        }
    }
}

fn down64(x: f64, y: f64, z: f64) -> Ray64 {
    Ray64::new(DVec3::new(x, y, z + 2.0), DVec3::NEG_Z)
}

/// One real triangle (id 0) at `z = c.z` around `c`, in f64.
fn real_triangle(c: DVec3) -> [DVec3; 3] {
    [
        c + DVec3::new(-1.0, -1.0, 0.0),
        c + DVec3::new(1.0, -1.0, 0.0),
        c + DVec3::new(0.0, 1.0, 0.0),
    ]
}

fn soup64(triangles: &[[DVec3; 3]]) -> Mesh {
    let positions: Vec<DVec3> = triangles.iter().flatten().copied().collect();
    let indices = (0..triangles.len() as u32)
        .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
        .collect();
    Mesh::from_f64(&positions, indices).expect("valid mesh")
}

#[test]
fn nan_and_infinite_vertices_never_hit() {
    let c = DVec3::new(1e6, -2e6, 5e5);
    let nan = DVec3::new(f64::NAN, 0.0, 0.0);
    let inf = DVec3::new(0.0, f64::INFINITY, 0.0);
    let huge = DVec3::new(1e300, 0.0, 0.0); // finite in f64, infinite in f32
    let [a, b, _] = real_triangle(c);
    let mesh = soup64(&[
        real_triangle(c),
        [a, b, c + nan],
        [a, c + inf, b],
        [c + huge, a, b],
        [c + nan, c + nan, c + nan],
    ]);
    // The bounds (and so the origin) come from the finite vertices only.
    assert!(mesh.origin().is_finite());
    assert!(
        (mesh.origin() - c).abs().max_element() <= 2.0,
        "{}",
        mesh.origin()
    );
    let rays: Vec<Ray64> = [(0.0, 0.0), (0.5, -0.5), (-0.9, -0.9), (3.0, 3.0)]
        .iter()
        .map(|&(x, y)| down64(c.x + x, c.y + y, c.z))
        .collect();
    for_every_engine(&mesh, &rays, |engine, hits| {
        assert_eq!(hits[0].prim, 0, "{engine}");
        assert_eq!(hits[0].t, 2.0, "{engine}");
        assert!(
            hits.iter().all(|h| h.prim == 0 || *h == Hit::MISS),
            "{engine}"
        );
        assert_eq!(hits[3], Hit::MISS, "{engine}");
    });
}

#[test]
fn out_of_range_indices_are_typed_errors() {
    let positions = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
    let bad = vec![[0, 1, 2], [2, 1, 3]];
    let expect = |result: raypick::Result<Mesh>, what: &str| match result {
        Err(Error::IndexOutOfRange {
            triangle: 1,
            index: 3,
            vertices: 3,
        }) => {}
        other => panic!("{what}: expected IndexOutOfRange, got {other:?}"),
    };
    expect(Mesh::new(positions.clone(), bad.clone()), "Mesh::new");
    let positions64: Vec<DVec3> = positions.iter().map(|p| p.as_dvec3()).collect();
    expect(Mesh::from_f64(&positions64, bad.clone()), "Mesh::from_f64");
    expect(
        Mesh::from_flat_indices(positions.clone(), &[0, 1, 2, 2, 1, 3]),
        "Mesh::from_flat_indices",
    );
    expect(
        Mesh::with_origin(positions, bad, DVec3::splat(1e6)),
        "Mesh::with_origin",
    );
    // u32::MAX is out of range too (it is also the miss marker).
    assert!(matches!(
        Mesh::from_flat_indices(vec![Vec3::ZERO; 3], &[0, 1, u32::MAX]),
        Err(Error::IndexOutOfRange {
            index: u32::MAX,
            ..
        })
    ));
}

#[test]
fn short_index_buffers_are_typed_errors() {
    let positions = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
    for len in [1, 2, 4, 5, 7] {
        let indices: Vec<u32> = (0..len).map(|i| i % 3).collect();
        match Mesh::from_flat_indices(positions.clone(), &indices) {
            Err(e @ Error::IndexCount(n)) => {
                assert_eq!(n, len as usize);
                assert!(e.to_string().contains(&len.to_string()), "{e}");
            }
            other => panic!("{len} indices: expected IndexCount, got {other:?}"),
        }
    }
    let mesh = Mesh::from_flat_indices(positions, &[0, 1, 2, 2, 1, 0]).expect("6 indices");
    assert_eq!(mesh.triangle_count(), 2);
    assert!(matches!(
        Mesh::with_origin(vec![], vec![], DVec3::new(f64::NAN, 0.0, 0.0)),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn zero_area_triangles_never_hit() {
    let c = DVec3::new(-3e6, 7e6, 1e5);
    let p = |x, y| c + DVec3::new(x, y, 0.0);
    let mesh = soup64(&[
        [p(0.0, 0.0), p(1.0, 0.0), p(0.5, 0.0)], // collinear
        [p(0.0, 0.0), p(0.0, 0.0), p(0.0, 0.0)], // a point
        // A sliver thinner than f32 can hold next to the others: it collapses to a
        // line in the local frame, so it is degenerate there and never hits.
        [p(-1.0, 0.25), p(1.0, 0.25), p(0.0, 0.25 + 1e-12)],
        [
            p(-1.0, -1.0) + DVec3::Z,
            p(1.0, -1.0) + DVec3::Z,
            p(0.0, 1.0) + DVec3::Z,
        ], // the only real one, 1 above
    ]);
    let rays: Vec<Ray64> = [(0.5, 0.0), (0.0, 0.0), (0.0, 0.25), (0.2, 0.25)]
        .iter()
        .map(|&(x, y)| Ray64::new(p(x, y) - 2.0 * DVec3::Z, DVec3::Z))
        .collect();
    for_every_engine(&mesh, &rays, |engine, hits| {
        for hit in hits {
            assert_eq!(hit.prim, 3, "{engine}: {hit:?}");
            assert_eq!(hit.t, 3.0, "{engine}");
        }
    });
}

#[test]
fn empty_meshes_miss_every_ray() {
    let empties = [
        Mesh::default(),
        Mesh::from_flat_indices(vec![Vec3::ONE; 4], &[]).unwrap(),
        Mesh::from_f64(&[], vec![]).unwrap(),
        Mesh::from_f64(&[DVec3::splat(1e7)], vec![]).unwrap(),
    ];
    let rays = [down64(0.0, 0.0, 0.0), down64(1e7, 1e7, 1e7)];
    for mesh in &empties {
        assert_eq!(mesh.origin(), DVec3::ZERO, "no triangle, no origin");
        for_every_engine(mesh, &rays, |engine, hits| {
            assert_eq!(hits, [Hit::MISS; 2], "{engine}");
        });
    }
}

#[test]
fn empty_ray_batches_give_empty_results() {
    let mesh = soup64(&[real_triangle(DVec3::splat(1e6))]);
    for picker in pickers() {
        for accel in [Accel::Brute, Accel::Bvh] {
            let uploaded = upload(&picker, &mesh, accel);
            let options = TraceOptions::default();
            let no_rays: [Ray; 0] = [];
            assert!(
                picker
                    .trace(&uploaded, &no_rays, &options)
                    .unwrap()
                    .is_empty()
            );
            assert!(
                picker
                    .trace(&uploaded, &[] as &[raypick::Ray64], &options)
                    .unwrap()
                    .is_empty()
            );
            picker
                .trace_into(&uploaded, &no_rays, &options, &mut [])
                .expect("empty batch");
        }
    }
}

#[test]
fn rays_with_nan_infinite_or_zero_directions_miss() {
    let c = DVec3::new(2e6, 2e6, 2e6);
    let mesh = soup64(&[real_triangle(c)]);
    let o = c + DVec3::new(0.0, 0.0, 1.0);
    let rays = [
        Ray64::new(o, DVec3::ZERO),
        Ray64::new(o, DVec3::new(0.0, 0.0, -1e-60)), // zero once rounded to f32
        Ray64::new(o, DVec3::new(f64::NAN, 0.0, -1.0)),
        Ray64::new(o, DVec3::new(0.0, 0.0, f64::NEG_INFINITY)),
        Ray64::new(o, DVec3::new(0.0, 0.0, -1e300)), // infinite once rounded to f32
        Ray64::new(DVec3::new(f64::INFINITY, c.y, c.z), DVec3::NEG_Z),
        Ray64::new(DVec3::new(c.x, f64::NAN, c.z), DVec3::NEG_Z),
        Ray64::with_interval(o, DVec3::NEG_Z, f64::NAN, 10.0),
        Ray64::with_interval(o, DVec3::NEG_Z, 0.0, f64::NAN),
        Ray64::with_interval(o, DVec3::NEG_Z, 5.0, 1.0),
        Ray64::new(o, DVec3::NEG_Z), // the one valid ray
    ];
    for_every_engine(&mesh, &rays, |engine, hits| {
        let (last, invalid) = hits.split_last().unwrap();
        assert!(
            invalid.iter().all(|h| *h == Hit::MISS),
            "{engine}: {hits:?}"
        );
        assert_eq!((last.prim, last.t), (0, 1.0), "{engine}");
    });
    // The same through f32 rays, which are moved into the mesh's frame in f64.
    let f32_rays = [
        Ray::new(Vec3::splat(2e6), Vec3::ZERO),
        Ray::new(Vec3::splat(f32::NAN), Vec3::NEG_Z),
        Ray::new(Vec3::splat(2e6), Vec3::new(0.0, f32::INFINITY, 0.0)),
    ];
    for picker in pickers() {
        let uploaded = upload(&picker, &mesh, Accel::Bvh);
        let hits = picker
            .trace(&uploaded, &f32_rays, &TraceOptions::default())
            .unwrap();
        assert_eq!(hits, [Hit::MISS; 3]);
    }
}

#[test]
fn hit_slices_of_the_wrong_length_are_typed_errors() {
    let mesh = soup64(&[real_triangle(DVec3::ZERO)]);
    let rays = [Ray::new(Vec3::Z, Vec3::NEG_Z); 3];
    for picker in pickers() {
        let uploaded = upload(&picker, &mesh, Accel::Bvh);
        for slots in [0, 2, 4] {
            let mut hits = vec![Hit::MISS; slots];
            let err = picker
                .trace_into(&uploaded, &rays, &TraceOptions::default(), &mut hits)
                .unwrap_err();
            assert!(
                matches!(err, Error::OutputLength { rays: 3, hits } if hits == slots),
                "{err:?}"
            );
            assert!(err.to_string().contains("hit slice"), "{err}");
        }
    }
    if let Some(gpu) = crate::support::gpu() {
        let uploaded = gpu.upload(&mesh).unwrap();
        let err = gpu
            .trace_into(&uploaded, &rays, &TraceOptions::default(), &mut [Hit::MISS])
            .unwrap_err();
        assert!(
            matches!(err, Error::OutputLength { rays: 3, hits: 1 }),
            "{err:?}"
        );
    }
}

/// A mesh and rays that need several dispatches and bindings on a small budget.
fn big_scene() -> (Mesh, Vec<Ray>) {
    let mut rng = raypick_testkit::fixtures::Rng::new(5);
    let bounds = (Vec3::splat(-1.0), Vec3::ONE);
    let mesh = raypick_testkit::fixtures::soup(3000, &mut rng, bounds);
    let rays = raypick_testkit::fixtures::incoherent_rays(5000, &mut rng, bounds);
    (mesh, rays)
}

fn cpu_hits(mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
    let uploaded = upload(&cpu, mesh, Accel::Brute);
    cpu.trace(&uploaded, rays, &TraceOptions::default())
        .unwrap()
}

#[test]
fn meshes_past_the_gpu_memory_budget_are_typed_errors_or_cpu_fallbacks() {
    if crate::support::gpu().is_none() {
        return;
    }
    let (mesh, rays) = big_scene();
    let want = cpu_hits(&mesh, &rays);
    let tiny = || PickerOptions {
        gpu: GpuOptions {
            max_mesh_bytes: Some(4096),
            max_rays_per_dispatch: Some(1000),
            ..any_adapter().gpu
        },
        threads: None,
    };
    // Explicit GPU: the error, typed.
    let gpu = Picker::with_options(Backend::Gpu, tiny()).unwrap();
    for accel in [Accel::Brute, Accel::Bvh] {
        let err = gpu.upload_with(&mesh, accel).unwrap_err();
        assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
        assert!(err.to_string().contains("4096"), "{err}");
    }
    assert_eq!(gpu.backend(), Backend::Gpu);
    assert!(gpu.fallback_reason().is_none());
    // Auto: the CPU takes over, with the same hits, and says why.
    let auto = Picker::with_options(Backend::Auto, tiny()).unwrap();
    assert_eq!(auto.backend(), Backend::Gpu);
    // A small mesh still fits and is traced on the GPU, split into batches.
    let small = soup64(&[real_triangle(DVec3::ZERO)]);
    let small_gpu = upload(&auto, &small, Accel::Bvh);
    assert_eq!(small_gpu.backend(), Backend::Gpu);
    for accel in [Accel::Brute, Accel::Bvh] {
        let uploaded = upload(&auto, &mesh, accel);
        assert_eq!(uploaded.backend(), Backend::Cpu, "the mesh went to the CPU");
        let hits = auto
            .trace(&uploaded, &rays, &TraceOptions::default())
            .unwrap();
        assert_eq!(hits, want, "{accel:?}");
    }
    assert_eq!(auto.backend(), Backend::Cpu);
    assert!(
        auto.fallback_reason().unwrap().contains("out of memory"),
        "{:?}",
        auto.fallback_reason()
    );
    // The mesh uploaded before the fallback is traced from its host copy.
    let hits = auto
        .trace(
            &small_gpu,
            &[Ray::new(Vec3::Z, Vec3::NEG_Z)],
            &TraceOptions::default(),
        )
        .unwrap();
    assert_eq!((hits[0].prim, hits[0].t), (0, 1.0));
}

#[test]
fn auto_opens_hardware_adapters_only_and_gpu_any() {
    let Some(test_gpu) = crate::support::gpu() else {
        return;
    };
    let adapter = test_gpu.adapter();
    let gpu = Picker::new(Backend::Gpu).unwrap();
    assert_eq!(gpu.backend(), Backend::Gpu);
    assert_eq!(&gpu.gpu().unwrap().adapter().name, &adapter.name);
    let reason = gpu.gpu().unwrap().adapter_reason();
    assert!(reason.contains(&adapter.name), "{reason}");
    let auto = Picker::new(Backend::Auto).unwrap();
    let hardware_only = PickerOptions {
        gpu: GpuOptions {
            adapters: Some(AdapterKinds::Hardware),
            ..GpuOptions::default()
        },
        threads: None,
    };
    if adapter.device_type == "Cpu" {
        // A software adapter: Auto traces on the CPU and says why; asking the GPU
        // backend for hardware only is an error naming what was found.
        assert_eq!(auto.backend(), Backend::Cpu);
        let why = auto.fallback_reason().expect("a reason");
        assert!(why.contains("only software GPU adapters"), "{why}");
        assert!(why.contains(&adapter.name), "{why}");
        let err = Picker::with_options(Backend::Gpu, hardware_only).unwrap_err();
        assert!(matches!(err, Error::OnlySoftwareAdapters { .. }), "{err:?}");
        assert!(reason.contains("software"), "{reason}");
        // OpenGL is started only when no other API has an adapter to accept: the
        // GPU backend found the other APIs' adapters alone, Auto (accepting none of
        // them) looked at OpenGL's too.
        let listed = raypick::gpu::list_adapters();
        let primary = listed.iter().filter(|a| a.summary.backend != "Gl").count();
        let found = |n: usize| format!("first of the {n} adapter");
        if adapter.backend != "Gl" && primary < listed.len() {
            assert!(reason.contains(&found(primary)), "{reason}");
            let Error::OnlySoftwareAdapters { adapters } = err else {
                unreachable!()
            };
            assert_eq!(adapters.len(), listed.len(), "{adapters:?}");
        }
    } else {
        assert_eq!(auto.backend(), Backend::Gpu);
        assert_eq!(&auto.gpu().unwrap().adapter().name, &adapter.name);
        let hardware = Picker::with_options(Backend::Gpu, hardware_only).unwrap();
        assert_eq!(hardware.backend(), Backend::Gpu);
    }
    // Either way, Auto with any adapter allowed opens the test adapter.
    let any = Picker::with_options(Backend::Auto, any_adapter()).unwrap();
    assert_eq!(&any.gpu().unwrap().adapter().name, &adapter.name);
}

#[test]
fn no_adapter_falls_back_on_auto_and_is_an_error_on_gpu() {
    let none = || PickerOptions {
        gpu: GpuOptions {
            backends: Some(wgpu::Backends::empty()),
            ..GpuOptions::default()
        },
        threads: Some(1),
    };
    let err = Picker::with_options(Backend::Gpu, none()).unwrap_err();
    assert!(matches!(err, Error::NoAdapter(_)), "{err:?}");
    let auto = Picker::with_options(Backend::Auto, none()).unwrap();
    assert_eq!(auto.backend(), Backend::Cpu);
    assert!(auto.fallback_reason().unwrap().contains("no GPU adapter"));
    assert_eq!(auto.device_name(), "CPU (1 threads)");
    let (mesh, rays) = big_scene();
    let uploaded = upload(&auto, &mesh, Accel::Bvh);
    let hits = auto
        .trace(&uploaded, &rays, &TraceOptions::default())
        .unwrap();
    assert_eq!(hits, cpu_hits(&mesh, &rays));
}

#[test]
fn device_loss_falls_back_on_auto_and_is_an_error_on_gpu() {
    if crate::support::gpu().is_none() {
        return;
    }
    let (mesh, rays) = big_scene();
    let want = cpu_hits(&mesh, &rays);
    let options = TraceOptions::default();

    // Explicit GPU: DeviceLost, for traces and uploads, and no NaN left behind.
    let gpu = Picker::new(Backend::Gpu).unwrap();
    let uploaded = upload(&gpu, &mesh, Accel::Bvh);
    assert_eq!(gpu.trace(&uploaded, &rays, &options).unwrap(), want);
    gpu.gpu().unwrap().device().destroy();
    let mut hits = vec![
        Hit {
            t: f32::NAN,
            ..Hit::MISS
        };
        rays.len()
    ];
    let err = gpu
        .trace_into(&uploaded, &rays, &options, &mut hits)
        .unwrap_err();
    assert!(matches!(err, Error::DeviceLost(_)), "{err:?}");
    assert_clean(&hits);
    let err = gpu.upload(&mesh).unwrap_err();
    assert!(matches!(err, Error::DeviceLost(_)), "{err:?}");

    // Auto: the CPU takes over, tracing the meshes already uploaded from their host
    // copies, with the same hits.
    let auto = Picker::with_options(Backend::Auto, any_adapter()).unwrap();
    assert_eq!(auto.backend(), Backend::Gpu);
    let bvh = upload(&auto, &mesh, Accel::Bvh);
    let brute = upload(&auto, &mesh, Accel::Brute);
    auto.gpu().unwrap().device().destroy();
    for uploaded in [&bvh, &brute] {
        assert_eq!(auto.trace(uploaded, &rays, &options).unwrap(), want);
    }
    assert_eq!(auto.backend(), Backend::Cpu);
    assert!(auto.gpu().is_none());
    let reason = auto.fallback_reason().expect("a reason");
    assert!(reason.contains("lost"), "{reason}");
    // Later uploads go to the CPU.
    let later = upload(&auto, &mesh, Accel::Bvh);
    assert_eq!(later.backend(), Backend::Cpu);
    assert_eq!(auto.trace(&later, &rays, &options).unwrap(), want);
}

#[test]
fn device_loss_carries_instance_scenes_over_to_the_cpu_on_auto() {
    if crate::support::gpu().is_none() {
        return;
    }
    use glam::Mat4;
    use raypick::instances::{Instance, InstanceScene};
    use raypick_testkit::fixtures;
    let meshes = [fixtures::cube(), fixtures::icosphere(2, 1.0, Vec3::ZERO)];
    let instances = (0..6)
        .map(|i| {
            Instance::new(
                i % 2,
                Mat4::from_translation(Vec3::X * 3.0 * i as f32),
                i as u32,
            )
        })
        .collect();
    let scene = InstanceScene::from_meshes(&meshes, instances).expect("valid");
    let rays: Vec<Ray> = (0..64)
        .map(|i| Ray::new(Vec3::new(i as f32 * 0.25, 0.1, 5.0), Vec3::NEG_Z))
        .collect();
    let options = TraceOptions::default();
    let want = scene.trace(&rays, &options);
    assert!(want.iter().any(|h| h.is_hit()));

    let auto = Picker::with_options(Backend::Auto, any_adapter()).unwrap();
    let mut uploaded = auto.upload_instances(scene.clone()).unwrap();
    assert_eq!(uploaded.backend(), Backend::Gpu);
    assert_eq!(
        auto.trace_instances(&uploaded, &rays, &options).unwrap(),
        want
    );
    auto.gpu().unwrap().device().destroy();
    // The same answers from the host copy, and moves continue on the CPU.
    assert_eq!(
        auto.trace_instances(&uploaded, &rays, &options).unwrap(),
        want
    );
    assert_eq!(auto.backend(), Backend::Cpu);
    let moved = Mat4::from_translation(Vec3::Y * 50.0);
    auto.set_instance_transform(&mut uploaded, 0, moved)
        .unwrap();
    let mut expected = scene.clone();
    expected.set_transform(0, moved).unwrap();
    assert_eq!(
        auto.trace_instances(&uploaded, &rays, &options).unwrap(),
        expected.trace(&rays, &options)
    );
    // A new scene goes to the CPU.
    let later = auto.upload_instances(scene).unwrap();
    assert_eq!(later.backend(), Backend::Cpu);

    // Explicit GPU: the loss is an error.
    let gpu = Picker::new(Backend::Gpu).unwrap();
    let uploaded = gpu.upload_instances(expected).unwrap();
    gpu.gpu().unwrap().device().destroy();
    let err = gpu.trace_instances(&uploaded, &rays, &options).unwrap_err();
    assert!(matches!(err, Error::DeviceLost(_)), "{err:?}");
}

#[test]
fn a_lost_shared_device_gives_errors_not_panics() {
    if crate::support::gpu().is_none() {
        return;
    }
    // A renderer's device, shared with raypick: raypick leaves its handlers alone,
    // so it cannot tell loss from other failures, but it must still fail cleanly.
    let own = raypick::gpu::GpuContext::new().unwrap();
    let (device, queue) = (own.device().clone(), own.queue().clone());
    let shared =
        raypick::gpu::GpuContext::from_device(device, queue, &own.device().adapter_info()).unwrap();
    let (mesh, rays) = big_scene();
    let uploaded = shared.upload(&mesh).unwrap();
    shared.device().destroy();
    let mut hits = vec![Hit::MISS; rays.len()];
    assert!(
        shared
            .trace_into(&uploaded, &rays, &TraceOptions::default(), &mut hits)
            .is_err()
    );
    assert_clean(&hits);
    for accel in [Accel::Brute, Accel::Bvh] {
        assert!(shared.upload_with(&mesh, accel).is_err());
    }
}
