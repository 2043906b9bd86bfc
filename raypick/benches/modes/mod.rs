//! The `mode_cost` group: the price of the watertight test against the fast one,
//! measured side by side on the same rays — the CPU BVH on the 1M-triangle scene
//! (camera and incoherent rays, 2 threads), and brute force on a 10k-triangle scene
//! (CPU, 2 threads, and the GPU when there is one).

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Hit, Mode, Ray, TraceOptions};
use raypick_testkit::fixtures;

use crate::support::{self, RaySet, TRACE_THREADS};

const MODES: [(Mode, &str); 2] = [(Mode::Fast, "fast"), (Mode::Watertight, "watertight")];

/// Brute force: a ~10k-triangle scene × 16k camera rays.
const BRUTE_TRIANGLES: usize = 10_000;
const BRUTE_IMAGE: u32 = 128;

pub fn mode_cost(c: &mut Criterion) {
    for set in RaySet::ALL {
        let name = format!("mode_cost/cpu_bvh_1M_tris/{}", set.name());
        let mut group =
            support::long_group(c, &name, Duration::from_secs(1), Duration::from_secs(4));
        let (cpu, mesh) = (support::cpu(), support::cpu_bvh());
        let rays: &[Ray] = support::rays(set);
        group.throughput(Throughput::Elements(rays.len() as u64));
        let mut hits = vec![Hit::MISS; rays.len()];
        for (mode, label) in MODES {
            let options = TraceOptions::default().with_mode(mode);
            group.bench_function(
                BenchmarkId::new(label, format!("{TRACE_THREADS}_threads")),
                |b| {
                    b.iter(|| cpu.trace_into(mesh, rays, &options, &mut hits));
                    assert!(hits.iter().any(|h| h.is_hit()), "the rays see the scene");
                },
            );
        }
        group.finish();
    }

    let mesh = fixtures::builtin_scene(BRUTE_TRIANGLES);
    let rays = fixtures::camera_rays(mesh.bounds().expect("scene"), BRUTE_IMAGE, BRUTE_IMAGE);
    let name = format!("mode_cost/brute_{}_tris", mesh.triangle_count());
    support::note_load(&name);
    let mut group = c.benchmark_group(name);
    group.sample_size(10).throughput(Throughput::Elements(
        (rays.len() * mesh.triangle_count()) as u64,
    ));
    let cpu = CpuBackend::with_threads(TRACE_THREADS).expect("thread pool");
    let cpu_mesh = CpuMesh::with_accel(&mesh, Accel::Brute);
    let gpu =
        support::gpu().map(|gpu| (gpu, gpu.upload_with(&mesh, Accel::Brute).expect("upload")));
    let mut hits = vec![Hit::MISS; rays.len()];
    for (mode, label) in MODES {
        let options = TraceOptions::default().with_mode(mode);
        let reference = cpu.trace(&cpu_mesh, &rays, &options);
        group.bench_function(
            BenchmarkId::new(format!("cpu_{label}"), format!("{TRACE_THREADS}_threads")),
            |b| b.iter(|| cpu.trace_into(&cpu_mesh, &rays, &options, &mut hits)),
        );
        if let Some((gpu, gpu_mesh)) = &gpu {
            group.bench_function(
                BenchmarkId::new(format!("gpu_{label}"), support::adapter_label(gpu)),
                |b| b.iter(|| gpu.trace(gpu_mesh, &rays, &options).expect("GPU trace")),
            );
            let got = gpu.trace(gpu_mesh, &rays, &options).expect("GPU trace");
            assert!(got == reference, "GPU {label} equals the CPU");
        }
    }
    group.finish();
}
