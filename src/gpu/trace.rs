//! Tracing ray batches on the GPU: batches are split into dispatches of at most
//! [`GpuContext::max_rays_per_dispatch`] rays, each traced against every triangle
//! chunk of the mesh in id order, and read back into the caller's hit slice.

use super::readback::{Wait, map_read};
use super::{GpuContext, GpuMesh};
use crate::error::{Error, Result};
use crate::options::{Accel, TraceOptions};
use crate::prepare::sanitize_ray;
use crate::shaders::BRUTE_FORCE_WORKGROUP;
use crate::types::{Hit, Ray, TraceParams};

const RAY_BYTES: u64 = std::mem::size_of::<Ray>() as u64;
const HIT_BYTES: u64 = std::mem::size_of::<Hit>() as u64;

/// Buffers reused across trace calls, sized for `capacity` rays per dispatch.
#[derive(Debug)]
pub(crate) struct Scratch {
    capacity: usize,
    params: wgpu::Buffer,
    rays: wgpu::Buffer,
    hits: wgpu::Buffer,
    staging: wgpu::Buffer,
    sanitized: Vec<Ray>,
}

impl Scratch {
    fn new(device: &wgpu::Device, capacity: usize) -> Self {
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
            .await?;
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
            return Err(Error::Unsupported(format!(
                "{} rays but {} hit slots",
                rays.len(),
                hits.len()
            )));
        }
        if mesh.context_id != self.id {
            return Err(Error::WrongBackend);
        }
        self.errors.check()?;
        if mesh.chunks.is_empty() {
            hits.fill(Hit::MISS);
            return Ok(());
        }
        let Accel::Brute = options.accel;
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
            self.dispatch(mesh, rays, options, scratch)?;
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
        }
        self.errors.check()
    }

    /// Uploads one batch of rays and traces them against every triangle of the mesh,
    /// one dispatch per range of at most `max_triangles_per_dispatch` triangles, in id
    /// order, leaving the hits in the staging buffer.
    fn dispatch(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        scratch: &mut Scratch,
    ) -> Result<()> {
        scratch.sanitized.clear();
        scratch.sanitized.extend(rays.iter().map(sanitize_ray));
        self.queue
            .write_buffer(&scratch.rays, 0, bytemuck::cast_slice(&scratch.sanitized));
        let workgroups = (rays.len() as u32).div_ceil(BRUTE_FORCE_WORKGROUP);
        let layout = self.pipelines.brute_force.get_bind_group_layout(0);
        let step = self.max_triangles_per_dispatch();
        let mut first_dispatch = true;
        for (index, chunk) in mesh.chunks.iter().enumerate() {
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("raypick brute_force"),
                layout: &layout,
                entries: &[
                    entry(0, &scratch.params),
                    entry(1, &chunk.buffer),
                    entry(2, &scratch.rays),
                    entry(3, &scratch.hits),
                ],
            });
            for tri_first in (0..chunk.count).step_by(step as usize) {
                let params = TraceParams {
                    ray_count: rays.len() as u32,
                    tri_count: step.min(chunk.count - tri_first),
                    tri_base: chunk.base + tri_first,
                    cull: options.cull.to_u32(),
                    accumulate: u32::from(!first_dispatch),
                    miss_t: f32::INFINITY,
                    one: 1.0,
                    tri_first,
                };
                first_dispatch = false;
                // Each dispatch is its own submission, so this write lands before it
                // and after the previous one.
                self.queue
                    .write_buffer(&scratch.params, 0, bytemuck::bytes_of(&params));
                let mut encoder = self.device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&self.pipelines.brute_force);
                    pass.set_bind_group(0, &bind_group, &[]);
                    pass.dispatch_workgroups(workgroups, 1, 1);
                }
                let last =
                    index + 1 == mesh.chunks.len() && tri_first.saturating_add(step) >= chunk.count;
                if last {
                    let bytes = rays.len() as u64 * HIT_BYTES;
                    encoder.copy_buffer_to_buffer(&scratch.hits, 0, &scratch.staging, 0, bytes);
                }
                self.queue.submit([encoder.finish()]);
            }
        }
        Ok(())
    }
}

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}
