//! `raypick trace` on the kit's glTF and PLY files, and on a broken STL.

use std::path::Path;
use std::process::Output;

use glam::Vec3;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::io;
use raypick::{Accel, Ray, TraceOptions};
use raypick_testkit::files::mesh_file as fixture;
use tempfile::TempDir;

/// `raypick trace --mesh <mesh> --rays <rays> --out <out> --backend cpu`.
fn trace(mesh: &Path, rays: &Path, out: &Path) -> Output {
    crate::support::trace(mesh, rays, out, &["--backend", "cpu"], &[])
}

#[test]
fn trace_reads_gltf_and_ply_meshes() {
    let dir = TempDir::new().unwrap();
    // Rays straight down through a grid over both quads.
    let rays: Vec<Ray> = (0..12)
        .flat_map(|i| (0..8).map(move |j| (i, j)))
        .map(|(i, j)| {
            let origin = Vec3::new(0.03 + 0.23 * i as f32, 0.05 + 0.23 * j as f32, 10.0);
            Ray::new(origin, Vec3::NEG_Z)
        })
        .collect();
    let rays_path = dir.path().join("rays.rays");
    io::write_rays(&rays_path, &rays).unwrap();
    for name in ["quads.glb", "quads_embedded.gltf", "quads_binary_be.ply"] {
        let out = dir.path().join(format!("{name}.hits"));
        let output = trace(&fixture(name), &rays_path, &out);
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mesh = io::load_mesh(fixture(name)).unwrap();
        let expected = CpuBackend::new().trace(
            &CpuMesh::with_accel(&mesh, Accel::Brute),
            &rays,
            &TraceOptions::default(),
        );
        let hits = io::read_hits(&out).unwrap();
        assert_eq!(hits, expected, "{name}");
        let hit_prims: std::collections::BTreeSet<u32> =
            hits.iter().filter(|h| h.is_hit()).map(|h| h.prim).collect();
        assert_eq!(
            hit_prims.into_iter().collect::<Vec<_>>(),
            [0, 1, 2, 3],
            "{name}"
        );
    }
}

#[test]
fn trace_with_a_broken_stl_fails_with_one_line_naming_the_file() {
    let dir = TempDir::new().unwrap();
    let mut bytes = std::fs::read(fixture("quads_binary.stl")).unwrap();
    bytes.truncate(bytes.len() - 7);
    let mesh = dir.path().join("broken.stl");
    std::fs::write(&mesh, bytes).unwrap();
    let rays = dir.path().join("rays.rays");
    io::write_rays(&rays, &[Ray::new(Vec3::Z, Vec3::NEG_Z)]).unwrap();
    let out = dir.path().join("out.hits");
    let output = trace(&mesh, &rays, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("broken.stl") && lines[0].contains("truncated binary STL"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out.exists());
}
