//! The `queries` group: the closest hit against any hit (occlusion) and the four
//! nearest hits, on shadow rays of the built-in ~100k-triangle scene — from the
//! points a 256 × 256 camera image sees towards a light above the scene — with the
//! BVH on the CPU (2 threads) and on the GPU when there is one.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use glam::Vec3;
use raypick::cpu::CpuMesh;
use raypick::{Accel, Ray, TraceOptions, scene};

use crate::support::{self, TRACE_THREADS};

/// Triangles of the scene (the size `raypick bench` uses).
const TRIANGLES: usize = 100_000;
/// Side of the camera image the shadow rays start from.
const IMAGE: u32 = 256;
/// Hits per ray of the all-hits case.
const MAX_HITS: usize = 4;

/// Shadow rays: from every point the camera sees (lifted off the surface by a
/// relative `tmin`) to a light above the scene (`tmax = 1`: up to the light).
fn shadow_rays(mesh: &raypick::Mesh) -> Vec<Ray> {
    let bounds = mesh.bounds().expect("scene");
    let (lo, hi) = bounds;
    let light = Vec3::new(
        0.3 * lo.x + 0.7 * hi.x,
        hi.y + (hi - lo).length(),
        0.5 * (lo.z + hi.z),
    );
    let cpu = support::cpu();
    let primary = scene::camera_rays(bounds, IMAGE, IMAGE);
    let hits = cpu.trace(&CpuMesh::new(mesh), &primary, &TraceOptions::default());
    primary
        .iter()
        .zip(&hits)
        .filter(|(_, h)| h.is_hit())
        .map(|(ray, hit)| Ray::with_interval(ray.at(hit.t), light - ray.at(hit.t), 1e-4, 1.0))
        .collect()
}

pub fn queries(c: &mut Criterion) {
    let mesh = scene::builtin_scene(TRIANGLES);
    let rays = shadow_rays(&mesh);
    let options = TraceOptions::default();
    let name = format!("queries/shadow_{}_tris", support::count_label(TRIANGLES));
    let mut group = support::long_group(c, &name, Duration::from_secs(1), Duration::from_secs(3));
    group.throughput(Throughput::Elements(rays.len() as u64));

    let cpu = support::cpu();
    let cpu_mesh = CpuMesh::with_accel(&mesh, Accel::Bvh);
    let closest = cpu.trace(&cpu_mesh, &rays, &options);
    let expected: Vec<bool> = closest.iter().map(|h| h.is_hit()).collect();
    let shadowed = expected.iter().filter(|&&b| b).count();
    println!("[queries] {} shadow rays, {shadowed} in shadow", rays.len());
    let threads = format!("cpu_{TRACE_THREADS}_threads");
    group.bench_function(BenchmarkId::new("closest", &threads), |b| {
        b.iter(|| cpu.trace(&cpu_mesh, &rays, &options))
    });
    group.bench_function(BenchmarkId::new("any", &threads), |b| {
        b.iter(|| {
            let occluded = cpu.occluded(&cpu_mesh, &rays, &options);
            assert!(occluded == expected, "any hit agrees with the closest hit");
        })
    });
    group.bench_function(BenchmarkId::new(format!("all_{MAX_HITS}"), &threads), |b| {
        b.iter(|| {
            cpu.trace_all(&cpu_mesh, &rays, MAX_HITS, &options)
                .expect("lists")
        })
    });

    if let Some(gpu) = support::gpu() {
        let gpu_mesh = gpu.upload_with(&mesh, Accel::Bvh).expect("upload");
        let label = support::adapter_label(gpu);
        group.bench_function(BenchmarkId::new("closest", format!("gpu_{label}")), |b| {
            b.iter(|| gpu.trace(&gpu_mesh, &rays, &options).expect("GPU trace"))
        });
        group.bench_function(BenchmarkId::new("any", format!("gpu_{label}")), |b| {
            b.iter(|| {
                let occluded = gpu.occluded(&gpu_mesh, &rays, &options).expect("GPU trace");
                assert!(occluded == expected, "any hit agrees with the closest hit");
            })
        });
        group.bench_function(
            BenchmarkId::new(format!("all_{MAX_HITS}"), format!("gpu_{label}")),
            |b| {
                b.iter(|| {
                    gpu.trace_all(&gpu_mesh, &rays, MAX_HITS, &options)
                        .expect("GPU trace")
                })
            },
        );
    }
    group.finish();
}
