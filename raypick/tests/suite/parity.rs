//! Parity of every engine (CPU/GPU × BVH/brute force, and the GPU's ray queries
//! where it has them) with CPU brute force: 100k rays per case (random, incoherent and adversarial: aimed at
//! vertices and edge midpoints, parallel to triangles, starting on the surface, t
//! exactly at tmin/tmax, NaN/inf/zero components) over several meshes with degenerate
//! triangles, in every culling mode. Every hit on both backends also obeys the hit
//! contract. Both ray–triangle tests (watertight and fast).

use crate::support::{CPU_BRUTE, CPU_BVH, assert_contracts, compare, engines, trace_with};
use glam::Vec3;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Cull, Hit, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

pub(crate) fn meshes() -> Vec<(&'static str, Mesh)> {
    let mut rng = Rng::new(11);
    let soup = fixtures::soup(1_500, &mut rng, (Vec3::splat(-2.0), Vec3::splat(2.0)));
    vec![
        ("soup", fixtures::with_degenerates(&soup, &mut rng, 40)),
        (
            "icosphere",
            fixtures::icosphere(3, 1.5, Vec3::new(0.1, -0.2, 0.3)),
        ),
        (
            "grid",
            fixtures::with_degenerates(&fixtures::grid(24, 24, 3.0), &mut rng, 10),
        ),
    ]
}

pub(crate) fn rays_for(mesh: &Mesh, seed: u64) -> Vec<Ray> {
    let mut rng = Rng::new(seed);
    let bounds = mesh.bounds().expect("mesh has finite vertices");
    let mut rays = fixtures::random_rays(40_000, &mut rng, bounds);
    rays.extend(fixtures::incoherent_rays(20_000, &mut rng, bounds));
    rays.extend(fixtures::adversarial_rays(mesh, &mut rng, 40_000));
    rays
}

fn parity_case(cull: Cull, mode: Mode) {
    let options = TraceOptions::default().with_cull(cull).with_mode(mode);
    for (seed, (name, mesh)) in meshes().into_iter().enumerate() {
        let rays = rays_for(&mesh, 100 + seed as u64);
        assert!(rays.len() >= 100_000);
        let oracle = trace_with(CPU_BRUTE, &mesh, &rays, &options);
        assert_contracts(&mesh, &rays, &oracle);
        let hits = oracle.iter().filter(|h| h.is_hit()).count();
        assert!(
            hits > rays.len() / 10,
            "{name}: only {hits} hits, the rays miss the mesh"
        );
        for engine in engines().into_iter().filter(|&e| e != CPU_BRUTE) {
            let got = trace_with(engine, &mesh, &rays, &options);
            assert_contracts(&mesh, &rays, &got);
            compare(&mesh, &rays, &oracle, &got)
                .assert_identical(&format!("{name} cull={cull:?} mode={mode:?} {engine:?}"));
        }
    }
}

#[test]
fn parity_double_sided() {
    parity_case(Cull::None, Mode::Watertight);
}

#[test]
fn parity_cull_back() {
    parity_case(Cull::Back, Mode::Watertight);
}

#[test]
fn parity_cull_front() {
    parity_case(Cull::Front, Mode::Watertight);
}

#[test]
fn parity_fast_double_sided() {
    parity_case(Cull::None, Mode::Fast);
}

#[test]
fn parity_fast_cull_back() {
    parity_case(Cull::Back, Mode::Fast);
}

#[test]
fn parity_fast_cull_front() {
    parity_case(Cull::Front, Mode::Fast);
}

/// Brute force walks its triangles a tile of some thousands at a time for a group
/// of rays. On a mesh of many tiles whose every triangle comes again, exactly, in
/// a later tile (a whole number of 16- and 8-triangle blocks later, so in the
/// same vector lane), the rays (more than fill whole groups) get the BVH's hits,
/// each on the lower id of the two copies, and the same hits when traced one per
/// call.
#[test]
fn brute_force_tiles_give_the_lowest_id_across_tiles() {
    let mut rng = Rng::new(0xB7);
    let soup = fixtures::soup(9_008, &mut rng, (Vec3::splat(-2.0), Vec3::splat(2.0)));
    let copies = soup.triangle_count();
    assert_eq!(
        copies % 16,
        0,
        "the copies are a whole number of blocks apart"
    );
    let mesh = fixtures::concat(&[soup.clone(), soup]);
    let bounds = mesh.bounds().expect("mesh has finite vertices");
    let mut rays = fixtures::random_rays(3_007, &mut rng, bounds);
    rays.extend(fixtures::adversarial_rays(&mesh, &mut rng, 2_000));
    let options = TraceOptions::default();
    let brute = trace_with(CPU_BRUTE, &mesh, &rays, &options);
    let hits = brute.iter().filter(|h| h.is_hit()).count();
    assert!(
        hits > rays.len() / 10,
        "only {hits} hits, the rays miss the mesh"
    );
    let second_copy = brute
        .iter()
        .filter(|h| h.is_hit() && h.prim as usize >= copies)
        .count();
    assert_eq!(second_copy, 0, "hits on the second copy of a triangle");
    let bvh = trace_with(CPU_BVH, &mesh, &rays, &options);
    compare(&mesh, &rays, &bvh, &brute).assert_identical("brute force in tiles against the BVH");
    let cpu = CpuBackend::with_threads(1).expect("a CPU pool");
    let blocks = CpuMesh::with_accel(&mesh, Accel::Brute);
    let one_per_call: Vec<Hit> = rays
        .iter()
        .map(|ray| cpu.trace(&blocks, std::slice::from_ref(ray), &options)[0])
        .collect();
    compare(&mesh, &rays, &brute, &one_per_call).assert_identical("brute force one ray per call");
}

/// wgpu's OpenGL API, the one a machine with Mesa's OpenGL driver but no Vulkan
/// driver gets, gives the CPU's hits on both structures. Raypick only starts OpenGL
/// when no other API has an adapter, so the shared test GPU never runs on it; this
/// opens it by name, where an OpenGL device opens (required by
/// `RAYPICK_REQUIRE_GL=1`) and `WGPU_BACKEND` allows it.
#[test]
fn the_opengl_api_gives_the_same_hits() {
    use raypick::gpu::{AdapterKinds, GpuContext, GpuOptions};
    use raypick::{Accel, Error};
    if wgpu::Backends::from_env().is_some_and(|b| !b.contains(wgpu::Backends::GL)) {
        return;
    }
    let gl = match GpuContext::with_options(GpuOptions {
        backends: Some(wgpu::Backends::GL),
        adapters: Some(AdapterKinds::Any),
        ..GpuOptions::default()
    }) {
        Ok(gl) => gl,
        Err(e) if !raypick_testkit::gpu::gl_required() => {
            let why = match e {
                Error::NoAdapter(_) => "no OpenGL adapter".to_string(),
                e => format!("an OpenGL adapter is listed but does not open: {e}"),
            };
            eprintln!("skipping: {why} (set RAYPICK_REQUIRE_GL=1 to make this an error)");
            return;
        }
        Err(e) => panic!("RAYPICK_REQUIRE_GL=1 but no OpenGL device opens: {e}"),
    };
    assert_eq!(gl.adapter().backend, "Gl");
    let (name, mesh) = meshes().swap_remove(0);
    let rays = rays_for(&mesh, 100);
    for (cull, mode) in [(Cull::None, Mode::Watertight), (Cull::Back, Mode::Fast)] {
        let options = TraceOptions::default().with_cull(cull).with_mode(mode);
        let oracle = trace_with(CPU_BRUTE, &mesh, &rays, &options);
        for accel in [Accel::Bvh, Accel::Brute] {
            let uploaded = gl.upload_with(&mesh, accel).unwrap();
            let got = gl.trace(&uploaded, &rays, &options).unwrap();
            compare(&mesh, &rays, &oracle, &got).assert_identical(&format!(
                "{name} cull={cull:?} mode={mode:?} OpenGL {accel:?}"
            ));
        }
    }
}
