//! Instance scenes on the GPU: every mesh BVH concatenated into one node and one
//! triangle buffer (each instance knows its mesh's offsets), the TLAS and the
//! instance records in two more, traced by `shaders/instance_traverse.wgsl`.
//!
//! Each of the four buffers must fit one storage binding
//! ([`GpuContext::max_binding_bytes`]); a scene that does not is refused with
//! [`InstanceError::TooLarge`] (it is not split: split the scene into several, or
//! trace it on the CPU). Ray batches of any size are split into dispatches. Moving
//! an instance refits the CPU copy of the TLAS; before the next trace, the changed
//! instance records and TLAS nodes (the moved instances' paths to the root) are
//! written in runs of consecutive entries.

use std::sync::Mutex;

use rayon::prelude::*;
use wgpu::util::DeviceExt;

use crate::cpu::instance_traverse;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::gpu::readback::{Wait, map_read};
use crate::instances::{InstanceError, InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::shaders::{INSTANCE_TRAVERSE_WORKGROUP, UNFINISHED};
use crate::types::{
    BvhNode, InstanceHitRecord, PackedInstance, PackedTriangle, Ray, TraverseParams,
};

const RECORD_BYTES: u64 = std::mem::size_of::<InstanceHitRecord>() as u64;
const NODE_BYTES: u64 = std::mem::size_of::<BvhNode>() as u64;
const INSTANCE_BYTES: u64 = std::mem::size_of::<PackedInstance>() as u64;

/// Per-batch buffers, reused while large enough.
#[derive(Debug)]
struct Scratch {
    capacity: usize,
    params: wgpu::Buffer,
    rays: wgpu::Buffer,
    hits: wgpu::Buffer,
    staging: wgpu::Buffer,
}

impl Scratch {
    fn new(device: &wgpu::Device, capacity: usize) -> Self {
        use wgpu::BufferUsages as U;
        let buffer = |label, size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let n = capacity as u64;
        Self {
            capacity,
            params: buffer(
                "raypick instance params",
                std::mem::size_of::<TraverseParams>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            rays: buffer(
                "raypick instance rays",
                n * std::mem::size_of::<Ray>() as u64,
                U::STORAGE | U::COPY_DST,
            ),
            hits: buffer(
                "raypick instance hits",
                n * RECORD_BYTES,
                U::STORAGE | U::COPY_SRC,
            ),
            staging: buffer(
                "raypick instance hit readback",
                n * RECORD_BYTES,
                U::MAP_READ | U::COPY_DST,
            ),
        }
    }
}

/// An [`InstanceScene`] uploaded to one [`GpuContext`], with its CPU copy (which
/// finishes the rays that run out of GPU loop steps and adds world points and
/// normals to the hits).
#[derive(Debug)]
pub struct GpuInstanceScene {
    scene: InstanceScene,
    tlas: wgpu::Buffer,
    instances: wgpu::Buffer,
    nodes: wgpu::Buffer,
    triangles: wgpu::Buffer,
    /// Per mesh: first node and first triangle in the shared buffers.
    offsets: Vec<(u32, u32)>,
    pub(crate) context_id: u64,
    scratch: Mutex<Option<Scratch>>,
    dirty: Mutex<Dirty>,
}

/// TLAS nodes and instance records changed on the CPU since the last upload.
#[derive(Debug, Default)]
struct Dirty {
    nodes: Vec<u32>,
    instances: Vec<u32>,
    all_nodes: bool,
}

/// Sorts `indices` and returns them as runs `(first, end)` of consecutive values.
fn runs(indices: &mut [u32]) -> Vec<(u32, u32)> {
    indices.sort_unstable();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &i in indices.iter() {
        match runs.last_mut() {
            Some((_, end)) if i <= *end => *end = (*end).max(i + 1),
            _ => runs.push((i, i + 1)),
        }
    }
    runs
}

impl GpuInstanceScene {
    /// The scene as uploaded (kept in step by [`GpuInstanceScene::set_transform`]).
    pub fn scene(&self) -> &InstanceScene {
        &self.scene
    }

    /// Moves instance `index` (see [`InstanceScene::set_transform`]): the CPU copy's
    /// TLAS is refitted now; the instance record and the changed TLAS nodes are
    /// written to the GPU before the next trace (several moves, one upload of the
    /// changed runs). No mesh data is uploaded.
    pub fn set_transform(&mut self, index: usize, transform: glam::Mat4) -> Result<()> {
        let changed = self.scene.set_transform_nodes(index, transform)?;
        let dirty = self.dirty.get_mut().unwrap_or_else(|e| e.into_inner());
        dirty.nodes.extend(changed);
        dirty.instances.push(index as u32);
        Ok(())
    }

    /// Rebuilds the TLAS (see [`InstanceScene::rebuild_tlas`]); it is written to the
    /// GPU before the next trace.
    pub fn rebuild_tlas(&mut self) {
        self.scene.rebuild_tlas();
        self.dirty
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .all_nodes = true;
    }

    /// Writes what changed since the last trace: runs of consecutive TLAS nodes and
    /// instance records.
    fn flush(&self, gpu: &GpuContext) {
        let mut dirty = self.dirty.lock().unwrap_or_else(|e| e.into_inner());
        let nodes = self.scene.tlas_nodes();
        if dirty.all_nodes {
            dirty.nodes = (0..nodes.len() as u32).collect();
        }
        for (first, end) in runs(&mut dirty.nodes) {
            gpu.queue.write_buffer(
                &self.tlas,
                first as u64 * NODE_BYTES,
                bytemuck::cast_slice(&nodes[first as usize..end as usize]),
            );
        }
        for (first, end) in runs(&mut dirty.instances) {
            let records: Vec<PackedInstance> =
                (first..end).map(|i| self.record(i as usize)).collect();
            gpu.queue.write_buffer(
                &self.instances,
                first as u64 * INSTANCE_BYTES,
                bytemuck::cast_slice(&records),
            );
        }
        *dirty = Dirty::default();
    }

    /// [`Error::WrongBackend`] unless the scene was uploaded to `gpu`.
    pub(crate) fn check(&self, gpu: &GpuContext) -> Result<()> {
        if self.context_id != gpu.id {
            return Err(Error::WrongBackend);
        }
        Ok(())
    }

    /// The record the shader reads for instance `index`.
    fn record(&self, index: usize) -> PackedInstance {
        record(&self.scene, &self.offsets, index)
    }
}

/// The record the shader reads for instance `index`, its mesh's BVH at `offsets`.
fn record(scene: &InstanceScene, offsets: &[(u32, u32)], index: usize) -> PackedInstance {
    let placed = &scene.placed()[index];
    let (node_offset, tri_offset) = offsets[placed.instance.mesh];
    let [inv0, inv1, inv2] = placed.placement.inverse_rows;
    PackedInstance {
        inv0,
        inv1,
        inv2,
        node_offset,
        tri_offset,
        node_count: scene.meshes()[placed.instance.mesh].bvh().nodes().len() as u32,
        _pad0: 0,
    }
}

/// Checks that a buffer of `bytes` fits one binding.
fn fits(what: &'static str, bytes: u64, limit: u64) -> Result<()> {
    if bytes > limit {
        return Err(InstanceError::TooLarge { what, bytes, limit }.into());
    }
    Ok(())
}

impl GpuContext {
    /// Uploads an instance scene: every mesh BVH once, the instances and the TLAS.
    /// Fails with [`InstanceError::TooLarge`] when a buffer exceeds one storage
    /// binding.
    pub fn upload_instances(&self, scene: InstanceScene) -> Result<GpuInstanceScene> {
        self.errors.check()?;
        let mut offsets = Vec::with_capacity(scene.meshes().len());
        let (mut node_count, mut tri_count) = (0u64, 0u64);
        for blas in scene.meshes() {
            offsets.push((node_count as u32, tri_count as u32));
            node_count += blas.bvh().nodes().len() as u64;
            tri_count += blas.bvh().triangles().len() as u64;
        }
        let limit = self.max_binding_bytes();
        let tri_bytes = std::mem::size_of::<PackedTriangle>() as u64;
        fits("mesh BVH nodes", node_count * NODE_BYTES, limit)?;
        fits("mesh triangles", tri_count * tri_bytes, limit)?;
        fits("instances", scene.len() as u64 * INSTANCE_BYTES, limit)?;
        fits(
            "TLAS nodes",
            scene.tlas_nodes().len() as u64 * NODE_BYTES,
            limit,
        )?;
        if node_count >= u32::MAX as u64 || tri_count >= u32::MAX as u64 {
            fits("mesh BVH nodes", u64::MAX, limit)?;
        }
        let mut nodes = Vec::with_capacity(node_count as usize);
        let mut triangles = Vec::with_capacity(tri_count as usize);
        for blas in scene.meshes() {
            nodes.extend_from_slice(blas.bvh().nodes());
            triangles.extend_from_slice(blas.bvh().triangles());
        }
        let records: Vec<PackedInstance> = (0..scene.len())
            .map(|i| record(&scene, &offsets, i))
            .collect();
        let (tlas, instances, nodes, triangles) = self.scoped(|| {
            (
                self.instance_storage(
                    "raypick TLAS nodes",
                    bytemuck::cast_slice(scene.tlas_nodes()),
                ),
                self.instance_storage("raypick instances", bytemuck::cast_slice(&records)),
                self.instance_storage("raypick mesh BVH nodes", bytemuck::cast_slice(&nodes)),
                self.instance_storage("raypick mesh triangles", bytemuck::cast_slice(&triangles)),
            )
        })?;
        Ok(GpuInstanceScene {
            scene,
            tlas,
            instances,
            nodes,
            triangles,
            offsets,
            context_id: self.id,
            scratch: Mutex::new(None),
            dirty: Mutex::default(),
        })
    }

    /// Traces `rays` through an uploaded instance scene (blocking); one hit per ray,
    /// bit for bit those of the CPU backend.
    pub fn trace_instances(
        &self,
        scene: &GpuInstanceScene,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<InstanceHit>> {
        scene.check(self)?;
        self.errors.check()?;
        scene.flush(self);
        let sanitized: Vec<Ray> = rays.iter().map(sanitize_ray).collect();
        let mut records = vec![InstanceHitRecord::MISS; rays.len()];
        if !scene.scene.tlas_nodes().is_empty() && !rays.is_empty() {
            let per_dispatch = self
                .max_rays_per_dispatch()
                .min(65_535 * INSTANCE_TRAVERSE_WORKGROUP as usize);
            let mut scratch = scene.scratch.lock().unwrap_or_else(|e| e.into_inner());
            let capacity = rays.len().min(per_dispatch);
            if scratch.as_ref().is_none_or(|s| s.capacity < capacity) {
                *scratch = None; // free the old buffers first
                *scratch = Some(self.scoped(|| Scratch::new(&self.device, capacity))?);
            }
            let scratch = scratch.as_ref().expect("scratch was just created");
            let pipeline = self
                .pipelines
                .instance_traverse(&self.device, options.mode)?;
            for (rays, records) in sanitized
                .chunks(per_dispatch)
                .zip(records.chunks_mut(per_dispatch))
            {
                self.dispatch_instances(pipeline, scene, scratch, rays, options);
                let bytes = rays.len() as u64 * RECORD_BYTES;
                let slice = scratch.staging.slice(..bytes);
                // A failed readback on a lost device is device loss.
                pollster::block_on(map_read(&self.device, slice, Wait::Block))
                    .map_err(|e| self.lost_or(e))?;
                {
                    let view = slice
                        .get_mapped_range()
                        .map_err(|e| self.lost_or(Error::Readback(Box::new(e))))?;
                    records.copy_from_slice(bytemuck::cast_slice(&view));
                }
                scratch.staging.unmap();
            }
        }
        self.errors.check()?;
        let (cull, mode) = (options.cull, options.mode);
        Ok(sanitized
            .par_iter()
            .zip(records.par_iter())
            .map(|(ray, record)| {
                let record = if record.prim == UNFINISHED {
                    instance_traverse::trace_ray(&scene.scene, ray, cull, mode)
                } else {
                    *record
                };
                scene.scene.finish(ray, &record)
            })
            .collect())
    }

    /// One dispatch over `rays` (at most one dispatch's worth), hits copied to the
    /// staging buffer.
    fn dispatch_instances(
        &self,
        pipeline: &wgpu::ComputePipeline,
        scene: &GpuInstanceScene,
        scratch: &Scratch,
        rays: &[Ray],
        options: &TraceOptions,
    ) {
        let params = self.traverse_params(rays.len(), options);
        self.queue
            .write_buffer(&scratch.params, 0, bytemuck::bytes_of(&params));
        self.queue
            .write_buffer(&scratch.rays, 0, bytemuck::cast_slice(rays));
        let layout = pipeline.get_bind_group_layout(0);
        let buffers = [
            &scratch.params,
            &scene.tlas,
            &scene.instances,
            &scene.nodes,
            &scene.triangles,
            &scratch.rays,
            &scratch.hits,
        ];
        let bind_group = self.bind_group(&layout, &buffers);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(
                (rays.len() as u32).div_ceil(INSTANCE_TRAVERSE_WORKGROUP),
                1,
                1,
            );
        }
        let bytes = rays.len() as u64 * RECORD_BYTES;
        encoder.copy_buffer_to_buffer(&scratch.hits, 0, &scratch.staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
    }

    /// A storage buffer holding `contents` (at least 64 bytes: a binding smaller
    /// than one array element is invalid), writable for updates.
    fn instance_storage(&self, label: &str, contents: &[u8]) -> wgpu::Buffer {
        let padding = [0u8; 64];
        let contents = if contents.is_empty() {
            &padding[..]
        } else {
            contents
        };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            })
    }
}
