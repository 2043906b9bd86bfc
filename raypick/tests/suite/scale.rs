//! A scene and its rays scaled together by a power of two give the same answers,
//! bit for bit, on every engine, while the coordinates stay well inside f32's
//! normal range: every operation of the tests scales exactly. Tiny scenes
//! included, where a test's products of three offsets would fall below the normal
//! range: such triangles are tested on offsets scaled back up (contracts §1.3), so
//! the CPU keeps its precision there and a GPU that flushes subnormal numbers to
//! zero gives the CPU's answers.

use crate::support::{CPU_BRUTE, engines, trace_with};
use glam::Vec3;
use raypick::{Cull, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};
use raypick_testkit::parity::identical;

/// The powers of two tried: down to where the padding of the BVH's boxes
/// (`f32::MIN_POSITIVE` on top of a relative margin) would stop scaling exactly,
/// and up to where a test's products of three coordinates stay finite.
const SCALES: [i32; 11] = [-80, -64, -50, -42, -39, -37, -30, -12, 1, 12, 30];

fn scaled_mesh(mesh: &Mesh, scale: f32) -> Mesh {
    let positions = mesh.positions().iter().map(|&p| p * scale).collect();
    Mesh::new(positions, mesh.indices().to_vec()).expect("a scaled mesh is valid")
}

/// Origins and directions scaled, so that `t` keeps its meaning.
fn scaled_rays(rays: &[Ray], scale: f32) -> Vec<Ray> {
    rays.iter()
        .map(|ray| Ray {
            origin: ray.origin * scale,
            dir: ray.dir * scale,
            ..*ray
        })
        .collect()
}

fn scenes(rng: &mut Rng) -> Vec<(&'static str, Mesh)> {
    let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
    vec![
        (
            "icosphere",
            fixtures::icosphere(2, 1.0, Vec3::new(0.3, -0.2, 0.1)),
        ),
        ("soup", fixtures::soup(300, rng, unit)),
        ("grid", fixtures::grid(12, 12, 2.0)),
    ]
}

#[test]
fn scaling_by_powers_of_two_changes_no_answer() {
    let mut rng = Rng::new(2);
    let mut failures = Vec::new();
    let mut compared = 0usize;
    for (name, mesh) in scenes(&mut rng) {
        let bounds = mesh.bounds().expect("a mesh with triangles");
        let mut rays = fixtures::incoherent_rays(1_500, &mut rng, bounds);
        rays.extend(fixtures::adversarial_rays(&mesh, &mut rng, 1_500));
        for mode in [Mode::Watertight, Mode::Fast] {
            for cull in [Cull::None, Cull::Back] {
                let options = TraceOptions::default().with_mode(mode).with_cull(cull);
                let reference = trace_with(CPU_BRUTE, &mesh, &rays, &options);
                let hits = reference.iter().filter(|h| h.is_hit()).count();
                assert!(hits > rays.len() / 5, "{name}: only {hits} hits to compare");
                for exponent in SCALES {
                    let scale = 2f32.powi(exponent);
                    let (mesh, rays) = (scaled_mesh(&mesh, scale), scaled_rays(&rays, scale));
                    for engine in engines() {
                        let got = trace_with(engine, &mesh, &rays, &options);
                        compared += got.len();
                        let differ: Vec<usize> = (0..got.len())
                            .filter(|&i| !identical(&got[i], &reference[i]))
                            .collect();
                        if let Some(&i) = differ.first() {
                            failures.push(format!(
                                "{name} 2^{exponent} {mode:?} {cull:?} {engine:?}: {} of {} rays \
                                 differ; first {i}: {:?} at scale 1 {:?}, scaled {:?}",
                                differ.len(),
                                got.len(),
                                rays[i],
                                reference[i],
                                got[i]
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("{compared} hits compared");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
