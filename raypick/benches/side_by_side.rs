//! raypick's CPU BVH beside Embree, parry3d and obvhs, the libraries taking turns:
//!
//! ```text
//! cargo bench --bench side_by_side -- [ROUNDS] [--skip LIB,..] [MESH[*COPIES]]..
//! ```
//!
//! Criterion times one library after another, so a change in the machine's load
//! between them reads as a difference between the libraries. Here every round
//! traces each ray set once with each library, on the same rays and 2-thread pools,
//! and the best and median rates over the rounds (default 7) are printed with
//! raypick's ratios to the others. Every library's hits are checked against
//! raypick's.
//!
//! * **Meshes**: each `MESH` is a mesh file (OBJ, glTF, PLY, STL), `*COPIES` tiles
//!   that many copies of it side by side to make a larger scene. Without any, the
//!   built-in 1M-triangle scene and, when installed (`assimp-testmodels`), the
//!   121k-triangle engine of assimp's glTF samples alone and as 8 copies.
//! * **Rays**: a 1024 × 1024 camera image of the whole scene and as many incoherent
//!   rays (from a sphere around the scene to random points in its box).
//! * **raypick** runs twice per round: with its default, watertight ray–triangle
//!   test (exact on shared edges), and with its fast test (Möller–Trumbore, the kind
//!   of test the other libraries run).
//! * **Embree** (`libembree3.so.3`, Debian's `libembree-dev`) is loaded at run time;
//!   without it its column is left out with a notice. Its build time is measured
//!   beside raypick's, and batches of 1 and 64 picks at the image centre are timed
//!   on the calling thread for both (the single pick also one call at a time, each
//!   begun once the last has finished: its latency), as are single picks over the
//!   image with the caches swept before each (an application's pick, once a frame
//!   between other work), and rays of each set cast one per call (an application
//!   that casts its rays one at a time).
//! * raypick's work per ray (nodes visited, boxes tested and entered, leaves and
//!   leaf blocks tested) is counted on each ray set, each ray traced alone.
//! * `--skip parry3d,obvhs` leaves libraries out (their builds are single-threaded
//!   or slow on large meshes).

// The fixtures are shared with the criterion benches; this binary uses some.
mod compare;
#[allow(dead_code)]
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use glam::Vec3;
use rayon::prelude::*;
use raypick::cpu::CpuMesh;
use raypick::cpu::wide_bvh::WideBvh;
use raypick::cpu::wide_traverse::{self, WalkCounts};
use raypick::{Accel, Cull, Hit, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

use compare::embree::Embree;
use compare::{Obvhs, Parry};
use support::{Agreement, IMAGE, MIN_AGREEMENT, RAYS, TRACE_THREADS};

/// Builds timed per library and mesh (best reported).
const BUILD_ROUNDS: usize = 3;
/// Picks per timed sample of the pick batches.
const PICK_CALLS: usize = 200;
/// Seed of the incoherent rays.
const INCOHERENT_SEED: u64 = 0x0BEA_C4ED_5EED;
/// The assimp sample used when no mesh is named.
const ENGINE: &str =
    "/usr/share/assimp/models/glTF2/2CylinderEngine-glTF-Binary/2CylinderEngine.glb";

/// A scene to compare on: a mesh file tiled `copies` times, or the built-in scene.
#[derive(Clone, Debug)]
struct SceneSpec {
    path: Option<PathBuf>,
    copies: usize,
}

impl SceneSpec {
    /// `PATH` or `PATH*COPIES`.
    fn parse(arg: &str) -> Self {
        let (path, copies) = match arg.rsplit_once('*') {
            Some((path, n)) => (path, n.parse().expect("COPIES is a whole number")),
            None => (arg, 1),
        };
        Self {
            path: Some(path.into()),
            copies: usize::max(copies, 1),
        }
    }

    fn name(&self) -> String {
        match &self.path {
            None => "built-in scene".into(),
            Some(path) => {
                let file = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                if self.copies > 1 {
                    format!("{file} x{}", self.copies)
                } else {
                    file
                }
            }
        }
    }

    fn load(&self) -> Mesh {
        match &self.path {
            None => support::mesh(support::TRACE_TRIANGLES).clone(),
            Some(path) => {
                let mesh = raypick::io::load_mesh(path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                tile(&mesh, self.copies)
            }
        }
    }
}

/// `copies` copies of `mesh` on a square grid in x and z, a tenth of the mesh's
/// size apart.
fn tile(mesh: &Mesh, copies: usize) -> Mesh {
    if copies <= 1 {
        return mesh.clone();
    }
    let (lo, hi) = mesh.bounds().expect("the mesh is not empty");
    let pitch = (hi - lo) * 1.1;
    let side = (copies as f64).sqrt().ceil() as usize;
    let n = mesh.positions().len() as u32;
    let mut positions = Vec::with_capacity(mesh.positions().len() * copies);
    let mut indices = Vec::with_capacity(mesh.triangle_count() * copies);
    for copy in 0..copies {
        let shift = Vec3::new(
            (copy % side) as f32 * pitch.x,
            0.0,
            (copy / side) as f32 * pitch.z,
        );
        let base = copy as u32 * n;
        positions.extend(mesh.positions().iter().map(|&p| p + shift));
        indices.extend(mesh.indices().iter().map(|t| t.map(|i| i + base)));
    }
    Mesh::new(positions, indices).expect("copies of a valid mesh")
}

struct Args {
    rounds: usize,
    skip: Vec<String>,
    scenes: Vec<SceneSpec>,
}

impl Args {
    fn parse() -> Self {
        let mut args = Args {
            rounds: 7,
            skip: Vec::new(),
            scenes: Vec::new(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            if arg == "--bench" {
                continue;
            } else if arg == "--skip" {
                let libs = it.next().expect("--skip takes a list of libraries");
                args.skip.extend(libs.split(',').map(str::to_lowercase));
            } else if let Ok(rounds) = arg.parse::<usize>() {
                args.rounds = rounds.max(1);
            } else {
                args.scenes.push(SceneSpec::parse(&arg));
            }
        }
        if args.scenes.is_empty() {
            args.scenes.push(SceneSpec {
                path: None,
                copies: 1,
            });
            if std::path::Path::new(ENGINE).exists() {
                for copies in [1, 8] {
                    args.scenes.push(SceneSpec {
                        path: Some(ENGINE.into()),
                        copies,
                    });
                }
            }
        }
        args
    }

    fn runs(&self, library: &str) -> bool {
        !self.skip.iter().any(|s| s == &library.to_lowercase())
    }
}

/// A library's trace of a ray set.
type Tracer<'a> = Box<dyn Fn(&[Ray]) -> Vec<Hit> + 'a>;

/// One traced column of the comparison.
struct Contender<'a> {
    name: &'static str,
    trace: Tracer<'a>,
}

/// How many of the leading contenders are raypick's.
const RAYPICK_RUNS: usize = 2;

fn main() {
    let args = Args::parse();
    support::note_load("side_by_side");
    println!(
        "{} rays per set, {TRACE_THREADS} threads, {} rounds",
        RAYS, args.rounds
    );
    for spec in &args.scenes {
        compare_on(spec, &args);
    }
}

/// The best of [`BUILD_ROUNDS`] timings of `build`, and its last result.
fn timed_builds<T>(mut build: impl FnMut() -> (T, Duration)) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..BUILD_ROUNDS {
        let (value, time) = build();
        best = best.min(time);
        last = Some(value);
    }
    (last.expect("at least one build"), best)
}

fn compare_on(spec: &SceneSpec, args: &Args) {
    let mesh = spec.load();
    let triangles = mesh.triangle_count();
    println!("\n== {}: {triangles} triangles", spec.name());

    let (cpu_mesh, raypick_build) = timed_builds(|| {
        let start = Instant::now();
        let built = support::cpu().install(|| CpuMesh::with_accel(&mesh, Accel::Bvh));
        (built, start.elapsed())
    });
    let embree = if args.runs("embree") {
        match Embree::available() {
            Ok(()) => Some(timed_builds(|| {
                let built = Embree::build(&mesh, TRACE_THREADS).expect("Embree builds");
                let time = built.build_time;
                (built, time)
            })),
            Err(why) => {
                println!("  Embree left out: {why}");
                None
            }
        }
    } else {
        None
    };
    let rate = |d: Duration| triangles as f64 / d.as_secs_f64() / 1e6;
    print!(
        "  build (best of {BUILD_ROUNDS}): raypick {:.1} ms ({:.2} M triangles/s)",
        raypick_build.as_secs_f64() * 1e3,
        rate(raypick_build)
    );
    if let Some((_, time)) = &embree {
        print!(
            ", Embree {:.1} ms ({:.2} M triangles/s), raypick/Embree time {:.2}x",
            time.as_secs_f64() * 1e3,
            rate(*time),
            raypick_build.as_secs_f64() / time.as_secs_f64()
        );
    }
    println!();
    let embree = embree.map(|(e, _)| e);

    let parry = args.runs("parry3d").then(|| Parry::build(&mesh));
    let obvhs = args
        .runs("obvhs")
        .then(|| support::pool().install(|| Obvhs::build(&mesh)));

    let raypick_run = |mode: Mode| {
        let cpu_mesh = &cpu_mesh;
        move |rays: &[Ray]| {
            let mut hits = vec![Hit::MISS; rays.len()];
            let options = TraceOptions::default().with_mode(mode);
            support::cpu().trace_into(cpu_mesh, rays, &options, &mut hits);
            hits
        }
    };
    let mut contenders = vec![
        Contender {
            name: "raypick CPU BVH",
            trace: Box::new(raypick_run(Mode::Watertight)),
        },
        Contender {
            name: "raypick, fast",
            trace: Box::new(raypick_run(Mode::Fast)),
        },
    ];
    if let Some(embree) = &embree {
        contenders.push(Contender {
            name: "Embree",
            trace: Box::new(|rays| support::pool().install(|| embree.trace(rays))),
        });
    }
    if let Some(parry) = &parry {
        contenders.push(Contender {
            name: "parry3d",
            trace: Box::new(|rays| support::pool().install(|| parry.trace(rays))),
        });
    }
    if let Some(obvhs) = &obvhs {
        contenders.push(Contender {
            name: "obvhs",
            trace: Box::new(|rays| support::pool().install(|| obvhs.trace(rays))),
        });
    }

    let bounds = mesh.bounds().expect("the mesh is not empty");
    let camera = fixtures::camera_rays(bounds, IMAGE, IMAGE);
    let incoherent = fixtures::incoherent_rays(RAYS, &mut Rng::new(INCOHERENT_SEED), bounds);
    for (set, rays) in [("camera", &camera), ("incoherent", &incoherent)] {
        trace_rounds(set, rays, &contenders, args.rounds);
        if let CpuMesh::Bvh(wide) = &cpu_mesh {
            print_counts(wide, rays);
        }
        if let Some(embree) = &embree {
            single_rays(&cpu_mesh, embree, set, rays, args.rounds);
        }
    }
    if let Some(embree) = &embree {
        picks(&cpu_mesh, embree, &camera, args.rounds);
        cold_picks(&cpu_mesh, embree, &camera, args.rounds);
    }
}

/// Rays of each set traced one per call ([`single_rays`]).
const SINGLE_RAYS: usize = 1 << 16;

/// Times rays cast one per call, as an application that casts its rays one at a
/// time makes them: each ray walks the tree alone, with no other ray's walk to
/// overlap its waits with. [`SINGLE_RAYS`] rays spread evenly over `rays` (the
/// `set`), on the calling thread, raypick and Embree taking turns each round;
/// prints the best round's time per ray.
fn single_rays(cpu_mesh: &CpuMesh, embree: &Embree, set: &str, rays: &[Ray], rounds: usize) {
    let options = TraceOptions::default();
    let rays: Vec<Ray> = rays
        .iter()
        .step_by(rays.len().div_ceil(SINGLE_RAYS))
        .copied()
        .collect();
    let (mut our_hit, mut their_hit) = ([Hit::MISS], [Hit::MISS]);
    let (ours, theirs) = take_turns(
        rounds,
        || {
            for ray in &rays {
                support::cpu().trace_into(
                    cpu_mesh,
                    std::slice::from_ref(ray),
                    &options,
                    &mut our_hit,
                );
                std::hint::black_box(&our_hit);
            }
        },
        || {
            for ray in &rays {
                embree.trace_serial_into(std::slice::from_ref(ray), &mut their_hit);
                std::hint::black_box(&their_hit);
            }
        },
    );
    let best = |seconds: &[f64]| seconds.iter().copied().fold(f64::INFINITY, f64::min);
    let (ours, theirs) = (best(&ours), best(&theirs));
    let per_ray = |seconds: f64| seconds * 1e9 / rays.len() as f64;
    println!(
        "    {} {set} rays one per call: raypick {:.1} ns/ray, Embree {:.1} ns/ray, raypick/Embree time {:.2}x",
        rays.len(),
        per_ray(ours),
        per_ray(theirs),
        ours / theirs
    );
}

/// Rays of the cold picks ([`cold_picks`]): an 8 × 8 grid over the image.
const COLD_PICKS: usize = 64;

/// Bytes swept before each cold pick: more than the last-level cache of the
/// machines the bench runs on, so that the pick finds none of its tree there.
const SWEEP_BYTES: usize = 64 << 20;

/// A cache line, the sweep's step.
const LINE: usize = 64;

/// Times single picks as an application makes them, once a frame between other
/// work: before each call, a sweep over [`SWEEP_BYTES`] of other memory leaves
/// neither library's tree in the caches. The rays are [`COLD_PICKS`] spread over
/// the image, one per call (so that no call follows the same ray), each `rounds`
/// times, the libraries taking turns on each; prints the median call.
fn cold_picks(cpu_mesh: &CpuMesh, embree: &Embree, camera: &[Ray], rounds: usize) {
    let options = TraceOptions::default();
    let mut sweep = vec![0u8; SWEEP_BYTES];
    let mut evict = |pass: usize| {
        // Each line read and written: a fill of this size may be done with stores
        // that bypass the caches (glibc's memset uses them), which would leave both
        // trees cached. A value unlike the last sweep's, so that no write can be
        // skipped.
        for line in sweep.chunks_exact_mut(LINE) {
            line[0] = std::hint::black_box(line[0]) ^ (pass as u8 | 1);
        }
        std::hint::black_box(&sweep);
    };
    let calls = COLD_PICKS * rounds;
    let (mut ours, mut theirs) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    let mut hit = [Hit::MISS];
    // The centres of an 8 × 8 grid of cells over the image, row by row.
    let cell = IMAGE as usize / 8;
    for k in (0..calls).map(|call| call % COLD_PICKS) {
        let (row, col) = (k / 8 * cell + cell / 2, k % 8 * cell + cell / 2);
        let ray = [camera[row * IMAGE as usize + col]];
        evict(2 * ours.len());
        let start = Instant::now();
        support::cpu().trace_into(cpu_mesh, &ray, &options, &mut hit);
        ours.push(start.elapsed().as_secs_f64());
        std::hint::black_box(&hit);
        evict(2 * ours.len() + 1);
        let start = Instant::now();
        embree.trace_serial_into(&ray, &mut hit);
        theirs.push(start.elapsed().as_secs_f64());
        std::hint::black_box(&hit);
    }
    let (ours, theirs) = (median_us(&mut ours), median_us(&mut theirs));
    println!(
        "  1 cold pick (caches swept before each call): raypick {ours:.3} us, Embree {theirs:.3} us, raypick/Embree time {:.2}x",
        ours / theirs
    );
}

/// Times `ours` and then `theirs` once in each of `rounds` rounds, so that a
/// change in the machine's load falls on both libraries; the seconds of every
/// round, per library.
fn take_turns(
    rounds: usize,
    mut ours: impl FnMut(),
    mut theirs: impl FnMut(),
) -> (Vec<f64>, Vec<f64>) {
    let timed = |run: &mut dyn FnMut()| {
        let start = Instant::now();
        run();
        start.elapsed().as_secs_f64()
    };
    (0..rounds)
        .map(|_| (timed(&mut ours), timed(&mut theirs)))
        .unzip()
}

/// The median of `seconds` (not empty) in microseconds.
fn median_us(seconds: &mut [f64]) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[seconds.len() / 2] * 1e6
}

/// Prints the work per ray of raypick's traversal (each ray alone, watertight
/// test), counted on `rays` in parallel chunks.
fn print_counts(wide: &WideBvh, rays: &[Ray]) {
    let counts = support::pool().install(|| {
        rays.par_chunks(1 << 14)
            .map(|rays| wide_traverse::count_rays(wide, rays, Cull::None, Mode::Watertight).1)
            .reduce(WalkCounts::default, |a, b| a + b)
    });
    let per_ray = |count| counts.per_ray(count);
    println!(
        "    raypick per ray: {:.2} nodes ({:.1} boxes tested, {:.2} entered), {:.2} leaves ({:.2} blocks of 8)",
        per_ray(counts.nodes),
        per_ray(counts.boxes),
        per_ray(counts.entered),
        per_ray(counts.leaves),
        per_ray(counts.blocks)
    );
}

/// Traces `rays` with every contender once per round and prints the rates and
/// raypick's ratios.
fn trace_rounds(set: &str, rays: &[Ray], contenders: &[Contender], rounds: usize) {
    let mut reference = Vec::new();
    let mut seconds = vec![Vec::with_capacity(rounds); contenders.len()];
    for round in 0..rounds {
        for (contender, times) in contenders.iter().zip(&mut seconds) {
            let start = Instant::now();
            let hits = (contender.trace)(rays);
            times.push(start.elapsed().as_secs_f64());
            if round > 0 {
                continue;
            }
            if reference.is_empty() {
                reference = hits;
                continue;
            }
            let a = Agreement::new(&reference, &hits);
            assert!(
                a.rate_with_ties() >= MIN_AGREEMENT,
                "{} agrees with raypick on the {set} rays: {a}",
                contender.name
            );
        }
    }
    let rate = |s: f64| rays.len() as f64 / s / 1e6;
    let summary: Vec<(f64, f64)> = seconds
        .iter_mut()
        .map(|times| {
            times.sort_by(f64::total_cmp);
            (rate(times[0]), rate(times[times.len() / 2]))
        })
        .collect();
    println!("  {set} rays:");
    for (contender, (best, median)) in contenders.iter().zip(&summary) {
        println!(
            "    {:<16} best {best:7.3} Mrays/s, median {median:7.3} Mrays/s",
            contender.name
        );
    }
    let runs = contenders.iter().zip(&summary);
    for (ours, (best, median)) in runs.clone().take(RAYPICK_RUNS) {
        for (other, (b, m)) in runs.clone().skip(RAYPICK_RUNS) {
            println!(
                "    {:<15} / {:<8} best {:.2}x, median {:.2}x",
                ours.name,
                other.name,
                best / b,
                median / m
            );
        }
    }
}

/// Times batches of 1 and 64 picks at the image centre, one batch per call on the
/// calling thread, raypick and Embree taking turns; prints the median per batch.
/// The single pick is timed twice: calls back to back, where the processor may
/// start a call's work before the last one's is done, and each call begun only
/// once the last has finished (on x86-64), which times a pick's latency.
fn picks(cpu_mesh: &CpuMesh, embree: &Embree, camera: &[Ray], rounds: usize) {
    let options = TraceOptions::default();
    let cases = [
        (1u32, Calls::BackToBack),
        (1, Calls::OneAtATime),
        (8, Calls::BackToBack),
    ];
    for (side, calls) in cases.into_iter().filter(|&(_, calls)| calls.available()) {
        let rays: Vec<Ray> = support::centre_block(side)
            .iter()
            .map(|&i| camera[i])
            .collect();
        let (mut our_hits, mut their_hits) =
            (vec![Hit::MISS; rays.len()], vec![Hit::MISS; rays.len()]);
        let (mut ours, mut theirs) = take_turns(
            rounds.max(5),
            || {
                for _ in 0..PICK_CALLS {
                    support::cpu().trace_into(cpu_mesh, &rays, &options, &mut our_hits);
                    std::hint::black_box(&our_hits);
                    calls.settle();
                }
            },
            || {
                for _ in 0..PICK_CALLS {
                    embree.trace_serial_into(&rays, &mut their_hits);
                    std::hint::black_box(&their_hits);
                    calls.settle();
                }
            },
        );
        let per_call = |seconds: &mut [f64]| median_us(seconds) / PICK_CALLS as f64;
        let (ours, theirs) = (per_call(&mut ours), per_call(&mut theirs));
        println!(
            "  {} pick(s) per batch{}: raypick {ours:.3} us, Embree {theirs:.3} us, raypick/Embree time {:.2}x",
            rays.len(),
            calls.label(),
            ours / theirs
        );
    }
}

/// How the timed pick calls follow each other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Calls {
    /// Back to back: the processor may start a call's work before the last
    /// call's is done, as in a loop of picks.
    BackToBack,
    /// Each call begun once the last has finished (an `lfence` between them, so
    /// on x86-64 only): the time is a pick's latency, its longest chain of
    /// dependent steps.
    OneAtATime,
}

impl Calls {
    /// Whether this machine can time calls this way.
    fn available(self) -> bool {
        self == Self::BackToBack || cfg!(target_arch = "x86_64")
    }

    /// Waits, after a call, for what this way of calling asks.
    #[inline(always)]
    fn settle(self) {
        #[cfg(target_arch = "x86_64")]
        if self == Self::OneAtATime {
            // SAFETY: SSE2 is part of every x86-64 CPU; `lfence` only orders
            // execution.
            unsafe { std::arch::x86_64::_mm_lfence() };
        }
    }

    /// How the printed line names this way.
    fn label(self) -> &'static str {
        match self {
            Self::BackToBack => "",
            Self::OneAtATime => ", each call after the last has finished",
        }
    }
}
