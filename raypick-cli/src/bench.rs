//! Timing and comparison helpers behind `raypick trace` and `raypick bench`, usable
//! from benches and tests too.
//!
//! - [`open_picker`] opens a backend (with a CPU thread count) and says why
//!   [`Backend::Auto`] fell back to the CPU.
//! - [`prepare`] prepares a mesh for a picker and times the CPU work (`build_ms`)
//!   and the transfer to the GPU (`upload_ms`) separately.
//! - [`time_trace`] traces one ray batch once as warm-up, then `repeat` more times,
//!   and keeps the best wall time.
//! - [`parity`] counts the rays two backends agree on.
//! - [`run_trace`] and [`run_bench`] put these together into a [`TraceReport`] and a
//!   [`BenchReport`], which format themselves as text and serialise with serde.
//!
//! What the times measure:
//! - `build_ms`: CPU preparation of the mesh: building the BVH, or for brute force
//!   packing the triangles (and on the CPU backend laying them out in SIMD blocks);
//!   0 for ray queries, whose whole preparation is the upload.
//! - `upload_ms`: creating the GPU triangle buffers from the packed triangles and
//!   waiting until the queue has finished the copy; for ray queries packing the
//!   triangles, their boxes and the driver's build of its acceleration structures;
//!   always 0 on the CPU backend.
//! - `trace_ms`: the best wall time of one [`Picker::trace_into`] call over the whole
//!   ray batch, after one untimed warm-up call. On the GPU that includes writing the
//!   rays to the GPU, the dispatches and reading the hits back (the time a caller
//!   waits for its answers), but never device or pipeline creation, mesh upload or
//!   file I/O.

use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Instant;

use raypick::bvh::Bvh;
use raypick::cpu::traversal_cost::{TraversalCost, WARP, traversal_cost, wide_traversal_cost};
use raypick::cpu::wide_nodes::WideNodes;
use raypick::gpu::{AdapterKinds, GpuContext, GpuOptions, GpuTimes};
use raypick::prepare::pack_mesh;
use raypick::types::PackedTriangle;
use raypick::{
    Accel, Backend, Error, Hit, Mesh, NodeLayout, PickMesh, Picker, PickerOptions, Ray,
    TraceOptions, TraceRay,
};
use raypick_testkit::fixtures::RaySet;

use crate::error::CliError;

/// What the bench reports when it fails: the library's error, or its own.
type Result<T, E = CliError> = std::result::Result<T, E>;

/// Ray–triangle tests one default bench trace may cost (rays × triangles with brute
/// force): 16,384 rays (a 128 × 128 camera) on the 100,000-triangle built-in scene.
/// Measured on a shared 2-core machine: 0.8–1.4 s per trace on the CPU backend
/// (1,200–2,100 M tests/s), 5–10 s on lavapipe (170–300 M tests/s); far less on a
/// real GPU.
pub const DEFAULT_TEST_BUDGET: u64 = 16_384 * 100_000;

/// Default rays per ray set with a BVH: a 1024 × 1024 camera.
pub const DEFAULT_BVH_RAYS: usize = 1 << 20;

/// The tolerance of [`Parity::within_tolerance`]: the test kit's `parity::close`
/// (`t` relative, `u` and `v` absolute).
pub use raypick_testkit::parity::CLOSE as PARITY_REL_T;

/// How to get a GPU adapter without a graphics card.
pub const GET_A_GPU_HINT: &str = "to run the GPU path without a graphics card, install Mesa's lavapipe \
     Vulkan driver (Debian/Ubuntu: apt-get install mesa-vulkan-drivers libvulkan1)";

/// What to tell users whose GPU did not open: [`GET_A_GPU_HINT`], and that
/// `WGPU_BACKEND` restricts the graphics APIs tried when it is set.
pub fn no_gpu_hint() -> String {
    match std::env::var("WGPU_BACKEND") {
        Ok(v) if !v.trim().is_empty() => {
            format!(
                "WGPU_BACKEND={v} limits the graphics APIs tried (unset it to try all); {GET_A_GPU_HINT}"
            )
        }
        _ => GET_A_GPU_HINT.to_string(),
    }
}

/// The default number of rays per ray set for a mesh of `triangles` triangles: a
/// square power of two (a `2^k × 2^k` camera) with at most [`DEFAULT_TEST_BUDGET`]
/// ray–triangle tests, between 32² = 1,024 and 1,024² = 1,048,576 rays.
///
/// ```
/// assert_eq!(raypick::bench::default_ray_count(100_000), 16_384);
/// assert_eq!(raypick::bench::default_ray_count(10_000_000), 1_024);
/// ```
pub fn default_ray_count(triangles: usize) -> usize {
    let budget = DEFAULT_TEST_BUDGET / triangles.max(1) as u64;
    let mut side = 32u64;
    while side < 1024 && (2 * side) * (2 * side) <= budget {
        side *= 2;
    }
    (side * side) as usize
}

/// Opens a picker on `backend`; the CPU backend runs on `threads` threads (all cores
/// for `None`).
///
/// [`Backend::Auto`] opens the GPU when it can, else the CPU; the second value is
/// then the reason the GPU could not be opened (the error text). [`Backend::Gpu`]
/// returns that error instead.
pub fn open_picker(
    backend: Backend,
    threads: Option<usize>,
    layout: NodeLayout,
) -> raypick::Result<(Picker, Option<String>)> {
    let options = PickerOptions {
        threads,
        gpu: timed_gpu(layout),
    };
    let picker = Picker::with_options(backend, options)?;
    let fallback = picker.fallback_reason().map(str::to_string);
    Ok((picker, fallback))
}

/// GPU options that measure kernel and host times ([`GpuOptions::timing`]), BVH
/// nodes in `layout`.
fn timed_gpu(layout: NodeLayout) -> GpuOptions {
    GpuOptions {
        timing: true,
        node_layout: layout,
        ..GpuOptions::default()
    }
}

/// A trace's GPU times on one line: kernel time (when measured), then the host's.
struct GpuSplit<'a>(&'a GpuTimes);

impl fmt::Display for GpuSplit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        match t.kernel_ms {
            Some(ms) => write!(f, "kernel {} ms in {} passes", sig3(ms), t.passes)?,
            None => write!(f, "kernel time not measured (no timestamp queries)")?,
        }
        write!(
            f,
            "; host: submit {} ms, wait {} ms, finish {} ms",
            sig3(t.submit_ms),
            sig3(t.wait_ms),
            sig3(t.finish_ms)
        )
    }
}

/// The number of threads [`open_picker`]`(Backend::Cpu, threads)` traces on.
pub fn cpu_thread_count(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(rayon::current_num_threads).max(1)
}

/// The CPU thread count of a picker made by [`open_picker`]`(_, threads)`, or `None`
/// on the GPU.
pub fn picker_threads(picker: &Picker, threads: Option<usize>) -> Option<usize> {
    (picker.backend() == Backend::Cpu).then(|| cpu_thread_count(threads))
}

/// Milliseconds elapsed since `start`.
fn ms_since(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1e9).round() / 1e6
}

/// A mesh prepared for a picker, with the time each step took.
#[derive(Debug)]
pub struct Prepared {
    /// The prepared mesh.
    pub mesh: PickMesh,
    /// CPU preparation time in milliseconds (see the [module docs](self)).
    pub build_ms: f64,
    /// GPU upload time in milliseconds, 0 on the CPU (see the [module docs](self)).
    pub upload_ms: f64,
    /// The BVH the GPU traverses, when the mesh went to the GPU with [`Accel::Bvh`].
    pub gpu_bvh: Option<Arc<Bvh>>,
}

/// Prepares `mesh` for `picker`, timing the CPU preparation and the GPU upload
/// separately (see the [module docs](self)).
pub fn prepare(picker: &Picker, mesh: &Mesh, accel: Accel) -> Result<Prepared> {
    match picker.gpu() {
        None => {
            let start = Instant::now();
            let prepared = picker.upload_with(mesh, accel)?;
            Ok(Prepared {
                mesh: prepared,
                build_ms: ms_since(start),
                upload_ms: 0.0,
                gpu_bvh: None,
            })
        }
        Some(gpu) => {
            let start = Instant::now();
            let built = match accel {
                Accel::Brute => Built::Packed(pack_mesh(mesh)),
                Accel::RayQuery => Built::ByTheDriver,
                _ => Built::Bvh(Arc::new(Bvh::build(mesh))),
            };
            let build_ms = ms_since(start);
            let start = Instant::now();
            let mut gpu_bvh = None;
            let uploaded = match built {
                Built::Packed(packed) => gpu.upload_packed(&packed)?,
                Built::Bvh(bvh) => {
                    gpu_bvh = Some(bvh.clone());
                    gpu.upload_bvh(bvh)?
                }
                Built::ByTheDriver => gpu.upload_with(mesh, Accel::RayQuery)?,
            };
            // The buffer contents are copied on the next submission: make it happen now.
            gpu.queue().submit([]);
            gpu.device()
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(Error::Poll)?;
            Ok(Prepared {
                mesh: PickMesh::from_gpu(uploaded, mesh.origin()),
                build_ms,
                upload_ms: ms_since(start),
                gpu_bvh,
            })
        }
    }
}

/// What the CPU builds before a GPU upload.
enum Built {
    Packed(Vec<PackedTriangle>),
    Bvh(Arc<Bvh>),
    /// Nothing: for ray queries the driver builds its structures during the upload.
    ByTheDriver,
}

/// Why `picker` cannot prepare meshes with `accel`, if it cannot: hardware ray
/// queries need a GPU that has them.
fn cannot_prepare(picker: &Picker, accel: Accel) -> Option<String> {
    let has_ray_queries = picker.gpu().is_some_and(GpuContext::has_ray_queries);
    (accel == Accel::RayQuery && !has_ray_queries).then(|| {
        format!(
            "{accel} skipped on the {} ({}): no hardware ray queries there",
            picker.backend().name(),
            picker.device_name()
        )
    })
}

/// The result of [`time_trace`].
#[derive(Clone, Debug)]
pub struct Timed {
    /// The hits of the last run.
    pub hits: Vec<Hit>,
    /// Wall time of each timed run, in milliseconds.
    pub runs_ms: Vec<f64>,
    /// The best of [`Timed::runs_ms`].
    pub best_ms: f64,
    /// Where the best run's time went on the GPU, when the picker's GPU context
    /// measures it ([`GpuOptions::timing`]).
    pub gpu_times: Option<GpuTimes>,
}

/// Traces `rays` once as warm-up, then `repeat` more times (at least once), timing
/// each [`Picker::trace_into`] call; the best time is [`Timed::best_ms`].
///
/// Fails if a timed run's hits differ from the warm-up's (a backend must be
/// deterministic).
pub fn time_trace<R: TraceRay>(
    picker: &Picker,
    mesh: &PickMesh,
    rays: &[R],
    options: &TraceOptions,
    repeat: usize,
) -> Result<Timed> {
    let mut first = vec![Hit::MISS; rays.len()];
    picker.trace_into(mesh, rays, options, &mut first)?;
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut runs_ms = Vec::with_capacity(repeat.max(1));
    let take_times = || picker.gpu().and_then(GpuContext::take_times);
    take_times(); // not the warm-up's
    let mut gpu_times = None;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        picker.trace_into(mesh, rays, options, &mut hits)?;
        let ms = ms_since(start);
        let times = take_times();
        if runs_ms.iter().all(|&best| ms < best) {
            gpu_times = times;
        }
        runs_ms.push(ms);
        if parity(&first, &hits).identical != rays.len() {
            return Err(CliError::Failed(format!(
                "the {} backend returned different hits for the same rays on two runs",
                picker.backend().name()
            )));
        }
    }
    let best_ms = runs_ms.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(Timed {
        hits,
        runs_ms,
        best_ms,
        gpu_times,
    })
}

/// Millions of rays per second for `rays` rays in `ms` milliseconds (0 when `ms` is 0).
pub fn mrays_per_s(rays: usize, ms: f64) -> f64 {
    if ms > 0.0 {
        rays as f64 / ms / 1e3
    } else {
        0.0
    }
}

/// Millions of ray–triangle tests per second (brute force: every ray against every
/// triangle) for `rays × triangles` tests in `ms` milliseconds (0 when `ms` is 0).
pub fn mtests_per_s(rays: usize, triangles: usize, ms: f64) -> f64 {
    if ms > 0.0 {
        rays as f64 * triangles as f64 / ms / 1e3
    } else {
        0.0
    }
}

/// Number of hits (rays that hit a triangle).
pub fn hit_count(hits: &[Hit]) -> usize {
    hits.iter().filter(|h| h.is_hit()).count()
}

/// How many rays two hit lists agree on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Parity {
    /// Rays compared (the length of the shorter list).
    pub rays: usize,
    /// Rays whose hits are bit-for-bit identical (`t`, `u`, `v`, `prim`).
    pub identical: usize,
    /// Rays with the same triangle (or both missing) and `t`, `u`, `v` within
    /// [`PARITY_REL_T`] (the test kit's `parity::close`); includes the identical ones.
    pub within_tolerance: usize,
}

impl Parity {
    /// Rays that disagree beyond the tolerance.
    pub fn differing(&self) -> usize {
        self.rays - self.within_tolerance
    }
}

/// Counts the rays on which `a` and `b` agree (see [`Parity`]).
pub fn parity(a: &[Hit], b: &[Hit]) -> Parity {
    let mut p = Parity {
        rays: a.len().min(b.len()),
        ..Parity::default()
    };
    for (x, y) in a.iter().zip(b) {
        if raypick_testkit::parity::identical(x, y) {
            p.identical += 1;
            p.within_tolerance += 1;
        } else if raypick_testkit::parity::close(x, y) {
            p.within_tolerance += 1;
        }
    }
    p
}

/// Counts and times of one traced batch, shared by [`TraceReport`] and [`BenchRow`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Measurement {
    /// Rays traced.
    pub rays: usize,
    /// Rays that hit a triangle.
    pub hits: usize,
    /// CPU preparation of the mesh, in milliseconds (see the [module docs](self)).
    pub build_ms: f64,
    /// Mesh upload to the GPU, in milliseconds; 0 on the CPU.
    pub upload_ms: f64,
    /// Best trace time of the timed runs after a warm-up, in milliseconds.
    pub trace_ms: f64,
    /// Millions of rays per second at `trace_ms`.
    pub mrays_per_s: f64,
    /// Millions of ray–triangle tests per second at `trace_ms`.
    pub mtests_per_s: f64,
    /// Where the best trace's time went on the GPU: kernel time from timestamp
    /// queries (`null` without them) and the host's submit, wait and finish times;
    /// `null` on the CPU.
    pub gpu_times: Option<GpuTimes>,
    /// Node layout of the BVH the GPU traversed (`wide` or `binary`); `null` for
    /// the other structures and on the CPU.
    pub layout: Option<NodeLayout>,
}

impl Measurement {
    /// GPU kernel time of the best trace, when measured.
    pub fn kernel_ms(&self) -> Option<f64> {
        self.gpu_times.and_then(|t| t.kernel_ms)
    }

    /// The measurement of `timed` runs over `rays` rays and `triangles` triangles.
    pub fn new(prepared: &Prepared, timed: &Timed, rays: usize, triangles: usize) -> Self {
        Self {
            rays,
            hits: hit_count(&timed.hits),
            build_ms: prepared.build_ms,
            upload_ms: prepared.upload_ms,
            trace_ms: timed.best_ms,
            mrays_per_s: mrays_per_s(rays, timed.best_ms),
            mtests_per_s: mtests_per_s(rays, triangles, timed.best_ms),
            gpu_times: timed.gpu_times,
            layout: prepared.mesh.gpu().and_then(|mesh| mesh.node_layout()),
        }
    }
}

/// What `raypick trace` reports (its `--json` object).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraceReport {
    /// `"cpu"` or `"gpu"`.
    pub backend: String,
    /// The device that traced ([`Picker::device_name`]).
    pub adapter: String,
    /// Acceleration structure ([`Accel::name`]).
    pub accel: String,
    /// Culling mode ([`raypick::Cull::name`]).
    pub cull: String,
    /// Ray–triangle test ([`raypick::Mode::name`]).
    pub mode: String,
    /// Triangles in the mesh.
    pub triangles: usize,
    /// Counts and times of the traced batch.
    #[serde(flatten)]
    pub measured: Measurement,
    /// Timed runs after the warm-up.
    pub repeat: usize,
    /// CPU threads, or `None` on the GPU.
    pub threads: Option<usize>,
    /// Why `--backend auto` fell back to the CPU, if it did.
    pub fallback: Option<String>,
}

/// Prepares `mesh` for `picker`, traces `rays` (one warm-up, then `repeat` timed
/// runs) and returns the report and the hits.
///
/// `cpu_threads` is the thread count the CPU backend was made with (`None`: rayon's
/// global pool), `fallback` the reason [`open_picker`] gave for not using the GPU.
#[allow(clippy::too_many_arguments)]
pub fn run_trace<R: TraceRay>(
    picker: &Picker,
    mesh: &Mesh,
    rays: &[R],
    accel: Option<Accel>,
    options: &TraceOptions,
    repeat: usize,
    cpu_threads: Option<usize>,
    fallback: Option<String>,
) -> Result<(TraceReport, Vec<Hit>)> {
    let accel = accel.unwrap_or_else(|| picker.default_accel());
    let prepared = prepare(picker, mesh, accel)?;
    let timed = time_trace(picker, &prepared.mesh, rays, options, repeat)?;
    let triangles = mesh.triangle_count();
    let report = TraceReport {
        backend: picker.backend().name().to_string(),
        adapter: picker.device_name(),
        accel: accel.name().to_string(),
        cull: options.cull.name().to_string(),
        mode: options.mode.name().to_string(),
        triangles,
        measured: Measurement::new(&prepared, &timed, rays.len(), triangles),
        repeat: timed.runs_ms.len(),
        threads: picker_threads(picker, cpu_threads),
        // A GPU lost or out of memory during the run also sends `Backend::Auto` to the CPU.
        fallback: fallback.or_else(|| picker.fallback_reason().map(str::to_string)),
    };
    Ok((report, timed.hits))
}

impl fmt::Display for TraceReport {
    /// A few aligned lines for people.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hit_pct = if self.measured.rays > 0 {
            100.0 * self.measured.hits as f64 / self.measured.rays as f64
        } else {
            0.0
        };
        writeln!(f, "backend    {}", self.backend)?;
        writeln!(f, "device     {}", self.adapter)?;
        write!(f, "accel      {}", self.accel)?;
        if let Some(layout) = self.measured.layout {
            write!(f, " ({layout} nodes)")?;
        }
        writeln!(f, ", cull {}, mode {}", self.cull, self.mode)?;
        writeln!(f, "triangles  {}", self.triangles)?;
        writeln!(f, "rays       {}", self.measured.rays)?;
        writeln!(f, "hits       {} ({hit_pct:.1}%)", self.measured.hits)?;
        writeln!(f, "build      {:.3} ms", self.measured.build_ms)?;
        writeln!(f, "upload     {:.3} ms", self.measured.upload_ms)?;
        writeln!(
            f,
            "trace      {:.3} ms (best of {} after a warm-up)",
            self.measured.trace_ms, self.repeat
        )?;
        if let Some(times) = &self.measured.gpu_times {
            writeln!(f, "gpu time   {}", GpuSplit(times))?;
        }
        writeln!(
            f,
            "speed      {} Mrays/s, {} M ray-triangle tests/s",
            sig3(self.measured.mrays_per_s),
            sig3(self.measured.mtests_per_s)
        )
    }
}

/// Which backends [`run_bench`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchBackends {
    /// Run the CPU backend.
    pub cpu: bool,
    /// Run the GPU backend: `Some(true)` requires it (any adapter, software ones
    /// included; none is an error), `Some(false)` runs it when a hardware adapter
    /// opens (as `Backend::Auto` would), `None` skips it.
    pub gpu: Option<bool>,
}

impl Default for BenchBackends {
    /// Every backend worth running: the CPU, and the GPU when a hardware adapter opens.
    fn default() -> Self {
        Self {
            cpu: true,
            gpu: Some(false),
        }
    }
}

/// What [`run_bench`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchConfig {
    /// Ray sets, in report order.
    pub ray_sets: Vec<RaySet>,
    /// Rays per set; `None` for [`default_ray_count`].
    pub rays: Option<usize>,
    /// Backends.
    pub backends: BenchBackends,
    /// Timed runs after the warm-up (at least 1).
    pub repeat: usize,
    /// CPU threads (`None`: all cores).
    pub threads: Option<usize>,
    /// Acceleration structures to compare, in report order; `None`: the BVH and
    /// brute force, with ray queries after the BVH where a GPU's default is ray
    /// queries ([`Picker::default_accel`]).
    pub accels: Option<Vec<Accel>>,
    /// Trace options.
    pub options: TraceOptions,
    /// Node layout of the GPU's BVH.
    pub layout: NodeLayout,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            ray_sets: RaySet::ALL.to_vec(),
            rays: None,
            backends: BenchBackends::default(),
            repeat: 1,
            threads: None,
            accels: None,
            options: TraceOptions::default(),
            layout: NodeLayout::default(),
        }
    }
}

/// One backend on one ray set.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchRow {
    /// `"cpu"` or `"gpu"`.
    pub backend: String,
    /// The device that traced ([`Picker::device_name`]).
    pub adapter: String,
    /// Acceleration structure ([`Accel::name`]).
    pub accel: String,
    /// The ray set.
    pub ray_set: RaySet,
    /// Counts and times of the traced batch.
    #[serde(flatten)]
    pub measured: Measurement,
}

impl fmt::Display for BenchRow {
    /// One line: what was traced where, and how fast.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.measured;
        let layout = m.layout.map(|l| format!(", {l} nodes")).unwrap_or_default();
        write!(
            f,
            "{} {} rays ({}{layout}) on the {} [{}]: build {} ms, trace {} ms, {} Mrays/s, {} Mtests/s",
            m.rays,
            self.ray_set,
            self.accel,
            self.backend,
            self.adapter,
            sig3(m.build_ms + m.upload_ms),
            sig3(m.trace_ms),
            sig3(m.mrays_per_s),
            sig3(m.mtests_per_s)
        )?;
        match m.kernel_ms() {
            Some(ms) => write!(f, ", kernel {} ms", sig3(ms)),
            None => Ok(()),
        }
    }
}

/// Agreement of two runs on one ray set: the CPU and the GPU with one acceleration
/// structure, or the BVH and brute force on the CPU.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ParityRow {
    /// What was compared, e.g. `bvh cpu/gpu` or `cpu bvh/brute`.
    pub compared: String,
    /// The ray set.
    pub ray_set: RaySet,
    /// Rays compared.
    pub rays: usize,
    /// Rays with bit-identical hits.
    pub identical: usize,
    /// Rays with the same triangle and `t`, `u`, `v` within [`PARITY_REL_T`].
    pub within_tolerance: usize,
    /// Rays that differ beyond that.
    pub differing: usize,
}

/// GPU speed relative to the CPU on one ray set.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SpeedRatio {
    /// Acceleration structure ([`Accel::name`]).
    pub accel: String,
    /// The ray set.
    pub ray_set: RaySet,
    /// CPU trace time / GPU trace time: above 1 the GPU is faster.
    pub gpu_over_cpu: f64,
}

/// What `raypick bench` reports (its `--json` object).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchReport {
    /// The scene: a mesh file path, or `builtin` for [`fixtures::builtin_scene`].
    pub scene: String,
    /// Triangles in the scene.
    pub triangles: usize,
    /// Culling mode ([`raypick::Cull::name`]).
    pub cull: String,
    /// Ray–triangle test ([`raypick::Mode::name`]).
    pub mode: String,
    /// Timed runs after the warm-up per row.
    pub repeat: usize,
    /// CPU threads, when the CPU ran.
    pub threads: Option<usize>,
    /// One row per backend, acceleration structure and ray set.
    pub rows: Vec<BenchRow>,
    /// GPU/CPU speed per ray set, when both ran.
    pub speed: Vec<SpeedRatio>,
    /// CPU/GPU agreement per acceleration structure and ray set, and BVH/brute
    /// force agreement on the CPU, when both ran.
    pub parity: Vec<ParityRow>,
    /// What the GPU's BVH traversal costs per ray on each ray set, counted on its
    /// CPU twin, when the GPU ran with the BVH; beside it, what a traversal of the
    /// eight-wide layout would cost (one row per layout and ray set).
    pub gpu_traversal: Vec<TraversalRow>,
    /// Why the GPU ran on its adapter ([`GpuContext::adapter_reason`]), when it ran.
    pub gpu_adapter: Option<String>,
    /// Why the GPU did not run although it was wanted, with a hint on getting one,
    /// and which acceleration structures a backend skipped (ray queries on the CPU
    /// or on a GPU without them); `; `-separated.
    pub notice: Option<String>,
}

/// A GPU BVH traversal's cost on one ray set, for one node layout.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraversalRow {
    /// The ray set.
    pub ray_set: RaySet,
    /// The layout; nodes, triangles and bytes per ray; SIMT efficiency; the deepest
    /// stack.
    #[serde(flatten)]
    pub cost: TraversalCost,
}

/// A step of [`run_bench`] about to run, or a row just measured, for a progress
/// display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress<'a> {
    /// Steps finished so far.
    pub done: usize,
    /// All steps of the run: per acceleration structure and backend, one
    /// preparation and one trace per ray set.
    pub total: usize,
    /// What runs next, e.g. `tracing 16384 primary rays (bvh) on the gpu`, or
    /// `measured` with [`Progress::measured`].
    pub what: &'a str,
    /// The row the step that just ended measured (a trace), else `None`.
    pub measured: Option<&'a BenchRow>,
}

/// Runs the benchmark: for each backend, prepares `mesh`, then traces each ray set
/// (one warm-up, then `repeat` timed runs); compares speed and hits of the CPU and
/// the GPU. `progress` is told what is about to run (for a progress bar), each row
/// as soon as it is measured, and once more with `done == total` at the end.
///
/// Fails if the mesh has no finite vertices, if a required GPU cannot be opened, or
/// if a backend fails.
pub fn run_bench(
    scene: &str,
    mesh: &Mesh,
    config: &BenchConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<BenchReport> {
    let bounds = mesh.bounds().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{scene}: the mesh has no triangles with finite vertices to aim rays at"
        ))
    })?;
    let triangles = mesh.triangle_count();
    let ray_count = |accel: Accel| {
        config.rays.unwrap_or_else(|| match accel {
            Accel::Brute => default_ray_count(triangles),
            _ => DEFAULT_BVH_RAYS,
        })
    };
    let mut pickers = Vec::new();
    let mut notices = Vec::new();
    if config.backends.cpu {
        pickers.push(open_picker(Backend::Cpu, config.threads, config.layout)?.0);
    }
    match config.backends.gpu {
        Some(true) => pickers.push(Picker::from_gpu(GpuContext::with_options(timed_gpu(
            config.layout,
        ))?)),
        Some(false) => match GpuContext::with_options(GpuOptions {
            adapters: Some(AdapterKinds::Hardware),
            ..timed_gpu(config.layout)
        }) {
            Ok(gpu) => pickers.push(Picker::from_gpu(gpu)),
            Err(e) => {
                let hint = match e {
                    Error::OnlySoftwareAdapters { .. } => {
                        "`--backend cpu --backend gpu` measures them too".to_string()
                    }
                    _ => no_gpu_hint(),
                };
                notices.push(format!("no GPU results: {}; {hint}", e.with_sources()))
            }
        },
        None => {}
    }

    // The (acceleration structure, picker) pairs that can run, in report order.
    let accels = config.accels.clone().unwrap_or_else(|| {
        let mut accels = vec![Accel::Bvh, Accel::Brute];
        if pickers.iter().any(|p| p.default_accel() == Accel::RayQuery) {
            accels.insert(1, Accel::RayQuery);
        }
        accels
    });
    let mut runs: Vec<(Accel, &Picker)> = Vec::new();
    for &accel in &accels {
        for picker in &pickers {
            match cannot_prepare(picker, accel) {
                Some(why) => notices.push(why),
                None => runs.push((accel, picker)),
            }
        }
    }
    // One more step counts the GPU BVH traversal's work when the GPU runs the BVH.
    let counts_gpu_bvh = runs
        .iter()
        .any(|(accel, p)| *accel == Accel::Bvh && p.backend() == Backend::Gpu);
    let total = runs.len() * (1 + config.ray_sets.len()) + usize::from(counts_gpu_bvh);
    let mut done = 0;
    let mut step = |what: &str, measured: Option<&BenchRow>| {
        progress(Progress {
            done,
            total,
            what,
            measured,
        });
        done += usize::from(measured.is_none());
    };
    let mut rows = Vec::new();
    let mut speed = Vec::new();
    let mut parity_rows = Vec::new();
    let mut gpu_traversal = Vec::new();
    // Hits of the CPU per (accel, ray set), for the BVH/brute comparison.
    let mut cpu_hits: Vec<(Accel, RaySet, Vec<Ray>, Vec<Hit>)> = Vec::new();
    // Hits of the GPU's ray queries per ray set, for the comparison with the CPU BVH.
    let mut ray_query_hits: Vec<(RaySet, Vec<Hit>)> = Vec::new();
    for &accel in &accels {
        if !runs.iter().any(|r| r.0 == accel) {
            continue;
        }
        let count = ray_count(accel);
        let ray_sets: Vec<(RaySet, Vec<Ray>)> = config
            .ray_sets
            .iter()
            .map(|&s| (s, s.generate(bounds, count)))
            .collect();
        let mut hits: Vec<(Backend, RaySet, Vec<Hit>)> = Vec::new();
        let mut gpu_bvh: Option<Arc<Bvh>> = None;
        let mut times: Vec<(Backend, RaySet, f64)> = Vec::new();
        for picker in runs.iter().filter(|r| r.0 == accel).map(|r| r.1) {
            let backend = picker.backend().name();
            let name = accel.name();
            step(
                &format!("preparing {triangles} triangles ({name}) on the {backend}"),
                None,
            );
            let prepared = prepare(picker, mesh, accel)?;
            gpu_bvh = gpu_bvh.or_else(|| prepared.gpu_bvh.clone());
            for (set, rays) in &ray_sets {
                step(
                    &format!(
                        "tracing {} {set} rays ({name}) on the {backend}",
                        rays.len()
                    ),
                    None,
                );
                let timed =
                    time_trace(picker, &prepared.mesh, rays, &config.options, config.repeat)?;
                rows.push(BenchRow {
                    backend: backend.to_string(),
                    adapter: picker.device_name(),
                    accel: name.to_string(),
                    ray_set: *set,
                    measured: Measurement::new(&prepared, &timed, rays.len(), triangles),
                });
                step("measured", rows.last());
                times.push((picker.backend(), *set, timed.best_ms));
                hits.push((picker.backend(), *set, timed.hits));
            }
        }
        if let Some(bvh) = gpu_bvh.take() {
            step("counting the GPU traversal's work per ray", None);
            let wide = WideNodes::from_bvh(&bvh);
            for (set, rays) in &ray_sets {
                for cost in [
                    traversal_cost(&bvh, rays, &config.options),
                    wide_traversal_cost(&wide, bvh.triangles(), rays, &config.options),
                ] {
                    gpu_traversal.push(TraversalRow {
                        ray_set: *set,
                        cost,
                    });
                }
            }
        }
        let find_hits =
            |b: Backend, s: RaySet| hits.iter().find(|h| h.0 == b && h.1 == s).map(|h| &h.2);
        let find_ms =
            |b: Backend, s: RaySet| times.iter().find(|h| h.0 == b && h.1 == s).map(|h| h.2);
        for (set, rays) in &ray_sets {
            if let (Some(cpu), Some(gpu)) =
                (find_ms(Backend::Cpu, *set), find_ms(Backend::Gpu, *set))
            {
                speed.push(SpeedRatio {
                    accel: accel.name().to_string(),
                    ray_set: *set,
                    gpu_over_cpu: if gpu > 0.0 { cpu / gpu } else { 0.0 },
                });
            }
            if let (Some(cpu), Some(gpu)) =
                (find_hits(Backend::Cpu, *set), find_hits(Backend::Gpu, *set))
            {
                parity_rows.push(ParityRow::new(
                    format!("{} cpu/gpu", accel.name()),
                    *set,
                    parity(cpu, gpu),
                ));
            }
            if let Some(cpu) = find_hits(Backend::Cpu, *set) {
                cpu_hits.push((accel, *set, rays.clone(), cpu.clone()));
            }
            if let (Accel::RayQuery, Some(gpu)) = (accel, find_hits(Backend::Gpu, *set)) {
                ray_query_hits.push((*set, gpu.clone()));
            }
        }
    }
    progress(Progress {
        done: total,
        total,
        what: "comparing hits",
        measured: None,
    });
    // The BVH against brute force on the CPU, on brute force's rays.
    if let Some(cpu) = pickers.iter().find(|p| p.backend() == Backend::Cpu)
        && accels.contains(&Accel::Bvh)
    {
        let mut prepared = None;
        for (_, set, rays, brute) in cpu_hits.iter().filter(|h| h.0 == Accel::Brute) {
            if prepared.is_none() {
                prepared = Some(cpu.upload_with(mesh, Accel::Bvh)?);
            }
            let bvh = cpu.trace(
                prepared.as_ref().expect("just prepared"),
                rays,
                &config.options,
            )?;
            parity_rows.push(ParityRow::new(
                "cpu bvh/brute".to_string(),
                *set,
                parity(&bvh, brute),
            ));
        }
    }

    // The GPU's ray queries against the CPU's BVH, on the same rays (both use the
    // BVH's ray count).
    for (set, gpu) in &ray_query_hits {
        let same_rays = |h: &&(Accel, RaySet, Vec<Ray>, Vec<Hit>)| {
            h.0 == Accel::Bvh && h.1 == *set && h.3.len() == gpu.len()
        };
        if let Some((_, _, _, cpu)) = cpu_hits.iter().find(same_rays) {
            parity_rows.push(ParityRow::new(
                "gpu ray-query/cpu bvh".to_string(),
                *set,
                parity(cpu, gpu),
            ));
        }
    }

    Ok(BenchReport {
        scene: scene.to_string(),
        triangles,
        cull: config.options.cull.name().to_string(),
        mode: config.options.mode.name().to_string(),
        repeat: config.repeat.max(1),
        threads: config
            .backends
            .cpu
            .then(|| cpu_thread_count(config.threads)),
        rows,
        speed,
        parity: parity_rows,
        gpu_traversal,
        gpu_adapter: pickers
            .iter()
            .find_map(|p| p.gpu().map(|gpu| gpu.adapter_reason().to_string())),
        notice: (!notices.is_empty()).then(|| notices.join("; ")),
    })
}

impl ParityRow {
    fn new(compared: String, ray_set: RaySet, p: Parity) -> Self {
        Self {
            compared,
            ray_set,
            rays: p.rays,
            identical: p.identical,
            within_tolerance: p.within_tolerance,
            differing: p.differing(),
        }
    }
}

/// `x` with three significant digits (`0.00239`, `2.39`, `239`, `2387`).
pub(crate) fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

/// Lays out `cells` (first row = header) as a table: text columns left-aligned,
/// numbers right-aligned.
fn table(cells: &[Vec<String>], numeric: &[bool]) -> String {
    let columns = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in cells {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let _ = if numeric[c] {
                write!(line, "{cell:>w$}", w = widths[c])
            } else {
                write!(line, "{cell:<w$}", w = widths[c])
            };
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl fmt::Display for BenchReport {
    /// The comparison table, then speed ratios, parity and the notice, for people.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cells = vec![
            [
                "scene",
                "triangles",
                "accel",
                "ray set",
                "rays",
                "backend",
                "device",
                "build ms",
                "trace ms",
                "kernel ms",
                "Mrays/s",
                "Mtests/s",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for r in &self.rows {
            cells.push(vec![
                self.scene.clone(),
                self.triangles.to_string(),
                r.accel.clone(),
                r.ray_set.to_string(),
                r.measured.rays.to_string(),
                r.backend.clone(),
                r.adapter.clone(),
                sig3(r.measured.build_ms + r.measured.upload_ms),
                sig3(r.measured.trace_ms),
                r.measured.kernel_ms().map_or("-".to_string(), sig3),
                sig3(r.measured.mrays_per_s),
                sig3(r.measured.mtests_per_s),
            ]);
        }
        f.write_str(&table(
            &cells,
            &[
                false, true, false, false, true, false, false, true, true, true, true, true,
            ],
        ))?;
        writeln!(
            f,
            "(cull {}, mode {}; build ms = BVH build or packing, plus upload to the GPU (for ray-query the driver's build); trace ms = best of {} after a warm-up; kernel ms = GPU time in the compute passes of that trace, from timestamp queries; Mtests/s counts rays x triangles)",
            self.cull, self.mode, self.repeat
        )?;
        for s in &self.speed {
            let verdict = if s.gpu_over_cpu >= 1.0 {
                "faster"
            } else {
                "slower"
            };
            writeln!(
                f,
                "gpu/cpu speed {} {}: {}x (GPU {verdict})",
                s.accel,
                s.ray_set,
                sig3(s.gpu_over_cpu)
            )?;
        }
        for p in &self.parity {
            write!(
                f,
                "parity {} {}: {}/{} identical",
                p.compared, p.ray_set, p.identical, p.rays
            )?;
            if p.identical != p.rays {
                write!(
                    f,
                    ", {}/{} same triangle within {PARITY_REL_T:e} (t, u, v), {} differ",
                    p.within_tolerance, p.rays, p.differing
                )?;
            }
            writeln!(f)?;
        }
        if let Some(why) = &self.gpu_adapter {
            writeln!(f, "gpu: {why}")?;
        }
        for t in &self.gpu_traversal {
            let c = &t.cost;
            writeln!(
                f,
                "gpu bvh traversal, {} nodes, {}: {} nodes, {} triangles, {} bytes per ray; SIMT efficiency {} ({WARP} lanes); deepest stack {}",
                c.layout,
                t.ray_set,
                sig3(c.nodes_per_ray),
                sig3(c.triangles_per_ray),
                sig3(c.bytes_per_ray),
                sig3(c.simt_efficiency),
                c.stack_max
            )?;
        }
        if let Some(notice) = &self.notice {
            writeln!(f, "notice: {notice}")?;
        } else if self.parity.is_empty() {
            writeln!(f, "parity: not checked (only one backend ran)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_prepare_time_and_compare() -> Result<()> {
        let mesh = raypick_testkit::fixtures::builtin_scene(2_000);
        let rays = RaySet::Primary.generate(mesh.bounds().unwrap(), 256);
        let (picker, _fallback) = open_picker(Backend::Cpu, Some(1), NodeLayout::default())?;
        let prepared = prepare(&picker, &mesh, Accel::Bvh)?;
        let timed = time_trace(&picker, &prepared.mesh, &rays, &TraceOptions::default(), 2)?;
        assert_eq!(timed.hits.len(), 256);
        assert_eq!(timed.runs_ms.len(), 2);
        assert_eq!(parity(&timed.hits, &timed.hits).identical, 256);
        Ok(())
    }

    #[test]
    fn significant_digits() {
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(0.0023871), "0.00239");
        assert_eq!(sig3(2.3871), "2.39");
        assert_eq!(sig3(238.71), "239");
        assert_eq!(sig3(2387.1), "2387");
    }

    #[test]
    fn parity_counts() {
        let a = [
            Hit {
                t: 1.0,
                u: 0.1,
                v: 0.2,
                prim: 3,
            },
            Hit::MISS,
            Hit {
                t: 2.0,
                u: 0.1,
                v: 0.2,
                prim: 3,
            },
            Hit {
                t: 2.0,
                u: 0.1,
                v: 0.2,
                prim: 3,
            },
        ];
        let mut b = a;
        b[2].t = 2.0 * (1.0 + 1e-6);
        b[3].prim = 4;
        let p = parity(&a, &b);
        assert_eq!(
            (p.rays, p.identical, p.within_tolerance, p.differing()),
            (4, 2, 3, 1)
        );
    }
}
