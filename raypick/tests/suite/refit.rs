//! Refitting a BVH to moved vertices: the tree keeps its shape, its boxes follow
//! the triangles, and every trace answers exactly like a fresh build and like
//! brute force, on the CPU and the GPU.

use glam::Vec3;
use raypick::bvh::{Bvh, RefitError, Refitted};
use raypick::cpu::wide_bvh::WideBvh;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Backend, Error, Hit, Mesh, PickMesh, Picker, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

/// A deforming scene of about `triangles` triangles (shared vertices), with some
/// degenerate ones.
fn scene_mesh(triangles: usize) -> Mesh {
    let mut rng = Rng::new(7);
    fixtures::with_degenerates(&fixtures::builtin_scene(triangles), &mut rng, 60)
}

/// Rays from the camera and from random places, over the moved mesh's bounds.
fn rays_for(mesh: &Mesh) -> Vec<Ray> {
    let bounds = mesh.bounds().expect("non-empty");
    let mut rays = fixtures::camera_rays(bounds, 96, 64);
    rays.extend(fixtures::random_rays(2_000, &mut Rng::new(11), bounds));
    rays
}

fn cpu_trace(mesh: &CpuMesh, rays: &[Ray]) -> Vec<Hit> {
    CpuBackend::new().trace(mesh, rays, &TraceOptions::default())
}

/// `mesh` without the degenerate triangles that a wave can make hittable: the
/// degenerate kinds are repeated vertices and non-finite coordinates, which stay
/// degenerate under any motion that depends on the position only, and collinear
/// points, which the wave bends (and which have no leaf to come back to).
fn deformable(mesh: &Mesh) -> Mesh {
    use raypick::prepare::{is_hittable, pack_triangle};
    let keep: Vec<[u32; 3]> = mesh
        .indices()
        .iter()
        .zip(mesh.triangles())
        .filter(|(_, [a, b, c])| {
            is_hittable(&pack_triangle([*a, *b, *c], 0))
                || a == b
                || b == c
                || a == c
                || !(a.is_finite() && b.is_finite() && c.is_finite())
        })
        .map(|(idx, _)| *idx)
        .collect();
    Mesh::new(mesh.positions().to_vec(), keep).expect("same vertices")
}

#[test]
fn refit_of_the_unchanged_mesh_reproduces_the_build_bit_for_bit() {
    // Enough triangles for the Morton-ordered lower levels of the builder.
    let mesh = scene_mesh(80_000);
    let built = Bvh::build(&mesh);
    let mut refitted = built.clone();
    refitted.refit(&mesh).expect("same mesh");
    assert_eq!(refitted.triangles(), built.triangles());
    assert_eq!(
        bytemuck::cast_slice::<_, u8>(refitted.nodes()),
        bytemuck::cast_slice::<_, u8>(built.nodes()),
        "refit boxes differ from the builder's"
    );
}

#[test]
fn refitted_tree_answers_like_a_fresh_build_and_brute_force() {
    let mesh = deformable(&scene_mesh(20_000));
    let mut refittable = CpuMesh::refittable(&mesh);
    let mut tree = Bvh::build(&mesh);
    for phase in [0.7f32, 4.0] {
        let moved = fixtures::waved(&mesh, phase);
        tree.refit(&moved).expect("refit");
        tree.validate(&moved)
            .expect("a refitted tree is a valid tree of the moved mesh");
        refittable.refit(&moved).expect("refit");
        let rays = rays_for(&moved);
        let fresh = cpu_trace(&CpuMesh::with_accel(&moved, Accel::Bvh), &rays);
        let brute = cpu_trace(&CpuMesh::with_accel(&moved, Accel::Brute), &rays);
        let hit_count = fresh.iter().filter(|h| h.is_hit()).count();
        eprintln!("phase {phase}: {hit_count} of {} rays hit", rays.len());
        assert!(hit_count > rays.len() / 10);
        assert_eq!(fresh, brute, "fresh build vs brute force, phase {phase}");
        assert_eq!(
            cpu_trace(&refittable, &rays),
            fresh,
            "refit vs fresh build, phase {phase}"
        );
        let wide = CpuMesh::Bvh(WideBvh::from_bvh(&tree));
        assert_eq!(
            cpu_trace(&wide, &rays),
            fresh,
            "refitted binary tree, phase {phase}"
        );
    }
}

#[test]
fn a_refit_that_cannot_follow_fails_and_changes_nothing() {
    // Triangle 1 is a point at build time: it has no leaf.
    let positions = vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::splat(2.0)];
    let mesh = Mesh::new(positions, vec![[0, 1, 2], [3, 3, 3]]).unwrap();
    let mut tree = Bvh::build(&mesh);
    let before = tree.clone();
    let mut revived = mesh.positions().to_vec();
    revived.extend([Vec3::new(2.0, 3.0, 2.0), Vec3::new(3.0, 2.0, 2.0)]);
    let revived = Mesh::new(revived, vec![[0, 1, 2], [3, 4, 5]]).unwrap();
    assert_eq!(tree.refit(&revived), Err(RefitError::NoLeafFor(1)));
    assert_eq!(tree.nodes(), before.nodes());
    assert_eq!(tree.triangles(), before.triangles());

    let other = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]);
    assert!(matches!(
        tree.refit(&other),
        Err(RefitError::TriangleCount { mesh: 1, tree: 2 })
    ));
    let mut plain = WideBvh::from_bvh(&tree);
    assert_eq!(plain.refit(&mesh), Err(RefitError::NotRefittable));
    let picker = Picker::new(Backend::Cpu).unwrap();
    let mut prepared = picker.upload(&mesh).unwrap();
    assert!(matches!(
        picker.refit(&mut prepared, &mesh),
        Err(Error::Refit(RefitError::NotRefittable))
    ));

    // A prepared mesh builds again instead, and sees the revived triangle.
    let ray = Ray::new(Vec3::new(2.2, 2.3, 5.0), Vec3::NEG_Z);
    let expected = cpu_trace(&CpuMesh::with_accel(&revived, Accel::Brute), &[ray]);
    assert_eq!(expected[0].prim, 1);
    let mut prepared = picker.upload_refittable(&mesh).unwrap();
    assert_eq!(
        picker.refit(&mut prepared, &revived).unwrap(),
        Refitted::Rebuilt
    );
    assert_eq!(
        picker
            .trace(&prepared, &[ray], &TraceOptions::default())
            .unwrap(),
        expected
    );
    if let Some(gpu) = crate::support::gpu() {
        let mut uploaded = gpu.upload(&mesh).unwrap();
        assert_eq!(
            gpu.refit(&mut uploaded, &revived).unwrap(),
            Refitted::Rebuilt
        );
        assert_eq!(
            gpu.trace(&uploaded, &[ray], &TraceOptions::default())
                .unwrap(),
            expected
        );
        assert_eq!(gpu.refit(&mut uploaded, &mesh).unwrap(), Refitted::Refit);
    }
}

#[test]
fn a_triangle_that_collapses_stops_hitting_and_comes_back() {
    let mesh = fixtures::grid(4, 4, 2.0);
    let picker = Picker::new(Backend::Cpu).unwrap();
    let mut prepared = picker.upload_refittable(&mesh).unwrap();
    let ray = Ray::new(Vec3::new(-0.8, -0.9, 1.0), Vec3::NEG_Z);
    let first = picker
        .trace(&prepared, &[ray], &TraceOptions::default())
        .unwrap()[0];
    assert!(first.is_hit());
    // Collapse that triangle onto its first vertex.
    let [a, b, c] = mesh.indices()[first.prim as usize];
    let mut positions = mesh.positions().to_vec();
    positions[b as usize] = positions[a as usize];
    positions[c as usize] = positions[a as usize];
    let collapsed = Mesh::new(positions, mesh.indices().to_vec()).unwrap();
    picker.refit(&mut prepared, &collapsed).unwrap();
    let hit = picker
        .trace(&prepared, &[ray], &TraceOptions::default())
        .unwrap()[0];
    assert_ne!(hit.prim, first.prim);
    let brute = CpuMesh::with_accel(&collapsed, Accel::Brute);
    assert_eq!(hit, cpu_trace(&brute, &[ray])[0]);
    picker.refit(&mut prepared, &mesh).unwrap();
    let back = picker
        .trace(&prepared, &[ray], &TraceOptions::default())
        .unwrap()[0];
    assert_eq!(back, first);
}

#[test]
fn gpu_refit_of_uploaded_meshes_answers_like_a_fresh_build() {
    let Some(gpu) = crate::support::gpu() else {
        return;
    };
    let mesh = deformable(&fixtures::builtin_scene(20_000));
    for accel in [Accel::Bvh, Accel::Brute] {
        let mut uploaded = gpu.upload_with(&mesh, accel).unwrap();
        for phase in [0.7f32, 3.3] {
            let moved = fixtures::waved(&mesh, phase);
            gpu.refit(&mut uploaded, &moved).unwrap();
            let rays = rays_for(&moved);
            let fresh = cpu_trace(&CpuMesh::with_accel(&moved, Accel::Bvh), &rays);
            let hits = gpu
                .trace(&uploaded, &rays, &TraceOptions::default())
                .unwrap();
            assert_eq!(hits, fresh, "{accel:?}, phase {phase}");
        }
    }
}

#[test]
fn gpu_refit_of_renderer_buffers_matches_the_cpu_refit_bit_for_bit() {
    use raypick_testkit::gpu::RendererMesh;
    let Some(r) = crate::support::renderer() else {
        return;
    };
    let picker = Picker::from_device(r.device.clone(), r.queue.clone(), &r.adapter).unwrap();
    let gpu = picker.gpu().unwrap();
    let mesh = deformable(&scene_mesh(20_000));
    let renderer_mesh = RendererMesh::new(&r.device, &mesh);
    let buffers = renderer_mesh.buffers();
    let mut bvh = gpu.upload_buffers(&buffers, Accel::Bvh).unwrap();
    let mut brute = gpu.upload_buffers(&buffers, Accel::Brute).unwrap();
    let mut tree = Bvh::build(&mesh);
    assert_eq!(
        gpu.read_nodes(&bvh).unwrap(),
        tree.nodes(),
        "the same tree as a CPU build"
    );
    for phase in [0.7f32, 3.3] {
        let moved = fixtures::waved(&mesh, phase);
        r.queue.write_buffer(
            &renderer_mesh.vertices,
            0,
            bytemuck::cast_slice(moved.positions()),
        );
        gpu.refit_gathered(&mut bvh).unwrap();
        gpu.refit_gathered(&mut brute).unwrap();
        tree.refit(&moved).unwrap();
        assert_eq!(
            bytemuck::cast_slice::<_, u8>(&gpu.read_packed(&bvh).unwrap()),
            bytemuck::cast_slice::<_, u8>(tree.triangles()),
            "triangles gathered again in leaf order, phase {phase}"
        );
        let nodes = gpu.read_nodes(&bvh).unwrap();
        if let Some(k) = (0..nodes.len()).find(|&k| nodes[k] != tree.nodes()[k]) {
            panic!(
                "node {k} differs after the GPU refit (phase {phase}): {:?} vs {:?}",
                nodes[k],
                tree.nodes()[k]
            );
        }
        let rays = rays_for(&moved);
        let fresh = cpu_trace(&CpuMesh::with_accel(&moved, Accel::Bvh), &rays);
        for (mesh, what) in [(&bvh, "bvh"), (&brute, "brute force")] {
            let hits = gpu.trace(mesh, &rays, &TraceOptions::default()).unwrap();
            assert!(
                hits == fresh,
                "GPU {what} after refit vs fresh CPU build, phase {phase}"
            );
        }
    }
    let mut plain = gpu.upload(&mesh).unwrap();
    assert!(
        gpu.refit_gathered(&mut plain).is_err(),
        "only gathered meshes refit on the GPU"
    );
    assert!(
        gpu.refit(&mut bvh, &mesh).is_err(),
        "gathered meshes refit from their buffers"
    );
}

#[test]
fn rays_finished_on_the_cpu_after_a_gpu_refit_see_the_moved_vertices() {
    use raypick::gpu::{GpuContext, GpuOptions};
    use raypick::service::PickService;
    use raypick_testkit::gpu::RendererMesh;
    if crate::support::gpu().is_none() {
        return;
    }
    // Two traversal steps: every ray that reaches a leaf is finished on the CPU.
    let gpu = GpuContext::with_options(GpuOptions {
        max_traversal_steps: Some(2),
        ..Default::default()
    })
    .unwrap();
    let mesh = deformable(&fixtures::builtin_scene(2_000));
    let renderer_mesh = RendererMesh::new(gpu.device(), &mesh);
    let buffers = renderer_mesh.buffers();
    let mut gathered = gpu.upload_buffers(&buffers, Accel::Bvh).unwrap();
    let moved = fixtures::waved(&mesh, 1.9);
    gpu.queue().write_buffer(
        &renderer_mesh.vertices,
        0,
        bytemuck::cast_slice(moved.positions()),
    );
    gpu.refit_gathered(&mut gathered).unwrap();
    let rays = rays_for(&moved);
    let fresh = cpu_trace(&CpuMesh::with_accel(&moved, Accel::Bvh), &rays);
    let hits = gpu
        .trace(&gathered, &rays, &TraceOptions::default())
        .unwrap();
    assert!(hits == fresh, "blocking trace after a GPU refit");

    let picker = std::sync::Arc::new(Picker::from_gpu(gpu));
    let mesh = PickMesh::from_gpu(gathered, glam::DVec3::ZERO);
    let mut service = PickService::new(picker);
    let ticket = service
        .submit(&mesh, &rays[..64], &TraceOptions::default())
        .unwrap();
    let result = loop {
        service.poll();
        if let Some(result) = service.next_result() {
            break result;
        }
        std::thread::yield_now();
    };
    assert_eq!(result.ticket, ticket);
    assert!(
        result.hits.unwrap() == fresh[..64],
        "pick service after a GPU refit"
    );
}
