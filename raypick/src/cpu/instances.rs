//! Instance scenes on the CPU backend: rays in parallel on the backend's pool
//! (incoherent batches in the order of where they enter the scene's box, as for a
//! mesh), the mirror's top-level loop ([`traverse`]) with the CPU's 8-wide mesh BVH
//! below it.

use super::instance_traverse::{InstanceVisit, instance_ray, merge, traverse};
use super::ray_order::Incoherent;
use crate::options::{Cull, Mode};
use crate::cpu::CpuBackend;
use crate::cpu::simd::simd_dispatch;
use crate::cpu::vector::Lanes8;
use crate::cpu::wide_traverse::{self, RayStack};
use crate::instances::{InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::types::{InstanceHitRecord, MISS, Query, Ray};

/// Enters an instance with the wide mesh BVH (a visitor type, not a closure, so
/// that the mesh traversal's vector code is compiled with the caller's target
/// features: see [`InstanceVisit`]).
struct EnterWide<'a, L> {
    scene: &'a InstanceScene,
    ray: &'a Ray,
    cull: Cull,
    mode: Mode,
    /// The nearest hit ([`Query::Closest`]), or any ([`Query::Any`]: the first ends
    /// the walk).
    query: Query,
    /// The mesh traversal's scratch space (one per task, not one per instance).
    stack: &'a mut RayStack,
    lanes: std::marker::PhantomData<L>,
}

impl<L: Lanes8> InstanceVisit for EnterWide<'_, L> {
    #[inline(always)]
    fn visit(&mut self, index: u32, best: &mut InstanceHitRecord) {
        if best.t == f32::NEG_INFINITY {
            return; // any hit will do, and one was found
        }
        let Some(local) = instance_ray(self.scene, index, self.ray, best) else {
            return;
        };
        let wide = self.scene.blas_of(index as usize).wide();
        let (cull, mode) = (self.cull, self.mode);
        if self.query != Query::Any {
            let hit = wide_traverse::trace_one::<L>(wide, &local, cull, mode, self.stack);
            merge(index, &hit, best);
        } else if wide_traverse::occluded_one::<L>(wide, &local, cull, mode, self.stack) {
            // Nothing is nearer than -inf: the top-level walk enters nothing more.
            *best = InstanceHitRecord {
                t: f32::NEG_INFINITY,
                prim: 0,
                instance: index,
                ..InstanceHitRecord::MISS
            };
        }
    }
}

/// The walk of one world ray for `query`: the nearest hit, or for [`Query::Any`] a
/// record whose `prim` is not `MISS` as soon as one hit is found; `stack` is the
/// mesh traversal's scratch space.
#[inline(always)]
fn walk_ray<L: Lanes8>(
    scene: &InstanceScene,
    ray: &Ray,
    (cull, mode): (Cull, Mode),
    query: Query,
    stack: &mut RayStack,
) -> InstanceHitRecord {
    let mut best = InstanceHitRecord::MISS;
    if ray.dir != glam::Vec3::ZERO {
        let enter = EnterWide::<L> {
            scene,
            ray,
            cull,
            mode,
            query,
            stack,
            lanes: std::marker::PhantomData,
        };
        traverse(scene.tlas_nodes(), ray, &mut best, enter);
    }
    best
}

/// Walks one task's rays (sanitised first) for `query`, writing `keep(ray, record)`
/// into each ray's slot of `out`.
#[inline(always)]
fn walk_task<L: Lanes8, T>(
    scene: &InstanceScene,
    rays: &[Ray],
    out: &mut [T],
    (test, query): ((Cull, Mode), Query),
    keep: impl Fn(&Ray, &InstanceHitRecord) -> T,
) {
    let mut stack = RayStack::take();
    for (ray, out) in rays.iter().zip(out) {
        let ray = sanitize_ray(ray);
        *out = keep(&ray, &walk_ray::<L>(scene, &ray, test, query, &mut stack));
    }
    stack.keep();
}

#[inline(always)]
fn trace_task_by<L: Lanes8>(
    scene: &InstanceScene,
    rays: &[Ray],
    hits: &mut [InstanceHit],
    cull: Cull,
    mode: Mode,
) {
    let how = ((cull, mode), Query::Closest);
    walk_task::<L, _>(scene, rays, hits, how, |ray, best| scene.finish(ray, best));
}

#[inline(always)]
fn occluded_task_by<L: Lanes8>(
    scene: &InstanceScene,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
    mode: Mode,
) {
    let how = ((cull, mode), Query::Any);
    walk_task::<L, _>(scene, rays, occluded, how, |_, best| best.prim != MISS);
}

simd_dispatch! {
    /// Traces one task's rays into `hits`, the top level and the meshes with the
    /// widest vector unit the CPU has.
    fn trace_task(scene: &InstanceScene, rays: &[Ray], hits: &mut [InstanceHit], cull: Cull, mode: Mode) => trace_task_by::<Lanes8>
}

simd_dispatch! {
    /// Writes whether each of one task's rays hits anything, each stopping at its
    /// first hit.
    fn occluded_task(scene: &InstanceScene, rays: &[Ray], occluded: &mut [bool], cull: Cull, mode: Mode) => occluded_task_by::<Lanes8>
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
        self.walk_instances(scene, rays, InstanceHit::MISS, |rays, hits| {
            trace_task(scene, rays, hits, cull, mode)
        })
    }

    /// Whether each ray hits anything in an instance scene: `true` exactly when
    /// [`CpuBackend::trace_instances`] gives it a hit; each ray stops at its first.
    pub fn occluded_instances(
        &self,
        scene: &InstanceScene,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Vec<bool> {
        let (cull, mode) = (options.cull, options.mode);
        self.walk_instances(scene, rays, false, |rays, out| {
            occluded_task(scene, rays, out, cull, mode)
        })
    }

    /// One slot per ray, filled by `task` over the batch in tasks on the pool;
    /// incoherent batches in the order of where the rays enter the scene's box, as
    /// for a mesh.
    fn walk_instances<T: Copy + Send + Sync>(
        &self,
        scene: &InstanceScene,
        rays: &[Ray],
        fill: T,
        task: impl Fn(&[Ray], &mut [T]) + Send + Sync,
    ) -> Vec<T> {
        let mut out = vec![fill; rays.len()];
        let bounds = || scene.world_bounds();
        self.in_tracing_order(bounds, Incoherent::Sorted, rays, &mut out, fill, task);
        out
    }
}

impl InstanceScene {
    /// Traces `rays` on the CPU (rayon's global pool); one hit per ray. Same answers
    /// as [`crate::gpu::GpuContext::trace_instances`].
    pub fn trace(&self, rays: &[Ray], options: &TraceOptions) -> Vec<InstanceHit> {
        CpuBackend::new().trace_instances(self, rays, options)
    }

    /// Whether each ray hits anything, on the CPU (rayon's global pool): `true`
    /// exactly when [`InstanceScene::trace`] gives it a hit.
    pub fn occluded(&self, rays: &[Ray], options: &TraceOptions) -> Vec<bool> {
        CpuBackend::new().occluded_instances(self, rays, options)
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
