//! The `raypick` command line: `trace` writes the same hits as the library, `--json`
//! reports what it should, bad input gives one error line and no output file, and
//! `bench` runs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{assert_error, raypick, stderr, success, trace};

use glam::Vec3;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Cull, Hit, Mesh, Ray, TraceOptions, io};
use serde_json::Value;
use tempfile::TempDir;

/// Three unit-ish quads stacked in z (6 triangles after fan triangulation):
/// `z = 0` facing +z, `z = 1` (shifted by 0.5 in x) facing -z, `z = 2` (small)
/// facing +z.
const OBJ: &str = "\
# three quads
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0.5 0 1
v 1.5 0 1
v 1.5 1 1
v 0.5 1 1
v 0.25 0.25 2
v 0.75 0.25 2
v 0.75 0.75 2
v 0.25 0.75 2
f 1 2 3 4
f 8 7 6 5
f 9 10 11 12
";

/// A temp dir holding `mesh.obj` and `rays.rays`, and what they hold.
struct Fixture {
    dir: TempDir,
    mesh: Mesh,
    rays: Vec<Ray>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("mesh.obj"), OBJ).expect("write obj");
        // A grid over (and beyond) the quads, shot from above and from below, plus a
        // ray from the side that passes between the layers.
        let mut rays = Vec::new();
        for i in 0..9 {
            for j in 0..7 {
                let (x, y) = (-0.3 + 0.23 * i as f32, -0.2 + 0.23 * j as f32);
                rays.push(Ray::new(Vec3::new(x, y, 5.0), Vec3::NEG_Z));
                rays.push(Ray::new(Vec3::new(x, y, -5.0), Vec3::new(0.0, 0.0, 2.0)));
            }
        }
        rays.push(Ray::new(Vec3::new(-3.0, 0.5, 0.5), Vec3::X));
        io::write_rays(dir.path().join("rays.rays"), &rays).expect("write rays");
        let mesh = io::load_mesh(dir.path().join("mesh.obj")).expect("load obj");
        assert_eq!(mesh.triangle_count(), 6);
        Self { dir, mesh, rays }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn mesh_path(&self) -> PathBuf {
        self.path("mesh.obj")
    }

    fn rays_path(&self) -> PathBuf {
        self.path("rays.rays")
    }

    /// The library's own CPU answer.
    fn expected(&self, cull: Cull) -> Vec<Hit> {
        let options = TraceOptions::default().with_cull(cull);
        CpuBackend::new().trace(
            &CpuMesh::with_accel(&self.mesh, Accel::Brute),
            &self.rays,
            &options,
        )
    }

    /// `raypick trace --mesh mesh.obj --rays rays.rays --out <out> <extra..>`.
    fn trace(&self, out: &Path, extra: &[&str]) -> Output {
        trace(&self.mesh_path(), &self.rays_path(), out, extra, &[])
    }
}

fn parse_json(text: &str) -> Value {
    let value: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not one JSON value ({e}):\n{text}"));
    assert!(value.is_object(), "not a JSON object: {text}");
    value
}

fn gpu_available() -> bool {
    crate::support::gpu().is_some()
}

/// A GPU trace's report has its time split: kernel time from timestamp queries
/// (when the adapter has them, which lavapipe does) within the wall time, and the
/// host's stages.
fn assert_gpu_times(report: &Value) {
    let times = &report["gpu_times"];
    let ms = |key: &str| times[key].as_f64().unwrap_or(-1.0);
    let trace_ms = report["trace_ms"].as_f64().expect("trace_ms");
    for key in ["submit_ms", "wait_ms", "finish_ms"] {
        assert!((0.0..=trace_ms).contains(&ms(key)), "{key}: {report}");
    }
    let lavapipe = report["adapter"]
        .as_str()
        .is_some_and(|a| a.starts_with("llvmpipe") && a.contains("Vulkan"));
    if lavapipe || !times["kernel_ms"].is_null() {
        assert!(
            ms("kernel_ms") > 0.0 && ms("kernel_ms") <= trace_ms,
            "{report}"
        );
        assert!(times["passes"].as_u64() > Some(0), "{report}");
    }
}

/// Whether `--backend auto` (and a default `bench`) uses the GPU: a hardware adapter.
fn auto_uses_gpu() -> bool {
    crate::support::gpu().is_some_and(|gpu| gpu.adapter().device_type != "Cpu")
}

#[test]
fn trace_writes_the_library_cpu_hits_in_every_format() {
    let fx = Fixture::new();
    let expected = fx.expected(Cull::None);
    assert!(expected.iter().any(Hit::is_hit) && expected.iter().any(|h| !h.is_hit()));
    for name in ["out.hits", "out.npy", "out.csv", "OUT.HITS"] {
        let out = fx.path(name);
        let text = success(&fx.trace(&out, &["--backend", "cpu"]));
        assert!(
            text.contains("triangles") && text.contains("Mrays/s"),
            "{text}"
        );
        assert_eq!(io::read_hits(&out).expect("read hits"), expected, "{name}");
    }
    // `.hits` is the raw records, byte for byte.
    let bytes = std::fs::read(fx.path("out.hits")).unwrap();
    assert_eq!(bytes, bytemuck::cast_slice::<Hit, u8>(&expected));
}

#[test]
fn trace_json_reports_the_required_fields() {
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    let text = success(&fx.trace(&out, &["--backend", "cpu", "--json", "--threads", "2"]));
    let json = parse_json(&text);
    let expected = fx.expected(Cull::None);
    assert_eq!(json["backend"], "cpu");
    assert!(
        json["adapter"].as_str().is_some_and(|s| s.contains("CPU")),
        "{json}"
    );
    assert_eq!(json["accel"], "bvh");
    assert_eq!(json["cull"], "none");
    assert_eq!(json["triangles"], 6);
    assert_eq!(json["rays"], fx.rays.len());
    assert_eq!(json["hits"], expected.iter().filter(|h| h.is_hit()).count());
    assert_eq!(json["repeat"], 1);
    assert_eq!(json["threads"], 2);
    assert_eq!(json["upload_ms"], 0.0);
    assert!(json["fallback"].is_null());
    for key in [
        "build_ms",
        "upload_ms",
        "trace_ms",
        "mrays_per_s",
        "mtests_per_s",
    ] {
        let x = json[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} is not a number: {json}"));
        assert!(x.is_finite() && x >= 0.0, "{key} = {x}");
    }
    assert!(json["trace_ms"].as_f64().unwrap() < 60_000.0);
    assert_eq!(io::read_hits(&out).unwrap(), expected);
}

#[test]
fn trace_repeat_reports_the_best_of_n() {
    let fx = Fixture::new();
    let out = fx.path("out.csv");
    let text = success(&fx.trace(&out, &["--backend", "cpu", "--repeat", "3", "--json"]));
    let json = parse_json(&text);
    assert_eq!(json["repeat"], 3);
    assert_eq!(io::read_hits(&out).unwrap(), fx.expected(Cull::None));
    // Text output says so too.
    let text = success(&fx.trace(&out, &["--backend", "cpu", "--repeat", "3"]));
    assert!(text.contains("best of 3"), "{text}");
}

#[test]
fn trace_cull_matches_the_library() {
    let fx = Fixture::new();
    let none = fx.expected(Cull::None);
    for (flag, cull) in [
        ("back", Cull::Back),
        ("front", Cull::Front),
        ("none", Cull::None),
    ] {
        let out = fx.path(&format!("{flag}.hits"));
        let json = parse_json(&success(
            &fx.trace(&out, &["--backend", "cpu", "--cull", flag, "--json"]),
        ));
        assert_eq!(json["cull"], flag);
        let expected = fx.expected(cull);
        assert_eq!(io::read_hits(&out).unwrap(), expected, "--cull {flag}");
        if cull != Cull::None {
            assert_ne!(expected, none, "culling {flag} changes this fixture's hits");
        }
    }
}

#[test]
fn trace_on_the_gpu_matches_the_cpu() {
    if !gpu_available() {
        return;
    }
    let fx = Fixture::new();
    for cull in ["none", "back"] {
        let out = fx.path(&format!("gpu-{cull}.hits"));
        let json = parse_json(&success(
            &fx.trace(&out, &["--backend", "gpu", "--cull", cull, "--json"]),
        ));
        assert_eq!(json["backend"], "gpu");
        assert!(json["threads"].is_null());
        assert_gpu_times(&json);
        let gpu = io::read_hits(&out).unwrap();
        let cpu = fx.expected(if cull == "back" {
            Cull::Back
        } else {
            Cull::None
        });
        assert_eq!(gpu.len(), cpu.len());
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            assert_eq!(g.prim, c.prim, "ray {i}: GPU {g:?}, CPU {c:?}");
            assert!(
                g.t == c.t || (g.t - c.t).abs() <= 1e-5 * c.t.abs(),
                "ray {i}: GPU {g:?}, CPU {c:?}"
            );
        }
    }
    // Auto picks the GPU when it is a hardware one, else the CPU and says why.
    let out = fx.path("auto.hits");
    let json = parse_json(&success(&fx.trace(&out, &["--json"])));
    if auto_uses_gpu() {
        assert_eq!(json["backend"], "gpu");
        assert!(json["fallback"].is_null(), "{json}");
    } else {
        assert_eq!(json["backend"], "cpu");
        let why = json["fallback"].as_str().unwrap_or_default();
        assert!(why.contains("only software GPU adapters"), "{json}");
    }
}

#[test]
fn trace_auto_falls_back_to_the_cpu_with_a_notice() {
    let fx = Fixture::new();
    let out = fx.path("auto.hits");
    let output = trace(
        &fx.mesh_path(),
        &fx.rays_path(),
        &out,
        &["--json"],
        &[("WGPU_BACKEND", "dx12")],
    );
    let json = parse_json(&success(&output));
    assert_eq!(json["backend"], "cpu");
    assert!(
        json["fallback"].as_str().is_some_and(|s| !s.is_empty()),
        "{json}"
    );
    let err = stderr(&output);
    assert!(
        err.contains("raypick: notice:") && err.contains("CPU"),
        "{err}"
    );
    assert_eq!(io::read_hits(&out).unwrap(), fx.expected(Cull::None));
}

#[test]
fn missing_mesh_file_is_one_error_line() {
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    let missing = fx.path("no-such-mesh.obj");
    let output = trace(&missing, &fx.rays_path(), &out, &["--backend", "cpu"], &[]);
    assert_error(&output, &["no-such-mesh.obj", "mesh"]);
    assert!(!out.exists());
}

#[test]
fn missing_ray_file_is_one_error_line() {
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    let missing = fx.path("no-such-rays.rays");
    let output = trace(&fx.mesh_path(), &missing, &out, &["--backend", "cpu"], &[]);
    assert_error(&output, &["no-such-rays.rays", "rays"]);
    assert!(!out.exists());
}

#[test]
fn truncated_ray_file_is_one_error_line() {
    let fx = Fixture::new();
    let bytes = std::fs::read(fx.rays_path()).unwrap();
    std::fs::write(fx.rays_path(), &bytes[..bytes.len() - 5]).unwrap();
    let out = fx.path("out.npy");
    assert_error(&fx.trace(&out, &["--backend", "cpu"]), &["rays.rays"]);
    assert!(!out.exists());
}

#[test]
fn unknown_output_extension_is_one_error_line() {
    let fx = Fixture::new();
    for name in ["out.txt", "out"] {
        let out = fx.path(name);
        assert_error(&fx.trace(&out, &["--backend", "cpu"]), &[name, ".hits"]);
        assert!(!out.exists());
    }
    assert_eq!(
        std::fs::read_dir(fx.dir.path()).unwrap().count(),
        2,
        "only the inputs are left in the directory"
    );
}

#[test]
fn unknown_mesh_extension_is_one_error_line() {
    let fx = Fixture::new();
    let mesh = fx.path("mesh.xyz");
    std::fs::copy(fx.mesh_path(), &mesh).unwrap();
    let out = fx.path("out.hits");
    let output = trace(&mesh, &fx.rays_path(), &out, &["--backend", "cpu"], &[]);
    assert_error(&output, &["mesh.xyz"]);
    assert!(!out.exists());
}

#[test]
fn gpu_backend_without_an_adapter_is_one_error_line() {
    // No adapter exists for DX12 outside Windows; on Windows use a backend that is
    // never there.
    let backend = if cfg!(windows) { "metal" } else { "dx12" };
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    let output = trace(
        &fx.mesh_path(),
        &fx.rays_path(),
        &out,
        &["--backend", "gpu"],
        &[("WGPU_BACKEND", backend)],
    );
    assert_error(&output, &["GPU", "no GPU adapter"]);
    assert!(!out.exists());

    let output = raypick(
        &[
            "bench",
            "--triangles",
            "100",
            "--rays",
            "16",
            "--backend",
            "gpu",
        ],
        &[("WGPU_BACKEND", backend)],
    );
    assert_error(&output, &["no GPU adapter"]);
}

/// `--layout` picks the node layout of the GPU's BVH: both write the same hits as
/// the CPU, and the report says which layout traced.
#[test]
fn trace_layouts_write_the_cpus_hits() {
    let fx = Fixture::new();
    let cpu_out = fx.path("cpu.hits");
    let json = parse_json(&success(
        &fx.trace(&cpu_out, &["--backend", "cpu", "--json"]),
    ));
    assert!(json["layout"].is_null(), "{json}");
    let cpu_hits = std::fs::read(&cpu_out).unwrap();
    if crate::support::gpu().is_none() {
        return;
    }
    for layout in ["wide", "binary"] {
        let out = fx.path(&format!("{layout}.hits"));
        let extra = ["--backend", "gpu", "--accel", "bvh", "--layout", layout];
        let text = success(&fx.trace(&out, &extra));
        assert!(
            text.contains(&format!("accel      bvh ({layout} nodes)")),
            "{text}"
        );
        let json = parse_json(&success(
            &fx.trace(&out, &[&extra[..], &["--json"]].concat()),
        ));
        assert_eq!(json["layout"], layout, "{json}");
        assert_eq!(std::fs::read(&out).unwrap(), cpu_hits, "{layout}");
    }
}

#[test]
fn bad_argument_values_are_usage_errors() {
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    for extra in [
        &["--repeat", "0"][..],
        &["--threads", "0"],
        &["--cull", "sideways"],
        &["--backend", "tpu"],
        &["--accel", "octree"],
        &["--layout", "quad"],
    ] {
        let output = fx.trace(&out, extra);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            stderr(&output)
        );
        assert!(!out.exists());
    }
    for args in [
        &["bench", "--rays", "0"][..],
        &["bench", "--rays", "sideways"],
        &["bench", "--triangles", "0"],
        &["bench", "--mesh", "x.obj", "--triangles", "10"],
        &["trace", "--mesh", "x.obj"],
    ] {
        let output = raypick(args, &[]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let output = raypick(&["bench", "--rays", "16,32", "--backend", "cpu"], &[]);
    assert_error(&output, &["--rays"]);
}

#[test]
fn bench_runs_on_the_cpu_and_prints_a_table() {
    let output = raypick(
        &[
            "bench",
            "--triangles",
            "2000",
            "--rays",
            "512",
            "--backend",
            "cpu",
        ],
        &[],
    );
    let text = success(&output);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines[0];
    for column in [
        "scene",
        "triangles",
        "ray set",
        "rays",
        "backend",
        "device",
        "trace ms",
        "Mrays/s",
        "Mtests/s",
    ] {
        assert!(header.contains(column), "header lacks {column}: {text}");
    }
    for set in ["primary", "random"] {
        assert!(
            lines.iter().any(|l| l.contains(set)
                && l.contains("512")
                && l.contains("cpu")
                && l.contains("2000")),
            "no {set} row: {text}"
        );
    }
    assert!(!text.contains(" gpu "), "GPU not asked for: {text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("parity") || l.starts_with("notice")),
        "no parity or notice line: {text}"
    );
}

/// The JSON report of `bench --json` on a 500-triangle built-in scene with 64 rays
/// per set and `extra` arguments; the run must succeed.
fn tiny_bench_json(extra: &[&str]) -> Value {
    let mut args = vec!["bench", "--triangles", "500", "--rays", "64", "--json"];
    args.extend(extra);
    parse_json(&success(&raypick(&args, &[])))
}

#[test]
fn bench_json_parses_and_compares_backends() {
    let gpu = gpu_available();
    let mut args = vec!["--repeat", "2", "--backend", "cpu"];
    if gpu {
        args.extend(["--backend", "gpu"]);
    }
    let json = tiny_bench_json(&args);
    assert_eq!(json["scene"], "builtin");
    assert_eq!(json["triangles"], 500);
    assert_eq!(json["repeat"], 2);
    let rows = json["rows"].as_array().expect("rows");
    // Two ray sets × two accelerations (bvh, brute) per backend, and the GPU's
    // ray queries too where they are its default (a hardware GPU with them).
    let ray_queries_by_default =
        gpu && crate::support::gpu().is_some_and(|g| g.default_accel() == Accel::RayQuery);
    let gpu_rows = match (gpu, ray_queries_by_default) {
        (false, _) => 0,
        (true, false) => 4,
        (true, true) => 6,
    };
    assert_eq!(rows.len(), 4 + gpu_rows, "{json}");
    for row in rows {
        assert!(
            matches!(row["backend"].as_str(), Some("cpu" | "gpu")),
            "{row}"
        );
        assert!(
            row["adapter"].as_str().is_some_and(|s| !s.is_empty()),
            "{row}"
        );
        assert!(
            matches!(row["ray_set"].as_str(), Some("primary" | "random")),
            "{row}"
        );
        assert!(
            matches!(row["accel"].as_str(), Some("bvh" | "brute"))
                || (ray_queries_by_default && row["accel"] == "ray-query"),
            "{row}"
        );
        assert_eq!(row["rays"], 64);
        match row["backend"].as_str() {
            Some("gpu") => assert_gpu_times(row),
            _ => assert!(row["gpu_times"].is_null(), "{row}"),
        }
        // The GPU's BVH is binary by default; nothing else has a layout.
        if row["backend"] == "gpu" && row["accel"] == "bvh" {
            assert_eq!(row["layout"], "binary", "{row}");
        } else {
            assert!(row["layout"].is_null(), "{row}");
        }
        for key in ["trace_ms", "mrays_per_s", "mtests_per_s"] {
            assert!(
                row[key].as_f64().is_some_and(|x| x.is_finite() && x >= 0.0),
                "{key}: {row}"
            );
        }
    }
    let parity = json["parity"].as_array().expect("parity");
    // CPU/GPU per accel and ray set (with a GPU), and BVH/brute force on the CPU.
    assert_eq!(parity.len(), if gpu { 6 } else { 2 }, "{json}");
    for p in parity {
        assert_eq!(p["rays"], 64);
        assert_eq!(p["identical"], 64, "not bit-identical: {p}");
        assert_eq!(p["differing"], 0, "disagreement: {p}");
    }
    assert!(json["notice"].is_null(), "{json}");
    let traversal = json["gpu_traversal"].as_array().expect("gpu_traversal");
    let adapter = json["gpu_adapter"].as_str();
    match crate::support::gpu() {
        Some(g) => assert!(
            adapter.is_some_and(|a| a.contains(&g.adapter().name)),
            "{json}"
        ),
        None => assert!(adapter.is_none(), "{json}"),
    }
    if gpu {
        assert_eq!(json["speed"].as_array().map(Vec::len), Some(4));
        // The GPU BVH's work per ray on each ray set, counted on its CPU twin, and
        // the wide layout's beside it.
        assert_eq!(traversal.len(), 4, "{json}");
        let layouts: Vec<_> = traversal.iter().map(|t| t["layout"].as_str()).collect();
        assert_eq!(
            layouts,
            [Some("binary"), Some("wide"), Some("binary"), Some("wide")],
            "{json}"
        );
        for t in traversal {
            let x = |key: &str| t[key].as_f64().unwrap_or(-1.0);
            let node_bytes = if t["layout"] == "wide" { 128.0 } else { 64.0 };
            assert_eq!(t["rays"], 64);
            assert!(
                x("nodes_per_ray") >= 1.0 && x("triangles_per_ray") >= 0.0,
                "{t}"
            );
            assert!(x("bytes_per_ray") >= node_bytes + 48.0, "{t}");
            assert!(x("stack_max") >= 0.0, "{t}");
            assert!(
                x("simt_efficiency") > 1.0 / 32.0 && x("simt_efficiency") <= 1.0,
                "{t}"
            );
        }
    } else {
        assert!(traversal.is_empty(), "{json}");
    }

    // One ray set only, and a mesh file instead of the built-in scene.
    let fx = Fixture::new();
    let mesh = fx.mesh_path().display().to_string();
    let output = raypick(
        &[
            "bench",
            "--mesh",
            &mesh,
            "--rays",
            "random",
            "--rays",
            "100",
            "--backend",
            "cpu",
            "--accel",
            "bvh",
            "--json",
        ],
        &[],
    );
    let json = parse_json(&success(&output));
    assert_eq!(json["scene"], mesh);
    assert_eq!(json["triangles"], 6);
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["ray_set"], "random");
    assert_eq!(rows[0]["accel"], "bvh");
    assert_eq!(rows[0]["rays"], 100);
}

#[test]
fn ray_queries_run_where_the_gpu_has_them_and_are_refused_elsewhere() {
    // The CPU has none: `trace` fails in one line, `bench` skips them with a notice.
    let fx = Fixture::new();
    let out = fx.path("out.hits");
    let output = fx.trace(&out, &["--backend", "cpu", "--accel", "ray-query"]);
    assert_error(&output, &["ray queries", "CPU backend"]);
    assert!(!out.exists());
    let json = tiny_bench_json(&["--backend", "cpu", "--accel", "bvh,ray-query"]);
    let rows = json["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r["accel"] == "bvh"), "{json}");
    assert!(
        json["notice"]
            .as_str()
            .is_some_and(|n| n.contains("ray-query skipped on the cpu")),
        "{json}"
    );
    // A GPU with ray queries traces them, with the CPU BVH's hits bit for bit.
    let Some(gpu) = crate::support::gpu().filter(|g| g.has_ray_queries()) else {
        eprintln!("no GPU with ray queries: only the refusals were checked");
        return;
    };
    eprintln!("ray queries on {:?}", gpu.adapter());
    let json = tiny_bench_json(&[
        "--backend",
        "cpu",
        "--backend",
        "gpu",
        "--accel",
        "bvh,ray-query",
    ]);
    let rows = json["rows"].as_array().expect("rows");
    let ray_query_rows: Vec<_> = rows.iter().filter(|r| r["accel"] == "ray-query").collect();
    assert_eq!(ray_query_rows.len(), 2, "{json}");
    assert!(
        ray_query_rows.iter().all(|r| r["backend"] == "gpu"),
        "{json}"
    );
    let parity = json["parity"].as_array().expect("parity");
    let compared: Vec<_> = parity
        .iter()
        .filter(|p| p["compared"] == "gpu ray-query/cpu bvh")
        .collect();
    assert_eq!(compared.len(), 2, "{json}");
    for p in compared {
        assert_eq!(p["identical"], 64, "not bit-identical: {p}");
    }
    let out = fx.path("gpu.hits");
    let output = fx.trace(&out, &["--backend", "gpu", "--accel", "ray-query"]);
    success(&output);
    assert_eq!(io::read_hits(&out).unwrap(), fx.expected(Cull::None));
}

// ---------------------------------------------------------------------------
// raypick render
// ---------------------------------------------------------------------------

/// Runs `raypick render <args..> --out <out>` and decodes the PNG it wrote.
fn render_png(args: &[&str], out: &Path) -> raypick::render::Image {
    let mut all: Vec<OsString> = vec!["render".into(), "--out".into(), out.into()];
    all.extend(args.iter().map(OsString::from));
    let text = success(&raypick(&all, &[]));
    assert!(text.starts_with("wrote "), "{text}");
    crate::support::decode_png(&std::fs::read(out).expect("read the PNG"))
}

/// The hits of a camera's primary rays, traced by the library's CPU reference.
fn camera_hits(mesh: &Mesh, camera: &raypick::camera::Camera, w: u32, h: u32) -> Vec<Hit> {
    CpuBackend::new().trace(
        &CpuMesh::with_accel(mesh, Accel::Brute),
        &camera.primary_rays(w, h),
        &TraceOptions::default(),
    )
}

/// Asserts that exactly the pixels whose ray hits differ from the background.
fn assert_covered_pixels_are_hits(image: &raypick::render::Image, hits: &[Hit]) {
    let hit = hits.iter().filter(|h| h.is_hit()).count();
    assert!(
        hit > 0 && hit < hits.len(),
        "{hit} of {} rays hit",
        hits.len()
    );
    assert_eq!(raypick::render::covered_pixels(image), hit);
    for (i, h) in hits.iter().enumerate() {
        let (px, py) = (i as u32 % image.width, i as u32 / image.width);
        assert_eq!(
            image.pixel(px, py) == raypick::render::BACKGROUND,
            !h.is_hit(),
            "pixel ({px}, {py})"
        );
    }
}

#[test]
fn render_covers_exactly_the_pixels_whose_ray_hits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("scene.png");
    let mesh = raypick_testkit::fixtures::builtin_scene(3_000);
    // An explicit camera, on every backend available.
    let camera = raypick::camera::Camera::new(
        Vec3::new(40.0, 35.0, 60.0),
        Vec3::new(0.0, 5.0, 0.0),
        Vec3::Y,
        45f32.to_radians(),
    );
    let expected = camera_hits(&mesh, &camera, 72, 45);
    let mut backends = vec!["cpu"];
    if gpu_available() {
        backends.push("gpu");
    }
    for backend in backends {
        for accel in ["bvh", "brute"] {
            let image = render_png(
                &[
                    "--mesh",
                    "builtin:3000",
                    "--size",
                    "72x45",
                    "--eye",
                    "40,35,60",
                    "--target",
                    "0,5,0",
                    "--up",
                    "0,1,0",
                    "--fov-y",
                    "45",
                    "--backend",
                    backend,
                    "--accel",
                    accel,
                ],
                &out,
            );
            assert_eq!((image.width, image.height), (72, 45));
            assert_covered_pixels_are_hits(&image, &expected);
        }
    }

    // No camera options: the mesh is framed like the bench's primary rays.
    let fx = Fixture::new();
    let image = render_png(
        &[
            "--mesh",
            &fx.mesh_path().display().to_string(),
            "--size",
            "40x30",
            "--backend",
            "cpu",
        ],
        &out,
    );
    let framed = raypick_testkit::fixtures::bench_camera(fx.mesh.bounds().expect("bounds"), 40, 30);
    assert_covered_pixels_are_hits(&image, &camera_hits(&fx.mesh, &framed, 40, 30));
}

#[test]
fn render_bad_input_is_one_error_line_and_no_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.png");
    let out_arg = out.display().to_string();
    let taken = dir.path().join("taken.png");
    std::fs::create_dir(&taken).expect("mkdir");
    let taken_arg = taken.display().to_string();
    let missing_dir = dir.path().join("no/such/dir/out.png");
    let missing_arg = missing_dir.display().to_string();
    let cases: [(&[&str], &[&str]); 9] = [
        (
            &["--mesh", "missing.obj", "--out", &out_arg],
            &["missing.obj"],
        ),
        (&["--mesh", "builtin:0", "--out", &out_arg], &["builtin:0"]),
        (&["--size", "0x10", "--out", &out_arg], &["--size"]),
        (&["--size", "64", "--out", &out_arg], &["--size"]),
        (&["--size", "20000x10", "--out", &out_arg], &["--size"]),
        (
            &["--eye", "0,0,0", "--target", "0,0,0", "--out", &out_arg],
            &["camera"],
        ),
        (
            &["--out", &missing_arg, "--size", "8x8"],
            &["not a directory"],
        ),
        (
            &[
                "--out",
                &taken_arg,
                "--size",
                "8x8",
                "--mesh",
                "builtin:100",
            ],
            &["taken.png"],
        ),
        (&["--out", &format!("{out_arg}.jpg")], &[".jpg"]),
    ];
    for (args, needles) in cases {
        let mut all = vec!["render"];
        all.extend(args);
        assert_error(&raypick(&all, &[]), needles);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("taken.png")], "{args:?}");
    }
}

// ---------------------------------------------------------------------------
// raypick bench --report, raypick info
// ---------------------------------------------------------------------------

/// `bench` on a small built-in scene with `extra` arguments.
fn small_bench(extra: &[&str]) -> Output {
    let mut args = vec!["bench", "--triangles", "800", "--rays", "100"];
    args.extend(extra);
    raypick(&args, &[])
}

/// The `<rect class="bar" ...>` elements of an SVG text, each checked to be closed.
fn svg_bars(svg: &str) -> Vec<&str> {
    svg.match_indices(r#"<rect class="bar""#)
        .map(|(i, _)| {
            let end = svg[i..].find("</rect>").expect("bar element closed");
            &svg[i..i + end]
        })
        .collect()
}

#[test]
fn bench_report_writes_json_and_an_svg_chart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let report_dir = dir.path().join("new/report");
    let report_arg = report_dir.display().to_string();
    let text = success(&small_bench(&["--report", &report_arg]));
    assert!(
        text.contains("bench.json") && text.contains("bench.svg"),
        "{text}"
    );

    let json = parse_json(&std::fs::read_to_string(report_dir.join("bench.json")).expect("json"));
    assert_eq!(json["raypick_version"], env!("CARGO_PKG_VERSION"));
    let command_line: Vec<&str> = json["command_line"]
        .as_array()
        .expect("command line")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        command_line.ends_with(&["--report", &report_arg]),
        "{command_line:?}"
    );
    assert!(
        json["machine"]["cpu_threads"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    );
    assert!(json["machine"]["simd"].is_string());
    let adapters = json["adapters"].as_array().expect("adapters");
    assert_eq!(!adapters.is_empty(), gpu_available(), "{json}");
    for a in adapters {
        assert!(a["limits"]["max_storage_buffer_binding_size"].as_u64() > Some(0));
    }
    let bench = &json["bench"];
    assert_eq!(bench["triangles"], 800);
    let rows = bench["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), if auto_uses_gpu() { 8 } else { 4 });

    let svg = std::fs::read_to_string(report_dir.join("bench.svg")).expect("svg");
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches('<').count(), svg.matches('>').count());
    assert!(svg.contains("Mrays/s"), "axis label");
    let bars = svg_bars(&svg);
    assert_eq!(bars.len(), rows.len());
    for (bar, row) in bars.iter().zip(rows) {
        let label = format!(
            "{} {} {}",
            row["backend"].as_str().expect("backend"),
            row["accel"].as_str().expect("accel"),
            row["ray_set"].as_str().expect("ray set")
        );
        assert!(bar.contains(&label), "{label}: {bar}");
    }
    // Only the two report files, no temporary files.
    assert_eq!(std::fs::read_dir(&report_dir).expect("list").count(), 2);
}

#[test]
fn bench_by_default_runs_the_gpu_only_on_a_hardware_adapter() {
    let json = parse_json(&success(&small_bench(&["--json"])));
    let rows = json["rows"].as_array().expect("rows");
    let on_gpu = rows.iter().filter(|r| r["backend"] == "gpu").count();
    let notice = json["notice"].as_str().unwrap_or_default();
    match crate::support::gpu() {
        _ if auto_uses_gpu() => {
            assert_eq!(on_gpu, 4, "{json}");
            assert!(json["notice"].is_null(), "{json}");
        }
        Some(software) => {
            assert_eq!(on_gpu, 0, "{json}");
            assert!(notice.contains("only software GPU adapters"), "{json}");
            assert!(notice.contains(&software.adapter().name), "{json}");
            assert!(notice.contains("--backend gpu"), "{json}");
        }
        None => {
            assert_eq!(on_gpu, 0, "{json}");
            assert!(notice.contains("mesa-vulkan-drivers"), "{json}");
        }
    }
}

#[test]
fn bench_report_to_an_unwritable_dir_is_one_error_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").expect("write");
    let target = file.join("report").display().to_string();
    assert_error(
        &small_bench(&["--backend", "cpu", "--report", &target]),
        &["--report", "a-file"],
    );
}

#[test]
fn bench_json_has_no_progress_output() {
    let output = small_bench(&["--json", "--backend", "cpu"]);
    let text = success(&output);
    parse_json(&text);
    let err = stderr(&output);
    for needle in ["\r", "\u{1b}[", "=>", "tracing", "preparing"] {
        assert!(
            !text.contains(needle) && !err.contains(needle),
            "{needle:?}: {err}"
        );
    }
}

#[test]
fn bench_in_a_log_prints_each_step_and_row_as_it_goes() {
    // stderr is a pipe here, as in a CI log: one line per step and per row.
    let output = small_bench(&["--backend", "cpu", "--accel", "bvh"]);
    let text = success(&output);
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    // One preparation and two traces (primary, random), each trace then its row.
    let want = [
        "raypick: [1/3] preparing 800 triangles (bvh) on the cpu",
        "raypick: [2/3] tracing 100 primary rays (bvh) on the cpu",
        "raypick: [2/3] 100 primary rays (bvh) on the cpu [CPU (",
        "raypick: [3/3] tracing 100 random rays (bvh) on the cpu",
        "raypick: [3/3] 100 random rays (bvh) on the cpu [CPU (",
        "raypick: comparing hits",
    ];
    assert_eq!(lines.len(), want.len(), "{err}");
    for (line, start) in lines.iter().zip(want) {
        assert!(
            line.starts_with(start),
            "{line:?} should start with {start:?}\n{err}"
        );
    }
    assert!(
        lines[2].contains("Mrays/s") && lines[4].contains("Mrays/s"),
        "{err}"
    );
    assert!(
        !err.contains('\r') && !err.contains("\u{1b}["),
        "no terminal codes: {err:?}"
    );
    // The table still goes to stdout.
    assert!(
        text.contains("Mrays/s") && text.contains("primary"),
        "{text}"
    );
}

#[test]
fn info_lists_the_adapter_in_use_and_its_limits() {
    // A headless machine without a session directory: nothing on stderr (drivers
    // complaining about it would read as raypick's errors).
    let output = raypick(&["info"], &[("XDG_RUNTIME_DIR", "")]);
    assert_eq!(stderr(&output), "", "stderr of a clean run");
    let text = success(&output);
    assert!(text.contains("cpu: ") && text.contains("SIMD"), "{text}");
    let json = parse_json(&success(&raypick(&["info", "--json"], &[])));
    assert!(json["cpu"]["cpu_threads"].as_u64().is_some_and(|n| n >= 1));
    let adapters = json["adapters"].as_array().expect("adapters");
    let marked =
        |flag: &str| -> Vec<&Value> { adapters.iter().filter(|a| a[flag] == true).collect() };
    match crate::support::gpu() {
        Some(gpu) => {
            let name = gpu.adapter().name.as_str();
            // `--backend gpu` opens the adapter the tests use, software or not.
            let used = marked("used_by_gpu");
            assert_eq!(used.len(), 1, "{json}");
            assert_eq!(used[0]["name"], name);
            assert_eq!(json["gpu"]["adapter"]["name"], name);
            assert!(
                json["gpu"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains(name))
            );
            let limits = &used[0]["limits"];
            for key in [
                "max_storage_buffer_binding_size",
                "max_buffer_size",
                "max_compute_workgroups_per_dimension",
                "max_compute_invocations_per_workgroup",
                "max_storage_buffers_per_shader_stage",
            ] {
                assert!(limits[key].as_u64().is_some_and(|n| n > 0), "{key}: {json}");
            }
            assert!(text.contains("max storage buffer binding"), "{text}");
            let features = &used[0]["features"];
            assert_eq!(features["ray_queries"], gpu.has_ray_queries(), "{json}");
            assert!(features["timestamps"].is_boolean(), "{json}");
            assert!(text.contains("ray queries (--accel ray-query)"), "{text}");
            // The structure a mesh gets there, as the library chooses it.
            let accel = gpu.default_accel().name();
            assert_eq!(json["gpu"]["accel"], accel, "{json}");
            assert!(json["gpu"]["accel_reason"].is_string(), "{json}");
            assert!(
                text.contains(&format!("meshes get: --accel {accel} (")),
                "{text}"
            );
            assert!(
                text.contains(&format!("--backend gpu uses: {name}")),
                "{text}"
            );
            // `--backend auto` never opens a software adapter: the CPU beats it.
            if gpu.adapter().device_type == "Cpu" {
                assert!(marked("used_by_auto").is_empty(), "{json}");
                assert!(json["auto"]["adapter"].is_null(), "{json}");
                let reason = json["auto"]["reason"].as_str().unwrap_or_default();
                assert!(reason.contains("only software GPU adapters"), "{json}");
                assert!(reason.contains(name), "{json}");
                assert!(text.contains("--backend auto uses: the CPU"), "{text}");
                assert!(text.contains(&format!("+ {name}")), "{text}");
            } else {
                assert_eq!(marked("used_by_auto").len(), 1, "{json}");
                assert!(text.contains(&format!("* {name}")), "{text}");
            }
        }
        None => {
            assert!(json["auto"]["adapter"].is_null());
            assert!(json["gpu"]["adapter"].is_null());
            assert!(json["auto"]["reason"].is_string(), "{json}");
            assert!(text.contains("--backend auto uses: the CPU"), "{text}");
        }
    }
}

/// `info --check` compares the GPU's arithmetic with the CPU's: identical on the test
/// adapter (text and JSON), and an error without an adapter.
#[test]
fn info_check_runs_the_arithmetic_self_check() {
    let json = parse_json(&success(&raypick(&["info", "--json"], &[])));
    assert!(json["check"].is_null(), "no check unless asked: {json}");
    let Some(gpu) = crate::support::gpu() else {
        let output = raypick(&["info", "--check"], &[]);
        assert!(!output.status.success());
        assert!(stderr(&output).contains("cannot run the arithmetic check"));
        return;
    };
    let name = gpu.adapter().name.as_str();
    let text = success(&raypick(&["info", "--check"], &[]));
    assert!(
        text.contains(&format!("arithmetic check on {name}"))
            && text.contains("identical to the CPU"),
        "{text}"
    );
    let json = parse_json(&success(&raypick(&["info", "--check", "--json"], &[])));
    let check = &json["check"];
    assert_eq!(check["adapter"]["name"], name, "{json}");
    assert_eq!(check["identical"], true, "{json}");
    assert_eq!(
        check["differing"].as_array().map(Vec::len),
        Some(0),
        "{json}"
    );
    assert_eq!(check["stage_cases"], 100_000, "{json}");
    // A driver property, reported either way, and said in a line when not kept.
    let kept = check["subnormals_kept"].as_bool().expect("a flag");
    assert_eq!(text.contains("flushes subnormal numbers"), !kept, "{text}");
    assert!(
        check["reciprocal_cases"]
            .as_u64()
            .is_some_and(|n| n >= 180_000),
        "{json}"
    );
    for key in ["driver_division_differs", "driver_multiply_add_differs"] {
        assert!(check[key].is_u64(), "{key}: {json}");
    }
}

#[test]
fn info_without_an_adapter_names_the_fallback() {
    let env = [
        ("VK_ICD_FILENAMES", "/nonexistent"),
        ("WGPU_BACKEND", "vulkan"),
    ];
    let json = parse_json(&success(&raypick(&["info", "--json"], &env)));
    assert_eq!(json["adapters"].as_array().map(Vec::len), Some(0), "{json}");
    // Nothing to check: an error, not a pass.
    let output = raypick(&["info", "--check"], &env);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("cannot run the arithmetic check"),
        "{}",
        stderr(&output)
    );
    for backend in ["auto", "gpu"] {
        assert!(json[backend]["adapter"].is_null());
        assert!(
            json[backend]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no GPU adapter")),
            "{json}"
        );
    }
}
