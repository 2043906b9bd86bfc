//! The brute-force group: a ~10k-triangle scene × 64k camera rays, CPU on 1 and 2
//! threads and the GPU; throughput in ray–triangle tests.

use criterion::{BenchmarkId, Criterion, Throughput};
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Hit, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures;

use crate::support;

/// Rays × triangles for the brute-force comparison: a ~10k-triangle scene × 64k camera rays.
fn brute_force_case() -> (Mesh, Vec<Ray>) {
    let mesh = fixtures::builtin_scene(10_000);
    let rays = fixtures::camera_rays(mesh.bounds().expect("non-empty scene"), 256, 256);
    (mesh, rays)
}

fn hit_count(hits: &[Hit]) -> usize {
    hits.iter().filter(|h| h.is_hit()).count()
}

pub fn brute_force(c: &mut Criterion) {
    let (mesh, rays) = brute_force_case();
    let tests = (rays.len() * mesh.triangle_count()) as u64;
    let options = TraceOptions::default();
    let name = format!(
        "brute_force/{}tris_x_{}rays",
        mesh.triangle_count(),
        rays.len()
    );
    support::note_load(&name);
    let mut group = c.benchmark_group(name);
    group
        .throughput(Throughput::Elements(tests))
        .sample_size(10);

    let cpu_mesh = CpuMesh::with_accel(&mesh, Accel::Brute);
    let reference = CpuBackend::new().trace(&cpu_mesh, &rays, &options);
    let seen = hit_count(&reference);
    assert!(
        seen > rays.len() / 10,
        "the camera sees the scene: {seen} hits"
    );
    for threads in [1, 2] {
        let cpu = CpuBackend::with_threads(threads).expect("thread pool");
        assert_eq!(cpu.trace(&cpu_mesh, &rays, &options), reference);
        let mut hits = vec![Hit::MISS; rays.len()];
        group.bench_function(BenchmarkId::new("cpu", format!("{threads}_threads")), |b| {
            b.iter(|| cpu.trace_into(&cpu_mesh, &rays, &options, &mut hits))
        });
    }
    match support::gpu() {
        Some(gpu) => {
            let gpu_mesh = gpu.upload_with(&mesh, Accel::Brute).expect("upload");
            let mut hits = gpu.trace(&gpu_mesh, &rays, &options).expect("GPU trace");
            let same = hits
                .iter()
                .zip(&reference)
                .filter(|(a, b)| a.prim == b.prim)
                .count();
            assert!(
                same * 10_000 >= rays.len() * 9_999,
                "GPU agrees with the CPU: {same}"
            );
            let name = gpu.adapter().name.clone();
            group.bench_function(BenchmarkId::new("gpu", name), |b| {
                b.iter(|| {
                    gpu.trace_into(&gpu_mesh, &rays, &options, &mut hits)
                        .expect("GPU trace")
                })
            });
        }
        None => println!("no GPU adapter: GPU brute-force case left out"),
    }
    group.finish();
}
