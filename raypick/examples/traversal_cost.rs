//! Counts what a GPU traversal costs per ray in each node layout (binary, eight-wide)
//! on mesh files: `cargo run --release --example traversal_cost --features io
//! -- [rays] MESH...` (default 1,048,576 rays per set; `builtin` for the built-in
//! scene of 1M triangles).
//!
//! For each mesh and ray set (camera rays, incoherent rays) it prints nodes,
//! triangles and bytes per ray, SIMT efficiency of 32-lane warps and the deepest
//! stack, counted on the CPU walks in dispatch order (`raypick::cpu::traversal_cost`),
//! and the wide layout's bytes and efficiency over the binary one's.
use raypick::TraceOptions;
use raypick::bvh::Bvh;
use raypick::cpu::traversal_cost::{TraversalCost, traversal_cost, wide_traversal_cost};
use raypick::cpu::wide_nodes::WideNodes;
use raypick_testkit::fixtures::{self, RaySet};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let rays = match args.first().map(|a| a.parse::<usize>()) {
        Some(Ok(n)) => {
            args.remove(0);
            n
        }
        _ => 1 << 20,
    };
    if args.is_empty() {
        return Err("usage: traversal_cost [rays] MESH... (or builtin)".into());
    }
    let options = TraceOptions::default();
    let line = |c: &TraversalCost| {
        format!(
            "{:>6} {:>8.1} nodes {:>7.1} tris {:>8.0} B/ray  SIMT {:.3}  stack {:>3}",
            c.layout.to_string(),
            c.nodes_per_ray,
            c.triangles_per_ray,
            c.bytes_per_ray,
            c.simt_efficiency,
            c.stack_max
        )
    };
    for path in &args {
        let mesh = if path == "builtin" {
            fixtures::builtin_scene(1_000_000)
        } else {
            raypick::io::load_mesh(path)?
        };
        let bounds = mesh.bounds().ok_or("the mesh has no finite vertices")?;
        let bvh = Bvh::build(&mesh);
        let wide = WideNodes::from_bvh(&bvh);
        println!(
            "{path}: {} triangles, {rays} rays per set",
            mesh.triangle_count()
        );
        for set in RaySet::ALL {
            let rays = set.generate(bounds, rays);
            let binary = traversal_cost(&bvh, &rays, &options);
            let wide = wide_traversal_cost(&wide, bvh.triangles(), &rays, &options);
            println!("  {:<8}{}", set.name(), line(&binary));
            println!("  {:<8}{}", "", line(&wide));
            println!(
                "  {:<8}  wide/binary: bytes {:.2}x, SIMT {:.2}x",
                "",
                wide.bytes_per_ray / binary.bytes_per_ray,
                wide.simt_efficiency / binary.simt_efficiency
            );
        }
    }
    Ok(())
}
