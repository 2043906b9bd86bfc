//! Fixtures shared by the bench groups of `benches/main.rs`: meshes, ray sets, BVHs,
//! backends, the comparison libraries' structures and reference hits.
//!
//! Every fixture is built lazily, once, the first time a bench that needs it runs
//! (so a criterion filter such as `cargo bench --bench main -- pick_latency` builds
//! only what the selected benches use), and is kept for the rest of the run. Building
//! a fixture prints what it built and how long it took. All inputs come from fixed
//! seeds.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use raypick::bvh::Bvh;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::gpu::{GpuContext, GpuMesh};
use raypick::{Accel, Hit, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

use crate::compare::{Obvhs, Parry};

/// Triangles of the mesh the trace and pick benches use.
pub const TRACE_TRIANGLES: usize = 1_000_000;
/// Triangle counts of the build benches.
pub const BUILD_SIZES: [usize; 2] = [1_000_000, 10_000_000];
/// Side of the camera image: `IMAGE × IMAGE` camera rays (1,048,576).
pub const IMAGE: u32 = 1024;
/// Rays per ray set (the camera image, and as many incoherent rays).
pub const RAYS: usize = (IMAGE * IMAGE) as usize;
/// Rays brute force is timed on, and the CPU BVH checked against it on.
pub const SUBSET: usize = 1024;
/// Threads of every trace bench (raypick's CPU backend and the comparison libraries).
pub const TRACE_THREADS: usize = 2;
/// Seed of the incoherent rays.
const INCOHERENT_SEED: u64 = 0x0BEA_C4ED_5EED;
/// Seed of the choice of the [`SUBSET`] rays.
const SUBSET_SEED: u64 = 0x5B5E_7000_0001;
pub use crate::compare::agreement::{Agreement, MIN_AGREEMENT, T_TOLERANCE};

/// `1M`, `10M`, `64k`, `10k`, `1024`: a count as it appears in bench names.
pub fn count_label(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n > 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}k", n >> 10)
    } else if n >= 1_000 && n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

/// Runs `build` once for `cell`, printing `what` and the time it took.
fn cached<T>(cell: &'static OnceLock<T>, what: &str, build: impl FnOnce() -> T) -> &'static T {
    cell.get_or_init(|| {
        let start = Instant::now();
        let value = build();
        println!("[fixture] {what}: {}", ms(start.elapsed()));
        value
    })
}

/// Prints the system load average at the start of a group: other processes on the
/// machine make the timings noisy, and this says how busy it was.
pub fn note_load(group: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    if !load.is_empty() {
        println!(
            "[load] {group}: load average {} ({} CPUs)",
            load.join(" "),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
}

/// A duration in milliseconds, for the fixture notices.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

// ---------------------------------------------------------------------------
// Meshes and BVHs
// ---------------------------------------------------------------------------

/// `fixtures::builtin_scene(n)` for the sizes the benches use.
pub fn mesh(n: usize) -> &'static Mesh {
    static K1: OnceLock<Mesh> = OnceLock::new();
    static K10: OnceLock<Mesh> = OnceLock::new();
    static K100: OnceLock<Mesh> = OnceLock::new();
    static M1: OnceLock<Mesh> = OnceLock::new();
    static M10: OnceLock<Mesh> = OnceLock::new();
    let cell = match n {
        1_000 => &K1,
        10_000 => &K10,
        100_000 => &K100,
        1_000_000 => &M1,
        10_000_000 => &M10,
        _ => panic!("no cached mesh of {n} triangles"),
    };
    let mesh = cached(cell, &format!("builtin_scene({n})"), || {
        fixtures::builtin_scene(n)
    });
    assert_eq!(
        mesh.triangle_count(),
        n,
        "builtin_scene gives {n} triangles"
    );
    mesh
}

/// The box of the trace mesh.
pub fn bounds() -> (glam::Vec3, glam::Vec3) {
    mesh(TRACE_TRIANGLES)
        .bounds()
        .expect("the built-in scene is not empty")
}

/// Prints bytes per triangle, node count and depth of a BVH built over `n`
/// triangles, and checks its invariants.
pub fn report_bvh(bvh: &Bvh, mesh: &Mesh) {
    let n = mesh.triangle_count();
    let start = Instant::now();
    bvh.validate(mesh).expect("the BVH is valid");
    println!(
        "[bvh] {} tris: {} bytes ({:.1} bytes/triangle: {} nodes x 64 B + {} triangles x 48 B), \
         depth {} (validated in {})",
        count_label(n),
        bvh.size_bytes(),
        bvh.size_bytes() as f64 / n as f64,
        bvh.nodes().len(),
        bvh.triangles().len(),
        bvh.depth(),
        ms(start.elapsed()),
    );
}

/// The BVH of the trace mesh uploaded to the GPU, built on rayon's global pool.
pub fn bvh() -> &'static Arc<Bvh> {
    static CELL: OnceLock<Arc<Bvh>> = OnceLock::new();
    let mesh = mesh(TRACE_TRIANGLES);
    cached(&CELL, "Bvh::build of the 1M-triangle trace mesh", || {
        let bvh = Bvh::build(mesh);
        report_bvh(&bvh, mesh);
        Arc::new(bvh)
    })
}

/// The trace mesh prepared for the CPU backend's BVH traversal
/// (`CpuMesh::with_accel(mesh, Accel::Bvh)`: its own BVH build plus any CPU layout).
pub fn cpu_bvh() -> &'static CpuMesh {
    static CELL: OnceLock<CpuMesh> = OnceLock::new();
    let mesh = mesh(TRACE_TRIANGLES);
    cached(
        &CELL,
        "CpuMesh::with_accel(Bvh) of the 1M-triangle trace mesh",
        || CpuMesh::with_accel(mesh, Accel::Bvh),
    )
}

/// The trace mesh packed for CPU brute force.
pub fn cpu_brute() -> &'static CpuMesh {
    static CELL: OnceLock<CpuMesh> = OnceLock::new();
    let mesh = mesh(TRACE_TRIANGLES);
    cached(&CELL, "CpuMesh::with_accel(Brute)", || {
        CpuMesh::with_accel(mesh, Accel::Brute)
    })
}

/// parry3d's `TriMesh` over the trace mesh.
pub fn parry() -> &'static Parry {
    static CELL: OnceLock<Parry> = OnceLock::new();
    let mesh = mesh(TRACE_TRIANGLES);
    cached(&CELL, "parry3d TriMesh build (single-threaded)", || {
        Parry::build(mesh)
    })
}

/// obvhs's CWBVH over the trace mesh.
pub fn obvhs() -> &'static Obvhs {
    static CELL: OnceLock<Obvhs> = OnceLock::new();
    let mesh = mesh(TRACE_TRIANGLES);
    cached(&CELL, "obvhs CWBVH build (medium_build, 2 threads)", || {
        pool().install(|| Obvhs::build(mesh))
    })
}

// ---------------------------------------------------------------------------
// Backends
// ---------------------------------------------------------------------------

/// raypick's CPU backend on its own pool of [`TRACE_THREADS`] threads.
pub fn cpu() -> &'static CpuBackend {
    static CELL: OnceLock<CpuBackend> = OnceLock::new();
    CELL.get_or_init(|| CpuBackend::with_threads(TRACE_THREADS).expect("CPU thread pool"))
}

/// A rayon pool of [`TRACE_THREADS`] threads for the comparison libraries (which
/// trace on whatever pool they are called from).
pub fn pool() -> &'static rayon::ThreadPool {
    static CELL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    CELL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(TRACE_THREADS)
            .build()
            .expect("rayon pool")
    })
}

/// The GPU, or `None` (with a notice, printed once) when no adapter opens.
pub fn gpu() -> Option<&'static GpuContext> {
    static CELL: OnceLock<Option<GpuContext>> = OnceLock::new();
    CELL.get_or_init(|| match GpuContext::new() {
        Ok(gpu) => {
            let a = gpu.adapter();
            println!(
                "[gpu] {} ({}, {}, {}), max binding {} MiB",
                a.name,
                a.backend,
                a.device_type,
                a.driver,
                gpu.max_binding_bytes() >> 20
            );
            Some(gpu)
        }
        Err(e) => {
            println!("[gpu] no GPU adapter, GPU cases left out: {e}");
            None
        }
    })
    .as_ref()
}

/// The trace mesh's BVH uploaded to the GPU.
pub fn gpu_bvh(gpu: &'static GpuContext) -> &'static GpuMesh {
    static CELL: OnceLock<GpuMesh> = OnceLock::new();
    let bvh = bvh();
    cached(&CELL, "GPU upload of the 1M-triangle BVH", || {
        let mesh = gpu.upload_bvh(bvh.clone()).expect("BVH upload");
        println!(
            "[gpu] BVH upload: {} MiB in {} buffer pair(s)",
            mesh.size_bytes() >> 20,
            mesh.buffer_count()
        );
        mesh
    })
}

/// A short name for the adapter, for bench ids: `llvmpipe`, `NVIDIA GeForce RTX 4090`.
pub fn adapter_label(gpu: &GpuContext) -> String {
    let name = &gpu.adapter().name;
    name.split(" (").next().unwrap_or(name).to_string()
}

// ---------------------------------------------------------------------------
// Rays and reference hits
// ---------------------------------------------------------------------------

/// The two ray sets of the trace benches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaySet {
    /// `fixtures::camera_rays`: a `1024 × 1024` image of the whole scene.
    Camera,
    /// `fixtures::incoherent_rays`: from a sphere around the scene to random points in
    /// its box.
    Incoherent,
}

impl RaySet {
    /// Both ray sets, in report order.
    pub const ALL: [RaySet; 2] = [RaySet::Camera, RaySet::Incoherent];

    /// The name used in bench ids.
    pub fn name(self) -> &'static str {
        match self {
            RaySet::Camera => "camera",
            RaySet::Incoherent => "incoherent",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The [`RAYS`] rays of a set, for the trace mesh.
pub fn rays(set: RaySet) -> &'static [Ray] {
    static CELLS: [OnceLock<Vec<Ray>>; 2] = [OnceLock::new(), OnceLock::new()];
    cached::<Vec<Ray>>(
        &CELLS[set.index()],
        &format!("{} {} rays", count_label(RAYS), set.name()),
        || match set {
            RaySet::Camera => fixtures::camera_rays(bounds(), IMAGE, IMAGE),
            RaySet::Incoherent => {
                fixtures::incoherent_rays(RAYS, &mut Rng::new(INCOHERENT_SEED), bounds())
            }
        },
    )
}

/// Indices (into the camera rays) of the `k × k` block at the centre of the image.
pub fn centre_block(k: u32) -> Vec<usize> {
    let start = IMAGE / 2 - k / 2;
    (start..start + k)
        .flat_map(|row| (start..start + k).map(move |col| (row * IMAGE + col) as usize))
        .collect()
}

/// [`SUBSET`] rays of a set drawn at random (fixed seed, with replacement).
pub fn subset(set: RaySet) -> &'static [Ray] {
    static CELLS: [OnceLock<Vec<Ray>>; 2] = [OnceLock::new(), OnceLock::new()];
    let all = rays(set);
    CELLS[set.index()].get_or_init(|| {
        let mut rng = Rng::new(SUBSET_SEED);
        (0..SUBSET).map(|_| all[rng.below(all.len())]).collect()
    })
}

/// raypick's CPU BVH hits for all rays of a set (the reference of the GPU and the
/// comparison libraries), checked against brute force on the [`subset`].
pub fn cpu_bvh_hits(set: RaySet) -> &'static [Hit] {
    static CELLS: [OnceLock<Vec<Hit>>; 2] = [OnceLock::new(), OnceLock::new()];
    let mesh = cpu_bvh();
    let rays = rays(set);
    let hits = cached::<Vec<Hit>>(
        &CELLS[set.index()],
        &format!("CPU BVH reference hits, {} rays", set.name()),
        || cpu().trace(mesh, rays, &TraceOptions::default()),
    );
    let seen = hits.iter().filter(|h| h.is_hit()).count();
    assert!(
        seen > RAYS / 10,
        "{} rays see the scene: {seen} hits",
        set.name()
    );
    hits
}

/// Brute-force hits on the [`subset`] of a set, checked against the CPU BVH once.
pub fn brute_subset_hits(set: RaySet) -> &'static [Hit] {
    static CELLS: [OnceLock<Vec<Hit>>; 2] = [OnceLock::new(), OnceLock::new()];
    let mesh = cpu_brute();
    let rays = subset(set);
    cached::<Vec<Hit>>(
        &CELLS[set.index()],
        &format!(
            "CPU brute-force hits, {SUBSET} {} rays (checked against the CPU BVH)",
            set.name()
        ),
        || {
            let brute = cpu().trace(mesh, rays, &TraceOptions::default());
            let bvh = cpu().trace(cpu_bvh(), rays, &TraceOptions::default());
            let a = Agreement::new(&brute, &bvh);
            println!("[check] CPU BVH vs brute force, {}: {a}", set.name());
            assert_eq!(
                a.identical,
                a.rays,
                "CPU BVH == CPU brute force on the {} subset",
                set.name()
            );
            brute
        },
    )
}

/// Rays where `hits` has another triangle than `reference` at the same `t` (within
/// [`T_TOLERANCE`]) and the two triangles of the trace mesh are coplanar.
pub fn coplanar_ties(reference: &[Hit], hits: &[Hit]) -> usize {
    let mesh = mesh(TRACE_TRIANGLES);
    let plane = |prim: u32| {
        let [v0, v1, v2] = mesh.triangle(prim as usize).map(|v| v.as_dvec3());
        let n = (v1 - v0).cross(v2 - v0).normalize();
        (n, n.dot(v0))
    };
    reference
        .iter()
        .zip(hits)
        .filter(|(r, h)| {
            r.is_hit()
                && h.is_hit()
                && r.prim != h.prim
                && (h.t - r.t).abs() <= T_TOLERANCE * r.t.abs()
                && {
                    let ((na, da), (nb, db)) = (plane(r.prim), plane(h.prim));
                    na.cross(nb).length() < 1e-6 && (da - na.dot(nb) * db).abs() < 1e-4
                }
        })
        .count()
}

/// Rays the GPU trace bench times for a ray set: all of them, except for incoherent
/// rays on a software adapter (lavapipe: ~15 s per 1M incoherent rays on two cores),
/// where the first eighth is timed so the run stays short (all rays are still
/// checked once against the CPU BVH).
pub fn gpu_rays(gpu: &GpuContext, set: RaySet) -> usize {
    if set == RaySet::Incoherent && gpu.adapter().device_type == "Cpu" {
        RAYS / 8
    } else {
        RAYS
    }
}

/// A benchmark group named `name` (the load average noted first) with the settings
/// every long-running group here shares: 10 flat samples, the given warm-up and
/// measurement times.
pub fn long_group<'c>(
    c: &'c mut criterion::Criterion,
    name: &str,
    warm_up: Duration,
    measurement: Duration,
) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    note_load(name);
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(criterion::SamplingMode::Flat)
        .warm_up_time(warm_up)
        .measurement_time(measurement);
    group
}
