//! Instance scenes on the CPU backend: rays in parallel on the backend's pool
//! (incoherent batches in the order of where they enter the scene's box, as for a
//! mesh), the mirror's top-level loop ([`traverse`]) with the CPU's 8-wide mesh BVH
//! below it.

use super::instance_traverse::{InstanceVisit, instance_ray, merge, traverse};
use crate::options::{Cull, Mode};
use crate::cpu::CpuBackend;
use crate::cpu::simd::simd_dispatch;
use crate::cpu::vector::Lanes8;
use crate::cpu::wide_traverse::{self, RayStack};
use crate::instances::{InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::types::{InstanceHitRecord, Ray};

/// Enters an instance with the wide mesh BVH (a visitor type, not a closure, so
/// that the mesh traversal's vector code is compiled with the caller's target
/// features: see [`InstanceVisit`]).
struct EnterWide<'a, L> {
    scene: &'a InstanceScene,
    ray: &'a Ray,
    cull: Cull,
    mode: Mode,
    /// The mesh traversal's scratch space (one per task, not one per instance).
    stack: &'a mut RayStack,
    lanes: std::marker::PhantomData<L>,
}

impl<L: Lanes8> InstanceVisit for EnterWide<'_, L> {
    #[inline(always)]
    fn visit(&mut self, index: u32, best: &mut InstanceHitRecord) {
        if let Some(local) = instance_ray(self.scene, index, self.ray, best) {
            let wide = self.scene.blas_of(index as usize).wide();
            let hit =
                wide_traverse::trace_one::<L>(wide, &local, self.cull, self.mode, self.stack);
            merge(index, &hit, best);
        }
    }
}

/// Nearest hit of one world ray: the two-level traversal with the wide mesh BVH,
/// `stack` the mesh traversal's scratch space.
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
        let enter = EnterWide::<L> {
            scene,
            ray: &ray,
            cull,
            mode,
            stack,
            lanes: std::marker::PhantomData,
        };
        traverse(scene.tlas_nodes(), &ray, &mut best, enter);
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
        // Incoherent batches in the order of where the rays enter the scene's box,
        // as for a mesh.
        let bounds = || scene.world_bounds();
        self.in_tracing_order(bounds, rays, &mut hits, 1, InstanceHit::MISS, |rays, hits| {
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
