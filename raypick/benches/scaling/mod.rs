//! Scaling groups: brute force and the BVH on the CPU and the GPU across mesh sizes
//! (`fixtures::builtin_scene(n)`, n = 1k, 10k, 100k, 1M triangles), and the time to
//! prepare each (BVH build or triangle packing, plus the upload on the GPU).
//!
//! * `scale_build/{n}_tris/{cpu,gpu}_{bvh,brute}`: `Picker::upload_with` (the BVH
//!   build or triangle packing, plus the GPU upload); throughput in triangles.
//! * `scale_trace/{n}_tris/{cpu,gpu}_bvh`: [`BVH_IMAGE`]² camera rays;
//!   `scale_trace/{n}_tris/{cpu,gpu}_brute`: [`brute_rays`]`(n)` camera rays (a fixed
//!   budget of ray–triangle tests, so 1M triangles get only a few rays); throughput
//!   in rays. Every case checks its hits against the CPU brute force first.
//!
//! The CPU runs on [`TRACE_THREADS`] threads. Without a GPU adapter the GPU cases
//! are left out with a notice.

use std::sync::OnceLock;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use raypick::{Accel, Backend, Hit, Mesh, PickMesh, Picker, PickerOptions, Ray, TraceOptions};
use raypick_testkit::fixtures::RaySet;

use crate::support::{self, TRACE_THREADS, count_label};

/// Mesh sizes, in triangles.
pub const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// Side of the camera image the BVH cases trace (65,536 rays).
pub const BVH_IMAGE: usize = 256;
/// Ray–triangle tests one brute-force trace costs (about 0.1 s on lavapipe on an
/// idle 2-core machine).
const BRUTE_TESTS: usize = 1 << 23;

/// Rays of the brute-force cases on `n` triangles: [`BRUTE_TESTS`] / n rounded down
/// to a power of two, between 16 and 16,384.
pub fn brute_rays(n: usize) -> usize {
    let rays = (BRUTE_TESTS / n.max(1)).clamp(16, 16_384);
    1 << rays.ilog2()
}

/// The CPU picker (on [`TRACE_THREADS`] threads) and the GPU picker, if an adapter
/// opens (a notice is printed once otherwise).
fn pickers() -> &'static [Picker] {
    static CELL: OnceLock<Vec<Picker>> = OnceLock::new();
    CELL.get_or_init(|| {
        let options = PickerOptions {
            threads: Some(TRACE_THREADS),
            ..PickerOptions::default()
        };
        let cpu = Picker::with_options(Backend::Cpu, options).expect("CPU");
        let mut pickers = vec![cpu];
        match Picker::new(Backend::Gpu) {
            Ok(gpu) => {
                println!("[scale] GPU cases on {}", gpu.device_name());
                pickers.push(gpu);
            }
            Err(e) => println!("[scale] no GPU adapter, GPU cases left out: {e}"),
        }
        pickers
    })
}

/// `cpu_bvh`, `gpu_brute`, ...: a case name.
fn case(picker: &Picker, accel: Accel) -> String {
    format!("{}_{}", picker.backend(), accel)
}

/// Warm-up and measurement time of the size-sweep groups.
const SCALE_WARM_UP: Duration = Duration::from_millis(300);
const SCALE_MEASUREMENT: Duration = Duration::from_secs(2);

/// Preparation time of every backend and acceleration structure, per size.
pub fn build(c: &mut Criterion) {
    for n in SIZES {
        let name = format!("scale_build/{}_tris", count_label(n));
        let mut group = support::long_group(c, &name, SCALE_WARM_UP, SCALE_MEASUREMENT);
        group.throughput(Throughput::Elements(n as u64));
        for picker in pickers() {
            for accel in [Accel::Bvh, Accel::Brute] {
                group.bench_function(case(picker, accel), |b| {
                    let mesh = support::mesh(n);
                    b.iter(|| {
                        let prepared = picker.upload_with(mesh, accel).expect("prepare");
                        assert_eq!(prepared.triangle_count(), n);
                        prepared
                    })
                });
            }
        }
        group.finish();
    }
}

/// The rays of one size and the CPU brute-force hits of the brute-force rays.
struct Fixture {
    bvh_rays: Vec<Ray>,
    brute_rays: Vec<Ray>,
    reference: Vec<Hit>,
}

/// The [`Fixture`] of size `SIZES[i]`, built on first use.
fn fixture(i: usize) -> &'static Fixture {
    static CELLS: [OnceLock<Fixture>; SIZES.len()] = [const { OnceLock::new() }; SIZES.len()];
    CELLS[i].get_or_init(|| {
        let mesh = support::mesh(SIZES[i]);
        let bounds = mesh.bounds().expect("the built-in scene is not empty");
        let brute_rays = RaySet::Primary.generate(bounds, brute_rays(SIZES[i]));
        let cpu = &pickers()[0];
        let brute = cpu
            .upload_with(mesh, Accel::Brute)
            .expect("CPU brute force");
        let reference = trace_once(cpu, &brute, &brute_rays);
        assert!(
            reference.iter().any(Hit::is_hit),
            "the camera sees the scene"
        );
        Fixture {
            bvh_rays: RaySet::Primary.generate(bounds, BVH_IMAGE * BVH_IMAGE),
            brute_rays,
            reference,
        }
    })
}

/// Trace rate of every backend and acceleration structure, per size.
pub fn trace(c: &mut Criterion) {
    let options = TraceOptions::default();
    for (i, n) in SIZES.into_iter().enumerate() {
        let name = format!("scale_trace/{}_tris", count_label(n));
        let mut group = support::long_group(c, &name, SCALE_WARM_UP, SCALE_MEASUREMENT);
        for picker in pickers() {
            for accel in [Accel::Bvh, Accel::Brute] {
                let rays = if accel == Accel::Brute {
                    brute_rays(n)
                } else {
                    BVH_IMAGE * BVH_IMAGE
                };
                let case = case(picker, accel);
                // Prepared and checked on the first call (only when the filter
                // selects this case).
                let mut prepared: Option<(PickMesh, Vec<Hit>)> = None;
                group.throughput(Throughput::Elements(rays as u64));
                group.bench_function(BenchmarkId::new(&case, format!("{rays}_rays")), |b| {
                    let fx = fixture(i);
                    let (mesh, hits) = prepared.get_or_insert_with(|| {
                        let mesh = support::mesh(n);
                        let prepared = picker.upload_with(mesh, accel).expect("prepare");
                        let hits = trace_once(picker, &prepared, &fx.brute_rays);
                        check(&name, &case, mesh, &fx.reference, &hits);
                        (prepared, vec![Hit::MISS; rays])
                    });
                    let rays = if accel == Accel::Brute {
                        &fx.brute_rays
                    } else {
                        &fx.bvh_rays
                    };
                    b.iter(|| {
                        picker
                            .trace_into(mesh, rays, &options, hits)
                            .expect("trace")
                    })
                });
            }
        }
        group.finish();
    }
}

fn trace_once(picker: &Picker, mesh: &PickMesh, rays: &[Ray]) -> Vec<Hit> {
    picker
        .trace(mesh, rays, &TraceOptions::default())
        .expect("trace")
}

/// Asserts that `hits` name the same triangles as `reference` on all but one ray in
/// 10,000 (a ray grazing a shared edge may pick either neighbour between a BVH and
/// brute force only when their `t` tie; backends agree bit for bit).
fn check(group: &str, case: &str, mesh: &Mesh, reference: &[Hit], hits: &[Hit]) {
    let same = reference
        .iter()
        .zip(hits)
        .filter(|(a, b)| a.prim == b.prim)
        .count();
    assert!(
        same * 10_000 >= reference.len() * 9_999,
        "{group}/{case}: {same} of {} rays agree with CPU brute force on {} triangles",
        reference.len(),
        mesh.triangle_count()
    );
}
