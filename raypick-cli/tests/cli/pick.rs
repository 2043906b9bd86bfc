//! `raypick pick`: one screen pick gives what the library gives for the same camera
//! and pixel (`Camera::ray` traced through a `Picker`), a miss prints nulls, and bad
//! input is one error line.

use std::path::{Path, PathBuf};
use std::process::Output;

use glam::{DVec3, Vec3};
use raypick::camera::Camera;
use raypick::{Backend, Mesh, Picker, TraceOptions, io, screen};
use raypick_testkit::fixtures;
use serde_json::Value;
use tempfile::TempDir;

/// Runs `raypick pick <args..>`.
fn pick(args: &[&str]) -> Output {
    let mut all = vec!["pick"];
    all.extend(args);
    crate::support::raypick(&all, &[])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

/// Runs `raypick pick --json <args..>`, asserts success and parses the object.
fn pick_json(args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend(args);
    let output = pick(&all);
    assert!(
        output.status.success(),
        "raypick pick {all:?} failed:\n{}",
        text(&output.stderr)
    );
    serde_json::from_str(&text(&output.stdout)).expect("one JSON object")
}

/// A generated mesh written as OBJ (exact f32 coordinates), loaded back the way
/// the CLI loads it: a sphere above a ground grid.
struct ObjMesh {
    _dir: TempDir,
    path: PathBuf,
    mesh: Mesh,
}

impl ObjMesh {
    fn new() -> Self {
        let sphere = fixtures::icosphere(3, 1.0, Vec3::new(0.0, 0.0, 1.2));
        let generated = fixtures::concat(&[fixtures::grid(8, 8, 6.0), sphere]);
        let mut obj = String::new();
        for p in generated.positions() {
            obj += &format!("v {:?} {:?} {:?}\n", p.x, p.y, p.z);
        }
        for [a, b, c] in generated.indices() {
            obj += &format!("f {} {} {}\n", a + 1, b + 1, c + 1);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("scene.obj");
        std::fs::write(&path, obj).expect("write obj");
        let mesh = io::load_mesh(&path).expect("load obj");
        assert!(
            mesh.triangles().eq(generated.triangles()),
            "the OBJ round trip keeps every triangle exactly"
        );
        Self {
            _dir: dir,
            path,
            mesh,
        }
    }

    fn arg(&self) -> &str {
        self.path.to_str().expect("UTF-8 temp path")
    }
}

const EYE: Vec3 = Vec3::new(4.0, -5.0, 3.5);
const TARGET: Vec3 = Vec3::new(0.0, 0.0, 0.8);
const UP: Vec3 = Vec3::Z;
const FOV_Y_DEG: f32 = 45.0;
const SIZE: (u32, u32) = (160, 100);

/// The camera arguments `--eye .. --target .. --up .. --fov-y .. --size ..`.
fn camera_args() -> Vec<String> {
    let v = |v: Vec3| format!("{},{},{}", v.x, v.y, v.z);
    [
        "--eye",
        &v(EYE),
        "--target",
        &v(TARGET),
        "--up",
        &v(UP),
        "--fov-y",
        &FOV_Y_DEG.to_string(),
        "--size",
        &format!("{}x{}", SIZE.0, SIZE.1),
    ]
    .map(String::from)
    .to_vec()
}

fn f32_field(value: &Value, key: &str) -> f32 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number: {value}")) as f32
}

fn vec3_field(value: &Value) -> DVec3 {
    let a: Vec<f64> = value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect();
    assert_eq!(a.len(), 3, "{value}");
    DVec3::new(a[0], a[1], a[2])
}

/// Asserts that the CLI's JSON answer is the library's pick of the same ray.
fn assert_same_pick(json: &Value, expected: &screen::ScreenPick, what: &str) {
    let ray = &json["ray"];
    assert_eq!(
        vec3_field(&ray["origin"]).as_vec3(),
        expected.ray.origin,
        "{what}: ray origin"
    );
    assert_eq!(
        vec3_field(&ray["dir"]).as_vec3(),
        expected.ray.dir,
        "{what}: ray direction"
    );
    let hit = expected.hit;
    assert_eq!(json["hit"], Value::Bool(hit.is_hit()), "{what}: {json}");
    if !hit.is_hit() {
        for key in ["prim", "t", "u", "v", "point"] {
            assert!(json[key].is_null(), "{what}: {key} of a miss: {json}");
        }
        return;
    }
    assert_eq!(
        json["prim"].as_u64(),
        Some(hit.prim as u64),
        "{what}: {json}"
    );
    // Bit-identical: both trace the same ray with the same kernel.
    assert_eq!(
        (
            f32_field(json, "t"),
            f32_field(json, "u"),
            f32_field(json, "v")
        ),
        (hit.t, hit.u, hit.v),
        "{what}: {json}"
    );
    let point = vec3_field(&json["point"]);
    let expected_point = expected.point.expect("a hit has a point");
    assert!(
        point.distance(expected_point) <= 1e-9 * (1.0 + expected_point.length()),
        "{what}: point {point} vs {expected_point}"
    );
    // The point is on the ray (f32 rounding).
    let on_ray = expected.ray.at(hit.t).as_dvec3();
    assert!(point.distance(on_ray) < 1e-4, "{what}: {point} vs {on_ray}");
}

/// The library's answer: `Camera::ray` for the pixel centre, traced on the CPU.
fn library_picks(mesh: &Mesh, camera: &Camera, pixels: &[(u32, u32)]) -> Vec<screen::ScreenPick> {
    let (w, h) = SIZE;
    let rays: Vec<_> = pixels
        .iter()
        .map(|&(px, py)| camera.ray(px, py, w, h))
        .collect();
    let picker = Picker::new(Backend::Cpu).expect("CPU picker");
    let prepared = picker.upload(mesh).expect("prepare");
    screen::pick(&picker, &prepared, mesh, &rays, &TraceOptions::default()).expect("pick")
}

/// Pixels spread over the image: corners (misses past the ground), centre and
/// points on the sphere and the ground.
const PIXELS: [(u32, u32); 8] = [
    (0, 0),
    (159, 99),
    (80, 50),
    (75, 40),
    (90, 62),
    (30, 70),
    (120, 85),
    (100, 20),
];

#[test]
fn pick_matches_the_library_at_several_pixels() {
    let obj = ObjMesh::new();
    let camera = Camera::new(EYE, TARGET, UP, FOV_Y_DEG.to_radians());
    let expected = library_picks(&obj.mesh, &camera, &PIXELS);
    let mut backends = vec!["cpu"];
    if crate::support::gpu().is_some() {
        backends.push("gpu");
    }
    let (mut hits, mut misses) = (0, 0);
    for backend in backends {
        for (&(px, py), expected) in PIXELS.iter().zip(&expected) {
            let pixel = format!("{px},{py}");
            let mut args = vec!["--mesh", obj.arg(), "--pixel", &pixel, "--backend", backend];
            let camera = camera_args();
            args.extend(camera.iter().map(String::as_str));
            let json = pick_json(&args);
            assert_eq!(json["backend"], backend, "{json}");
            assert_eq!(json["pixel"], serde_json::json!([px, py]));
            assert_eq!(json["size"], serde_json::json!([SIZE.0, SIZE.1]));
            assert_eq!(json["triangles"], obj.mesh.triangle_count());
            assert_same_pick(&json, expected, &format!("{backend} pixel {pixel}"));
            if expected.hit.is_hit() {
                hits += 1;
            } else {
                misses += 1;
            }
        }
    }
    // The pixels cover both cases, the sphere and the ground.
    assert!(hits >= 5 && misses >= 1, "{hits} hits, {misses} misses");
    let sphere_first = fixtures::grid(8, 8, 6.0).triangle_count() as u32;
    assert!(
        expected
            .iter()
            .any(|p| p.hit.prim >= sphere_first && p.hit.is_hit())
    );
    assert!(expected.iter().any(|p| p.hit.prim < sphere_first));
}

#[test]
fn pick_defaults_to_the_framed_camera_of_render() {
    // No --eye/--target: the camera `raypick render` frames the mesh with, which
    // is the bench camera of the scene module.
    let mesh = fixtures::builtin_scene(3_000);
    let (w, h) = (64, 40);
    let camera = fixtures::bench_camera(mesh.bounds().expect("bounds"), w, h);
    let picker = Picker::new(Backend::Cpu).expect("CPU picker");
    let prepared = picker.upload(&mesh).expect("prepare");
    for (px, py) in [(32, 20), (10, 30), (0, 0)] {
        let ray = camera.ray(px, py, w, h);
        let expected =
            screen::pick(&picker, &prepared, &mesh, &[ray], &Default::default()).expect("pick")[0];
        let pixel = format!("{px},{py}");
        let json = pick_json(&[
            "--mesh",
            "builtin:3000",
            "--size",
            "64x40",
            "--pixel",
            &pixel,
            "--backend",
            "cpu",
        ]);
        assert_same_pick(&json, &expected, &format!("builtin pixel {pixel}"));
    }
}

#[test]
fn plain_output_is_one_line_for_a_hit_and_a_miss() {
    let obj = ObjMesh::new();
    let camera = camera_args();
    let run = |pixel: &str| {
        let mut args = vec!["--mesh", obj.arg(), "--pixel", pixel, "--backend", "cpu"];
        args.extend(camera.iter().map(String::as_str));
        let output = pick(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let camera_lib = Camera::new(EYE, TARGET, UP, FOV_Y_DEG.to_radians());
    let expected = library_picks(&obj.mesh, &camera_lib, &[(80, 50)])[0];
    let hit = run("80,50");
    assert_eq!(hit.lines().count(), 1, "{hit}");
    assert!(
        hit.starts_with("pixel 80,50 of 160x100: triangle ")
            && hit.contains(&format!(
                "triangle {} at t {}",
                expected.hit.prim, expected.hit.t
            )),
        "{hit}"
    );
    let miss = run("0,0");
    assert_eq!(miss.lines().count(), 1, "{miss}");
    assert!(miss.starts_with("pixel 0,0 of 160x100: miss"), "{miss}");
}

#[test]
fn cull_and_mode_reach_the_picker() {
    // Looking straight down at the ground grid (normal +z): culling back faces
    // keeps the hit, culling front faces loses it.
    let obj = ObjMesh::new();
    let base = [
        "--mesh",
        obj.arg(),
        "--eye",
        "2.5,2.5,5",
        "--target",
        "2.5,2.5,0",
        "--up",
        "0,1,0",
        "--size",
        "9x9",
        "--pixel",
        "4,4",
        "--backend",
        "cpu",
        "--mode",
        "fast",
    ];
    let with = |cull: &str| {
        let mut args = base.to_vec();
        args.extend(["--cull", cull]);
        pick_json(&args)
    };
    let back = with("back");
    assert_eq!(back["hit"], Value::Bool(true), "{back}");
    assert!((f32_field(&back, "t") - 5.0).abs() < 1e-5, "{back}");
    let front = with("front");
    assert_eq!(front["hit"], Value::Bool(false), "{front}");
    assert!(front["prim"].is_null());
}

/// Asserts a failure reported as one `raypick: error:` line mentioning `needle`.
fn assert_one_error_line(output: &Output, needle: &str, what: &str) {
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: expected one error line:\n{err}");
    assert!(lines[0].starts_with("raypick: error: "), "{what}: {err}");
    assert!(lines[0].contains(needle), "{what}: {needle:?} not in {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(text(&output.stdout), "", "{what}: stdout");
}

#[test]
fn bad_input_is_one_error_line() {
    let obj = ObjMesh::new();
    let missing = Path::new(obj.arg()).with_file_name("missing.obj");
    let missing = missing.to_str().expect("UTF-8");
    let cases: [(&[(&str, &str)], &str); 15] = [
        (&[("--pixel", "160,0")], "outside the 160x100 image"),
        (&[("--pixel", "0,100")], "outside"),
        (&[("--pixel", "-1,3")], "--pixel -1,3"),
        (&[("--pixel", "1.5,2")], "--pixel"),
        (&[("--pixel", "1,2,3")], "--pixel"),
        (&[("--eye", "1,2")], "--eye 1,2"),
        (&[("--target", "1,2,x")], "--target"),
        (&[("--up", "0,0,nan")], "--up"),
        (
            &[("--eye", "0,0,5"), ("--target", "0,0,0"), ("--up", "0,0,1")],
            "up vector",
        ),
        (
            &[("--eye", "1,1,1"), ("--target", "1,1,1")],
            "eye and target",
        ),
        (&[("--fov-y", "0")], "field of view"),
        (&[("--fov-y", "180")], "field of view"),
        (&[("--fov-y", "-30")], "field of view"),
        (&[("--size", "0x10")], "--size"),
        (&[("--mesh", missing)], "missing.obj"),
    ];
    let mut defaults = vec![
        ("--mesh".to_string(), obj.arg().to_string()),
        ("--pixel".into(), "1,1".into()),
        ("--backend".into(), "cpu".into()),
    ];
    for pair in camera_args().chunks(2) {
        defaults.push((pair[0].clone(), pair[1].clone()));
    }
    for (overrides, needle) in cases {
        // `--flag=value`, so values starting with '-' stay values.
        let args: Vec<String> = defaults
            .iter()
            .map(|(flag, value)| {
                let value = overrides
                    .iter()
                    .find(|(f, _)| f == flag)
                    .map_or(value.as_str(), |(_, v)| v);
                format!("{flag}={value}")
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_one_error_line(&pick(&args), needle, &format!("{overrides:?}"));
    }
}
