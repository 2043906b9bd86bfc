//! Checks the comparison adapters of `benches/compare/` against raypick's CPU brute
//! force, and prints their build and trace times:
//! `cargo bench --bench compare_check`.
//!
//! Main case: `fixtures::builtin_scene(50_000)` with 20,000 camera rays and 20,000
//! incoherent rays; each adapter must report the same triangle as the brute force
//! (or a miss on both) with `t` within 1e-4 relative, for at least 99.9% of the rays.
//! raypick's own CPU BVH (`Accel::Bvh`) is timed and its agreement reported alongside.
//! obvhs's other build presets are timed on the incoherent rays.
//! Then, reported without a threshold: rays with `[tmin, tmax]` intervals and
//! adversarial rays (invalid ones must miss), and small or degenerate meshes (which
//! must build without a panic).

mod compare;

use std::time::Instant;

use compare::agreement::{Agreement, MIN_AGREEMENT, T_TOLERANCE};
use compare::{Obvhs, Parry};
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Hit, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, AdversarialKind, Rng};

/// Timed repetitions of each trace (the best is reported).
const REPEAT: usize = 3;

/// Prints up to `max` rays on which `hits` and `reference` disagree.
fn print_examples(rays: &[Ray], reference: &[Hit], hits: &[Hit], max: usize) {
    let differs = |r: &Hit, h: &Hit| {
        r.prim != h.prim || (r.is_hit() && (h.t - r.t).abs() > T_TOLERANCE * r.t.abs())
    };
    for ((ray, r), h) in rays
        .iter()
        .zip(reference)
        .zip(hits)
        .filter(|((_, r), h)| differs(r, h))
        .take(max)
    {
        println!(
            "      differs: ray o={:?} d={:?}  ref {:?}  got {:?}",
            ray.origin.to_array(),
            ray.dir.to_array(),
            r,
            h
        );
    }
}

/// Runs `f` once, returns its value and the time in milliseconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64() * 1e3)
}

/// Traces [`REPEAT`] times; returns the hits (all runs must agree bit for bit) and
/// the best time in ms.
fn best_of(trace: impl Fn() -> Vec<Hit>) -> (Vec<Hit>, f64) {
    let (hits, mut best) = timed(&trace);
    for _ in 1..REPEAT {
        let (again, ms) = timed(&trace);
        assert!(again == hits, "tracing is deterministic");
        best = best.min(ms);
    }
    (hits, best)
}

/// raypick's CPU brute force (the reference) on a mesh prepared with `Accel::Brute`.
fn brute_force(cpu: &CpuBackend, mesh: &CpuMesh, rays: &[Ray]) -> Vec<Hit> {
    assert_eq!(mesh.accel(), Accel::Brute);
    cpu.trace(mesh, rays, &TraceOptions::default())
}

/// A mesh prepared for raypick's CPU brute force.
fn brute_mesh(mesh: &Mesh) -> CpuMesh {
    CpuMesh::with_accel(mesh, Accel::Brute)
}

fn rate_line(name: &str, ms: f64, rays: usize) -> String {
    format!(
        "  {name:<12} trace {ms:>9.2} ms  {:>8.2} Mrays/s",
        rays as f64 / ms / 1e3
    )
}

/// The main case: agreement is asserted.
fn main_case() {
    let mesh = fixtures::builtin_scene(50_000);
    let bounds = mesh.bounds().expect("non-empty scene");
    let camera = fixtures::camera_rays(bounds, 200, 100);
    let incoherent = fixtures::incoherent_rays(20_000, &mut Rng::new(0xC0FFEE), bounds);
    println!(
        "builtin_scene(50_000): {} triangles, {} threads",
        mesh.triangle_count(),
        rayon::current_num_threads()
    );

    // Builds, twice each: deterministic (same answers), best time reported.
    let cpu = CpuBackend::new();
    let (cpu_mesh, cpu_ms) = timed(|| brute_mesh(&mesh));
    let (raypick_bvh, raypick_ms) = timed(|| CpuMesh::with_accel(&mesh, Accel::Bvh));
    let (parry, parry_ms) = timed(|| Parry::build(&mesh));
    let (parry2, parry_ms2) = timed(|| Parry::build(&mesh));
    let (obvhs, obvhs_ms) = timed(|| Obvhs::build(&mesh));
    let (obvhs2, obvhs_ms2) = timed(|| Obvhs::build(&mesh));
    println!("build (best of 2 for the BVHs):");
    println!("  raypick brute force (pack) {cpu_ms:>9.2} ms");
    println!("  raypick CPU BVH            {raypick_ms:>9.2} ms");
    println!(
        "  parry3d TriMesh            {:>9.2} ms  ({} triangles)",
        parry_ms.min(parry_ms2),
        parry.triangle_count()
    );
    println!(
        "  obvhs CWBVH medium_build   {:>9.2} ms  ({} nodes)",
        obvhs_ms.min(obvhs_ms2),
        obvhs.node_count()
    );

    let mut failures = Vec::new();
    for (name, rays) in [("camera", &camera), ("incoherent", &incoherent)] {
        println!("{name} rays: {}", rays.len());
        let (reference, ref_ms) = timed(|| brute_force(&cpu, &cpu_mesh, rays));
        println!("{}", rate_line("brute force", ref_ms, rays.len()));
        let (raypick_hits, ms) =
            best_of(|| cpu.trace(&raypick_bvh, rays, &TraceOptions::default()));
        println!("{}", rate_line("raypick BVH", ms, rays.len()));
        let (parry_hits, ms) = best_of(|| parry.trace(rays));
        assert!(
            parry2.trace(rays) == parry_hits,
            "parry build is deterministic"
        );
        println!("{}", rate_line("parry3d", ms, rays.len()));
        let (obvhs_hits, ms) = best_of(|| obvhs.trace(rays));
        assert!(
            obvhs2.trace(rays) == obvhs_hits,
            "obvhs build is deterministic"
        );
        println!("{}", rate_line("obvhs", ms, rays.len()));
        println!(
            "  {:<12} {}  (reported, not checked here)",
            "raypick BVH",
            Agreement::new(&reference, &raypick_hits).line()
        );
        for (lib, hits) in [("parry3d", &parry_hits), ("obvhs", &obvhs_hits)] {
            let a = Agreement::new(&reference, hits);
            println!("  {lib:<12} {}", a.line());
            print_examples(rays, &reference, hits, 3);
            if a.rate() < MIN_AGREEMENT {
                failures.push(format!("{lib} on {name} rays: {}", a.line()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "agreement below {}%:\n{}",
        100.0 * MIN_AGREEMENT,
        failures.join("\n")
    );
}

/// Intervals and adversarial rays on the main scene: reported, invalid rays must miss.
fn interval_case() {
    let mesh = fixtures::builtin_scene(50_000);
    let bounds = mesh.bounds().expect("non-empty scene");
    let cpu = CpuBackend::new();
    let cpu_mesh = brute_mesh(&mesh);
    let parry = Parry::build(&mesh);
    let obvhs = Obvhs::build(&mesh);
    let random = fixtures::random_rays(20_000, &mut Rng::new(11), bounds);
    let labeled = fixtures::adversarial_rays_labeled(&mesh, &mut Rng::new(12), 8_192);
    let adversarial: Vec<Ray> = labeled.iter().map(|&(_, r)| r).collect();
    for (name, rays) in [
        ("random rays with [tmin, tmax]", &random),
        ("adversarial rays", &adversarial),
    ] {
        println!("{name}: {}", rays.len());
        let reference = brute_force(&cpu, &cpu_mesh, rays);
        for (lib, hits) in [("parry3d", parry.trace(rays)), ("obvhs", obvhs.trace(rays))] {
            println!("  {lib:<12} {}", Agreement::new(&reference, &hits).line());
            if name != "adversarial rays" {
                continue;
            }
            for ((kind, _), hit) in labeled.iter().zip(&hits) {
                assert!(
                    !kind.is_invalid() || *hit == Hit::MISS,
                    "{lib}: invalid {kind:?} ray must miss"
                );
            }
            // Per kind: which edge cases each library treats differently.
            let mut by_kind = Vec::new();
            for kind in AdversarialKind::ALL {
                let (r, h): (Vec<Hit>, Vec<Hit>) = labeled
                    .iter()
                    .zip(reference.iter().zip(&hits))
                    .filter(|((k, _), _)| *k == kind)
                    .map(|(_, (r, h))| (*r, *h))
                    .unzip();
                let a = Agreement::new(&r, &h);
                if a.agree < a.rays {
                    by_kind.push(format!(
                        "{kind:?} {}/{} (hits {} vs ref {})",
                        a.agree, a.rays, a.hits, a.ref_hits
                    ));
                }
            }
            println!("    {:<10} disagree on: {}", "", by_kind.join(", "));
        }
    }
}

/// Small and degenerate meshes: must build without a panic; agreement reported.
fn robustness_case() {
    let one = Mesh::from_triangles(&[[glam::Vec3::ZERO, glam::Vec3::X, glam::Vec3::Y]]);
    let degenerate_only = fixtures::with_degenerates(&Mesh::default(), &mut Rng::new(3), 60);
    let meshes: Vec<(String, Mesh)> = vec![
        ("empty".into(), Mesh::default()),
        ("grid(0, 0)".into(), fixtures::grid(0, 0, 1.0)),
        ("one triangle".into(), one),
        ("grid(1, 1)".into(), fixtures::grid(1, 1, 2.0)),
        ("cube".into(), fixtures::cube()),
        (
            "icosphere(0)".into(),
            fixtures::icosphere(0, 1.0, glam::Vec3::ZERO),
        ),
        (
            "icosphere(3)".into(),
            fixtures::icosphere(3, 1.0, glam::Vec3::ZERO),
        ),
        ("grid(64, 64)".into(), fixtures::grid(64, 64, 10.0)),
        ("only degenerates".into(), degenerate_only),
        (
            "builtin_scene(2_000) + 600 degenerates".into(),
            fixtures::with_degenerates(&fixtures::builtin_scene(2_000), &mut Rng::new(4), 600),
        ),
    ];
    let cpu = CpuBackend::new();
    println!(
        "small and degenerate meshes (2,000 random + 2,000 incoherent rays, 1,024 adversarial rays):"
    );
    for (name, mesh) in &meshes {
        let bounds = mesh
            .bounds()
            .unwrap_or((glam::Vec3::splat(-1.0), glam::Vec3::splat(1.0)));
        let mut rng = Rng::new(5);
        let mut rays = fixtures::random_rays(2_000, &mut rng, bounds);
        rays.extend(fixtures::incoherent_rays(2_000, &mut rng, bounds));
        rays.extend(fixtures::adversarial_rays(mesh, &mut rng, 1_024));
        let reference = brute_force(&cpu, &brute_mesh(mesh), &rays);
        let parry = Parry::build(mesh);
        let obvhs = Obvhs::build(mesh);
        println!(
            "  {name} ({} triangles, {} rays)",
            mesh.triangle_count(),
            rays.len()
        );
        // The first 4,000 rays are ordinary, the rest adversarial.
        let ordinary = 4_000;
        for (lib, hits) in [
            ("parry3d", parry.trace(&rays)),
            ("obvhs", obvhs.trace(&rays)),
        ] {
            let plain = Agreement::new(&reference[..ordinary], &hits[..ordinary]);
            let tricky = Agreement::new(&reference[ordinary..], &hits[ordinary..]);
            println!("    {lib:<10} ordinary    {}", plain.line());
            println!("    {:<10} adversarial {}", "", tricky.line());
        }
    }
}

/// obvhs's other build presets on the main scene: build time, trace rate, agreement.
fn presets_case() {
    let mesh = fixtures::builtin_scene(50_000);
    let bounds = mesh.bounds().expect("non-empty scene");
    let rays = fixtures::incoherent_rays(20_000, &mut Rng::new(0xC0FFEE), bounds);
    let reference = brute_force(&CpuBackend::new(), &brute_mesh(&mesh), &rays);
    println!("obvhs presets (incoherent rays):");
    for (name, params) in [
        ("fastest_build", obvhs::BvhBuildParams::fastest_build()),
        ("fast_build", obvhs::BvhBuildParams::fast_build()),
        ("medium_build", obvhs::BvhBuildParams::medium_build()),
        ("slow_build", obvhs::BvhBuildParams::slow_build()),
    ] {
        let (bvh, build_ms) = timed(|| Obvhs::build_with(&mesh, params));
        let (hits, ms) = best_of(|| bvh.trace(&rays));
        println!(
            "  {name:<14} build {build_ms:>8.2} ms {} nodes  {}",
            bvh.node_count(),
            rate_line("", ms, rays.len()).trim_start()
        );
        println!("  {:<14} {}", "", Agreement::new(&reference, &hits).line());
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    main_case();
    presets_case();
    interval_case();
    robustness_case();
    println!("compare_check: ok");
}
