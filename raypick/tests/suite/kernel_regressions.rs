//! Ray–triangle kernel edge cases found by fuzzing, each on every engine (CPU brute
//! force and BVH, the CPU mirror of the WGSL traversal, and the GPU when there is
//! one) and in both test modes:
//! - a subnormal determinant whose reciprocal overflows (NaN `u`, infinite `t`);
//! - a `t` that overflows f32 while the interval is infinite;
//! - directions of magnitude `1e37` and `1e-37`, where the kernels' products and the
//!   box tests' `1 / dir` used to over- or underflow (wrong `t`, BVH != brute force).
//!
//! Inputs that `cargo fuzz` found are replayed from `tests/fixtures/fuzz/` at the end.

use crate::support::{engines, trace_with};
use glam::Vec3;
use raypick::bvh::Bvh;
use raypick::cpu::bvh_traverse;
use raypick::{Hit, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::reference::{check_kernel_hit, intersect_f64};

/// Hits of `rays` on `mesh` from every engine and the CPU mirror of the WGSL
/// traversal, per mode: `(what, hits)`.
fn all_hits(mesh: &Mesh, rays: &[Ray]) -> Vec<(String, Vec<Hit>)> {
    let mut all = Vec::new();
    for mode in [Mode::Fast, Mode::Watertight] {
        let options = TraceOptions {
            mode,
            ..TraceOptions::default()
        };
        for engine in engines() {
            all.push((
                format!("{engine:?} {mode:?}"),
                trace_with(engine, mesh, rays, &options),
            ));
        }
        let mut mirror = vec![Hit::MISS; rays.len()];
        bvh_traverse::trace_rays(&Bvh::build(mesh), rays, &mut mirror, options.cull, mode);
        all.push((format!("bvh_traverse mirror {mode:?}"), mirror));
    }
    all
}

/// Asserts that every engine misses every ray.
fn assert_all_miss(mesh: &Mesh, rays: &[Ray]) {
    for (what, hits) in all_hits(mesh, rays) {
        for (ray, hit) in rays.iter().zip(&hits) {
            assert_eq!(*hit, Hit::MISS, "{what}: {ray:?}");
        }
    }
}

/// Asserts that every engine reports triangle `prim` for `ray`, with a hit the f64
/// reference confirms, and that all engines agree bit for bit.
fn assert_all_hit(mesh: &Mesh, ray: &Ray, prim: u32) {
    let all = all_hits(mesh, std::slice::from_ref(ray));
    for (what, hits) in &all {
        let hit = hits[0];
        assert_eq!(hit.prim, prim, "{what}: {hit:?} for {ray:?}");
        let triangle = mesh.triangle(prim as usize);
        if let Err(e) = check_kernel_hit(ray, triangle, (hit.t, hit.u, hit.v)) {
            panic!("{what}: {e}");
        }
    }
    for mode in ["Fast", "Watertight"] {
        let mut same_mode = all.iter().filter(|(what, _)| what.ends_with(mode));
        let (first_what, first) = same_mode.next().expect("an engine");
        for (what, hits) in same_mode {
            assert_eq!(hits, first, "{what} vs {first_what}");
        }
    }
}

/// A right triangle with legs of `size` at the origin, in the z = 0 plane.
fn corner_triangle(size: f32) -> Mesh {
    Mesh::from_triangles(&[[
        Vec3::ZERO,
        Vec3::new(size, 0.0, 0.0),
        Vec3::new(0.0, size, 0.0),
    ]])
}

#[test]
fn subnormal_determinant_never_gives_nan_or_infinite_hits() {
    // det = -1e-40 (subnormal): 1 / det = -inf, U = 0 (the ray passes through the
    // edge v0 v2), so u = 0 * inf = NaN and t = T / det = -inf, which an infinite
    // tmin used to accept: the hit {t: -inf, u: NaN, v: inf}.
    let mesh = corner_triangle(1e-20);
    let ray = Ray::with_interval(
        Vec3::new(0.0, 2.5e-21, 1.0),
        Vec3::Z,
        f32::NEG_INFINITY,
        f32::INFINITY,
    );
    // The f64 reference sees a real intersection: the miss is because t (-1) is not
    // computable in f32 here, which the kernels now say with a miss.
    assert!(intersect_f64(&ray, mesh.triangle(0), 0.0).is_some());
    assert_all_miss(&mesh, &[ray]);
    // In front of the ray, and with an ordinary interval, it is a miss as before.
    let ahead = Ray::new(Vec3::new(0.0, 2.5e-21, -1.0), Vec3::Z);
    assert_all_miss(&mesh, &[ahead]);
}

#[test]
fn overflowing_t_is_a_miss_not_an_infinite_hit() {
    // The plane is 1e30 behind the origin along a direction of length 1e-10: the
    // exact t, -1e40, is beyond f32. With tmin = -inf the kernels used to report
    // t = -inf (and never a non-finite t is allowed).
    let mesh = corner_triangle(1.0);
    let behind = Ray::with_interval(
        Vec3::new(0.25, 0.25, 1e30),
        Vec3::new(0.0, 0.0, 1e-10),
        f32::NEG_INFINITY,
        f32::INFINITY,
    );
    let ahead = Ray::new(Vec3::new(0.25, 0.25, 1e30), Vec3::new(0.0, 0.0, -1e-10));
    assert_all_miss(&mesh, &[behind, ahead]);
    // A representable t along the same line is still found.
    let near = Ray::with_interval(
        Vec3::new(0.25, 0.25, 1e20),
        Vec3::new(0.0, 0.0, 1e-10),
        f32::NEG_INFINITY,
        f32::INFINITY,
    );
    assert_all_hit(&mesh, &near, 0);
}

#[test]
fn huge_direction_gives_the_f64_nearest_hit() {
    // |dir| ~ 2e37: the watertight test's sheared depths (~1e-37) and products
    // (~1e-45) underflowed, so brute force reported triangle 0 at t = 1.03e-37
    // (f64: 1.84e-37) instead of triangle 1 at 1.58e-37, while the BVH culled
    // triangle 0 by its box: BVH != brute force. The fast test overflowed instead
    // (d x e2) and lost hits.
    let mesh = Mesh::from_triangles(&[
        [
            Vec3::new(-0.07102391, -0.97975016, 0.6794682),
            Vec3::new(-0.070926756, -0.97969973, 0.6795033),
            Vec3::new(-0.0709825, -0.97961825, 0.67948407),
        ],
        [
            Vec3::new(-0.41380286, -0.28946137, 0.672405),
            Vec3::new(0.41767946, -1.0, 0.011844277),
            Vec3::new(0.6707517, -0.17234412, 0.26323378),
        ],
    ]);
    let ray = Ray::new(
        Vec3::new(2.6801758, 2.2280679, -2.3591301),
        Vec3::new(-1.4967035e37, -1.7451393e37, 1.6531161e37),
    );
    assert_all_hit(&mesh, &ray, 1);
}

#[test]
fn tiny_direction_keeps_bvh_equal_to_brute_force() {
    // |dir| ~ 3e-38 with a zero component: the true t is 3.09e37, while the box
    // test's stand-in for 1 / 0 (1e38) bounded the parallel slab at 2.1e37, so the
    // BVH culled the hit brute force found. The fast test's products underflowed.
    let mesh = Mesh::from_triangles(&[[
        Vec3::new(0.55707353, -0.58685887, -0.6935958),
        Vec3::new(-0.29404393, 0.22512168, -0.30688953),
        Vec3::new(0.12563685, -0.6691808, 0.1601119),
    ]]);
    let ray = Ray::new(
        Vec3::new(-1.0904778, -0.12781048, -0.048523903),
        Vec3::new(3.4229815e-38, -5.82746e-39, 0.0),
    );
    assert_all_hit(&mesh, &ray, 0);
}

#[test]
fn t_is_in_units_of_the_callers_direction_at_every_scale() {
    // Scaling the direction by a power of two scales t by its inverse exactly (the
    // kernels work on a direction normalised by a power of two), u and v unchanged.
    let mesh = Mesh::from_triangles(&[[
        Vec3::new(-1.0, -1.0, 0.0),
        Vec3::new(1.5, -0.5, 0.25),
        Vec3::new(-0.25, 1.25, -0.5),
    ]]);
    let base = Ray::new(Vec3::new(0.1, 0.2, 3.0), Vec3::new(0.05, -0.03, -1.0));
    let rays: Vec<Ray> = (-120..=120)
        .step_by(8)
        .map(|k| Ray::new(base.origin, base.dir * 2f32.powi(k)))
        .collect();
    for (what, hits) in all_hits(&mesh, &rays) {
        let reference = hits[rays.len() / 2];
        assert_eq!(reference.prim, 0, "{what}");
        for ((k, ray), hit) in (-120..=120).step_by(8).zip(&rays).zip(&hits) {
            let expected = Hit {
                t: reference.t * 2f32.powi(-k),
                ..reference
            };
            assert_eq!(*hit, expected, "{what}: scale 2^{k} {ray:?}");
        }
    }
}
