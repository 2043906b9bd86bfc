//! `raypick`: trace ray files against meshes, benchmark the CPU and GPU backends,
//! render what a camera's rays hit, pick the triangle under a pixel, and list the
//! adapters.
//!
//! Thin over the library: parses the command line, calls [`raypick::io`],
//! [`raypick::render`] and [`raypick::screen`], runs the benchmark (`bench`), writes
//! reports (`report`) and PNG files (`png`), prints.
//! Every failure is one line `raypick: error: <message>` on stderr and a non-zero exit
//! status (clap's own usage errors keep clap's format and exit status 2).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
mod bench;
mod error;
mod png;
mod report;

use bench::{BenchBackends, BenchConfig};
use error::{CliError, Doing, one_line};
use raypick::{Accel, Backend, Cull, Mode, NodeLayout, TraceOptions, io, render};
use raypick_testkit::fixtures;
use raypick_testkit::fixtures::RaySet;
use report::{BenchRecord, InfoReport, write_bench_report};

#[derive(Parser)]
#[command(
    name = "raypick",
    version,
    about = "Ray-triangle picking on the GPU (wgpu) and the CPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Trace a ray file against a mesh and write a hit file.
    Trace(TraceArgs),
    /// Compare the CPU and GPU backends on a mesh (default: a generated scene).
    Bench(BenchArgs),
    /// Render what the primary rays of a camera hit, as a PNG image.
    Render(RenderArgs),
    /// Pick the triangle under one pixel of a camera's image.
    Pick(PickArgs),
    /// List the GPU adapters, their limits and the one `--backend auto` uses, and
    /// the CPU.
    Info(InfoArgs),
}

#[derive(Args)]
struct InfoArgs {
    /// Also compare the GPU's arithmetic with the CPU's, bit for bit, on the adapter
    /// `--backend gpu` uses: the reciprocal the shaders divide with and every stage of
    /// both triangle tests (about a second on a software adapter). Exits with an
    /// error when they differ or no adapter opens.
    #[arg(long)]
    check: bool,
    /// Print one JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// Options shared by `trace` and `bench`.
#[derive(Args)]
struct Common {
    /// Face culling.
    #[arg(long, value_parser = named(Cull::ALL), default_value_t = Cull::default())]
    cull: Cull,
    /// Ray-triangle test: watertight never lets a ray slip through a shared edge or
    /// vertex; fast is Moller-Trumbore.
    #[arg(long, value_parser = named(Mode::ALL), default_value_t = Mode::default())]
    mode: Mode,
    /// Timed runs after one warm-up; the best time is reported.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// CPU threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    threads: Option<u32>,
    /// Node layout of the GPU's BVH: binary (two children to a node, the faster
    /// kernel) or wide (eight children to a compressed node, fewer bytes read per
    /// ray). The hits are the same.
    #[arg(long, value_parser = named(NodeLayout::ALL), default_value_t = NodeLayout::default())]
    layout: NodeLayout,
    /// Print one JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

impl Common {
    fn options(&self) -> TraceOptions {
        TraceOptions {
            cull: self.cull,
            mode: self.mode,
        }
    }

    fn threads(&self) -> Option<usize> {
        self.threads.map(|n| n as usize)
    }
}

#[derive(Args)]
struct TraceArgs {
    /// Mesh file (.obj, .gltf, .glb, .ply, .stl).
    #[arg(long, value_name = "FILE")]
    mesh: PathBuf,
    /// Ray file (.rays, .npy or .csv).
    #[arg(long, value_name = "FILE")]
    rays: PathBuf,
    /// Hit file to write (.hits, .npy or .csv).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Backend: auto uses the GPU when an adapter opens, else the CPU.
    #[arg(long, value_parser = named(Backend::ALL), default_value_t = Backend::Auto)]
    backend: Backend,
    /// Acceleration structure (ray-query: hardware ray queries, on a GPU that has
    /// them). Default: ray-query on a hardware GPU with ray queries, else bvh
    /// (`raypick info` says which).
    #[arg(long, value_parser = named(Accel::ALL))]
    accel: Option<Accel>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct BenchArgs {
    /// Mesh file (.obj, .gltf, .glb, .ply, .stl); default: the built-in generated scene.
    #[arg(long, value_name = "FILE")]
    mesh: Option<PathBuf>,
    /// Triangles in the built-in scene.
    #[arg(long, value_name = "N", conflicts_with = "mesh",
          default_value_t = fixtures::DEFAULT_SCENE_TRIANGLES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    triangles: u64,
    /// Ray sets (primary, random; default both) and/or the number of rays in each
    /// (default: sized so brute force stays quick). Comma-separated or repeated.
    #[arg(long, value_name = "primary|random|N", value_delimiter = ',', value_parser = parse_rays_arg)]
    rays: Vec<RaysArg>,
    /// Backends to run, comma-separated (default: the CPU, and the GPU if an adapter opens).
    #[arg(long, value_name = "cpu,gpu", value_parser = named(&[Backend::Cpu, Backend::Gpu]), value_delimiter = ',')]
    backend: Vec<Backend>,
    /// Acceleration structures to compare, comma-separated (default: bvh,brute,
    /// and ray-query after bvh where a GPU's default is ray queries); ray-query runs
    /// on a GPU with hardware ray queries only (skipped elsewhere, with a notice).
    #[arg(long, value_name = "bvh,brute,ray-query", value_parser = named(Accel::ALL), value_delimiter = ',')]
    accel: Vec<Accel>,
    /// Also write DIR/bench.json (every measurement, the machine, the command line)
    /// and DIR/bench.svg (a bar chart of Mrays/s); DIR is created if missing.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct RenderArgs {
    /// Mesh file, or `builtin[:N]` for the generated scene of N triangles
    /// (default: the built-in scene).
    #[arg(long, value_name = "FILE|builtin[:N]")]
    mesh: Option<String>,
    /// PNG file to write.
    #[arg(long, value_name = "FILE.png")]
    out: PathBuf,
    #[command(flatten)]
    view: ViewArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

/// What traces the rays of `render` and `pick`, and how.
#[derive(Args)]
struct EngineArgs {
    /// Backend: auto uses the GPU when an adapter opens, else the CPU.
    #[arg(long, value_parser = named(Backend::ALL), default_value_t = Backend::Auto)]
    backend: Backend,
    /// Acceleration structure (ray-query: hardware ray queries, on a GPU that has
    /// them). Default: ray-query on a hardware GPU with ray queries, else bvh
    /// (`raypick info` says which).
    #[arg(long, value_parser = named(Accel::ALL))]
    accel: Option<Accel>,
    /// Face culling.
    #[arg(long, value_parser = named(Cull::ALL), default_value_t = Cull::default())]
    cull: Cull,
    /// Ray-triangle test.
    #[arg(long, value_parser = named(Mode::ALL), default_value_t = Mode::default())]
    mode: Mode,
}

impl EngineArgs {
    /// The structure asked for, else the one `picker` gives a mesh by default.
    fn accel_on(&self, picker: &raypick::Picker) -> Accel {
        self.accel.unwrap_or_else(|| picker.default_accel())
    }

    fn options(&self) -> TraceOptions {
        TraceOptions {
            cull: self.cull,
            mode: self.mode,
        }
    }
}

/// The camera and image of `render` and `pick` (the same arguments give the same
/// image, so a pixel of a rendered image can be picked). Vectors and the size are
/// checked after parsing, so a bad value is one `raypick: error:` line.
#[derive(Args)]
struct ViewArgs {
    /// Eye position (default: framed to see the whole mesh).
    #[arg(long, value_name = "X,Y,Z")]
    eye: Option<String>,
    /// The point looked at (default: the mesh's centre when --eye is given, else
    /// framed to see the whole mesh).
    #[arg(long, value_name = "X,Y,Z")]
    target: Option<String>,
    /// Up direction.
    #[arg(long, value_name = "X,Y,Z", default_value = "0,1,0")]
    up: String,
    /// Vertical field of view in degrees.
    #[arg(long, value_name = "DEG", default_value_t = 50.0)]
    fov_y: f32,
    /// Image size in pixels.
    #[arg(long, value_name = "WxH", default_value = "640x400")]
    size: String,
}

impl ViewArgs {
    /// The image size and the checked camera for `mesh` (named `name` in errors).
    fn camera(
        &self,
        name: &str,
        mesh: &raypick::Mesh,
    ) -> Result<(raypick::camera::Camera, u32, u32), String> {
        let (width, height) = parse_size(&self.size)?;
        let vector = |flag: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| parse_vec3(v).map_err(|e| format!("{flag} {v}: {e}")))
                .transpose()
        };
        let (eye, target) = (
            vector("--eye", &self.eye)?,
            vector("--target", &self.target)?,
        );
        let up = parse_vec3(&self.up).map_err(|e| format!("--up {}: {e}", self.up))?;
        let bounds = mesh
            .bounds()
            .ok_or_else(|| format!("{name}: the mesh has no triangles with finite vertices"))?;
        let mut camera = raypick::camera::Camera::framing(
            bounds.0,
            bounds.1,
            glam::Vec3::new(0.2, 1.0, 1.0),
            self.fov_y.to_radians(),
            raypick::camera::aspect(width, height),
        );
        if eye.is_some() || target.is_some() {
            camera.eye = eye.unwrap_or(camera.eye);
            camera.target = target.unwrap_or(0.5 * (bounds.0 + bounds.1));
        }
        camera.up = up;
        camera.check().map_err(|e| format!("bad camera: {e}"))?;
        Ok((camera, width, height))
    }
}

#[derive(Args)]
struct PickArgs {
    /// Mesh file, or `builtin[:N]` for the generated scene of N triangles.
    #[arg(long, value_name = "FILE|builtin[:N]")]
    mesh: String,
    #[command(flatten)]
    view: ViewArgs,
    /// The pixel to pick, counted from the top-left pixel (0,0); its centre is picked.
    #[arg(long, value_name = "PX,PY")]
    pixel: String,
    #[command(flatten)]
    engine: EngineArgs,
    /// Print one JSON object on stdout instead of a line of text.
    #[arg(long)]
    json: bool,
}

/// `PX,PY`: two non-negative integers.
fn parse_pixel(s: &str) -> Result<(u32, u32), String> {
    let parts: Vec<Option<u32>> = s.split(',').map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        [Some(x), Some(y)] => Ok((x, y)),
        _ => Err("expected two whole numbers PX,PY (pixels from the top-left)".into()),
    }
}

fn parse_vec3(s: &str) -> Result<glam::Vec3, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let values: Vec<f32> = parts
        .iter()
        .filter_map(|p| p.parse::<f32>().ok().filter(|v| v.is_finite()))
        .collect();
    match values[..] {
        [x, y, z] if parts.len() == 3 => Ok(glam::Vec3::new(x, y, z)),
        _ => Err("expected three finite numbers X,Y,Z".into()),
    }
}

/// `WxH`, each side 1 to [`render::MAX_SIDE`].
fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "--size {s}: expected WIDTHxHEIGHT, each side 1 to {} pixels",
            render::MAX_SIDE
        )
    };
    let (w, h) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h) = (
        w.trim().parse::<u32>().map_err(|_| bad())?,
        h.trim().parse::<u32>().map_err(|_| bad())?,
    );
    render::check_size(w, h).map_err(|_| bad())?;
    Ok((w, h))
}

/// A parser for one of the library's named values (`Cull`, `Mode`, `Accel`,
/// `Backend`): `--help` and usage errors list `values`, the library's `FromStr`
/// reads them.
fn named<T>(values: &'static [T]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: Copy + std::fmt::Display + std::str::FromStr<Err = raypick::Error> + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(values.iter().map(|v| v.to_string()))
        .try_map(|name| name.parse::<T>())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RaysArg {
    Set(RaySet),
    Count(usize),
}

fn parse_rays_arg(s: &str) -> Result<RaysArg, String> {
    let s = s.trim();
    if let Some(set) = RaySet::ALL
        .into_iter()
        .find(|set| set.name().eq_ignore_ascii_case(s))
    {
        return Ok(RaysArg::Set(set));
    }
    match s.replace('_', "").parse::<usize>() {
        Ok(0) => Err("the ray count must be at least 1".into()),
        Ok(n) if n > 1 << 26 => Err(format!(
            "{n} rays is more than this bench allows ({})",
            1 << 26
        )),
        Ok(n) => Ok(RaysArg::Count(n)),
        Err(_) => Err("expected primary, random or a ray count".into()),
    }
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("raypick: error: internal error: {}{at}", one_line(&message));
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(args) => trace(args),
        Command::Bench(args) => bench_command(args),
        Command::Render(args) => render_command(args),
        Command::Pick(args) => pick_command(args),
        Command::Info(args) => info_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("raypick: error: {}", error.one_line());
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to stdout; a closed pipe (`raypick ... | head`) is not an error.
fn emit(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.doing("cannot write to stdout"),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, CliError> {
    serde_json::to_string(value)
        .map(|s| s + "\n")
        .map_err(|e| CliError::Usage(format!("cannot format JSON: {e}")))
}

/// Fails early (before any tracing) when `path` has none of the `extensions` of a
/// `what` file, is a directory, or its directory does not exist.
fn check_output_path(path: &Path, extensions: &[&str], what: &str) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!(
            "{}: cannot write there: it is a directory",
            path.display()
        ));
    }
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        return Err(format!(
            "{}: cannot write there: {} is not a directory",
            path.display(),
            dir.display()
        ));
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some(e) if extensions.contains(&e) => Ok(()),
        _ => Err(format!(
            "{}: unknown {what} file format ({}); supported: {}",
            path.display(),
            match path.extension() {
                Some(e) => format!("extension '.{}'", e.to_string_lossy()),
                None => "no extension".into(),
            },
            extensions
                .iter()
                .map(|e| format!(".{e}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Opens a picker on `backend`, telling on stderr when `auto` fell back to the CPU.
fn open_picker(
    backend: Backend,
    threads: Option<usize>,
    layout: NodeLayout,
) -> Result<(raypick::Picker, Option<String>), CliError> {
    let (picker, fallback) =
        bench::open_picker(backend, threads, layout).map_err(|e| match backend {
            Backend::Gpu => CliError::NoGpu(e),
            _ => CliError::Raypick {
                doing: "cannot open the backend".into(),
                source: e,
            },
        })?;
    if let Some(reason) = &fallback {
        eprintln!(
            "raypick: notice: no GPU, tracing on the CPU instead: {}; {}",
            one_line(reason),
            bench::no_gpu_hint()
        );
    }
    Ok((picker, fallback))
}

/// Loads `--mesh`: a file, or `builtin[:N]` (and no value) for the generated scene.
fn load_mesh_arg(arg: Option<&str>) -> Result<(String, raypick::Mesh), CliError> {
    let builtin = |n: usize| ("builtin".to_string(), fixtures::builtin_scene(n));
    match arg.map(str::trim) {
        None | Some("builtin") => Ok(builtin(fixtures::DEFAULT_SCENE_TRIANGLES)),
        Some(spec) if spec.starts_with("builtin:") => {
            match spec["builtin:".len()..].replace('_', "").parse::<usize>() {
                Ok(n) if (1..=100_000_000).contains(&n) => Ok(builtin(n)),
                _ => Err(format!(
                    "--mesh {spec}: expected builtin:N with N between 1 and 100000000 triangles"
                )
                .into()),
            }
        }
        Some(path) => io::load_mesh(path)
            .map(|mesh| (path.to_string(), mesh))
            .doing("cannot load mesh"),
    }
}

fn render_command(args: RenderArgs) -> Result<(), CliError> {
    parse_size(&args.view.size)?;
    check_output_path(&args.out, &["png"], "image")?;
    let (name, mesh) = load_mesh_arg(args.mesh.as_deref())?;
    let (camera, width, height) = args.view.camera(&name, &mesh)?;
    let (picker, _) = open_picker(args.engine.backend, None, NodeLayout::default())?;
    let options = args.engine.options();
    let rendered = render::render(
        &picker,
        &mesh,
        args.engine.accel_on(&picker),
        &camera,
        width,
        height,
        &options,
    )
    .doing("render failed")?;
    png::write_png(&args.out, &rendered.image).doing("cannot write image")?;
    emit(&format!(
        "wrote {} ({width}x{height}, {} of {} pixels hit {name} on the {})\n",
        args.out.display(),
        render::covered_pixels(&rendered.image),
        rendered.hits.len(),
        picker.device_name(),
    ))
}

/// What `raypick pick --json` prints: the hit fields are null on a miss.
#[derive(serde::Serialize)]
struct PickReport {
    pixel: [u32; 2],
    size: [u32; 2],
    hit: bool,
    prim: Option<u32>,
    t: Option<f32>,
    u: Option<f32>,
    v: Option<f32>,
    point: Option<[f64; 3]>,
    ray: PickRay,
    backend: &'static str,
    device: String,
    accel: &'static str,
    mesh: String,
    triangles: usize,
}

#[derive(serde::Serialize)]
struct PickRay {
    origin: [f32; 3],
    dir: [f32; 3],
}

fn pick_command(args: PickArgs) -> Result<(), CliError> {
    let (width, height) = parse_size(&args.view.size)?;
    let (px, py) = parse_pixel(&args.pixel).map_err(|e| format!("--pixel {}: {e}", args.pixel))?;
    if px >= width || py >= height {
        return Err(format!(
            "--pixel {px},{py} is outside the {width}x{height} image (0..{} x 0..{})",
            width - 1,
            height - 1
        )
        .into());
    }
    let (name, mesh) = load_mesh_arg(Some(&args.mesh))?;
    let (camera, width, height) = args.view.camera(&name, &mesh)?;
    let (picker, _) = open_picker(args.engine.backend, None, NodeLayout::default())?;
    let accel = args.engine.accel_on(&picker);
    let options = args.engine.options();
    let ray = camera.ray(px, py, width, height);
    let prepared = picker
        .upload_with(&mesh, accel)
        .doing("cannot prepare the mesh")?;
    let pick =
        raypick::screen::pick(&picker, &prepared, &mesh, &[ray], &options).doing("pick failed")?[0];
    let hit = pick.hit.is_hit().then_some(pick.hit);
    if args.json {
        return emit(&to_json(&PickReport {
            pixel: [px, py],
            size: [width, height],
            hit: hit.is_some(),
            prim: hit.map(|h| h.prim),
            t: hit.map(|h| h.t),
            u: hit.map(|h| h.u),
            v: hit.map(|h| h.v),
            point: pick.point.map(|p| p.to_array()),
            ray: PickRay {
                origin: ray.origin.to_array(),
                dir: ray.dir.to_array(),
            },
            backend: picker.backend().name(),
            device: picker.device_name(),
            accel: accel.name(),
            mesh: name,
            triangles: mesh.triangle_count(),
        })?);
    }
    let what = match (hit, pick.point) {
        (Some(h), Some(p)) => format!(
            "triangle {} at t {} (u {}, v {}), point ({}, {}, {})",
            h.prim, h.t, h.u, h.v, p.x, p.y, p.z
        ),
        _ => "miss".to_string(),
    };
    emit(&format!(
        "pixel {px},{py} of {width}x{height}: {what} [{}]\n",
        picker.device_name()
    ))
}

fn trace(args: TraceArgs) -> Result<(), CliError> {
    check_output_path(&args.out, &["hits", "npy", "csv"], "hit")?;
    // f64 mesh and rays: far from the origin both are moved into the mesh's local
    // frame before anything is rounded to f32.
    let mesh = io::load_mesh_rebased(&args.mesh).doing("cannot load mesh")?;
    let rays = io::read_rays64(&args.rays).doing("cannot read rays")?;
    let threads = args.common.threads();
    let (picker, fallback) = open_picker(args.backend, threads, args.common.layout)?;
    let fell_back_at_start = fallback.is_some();
    let (report, hits) = bench::run_trace(
        &picker,
        &mesh,
        &rays,
        args.accel,
        &args.common.options(),
        args.common.repeat as usize,
        threads,
        fallback,
    )
    .doing("trace failed")?;
    if let (false, Some(reason)) = (fell_back_at_start, &report.fallback) {
        eprintln!(
            "raypick: notice: the GPU failed, traced on the CPU instead: {}",
            one_line(reason)
        );
    }
    io::write_hits(&args.out, &hits).doing("cannot write hits")?;
    if args.common.json {
        emit(&to_json(&report)?)
    } else {
        emit(&format!("{report}wrote      {}\n", args.out.display()))
    }
}

fn bench_command(args: BenchArgs) -> Result<(), CliError> {
    let mut config = BenchConfig {
        repeat: args.common.repeat as usize,
        threads: args.common.threads(),
        options: args.common.options(),
        layout: args.common.layout,
        ..BenchConfig::default()
    };
    if !args.accel.is_empty() {
        let mut accels = args.accel.clone();
        accels.dedup();
        config.accels = Some(accels);
    }
    let sets: Vec<RaySet> = args
        .rays
        .iter()
        .filter_map(|r| match r {
            RaysArg::Set(s) => Some(*s),
            RaysArg::Count(_) => None,
        })
        .collect();
    if !sets.is_empty() {
        config.ray_sets = RaySet::ALL
            .into_iter()
            .filter(|s| sets.contains(s))
            .collect();
    }
    let counts: Vec<usize> = args
        .rays
        .iter()
        .filter_map(|r| match r {
            RaysArg::Count(n) => Some(*n),
            RaysArg::Set(_) => None,
        })
        .collect();
    match counts[..] {
        [] => {}
        [n] => config.rays = Some(n),
        _ => return Err("--rays: give at most one ray count".into()),
    }
    if !args.backend.is_empty() {
        config.backends = BenchBackends {
            cpu: args.backend.contains(&Backend::Cpu),
            gpu: args.backend.contains(&Backend::Gpu).then_some(true),
        };
    }

    let (scene_name, mesh) = match &args.mesh {
        Some(path) => (
            path.display().to_string(),
            io::load_mesh(path).doing("cannot load mesh")?,
        ),
        None => (
            "builtin".to_string(),
            fixtures::builtin_scene(args.triangles as usize),
        ),
    };
    if let Some(dir) = &args.report {
        // Fail before the run, not after it.
        std::fs::create_dir_all(dir).doing(format!(
            "--report {}: cannot create the directory",
            dir.display()
        ))?;
    }
    let mut bar = ProgressBar::new(args.common.json);
    let report = bench::run_bench(&scene_name, &mesh, &config, &mut |p| bar.update(p));
    bar.finish();
    let report = report.map_err(|e| match e {
        CliError::Library(e @ (raypick::Error::NoAdapter(_) | raypick::Error::Device(_))) => {
            CliError::NoGpu(e)
        }
        CliError::Library(source) => CliError::Raypick {
            doing: "bench failed".into(),
            source,
        },
        e => e,
    })?;
    let written = match &args.report {
        Some(dir) => {
            let record = BenchRecord::new(&report, std::env::args().collect());
            let (json, svg) =
                write_bench_report(dir, &record).doing("cannot write the bench report")?;
            format!("wrote {} and {}\n", json.display(), svg.display())
        }
        None => String::new(),
    };
    if args.common.json {
        if let Some(notice) = &report.notice {
            eprintln!("raypick: notice: {}", one_line(notice));
        }
        if !written.is_empty() {
            eprint!("raypick: {written}");
        }
        emit(&to_json(&report)?)
    } else {
        emit(&format!("{report}{written}"))
    }
}

/// Progress of `raypick bench` on stderr: a bar on a terminal; elsewhere (a log, a
/// pipe) one line per step and per measured row, as they happen; nothing with
/// `--json`.
enum ProgressBar {
    Quiet,
    Lines,
    Bar(Option<indicatif::ProgressBar>),
}

impl ProgressBar {
    fn new(json: bool) -> Self {
        match (json, std::io::stderr().is_terminal()) {
            (true, _) => Self::Quiet,
            (false, true) => Self::Bar(None),
            (false, false) => Self::Lines,
        }
    }

    fn update(&mut self, p: bench::Progress<'_>) {
        match self {
            Self::Quiet => {}
            Self::Lines => match p.measured {
                Some(row) => eprintln!("raypick: [{}/{}] {row}", p.done, p.total),
                None if p.done < p.total => {
                    eprintln!("raypick: [{}/{}] {}", p.done + 1, p.total, p.what)
                }
                None => eprintln!("raypick: {}", p.what),
            },
            Self::Bar(bar) => {
                let bar = bar.get_or_insert_with(|| {
                    let bar = indicatif::ProgressBar::with_draw_target(
                        Some(p.total as u64),
                        indicatif::ProgressDrawTarget::stderr(),
                    );
                    if let Ok(style) = indicatif::ProgressStyle::with_template(
                        "{spinner} [{bar:30}] {pos}/{len} {elapsed:>4} {msg}",
                    ) {
                        bar.set_style(style.progress_chars("=> "));
                    }
                    bar.enable_steady_tick(std::time::Duration::from_millis(120));
                    bar
                });
                match p.measured {
                    Some(row) => bar.println(row.to_string()),
                    None => {
                        bar.set_position(p.done as u64);
                        bar.set_message(p.what.to_string());
                    }
                }
            }
        }
    }

    fn finish(&mut self) {
        if let Self::Bar(bar) = self
            && let Some(bar) = bar.take()
        {
            bar.finish_and_clear();
        }
    }
}

fn info_command(args: InfoArgs) -> Result<(), CliError> {
    let info = InfoReport::collect(args.check).map_err(|source| CliError::Raypick {
        doing: "cannot run the arithmetic check".to_string(),
        source,
    })?;
    if args.json {
        emit(&to_json(&info)?)?;
    } else {
        emit(&info.to_string())?;
    }
    match &info.check {
        Some(check) if !check.identical => Err(CliError::Failed(format!(
            "the GPU's arithmetic differs from the CPU's on {}: {}",
            check.adapter.name,
            check
                .result
                .differing
                .iter()
                .map(|(field, n)| format!("{field} ({n} cases)"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => Ok(()),
    }
}
