//! Screen picks without a window: frames a mesh with a camera, picks a 5 × 5 grid of
//! pixels across a 640 × 400 image and prints what each pixel sees.
//!
//! `cargo run --release --example headless_pick -- [MESH] [--backend auto|cpu|gpu]`
//!
//! It also times single picks (one ray per trace call, as a mouse pick is): the
//! median of 51 round trips (on the GPU: upload of the ray, dispatch, readback),
//! mesh preparation excluded.
//!
//! With no mesh file, a generated scene (`raypick_testkit::fixtures::builtin_scene`, 20,000
//! triangles) is used.

use std::time::Instant;

use glam::Vec3;
use raypick::camera::{Camera, aspect};
use raypick::{Backend, Picker, TraceOptions, io, screen};
use raypick_testkit::fixtures;

const WIDTH: u32 = 640;
const HEIGHT: u32 = 400;
const GRID: u32 = 5;

fn main() {
    if let Err(message) = run() {
        eprintln!("headless_pick: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut mesh_path = None;
    let mut backend = Backend::Auto;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backend" => {
                backend = match args.next().as_deref() {
                    Some("auto") => Backend::Auto,
                    Some("cpu") => Backend::Cpu,
                    Some("gpu") => Backend::Gpu,
                    other => return Err(format!("--backend {other:?}: expected auto|cpu|gpu")),
                }
            }
            path if !path.starts_with("--") && mesh_path.is_none() => {
                mesh_path = Some(path.to_string())
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let (name, mesh) = match &mesh_path {
        Some(path) => (
            path.clone(),
            io::load_mesh(path).map_err(|e| e.to_string())?,
        ),
        None => (
            "generated scene".to_string(),
            fixtures::builtin_scene(20_000),
        ),
    };
    let (lo, hi) = mesh
        .bounds()
        .ok_or_else(|| format!("{name}: no triangles with finite vertices"))?;
    // Seen from the front, above and a little to the right, filling the image.
    let camera = Camera::framing(
        lo,
        hi,
        Vec3::new(0.2, 1.0, 1.0),
        50f32.to_radians(),
        aspect(WIDTH, HEIGHT),
    );
    let picker = Picker::new(backend).map_err(|e| e.to_string())?;
    let prepared = picker.upload(&mesh).map_err(|e| e.to_string())?;
    println!(
        "{name}: {} triangles, {WIDTH}x{HEIGHT} image, picking on the {}",
        mesh.triangle_count(),
        picker.device_name()
    );
    println!(
        "camera: eye {:.3} target {:.3} fov_y 50°",
        camera.eye, camera.target
    );

    // Pixel centres of a GRID × GRID lattice, inset from the image border.
    let pixels: Vec<(u32, u32)> = (0..GRID)
        .flat_map(|j| (0..GRID).map(move |i| (i, j)))
        .map(|(i, j)| {
            (
                (2 * i + 1) * WIDTH / (2 * GRID),
                (2 * j + 1) * HEIGHT / (2 * GRID),
            )
        })
        .collect();
    let rays: Vec<_> = pixels
        .iter()
        .map(|&(px, py)| camera.ray(px, py, WIDTH, HEIGHT))
        .collect();
    let picks = screen::pick(&picker, &prepared, &mesh, &rays, &TraceOptions::default())
        .map_err(|e| e.to_string())?;

    println!(
        "{:>10} {:>8} {:>10} {:>8} {:>8}  world point",
        "pixel", "prim", "t", "u", "v"
    );
    for ((px, py), pick) in pixels.iter().zip(&picks) {
        let pixel = format!("{px},{py}");
        match pick.point {
            Some(p) => println!(
                "{pixel:>10} {:>8} {:>10.4} {:>8.4} {:>8.4}  ({:.4}, {:.4}, {:.4})",
                pick.hit.prim, pick.hit.t, pick.hit.u, pick.hit.v, p.x, p.y, p.z
            ),
            None => println!("{pixel:>10} {:>8}", "miss"),
        }
    }
    let hits = picks.iter().filter(|p| p.hit.is_hit()).count();
    println!("{hits} of {} pixels hit", picks.len());

    // One pick per call, cycling through the grid's rays.
    let mut times: Vec<f64> = (0..51)
        .map(|i| {
            let ray = [rays[i % rays.len()]];
            let start = Instant::now();
            screen::pick(&picker, &prepared, &mesh, &ray, &TraceOptions::default())
                .map(|_| start.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    times.sort_by(f64::total_cmp);
    println!(
        "single pick: median {:.1} µs (min {:.1}, max {:.1}) over {} calls",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len()
    );
    Ok(())
}
