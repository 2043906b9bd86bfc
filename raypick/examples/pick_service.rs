//! A fake render loop at a fixed frame time that picks through the asynchronous
//! pick service, on the CPU and (when an adapter opens) the GPU, and prints how many
//! frames a pick takes to come back: mean and max, with the frame's own time spent
//! in the service (submit + poll + collect), which must stay small because the
//! service never waits.
//!
//! `cargo run --release --example pick_service -- [triangles] [frames] [frame_ms] [rays_per_pick]`
//! (defaults: 1,000,000 triangles, 300 frames, 16 ms, 1 ray).

use std::sync::Arc;
use std::time::{Duration, Instant};

use raypick::service::PickService;
use raypick::{Backend, Picker, TraceOptions};
use raypick_testkit::fixtures;

fn main() -> Result<(), raypick::Error> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap_or(0));
    let triangles = args.next().filter(|&n| n > 0).unwrap_or(1_000_000);
    let frames = args.next().filter(|&n| n > 0).unwrap_or(300);
    let frame = Duration::from_millis(args.next().filter(|&n| n > 0).unwrap_or(16) as u64);
    let rays_per_pick = args.next().filter(|&n| n > 0).unwrap_or(1);

    let mesh = fixtures::builtin_scene(triangles);
    let bounds = mesh.bounds().expect("the scene has triangles");
    // Picks at pixels of the camera image, one pick per frame, walking the image.
    let rays = fixtures::camera_rays(bounds, 64, 64);
    println!(
        "{} triangles, {frames} frames of {} ms, {rays_per_pick} ray(s) per pick",
        mesh.triangle_count(),
        frame.as_millis()
    );
    for backend in [Backend::Cpu, Backend::Gpu] {
        let picker = match Picker::new(backend) {
            Ok(picker) => Arc::new(picker),
            Err(e) => {
                println!("{backend:?}: not available: {e}");
                continue;
            }
        };
        let uploaded = picker.upload(&mesh)?;
        let mut service = PickService::new(picker.clone());
        let options = TraceOptions::default();
        let (mut latencies, mut hits) = (Vec::new(), 0usize);
        let mut spent_per_frame = Vec::new();
        for f in 0..frames + 20 {
            let start = Instant::now();
            if f < frames {
                // Walk the image in a scattered order (97 is prime to its size).
                let first = (f * 97 * rays_per_pick) % (rays.len() - rays_per_pick);
                service.submit(&uploaded, &rays[first..first + rays_per_pick], &options)?;
            }
            service.poll();
            for result in service.drain_results() {
                latencies.push(result.latency_frames());
                hits += result.hits?.iter().filter(|h| h.is_hit()).count();
            }
            let spent = start.elapsed();
            spent_per_frame.push(spent);
            if f >= frames && service.pending() == 0 {
                break;
            }
            std::thread::sleep(frame.saturating_sub(spent));
        }
        let mean = latencies.iter().sum::<u64>() as f64 / latencies.len().max(1) as f64;
        let max = latencies.iter().max().copied().unwrap_or(0);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let first = spent_per_frame[0];
        let mut sorted = spent_per_frame[1..].to_vec();
        sorted.sort();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
        println!(
            "{}: {} picks ({hits} rays hit), latency mean {mean:.2} frames, max {max} frames; \
             time in the service per frame: first {:.3} ms, then median {:.3} ms, \
             99th percentile {:.3} ms, max {:.3} ms",
            picker.device_name(),
            latencies.len(),
            ms(first),
            ms(at(0.5)),
            ms(at(0.99)),
            ms(at(1.0))
        );
    }
    Ok(())
}
