//! Times BVH builds and measures the trees' quality:
//! `cargo run --release --example build_time -- [triangles] [rounds] [morton_subtree,...] [trace]`.
//!
//! Every round builds once with each `morton_subtree` setting (default: binned
//! throughout, `0`, and the default), alternating so that both see the same machine
//! load, and prints the build's wall and CPU time (the CPU time hardly depends on
//! other load), the time of the collapse the CPU backend then makes of it (its
//! eight-wide nodes and leaf blocks), the tree's SAH cost and size. With `trace`,
//! the trees of the last round then trace 1M camera and 1M incoherent rays on the
//! CPU (2 threads), and the
//! work an ordered traversal cannot avoid (boxes, leaves and triangles that the
//! segment up to each hit touches) is counted per ray: a quality figure that no
//! machine load distorts.
use std::time::Instant;

use raypick::bvh::{BuildOptions, Bvh};
use raypick::cpu::wide_bvh::WideBvh;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::types::BvhChild;
use raypick::{Hit, Ray, TraceOptions};
use raypick_testkit::fixtures;

/// SAH cost of a tree relative to its root's box: 1 per interior node and 1 per
/// triangle test, each weighted by the probability of hitting its box.
fn sah_cost(bvh: &Bvh) -> f64 {
    let area = |lo: glam::Vec3, hi: glam::Vec3| {
        let d = (hi - lo).max(glam::Vec3::ZERO).as_dvec3();
        d.x * d.y + d.y * d.z + d.z * d.x
    };
    let node_area = |c: &[BvhChild; 2]| area(c[0].lo.min(c[1].lo), c[0].hi.max(c[1].hi));
    let root = node_area(&bvh.nodes()[0].children);
    let mut cost = 0.0;
    for node in bvh.nodes() {
        cost += node_area(&node.children);
        for c in node.children.iter().filter(|c| c.is_leaf()) {
            cost += c.count as f64 * area(c.lo, c.hi);
        }
    }
    cost / root
}

/// Traversal work independent of timing: per ray, the boxes (interior nodes) and
/// triangles whose boxes the segment up to the ray's hit (or its end) touches —
/// what an ordered traversal visits at the least. Returns (boxes, leaves,
/// triangles) per ray.
fn segment_work(bvh: &Bvh, rays: &[Ray], hits: &[Hit]) -> (f64, f64, f64) {
    let (mut boxes, mut leaves, mut triangles) = (0u64, 0u64, 0u64);
    let mut stack = Vec::new();
    for (ray, hit) in rays.iter().zip(hits) {
        let inv = ray.dir.recip();
        let end = if hit.is_hit() { hit.t } else { ray.tmax };
        let touches = |c: &BvhChild| {
            let (a, b) = ((c.lo - ray.origin) * inv, (c.hi - ray.origin) * inv);
            let near = a.min(b).max_element().max(ray.tmin);
            let far = a.max(b).min_element().min(end);
            near <= far
        };
        stack.push(0usize);
        while let Some(index) = stack.pop() {
            boxes += 1;
            for c in bvh.nodes()[index].children.iter().filter(|c| !c.is_empty()) {
                if !touches(c) {
                    continue;
                }
                if c.is_leaf() {
                    leaves += 1;
                    triangles += c.count as u64;
                } else {
                    stack.push(c.index as usize);
                }
            }
        }
    }
    let n = rays.len() as f64;
    (boxes as f64 / n, leaves as f64 / n, triangles as f64 / n)
}

/// CPU time of this process so far (all threads, user + system), in seconds: unlike
/// the wall time it hardly depends on what else the machine runs.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime and stime are the
    // 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let settings: Vec<usize> = args
        .next()
        .map(|a| a.split(',').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| vec![0, BuildOptions::default().morton_subtree]);
    let start = Instant::now();
    let mesh = fixtures::builtin_scene(n);
    println!(
        "scene: {} triangles in {:.1} ms, {} threads",
        mesh.triangle_count(),
        start.elapsed().as_secs_f64() * 1e3,
        rayon::current_num_threads()
    );
    let mut last = Vec::new();
    for _ in 0..rounds {
        last.clear();
        for &morton_subtree in &settings {
            let options = BuildOptions {
                morton_subtree,
                ..BuildOptions::default()
            };
            let (start, cpu) = (Instant::now(), cpu_seconds());
            let bvh = Bvh::build_with(&mesh, &options);
            let build = start.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - cpu;
            let start = Instant::now();
            drop(std::hint::black_box(WideBvh::from_bvh(&bvh)));
            let collapse = start.elapsed().as_secs_f64();
            println!(
                "morton_subtree {morton_subtree:>5}: build {:7.1} ms ({:5.2} M tris/s), CPU {:7.1} ms, \
                 collapse for the CPU {:5.1} ms, SAH {:.2}, depth {}, {} nodes, {:.1} B/tri",
                build * 1e3,
                n as f64 / build / 1e6,
                cpu * 1e3,
                collapse * 1e3,
                sah_cost(&bvh),
                bvh.depth(),
                bvh.nodes().len(),
                bvh.size_bytes() as f64 / n as f64,
            );
            last.push((morton_subtree, bvh));
        }
    }
    if args.next().as_deref() != Some("trace") {
        return;
    }
    let bounds = mesh.bounds().expect("the scene has triangles");
    let sets = [
        ("camera", fixtures::camera_rays(bounds, 1024, 1024)),
        (
            "incoherent",
            fixtures::incoherent_rays(1 << 20, &mut fixtures::Rng::new(7), bounds),
        ),
    ];
    let cpu = CpuBackend::with_threads(2).expect("2-thread pool");
    let meshes: Vec<_> = last
        .iter()
        .map(|(m, bvh)| (*m, CpuMesh::Bvh(WideBvh::from_bvh(bvh))))
        .collect();
    let options = TraceOptions::default();
    for (name, rays) in &sets {
        let mut hits = vec![Hit::MISS; rays.len()];
        cpu.trace_into(&meshes[0].1, rays, &options, &mut hits);
        for (m, bvh) in &last {
            let (boxes, leaves, triangles) = segment_work(bvh, rays, &hits);
            println!(
                "work  {name:<10} morton_subtree {m:>5}: {boxes:6.1} boxes, {leaves:6.1} leaves, \
                 {triangles:6.1} triangles per ray"
            );
        }
        for round in 0..3 {
            for (m, mesh) in &meshes {
                let (start, cpu_start) = (Instant::now(), cpu_seconds());
                cpu.trace_into(mesh, rays, &options, &mut hits);
                let s = start.elapsed().as_secs_f64();
                let c = cpu_seconds() - cpu_start;
                println!(
                    "trace {name:<10} round {round} morton_subtree {m:>5}: {:6.2} Mrays/s, \
                     {:6.3} CPU s",
                    rays.len() as f64 / s / 1e6,
                    c
                );
            }
        }
    }
}
