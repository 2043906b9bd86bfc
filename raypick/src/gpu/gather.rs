//! Meshes read straight from a renderer's GPU buffers (see [`crate::gather`]).
//!
//! The renderer's vertex and index buffers are bound as read-only storage buffers
//! and `shaders/gather.wgsl` writes the packed triangles the kernels read, so
//! brute force runs on them with no CPU round trip. A BVH is built on the CPU: its
//! creation reads the gathered triangles back once (blocking, `48 bytes × triangles`).
//! After that, [`GpuContext::refit_gathered`] follows vertex motion on the GPU
//! alone: the triangles are gathered again in leaf order and the node boxes are
//! refitted one tree level per dispatch, deepest first (levels are listed at
//! creation), with no readback. What the buffers need: see [`MeshBuffers`].
//!
//! The gather runs when it is submitted, so the buffers' contents at that point of
//! the queue are what is read: write new positions, then refit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use super::GpuContext;
use super::mesh::{BvhBuffers, Content, GpuMesh, TriangleChunk};
use super::readback::{Wait, read_mapped};
use crate::bvh::Bvh;
use crate::error::{Error, Result};
use crate::gather::{MeshLayout, mesh_from_packed};
use crate::options::{Accel, NodeLayout};
use crate::shaders::{GATHER_WORKGROUP, REFIT_WORKGROUP};
use crate::types::{BvhNode, PackedTriangle, RefitParams};

/// A renderer's vertex and index buffers and where the mesh is in them.
///
/// # Requirements on the buffers
/// - Both buffers need [`wgpu::BufferUsages::STORAGE`] (add it where the renderer
///   creates them, next to `VERTEX` / `INDEX`); without it
///   [`Error::MissingStorageUsage`] names the buffer.
/// - Each must fit one storage binding
///   ([`GpuContext::max_binding_bytes`]), and the mesh's packed triangles must too
///   (no splitting for gathered meshes).
/// - The layout must be inside the buffers ([`MeshLayout::check`]).
///
/// The gather runs when it is submitted, so the buffers' contents at that point of
/// the queue are what is read: write new positions, then refit.
#[derive(Clone, Copy, Debug)]
pub struct MeshBuffers<'a> {
    /// Vertex buffer (needs `STORAGE` usage).
    pub vertices: &'a wgpu::Buffer,
    /// Index buffer (needs `STORAGE` usage).
    pub indices: &'a wgpu::Buffer,
    /// Positions, indices and base vertex.
    pub layout: MeshLayout,
}

/// What a gathered mesh keeps for GPU refits.
#[derive(Debug)]
pub(crate) struct Gathered {
    /// The gather pass that fills the mesh's triangle buffer, and its output slots
    /// (`None` for an empty mesh).
    gather: Option<(wgpu::BindGroup, u32)>,
    /// One refit pass per tree level, deepest first, with its node count.
    levels: Vec<(wgpu::BindGroup, u32)>,
    /// The CPU copy's state after GPU refits.
    pub(crate) copy: Arc<CpuCopy>,
}

/// The CPU copy of a gathered BVH finishes the rays that run out of GPU traversal
/// steps. A GPU refit leaves it behind (no readback); it is read back from the GPU
/// only when such a ray turns up after a refit, once per refit.
#[derive(Debug, Default)]
pub(crate) struct CpuCopy {
    /// Set by a GPU refit: the copy made at creation is out of date.
    stale: AtomicBool,
    /// The copy read back since the last refit.
    fresh: Mutex<Option<Arc<Bvh>>>,
}

impl CpuCopy {
    fn mark_stale(&self) {
        *self.fresh.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.stale.store(true, Ordering::Release);
    }
}

const TRIANGLE_BYTES: u64 = std::mem::size_of::<PackedTriangle>() as u64;

impl GpuContext {
    /// A mesh from a renderer's vertex and index buffers (see the
    /// [`MeshBuffers`] for the requirements), for brute force or a BVH;
    /// [`Accel::RayQuery`] is [`Error::Unsupported`] here (upload the mesh itself
    /// for ray queries).
    ///
    /// Brute force never copies the mesh to the CPU. A BVH reads the gathered
    /// triangles back once to build the tree on the CPU (blocking). Refit it after
    /// the vertices move with [`GpuContext::refit_gathered`].
    ///
    /// The mesh lives in the renderer's buffers, so its host copy
    /// ([`GpuMesh::to_cpu_mesh`], what a picker falling back to the CPU after a
    /// device loss traces) is the BVH as created, and empty for brute force.
    pub fn upload_buffers(&self, buffers: &MeshBuffers, accel: Accel) -> Result<GpuMesh> {
        if accel == Accel::RayQuery {
            return Err(Error::Unsupported(
                "a mesh read from a renderer's buffers is traced with Accel::Bvh or Accel::Brute, \
                 not Accel::RayQuery"
                    .into(),
            ));
        }
        self.errors.check()?;
        for (buffer, name) in [(buffers.vertices, "vertex"), (buffers.indices, "index")] {
            if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
                return Err(Error::MissingStorageUsage(name));
            }
            if buffer.size() > self.max_binding_bytes() {
                return Err(Error::GpuLimit(format!(
                    "the {name} buffer ({} bytes) is larger than one storage binding ({} bytes)",
                    buffer.size(),
                    self.max_binding_bytes()
                )));
            }
        }
        let layout = &buffers.layout;
        layout.check(buffers.vertices.size(), buffers.indices.size())?;
        let n = layout.triangle_count();
        if n > self.triangles_per_chunk() {
            return Err(Error::GpuLimit(format!(
                "{n} triangles gathered from GPU buffers do not fit one storage binding \
                 (at most {})",
                self.triangles_per_chunk()
            )));
        }
        let n = n as u32;
        let out = self.scoped(|| self.triangle_buffer(n))?;
        let gather = (n > 0).then(|| (self.gather_group(buffers, &out, None, n), n));
        self.submit_gather(gather.as_ref());
        match accel {
            Accel::Brute => Ok(GpuMesh {
                content: Content::Brute(
                    (n > 0)
                        .then(|| TriangleChunk {
                            buffer: out,
                            base: 0,
                            count: n,
                        })
                        .into_iter()
                        .collect(),
                ),
                context_id: self.id,
                triangle_count: n as usize,
                host_triangles: None,
                gathered: Some(Box::new(Gathered {
                    gather,
                    levels: Vec::new(),
                    copy: Arc::default(),
                })),
            }),
            // (RayQuery was refused above.)
            Accel::Bvh | Accel::RayQuery => {
                let packed = self.read_triangles(&out, n)?;
                drop(out);
                self.upload_gathered_bvh(buffers, Bvh::build(&mesh_from_packed(&packed)))
            }
        }
    }

    /// Uploads a BVH built from gathered triangles: its triangles are gathered
    /// again on the GPU in leaf order, and the refit passes are prepared.
    fn upload_gathered_bvh(&self, buffers: &MeshBuffers, bvh: Bvh) -> Result<GpuMesh> {
        if self.split_bvh(&bvh).len() > 1 {
            return Err(Error::GpuLimit(
                "the BVH of a mesh gathered from GPU buffers must fit one storage binding".into(),
            ));
        }
        let slots = bvh.triangles().len() as u32;
        let ids: Vec<u32> = bvh.triangles().iter().map(|t| t.id).collect();
        let (nodes, triangles, gather, levels) = self.scoped(|| {
            let nodes = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("raypick gathered bvh nodes"),
                    contents: bytemuck::cast_slice(bvh.nodes()),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                });
            let triangles = self.triangle_buffer(slots);
            let gather = (slots > 0).then(|| {
                let order = self.u32_storage("raypick leaf order", &ids);
                (
                    self.gather_group(buffers, &triangles, Some(&order), slots),
                    slots,
                )
            });
            let levels = self.refit_levels(bvh.nodes(), &nodes, &triangles);
            (nodes, triangles, gather, levels)
        })?;
        self.submit_gather(gather.as_ref());
        Ok(GpuMesh {
            content: Content::Bvh {
                chunks: vec![BvhBuffers { nodes, triangles }],
                cpu: Arc::new(bvh),
                // What refit.wgsl refits in place.
                layout: NodeLayout::Binary,
            },
            context_id: self.id,
            triangle_count: buffers.layout.triangle_count(),
            host_triangles: None,
            gathered: Some(Box::new(Gathered {
                gather,
                levels,
                copy: Arc::default(),
            })),
        })
    }

    /// Follows the vertices of a mesh made by [`GpuContext::upload_buffers`] on the
    /// GPU, with no readback: the triangles are gathered again from the same
    /// buffers (their contents when this is submitted) and, for a BVH, every box is
    /// refitted bottom-up, one level per dispatch. The tree keeps its shape (see
    /// [`Picker::refit`](crate::Picker::refit)); a triangle that was degenerate at creation has no
    /// leaf and stays out of a BVH until it is made again.
    ///
    /// The CPU copy of the tree, used only to finish rays that exceed the GPU's
    /// traversal step budget ([`GpuContext::max_traversal_steps`]; real meshes need
    /// far fewer steps), is not updated: if such a ray turns up after a refit, the
    /// refitted tree is read back once (blocking) before it is finished.
    pub fn refit_gathered(&self, mesh: &mut GpuMesh) -> Result<()> {
        if mesh.context_id != self.id {
            return Err(Error::WrongBackend);
        }
        let gathered = mesh.gathered.as_ref().ok_or_else(|| {
            Error::Unsupported(
                "refit_gathered needs a mesh made by upload_buffers; use refit".into(),
            )
        })?;
        self.errors.check()?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        if let Some((group, slots)) = &gathered.gather {
            self.encode(
                &mut encoder,
                &self.pipelines.gather,
                group,
                *slots,
                GATHER_WORKGROUP,
            );
        }
        for (group, count) in &gathered.levels {
            self.encode(
                &mut encoder,
                &self.pipelines.refit,
                group,
                *count,
                REFIT_WORKGROUP,
            );
        }
        self.queue.submit([encoder.finish()]);
        gathered.copy.mark_stale();
        self.errors.check()
    }

    /// The tree that finishes unfinished rays: the CPU copy, or, when a GPU refit
    /// made it stale and some ray is unfinished, the refitted tree read back.
    pub(crate) fn finishing_tree(
        &self,
        cpu: &Arc<Bvh>,
        chunks: &[BvhBuffers],
        copy: Option<&CpuCopy>,
        hits: &[crate::Hit],
    ) -> Result<Arc<Bvh>> {
        let Some(copy) = copy.filter(|c| c.stale.load(Ordering::Acquire)) else {
            return Ok(cpu.clone());
        };
        if !hits.iter().any(|h| h.prim == crate::shaders::UNFINISHED) {
            return Ok(cpu.clone());
        }
        let mut fresh = copy.fresh.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tree) = &*fresh {
            return Ok(tree.clone());
        }
        let [chunk] = chunks else {
            return Err(Error::Unsupported("a gathered BVH is one chunk".into()));
        };
        let tree = Arc::new(Bvh {
            nodes: self.read_buffer(&chunk.nodes)?,
            triangles: self.read_triangles(&chunk.triangles, cpu.triangles.len() as u32)?,
            depth: cpu.depth,
            mesh_triangles: cpu.mesh_triangles,
        });
        *fresh = Some(tree.clone());
        Ok(tree)
    }

    /// Reads a mesh's packed triangles back (blocking): id order for brute force,
    /// leaf order for a BVH. For checks and debugging.
    pub fn read_packed(&self, mesh: &GpuMesh) -> Result<Vec<PackedTriangle>> {
        let mut out = Vec::new();
        match &mesh.content {
            Content::Brute(chunks) => {
                for chunk in chunks {
                    out.extend(self.read_triangles(&chunk.buffer, chunk.count)?);
                }
            }
            Content::Bvh { chunks, .. } => {
                for chunk in chunks {
                    let count = chunk.triangles.size() / TRIANGLE_BYTES;
                    out.extend(self.read_triangles(&chunk.triangles, count as u32)?);
                }
            }
            Content::RayQuery(mesh) => {
                for chunk in &mesh.chunks {
                    let count = chunk.triangles.size() / TRIANGLE_BYTES;
                    out.extend(self.read_triangles(&chunk.triangles, count as u32)?);
                }
            }
        }
        Ok(out)
    }

    /// Reads a mesh's binary BVH nodes back (blocking); empty for brute force, and
    /// [`Error::Unsupported`] for a mesh of eight-wide nodes.
    pub fn read_nodes(&self, mesh: &GpuMesh) -> Result<Vec<BvhNode>> {
        let mut out = Vec::new();
        if let Content::Bvh { chunks, layout, .. } = &mesh.content {
            if *layout != NodeLayout::Binary {
                return Err(Error::Unsupported(format!(
                    "read_nodes reads binary nodes; this mesh has {layout} ones"
                )));
            }
            for chunk in chunks {
                out.extend(self.read_buffer::<BvhNode>(&chunk.nodes)?);
            }
        }
        Ok(out)
    }

    fn read_triangles(&self, buffer: &wgpu::Buffer, count: u32) -> Result<Vec<PackedTriangle>> {
        let mut all = self.read_buffer::<PackedTriangle>(buffer)?;
        all.truncate(count as usize);
        Ok(all)
    }

    /// Copies a whole buffer (with `COPY_SRC`) to the CPU, blocking.
    fn read_buffer<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer) -> Result<Vec<T>> {
        let size = buffer.size();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("raypick readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let data = pollster::block_on(read_mapped(
            &self.device,
            &staging,
            size,
            Wait::Block,
            // Collected, not cast: the mapping may be less aligned than `T`.
            bytemuck::pod_collect_to_vec::<u8, T>,
        ))?;
        self.errors.check()?;
        Ok(data)
    }

    /// A storage buffer for `count` packed triangles (at least one).
    fn triangle_buffer(&self, count: u32) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("raypick gathered triangles"),
            size: count.max(1) as u64 * TRIANGLE_BYTES,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// A read-only storage buffer of words (at least one).
    fn u32_storage(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let contents: &[u32] = if words.is_empty() { &[0] } else { words };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(contents),
                usage: wgpu::BufferUsages::STORAGE,
            })
    }

    /// The bind group of a gather into `out` (`slots` triangles, in `order` if given).
    fn gather_group(
        &self,
        buffers: &MeshBuffers,
        out: &wgpu::Buffer,
        order: Option<&wgpu::Buffer>,
        slots: u32,
    ) -> wgpu::BindGroup {
        let params = buffers.layout.params(slots, order.is_some());
        let params = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("raypick gather params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let dummy;
        let order = match order {
            Some(order) => order,
            None => {
                dummy = self.u32_storage("raypick no order", &[]);
                &dummy
            }
        };
        // Storage bindings are whole words; a trailing partial word is not read.
        fn words(buffer: &wgpu::Buffer) -> wgpu::BufferBinding<'_> {
            wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: std::num::NonZeroU64::new(buffer.size() & !3),
            }
        }
        let entries = [
            params.as_entire_binding(),
            wgpu::BindingResource::Buffer(words(buffers.vertices)),
            wgpu::BindingResource::Buffer(words(buffers.indices)),
            order.as_entire_binding(),
            out.as_entire_binding(),
        ];
        self.group(&self.pipelines.gather, &entries)
    }

    /// One refit pass per tree level, deepest first.
    fn refit_levels(
        &self,
        tree: &[BvhNode],
        nodes: &wgpu::Buffer,
        triangles: &wgpu::Buffer,
    ) -> Vec<(wgpu::BindGroup, u32)> {
        let levels = node_levels(tree);
        let list: Vec<u32> = levels.iter().rev().flatten().copied().collect();
        let list_buffer = self.u32_storage("raypick refit levels", &list);
        let mut first = 0u32;
        levels
            .iter()
            .rev()
            .map(|level| {
                let params = RefitParams {
                    first,
                    count: level.len() as u32,
                    ..Default::default()
                };
                first += level.len() as u32;
                let params = self
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("raypick refit params"),
                        contents: bytemuck::bytes_of(&params),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                let entries = [
                    params.as_entire_binding(),
                    list_buffer.as_entire_binding(),
                    triangles.as_entire_binding(),
                    nodes.as_entire_binding(),
                ];
                (
                    self.group(&self.pipelines.refit, &entries),
                    level.len() as u32,
                )
            })
            .collect()
    }

    fn group(
        &self,
        pipeline: &wgpu::ComputePipeline,
        resources: &[wgpu::BindingResource],
    ) -> wgpu::BindGroup {
        let entries: Vec<_> = resources
            .iter()
            .enumerate()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: resource.clone(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raypick gather"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    fn submit_gather(&self, gather: Option<&(wgpu::BindGroup, u32)>) {
        if let Some((group, slots)) = gather {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            self.encode(
                &mut encoder,
                &self.pipelines.gather,
                group,
                *slots,
                GATHER_WORKGROUP,
            );
            self.queue.submit([encoder.finish()]);
        }
    }

    /// One compute pass of `items` invocations (workgroups spread over x and y).
    fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        group: &wgpu::BindGroup,
        items: u32,
        workgroup: u32,
    ) {
        let groups = items.div_ceil(workgroup);
        let max = self
            .device
            .limits()
            .max_compute_workgroups_per_dimension
            .max(1);
        let (x, y) = (groups.min(max), groups.div_ceil(max));
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }
}

/// The interior nodes of a depth-first tree by depth (root first); children follow
/// their parents, so one forward sweep gives every node its depth.
pub(crate) fn node_levels(nodes: &[BvhNode]) -> Vec<Vec<u32>> {
    let mut depth = vec![0usize; nodes.len()];
    let mut levels: Vec<Vec<u32>> = Vec::new();
    for i in 0..nodes.len() {
        if levels.len() <= depth[i] {
            levels.resize(depth[i] + 1, Vec::new());
        }
        levels[depth[i]].push(i as u32);
        for child in &nodes[i].children {
            if !child.is_leaf() && !child.is_empty() {
                depth[child.index as usize] = depth[i] + 1;
            }
        }
    }
    levels
}
