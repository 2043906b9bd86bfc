//! Traces one batch of camera rays through a generated scene on the CPU and, when an
//! adapter opens, on the GPU; prints the time of each and how many hits agree.
//!
//! `cargo run --release --example trace_batch -- [triangles] [width] [height]`

use std::time::Instant;

use raypick::{Backend, Picker, TraceOptions};
use raypick_testkit::fixtures;

fn main() -> Result<(), raypick::Error> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap_or(0));
    let triangles = args.next().filter(|&n| n > 0).unwrap_or(10_000);
    let width = args.next().filter(|&n| n > 0).unwrap_or(256) as u32;
    let height = args.next().filter(|&n| n > 0).unwrap_or(256) as u32;

    let mesh = fixtures::builtin_scene(triangles);
    let bounds = mesh.bounds().expect("the scene has triangles");
    let rays = fixtures::camera_rays(bounds, width, height);
    println!("{} triangles, {} rays", mesh.triangle_count(), rays.len());

    let mut results = Vec::new();
    for backend in [Backend::Cpu, Backend::Gpu] {
        let picker = match Picker::new(backend) {
            Ok(picker) => picker,
            Err(e) => {
                println!("{backend:?}: not available: {e}");
                continue;
            }
        };
        let uploaded = picker.upload(&mesh)?;
        picker.trace(&uploaded, &rays, &TraceOptions::default())?; // warm-up
        let start = Instant::now();
        let hits = picker.trace(&uploaded, &rays, &TraceOptions::default())?;
        let seconds = start.elapsed().as_secs_f64();
        let tests = rays.len() as f64 * mesh.triangle_count() as f64;
        println!(
            "{:<40} {:>9.1} ms {:>9.1} M tests/s, {} hits",
            picker.device_name(),
            seconds * 1e3,
            tests / seconds / 1e6,
            hits.iter().filter(|h| h.is_hit()).count()
        );
        results.push(hits);
    }
    if let [cpu, gpu] = &results[..] {
        let same = cpu.iter().zip(gpu).filter(|(a, b)| a == b).count();
        println!("parity: {same}/{} identical", cpu.len());
    }
    Ok(())
}
