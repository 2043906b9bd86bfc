//! Ray–triangle kernel and traversal edge cases, each a bug once found by fuzzing,
//! checked on every engine (CPU brute force and BVH, the CPU mirror of the WGSL
//! traversal, the wide traversal, and the GPU when there is one) and in both test
//! modes:
//! - a subnormal determinant whose reciprocal overflows (NaN `u`, infinite `t`);
//! - a `t` that overflows f32 while the interval is infinite;
//! - directions of magnitude `1e37` and `1e-37`, where the kernels' products and the
//!   box tests' `1 / dir` used to over- or underflow (wrong `t`, BVH != brute force);
//! - the inputs `cargo fuzz` found (see `fuzz/`), replayed: loaded files from
//!   `tests/fixtures/fuzz/`, kernel and traversal cases inline.

use std::path::PathBuf;

use crate::support::{engines, trace_with};
use glam::Vec3;
use raypick::bvh::{BuildOptions, Bvh};
use raypick::cpu::brute_force::{self, TriangleBlocks};
use raypick::cpu::wide_bvh::WideBvh;
use raypick::cpu::{bvh_traverse, wide_traverse};
use raypick::prepare::pack_mesh;
use raypick::{Cull, Hit, Mesh, Mode, Ray, TraceOptions};
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

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(name)
}

/// Brute force, the CPU mirror of the WGSL traversal and the wide traversal, in that
/// order, for one mode and culling mode.
fn trace_three(mesh: &Mesh, rays: &[Ray], leaf: usize, mode: Mode, cull: Cull) -> [Vec<Hit>; 3] {
    let bvh = Bvh::build_with(
        mesh,
        &BuildOptions {
            max_leaf_size: leaf,
            ..BuildOptions::default()
        },
    );
    let mut out = [(); 3].map(|_| vec![Hit::MISS; rays.len()]);
    brute_force::trace_rays(
        &TriangleBlocks::new(&pack_mesh(mesh)),
        rays,
        &mut out[0],
        cull,
        mode,
    );
    bvh_traverse::trace_rays(&bvh, rays, &mut out[1], cull, mode);
    wide_traverse::trace_rays(&WideBvh::from_bvh(&bvh), rays, &mut out[2], cull, mode);
    out
}

fn assert_bvh_equals_brute_force(mesh: &Mesh, rays: &[Ray], leaf: usize) {
    for mode in [Mode::Fast, Mode::Watertight] {
        for cull in [Cull::None, Cull::Back, Cull::Front] {
            let [brute, mirror, wide] = trace_three(mesh, rays, leaf, mode, cull);
            assert_eq!(mirror, brute, "bvh_traverse, {mode:?} {cull:?}");
            assert_eq!(wide, brute, "wide_traverse, {mode:?} {cull:?}");
        }
    }
}

/// Found by `bvh_vs_brute`: a direction of ~6e32 whose z component (-1.5e-36)
/// becomes -0.0 once the direction is scaled to unit size. Its box slab used
/// `1 / dir = +BIG` but the wide traversal took the planes in the order of a
/// negative direction, so the slab was empty and the hit brute force found was lost.
#[test]
fn negative_zero_after_scaling_keeps_the_wide_bvh_equal_to_brute_force() {
    let a = Vec3::new(318767100.0, 4.5e-44, -111671250000.0);
    let b = Vec3::new(-23353885000.0, 2056192.0, 2007040.0);
    let c = Vec3::new(-0.0003260374, -96559100.0, 2.2574963e-38);
    let d = Vec3::new(-2.7761548e32, -21061632.0, -23068672.0);
    let mesh = Mesh::from_triangles(&[
        [a, a, a],
        [a, b, c],
        [b, d, a],
        [b, c, d],
        [b, a, d],
        [a, b, c],
    ]);
    let ray = Ray::new(
        Vec3::new(-0.024414063, -8388608.0, -8388608.0),
        Vec3::new(-6.2360487e32, -6.2196084e32, -1.504633e-36),
    );
    let [brute, ..] = trace_three(&mesh, &[ray], 3, Mode::Watertight, Cull::Back);
    assert_eq!(brute[0].prim, 1, "the hit the wide BVH lost");
    assert_bvh_equals_brute_force(&mesh, &[ray], 3);
}

/// Rays at the centroid of every triangle of `mesh` from a few directions.
fn centroid_rays(mesh: &Mesh) -> Vec<Ray> {
    let mut rays = Vec::new();
    for [v0, v1, v2] in mesh.triangles() {
        let centroid = (v0 + v1 + v2) / 3.0;
        for dir in [Vec3::X, Vec3::NEG_Y, Vec3::new(0.3, -0.2, 1.0)] {
            rays.push(Ray::new(centroid - dir, dir));
        }
    }
    rays
}

/// Found by `mesh_stl` and `mesh_glb`: subnormal coordinates give a centroid extent
/// whose reciprocal overflows, so the SAH binner computed `0 · ∞ = NaN` bin positions
/// and converted them with an unchecked float-to-int cast (undefined behaviour; a
/// failed debug assertion in debug builds).
#[test]
fn subnormal_coordinates_build_a_valid_bvh() {
    for name in ["subnormal_extent.stl", "bin_nan.glb"] {
        let mesh = raypick::io::load_mesh(fixture(name)).expect(name);
        assert!(mesh.triangle_count() > 0, "{name}");
        for leaf in [1, 4] {
            let options = BuildOptions {
                max_leaf_size: leaf,
                ..BuildOptions::default()
            };
            let bvh = Bvh::build_with(&mesh, &options);
            bvh.validate(&mesh)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_bvh_equals_brute_force(&mesh, &centroid_rays(&mesh), leaf);
        }
    }
}

/// Found by `bvh_vs_brute`: two copies of one large triangle (ids 1 and 13, vertices
/// ~1e11 from the ray origin) are hit at the same rounded `t`, which lies 1e-4
/// before the exact one (far beyond the box margin). Once the traversal had found
/// one copy, the other's box was entered "after" the hit and culled, so the id
/// depended on the order of traversal (the wide BVH reported 13, brute force 1).
/// The kernel now clamps `t` into the ray's interval through the triangle's padded
/// box (`cpu::intersect::place`), so it is never before a box that holds it.
#[test]
fn duplicates_hit_at_a_rounded_t_keep_the_lowest_id() {
    let a = Vec3::new(-8388608.0, -131004890000.0, 2139095000.0);
    let b = Vec3::new(-120259084000.0, 8388608.0, 3.3404678e-5);
    let c = Vec3::new(2.842171e-14, -8388608.0, 8388608.0);
    let mut triangles = vec![[a, b, b], [a, c, b]];
    triangles.extend([[b, b, b]; 10]);
    triangles.extend([[b, b, c], [a, c, b], [b, b, a], [b, a, c]]);
    let mesh = Mesh::from_triangles(&triangles);
    let ray = Ray::new(
        Vec3::new(-126575710000.0, -4.338508e-7, -6328.721),
        Vec3::new(6316622000.0, 8388608.0, 6328.721),
    );
    let [brute, ..] = trace_three(&mesh, &[ray], 1, Mode::Fast, Cull::None);
    assert_eq!(
        brute[0].prim, 1,
        "brute force takes the lower id of the tie"
    );
    for leaf in 1..=4 {
        assert_bvh_equals_brute_force(&mesh, &[ray], leaf);
    }
    // The test's own t is well off the exact one (this is what defeated the box
    // margin); the clamped t is nearer.
    use raypick::cpu::intersect::{RayFrame, candidate, test};
    let frame = RayFrame::new(&ray);
    let tri = raypick::prepare::pack_triangle([a, c, b], 1);
    let vertices = [a, c, b].map(|v| v.to_array());
    let unnormalised = test(&frame, vertices, tri.edge_norm, Mode::Fast);
    let (raw, ..) = candidate(unnormalised, &frame, Cull::None);
    let raw = (raw * frame.t_scale) as f64;
    let exact =
        raypick_testkit::reference::intersect_f64(&ray, [a, c, b], 1e-3).expect("exact hit");
    assert!((raw - exact.t).abs() > 1e-5 * exact.t, "{raw} vs {exact:?}");
    assert!(
        (brute[0].t as f64 - exact.t).abs() < (raw - exact.t).abs(),
        "{:?} vs {exact:?}",
        brute[0]
    );
    // The GPU traversal (same tree as the mirror) agrees.
    if let Some(gpu) = crate::support::gpu() {
        for mode in [Mode::Fast, Mode::Watertight] {
            let options = raypick::TraceOptions::default().with_mode(mode);
            let [brute, ..] = trace_three(&mesh, &[ray], 1, mode, Cull::None);
            let bvh = Bvh::build_with(
                &mesh,
                &BuildOptions {
                    max_leaf_size: 1,
                    ..BuildOptions::default()
                },
            );
            let uploaded = gpu.upload_bvh(std::sync::Arc::new(bvh)).expect("upload");
            let hits = gpu.trace(&uploaded, &[ray], &options).expect("trace");
            assert_eq!(hits, brute, "GPU BVH, {mode:?}");
        }
    }
}

/// Found by `bvh_vs_brute` while `t` was clamped into the triangle's unpadded box:
/// two copies of one triangle (ids 0 and 1) far from a ray with a direction of
/// ~1e11; the wide traversal reported the copy with the higher id. The clamp now
/// uses the padded box, which every BVH box that holds the triangle contains.
#[test]
fn copies_far_along_a_long_ray_keep_the_lowest_id() {
    let a = Vec3::new(-454787070.0, -1.0149233e-7, -2.3136818e-7);
    let b = Vec3::new(-1028.5, -67403780.0, -336363520.0);
    let c = Vec3::new(1.5279511e-10, -1646592.0, -523255800.0);
    let mut triangles = vec![[a, b, c], [a, b, c]];
    triangles.extend([[c, c, c]; 6]);
    triangles.extend([[b, c, a], [c, c, c]]);
    let mesh = Mesh::from_triangles(&triangles);
    let ray = Ray::new(
        Vec3::new(-6.462913e-6, -6.462913e-6, -115972506000.0),
        Vec3::new(6.4631595e-6, -1654980.6, 115449240000.0),
    );
    let [brute, ..] = trace_three(&mesh, &[ray], 1, Mode::Fast, Cull::None);
    assert_eq!(
        brute[0].prim, 0,
        "brute force takes the lower id of the tie"
    );
    for leaf in 1..=4 {
        assert_bvh_equals_brute_force(&mesh, &[ray], leaf);
    }
}

/// Found by `intersect` while `t` was clamped into the triangle's unpadded box: a ray
/// from (nearly) a vertex, with a direction of ~1.7e35 along x, whose line meets the
/// triangle's plane a hair outside it and before the origin. The kernel's `t` was
/// clamped up to the box entry, 0, which with that direction is 4e9 units from the
/// vertex the `u`, `v` point at. With the padded box the clamp leaves such
/// near-misses alone: reported hits lie where their `u`, `v` say.
#[test]
fn a_near_miss_behind_the_origin_is_not_clamped_onto_it() {
    let triangle = [
        Vec3::new(-0.016021729, -16.429688, -16.064453),
        Vec3::new(4303356000.0, -8388608.0, -8388608.0),
        Vec3::new(-8388608.0, -8388608.0, -68996300000.0),
    ];
    let ray = Ray::new(
        Vec3::new(-0.001953125, -8388608.0, -8388608.0),
        Vec3::new(-1.7014113e35, 8380203.0, 8388592.0),
    );
    let mesh = Mesh::from_triangles(&[triangle]);
    for mode in [Mode::Fast, Mode::Watertight] {
        let [brute, mirror, wide] = trace_three(&mesh, &[ray], 1, mode, Cull::None);
        assert_eq!(mirror, brute, "{mode:?}");
        assert_eq!(wide, brute, "{mode:?}");
        let hit = brute[0];
        if !hit.is_hit() {
            // A miss is right only where f64 finds no hit in the ray's interval.
            if let Some(exact) = intersect_f64(&ray, triangle, 0.0) {
                assert!(
                    exact.t < ray.tmin as f64 || exact.t > ray.tmax as f64,
                    "{mode:?}: a miss, but f64 hits at {exact:?}"
                );
            }
            continue;
        }
        let [v0, v1, v2] = triangle.map(|v| v.as_dvec3());
        let (u, v) = (hit.u as f64, hit.v as f64);
        let on_triangle = (1.0 - u - v) * v0 + u * v1 + v * v2;
        let on_ray = ray.origin.as_dvec3() + hit.t as f64 * ray.dir.as_dvec3();
        let scale = 7e10; // the largest coordinate
        assert!(
            on_triangle.distance(on_ray) < 1e-5 * scale,
            "{mode:?}: {hit:?} is {} from its u, v point",
            on_triangle.distance(on_ray)
        );
    }
}

/// Found by `bvh_vs_brute`: a ray with a direction of ~6e29 (its origin as far
/// away) through a triangle of size 0.01 near the world origin. The test reports a
/// hit at its first vertex, but the ray misses the triangle's padded box by far more
/// than rounding: the BVH (whose boxes hold that box) culled it, brute force reported
/// it. The kernel now rejects hits whose ray misses the triangle's padded box by the
/// box tests' own rule, so both agree.
#[test]
fn a_hit_outside_its_triangles_box_is_rejected_everywhere() {
    let v = [
        Vec3::new(-8388608.0, -8388608.0, 2139095000.0),
        Vec3::new(7.158e-41, -3.775218e-37, -6.462913e-6),
        Vec3::new(-6.462913e-6, -6.462913e-6, -1.2781005e-5),
        Vec3::new(-0.013530731, -6.462913e-6, -2.2919266e-10),
        Vec3::new(-8388608.0, -8388608.0, -1803550700.0),
        Vec3::new(f32::NAN, -8388608.0, -8388608.0),
        Vec3::new(0.0, -1646592.0, -1653049.1),
    ];
    let faces: [[usize; 3]; 16] = [
        [0, 0, 0],
        [1, 2, 3],
        [4, 2, 2],
        [2, 2, 2],
        [5, 5, 5],
        [5, 1, 5],
        [5, 2, 2],
        [2, 0, 0],
        [0, 2, 2],
        [2, 2, 1],
        [2, 5, 2],
        [4, 2, 2],
        [2, 2, 2],
        [2, 2, 3],
        [2, 4, 5],
        [4, 6, 0],
    ];
    let mesh = Mesh::from_triangles(&faces.map(|f| f.map(|i| v[i])));
    let ray = Ray::new(
        Vec3::new(0.0, -1.8066187e29, -5.965417e29),
        Vec3::new(-987.13605, 1.8066187e29, 5.965417e29),
    );
    for leaf in 1..=4 {
        assert_bvh_equals_brute_force(&mesh, &[ray], leaf);
    }
}

/// Found by `intersect`: a ray nearly parallel to a large sliver (direction ~1e15
/// along x) is reported as hitting it at the point its `u`, `v` name, but with a `t`
/// that puts the ray 4e12 units away along x, outside the triangle's box: the ray
/// misses that box. Such hits are now rejected (and a BVH would cull them anyway).
#[test]
fn a_near_parallel_ray_outside_the_box_misses() {
    let triangle = [
        Vec3::new(-11579904.0, -606371840.0, -606371840.0),
        Vec3::new(-741113860.0, -11308.5, -11308.5),
        Vec3::new(-11308.5, -11308.5, -0.5),
    ];
    let ray = Ray::new(
        Vec3::new(-8388608.0, -4.6629363e-15, 10579.5),
        Vec3::new(952858300000000.0, -1966080.0, -8388608.0),
    );
    let mesh = Mesh::from_triangles(&[triangle]);
    for mode in [Mode::Fast, Mode::Watertight] {
        for cull in [Cull::None, Cull::Back, Cull::Front] {
            let [brute, mirror, wide] = trace_three(&mesh, &[ray], 1, mode, cull);
            assert_eq!(brute, [Hit::MISS], "{mode:?} {cull:?}");
            assert_eq!(mirror, brute, "{mode:?} {cull:?}");
            assert_eq!(wide, brute, "{mode:?} {cull:?}");
        }
    }
}

/// Found by `bvh_vs_brute`: a ray from 1.7e38 away, parallel to the x axis after its
/// direction is scaled, towards two triangles near the world origin. Box tests stand
/// `1 / 0` in as `BIG`, which gives the x slab a finite extent shorter than the
/// 8.5e37 (frame units) the ray travels: the BVH culled the triangles while the
/// kernel, which had left parallel axes out of its box check, reported a hit. The
/// kernel now uses the very slab arithmetic of the traversals, so both miss (a
/// distance beyond the box tests' range).
#[test]
fn a_ray_from_beyond_the_box_tests_range_misses_everywhere() {
    let v = [
        Vec3::new(5.4948032e-8, -6.462913e-6, -6.462913e-6),
        Vec3::new(-6.462913e-6, -6.462913e-6, -6.556511e-6),
        Vec3::new(-6.462913e-6, -6.462913e-6, -6.462913e-6),
    ];
    let faces: [[usize; 3]; 10] = [
        [0, 0, 0],
        [1, 1, 0],
        [0, 1, 0],
        [2, 1, 0],
        [0, 0, 1],
        [2, 0, 0],
        [1, 2, 0],
        [0, 1, 1],
        [0, 0, 0],
        [0, 0, 0],
    ];
    let mesh = Mesh::from_triangles(&faces.map(|f| f.map(|i| v[i])));
    let ray = Ray::new(
        Vec3::new(6.305451e-37, -1.741445e38, -115972506000.0),
        Vec3::new(4.848512e-8, 1.741445e38, 115972506000.0),
    );
    for leaf in 1..=4 {
        assert_bvh_equals_brute_force(&mesh, &[ray], leaf);
    }
}

/// Found by `intersect`: a triangle 1e-19 across, 1e-19 from the ray origin. The
/// test's `t·det` is a product of three such lengths (1e-57) and underflows to 0,
/// so the kernel reports `t = 0` for an f64 `t` of 1.9e-23. That is the f32 range,
/// not a kernel fault: the tolerance model now bounds the error of `t` from
/// underflow (`Tolerance::t_floor`), and still rejects a `t` off by more.
#[test]
fn t_of_a_tiny_triangle_is_judged_with_its_underflow() {
    use raypick_testkit::reference::{check_kernel_hit, kernel_tolerance};
    let triangle = [
        Vec3::new(4.346469e-31, 4.346469e-31, 4.346469e-31),
        Vec3::new(4.346469e-31, 1.1947483e-19, 1.3563156e-19),
        Vec3::new(1.3563156e-19, 1.3563156e-19, 1.3563156e-19),
    ];
    let ray = Ray::new(
        Vec3::new(1.3563156e-19, 1.3563156e-19, 4.346478e-31),
        Vec3::new(-1.3563156e-19, -1.3563156e-19, 7305.2163),
    );
    let mesh = Mesh::from_triangles(&[triangle]);
    let [brute, ..] = trace_three(&mesh, &[ray], 1, Mode::Watertight, Cull::None);
    let hit = brute[0];
    assert!(hit.is_hit());
    check_kernel_hit(&ray, triangle, (hit.t, hit.u, hit.v)).expect("within the tolerance");
    // The floor is what admits it; a t off by more is still an error.
    let tolerance = kernel_tolerance(&ray, triangle);
    assert!(
        tolerance.t_floor > 1.9e-23 && tolerance.t_floor < 1e-7,
        "{tolerance:?}"
    );
    assert!(check_kernel_hit(&ray, triangle, (1e-7, hit.u, hit.v)).is_err());
}

/// Found by `intersect`: a ray nearly parallel to a sliver 2.7e11 long passes a hair
/// outside it (barycentric 1e-5, within the tolerance), so the test reports a hit;
/// that hair is 3e6 units, and the f64 plane point lies outside the triangle's
/// padded box, where the kernel clamps `t` to the box's exit. The reference now
/// judges `t` against the f64 value clamped the same way
/// (`reference::padded_box_interval`).
#[test]
fn a_near_miss_on_a_long_sliver_is_judged_at_its_box() {
    use raypick_testkit::reference::{check_kernel_hit, intersect_f64, padded_box_interval};
    let triangle = [
        Vec3::new(272722030000.0, -8388608.0, 272722030000.0),
        Vec3::new(-494927870.0, -9162981000.0, -524288.0),
        Vec3::new(-8388608.0, -23630709000.0, -8388608.0),
    ];
    let mut ray = Ray::new(
        Vec3::splat(-8388608.0),
        Vec3::new(-1933312.0, -9162981000.0, -524288.0),
    );
    (ray.tmin, ray.tmax) = (-8388608.0, 8388608.0);
    let mesh = Mesh::from_triangles(&[triangle]);
    let [brute, mirror, wide] = trace_three(&mesh, &[ray], 1, Mode::Fast, Cull::Front);
    assert_eq!(mirror, brute);
    assert_eq!(wide, brute);
    let hit = brute[0];
    assert!(hit.is_hit());
    // The plane point is outside the padded box; the kernel's t is at its exit.
    let (entry, exit) = padded_box_interval(&ray, triangle).expect("the ray crosses the box");
    let plane = intersect_f64(&ray, triangle, 1e-3).expect("a near hit");
    assert!(plane.t > exit, "{plane:?} within ({entry}, {exit})");
    assert!(
        (hit.t as f64 - exit).abs() < 1e-5 * exit,
        "{hit:?} vs exit {exit}"
    );
    check_kernel_hit(&ray, triangle, (hit.t, hit.u, hit.v)).expect("within the tolerance");
}
