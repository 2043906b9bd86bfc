//! BVH bench groups: build rate, trace rate against brute force, parry3d and obvhs,
//! and pick latency. Fixtures come from [`crate::support`].
//!
//! * `bvh_build/{1M,10M}_tris`: `Bvh::build` on `scene::builtin_scene(n)`, on rayon's
//!   global pool and on a 1-thread pool; throughput in triangles.
//! * `bvh_trace/1M_tris/{camera,incoherent}_1Mrays`: raypick's CPU BVH and GPU BVH,
//!   CPU brute force (on a 1,024-ray subset: its id and throughput say so), parry3d
//!   and obvhs, all on 2 threads; throughput in rays.
//! * `pick_latency/1M_tris`: one ray and 64 rays at the centre of the camera image,
//!   CPU BVH and GPU BVH (mesh uploaded before timing; the GPU time includes the
//!   submit and the readback).

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use raypick::bvh::{Bvh, MAX_DEPTH};
use raypick::{Hit, Ray, TraceOptions};

use crate::support::{
    self, Agreement, BUILD_SIZES, MIN_AGREEMENT, RAYS, RaySet, SUBSET, TRACE_THREADS,
    TRACE_TRIANGLES, count_label,
};

/// `Bvh::build` on 1M and 10M triangles, with all of rayon's global pool and with one
/// thread. Each build is checked against a reference build (same size and depth; a
/// byte-for-byte difference is reported, since the builder is meant to be
/// deterministic).
pub fn build(c: &mut Criterion) {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("1-thread pool");
    let global = rayon::current_num_threads();
    for n in BUILD_SIZES {
        let name = format!("bvh_build/{}_tris", count_label(n));
        let measurement = Duration::from_secs(if n > 1_000_000 { 1 } else { 8 });
        let mut group = support::long_group(c, &name, Duration::from_millis(500), measurement);
        group.throughput(Throughput::Elements(n as u64));
        // The first build of this size (validated, its size and depth printed).
        let mut reference: Option<Bvh> = None;
        let cases = [
            (format!("{global}_threads"), None),
            ("1_thread".to_string(), Some(&one)),
        ];
        for (label, pool) in cases {
            group.bench_function(BenchmarkId::new("raypick", label), |b| {
                let mesh = support::mesh(n);
                let build = || match pool {
                    Some(pool) => pool.install(|| Bvh::build(mesh)),
                    None => Bvh::build(mesh),
                };
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let bvh = std::hint::black_box(build());
                        total += start.elapsed();
                        match &reference {
                            Some(reference) => check_build(&bvh, reference, n),
                            None => {
                                // The first build of this size is the reference.
                                support::report_bvh(&bvh, mesh);
                                reference = Some(bvh);
                            }
                        }
                    }
                    total
                });
            });
        }
        group.finish();
    }
}

/// Checks a timed build against the reference build of the same mesh.
fn check_build(bvh: &Bvh, reference: &Bvh, n: usize) {
    assert_eq!(bvh.mesh_triangle_count(), n, "the BVH covers the mesh");
    assert!(bvh.depth() <= MAX_DEPTH, "depth {}", bvh.depth());
    assert_eq!(
        (bvh.size_bytes(), bvh.depth()),
        (reference.size_bytes(), reference.depth()),
        "a rebuild has the reference's size and depth"
    );
    let same = bytemuck::cast_slice::<_, u8>(bvh.nodes())
        == bytemuck::cast_slice::<_, u8>(reference.nodes())
        && bytemuck::cast_slice::<_, u8>(bvh.triangles())
            == bytemuck::cast_slice::<_, u8>(reference.triangles());
    if !same {
        println!(
            "[warning] bvh_build/{}: a rebuild differs byte-for-byte from the reference",
            count_label(n)
        );
    }
}

/// Trace rate on the 1M-triangle scene for 1M camera and 1M incoherent rays.
pub fn trace(c: &mut Criterion) {
    let options = TraceOptions::default();
    for set in RaySet::ALL {
        let name = format!(
            "bvh_trace/{}_tris/{}_{}rays",
            count_label(TRACE_TRIANGLES),
            set.name(),
            count_label(RAYS)
        );
        let mut group =
            support::long_group(c, &name, Duration::from_secs(1), Duration::from_secs(4));
        group.throughput(Throughput::Elements(RAYS as u64));
        let threads = format!("{TRACE_THREADS}_threads");

        // raypick, CPU BVH. Checked against brute force on the subset first.
        let mut hits = vec![Hit::MISS; RAYS];
        group.bench_function(BenchmarkId::new("raypick_cpu_bvh", &threads), |b| {
            let (cpu, mesh, rays) = (support::cpu(), support::cpu_bvh(), support::rays(set));
            let reference = support::cpu_bvh_hits(set);
            support::brute_subset_hits(set);
            b.iter(|| cpu.trace_into(mesh, rays, &options, &mut hits));
            assert!(hits == reference, "CPU BVH hits are reproducible");
        });

        // raypick, GPU BVH. Checked against the CPU BVH on every ray first (one
        // untimed trace), then timed on `gpu_rays(set)` rays.
        match support::gpu() {
            Some(gpu) => {
                let count = support::gpu_rays(gpu, set);
                let param = if count == RAYS {
                    support::adapter_label(gpu)
                } else {
                    format!("{}_{count}_rays", support::adapter_label(gpu))
                };
                group.throughput(Throughput::Elements(count as u64));
                let mut checked = false;
                let mut gpu_hits = vec![Hit::MISS; count];
                group.bench_function(BenchmarkId::new("raypick_gpu_bvh", param), |b| {
                    let (mesh, rays) = (support::gpu_bvh(gpu), support::rays(set));
                    let reference = support::cpu_bvh_hits(set);
                    if !checked {
                        let start = Instant::now();
                        let all = gpu.trace(mesh, rays, &options).expect("GPU trace");
                        let a = Agreement::new(reference, &all);
                        println!(
                            "[check] GPU BVH vs CPU BVH, {} (untimed trace of all {} rays: {}): {a}",
                            set.name(),
                            RAYS,
                            support::ms(start.elapsed())
                        );
                        assert_gpu_matches(&a, set.name());
                        checked = true;
                    }
                    b.iter(|| {
                        gpu.trace_into(mesh, &rays[..count], &options, &mut gpu_hits)
                            .expect("GPU trace")
                    });
                    assert_gpu_matches(
                        &Agreement::new(&reference[..count], &gpu_hits),
                        set.name(),
                    );
                });
                group.throughput(Throughput::Elements(RAYS as u64));
            }
            None => println!("[gpu] no GPU adapter: raypick_gpu_bvh left out"),
        }

        // raypick, CPU brute force, on the subset only (1M rays x 1M triangles would
        // take minutes): its own ray count in the id and as its throughput.
        group.throughput(Throughput::Elements(SUBSET as u64));
        let mut sub_hits = vec![Hit::MISS; SUBSET];
        let id = BenchmarkId::new("raypick_cpu_brute", format!("{SUBSET}_rays_{threads}"));
        group.bench_function(id, |b| {
            let (cpu, mesh, rays) = (support::cpu(), support::cpu_brute(), support::subset(set));
            let reference = support::brute_subset_hits(set);
            b.iter(|| cpu.trace_into(mesh, rays, &options, &mut sub_hits));
            assert!(sub_hits == reference, "brute-force hits are reproducible");
        });
        group.throughput(Throughput::Elements(RAYS as u64));

        // parry3d and obvhs, on a 2-thread pool, checked against raypick's CPU BVH
        // after every call; the first call is criterion's warm-up, so the check is
        // printed and has passed before the timed samples.
        type Tracer = fn(&[Ray]) -> Vec<Hit>;
        let libraries: [(&str, Tracer); 2] = [
            ("parry3d", |rays| support::parry().trace(rays)),
            ("obvhs", |rays| support::obvhs().trace(rays)),
        ];
        for (name, trace) in libraries {
            let mut checked = false;
            group.bench_function(BenchmarkId::new(name, &threads), |b| {
                let (pool, rays) = (support::pool(), support::rays(set));
                let reference = support::cpu_bvh_hits(set);
                let mut out = Vec::new();
                b.iter(|| out = pool.install(|| trace(rays)));
                let a = Agreement::new(reference, &out);
                if !checked {
                    let ties = support::coplanar_ties(reference, &out);
                    println!(
                        "[check] {name} vs raypick CPU BVH, {}: {a}; ties between coplanar \
                         triangles: {ties}",
                        set.name()
                    );
                    checked = true;
                }
                assert_library_agrees(&a, name, set.name());
            });
        }
        group.finish();
    }
}

/// The GPU BVH gives the CPU BVH's hits on every ray: the same triangle (or both
/// miss) and `t` within the tolerance; bit-identical hits are counted and printed by
/// the caller.
fn assert_gpu_matches(a: &Agreement, set: &str) {
    assert_eq!(
        a.agree, a.rays,
        "GPU BVH agrees with the CPU BVH on every {set} ray: {a}"
    );
}

/// A comparison library finds raypick's hit (same triangle, or both miss, with `t`
/// within the tolerance) on at least [`MIN_AGREEMENT`] of the rays, counting ties
/// (another triangle at the same `t`) as agreement: parry3d breaks ties by its
/// traversal order, not by the lowest id, and the built-in scene has coplanar
/// triangles (soup triangles clamped onto the ground plane).
fn assert_library_agrees(a: &Agreement, name: &str, set: &str) {
    assert!(
        a.rate_with_ties() >= MIN_AGREEMENT,
        "{name} agrees with raypick (ties included) on at least {}% of the {set} rays: {a}",
        100.0 * MIN_AGREEMENT
    );
}

/// Latency of picking 1 and 64 rays at the image centre on the 1M-triangle scene.
pub fn pick(c: &mut Criterion) {
    let options = TraceOptions::default();
    let name = format!("pick_latency/{}_tris", count_label(TRACE_TRIANGLES));
    support::note_load(&name);
    let mut group = c.benchmark_group(name);
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for side in [1u32, 8] {
        let count = (side * side) as usize;
        let label = if count == 1 {
            "1_ray".to_string()
        } else {
            format!("{count}_rays")
        };
        group.throughput(Throughput::Elements(count as u64));
        // The rays and their expected hits (the CPU BVH's, over the whole image).
        let fixture = || {
            let (all, reference) = (
                support::rays(RaySet::Camera),
                support::cpu_bvh_hits(RaySet::Camera),
            );
            let idx = support::centre_block(side);
            let rays: Vec<Ray> = idx.iter().map(|&i| all[i]).collect();
            let expected: Vec<Hit> = idx.iter().map(|&i| reference[i]).collect();
            assert!(
                expected.iter().any(Hit::is_hit),
                "the centre of the image sees the scene"
            );
            (rays, expected)
        };
        let mut hits = vec![Hit::MISS; count];

        let mut cpu_case = None;
        let id = BenchmarkId::new(
            "raypick_cpu_bvh",
            format!("{label}_{TRACE_THREADS}_threads"),
        );
        group.bench_function(id, |b| {
            let (rays, expected) = cpu_case.get_or_insert_with(fixture);
            let (cpu, mesh) = (support::cpu(), support::cpu_bvh());
            b.iter(|| cpu.trace_into(mesh, rays, &options, &mut hits));
            assert!(hits == *expected, "CPU pick hits");
        });

        match support::gpu() {
            Some(gpu) => {
                let mut gpu_case = None;
                let id = BenchmarkId::new(
                    "raypick_gpu_bvh",
                    format!("{label}_{}", support::adapter_label(gpu)),
                );
                group.bench_function(id, |b| {
                    let (rays, expected) = gpu_case.get_or_insert_with(fixture);
                    let mesh = support::gpu_bvh(gpu);
                    b.iter(|| {
                        gpu.trace_into(mesh, rays, &options, &mut hits)
                            .expect("GPU trace")
                    });
                    assert_gpu_matches(&Agreement::new(expected, &hits), "pick");
                });
            }
            None => println!("[gpu] no GPU adapter: GPU pick latency left out"),
        }
    }
    group.finish();
}
