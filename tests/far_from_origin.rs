//! Geometry far from the origin (`raypick::world`): a mesh given in f64 is stored
//! relative to a mesh-local origin, and rays are moved into that frame in f64, so a
//! scene shifted by 1e5, 1e6 or 1e7 units picks exactly like the unshifted one, on
//! every backend, through the library and the command line.
//!
//! The measured precision against an f64 reference, with and without rebasing, is
//! printed by `precision_against_f64_reference_with_and_without_rebasing`
//! (`cargo test --release --test far_from_origin -- --nocapture precision`).

mod common;

use std::sync::OnceLock;

use glam::{DVec3, Vec3};
use proptest::prelude::*;
use raypick::cpu::CpuBackend;
use raypick::reference::{intersect_world, nearest_world};
use raypick::scene::{self, Rng};
use raypick::{Accel, Backend, Hit, Mesh, Picker, Ray, Ray64, TraceOptions, io};

/// The shifts the far-from-origin tests use. Each is a multiple of 32, the grid step
/// of the test scene (at most 32 units wide), and every shifted coordinate of the
/// scene (a multiple of 2^-18 below 64 in magnitude) stays exact in f64.
const SHIFTS: [f64; 3] = [1e5, 1e6, 1e7];

/// Coordinates are multiples of this, so shifts up to 2^30 stay exact in f64 and
/// the unshifted coordinates are exact in f32.
const QUANTUM: f64 = 1.0 / (1 << 18) as f64;

fn quantize(p: DVec3) -> DVec3 {
    (p / QUANTUM).round() * QUANTUM
}

/// A shift vector of magnitude `s` on every axis, with mixed signs.
fn shift_vector(s: f64) -> DVec3 {
    DVec3::new(s, -s, s)
}

/// A scene in f64: positions and triangles (a sphere and a triangle soup in
/// `[-10, 10]^3`, coordinates quantized), and rays around and through it.
struct Scene {
    positions: Vec<DVec3>,
    indices: Vec<[u32; 3]>,
    rays: Vec<Ray64>,
}

impl Scene {
    fn new(seed: u64, soup: usize, sphere_subdivisions: u32, rays: usize) -> Self {
        let mut rng = Rng::new(seed);
        let bounds = (Vec3::splat(-10.0), Vec3::splat(10.0));
        let mesh = scene::concat(&[
            scene::icosphere(sphere_subdivisions, 4.0, Vec3::new(1.0, -0.5, 0.25)),
            scene::soup(soup, &mut rng, bounds),
        ]);
        let positions = mesh
            .positions()
            .iter()
            .map(|p| quantize(p.as_dvec3()))
            .collect();
        let mut f32_rays = scene::incoherent_rays(rays / 2, &mut rng, bounds);
        f32_rays.extend(scene::random_rays(rays - rays / 2, &mut rng, bounds));
        let rays = f32_rays
            .iter()
            .map(|r| {
                let mut ray = Ray64::from(*r);
                ray.origin = quantize(ray.origin);
                ray
            })
            .collect();
        Self {
            positions,
            indices: mesh.indices().to_vec(),
            rays,
        }
    }

    /// The same scene moved by `shift` (exactly: every sum is representable).
    fn shifted(&self, shift: DVec3) -> Self {
        let positions: Vec<DVec3> = self.positions.iter().map(|&p| p + shift).collect();
        for (p, q) in self.positions.iter().zip(&positions) {
            assert_eq!(*q - shift, *p, "the shift must be exact");
        }
        Self {
            positions,
            indices: self.indices.clone(),
            rays: self
                .rays
                .iter()
                .map(|r| Ray64 {
                    origin: r.origin + shift,
                    ..*r
                })
                .collect(),
        }
    }

    fn rebased_mesh(&self) -> Mesh {
        Mesh::from_f64(&self.positions, self.indices.clone()).expect("valid mesh")
    }

    /// The mesh in absolute f32 coordinates (no rebasing).
    fn absolute_mesh(&self) -> Mesh {
        let positions = self.positions.iter().map(|p| p.as_vec3()).collect();
        Mesh::new(positions, self.indices.clone()).expect("valid mesh")
    }

    /// The rays in absolute f32 coordinates.
    fn absolute_rays(&self) -> Vec<Ray> {
        self.rays
            .iter()
            .map(|r| {
                Ray::with_interval(
                    r.origin.as_vec3(),
                    r.dir.as_vec3(),
                    r.tmin as f32,
                    r.tmax as f32,
                )
            })
            .collect()
    }
}

/// The pickers to test: the CPU always, the GPU when there is one (or required).
fn pickers() -> Vec<(&'static str, &'static Picker)> {
    static CPU: OnceLock<Picker> = OnceLock::new();
    static GPU: OnceLock<Option<Picker>> = OnceLock::new();
    let mut all = vec![(
        "cpu",
        CPU.get_or_init(|| Picker::from_cpu(CpuBackend::new())),
    )];
    if common::gpu().is_some() {
        let gpu = GPU.get_or_init(|| Some(Picker::new(Backend::Gpu).expect("GPU picker")));
        all.extend(gpu.as_ref().map(|p| ("gpu", p)));
    }
    all
}

fn trace64(picker: &Picker, mesh: &Mesh, accel: Accel, rays: &[Ray64]) -> Vec<Hit> {
    let uploaded = picker.upload_with(mesh, accel).expect("upload");
    picker
        .trace64(&uploaded, rays, &TraceOptions::default())
        .expect("trace")
}

fn assert_identical(got: &[Hit], want: &[Hit], context: &str) {
    assert_eq!(got.len(), want.len());
    let bits = |h: &Hit| (h.t.to_bits(), h.u.to_bits(), h.v.to_bits(), h.prim);
    let differing: Vec<usize> = (0..got.len())
        .filter(|&i| bits(&got[i]) != bits(&want[i]))
        .collect();
    assert!(
        differing.is_empty(),
        "{context}: {} of {} rays differ, first: ray {} got {:?}, want {:?}",
        differing.len(),
        got.len(),
        differing[0],
        got[differing[0]],
        want[differing[0]]
    );
}

#[test]
fn shifted_scenes_give_bit_identical_hits_on_every_backend() {
    let scene = Scene::new(7, 1500, 3, 3000);
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
                // f32 rays are moved into the mesh's frame in f64 too: rays whose
                // absolute coordinates are exact in f32 give the same hits.
                let exact: Vec<usize> = (0..moved.rays.len())
                    .filter(|&i| moved.rays[i].origin.as_vec3().as_dvec3() == moved.rays[i].origin)
                    .collect();
                let f32_rays: Vec<Ray> = exact.iter().map(|&i| moved.absolute_rays()[i]).collect();
                let uploaded = picker.upload_with(&mesh, accel).expect("upload");
                let f32_hits = picker
                    .trace(&uploaded, &f32_rays, &TraceOptions::default())
                    .expect("trace");
                let want_exact: Vec<Hit> = exact.iter().map(|&i| want[i]).collect();
                assert_identical(&f32_hits, &want_exact, &format!("{name} f32 rays {s:e}"));
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
}

fn accuracy(scene: &Scene, hits: &[Hit]) -> Accuracy {
    const EDGE: f64 = 1e-5;
    let mut acc = Accuracy::default();
    for (ray, hit) in scene.rays.iter().zip(hits) {
        assert!(!hit.t.is_nan() && !hit.u.is_nan() && !hit.v.is_nan());
        let reference = nearest_world(&scene.positions, &scene.indices, ray);
        let tri = |k: u32| scene.indices[k as usize].map(|i| scene.positions[i as usize]);
        match reference {
            Some((k, r)) if hit.prim == k => {
                acc.max_dt = acc.max_dt.max((f64::from(hit.t) - r.t).abs());
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
    let scene = Scene::new(11, 3000, 3, 4000);
    let cpu = Picker::from_cpu(CpuBackend::new());
    let options = TraceOptions::default();
    println!(
        "{} triangles, {} rays, CPU brute force, watertight test; wrong = triangle differs \
         from the f64 reference (edge/tie cases in parentheses)",
        scene.indices.len(),
        scene.rays.len()
    );
    println!("shift      rebased: wrong  max|dt|      absolute f32: wrong  max|dt|");
    for s in [0.0].into_iter().chain(SHIFTS) {
        let moved = scene.shifted(shift_vector(s));
        let rebased = cpu
            .upload_with(&moved.rebased_mesh(), Accel::Brute)
            .expect("upload");
        let rebased = accuracy(
            &moved,
            &cpu.trace64(&rebased, &moved.rays, &options).unwrap(),
        );
        let absolute = cpu
            .upload_with(&moved.absolute_mesh(), Accel::Brute)
            .expect("upload");
        let absolute = accuracy(
            &moved,
            &cpu.trace(&absolute, &moved.absolute_rays(), &options)
                .unwrap(),
        );
        println!(
            "{s:<9.0e}  {:>6} ({:>4})  {:<11.3e}  {:>6} ({:>4})  {:.3e}",
            rebased.wrong,
            rebased.edge_ties,
            rebased.max_dt,
            absolute.wrong,
            absolute.edge_ties,
            absolute.max_dt
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

#[test]
fn cli_traces_float64_rays_far_from_the_origin_like_the_library() {
    let scene = Scene::new(3, 300, 2, 400);
    let dir = tempfile::tempdir().expect("temp dir");
    let cpu = Picker::from_cpu(CpuBackend::new());
    let mut outputs = Vec::new();
    for s in [0.0, 1e6] {
        let moved = scene.shifted(shift_vector(s));
        let mesh_path = dir.path().join(format!("mesh-{s}.obj"));
        let rays_path = dir.path().join(format!("rays-{s}.npy"));
        let out = dir.path().join(format!("hits-{s}.hits"));
        let mut obj = String::new();
        for p in &moved.positions {
            obj += &format!("v {} {} {}\n", p.x, p.y, p.z);
        }
        for [a, b, c] in &moved.indices {
            obj += &format!("f {} {} {}\n", a + 1, b + 1, c + 1);
        }
        std::fs::write(&mesh_path, obj).expect("write obj");
        let rows: Vec<[f64; 8]> = moved
            .rays
            .iter()
            .map(|r| {
                let (o, d) = (r.origin, r.dir);
                [o.x, o.y, o.z, r.tmin, d.x, d.y, d.z, r.tmax]
            })
            .collect();
        std::fs::write(&rays_path, common::files::npy_f64_rays(&rows)).expect("write rays");
        let output = common::cli::trace(&mesh_path, &rays_path, &out, &["--backend", "cpu"], &[]);
        common::cli::success(&output);
        let hits = io::read_hits(&out).expect("read hits");
        let want = trace64(&cpu, &moved.rebased_mesh(), Accel::Bvh, &moved.rays);
        assert_identical(&hits, &want, &format!("CLI vs library, shift {s:e}"));
        outputs.push(std::fs::read(&out).expect("hits file"));
    }
    assert!(
        outputs[0] == outputs[1],
        "the shifted scene's hit file differs from the unshifted one"
    );
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
        let scene = Scene::new(seed, 60, 1, 96);
        let cpu = Picker::from_cpu(CpuBackend::new());
        let shift = DVec3::new(steps[0] as f64, steps[1] as f64, steps[2] as f64) * 32.0;
        let want = trace64(&cpu, &scene.rebased_mesh(), Accel::Brute, &scene.rays);
        let moved = scene.shifted(shift);
        let got = trace64(&cpu, &moved.rebased_mesh(), Accel::Brute, &moved.rays);
        prop_assert_eq!(got, want);
    }
}
