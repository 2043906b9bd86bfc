//! `raypick`: trace ray files against meshes and benchmark the CPU and GPU backends.
//!
//! Thin: parses the command line, calls [`raypick::io`] and [`raypick::bench`], prints.
//! Every failure is one line `raypick: error: <message>` on stderr and a non-zero exit
//! status (clap's own usage errors keep clap's format and exit status 2).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use raypick::bench::{self, BenchBackends, BenchConfig, RaySet};
use raypick::{Accel, Backend, Cull, TraceOptions, io, scene};

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
}

/// Options shared by `trace` and `bench`.
#[derive(Args)]
struct Common {
    /// Face culling.
    #[arg(long, value_enum, default_value_t = CullArg::None)]
    cull: CullArg,
    /// Timed runs after one warm-up; the best time is reported.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// CPU threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    threads: Option<u32>,
    /// Print one JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

impl Common {
    fn options(&self) -> TraceOptions {
        TraceOptions {
            cull: match self.cull {
                CullArg::None => Cull::None,
                CullArg::Back => Cull::Back,
                CullArg::Front => Cull::Front,
            },
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
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Acceleration structure.
    #[arg(long, value_enum, default_value_t = AccelArg::Bvh)]
    accel: AccelArg,
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
          default_value_t = scene::DEFAULT_SCENE_TRIANGLES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    triangles: u64,
    /// Ray sets (primary, random; default both) and/or the number of rays in each
    /// (default: sized so brute force stays quick). Comma-separated or repeated.
    #[arg(long, value_name = "primary|random|N", value_delimiter = ',', value_parser = parse_rays_arg)]
    rays: Vec<RaysArg>,
    /// Backends to run, comma-separated (default: the CPU, and the GPU if an adapter opens).
    #[arg(long, value_name = "cpu,gpu", value_enum, value_delimiter = ',')]
    backend: Vec<BenchBackendArg>,
    /// Acceleration structures to compare, comma-separated (default: bvh,brute).
    #[arg(long, value_name = "bvh,brute", value_enum, value_delimiter = ',')]
    accel: Vec<AccelArg>,
    #[command(flatten)]
    common: Common,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    Auto,
    Cpu,
    Gpu,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchBackendArg {
    Cpu,
    Gpu,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AccelArg {
    /// A bounding volume hierarchy.
    Bvh,
    /// Every ray against every triangle.
    Brute,
}

impl AccelArg {
    fn accel(self) -> Accel {
        match self {
            AccelArg::Bvh => Accel::Bvh,
            AccelArg::Brute => Accel::Brute,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CullArg {
    /// Double-sided.
    None,
    /// Skip back faces.
    Back,
    /// Skip front faces.
    Front,
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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("raypick: error: {}", one_line(&message));
            ExitCode::FAILURE
        }
    }
}

/// The message on one line (multi-line driver errors are joined).
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `text` to stdout; a closed pipe (`raypick ... | head`) is not an error.
fn emit(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value)
        .map(|s| s + "\n")
        .map_err(|e| format!("cannot format JSON: {e}"))
}

fn gpu_error(e: raypick::Error) -> String {
    format!("cannot open the GPU backend: {e}; {}", bench::no_gpu_hint())
}

/// Fails early (before any tracing) when `path` has no hit file extension or its
/// directory does not exist.
fn check_hit_path(path: &Path) -> Result<(), String> {
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
        Some("hits" | "npy" | "csv") => Ok(()),
        _ => Err(format!(
            "{}: unknown hit file format ({}); supported: .hits, .npy, .csv",
            path.display(),
            match path.extension() {
                Some(e) => format!("extension '.{}'", e.to_string_lossy()),
                None => "no extension".into(),
            }
        )),
    }
}

fn trace(args: TraceArgs) -> Result<(), String> {
    check_hit_path(&args.out)?;
    let mesh = io::load_mesh(&args.mesh).map_err(|e| format!("cannot load mesh: {e}"))?;
    let rays = io::read_rays(&args.rays).map_err(|e| format!("cannot read rays: {e}"))?;
    let threads = args.common.threads();
    let backend = match args.backend {
        BackendArg::Auto => Backend::Auto,
        BackendArg::Cpu => Backend::Cpu,
        BackendArg::Gpu => Backend::Gpu,
    };
    let (picker, fallback) = bench::open_picker(backend, threads).map_err(|e| match backend {
        Backend::Gpu => gpu_error(e),
        _ => format!("cannot open the backend: {e}"),
    })?;
    if let Some(reason) = &fallback {
        eprintln!(
            "raypick: notice: no GPU, tracing on the CPU instead: {}; {}",
            one_line(reason),
            bench::no_gpu_hint()
        );
    }
    let (report, hits) = bench::run_trace(
        &picker,
        &mesh,
        &rays,
        args.accel.accel(),
        &args.common.options(),
        args.common.repeat as usize,
        threads,
        fallback,
    )
    .map_err(|e| format!("trace failed: {e}"))?;
    io::write_hits(&args.out, &hits).map_err(|e| format!("cannot write hits: {e}"))?;
    if args.common.json {
        emit(&to_json(&report)?)
    } else {
        emit(&format!("{report}wrote      {}\n", args.out.display()))
    }
}

fn bench_command(args: BenchArgs) -> Result<(), String> {
    let mut config = BenchConfig {
        repeat: args.common.repeat as usize,
        threads: args.common.threads(),
        options: args.common.options(),
        ..BenchConfig::default()
    };
    if !args.accel.is_empty() {
        config.accels = args.accel.iter().map(|a| a.accel()).collect();
        config.accels.dedup();
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
            cpu: args.backend.contains(&BenchBackendArg::Cpu),
            gpu: args.backend.contains(&BenchBackendArg::Gpu).then_some(true),
        };
    }

    let (scene_name, mesh) = match &args.mesh {
        Some(path) => (
            path.display().to_string(),
            io::load_mesh(path).map_err(|e| format!("cannot load mesh: {e}"))?,
        ),
        None => (
            "builtin".to_string(),
            scene::builtin_scene(args.triangles as usize),
        ),
    };
    let show_progress = !args.common.json && std::io::stderr().is_terminal();
    let mut progress = |what: &str| {
        if show_progress {
            eprint!("\r\x1b[Kraypick: {what} ...");
        }
    };
    let report = bench::run_bench(&scene_name, &mesh, &config, &mut progress);
    if show_progress {
        eprint!("\r\x1b[K");
    }
    let report = report.map_err(|e| match e {
        e @ (raypick::Error::NoAdapter(_) | raypick::Error::Device(_)) => gpu_error(e),
        e => format!("bench failed: {e}"),
    })?;
    if args.common.json {
        if let Some(notice) = &report.notice {
            eprintln!("raypick: notice: {}", one_line(notice));
        }
        emit(&to_json(&report)?)
    } else {
        emit(&report.to_string())
    }
}
