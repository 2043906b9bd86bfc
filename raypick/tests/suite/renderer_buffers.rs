//! Meshes read from a renderer's own vertex and index buffers: the GPU gather and
//! its CPU mirror pack exactly what `prepare::pack_triangle` packs (degenerate
//! triangles included, decided exactly), for any stride, offset, index width and
//! base vertex; out-of-range indices give degenerate triangles; traces on the
//! gathered triangles equal CPU traces of the same mesh.

use glam::Vec3;
use raypick::cpu::gather::cross_is_zero;
use raypick::gather::{IndexFormat, MeshLayout, mesh_from_slices, pack_slices};
use raypick::gpu::MeshBuffers;
use raypick::prepare::{pack_mesh, pack_triangle};
use raypick::types::PackedTriangle;
use raypick::{Accel, Error, Mesh, Picker, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};
use wgpu::util::DeviceExt;

/// A mesh written into byte buffers the way a renderer might lay it out.
struct Encoded {
    layout: MeshLayout,
    vertices: Vec<u8>,
    indices: Vec<u8>,
}

/// Encodes `mesh` with `stride` bytes per vertex (position at byte `position_at`
/// of each vertex, after `lead` bytes of other data), `format` indices after
/// `index_lead` indices of padding, and `base_vertex`: a positive one puts that many
/// filler vertices first, a negative one is subtracted from the stored indices.
fn encode(
    mesh: &Mesh,
    stride: u64,
    position_at: u64,
    lead: u64,
    format: IndexFormat,
    index_lead: u64,
    base_vertex: i32,
) -> Encoded {
    let filler = base_vertex.max(0) as u64;
    let slots = filler + mesh.positions().len() as u64;
    let mut vertices = vec![0xA5u8; (lead + stride * slots) as usize];
    for (i, p) in mesh.positions().iter().enumerate() {
        let at = (lead + (filler + i as u64) * stride + position_at) as usize;
        vertices[at..at + 12].copy_from_slice(bytemuck::bytes_of(p));
    }
    let shift = (-base_vertex).max(0) as u64;
    let mut indices = vec![0x5Au8; (index_lead * format.size()) as usize];
    for &i in mesh.indices().iter().flatten() {
        let stored = i as u64 + shift;
        match format {
            IndexFormat::U16 => indices.extend((stored as u16).to_le_bytes()),
            IndexFormat::U32 => indices.extend((stored as u32).to_le_bytes()),
        }
    }
    while !indices.len().is_multiple_of(4) {
        indices.push(0);
    }
    Encoded {
        layout: MeshLayout {
            vertex_offset: lead + position_at,
            vertex_stride: stride,
            vertex_count: slots as u32,
            index_format: format,
            index_offset: index_lead * format.size(),
            index_count: mesh.indices().len() as u32 * 3,
            base_vertex,
        },
        vertices,
        indices,
    }
}

/// Fails with the first differing triangle (the whole arrays are too long to print).
fn assert_same(a: &[PackedTriangle], b: &[PackedTriangle], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: triangle counts");
    if let Some(k) = (0..a.len()).find(|&k| bits(&a[k..=k]) != bits(&b[k..=k])) {
        panic!("{what}: triangle {k} differs: {:?} vs {:?}", a[k], b[k]);
    }
}

/// Fails with the first differing hit.
fn assert_same_hits(a: &[raypick::Hit], b: &[raypick::Hit], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: hit counts");
    if let Some(k) = (0..a.len()).find(|&k| a[k] != b[k]) {
        panic!("{what}: ray {k}: {:?} vs {:?}", a[k], b[k]);
    }
}

/// Every layout the tests try: tight, interleaved, 16-bit with an odd index start,
/// positive and negative base vertices.
fn layouts(mesh: &Mesh) -> Vec<Encoded> {
    let small = mesh.positions().len() < 60_000;
    let mut all = vec![
        encode(mesh, 12, 0, 0, IndexFormat::U32, 0, 0),
        encode(mesh, 32, 12, 16, IndexFormat::U32, 3, 0),
        encode(mesh, 24, 0, 4, IndexFormat::U32, 1, -7),
    ];
    if small {
        all.push(encode(mesh, 16, 4, 0, IndexFormat::U16, 1, 0));
        all.push(encode(mesh, 20, 8, 8, IndexFormat::U16, 2, 5));
    }
    all
}

/// Bytes of packed triangles, so that any difference counts (NaN-free, but -0.0
/// and 0.0 would compare equal as floats).
fn bits(tris: &[PackedTriangle]) -> &[u8] {
    bytemuck::cast_slice(tris)
}

/// Triangles from a small set of awkward values: many coincident and collinear
/// vertices (exact degeneracies), values whose differences overflow, tiny and
/// huge magnitudes, and some non-finite coordinates.
fn awkward_mesh(n: usize, rng: &mut Rng) -> Mesh {
    let values = [
        0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -3.0, 1e20, -1e20, 1e-20, 3.0e38, -3.0e38, 0.1, 0.3,
        1.5, 1e-30, 7.0,
    ];
    let pick = |rng: &mut Rng| {
        if rng.chance(0.01) {
            [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][rng.below(3)]
        } else {
            values[rng.below(values.len())]
        }
    };
    let mut triangles = Vec::with_capacity(n);
    for _ in 0..n {
        let v0 = Vec3::new(pick(rng), pick(rng), pick(rng));
        let tri = match rng.below(4) {
            // Exactly collinear: v0 + d, v0 + 2d with power-of-two steps.
            0 => {
                let d = Vec3::new(pick(rng), pick(rng), pick(rng)) * 0.25;
                [v0, v0 + d, v0 + 2.0 * d]
            }
            // Parallel edges scaled by an awkward factor (exactly parallel or not,
            // depending on rounding).
            1 => {
                let d = Vec3::new(pick(rng), pick(rng), pick(rng));
                [v0, v0 + d, v0 + d * 3.0]
            }
            _ => [
                v0,
                Vec3::new(pick(rng), pick(rng), pick(rng)),
                Vec3::new(pick(rng), pick(rng), pick(rng)),
            ],
        };
        triangles.push(tri);
    }
    Mesh::from_triangles(&triangles)
}

#[test]
fn exact_cross_product_zero_test_agrees_with_f64() {
    let mut rng = Rng::new(1);
    let values = [
        0.0f32, -0.0, 1.0, 3.0, 0.1, 1e20, 1e-20, 3e38, 1e-38, 1e-45, 7.0, 0.3,
    ];
    let mut zeros = 0;
    for _ in 0..200_000 {
        let v = |rng: &mut Rng| {
            let base = values[rng.below(values.len())];
            let scale = [1.0, -1.0, 2.0, 0.5, 3.0][rng.below(5)];
            base * scale
        };
        let e1 = Vec3::new(v(&mut rng), v(&mut rng), v(&mut rng));
        let e2 = match rng.below(3) {
            0 => e1 * [2.0, -0.5, 3.0, 0.1][rng.below(4)],
            _ => Vec3::new(v(&mut rng), v(&mut rng), v(&mut rng)),
        };
        if !(e1.is_finite() && e2.is_finite()) {
            continue;
        }
        let f64_zero = e1.as_dvec3().cross(e2.as_dvec3()) == glam::DVec3::ZERO;
        let word = |v: Vec3| v.to_array().map(f32::to_bits);
        assert_eq!(
            cross_is_zero(word(e1), word(e2)),
            f64_zero,
            "{e1:?} × {e2:?}"
        );
        zeros += usize::from(f64_zero);
    }
    assert!(
        zeros > 10_000,
        "the test hits the zero case often ({zeros})"
    );
}

#[test]
fn cpu_gather_packs_like_prepare_for_every_layout() {
    let mut rng = Rng::new(2);
    let meshes = [
        fixtures::with_degenerates(&fixtures::builtin_scene(3_000), &mut rng, 60),
        awkward_mesh(5_000, &mut rng),
    ];
    for mesh in &meshes {
        let expected = pack_mesh(mesh);
        for e in layouts(mesh) {
            let packed = pack_slices(&e.layout, &e.vertices, &e.indices).unwrap();
            assert_same(&packed, &expected, &format!("{:?}", e.layout));
        }
    }
}

#[test]
fn out_of_range_indices_make_degenerate_triangles() {
    let mesh = fixtures::grid(3, 3, 2.0); // 16 vertices, 18 triangles
    let e = encode(&mesh, 12, 0, 0, IndexFormat::U32, 0, 0);
    let mut layout = e.layout;
    // Only vertices 0..10 exist for this draw; a base vertex pushes some out.
    layout.vertex_count = 10;
    let packed = pack_slices(&layout, &e.vertices, &e.indices).unwrap();
    for (k, (tri, idx)) in packed.iter().zip(mesh.indices()).enumerate() {
        if idx.iter().any(|&i| i >= 10) {
            assert_eq!(
                *tri,
                PackedTriangle {
                    id: k as u32,
                    ..Default::default()
                }
            );
        } else {
            assert_eq!(*tri, pack_triangle(mesh.triangle(k), k as u32));
        }
    }
    layout.base_vertex = -3;
    let shifted = pack_slices(&layout, &e.vertices, &e.indices).unwrap();
    for (k, idx) in mesh.indices().iter().enumerate() {
        if idx.iter().any(|i| !(3..13).contains(i)) {
            assert!(!raypick::prepare::is_hittable(&shifted[k]), "triangle {k}");
        }
    }
    // A layout outside its buffers is refused, not read.
    let mut too_many = e.layout;
    too_many.index_count += 3;
    assert!(pack_slices(&too_many, &e.vertices, &e.indices).is_err());
    let mut misaligned = e.layout;
    misaligned.vertex_stride = 14;
    assert!(pack_slices(&misaligned, &e.vertices, &e.indices).is_err());
}

/// The encoded buffers on the renderer's device, as a renderer would have them.
fn gpu_buffers(
    r: &crate::support::Renderer,
    e: &Encoded,
    usage: wgpu::BufferUsages,
) -> [wgpu::Buffer; 2] {
    [
        (&e.vertices, wgpu::BufferUsages::VERTEX),
        (&e.indices, wgpu::BufferUsages::INDEX),
    ]
    .map(|(bytes, kind)| {
        r.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("renderer buffer"),
                contents: bytes,
                usage: kind | usage,
            })
    })
}

#[test]
fn gpu_gather_equals_the_cpu_mirror_and_traces_alike() {
    let Some(r) = crate::support::renderer() else {
        return;
    };
    let picker = Picker::from_device(r.device.clone(), r.queue.clone(), &r.adapter).unwrap();
    let gpu = picker.gpu().unwrap();
    let mut rng = Rng::new(4);
    let meshes = [
        fixtures::with_degenerates(&fixtures::builtin_scene(3_000), &mut rng, 60),
        awkward_mesh(5_000, &mut rng),
    ];
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
    for mesh in &meshes {
        let cpu_mesh = raypick::cpu::CpuMesh::with_accel(mesh, Accel::Brute);
        let bounds = mesh.bounds().unwrap();
        let rays = fixtures::random_rays(1_000, &mut rng, bounds);
        let expected =
            raypick::cpu::CpuBackend::new().trace(&cpu_mesh, &rays, &TraceOptions::default());
        for e in layouts(mesh) {
            let [vertices, indices] = gpu_buffers(r, &e, usage);
            let buffers = MeshBuffers {
                vertices: &vertices,
                indices: &indices,
                layout: e.layout,
            };
            let brute = gpu.upload_buffers(&buffers, Accel::Brute).unwrap();
            let packed = gpu.read_packed(&brute).unwrap();
            let cpu = pack_slices(&e.layout, &e.vertices, &e.indices).unwrap();
            assert_same(&packed, &cpu, &format!("GPU gather, {:?}", e.layout));
            let bvh = gpu.upload_buffers(&buffers, Accel::Bvh).unwrap();
            let tree = raypick::bvh::Bvh::build(
                &mesh_from_slices(&e.layout, &e.vertices, &e.indices).unwrap(),
            );
            assert_same(
                &gpu.read_packed(&bvh).unwrap(),
                tree.triangles(),
                "leaf order",
            );
            for uploaded in [&brute, &bvh] {
                let hits = gpu
                    .trace(uploaded, &rays, &TraceOptions::default())
                    .unwrap();
                assert_same_hits(
                    &hits,
                    &expected,
                    &format!("{:?} {:?}", uploaded.accel(), e.layout),
                );
            }
        }
    }
}

#[test]
fn buffers_without_storage_usage_are_refused_with_a_clear_error() {
    let Some(r) = crate::support::renderer() else {
        return;
    };
    let picker = Picker::from_device(r.device.clone(), r.queue.clone(), &r.adapter).unwrap();
    let gpu = picker.gpu().unwrap();
    let mesh = fixtures::cube();
    let e = encode(&mesh, 12, 0, 0, IndexFormat::U32, 0, 0);
    let [vertices, indices] = gpu_buffers(r, &e, wgpu::BufferUsages::COPY_DST);
    let buffers = MeshBuffers {
        vertices: &vertices,
        indices: &indices,
        layout: e.layout,
    };
    let err = gpu.upload_buffers(&buffers, Accel::Brute).unwrap_err();
    assert!(matches!(err, Error::MissingStorageUsage("vertex")), "{err}");
    assert!(err.to_string().contains("STORAGE"));
    let [vertices, _] = gpu_buffers(r, &e, wgpu::BufferUsages::STORAGE);
    let buffers = MeshBuffers {
        vertices: &vertices,
        ..buffers
    };
    let err = gpu.upload_buffers(&buffers, Accel::Bvh).unwrap_err();
    assert!(matches!(err, Error::MissingStorageUsage("index")), "{err}");
}
