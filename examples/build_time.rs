//! Times BVH builds: `cargo run --release --example build_time -- [triangles]`.
use std::time::Instant;

use raypick::bvh::Bvh;
use raypick::cpu::wide_bvh::WideBvh;
use raypick::scene;

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let start = Instant::now();
    let mesh = scene::builtin_scene(n);
    println!(
        "scene: {} triangles in {:.1} ms",
        mesh.triangle_count(),
        start.elapsed().as_secs_f64() * 1e3
    );
    for _ in 0..3 {
        let start = Instant::now();
        let bvh = Bvh::build(&mesh);
        let build = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let wide = WideBvh::from_bvh(&bvh);
        let collapse = start.elapsed().as_secs_f64();
        println!(
            "build {:.1} ms ({:.2} M tris/s), collapse {:.1} ms, depth {}, {} nodes, {:.1} B/tri (binary), {:.1} B/tri (wide)",
            build * 1e3,
            n as f64 / build / 1e6,
            collapse * 1e3,
            bvh.depth(),
            bvh.nodes().len(),
            bvh.size_bytes() as f64 / n as f64,
            wide.size_bytes() as f64 / n as f64
        );
    }
}
