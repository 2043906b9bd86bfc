//! Instances: what moving one costs against rebuilding the scene, and the trace rate
//! of the CPU and the GPU on the same scene, side by side in one run.
//!
//! `cargo run --release --example instances -- [instances] [mesh triangles] [image side]`
//! (default 1,000 instances of a 10k-triangle mesh, 512 × 512 camera rays and as
//! many incoherent ones).

use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{Mat4, Quat, Vec3};
use raypick::cpu::instance_ray_query::InstanceDriverBoxes;
use raypick::gpu::{GpuContext, GpuOptions};
use raypick::instances::{Blas, Instance, InstanceScene};
use raypick::{Accel, NodeLayout, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

fn ms(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.2} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.3} ms", d.as_secs_f64() * 1e3)
    }
}

/// Runs of each timed trace; the best is kept.
const TRACE_RUNS: usize = 3;

/// Best of `n` runs of `f`.
fn best<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..n {
        let start = Instant::now();
        let value = f();
        fastest = fastest.min(start.elapsed());
        out = Some(value);
    }
    (fastest, out.expect("n > 0"))
}

/// Instance `i` of `count` on a cubic lattice of spacing 1.5 (mesh about 1 wide),
/// randomly rotated and scaled (0.6 .. 1.2), one in five mirrored.
fn placement(rng: &mut Rng, i: usize, side: usize) -> Mat4 {
    let cell = Vec3::new(
        (i % side) as f32,
        ((i / side) % side) as f32,
        (i / side / side) as f32,
    );
    let rotation = Quat::from_axis_angle(rng.unit_vector(), rng.range(0.0, std::f32::consts::TAU));
    let mut scale = Vec3::splat(rng.range(0.6, 1.2));
    if rng.chance(0.2) {
        scale.x = -scale.x;
    }
    Mat4::from_scale_rotation_translation(scale, rotation, cell * 1.5)
}

fn main() -> Result<(), raypick::Error> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap_or(0));
    let count = args.next().filter(|&n| n > 0).unwrap_or(1000);
    let triangles = args.next().filter(|&n| n > 0).unwrap_or(10_000);
    let side_px = args.next().filter(|&n| n > 0).unwrap_or(512) as u32;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {} ({} CPUs; timings on a busy machine are noisy, compare within this run)",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // One mesh, normalised to about 1 unit across.
    let raw = fixtures::builtin_scene(triangles);
    let (lo, hi) = raw.bounds().expect("the scene has triangles");
    let fit = Mat4::from_scale(Vec3::splat(1.0 / (hi - lo).max_element()))
        * Mat4::from_translation(-0.5 * (lo + hi));
    let mesh = fixtures::transformed(&raw, fit);
    let side = (count as f64).cbrt().ceil() as usize;
    let mut rng = Rng::new(0x1257_BE4C);
    let instances: Vec<Instance> = (0..count)
        .map(|i| Instance::new(0, placement(&mut rng, i, side), i as u32))
        .collect();
    println!(
        "{count} instances of a {}-triangle mesh ({} triangles placed), lattice {side}³",
        mesh.triangle_count(),
        count * mesh.triangle_count()
    );

    // Preparation, interleaved rounds (best of each) so load spikes hit all alike.
    let moves: Vec<(usize, Mat4)> = (0..1000)
        .map(|i| (rng.below(count), placement(&mut rng, i % count, side)))
        .collect();
    let blas = Arc::new(Blas::build(&mesh));
    let mut scene = InstanceScene::new(vec![blas.clone()], instances.clone())?;
    let (mut blas_time, mut tlas_time, mut full_time, mut move_time) =
        (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        blas_time = blas_time.min(best(1, || Blas::build(&mesh)).0);
        tlas_time = tlas_time.min(
            best(1, || {
                InstanceScene::new(vec![blas.clone()], instances.clone())
            })
            .0,
        );
        full_time = full_time.min(
            best(1, || {
                InstanceScene::from_meshes(std::slice::from_ref(&mesh), instances.clone())
            })
            .0,
        );
        let start = Instant::now();
        for &(index, transform) in &moves {
            scene.set_transform(index, transform)?;
        }
        move_time = move_time.min(start.elapsed() / moves.len() as u32);
    }
    println!("BLAS build (once per mesh)             {}", ms(blas_time));
    println!("scene build, BLAS reused (TLAS only)   {}", ms(tlas_time));
    println!("scene rebuild including the BLAS       {}", ms(full_time));
    println!(
        "set_transform of one instance (refit)  {} (mean of {} moves): {:.0}x cheaper than the TLAS build, {:.0}x than a rebuild with the BLAS",
        ms(move_time),
        moves.len(),
        tlas_time.as_secs_f64() / move_time.as_secs_f64(),
        full_time.as_secs_f64() / move_time.as_secs_f64()
    );
    // The moves sent instances across the lattice, and refits only grow boxes: the
    // rates below are of a top level built again for the places of the moment.
    scene.rebuild_tlas();
    println!(
        "TLAS depth {}, {} nodes (rebuilt after the moves)",
        scene.tlas_depth(),
        scene.tlas_nodes().len()
    );

    // Tracing.
    let (wlo, whi) = (0..count)
        .filter_map(|i| scene.world_box(i))
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(a, b), (lo, hi)| {
            (a.min(lo), b.max(hi))
        });
    let camera = fixtures::camera_rays((wlo, whi), side_px, side_px);
    let incoherent = fixtures::incoherent_rays(camera.len(), &mut rng, (wlo, whi));
    let options = TraceOptions::default();
    // Timed contexts: the kernel's share of each GPU trace is printed beside it.
    let timed = GpuOptions {
        timing: true,
        ..GpuOptions::default()
    };
    let gpu = match GpuContext::with_options(timed.clone()) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            println!("GPU: not available ({e})");
            None
        }
    };
    // A second context on the same adapter for the meshes' other node layout.
    let wide = gpu.as_ref().and_then(|_| {
        GpuContext::with_options(GpuOptions {
            node_layout: NodeLayout::Wide,
            ..timed.clone()
        })
        .ok()
    });
    // The GPU scene in each structure the device has: raypick's BVHs (the meshes in
    // binary nodes, the default, and in eight-wide ones), and the driver's where it
    // has ray queries.
    let mut uploaded = Vec::new();
    if let Some(gpu) = &gpu {
        let mut kinds = vec![(gpu, Accel::Bvh)];
        kinds.extend(wide.as_ref().map(|wide| (wide, Accel::Bvh)));
        if gpu.has_ray_queries() {
            kinds.push((gpu, Accel::RayQuery));
            let boxes = InstanceDriverBoxes::new(&scene);
            println!(
                "ray-query structures: {} (paddings {:?}); origins within {:.1} of the world origin traced on the GPU (scene box {wlo} .. {whi})",
                boxes.structures.len(),
                boxes
                    .structures
                    .iter()
                    .map(|s| s.padding)
                    .collect::<Vec<_>>(),
                boxes.far_limit(&scene)
            );
        }
        for (context, accel) in kinds {
            let start = Instant::now();
            let on_gpu = context.upload_instances_with(scene.clone(), accel)?;
            let name = match on_gpu.node_layout() {
                Some(layout) => format!("{accel} {}", layout.name()),
                None => accel.to_string(),
            };
            println!(
                "GPU upload, {name} ({}): {}",
                context.adapter().name,
                ms(start.elapsed())
            );
            uploaded.push((name, context, on_gpu));
        }
    }
    if let Some(gpu) = &gpu {
        let mut moving = gpu.upload_instances(scene.clone())?;
        let one_ray = &camera[..1];
        let (idle, _) = best(TRACE_RUNS, || {
            gpu.trace_instances(&moving, one_ray, &options)
        });
        let start = Instant::now();
        for &(index, transform) in &moves {
            moving.set_transform(index, transform)?;
        }
        gpu.trace_instances(&moving, one_ray, &options)?; // the changes are written
        let with_moves = start.elapsed();
        println!(
            "GPU scene: {} moves then a 1-ray trace {} (a 1-ray trace alone {}): {} per move",
            moves.len(),
            ms(with_moves),
            ms(idle),
            ms(with_moves.saturating_sub(idle) / moves.len() as u32)
        );
    }
    let mut header = format!("{:<12} {:>12} {:>14}", "rays", "count", "CPU Mrays/s");
    for (name, _, _) in &uploaded {
        header += &format!(" {:>27}", format!("GPU {name} Mrays/s"));
    }
    println!("{header} {:>8}", "hits");
    for (name, rays) in [("camera", &camera), ("incoherent", &incoherent)] {
        let (cpu_time, cpu_hits) = best(TRACE_RUNS, || scene.trace(rays, &options));
        let hits = cpu_hits.iter().filter(|h| h.is_hit()).count();
        let rate = |d: Duration| rays.len() as f64 / d.as_secs_f64() / 1e6;
        let mut row = format!("{name:<12} {:>12} {:>14.2}", rays.len(), rate(cpu_time));
        for (name, gpu, scene) in &uploaded {
            gpu.take_times();
            let (gpu_time, gpu_hits) =
                best(TRACE_RUNS, || gpu.trace_instances(scene, rays, &options));
            // Kernel time per trace, averaged over the runs.
            let kernel = gpu
                .take_times()
                .and_then(|t| t.kernel_ms)
                .map(|ms| ms / TRACE_RUNS as f64);
            let same = gpu_hits?
                .iter()
                .zip(&cpu_hits)
                .filter(|(a, b)| a == b)
                .count();
            assert_eq!(same, rays.len(), "CPU and GPU ({name}) disagree");
            let kernel = kernel.map_or(String::new(), |ms| format!(" ({ms:.2} ms kernel)"));
            row += &format!(" {:>27}", format!("{:.2}{kernel}", rate(gpu_time)));
        }
        println!("{row} {hits:>8}");
    }
    let compared = if uploaded.is_empty() {
        "no GPU scene: CPU only, nothing compared"
    } else {
        "GPU and CPU hits identical on every ray"
    };
    println!("CPU: {} threads; {compared}", rayon::current_num_threads());

    // The cost of the second level itself: one identity instance against the mesh.
    let one = InstanceScene::new(
        vec![blas.clone()],
        vec![Instance::new(0, Mat4::IDENTITY, 0)],
    )?;
    let (mlo, mhi) = mesh.bounds().expect("the mesh has triangles");
    let rays = fixtures::camera_rays((mlo, mhi), side_px, side_px);
    let plain = raypick::cpu::CpuMesh::new(&mesh);
    let cpu = raypick::cpu::CpuBackend::new();
    let (mesh_time, _) = best(TRACE_RUNS, || cpu.trace(&plain, &rays, &options));
    let (one_time, _) = best(TRACE_RUNS, || one.trace(&rays, &options));
    println!(
        "one identity instance vs the plain mesh, {} camera rays on the CPU: {:.2} vs {:.2} Mrays/s",
        rays.len(),
        rays.len() as f64 / one_time.as_secs_f64() / 1e6,
        rays.len() as f64 / mesh_time.as_secs_f64() / 1e6
    );
    Ok(())
}
