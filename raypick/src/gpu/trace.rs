//! Tracing ray batches on the GPU: batches are split into dispatches of at most
//! [`GpuContext::max_rays_per_dispatch`] rays, each traced against every chunk of the
//! mesh (triangle ranges for brute force, subtrees for a BVH) with the best hit
//! carried from one dispatch to the next, and read back into the caller's hit slice.
//!
//! The same dispatches answer the other queries (`query` in the parameters): any
//! hit ([`GpuContext::occluded`]) and the sorted list of the nearest hits
//! ([`GpuContext::trace_all`]), whose lists live in a second buffer of `max_hits`
//! slots per ray (batches shrink so that it fits one binding) and carry over
//! between dispatches like the best hit does.

use rayon::prelude::*;

use super::mesh::{BvhBuffers, Content, TriangleChunk};
use super::readback::{Wait, read_mapped};
use super::timing::{HostStage, Laps};
use super::{GpuContext, GpuMesh};
use crate::all_hits::AllHits;
use crate::bvh::Bvh;
use crate::cpu::bvh_traverse;
use crate::cpu::hit_list::HitList;
use crate::error::{Error, Result, check_output_length};
use crate::options::{NodeLayout, TraceOptions};
use crate::prepare::sanitize_ray;
use crate::shaders::{BRUTE_FORCE_WORKGROUP, BVH_TRAVERSE_WORKGROUP, UNFINISHED};
use crate::types::{Hit, LIST_TRUNCATED, MISS, Query, Ray, TraceParams, TraverseParams};

const RAY_BYTES: u64 = std::mem::size_of::<Ray>() as u64;
const HIT_BYTES: u64 = std::mem::size_of::<Hit>() as u64;

/// Where one trace call's answers go, per query.
enum Output<'a> {
    /// The nearest hit per ray.
    Closest(&'a mut [Hit]),
    /// Whether each ray hits anything.
    Any(&'a mut [bool]),
    /// The sorted lists (`max_hits` slots per ray, MISS-filled) and their states.
    All {
        max_hits: usize,
        slots: &'a mut [Hit],
        states: &'a mut [u32],
    },
}

impl Output<'_> {
    fn query(&self) -> Query {
        match self {
            Output::Closest(_) => Query::Closest,
            Output::Any(_) => Query::Any,
            Output::All { .. } => Query::All,
        }
    }

    /// Slots per ray of the list buffer (0: not bound for its content).
    fn max_hits(&self) -> usize {
        match self {
            Output::All { max_hits, .. } => *max_hits,
            _ => 0,
        }
    }
}

pub(crate) fn buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: false,
    })
}

/// Buffers reused across trace calls, sized for `capacity` rays per dispatch, and
/// `list_bytes` of all-hits lists.
#[derive(Debug)]
pub(crate) struct Scratch {
    pub(crate) capacity: usize,
    pub(crate) params: wgpu::Buffer,
    pub(crate) rays: wgpu::Buffer,
    pub(crate) hits: wgpu::Buffer,
    pub(crate) staging: wgpu::Buffer,
    list_bytes: u64,
    pub(crate) list: wgpu::Buffer,
    list_staging: wgpu::Buffer,
    readback: Vec<Hit>,
}

impl Scratch {
    pub(crate) fn new(device: &wgpu::Device, capacity: usize, list_bytes: u64) -> Self {
        let buffer = |label, size, usage| buffer(device, label, size, usage);
        use wgpu::BufferUsages as U;
        let n = capacity as u64;
        // At least one slot: the list is bound (unused) by the other queries too.
        let list_bytes = list_bytes.max(HIT_BYTES);
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
            list_bytes,
            list: buffer("raypick hit lists", list_bytes, U::STORAGE | U::COPY_SRC),
            list_staging: buffer(
                "raypick hit list readback",
                list_bytes,
                U::MAP_READ | U::COPY_DST,
            ),
            readback: Vec::new(),
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
        check_output_length(rays.len(), hits.len())?;
        pollster::block_on(self.trace_with(mesh, rays, options, Output::Closest(hits), Wait::Block))
            .map_err(|e| self.lost_or(e))
    }

    /// Whether each ray hits anything (the same as `trace(..)[i].is_hit()`, found
    /// faster: each ray stops at its first accepted hit), blocking.
    pub fn occluded(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<bool>> {
        let mut occluded = vec![false; rays.len()];
        self.occluded_into(mesh, rays, options, &mut occluded)?;
        Ok(occluded)
    }

    /// [`GpuContext::occluded`] into `occluded` (one slot per ray;
    /// [`Error::OutputLength`] otherwise).
    pub fn occluded_into(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        occluded: &mut [bool],
    ) -> Result<()> {
        check_output_length(rays.len(), occluded.len())?;
        let output = Output::Any(occluded);
        pollster::block_on(self.trace_with(mesh, rays, options, output, Wait::Block))
            .map_err(|e| self.lost_or(e))
    }

    /// The `max_hits` nearest hits of each ray, sorted by `(t, id)` (see
    /// [`AllHits`]), blocking. Batches are split so that `max_hits` slots per ray fit
    /// one storage binding; fails when one ray's do not (or `max_hits` is 0).
    pub fn trace_all(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        max_hits: usize,
        options: &TraceOptions,
    ) -> Result<AllHits> {
        let mut all = AllHits::new(rays.len(), max_hits)?;
        let (slots, states) = all.parts_mut();
        let output = Output::All {
            max_hits,
            slots,
            states,
        };
        pollster::block_on(self.trace_with(mesh, rays, options, output, Wait::Block))
            .map_err(|e| self.lost_or(e))?;
        Ok(all)
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
        self.trace_with(mesh, rays, options, Output::Closest(&mut hits), Wait::Yield)
            .await
            .map_err(|e| self.lost_or(e))?;
        Ok(hits)
    }

    async fn trace_with(
        &self,
        mesh: &GpuMesh,
        rays: &[Ray],
        options: &TraceOptions,
        mut output: Output<'_>,
        wait: Wait,
    ) -> Result<()> {
        if mesh.context_id != self.id {
            return Err(Error::WrongBackend);
        }
        self.errors.check()?;
        let max_hits = output.max_hits() as u64;
        let per_dispatch = if max_hits > 0 {
            let per_binding = self.max_binding_bytes() / (max_hits * HIT_BYTES);
            if per_binding == 0 {
                return Err(Error::GpuLimit(format!(
                    "{max_hits} hits per ray need {} bytes, more than the largest storage \
                     binding ({} bytes)",
                    max_hits * HIT_BYTES,
                    self.max_binding_bytes()
                )));
            }
            self.max_rays_per_dispatch().min(per_binding as usize)
        } else {
            self.max_rays_per_dispatch()
        };
        if rays.is_empty() || mesh.content.is_empty() {
            if let Output::Closest(hits) = output {
                hits.fill(Hit::MISS); // the other outputs start as misses
            }
            return Ok(());
        }
        let capacity = rays.len().min(per_dispatch);
        // Lists of all hits, or the rows of split brute-force dispatches.
        let rows = match (&mesh.content, output.query()) {
            (Content::Brute(_), Query::Closest | Query::Any) => wanted_rows(capacity),
            _ => 1,
        };
        let row_bytes = if rows > 1 {
            (capacity as u64 * rows * HIT_BYTES).min(self.max_binding_bytes())
        } else {
            0
        };
        let list_bytes = (capacity as u64 * max_hits * HIT_BYTES).max(row_bytes);
        let mut scratch = self.scratch.lock().await;
        if scratch
            .as_ref()
            .is_none_or(|s| s.capacity < capacity || s.list_bytes < list_bytes)
        {
            let (old_capacity, old_list) = scratch
                .as_ref()
                .map_or((0, 0), |s| (s.capacity, s.list_bytes));
            *scratch = None; // free the old buffers first
            *scratch = Some(self.scoped(|| {
                Scratch::new(
                    &self.device,
                    capacity.max(old_capacity),
                    list_bytes.max(old_list),
                )
            })?);
        }
        let scratch = scratch.as_mut().expect("scratch was just created");
        let timer = self.timer.as_ref();
        let laps = Laps(timer);
        for (batch, rays) in rays.chunks(per_dispatch).enumerate() {
            let start = batch * per_dispatch;
            let submitting = laps.start();
            laps.begin_batch();
            write_rays(&self.queue, &scratch.rays, rays);
            let query = (output.query(), max_hits as u32);
            self.dispatch(&mesh.content, rays.len(), options, query, scratch)?;
            laps.lap(HostStage::Submit, submitting);
            let waiting = laps.start();
            let bytes = rays.len() as u64 * HIT_BYTES;
            let end = start + rays.len();
            // The nearest hits come back straight into the caller's slice; the other
            // queries' hits are read first, to be turned into their answers.
            let found = match &mut output {
                Output::Closest(hits) => &mut hits[start..end],
                _ => {
                    scratch.readback.resize(rays.len(), Hit::MISS);
                    &mut scratch.readback[..]
                }
            };
            read_back(&self.device, &scratch.staging, bytes, found, wait).await?;
            if let Some(timer) = timer {
                timer.collect(&self.device, wait).await?;
            }
            laps.lap(HostStage::Wait, waiting);
            let finishing = laps.start();
            let copy = mesh.gathered.as_ref().map(|g| g.copy.as_ref());
            let read = match &output {
                Output::Closest(hits) => &hits[start..end],
                _ => &scratch.readback[..],
            };
            let tree = self.finishing(&mesh.content, copy, read)?;
            let cpu = tree.as_deref();
            // A ray left unfinished was a valid one, so the caller's ray is the one the
            // GPU traced.
            let found = &scratch.readback[..];
            match &mut output {
                Output::Closest(hits) => {
                    if let Some(bvh) = cpu {
                        finish_on_cpu(bvh, rays, &mut hits[start..end], options);
                    }
                }
                Output::Any(occluded) => {
                    finish_any(cpu, rays, found, &mut occluded[start..end], options)
                }
                Output::All { slots, states, .. } => {
                    let k = max_hits as usize;
                    let slots = &mut slots[start * k..end * k];
                    read_back(
                        &self.device,
                        &scratch.list_staging,
                        bytes * max_hits,
                        slots,
                        wait,
                    )
                    .await?;
                    finish_all(cpu, rays, found, slots, &mut states[start..end], options);
                }
            }
            laps.lap(HostStage::Finish, finishing);
        }
        self.errors.check()
    }

    /// The dispatches of `query` (and `max_hits`) for `content` over the ray batch in
    /// `scratch` (brute force, BVH or ray queries), submitted, not waited for.
    pub(crate) fn dispatch(
        &self,
        content: &Content,
        ray_count: usize,
        options: &TraceOptions,
        query: (Query, u32),
        scratch: &Scratch,
    ) -> Result<()> {
        match content {
            Content::Brute(chunks) => {
                self.dispatch_brute_force(chunks, ray_count, options, query, scratch)
            }
            Content::Bvh { chunks, layout, .. } => {
                self.dispatch_bvh(chunks, *layout, ray_count, options, query, scratch)
            }
            Content::RayQuery(mesh) => {
                self.dispatch_ray_query(mesh, ray_count, options, query, scratch)
            }
        }
    }

    /// The BVH that finishes on the CPU the rays of a batch the GPU left
    /// [`UNFINISHED`] (`found` its answers), if the mesh has one: the BVH's host
    /// copy (read back after a refit on the GPU, `copy`), or a ray-query mesh's BVH,
    /// built only when some ray needs it. Brute force leaves no ray unfinished.
    pub(crate) fn finishing(
        &self,
        content: &Content,
        copy: Option<&super::CpuCopy>,
        found: &[Hit],
    ) -> Result<Option<std::sync::Arc<Bvh>>> {
        Ok(match content {
            Content::Bvh { cpu, chunks, .. } => {
                Some(self.finishing_tree(cpu, chunks, copy, found)?)
            }
            Content::RayQuery(mesh) => found
                .iter()
                .any(|h| h.prim == UNFINISHED)
                .then(|| mesh.bvh()),
            Content::Brute(_) => None,
        })
    }

    /// Brute force over the ray batch in `scratch`: one dispatch per range of at
    /// most `max_triangles_per_dispatch` triangles, in id order. A batch too small
    /// to fill the device ([`split_rows`]) has each dispatch's triangles split
    /// across rows of workgroups, and the rows merged after it
    /// (`shaders/brute_force.wgsl`).
    ///
    /// `query` is the dispatch's `(query, max_hits)`. A list query can move up to
    /// `max_hits - 1` listed hits per triangle, each a loop iteration, so it gets
    /// `max_hits + 1` times fewer triangles per dispatch, and is never split.
    pub(crate) fn dispatch_brute_force(
        &self,
        chunks: &[TriangleChunk],
        ray_count: usize,
        options: &TraceOptions,
        (query, max_hits): (Query, u32),
        scratch: &Scratch,
    ) -> Result<()> {
        let step = if query == Query::All {
            (self.max_triangles_per_dispatch() / max_hits.saturating_add(1)).max(1)
        } else {
            self.max_triangles_per_dispatch()
        };
        let pipeline = self
            .pipelines
            .brute_force(&self.device, query, options.mode)?;
        let layout = pipeline.get_bind_group_layout(0);
        let rows = match query {
            Query::All => 1,
            _ => split_rows(ray_count, scratch.list_bytes),
        };
        let merge = if rows > 1 {
            let merge = self
                .pipelines
                .brute_force_merge(&self.device, query, options.mode)?;
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("raypick brute-force merge"),
                layout: &merge.get_bind_group_layout(0),
                entries: &[(0, &scratch.params), (3, &scratch.hits), (4, &scratch.list)].map(
                    |(binding, buffer)| wgpu::BindGroupEntry {
                        binding,
                        resource: buffer.as_entire_binding(),
                    },
                ),
            });
            Some((merge, bind_group))
        } else {
            None
        };
        let base = TraceParams {
            ray_count: ray_count as u32,
            cull: options.cull as u32,
            miss_t: f32::INFINITY,
            one: 1.0,
            mode: options.mode as u32,
            max_hits,
            ..Default::default()
        };
        let mut passes: Vec<Pass> = Vec::new();
        for chunk in chunks {
            let bind_group = self.bind_group(
                &layout,
                &[
                    &scratch.params,
                    &chunk.buffer,
                    &scratch.rays,
                    &scratch.hits,
                    &scratch.list,
                ],
            );
            // Rows of at least MIN_ROW_TRIANGLES, each within a dispatch's limit.
            let row = chunk.count.div_ceil(rows).max(MIN_ROW_TRIANGLES).min(step);
            let chunk_rows = rows.min(chunk.count.div_ceil(row));
            let per_pass = if chunk_rows > 1 {
                row * chunk_rows
            } else {
                step
            };
            for tri_first in (0..chunk.count).step_by(per_pass as usize) {
                let tri_count = per_pass.min(chunk.count - tri_first);
                let params = TraceParams {
                    tri_count,
                    tri_base: chunk.base + tri_first,
                    tri_first,
                    accumulate: u32::from(!passes.is_empty()),
                    ..base
                };
                match (&merge, chunk_rows > 1) {
                    (Some((merge, merge_group)), true) => {
                        let split = TraceParams {
                            chunk_size: row,
                            ..params
                        };
                        let rows = tri_count.div_ceil(row);
                        passes.push(Pass::new(pipeline, &split, bind_group.clone(), rows));
                        passes.push(Pass::new(merge, &split, merge_group.clone(), 1));
                    }
                    _ => passes.push(Pass::new(pipeline, &params, bind_group.clone(), 1)),
                }
            }
        }
        self.submit_passes(
            passes,
            BRUTE_FORCE_WORKGROUP,
            (ray_count, query, max_hits),
            scratch,
        );
        Ok(())
    }

    /// BVH traversal (nodes in `layout`) over the ray batch in `scratch`: one
    /// dispatch per BVH chunk.
    pub(crate) fn dispatch_bvh(
        &self,
        chunks: &[BvhBuffers],
        layout: NodeLayout,
        ray_count: usize,
        options: &TraceOptions,
        (query, max_hits): (Query, u32),
        scratch: &Scratch,
    ) -> Result<()> {
        let pipeline = self
            .pipelines
            .bvh_traverse(&self.device, layout, query, options.mode)?;
        let layout = pipeline.get_bind_group_layout(0);
        let params = TraverseParams {
            max_hits,
            ..self.traverse_params(ray_count, options)
        };
        let bind_groups = chunks.iter().map(|chunk| {
            self.bind_group(
                &layout,
                &[
                    &scratch.params,
                    &chunk.nodes,
                    &chunk.triangles,
                    &scratch.rays,
                    &scratch.hits,
                    &scratch.list,
                ],
            )
        });
        self.submit_passes(
            chunk_passes(pipeline, params, bind_groups),
            BVH_TRAVERSE_WORKGROUP,
            (ray_count, query, max_hits),
            scratch,
        );
        Ok(())
    }

    /// The parameters of a traversal dispatch (BVH or instances) of `ray_count` rays
    /// that starts from misses and keeps the nearest hit.
    pub(crate) fn traverse_params(
        &self,
        ray_count: usize,
        options: &TraceOptions,
    ) -> TraverseParams {
        TraverseParams {
            ray_count: ray_count as u32,
            cull: options.cull as u32,
            miss_t: f32::INFINITY,
            one: 1.0,
            max_steps: self.max_traversal_steps(),
            far_limit: f32::INFINITY,
            max_stack: self.max_traversal_stack(),
            ..Default::default()
        }
    }

    /// A bind group of `buffers`, whole, at bindings 0, 1, … of `layout`.
    pub(crate) fn bind_group(
        &self,
        layout: &wgpu::BindGroupLayout,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        self.bind_resources(layout, buffers.iter().map(|b| b.as_entire_binding()))
    }

    /// A bind group of `resources` at bindings 0, 1, … of `layout`.
    pub(crate) fn bind_resources<'a>(
        &self,
        layout: &wgpu::BindGroupLayout,
        resources: impl IntoIterator<Item = wgpu::BindingResource<'a>>,
    ) -> wgpu::BindGroup {
        let entries: Vec<_> = resources
            .into_iter()
            .enumerate()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource,
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raypick"),
            layout,
            entries: &entries,
        })
    }

    /// Submits each pass in order, in a submission of its own so that its parameter
    /// write lands between it and the previous one: `ray_count` invocations
    /// (workgroups of `workgroup_size`) times its rows. The last also copies the
    /// hits (and for [`Query::All`] the lists of `max_hits` slots) to the staging
    /// buffers.
    pub(crate) fn submit_passes(
        &self,
        passes: Vec<Pass>,
        workgroup_size: u32,
        (ray_count, query, max_hits): (usize, Query, u32),
        scratch: &Scratch,
    ) {
        let workgroups = (ray_count as u32).div_ceil(workgroup_size);
        let max_hits = (query == Query::All).then_some(max_hits);
        let last = passes.len().saturating_sub(1);
        for (index, pass) in passes.into_iter().enumerate() {
            self.queue.write_buffer(&scratch.params, 0, &pass.params);
            let mut encoder = self.device.create_command_encoder(&Default::default());
            {
                let mut compute = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("raypick trace"),
                    timestamp_writes: self.timer.as_ref().and_then(|t| t.pass_writes()),
                });
                compute.set_pipeline(pass.pipeline);
                compute.set_bind_group(0, &pass.bind_group, &[]);
                compute.dispatch_workgroups(workgroups, pass.rows, 1);
            }
            if index == last {
                if let Some(timer) = &self.timer {
                    timer.resolve(&mut encoder);
                }
                let bytes = ray_count as u64 * HIT_BYTES;
                encoder.copy_buffer_to_buffer(&scratch.hits, 0, &scratch.staging, 0, bytes);
                if let Some(k) = max_hits {
                    let list = bytes * k as u64;
                    encoder.copy_buffer_to_buffer(&scratch.list, 0, &scratch.list_staging, 0, list);
                }
            }
            self.queue.submit([encoder.finish()]);
        }
    }
}

/// One compute pass of a ray batch: its pipeline, parameters, bind group, and rows
/// of workgroups (1, or the rows of a split brute-force dispatch).
pub(crate) struct Pass<'a> {
    pipeline: &'a wgpu::ComputePipeline,
    params: Vec<u8>,
    bind_group: wgpu::BindGroup,
    rows: u32,
}

impl<'a> Pass<'a> {
    /// A pass of `pipeline` with the parameter block `params`.
    fn new(
        pipeline: &'a wgpu::ComputePipeline,
        params: &impl bytemuck::Pod,
        bind_group: wgpu::BindGroup,
        rows: u32,
    ) -> Self {
        Self {
            pipeline,
            params: bytemuck::bytes_of(params).to_vec(),
            bind_group,
            rows,
        }
    }
}

/// The passes of `pipeline` over a mesh split into chunks: one per bind group,
/// with `params`, accumulating into the hits of the chunks before it.
pub(crate) fn chunk_passes<'a>(
    pipeline: &'a wgpu::ComputePipeline,
    params: TraverseParams,
    bind_groups: impl Iterator<Item = wgpu::BindGroup>,
) -> Vec<Pass<'a>> {
    bind_groups
        .enumerate()
        .map(|(index, bind_group)| {
            let params = TraverseParams {
                accumulate: u32::from(index > 0),
                ..params
            };
            Pass::new(pipeline, &params, bind_group, 1)
        })
        .collect()
}

/// Workgroups a brute-force dispatch should have to keep a large GPU busy: below
/// that, a batch's triangles are split across rows of workgroups.
const FILL_WORKGROUPS: u32 = 4096;

/// Fewest triangles in a row of a split brute-force dispatch: enough that the
/// merge, which reads one hit per row and ray, stays small next to the tests.
const MIN_ROW_TRIANGLES: u32 = 2048;

/// Rows of workgroups that bring a brute-force dispatch over `ray_count` rays to
/// [`FILL_WORKGROUPS`] (1: enough rays, no split).
fn wanted_rows(ray_count: usize) -> u64 {
    let groups = (ray_count as u64)
        .div_ceil(u64::from(BRUTE_FORCE_WORKGROUP))
        .max(1);
    u64::from(FILL_WORKGROUPS).div_ceil(groups)
}

/// Rows of workgroups a brute-force dispatch over `ray_count` rays splits its
/// triangles into (1: not split): [`wanted_rows`], as many as the list buffer
/// (`list_bytes`) holds a hit per row and ray for, and at most a dispatch's limit
/// on workgroups per dimension.
fn split_rows(ray_count: usize, list_bytes: u64) -> u32 {
    let room = list_bytes / (ray_count.max(1) as u64 * HIT_BYTES);
    wanted_rows(ray_count).min(room).clamp(1, 65_535) as u32
}

/// Rays one task writes or reads back ([`write_rays`], [`read_back`]).
const RAYS_PER_TASK: usize = 8192;

/// A disjoint part of a staging view, written by one task of [`write_rays`].
struct Piece<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<[u8]>` is an exclusive, write-only reference to bytes, like
// `&mut [u8]`, which may be sent to another thread; wgpu implements `Send` for sized
// targets only. The pieces come from `split_at` (disjoint), and the view they borrow
// outlives the parallel loop that writes them.
unsafe impl Send for Piece<'_> {}

/// Writes `rays` at the start of `buffer`, invalid ones replaced by a ray that hits
/// nothing ([`sanitize_ray`]), straight into the queue's staging memory and on every
/// thread: no copy of the batch is made on the host first. A write the queue refuses
/// is reported through the device's error handler, as `write_buffer`'s is.
pub(crate) fn write_rays(queue: &wgpu::Queue, buffer: &wgpu::Buffer, rays: &[Ray]) {
    const BYTES: usize = RAY_BYTES as usize;
    let Some(size) = wgpu::BufferSize::new(std::mem::size_of_val(rays) as u64) else {
        return;
    };
    let Some(mut view) = queue.write_buffer_with(buffer, 0, size) else {
        return;
    };
    let mut rest = view.slice(..);
    let mut pieces = Vec::with_capacity(rays.len().div_ceil(RAYS_PER_TASK));
    while !rest.is_empty() {
        let mid = rest.len().min(RAYS_PER_TASK * BYTES);
        let (piece, tail) = rest.split_at(mid);
        pieces.push(Piece(piece));
        rest = tail;
    }
    pieces
        .into_par_iter()
        .zip(rays.par_chunks(RAYS_PER_TASK))
        .for_each(|(Piece(piece), rays)| {
            let (slots, _) = piece.into_chunks::<BYTES>();
            slots.write_iter(
                rays.iter()
                    .map(|ray| bytemuck::cast::<Ray, [u8; BYTES]>(sanitize_ray(ray))),
            );
        });
}

/// Copies the first `bytes` of a staging buffer into `out` once the GPU is done, on
/// every thread.
async fn read_back(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: u64,
    out: &mut [Hit],
    wait: Wait,
) -> Result<()> {
    read_mapped(device, staging, bytes, wait, |found: &[Hit]| {
        out.par_chunks_mut(RAYS_PER_TASK)
            .zip(found.par_chunks(RAYS_PER_TASK))
            .for_each(|(out, found)| out.copy_from_slice(found));
    })
    .await
}

/// Any-hit answers from the GPU's hits; rays left to the CPU ([`UNFINISHED`]: out of
/// loop steps, or too far for ray queries) are completed there by the BVH traversal.
fn finish_any(
    bvh: Option<&Bvh>,
    rays: &[Ray],
    found: &[Hit],
    occluded: &mut [bool],
    options: &TraceOptions,
) {
    let (cull, mode) = (options.cull, options.mode);
    occluded
        .par_iter_mut()
        .zip(found)
        .zip(rays)
        .for_each(|((out, hit), ray)| {
            *out = match (hit.prim, bvh) {
                (UNFINISHED, Some(bvh)) => bvh_traverse::occluded_ray(bvh, ray, cull, mode),
                (prim, _) => prim != MISS,
            }
        });
}

/// All-hits lists from the GPU: each ray's state comes in its hit's `prim`; slots
/// past the listed hits are reset to misses, and rays left to the CPU
/// ([`UNFINISHED`]) are listed again there by the BVH traversal.
fn finish_all(
    bvh: Option<&Bvh>,
    rays: &[Ray],
    found: &[Hit],
    slots: &mut [Hit],
    states: &mut [u32],
    options: &TraceOptions,
) {
    let (cull, mode) = (options.cull, options.mode);
    let k = slots.len() / rays.len().max(1);
    slots
        .par_chunks_mut(k)
        .zip(states)
        .zip(found)
        .zip(rays)
        .for_each(|(((slots, state), hit), ray)| match (hit.prim, bvh) {
            (UNFINISHED, Some(bvh)) => {
                slots.fill(Hit::MISS);
                let mut list = HitList::new(slots, 0);
                bvh_traverse::collect_ray(bvh, ray, cull, mode, &mut list);
                *state = list.state();
            }
            (listed, _) => {
                let count = (listed & !LIST_TRUNCATED) as usize;
                slots[count.min(k)..].fill(Hit::MISS);
                *state = listed;
            }
        });
}

/// Completes on the CPU the rays the GPU reported as [`UNFINISHED`] (out of loop
/// steps, or too far for ray queries), with the BVH traversal.
pub(crate) fn finish_on_cpu(bvh: &Bvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) {
    let (cull, mode) = (options.cull, options.mode);
    hits.par_iter_mut()
        .zip(rays)
        .filter(|(hit, _)| hit.prim == UNFINISHED)
        .for_each(|(hit, ray)| *hit = bvh_traverse::trace_ray(bvh, ray, cull, mode));
}
