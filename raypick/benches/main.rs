//! Criterion benches: `cargo bench --bench main` (runs on lavapipe; without any
//! adapter the GPU cases are left out with a notice). Fixed seeds; every case asserts
//! its result. Fixtures are built once, lazily (`support`), so a filter runs only
//! what it selects and builds only what that needs:
//!
//! ```text
//! cargo bench --bench main -- bvh_build            # build rate, 1M and 10M triangles
//! cargo bench --bench main -- bvh_build/1M         # 1M only
//! cargo bench --bench main -- bvh_trace            # trace rate, all implementations
//! cargo bench --bench main -- bvh_trace/1M_tris/camera
//! cargo bench --bench main -- raypick_cpu_bvh      # one implementation, every group
//! cargo bench --bench main -- pick_latency
//! cargo bench --bench main -- brute_force
//! cargo bench --bench main -- mode_cost           # watertight vs fast test
//! cargo bench --bench main -- refit               # refit vs rebuild, CPU and GPU
//! cargo bench --bench main -- queries             # closest vs any hit vs all hits
//! ```
//!
//! Groups:
//! * `bvh_build/{1M,10M}_tris`: `Bvh::build` rate (triangles/s), global pool and
//!   1 thread; prints bytes per triangle and depth.
//! * `bvh_trace/1M_tris/{camera,incoherent}_1Mrays`: rays/s of raypick's CPU BVH,
//!   GPU BVH and CPU brute force (1,024-ray subset), parry3d and obvhs, 2 threads.
//! * `pick_latency/1M_tris`: 1 and 64 rays at the image centre, CPU and GPU BVH.
//! * `brute_force/...`: ~10k triangles × 64k rays, CPU 1 and 2 threads, GPU.
//! * `mode_cost/...`: watertight vs fast test, CPU BVH (1M triangles, both ray sets)
//!   and brute force (10k triangles, CPU and GPU).
//! * `refit/1M_tris`: refit vs rebuild after the vertices move, CPU and GPU (`refit`).
//! * `queries/shadow_100k_tris`: closest hit, any hit and the 4 nearest hits of
//!   shadow rays on the built-in scene, CPU BVH (2 threads) and GPU BVH.
//! * `scale_build/{1k,10k,100k,1M}_tris`, `scale_trace/{1k,10k,100k,1M}_tris`:
//!   preparation time and trace rate of brute force and the BVH on the CPU and the
//!   GPU across mesh sizes (`scaling`).
//!
//! ```text
//! cargo bench --bench main -- scale_                # the size sweep only
//! cargo bench --bench main -- scale_trace/100k      # one size
//! ```

mod brute_force;
mod bvh;
mod compare;
mod modes;
mod queries;
mod refit;
mod scaling;
mod support;

use criterion::{criterion_group, criterion_main};

criterion_group!(
    benches,
    bvh::build,
    bvh::trace,
    bvh::pick,
    brute_force::brute_force,
    modes::mode_cost,
    refit::refit,
    queries::queries,
    scaling::build,
    scaling::trace
);
criterion_main!(benches);
