//! `refit/1M_tris`: following vertex motion on the 1M-triangle scene (waved, same
//! triangles) by refitting instead of rebuilding:
//! * `rebuild`: `Bvh::build` of the moved mesh (rayon's global pool);
//! * `cpu_refit`: `Bvh::refit` (binary tree);
//! * `cpu_refit_wide`: `CpuMesh::refit` (refit, then collapse the CPU's wide layout);
//! * `gpu_refit_uploaded`: `GpuContext::refit` of an uploaded BVH (CPU refit and
//!   buffer writes, until the GPU is idle);
//! * `gpu_refit_gathered`: `GpuContext::refit_gathered` of a BVH over renderer
//!   buffers (gather and per-level refit dispatches, until the GPU is idle).

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use raypick::Mesh;
use raypick::bvh::{Bvh, Refitted};
use raypick::cpu::CpuMesh;
use raypick::gpu::GpuContext;
use raypick_testkit::fixtures;
use raypick_testkit::gpu::RendererMesh;

use crate::support::{self, TRACE_TRIANGLES, count_label};

/// Blocks until the GPU has finished everything submitted.
fn wait(gpu: &GpuContext) {
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("GPU poll");
}

/// The root box holds every finite vertex of `mesh`: the refit moved the boxes.
fn assert_covers(bvh: &Bvh, mesh: &Mesh) {
    let (lo, hi) = bvh.bounds().expect("non-empty tree");
    let (mlo, mhi) = mesh.bounds().expect("non-empty mesh");
    assert!(
        lo.cmple(mlo).all() && hi.cmpge(mhi).all(),
        "refitted root box"
    );
}

pub fn refit(c: &mut Criterion) {
    let name = format!("refit/{}_tris", count_label(TRACE_TRIANGLES));
    let mut group = support::long_group(c, &name, Duration::from_secs(1), Duration::from_secs(4));
    group.throughput(Throughput::Elements(TRACE_TRIANGLES as u64));
    // From one waved pose to another: a triangle degenerate in the first pose (a
    // repeated vertex) stays degenerate, so every refit is a refit.
    let start = std::sync::OnceLock::new();
    let start = || start.get_or_init(|| fixtures::waved(support::mesh(TRACE_TRIANGLES), 0.2));
    let moved = std::sync::OnceLock::new();
    let moved = || moved.get_or_init(|| fixtures::waved(support::mesh(TRACE_TRIANGLES), 0.5));

    group.bench_function(BenchmarkId::new("rebuild", "global_pool"), |b| {
        b.iter(|| Bvh::build(moved()));
        assert_covers(&Bvh::build(moved()), moved());
    });
    group.bench_function(BenchmarkId::new("cpu_refit", "global_pool"), |b| {
        let mut tree = Bvh::build(start());
        b.iter(|| tree.refit(moved()).expect("refit"));
        assert_covers(&tree, moved());
    });
    group.bench_function(BenchmarkId::new("cpu_refit_wide", "global_pool"), |b| {
        let mut prepared = CpuMesh::refittable(start());
        b.iter(|| {
            let how = prepared.refit(moved()).expect("refit");
            assert_eq!(how, Refitted::Refit);
        });
    });
    let Some(gpu) = support::gpu() else {
        println!("[gpu] no GPU adapter: GPU refits left out");
        group.finish();
        return;
    };
    let label = support::adapter_label(gpu);
    group.bench_function(BenchmarkId::new("gpu_refit_uploaded", &label), |b| {
        let mut uploaded = gpu.upload(start()).expect("upload");
        b.iter(|| {
            let how = gpu.refit(&mut uploaded, moved()).expect("refit");
            assert_eq!(how, Refitted::Refit);
            wait(gpu);
        });
    });
    group.bench_function(BenchmarkId::new("gpu_refit_gathered", &label), |b| {
        let (mesh, moved) = (start(), moved());
        let renderer_mesh = RendererMesh::new(gpu.device(), mesh);
        let buffers = renderer_mesh.buffers();
        let mut gathered = gpu
            .upload_buffers(&buffers, raypick::Accel::Bvh)
            .expect("gathered upload");
        gpu.queue().write_buffer(
            &renderer_mesh.vertices,
            0,
            bytemuck::cast_slice(moved.positions()),
        );
        b.iter(|| {
            gpu.refit_gathered(&mut gathered).expect("refit");
            wait(gpu);
        });
        let mut tree = Bvh::build(mesh);
        tree.refit(moved).expect("refit");
        assert!(
            gpu.read_nodes(&gathered).expect("read back") == tree.nodes(),
            "GPU refit equals the CPU refit"
        );
    });
    group.finish();
}
