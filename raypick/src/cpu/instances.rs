//! Instance scenes on the CPU backend: rays in parallel on the backend's pool, the
//! mirror's top-level loop ([`traverse`]) with the CPU's 8-wide mesh BVH below it.

use super::instance_traverse::{instance_ray, merge, traverse};
use crate::options::{Cull, Mode};
use crate::cpu::CpuBackend;
use crate::cpu::simd::simd_dispatch;
use crate::cpu::vector::Lanes8;
use crate::cpu::wide_traverse::{self, RayStack};
use crate::instances::{InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::types::{InstanceHitRecord, Ray};

/// Nearest hit of one world ray: the two-level traversal with the wide mesh BVH,
/// `stack` the mesh traversal's scratch space (one per task, not one per instance
/// entered).
#[inline(always)]
fn trace_ray<L: Lanes8>(
    scene: &InstanceScene,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    stack: &mut RayStack,
) -> InstanceHit {
    let ray = sanitize_ray(ray);
    let mut best = InstanceHitRecord::MISS;
    if ray.dir != glam::Vec3::ZERO {
        traverse(scene.tlas_nodes(), &ray, &mut best, |index, best| {
            if let Some(local) = instance_ray(scene, index, &ray, best) {
                let wide = scene.blas_of(index as usize).wide();
                let hit = wide_traverse::trace_one::<L>(wide, &local, cull, mode, stack);
                merge(index, &hit, best);
            }
        });
    }
    scene.finish(&ray, &best)
}

#[inline(always)]
fn trace_task_by<L: Lanes8>(
    scene: &InstanceScene,
    rays: &[Ray],
    hits: &mut [InstanceHit],
    cull: Cull,
    mode: Mode,
) {
    let mut stack = RayStack::take();
    for (ray, hit) in rays.iter().zip(hits) {
        *hit = trace_ray::<L>(scene, ray, cull, mode, &mut stack);
    }
    stack.keep();
}

simd_dispatch! {
    /// Traces one task's rays into `hits`, the top level and the meshes with the
    /// widest vector unit the CPU has.
    fn trace_task(scene: &InstanceScene, rays: &[Ray], hits: &mut [InstanceHit], cull: Cull, mode: Mode) => trace_task_by::<Lanes8>
}

impl CpuBackend {
    /// Traces `rays` through an instance scene; one hit per ray.
    pub fn trace_instances(
        &self,
        scene: &InstanceScene,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Vec<InstanceHit> {
        let (cull, mode) = (options.cull, options.mode);
        let mut hits = vec![InstanceHit::MISS; rays.len()];
        // In the caller's order: no box orders rays across instances yet.
        self.in_tracing_order(|| None, rays, &mut hits, 1, InstanceHit::MISS, |rays, hits| {
            trace_task(scene, rays, hits, cull, mode)
        });
        hits
    }
}

impl InstanceScene {
    /// Traces `rays` on the CPU (rayon's global pool); one hit per ray. Same answers
    /// as [`crate::gpu::GpuContext::trace_instances`].
    pub fn trace(&self, rays: &[Ray], options: &TraceOptions) -> Vec<InstanceHit> {
        CpuBackend::new().trace_instances(self, rays, options)
    }

    /// Traces `rays` with the traversal mirror of the shader
    /// (`instance_traverse`), one ray after the other: the oracle.
    pub fn trace_mirror(&self, rays: &[Ray], options: &TraceOptions) -> Vec<InstanceHit> {
        let (cull, mode) = (options.cull, options.mode);
        rays.iter()
            .map(|ray| {
                let ray = sanitize_ray(ray);
                let raw = super::instance_traverse::trace_ray(self, &ray, cull, mode);
                self.finish(&ray, &raw)
            })
            .collect()
    }
}
