//! The CPU backend: the fallback when there is no GPU, and the oracle the GPU is
//! tested against. One module per shader stage, with the same names and loop order:
//! [`intersect`], [`moller_trumbore`] and [`watertight`] mirror the shader files of the
//! same names, [`brute_force`] mirrors
//! `shaders/brute_force.wgsl`, [`bvh_traverse`] `shaders/bvh_traverse.wgsl` and
//! [`hit_list`] `shaders/hit_list.wgsl`; [`query`] is what the kernels keep of the
//! hits they find. Rays are traced in parallel on a rayon thread pool; large
//! batches against a BVH in an order of their own (module `ray_order`: camera
//! images in tiles, incoherent rays against instances sorted by where they enter
//! the scene's box), each answer written back to its ray's slot.

pub mod brute_force;
pub mod bvh_traverse;
pub mod bvh_walk;
pub mod gather;
pub mod hit_list;
// The stage's traversal runs on the CPU only in tests; the upload uses its boxes.
#[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
pub mod instance_ray_query;
pub mod instance_traverse;
mod instances;
pub mod intersect;
mod interleaved_walks;
pub mod moller_trumbore;
mod packet_traverse;
pub mod query;
#[cfg(any(test, feature = "kernels"))]
pub mod traversal_cost;
mod ray_order;
// The stage's decisions run on the CPU only in tests (the CPU traces a ray-query
// mesh with its BVH); the upload uses its boxes.
#[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
pub mod ray_query;
mod mesh_refit;
mod refit;
pub(crate) mod simd;
mod vector;
pub mod watertight;
mod wide_boxes;
pub mod wide_bvh;
pub mod wide_traverse;
// The twin runs on the CPU only in tests and the traversal cost (the GPU's
// unfinished rays are finished by the binary traversal).
#[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
pub mod wide_bvh_traverse;
pub mod wide_nodes;


use rayon::prelude::*;

use crate::Mesh;
use crate::all_hits::AllHits;
use crate::error::{Error, Result};
use crate::options::{Accel, TraceOptions};
use crate::prepare::pack_mesh;
use crate::types::{Hit, Ray};
use brute_force::TriangleBlocks;
use ray_order::{Incoherent, RayOrder, Scatter};
use wide_bvh::WideBvh;

/// Rays handed to one rayon task at least: big enough to amortise scheduling. A
/// batch of one task runs on the calling thread ([`CpuBackend::runs_here`]).
const RAYS_PER_TASK: usize = 64;

/// Rays handed to one rayon task at most ([`rays_per_task`]).
const MAX_RAYS_PER_TASK: usize = 1024;

/// Rays per task for a batch of `rays` on the current pool: eight tasks per
/// thread, so that threads that finish early take work from the others, but no
/// fewer than [`RAYS_PER_TASK`] and no more than [`MAX_RAYS_PER_TASK`] (large
/// tasks start and finish their interleaved walks (module `interleaved_walks`)
/// less often), in whole multiples of [`RAYS_PER_TASK`], so that every task
/// starts at a whole packet.
fn rays_per_task(rays: usize) -> usize {
    let even = rays / (8 * rayon::current_num_threads());
    even.clamp(RAYS_PER_TASK, MAX_RAYS_PER_TASK) / RAYS_PER_TASK * RAYS_PER_TASK
}

/// A mesh prepared for the CPU backend.
#[derive(Clone, Debug)]
pub enum CpuMesh {
    /// Triangles in SIMD blocks, in id order, for brute force.
    Brute(TriangleBlocks),
    /// A BVH, in the CPU's wide layout.
    Bvh(WideBvh),
}

impl CpuMesh {
    /// Prepares a mesh with the default acceleration structure (a BVH).
    pub fn new(mesh: &Mesh) -> Self {
        Self::with_accel(mesh, Accel::default())
    }

    /// Prepares a mesh for the given acceleration structure. The CPU has no ray
    /// queries: [`Accel::RayQuery`] gives the BVH, which is what traces a ray-query
    /// mesh on the CPU (the [`crate::Picker`] refuses it on the CPU backend with
    /// [`Error::NoRayQueries`]).
    pub fn with_accel(mesh: &Mesh, accel: Accel) -> Self {
        match accel {
            Accel::Brute => CpuMesh::Brute(TriangleBlocks::new(&pack_mesh(mesh))),
            Accel::Bvh | Accel::RayQuery => CpuMesh::Bvh(WideBvh::build(mesh)),
        }
    }

    /// The acceleration structure.
    pub fn accel(&self) -> Accel {
        match self {
            CpuMesh::Brute(_) => Accel::Brute,
            CpuMesh::Bvh(_) => Accel::Bvh,
        }
    }

    /// Number of triangles of the mesh.
    pub fn triangle_count(&self) -> usize {
        match self {
            CpuMesh::Brute(blocks) => blocks.triangle_count(),
            CpuMesh::Bvh(bvh) => bvh.mesh_triangle_count(),
        }
    }

    /// The box whose entry points order large batches of incoherent rays
    /// ([`RayOrder`]); `None` (rays traced as given) for brute force, which reads
    /// every triangle for every ray whatever the order.
    fn ray_order_bounds(&self) -> Option<(glam::Vec3, glam::Vec3)> {
        match self {
            CpuMesh::Brute(_) => None,
            CpuMesh::Bvh(bvh) => bvh.bounds(),
        }
    }

    /// Bytes of triangle and node data held.
    pub fn size_bytes(&self) -> usize {
        match self {
            CpuMesh::Brute(blocks) => blocks.size_bytes(),
            CpuMesh::Bvh(bvh) => bvh.size_bytes(),
        }
    }
}

/// The CPU backend: a thread pool (rayon's global one unless a thread count is given).
#[derive(Debug, Default)]
pub struct CpuBackend {
    pool: Option<rayon::ThreadPool>,
}

impl CpuBackend {
    /// A backend on rayon's global thread pool (all cores unless `RAYON_NUM_THREADS` says otherwise).
    pub fn new() -> Self {
        Self { pool: None }
    }

    /// A backend with its own pool of `threads` threads.
    pub fn with_threads(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("raypick-cpu-{i}"))
            .build()
            .map_err(|source| Error::ThreadPool { threads, source })?;
        Ok(Self { pool: Some(pool) })
    }

    /// Number of threads rays are traced on.
    pub fn threads(&self) -> usize {
        self.pool
            .as_ref()
            .map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
    }

    /// Traces `rays` and returns one hit per ray.
    ///
    /// Rays are in the mesh's local frame: for a [`Mesh`] with a non-zero
    /// [`origin`](Mesh::origin) move them with [`crate::TraceRay::to_local`] first
    /// ([`crate::Picker`] does this itself).
    #[cfg(any(test, feature = "kernels"))]
    pub fn trace(&self, mesh: &CpuMesh, rays: &[Ray], options: &TraceOptions) -> Vec<Hit> {
        let mut hits = vec![Hit::MISS; rays.len()];
        self.trace_into(mesh, rays, options, &mut hits);
        hits
    }

    /// Traces `rays` into `hits` (one slot per ray).
    ///
    /// # Panics
    /// If `hits.len() != rays.len()`.
    pub fn trace_into(
        &self,
        mesh: &CpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        hits: &mut [Hit],
    ) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        let (cull, mode) = (options.cull, options.mode);
        let bounds = || mesh.ray_order_bounds();
        let incoherent = Incoherent::AsGiven;
        self.in_tracing_order(bounds, incoherent, rays, hits, Hit::MISS, |rays, hits| match mesh {
            CpuMesh::Brute(blocks) => brute_force::trace_rays(blocks, rays, hits, cull, mode),
            CpuMesh::Bvh(bvh) => wide_traverse::trace_rays(bvh, rays, hits, cull, mode),
        })
    }

    /// Whether each ray hits anything (the same as `trace(..)[i].is_hit()`, found
    /// faster: each ray stops at its first accepted hit).
    #[cfg(any(test, feature = "kernels"))]
    pub fn occluded(&self, mesh: &CpuMesh, rays: &[Ray], options: &TraceOptions) -> Vec<bool> {
        let mut occluded = vec![false; rays.len()];
        self.occluded_into(mesh, rays, options, &mut occluded);
        occluded
    }

    /// [`CpuBackend::occluded`] into `occluded` (one slot per ray; panics otherwise).
    pub fn occluded_into(
        &self,
        mesh: &CpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        occluded: &mut [bool],
    ) {
        assert_eq!(rays.len(), occluded.len(), "one slot per ray");
        let (cull, mode) = (options.cull, options.mode);
        self.in_tracing_order(
            || mesh.ray_order_bounds(),
            Incoherent::AsGiven,
            rays,
            occluded,
            false,
            |rays, out| match mesh {
                CpuMesh::Brute(blocks) => brute_force::occluded_rays(blocks, rays, out, cull, mode),
                CpuMesh::Bvh(bvh) => wide_traverse::occluded_rays(bvh, rays, out, cull, mode),
            },
        );
    }

    /// The `max_hits` nearest hits of each ray, sorted by `(t, id)` (see [`AllHits`]).
    /// Fails when `max_hits` is 0 or the result would not fit in memory.
    pub fn trace_all(
        &self,
        mesh: &CpuMesh,
        rays: &[Ray],
        max_hits: usize,
        options: &TraceOptions,
    ) -> Result<AllHits> {
        let (cull, mode) = (options.cull, options.mode);
        let mut all = AllHits::new(rays.len(), max_hits)?;
        let (slots, states) = all.parts_mut();
        let task = |rays: &[Ray], slots: &mut [Hit], states: &mut [u32]| match mesh {
            CpuMesh::Brute(blocks) => {
                brute_force::collect_rays(blocks, rays, slots, states, cull, mode)
            }
            CpuMesh::Bvh(bvh) => wide_traverse::collect_rays(bvh, rays, slots, states, cull, mode),
        };
        if Self::runs_here(rays.len()) {
            task(rays, slots, states);
            return Ok(all);
        }
        let collect = |rays: &[Ray], slots: &mut [Hit], states: &mut [u32]| {
            let per_task = rays_per_task(rays.len());
            rays.par_chunks(per_task)
                .zip(slots.par_chunks_mut(per_task * max_hits))
                .zip(states.par_chunks_mut(per_task))
                .for_each(|((rays, slots), states)| task(rays, slots, states))
        };
        let bounds = mesh.ray_order_bounds();
        let windows = rays
            .chunks(ray_order::WINDOW)
            .zip(slots.chunks_mut(ray_order::WINDOW * max_hits))
            .zip(states.chunks_mut(ray_order::WINDOW));
        for ((rays, slots), states) in windows {
            self.install(|| match RayOrder::for_batch(rays, bounds, Incoherent::AsGiven) {
                None => collect(rays, slots, states),
                Some(order) => {
                    let (slots, states) = (
                        Scatter::new(slots, max_hits, &order),
                        Scatter::new(states, 1, &order),
                    );
                    order.for_each_task(rays, rays_per_task(rays.len()), |rays, places| {
                        // Lists start as `AllHits::new` leaves them: empty.
                        let mut traced_slots = vec![Hit::MISS; rays.len() * max_hits];
                        let mut traced_states = vec![0; rays.len()];
                        task(rays, &mut traced_slots, &mut traced_states);
                        slots.write(places, &traced_slots);
                        states.write(places, &traced_states);
                    });
                }
            });
        }
        Ok(all)
    }

    /// Runs `task` over `rays` and `out` (one value per ray, every one of which
    /// `task` writes) in tasks on the pool ([`rays_per_task`]), window by
    /// window ([`ray_order::WINDOW`] rays), each window in the order [`RayOrder`]
    /// picks for it against the mesh box `bounds` gives (`None`: as given), with
    /// incoherent windows as `incoherent` says, each task's answers starting as
    /// `fill`. A batch of one task runs on the calling thread instead
    /// ([`CpuBackend::runs_here`]), without asking for the box.
    pub(crate) fn in_tracing_order<T: Copy + Send + Sync>(
        &self,
        bounds: impl FnOnce() -> Option<(glam::Vec3, glam::Vec3)>,
        incoherent: Incoherent,
        rays: &[Ray],
        out: &mut [T],
        fill: T,
        task: impl Fn(&[Ray], &mut [T]) + Send + Sync,
    ) {
        if Self::runs_here(rays.len()) {
            return task(rays, out);
        }
        self.in_tracing_order_on_pool(bounds, incoherent, rays, out, fill, task);
    }

    /// [`CpuBackend::in_tracing_order`] of a batch of more than one task, compiled
    /// apart: a pick's call then sets up none of the pool's work.
    #[inline(never)]
    fn in_tracing_order_on_pool<T: Copy + Send + Sync>(
        &self,
        bounds: impl FnOnce() -> Option<(glam::Vec3, glam::Vec3)>,
        incoherent: Incoherent,
        rays: &[Ray],
        out: &mut [T],
        fill: T,
        task: impl Fn(&[Ray], &mut [T]) + Send + Sync,
    ) {
        let bounds = bounds();
        let windows = rays.chunks(ray_order::WINDOW).zip(out.chunks_mut(ray_order::WINDOW));
        for (rays, out) in windows {
            self.install(|| {
                let per_task = rays_per_task(rays.len());
                match RayOrder::for_batch(rays, bounds, incoherent) {
                    None => rays
                        .par_chunks(per_task)
                        .zip(out.par_chunks_mut(per_task))
                        .for_each(|(rays, out)| task(rays, out)),
                    Some(order) => {
                        let out = Scatter::new(out, 1, &order);
                        order.for_each_task(rays, per_task, |rays, places| {
                            let mut traced = vec![fill; rays.len()];
                            task(rays, &mut traced);
                            out.write(places, &traced);
                        });
                    }
                }
            });
        }
    }

    /// Whether a batch of `rays` rays is traced on the calling thread, without rayon:
    /// when it makes one task ([`RAYS_PER_TASK`]), as a pick or a handful of rays
    /// does, other threads cannot help, and a trip to the pool and back would cost
    /// it more than its trace.
    fn runs_here(rays: usize) -> bool {
        rays <= RAYS_PER_TASK
    }

    /// Runs `f` on this backend's thread pool (rayon's global pool when it has none
    /// of its own).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use glam::Vec3;

    use super::*;

    /// Picks of up to a task's rays are traced on the calling thread: they finish
    /// while the backend's only pool thread is busy. (Through the pool they would
    /// wait until the busy job gives up, and it would report so.)
    #[test]
    fn picks_do_not_wait_for_a_busy_pool() {
        let backend = CpuBackend::with_threads(1).expect("a pool");
        let (started, has_started) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let (outcome, busy_job) = mpsc::channel();
        let pool = backend.pool.as_ref().expect("its own pool");
        pool.spawn(move || {
            started.send(()).ok();
            let by_release = released.recv_timeout(Duration::from_secs(30)).is_ok();
            outcome.send(by_release).ok();
        });
        has_started.recv().expect("the busy job starts");

        let positions = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
        let mesh = Mesh::new(positions, vec![[0, 1, 2]]).expect("a valid mesh");
        let options = TraceOptions::default();
        let ray = Ray::new(Vec3::new(0.25, 0.25, 1.0), Vec3::NEG_Z);
        let rays = vec![ray; RAYS_PER_TASK];
        for accel in [Accel::Bvh, Accel::Brute] {
            let mesh = CpuMesh::with_accel(&mesh, accel);
            for rays in [&rays[..1], &rays[..]] {
                let hits = backend.trace(&mesh, rays, &options);
                assert!(hits.iter().all(|h| h.prim == 0 && h.t == 1.0), "{hits:?}");
                assert!(backend.occluded(&mesh, rays, &options).iter().all(|&o| o));
                let all = backend
                    .trace_all(&mesh, rays, 2, &options)
                    .expect("hit lists");
                assert!((0..rays.len()).all(|i| all.hits_of(i).len() == 1));
            }
        }
        release.send(()).ok();
        let by_release = busy_job.recv().expect("the busy job ends");
        assert!(by_release, "a pick waited for the pool's busy thread");
    }
}
