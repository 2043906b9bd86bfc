//! Geometry far from the origin (`raypick::world`): a mesh given in f64 is stored
//! relative to a mesh-local origin, and rays are moved into that frame in f64, so a
//! scene shifted by 1e5, 1e6 or 1e7 units picks exactly like the unshifted one, on
//! every backend, through the library (the command line: `raypick-cli`'s tests).
//!
//! The measured precision against an f64 reference, with and without rebasing, is
//! printed by `precision_against_f64_reference_with_and_without_rebasing`
//! (`cargo test --release -p raypick --test main -- --nocapture precision`).

use std::sync::OnceLock;

use glam::DVec3;
use proptest::prelude::*;
use raypick::{Accel, Backend, Hit, Picker, Ray64, TraceOptions};
use raypick_testkit::parity::assert_bits_equal as assert_identical;
use raypick_testkit::reference::{intersect_world, nearest_world};
use raypick_testkit::world::{SHIFTS, WorldFixture, shift_vector, trace64};

/// The pickers to test: the CPU always, the GPU when there is one (or required).
fn pickers() -> Vec<(&'static str, &'static Picker)> {
    static CPU: OnceLock<Picker> = OnceLock::new();
    static GPU: OnceLock<Option<Picker>> = OnceLock::new();
    let mut all = vec![(
        "cpu",
        CPU.get_or_init(|| Picker::new(Backend::Cpu).expect("CPU picker")),
    )];
    if crate::support::gpu().is_some() {
        let gpu = GPU.get_or_init(|| Some(Picker::new(Backend::Gpu).expect("GPU picker")));
        all.extend(gpu.as_ref().map(|p| ("gpu", p)));
    }
    all
}

#[test]
fn shifted_scenes_give_bit_identical_hits_on_every_backend() {
    let scene = WorldFixture::new(7, 1500, 3, 3000);
    let base = scene.rebased_mesh();
    assert_eq!(
        base.origin(),
        DVec3::ZERO,
        "bounds around zero keep origin 0"
    );
    for (name, picker) in pickers() {
        for accel in [Accel::Brute, Accel::Bvh] {
            let want = trace64(picker, &base, accel, &scene.rays);
            assert!(want.iter().filter(|h| h.is_hit()).count() > scene.rays.len() / 4);
            for s in SHIFTS {
                let shift = shift_vector(s);
                let moved = scene.shifted(shift);
                let mesh = moved.rebased_mesh();
                assert_eq!(mesh.origin(), shift, "the origin moves with the scene");
                assert_eq!(mesh.positions(), base.positions(), "same local vertices");
                let got = trace64(picker, &mesh, accel, &moved.rays);
                assert_identical(&got, &want, &format!("{name} {accel:?} shift {s:e}"));
                // f32 rays are moved into the mesh's frame in f64 too: an f32 ray
                // hits like the f64 ray of the same (exactly widened) values.
                let f32_rays = moved.absolute_rays();
                assert_eq!(f32_rays.len(), moved.rays.len());
                let widened: Vec<Ray64> = f32_rays.iter().map(|r| Ray64::from(*r)).collect();
                let want_f32 = trace64(picker, &mesh, accel, &widened);
                assert!(want_f32.iter().any(|h| h.is_hit()), "{name}: f32 rays miss");
                let uploaded = picker.upload_with(&mesh, accel).expect("upload");
                let f32_hits = picker
                    .trace(&uploaded, &f32_rays, &TraceOptions::default())
                    .expect("trace");
                assert_identical(&f32_hits, &want_f32, &format!("{name} f32 rays {s:e}"));
            }
        }
    }
}

/// How a traced batch compares with the f64 reference.
#[derive(Debug, Default)]
struct Accuracy {
    /// Rays whose triangle (or miss) differs from the reference.
    wrong: usize,
    /// Of those, the ones on an edge or a tie (within 1e-5 barycentric or 1e-6
    /// relative t of the reference), where f32 may legitimately decide otherwise.
    edge_ties: usize,
    /// Largest |t - t_ref| over rays that hit the reference's triangle.
    max_dt: f64,
    /// Largest |t - t_ref| / |t_ref| over the same rays.
    max_rel_dt: f64,
}

fn accuracy(scene: &WorldFixture, hits: &[Hit]) -> Accuracy {
    const EDGE: f64 = 1e-5;
    let mut acc = Accuracy::default();
    for (ray, hit) in scene.rays.iter().zip(hits) {
        assert!(!hit.t.is_nan() && !hit.u.is_nan() && !hit.v.is_nan());
        let reference = nearest_world(&scene.positions, &scene.indices, ray);
        let tri = |k: u32| scene.indices[k as usize].map(|i| scene.positions[i as usize]);
        match reference {
            Some((k, r)) if hit.prim == k => {
                let dt = (f64::from(hit.t) - r.t).abs();
                acc.max_dt = acc.max_dt.max(dt);
                acc.max_rel_dt = acc.max_rel_dt.max(dt / r.t.abs().max(f64::MIN_POSITIVE));
            }
            None if !hit.is_hit() => {}
            _ => {
                acc.wrong += 1;
                let near_edge = |u: f64, v: f64| u.min(v).min(1.0 - u - v) < EDGE;
                let reference_on_edge = reference.is_some_and(|(_, r)| near_edge(r.u, r.v));
                let hit_on_edge_or_tie = hit.is_hit()
                    && intersect_world(ray, tri(hit.prim), EDGE).is_some_and(|h| {
                        near_edge(h.u, h.v)
                            || reference.is_some_and(|(_, r)| (h.t - r.t).abs() <= 1e-6 * r.t.abs())
                    });
                if reference_on_edge || hit_on_edge_or_tie {
                    acc.edge_ties += 1;
                }
            }
        }
    }
    acc
}

#[test]
fn precision_against_f64_reference_with_and_without_rebasing() {
    let scene = WorldFixture::new(11, 3000, 3, 4000);
    let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
    let options = TraceOptions::default();
    println!(
        "{} triangles, {} rays, CPU brute force, watertight test; wrong = triangle differs \
         from the f64 reference (edge/tie cases in parentheses)",
        scene.indices.len(),
        scene.rays.len()
    );
    println!(
        "shift      rebased: wrong  max|dt|    max|dt|/t   absolute f32: wrong  max|dt|    max|dt|/t"
    );
    for s in [0.0].into_iter().chain(SHIFTS) {
        let moved = scene.shifted(shift_vector(s));
        let rebased = cpu
            .upload_with(&moved.rebased_mesh(), Accel::Brute)
            .expect("upload");
        let rebased = accuracy(&moved, &cpu.trace(&rebased, &moved.rays, &options).unwrap());
        let absolute = cpu
            .upload_with(&moved.absolute_mesh(), Accel::Brute)
            .expect("upload");
        let absolute = accuracy(
            &moved,
            &cpu.trace(&absolute, &moved.absolute_rays(), &options)
                .unwrap(),
        );
        println!(
            "{s:<9.0e}  {:>6} ({:>4})  {:<9.3e}  {:<9.3e}   {:>6} ({:>4})  {:<9.3e}  {:.3e}",
            rebased.wrong,
            rebased.edge_ties,
            rebased.max_dt,
            rebased.max_rel_dt,
            absolute.wrong,
            absolute.edge_ties,
            absolute.max_dt,
            absolute.max_rel_dt
        );
        assert_eq!(
            rebased.wrong, rebased.edge_ties,
            "shift {s:e}: rebased hits disagree with f64 beyond edges and ties"
        );
        assert!(rebased.max_dt < 1e-4, "shift {s:e}: {rebased:?}");
        if s >= 1e6 {
            // Without rebasing, f32 cannot even hold the scene: this is what the
            // local origin is for.
            assert!(absolute.wrong > 10 * (rebased.wrong + 1), "{absolute:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Translating scene and rays together (by multiples of the grid step, exactly in
    /// f64) leaves every hit unchanged.
    #[test]
    fn translating_scene_and_rays_together_leaves_hits_unchanged(
        seed in any::<u64>(),
        steps in prop::array::uniform3(-400_000i64..400_000),
    ) {
        let scene = WorldFixture::new(seed, 60, 1, 96);
        let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
        let shift = DVec3::new(steps[0] as f64, steps[1] as f64, steps[2] as f64) * 32.0;
        let want = trace64(&cpu, &scene.rebased_mesh(), Accel::Brute, &scene.rays);
        let moved = scene.shifted(shift);
        let got = trace64(&cpu, &moved.rebased_mesh(), Accel::Brute, &moved.rays);
        prop_assert_eq!(got, want);
    }
}
