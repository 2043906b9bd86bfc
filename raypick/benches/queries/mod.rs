//! The `queries` group: the closest hit against any hit (occlusion) and the four
//! nearest hits, on shadow rays of the built-in ~100k-triangle scene — from the
//! points a 256 × 256 camera image sees towards a light above the scene — with the
//! BVH on the CPU (2 threads) and on the GPU when there is one.

use std::sync::OnceLock;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use glam::Vec3;
use raypick::cpu::CpuMesh;
use raypick::gpu::GpuMesh;
use raypick::{Accel, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures;

use crate::support::{self, TRACE_THREADS};

/// Triangles of the scene (the size `raypick bench` uses).
const TRIANGLES: usize = 100_000;
/// Side of the camera image the shadow rays start from.
const IMAGE: u32 = 256;
/// Hits per ray of the all-hits case.
const MAX_HITS: usize = 4;
/// Shadow rays of the fixture (the camera rays that hit the scene); checked when
/// the fixture is built.
const SHADOW_RAYS: u64 = 23_110;

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
    let primary = fixtures::camera_rays(bounds, IMAGE, IMAGE);
    let hits = support::cpu().trace(&CpuMesh::new(mesh), &primary, &TraceOptions::default());
    primary
        .iter()
        .zip(&hits)
        .filter(|(_, h)| h.is_hit())
        .map(|(ray, hit)| Ray::with_interval(ray.at(hit.t), light - ray.at(hit.t), 1e-4, 1.0))
        .collect()
}

/// The scene, its shadow rays, the CPU BVH and which rays are in shadow (the
/// closest-hit answer), built on first use so that a filter selecting none of the
/// group's cases builds nothing.
struct Fixture {
    mesh: Mesh,
    rays: Vec<Ray>,
    cpu_mesh: CpuMesh,
    in_shadow: Vec<bool>,
}

fn fixture() -> &'static Fixture {
    static CELL: OnceLock<Fixture> = OnceLock::new();
    CELL.get_or_init(|| {
        let mesh = fixtures::builtin_scene(TRIANGLES);
        let rays = shadow_rays(&mesh);
        let cpu_mesh = CpuMesh::with_accel(&mesh, Accel::Bvh);
        let closest = support::cpu().trace(&cpu_mesh, &rays, &TraceOptions::default());
        let in_shadow: Vec<bool> = closest.iter().map(|h| h.is_hit()).collect();
        assert_eq!(rays.len() as u64, SHADOW_RAYS, "the throughput's ray count");
        println!(
            "[fixture] {} shadow rays, {} in shadow",
            rays.len(),
            in_shadow.iter().filter(|&&b| b).count()
        );
        Fixture {
            mesh,
            rays,
            cpu_mesh,
            in_shadow,
        }
    })
}

fn gpu_mesh() -> Option<&'static GpuMesh> {
    static CELL: OnceLock<Option<GpuMesh>> = OnceLock::new();
    CELL.get_or_init(|| {
        let gpu = support::gpu()?;
        Some(
            gpu.upload_with(&fixture().mesh, Accel::Bvh)
                .expect("upload"),
        )
    })
    .as_ref()
}

pub fn queries(c: &mut Criterion) {
    let options = TraceOptions::default();
    let name = format!("queries/shadow_{}_tris", support::count_label(TRIANGLES));
    let mut group = support::long_group(c, &name, Duration::from_secs(1), Duration::from_secs(3));
    let cpu = support::cpu();
    let threads = format!("cpu_{TRACE_THREADS}_threads");
    // Throughput is per ray; the count is known once the fixture exists, so it is
    // set from the (fixed-seed) scene size the group always uses.
    group.throughput(Throughput::Elements(SHADOW_RAYS));
    group.bench_function(BenchmarkId::new("closest", &threads), |b| {
        let fx = fixture();
        b.iter(|| cpu.trace(&fx.cpu_mesh, &fx.rays, &options))
    });
    group.bench_function(BenchmarkId::new("any", &threads), |b| {
        let fx = fixture();
        b.iter(|| {
            let occluded = cpu.occluded(&fx.cpu_mesh, &fx.rays, &options);
            assert!(
                occluded == fx.in_shadow,
                "any hit agrees with the closest hit"
            );
        })
    });
    group.bench_function(BenchmarkId::new(format!("all_{MAX_HITS}"), &threads), |b| {
        let fx = fixture();
        b.iter(|| {
            cpu.trace_all(&fx.cpu_mesh, &fx.rays, MAX_HITS, &options)
                .expect("lists")
        })
    });
    if let Some(gpu) = support::gpu() {
        let label = format!("gpu_{}", support::adapter_label(gpu));
        group.bench_function(BenchmarkId::new("closest", &label), |b| {
            let (fx, mesh) = (fixture(), gpu_mesh().expect("GPU"));
            b.iter(|| gpu.trace(mesh, &fx.rays, &options).expect("GPU trace"))
        });
        group.bench_function(BenchmarkId::new("any", &label), |b| {
            let (fx, mesh) = (fixture(), gpu_mesh().expect("GPU"));
            b.iter(|| {
                let occluded = gpu.occluded(mesh, &fx.rays, &options).expect("GPU trace");
                assert!(
                    occluded == fx.in_shadow,
                    "any hit agrees with the closest hit"
                );
            })
        });
        group.bench_function(BenchmarkId::new(format!("all_{MAX_HITS}"), &label), |b| {
            let (fx, mesh) = (fixture(), gpu_mesh().expect("GPU"));
            b.iter(|| {
                gpu.trace_all(mesh, &fx.rays, MAX_HITS, &options)
                    .expect("GPU trace")
            })
        });
    }
    group.finish();
}
