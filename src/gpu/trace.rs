//! Tracing ray batches on the GPU: batches are split into dispatches of at most
//! [`GpuContext::max_rays_per_dispatch`] rays, each traced against every chunk of the
//! mesh (triangle ranges for brute force, subtrees for a BVH) with the best hit
//! carried from one dispatch to the next, and read back into the caller's hit slice.

use rayon::prelude::*;

use super::mesh::{BvhBuffers, Content, TriangleChunk};
use super::readback::{Wait, map_read};
use super::{GpuContext, GpuMesh};
use crate::bvh::Bvh;
use crate::cpu::bvh_traverse;
use crate::error::{Error, Result};
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::shaders::{BRUTE_FORCE_WORKGROUP, BVH_TRAVERSE_WORKGROUP, UNFINISHED};
use crate::types::{Hit, Ray, TraceParams, TraverseParams};

const RAY_BYTES: u64 = std::mem::size_of::<Ray>() as u64;
const HIT_BYTES: u64 = std::mem::size_of::<Hit>() as u64;

/// Buffers reused across trace calls, sized for `capacity` rays per dispatch.
#[derive(Debug)]
pub(crate) struct Scratch {
    pub(crate) capacity: usize,
    params: wgpu::Buffer,
    pub(crate) rays: wgpu::Buffer,
    hits: wgpu::Buffer,
    pub(crate) staging: wgpu::Buffer,
    pub(crate) sanitized: Vec<Ray>,
}

impl Scratch {
    pub(crate) fn new(device: &wgpu::Device, capacity: usize) -> Self {
        let buffer = |label, size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let n = capacity as u64;
        Self {
            capacity,
            params: buffer(
                "raypick params",
                std::mem::size_of::<TraceParams>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            rays: buffer("raypick rays", n * RAY_BYTES, U::STORAGE | U::COPY_DST),
            hits: buffer("raypick hits", n * HIT_BYTES, U::STORAGE | U::COPY_SRC),
            staging: buffer(
                "raypick hit readback",
                n * HIT_BYTES,
                U::MAP_READ | U::COPY_DST,
            ),
            sanitized: Vec::with_capacity(capacity),
        }
    }
}

impl GpuContext {
    /// Traces `rays` against `mesh` and returns one hit per ray (blocking).
    ///
    /// Rays are in the mesh's local frame: for a [`crate::Mesh`] with a non-zero
    /// [`origin`](crate::Mesh::origin) move them with [`crate::TraceRay::to_local`]
    /// first ([`crate::Picker`] does this itself).
    pub fn trace(&self, mesh: &GpuMesh, rays: &[Ray], options: &TraceOptions) -> Result<Vec<Hit>> {
        let mut hits = vec![Hit::MISS; rays.len()];
        self.trace_into(mesh, rays, options, &mut hits)?;
        Ok(hits)
    }

    /// Traces `rays` into `hits` (one slot per ray), blocking until the GPU is done.
    pub fn trace_into(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        hits: &mut [Hit],
    ) -> Result<()> {
        pollster::block_on(self.trace_with(mesh, rays, options, hits, Wait::Block))
            .map_err(|e| self.lost_or(e))
    }

    /// Traces `rays` without blocking the thread: the device is polled without
    /// waiting each time the future is polled, so the future can run on any executor
    /// (it wakes itself until the GPU is done).
    pub async fn trace_async(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<Hit>> {
        let mut hits = vec![Hit::MISS; rays.len()];
        self.trace_with(mesh, rays, options, &mut hits, Wait::Yield)
            .await
            .map_err(|e| self.lost_or(e))?;
        Ok(hits)
    }

    async fn trace_with(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        hits: &mut [Hit],
        wait: Wait,
    ) -> Result<()> {
        if rays.len() != hits.len() {
            return Err(Error::OutputLength {
                rays: rays.len(),
                hits: hits.len(),
            });
        }
        if mesh.context_id != self.id {
            return Err(Error::WrongBackend);
        }
        self.errors.check()?;
        if rays.is_empty() {
            return Ok(());
        }
        if matches!(&mesh.content, Content::Brute(chunks) if chunks.is_empty()) {
            hits.fill(Hit::MISS);
            return Ok(());
        }
        let capacity = rays.len().min(self.max_rays_per_dispatch());
        let mut scratch = self.scratch.lock().await;
        if scratch.as_ref().is_none_or(|s| s.capacity < capacity) {
            *scratch = None; // free the old buffers first
            *scratch = Some(self.scoped(|| Scratch::new(&self.device, capacity))?);
        }
        let scratch = scratch.as_mut().expect("scratch was just created");
        for (rays, hits) in rays
            .chunks(self.max_rays_per_dispatch())
            .zip(hits.chunks_mut(self.max_rays_per_dispatch()))
        {
            scratch.sanitized.clear();
            scratch.sanitized.extend(rays.iter().map(sanitize_ray));
            self.queue
                .write_buffer(&scratch.rays, 0, bytemuck::cast_slice(&scratch.sanitized));
            match &mesh.content {
                Content::Brute(chunks) => {
                    self.dispatch_brute_force(chunks, rays.len(), options, scratch)
                }
                Content::Bvh { chunks, .. } => {
                    self.dispatch_bvh(chunks, rays.len(), options, scratch)
                }
            }
            let bytes = hits.len() as u64 * HIT_BYTES;
            let slice = scratch.staging.slice(..bytes);
            map_read(&self.device, slice, wait).await?;
            {
                let view = slice
                    .get_mapped_range()
                    .map_err(|e| Error::Readback(e.to_string()))?;
                hits.copy_from_slice(bytemuck::cast_slice(&view));
            }
            scratch.staging.unmap();
            if let Content::Bvh { cpu, chunks } = &mesh.content {
                let copy = mesh.gathered.as_ref().map(|g| g.copy.as_ref());
                let tree = self.finishing_tree(cpu, chunks, copy, hits)?;
                finish_on_cpu(&tree, &scratch.sanitized, hits, options);
            }
        }
        self.errors.check()
    }

    /// Brute force over the ray batch in `scratch`: one dispatch per range of at
    /// most `max_triangles_per_dispatch` triangles, in id order.
    pub(crate) fn dispatch_brute_force(
        &self,
        chunks: &[TriangleChunk],
        ray_count: usize,
        options: &TraceOptions,
        scratch: &Scratch,
    ) {
        let step = self.max_triangles_per_dispatch();
        let layout = self.pipelines.brute_force.get_bind_group_layout(0);
        let mut passes = Vec::new();
        for chunk in chunks {
            let bind_group = self.bind_group(
                &layout,
                &[&scratch.params, &chunk.buffer, &scratch.rays, &scratch.hits],
            );
            for tri_first in (0..chunk.count).step_by(step as usize) {
                let params = TraceParams {
                    ray_count: ray_count as u32,
                    tri_count: step.min(chunk.count - tri_first),
                    tri_base: chunk.base + tri_first,
                    cull: options.cull.to_u32(),
                    accumulate: u32::from(!passes.is_empty()),
                    miss_t: f32::INFINITY,
                    one: 1.0,
                    tri_first,
                    mode: options.mode.to_u32(),
                    ..Default::default()
                };
                passes.push((bytemuck::bytes_of(&params).to_vec(), bind_group.clone()));
            }
        }
        let workgroups = (ray_count as u32).div_ceil(BRUTE_FORCE_WORKGROUP);
        self.submit_passes(
            &self.pipelines.brute_force,
            passes,
            workgroups,
            ray_count,
            scratch,
        );
    }

    /// BVH traversal over the ray batch in `scratch`: one dispatch per BVH chunk.
    pub(crate) fn dispatch_bvh(
        &self,
        chunks: &[BvhBuffers],
        ray_count: usize,
        options: &TraceOptions,
        scratch: &Scratch,
    ) {
        let layout = self.pipelines.bvh_traverse.get_bind_group_layout(0);
        let passes = chunks
            .iter()
            .enumerate()
            .map(|(index, chunk)| {
                let params = TraverseParams {
                    ray_count: ray_count as u32,
                    cull: options.cull.to_u32(),
                    accumulate: u32::from(index > 0),
                    miss_t: f32::INFINITY,
                    one: 1.0,
                    max_steps: self.max_traversal_steps(),
                    mode: options.mode.to_u32(),
                    ..Default::default()
                };
                let bind_group = self.bind_group(
                    &layout,
                    &[
                        &scratch.params,
                        &chunk.nodes,
                        &chunk.triangles,
                        &scratch.rays,
                        &scratch.hits,
                    ],
                );
                (bytemuck::bytes_of(&params).to_vec(), bind_group)
            })
            .collect();
        let workgroups = (ray_count as u32).div_ceil(BVH_TRAVERSE_WORKGROUP);
        self.submit_passes(
            &self.pipelines.bvh_traverse,
            passes,
            workgroups,
            ray_count,
            scratch,
        );
    }

    fn bind_group(
        &self,
        layout: &wgpu::BindGroupLayout,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entries: Vec<_> = buffers
            .iter()
            .enumerate()
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raypick"),
            layout,
            entries: &entries,
        })
    }

    /// Submits one dispatch per (params, bind group) in order, each in its own
    /// submission so that its parameter write lands between it and the previous one;
    /// the last also copies the hits to the staging buffer.
    fn submit_passes(
        &self,
        pipeline: &wgpu::ComputePipeline,
        passes: Vec<(Vec<u8>, wgpu::BindGroup)>,
        workgroups: u32,
        ray_count: usize,
        scratch: &Scratch,
    ) {
        let last = passes.len().saturating_sub(1);
        for (index, (params, bind_group)) in passes.into_iter().enumerate() {
            self.queue.write_buffer(&scratch.params, 0, &params);
            let mut encoder = self.device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(workgroups, 1, 1);
            }
            if index == last {
                let bytes = ray_count as u64 * HIT_BYTES;
                encoder.copy_buffer_to_buffer(&scratch.hits, 0, &scratch.staging, 0, bytes);
            }
            self.queue.submit([encoder.finish()]);
        }
    }
}

/// Completes on the CPU the rays the GPU reported as [`UNFINISHED`] (out of loop
/// steps), with the same traversal.
pub(crate) fn finish_on_cpu(bvh: &Bvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) {
    let (cull, mode) = (options.cull.to_u32(), options.mode.to_u32());
    hits.par_iter_mut()
        .zip(rays)
        .filter(|(hit, _)| hit.prim == UNFINISHED)
        .for_each(|(hit, ray)| *hit = bvh_traverse::trace_ray(bvh, ray, cull, mode));
}
