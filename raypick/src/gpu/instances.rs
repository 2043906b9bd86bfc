//! Instance scenes on the GPU, in one of two forms:
//!
//! - **raypick's BVHs** ([`Accel::Bvh`]): every mesh BVH, in the context's node
//!   layout ([`GpuContext::node_layout`]: binary by default, or eight-wide),
//!   concatenated into one node and one triangle buffer (each instance knows its
//!   mesh's offsets), the TLAS and
//!   the instance records in two more, traced by `shaders/instance_traverse.wgsl`.
//!   Moving an instance refits the CPU copy of the TLAS; before the next trace, the
//!   changed instance records and TLAS nodes (the moved instances' paths to the
//!   root) are written in runs of consecutive entries.
//! - **the driver's structures** ([`Accel::RayQuery`]): one bottom-level structure
//!   per mesh and padding ([`InstanceDriverBoxes`]), one driver instance per scene
//!   instance, traced by `shaders/instance_ray_query.wgsl`. Moving an instance
//!   changes its driver instance; the top-level structure is rebuilt before the next
//!   trace, and the far limit recomputed.
//!
//! Each buffer must fit one storage binding ([`GpuContext::max_binding_bytes`]); a
//! scene that does not is refused with [`InstanceError::TooLarge`] (it is not
//! split: split the scene into several, or trace it on the CPU). Ray batches of any
//! size are split into dispatches.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use wgpu::util::DeviceExt;

use crate::Accel;
use crate::cpu::instance_ray_query::InstanceDriverBoxes;
use crate::cpu::instance_traverse;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::gpu::ray_query::row_major;
use crate::gpu::readback::{Wait, read_mapped};
use crate::gpu::timing::{HostStage, Laps};
use crate::gpu::trace::write_rays;
use crate::instances::{InstanceError, InstanceHit, InstanceScene};
use crate::options::{NodeLayout, TraceOptions};
use crate::prepare::sanitize_ray;
use crate::shaders::{INSTANCE_RAY_QUERY_WORKGROUP, INSTANCE_TRAVERSE_WORKGROUP, UNFINISHED};
use crate::types::{
    BvhNode, InstanceHitRecord, MISS, PackedInstance, PackedTriangle, Query, Ray, TraverseParams,
};

const RECORD_BYTES: u64 = std::mem::size_of::<InstanceHitRecord>() as u64;
const NODE_BYTES: u64 = std::mem::size_of::<BvhNode>() as u64;
const INSTANCE_BYTES: u64 = std::mem::size_of::<PackedInstance>() as u64;
/// Why an instance scene cannot be prepared with [`Accel::Brute`].
pub(crate) const NO_BRUTE_INSTANCES: &str =
    "instance scenes are traced with Accel::Bvh or Accel::RayQuery, not by brute force";
const TRIANGLE_BYTES: u64 = std::mem::size_of::<PackedTriangle>() as u64;

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
    /// The instance records ([`PackedInstance`]).
    instances: wgpu::Buffer,
    structures: Structures,
    pub(crate) context_id: u64,
    scratch: Mutex<Option<Scratch>>,
    dirty: Mutex<Dirty>,
}

/// How the instances' triangles are found.
#[derive(Debug)]
enum Structures {
    /// raypick's BVHs ([`Accel::Bvh`]).
    Bvh {
        /// The TLAS nodes.
        tlas: wgpu::Buffer,
        /// Every mesh BVH's nodes in `layout` (eight-wide ones followed by their
        /// exact boxes).
        nodes: wgpu::Buffer,
        /// Every mesh BVH's triangles.
        triangles: wgpu::Buffer,
        /// Per mesh: where its BVH sits in `nodes` and `triangles`.
        meshes: Vec<MeshAt>,
        /// The meshes' node layout.
        layout: NodeLayout,
    },
    /// The driver's structures ([`Accel::RayQuery`]).
    RayQuery(Box<DriverScene>),
}

/// An instance scene in the driver's acceleration structures.
#[derive(Debug)]
struct DriverScene {
    /// One driver instance per scene instance that can be hit (custom data: its
    /// index).
    tlas: wgpu::Tlas,
    /// Per structure of `boxes`: the driver's bottom-level structure.
    blases: Vec<wgpu::Blas>,
    /// Every structure's triangles in box order, one after the other.
    triangles: wgpu::Buffer,
    /// Per structure: its first triangle in `triangles`, and its triangle count.
    offsets: Vec<(u32, u32)>,
    /// The structures as built (their boxes and triangles dropped once uploaded:
    /// the far limit needs only their paddings and magnitudes).
    boxes: InstanceDriverBoxes,
    /// The far limit for the transforms of the moment (f32 bits), recomputed when
    /// the top-level structure is rebuilt after moves.
    far_limit: AtomicU32,
}

impl DriverScene {
    /// The driver instance of scene instance `index`, `None` when it has nothing to
    /// hit.
    fn instance(&self, scene: &InstanceScene, index: usize) -> Option<wgpu::TlasInstance> {
        let structure = self.boxes.of_instance[index]? as usize;
        let transform = scene.instance(index)?.transform;
        Some(wgpu::TlasInstance::new(
            &self.blases[structure],
            row_major(&transform),
            index as u32,
            0xff,
        ))
    }
}

/// What changed on the CPU since the last upload: TLAS nodes and instance records,
/// and whether the driver's top-level structure needs a rebuild.
#[derive(Debug, Default)]
struct Dirty {
    nodes: Vec<u32>,
    instances: Vec<u32>,
    all_nodes: bool,
    driver_tlas: bool,
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
    ///
    /// With [`Accel::RayQuery`] the instance's driver instance changes now and the
    /// top-level structure is rebuilt before the next trace; the instance keeps its
    /// bottom-level structure, and rays from beyond the far limit its new place
    /// allows are finished on the CPU.
    pub fn set_transform(&mut self, index: usize, transform: glam::Mat4) -> Result<()> {
        let changed = self.scene.set_transform_nodes(index, transform)?;
        let dirty = self.dirty.get_mut().unwrap_or_else(|e| e.into_inner());
        dirty.nodes.extend(changed);
        dirty.instances.push(index as u32);
        if let Structures::RayQuery(driver) = &mut self.structures {
            driver.tlas[index] = driver.instance(&self.scene, index);
            dirty.driver_tlas = true;
        }
        Ok(())
    }

    /// The node layout of the meshes of a scene of raypick's BVHs ([`Accel::Bvh`]:
    /// the context's [`GpuContext::node_layout`] when it was uploaded); `None` for
    /// the driver's structures.
    pub fn node_layout(&self) -> Option<NodeLayout> {
        match self.structures {
            Structures::Bvh { layout, .. } => Some(layout),
            Structures::RayQuery(_) => None,
        }
    }

    /// The acceleration structure the scene was uploaded with: [`Accel::Bvh`] or
    /// [`Accel::RayQuery`].
    pub fn accel(&self) -> Accel {
        match self.structures {
            Structures::Bvh { .. } => Accel::Bvh,
            Structures::RayQuery(_) => Accel::RayQuery,
        }
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
    /// instance records, or the driver's top-level structure. Returns the far limit
    /// of the driver's structures (`+inf` for raypick's BVHs, which have none).
    fn flush(&self, gpu: &GpuContext) -> f32 {
        let mut dirty = self.dirty.lock().unwrap_or_else(|e| e.into_inner());
        match &self.structures {
            Structures::Bvh { tlas, .. } => {
                let nodes = self.scene.tlas_nodes();
                if dirty.all_nodes {
                    dirty.nodes = (0..nodes.len() as u32).collect();
                }
                for (first, end) in runs(&mut dirty.nodes) {
                    gpu.queue.write_buffer(
                        tlas,
                        first as u64 * NODE_BYTES,
                        bytemuck::cast_slice(&nodes[first as usize..end as usize]),
                    );
                }
            }
            Structures::RayQuery(driver) => {
                if dirty.driver_tlas {
                    let mut encoder = gpu.device.create_command_encoder(&Default::default());
                    encoder.build_acceleration_structures(
                        std::iter::empty(),
                        std::iter::once(&driver.tlas),
                    );
                    gpu.queue.submit([encoder.finish()]);
                    let far_limit = driver.boxes.far_limit(&self.scene);
                    driver
                        .far_limit
                        .store(far_limit.to_bits(), Ordering::Relaxed);
                }
            }
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
        match &self.structures {
            Structures::Bvh { .. } => f32::INFINITY,
            Structures::RayQuery(driver) => {
                f32::from_bits(driver.far_limit.load(Ordering::Relaxed))
            }
        }
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
        match &self.structures {
            Structures::Bvh { meshes, .. } => record(&self.scene, meshes, index),
            Structures::RayQuery(driver) => {
                driver_record(&self.scene, &driver.boxes, &driver.offsets, index)
            }
        }
    }
}

/// Where a mesh's BVH sits in the shared buffers of raypick's BVHs.
#[derive(Clone, Copy, Debug)]
struct MeshAt {
    /// Its first node.
    node: u32,
    /// Its first triangle.
    triangle: u32,
    /// Its nodes.
    nodes: u32,
}

/// The record `shaders/instance_traverse.wgsl` reads for instance `index`, its
/// mesh's BVH where `meshes` says.
fn record(scene: &InstanceScene, meshes: &[MeshAt], index: usize) -> PackedInstance {
    let placed = &scene.placed()[index];
    let at = meshes[placed.instance.mesh];
    let [inv0, inv1, inv2] = placed.placement.inverse_rows;
    PackedInstance {
        inv0,
        inv1,
        inv2,
        node_offset: at.node,
        tri_offset: at.triangle,
        node_count: at.nodes,
        _pad0: 0,
    }
}

/// The record `shaders/instance_ray_query.wgsl` reads for instance `index`: its
/// structure's first triangle and triangle count (in the node fields' place:
/// `node_offset` is 0).
fn driver_record(
    scene: &InstanceScene,
    boxes: &InstanceDriverBoxes,
    offsets: &[(u32, u32)],
    index: usize,
) -> PackedInstance {
    let [inv0, inv1, inv2] = scene.placed()[index].placement.inverse_rows;
    let (tri_offset, node_count) = boxes.of_instance[index].map_or((0, 0), |s| offsets[s as usize]);
    PackedInstance {
        inv0,
        inv1,
        inv2,
        node_offset: 0,
        tri_offset,
        node_count,
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
    /// Uploads an instance scene with the device's default acceleration structure
    /// ([`GpuContext::default_accel`]): the driver's structures on a hardware GPU
    /// with ray queries, when the scene is within their limits (instance count,
    /// triangles per mesh), else raypick's BVHs (the same answers). Fails with
    /// [`InstanceError::TooLarge`] when a buffer exceeds one storage binding.
    pub fn upload_instances(&self, scene: InstanceScene) -> Result<GpuInstanceScene> {
        let accel = match self.default_accel() {
            Accel::RayQuery if self.ray_query_limits(&scene).is_ok() => Accel::RayQuery,
            _ => Accel::Bvh,
        };
        self.upload_instances_with(scene, accel)
    }

    /// Uploads an instance scene for the given acceleration structure:
    ///
    /// - [`Accel::Bvh`]: every mesh BVH once, the instances and the TLAS.
    /// - [`Accel::RayQuery`]: the driver's structures (see
    ///   `docs/contracts.md` §1.11); fails with
    ///   [`Error::NoRayQueries`] unless [`GpuContext::has_ray_queries`], and for a
    ///   scene beyond the driver's limits (more instances than a top-level
    ///   structure holds or than 2^24, more triangles in a mesh than a bottom-level
    ///   one).
    /// - [`Accel::Brute`] fails with [`Error::Unsupported`].
    ///
    /// Fails with [`InstanceError::TooLarge`] when a buffer exceeds one storage
    /// binding.
    pub fn upload_instances_with(
        &self,
        scene: InstanceScene,
        accel: Accel,
    ) -> Result<GpuInstanceScene> {
        self.errors.check()?;
        match accel {
            Accel::Bvh => self.upload_instance_bvhs(scene),
            Accel::RayQuery => self.upload_driver_instances(scene),
            Accel::Brute => Err(Error::Unsupported(NO_BRUTE_INSTANCES.into())),
        }
    }

    /// Uploads every mesh BVH once (in the context's node layout,
    /// [`GpuContext::node_layout`]), the instances and the TLAS.
    fn upload_instance_bvhs(&self, scene: InstanceScene) -> Result<GpuInstanceScene> {
        let layout = self.node_layout();
        // Each mesh's rows start at a whole node, so that its nodes are indexed from
        // its first one; eight-wide nodes' exact boxes' rows count from the buffer's
        // start.
        let node_rows = layout.node_bytes() / 16;
        let mut meshes = Vec::with_capacity(scene.meshes().len());
        let mut rows: Vec<[u32; 4]> = Vec::new();
        let mut tri_count = 0u64;
        for blas in scene.meshes() {
            let first = (rows.len() / node_rows) as u32;
            let nodes = match layout {
                NodeLayout::Binary => {
                    let nodes = blas.bvh().nodes();
                    rows.extend_from_slice(bytemuck::cast_slice(nodes));
                    nodes.len()
                }
                NodeLayout::Wide => {
                    let wide = blas.gpu_wide();
                    rows.extend(wide.gpu_rows_at(rows.len()));
                    rows.resize(rows.len().next_multiple_of(node_rows), [0; 4]);
                    wide.node_count()
                }
            };
            meshes.push(MeshAt {
                node: first,
                triangle: tri_count as u32,
                nodes: nodes as u32,
            });
            tri_count += blas.bvh().triangles().len() as u64;
        }
        let limit = self.max_binding_bytes();
        fits("mesh BVH nodes", rows.len() as u64 * 16, limit)?;
        fits("mesh triangles", tri_count * TRIANGLE_BYTES, limit)?;
        fits("instances", scene.len() as u64 * INSTANCE_BYTES, limit)?;
        fits(
            "TLAS nodes",
            scene.tlas_nodes().len() as u64 * NODE_BYTES,
            limit,
        )?;
        if rows.len() as u64 >= u32::MAX as u64 || tri_count >= u32::MAX as u64 {
            fits("mesh BVH nodes", u64::MAX, limit)?;
        }
        let mut triangles = Vec::with_capacity(tri_count as usize);
        for blas in scene.meshes() {
            triangles.extend_from_slice(blas.bvh().triangles());
        }
        let records: Vec<PackedInstance> = (0..scene.len())
            .map(|i| record(&scene, &meshes, i))
            .collect();
        let (tlas, instances, nodes, triangles) = self.scoped(|| {
            (
                self.instance_storage(
                    "raypick TLAS nodes",
                    bytemuck::cast_slice(scene.tlas_nodes()),
                ),
                self.instance_storage("raypick instances", bytemuck::cast_slice(&records)),
                self.instance_storage("raypick mesh BVH nodes", bytemuck::cast_slice(&rows)),
                self.instance_storage("raypick mesh triangles", bytemuck::cast_slice(&triangles)),
            )
        })?;
        Ok(GpuInstanceScene {
            scene,
            instances,
            structures: Structures::Bvh {
                tlas,
                nodes,
                triangles,
                meshes,
                layout,
            },
            context_id: self.id,
            scratch: Mutex::new(None),
            dirty: Mutex::default(),
        })
    }

    /// [`Error::NoRayQueries`] unless the device has ray queries and `scene` is
    /// within the driver's limits (instances per top-level structure, triangles per
    /// bottom-level one).
    fn ray_query_limits(&self, scene: &InstanceScene) -> Result<()> {
        let device = || {
            format!(
                "the GPU {} ({})",
                self.adapter().name,
                self.adapter().backend
            )
        };
        if !self.has_ray_queries() {
            return Err(Error::NoRayQueries(device()));
        }
        // Custom data holds the instance index in 24 bits.
        let most = (self.device.limits().max_tlas_instance_count as usize).min(1 << 24);
        if scene.len() > most {
            return Err(Error::NoRayQueries(format!(
                "{} for a scene of {} instances (at most {most})",
                device(),
                scene.len()
            )));
        }
        let most = self.device.limits().max_blas_primitive_count as usize;
        let largest = scene
            .meshes()
            .iter()
            .map(|blas| blas.bvh().triangles().len())
            .max()
            .unwrap_or(0);
        if largest > most {
            return Err(Error::NoRayQueries(format!(
                "{} for an instanced mesh of {largest} triangles (at most {most})",
                device()
            )));
        }
        Ok(())
    }

    /// Uploads the scene as the driver's structures: one bottom-level structure per
    /// mesh and padding, one driver instance per instance that can be hit.
    fn upload_driver_instances(&self, scene: InstanceScene) -> Result<GpuInstanceScene> {
        self.ray_query_limits(&scene)?;
        let mut boxes = InstanceDriverBoxes::new(&scene);
        let total: u64 = boxes
            .structures
            .iter()
            .map(|s| s.boxes.triangles.len() as u64)
            .sum();
        let limit = self.max_binding_bytes();
        fits("ray-query triangles", total * TRIANGLE_BYTES, limit)?;
        fits("instances", scene.len() as u64 * INSTANCE_BYTES, limit)?;
        let mut offsets = Vec::with_capacity(boxes.structures.len());
        let mut triangles = Vec::with_capacity(total as usize);
        for s in &boxes.structures {
            offsets.push((triangles.len() as u32, s.boxes.triangles.len() as u32));
            triangles.extend_from_slice(&s.boxes.triangles);
        }
        let records: Vec<PackedInstance> = (0..scene.len())
            .map(|i| driver_record(&scene, &boxes, &offsets, i))
            .collect();
        let driver = self.scoped(|| {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            let blases = boxes
                .structures
                .iter()
                .map(|s| self.box_blas(&mut encoder, &s.boxes.boxes))
                .collect();
            let driver = DriverScene {
                tlas: self.driver_tlas(scene.len().max(1) as u32),
                blases,
                triangles: self.instance_storage(
                    "raypick ray-query triangles",
                    bytemuck::cast_slice(&triangles),
                ),
                offsets,
                boxes: InstanceDriverBoxes::default(),
                far_limit: AtomicU32::default(),
            };
            (driver, encoder)
        })?;
        let (mut driver, encoder) = driver;
        for s in &mut boxes.structures {
            s.boxes.boxes = Vec::new();
            s.boxes.triangles = Vec::new();
        }
        driver.boxes = boxes;
        for i in 0..scene.len() {
            let instance = driver.instance(&scene, i);
            driver.tlas[i] = instance;
        }
        driver.far_limit = AtomicU32::new(driver.boxes.far_limit(&scene).to_bits());
        let instances = self.scoped(|| {
            let mut encoder = encoder;
            if !driver.blases.is_empty() {
                encoder.build_acceleration_structures(
                    std::iter::empty(),
                    std::iter::once(&driver.tlas),
                );
            }
            self.queue.submit([encoder.finish()]);
            self.instance_storage("raypick instances", bytemuck::cast_slice(&records))
        })?;
        Ok(GpuInstanceScene {
            scene,
            instances,
            structures: Structures::RayQuery(Box::new(driver)),
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
        self.walk_instances(scene, rays, options, Query::Closest, |ray, record| {
            scene.scene.finish(ray, record)
        })
    }

    /// Whether each ray hits anything in an uploaded instance scene (blocking):
    /// `true` exactly when [`GpuContext::trace_instances`] gives it a hit; each ray
    /// stops at its first hit.
    pub fn occluded_instances(
        &self,
        scene: &GpuInstanceScene,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<bool>> {
        self.walk_instances(scene, rays, options, Query::Any, |_, record| {
            record.prim != MISS
        })
    }

    /// Runs the scene's stage for `query` (nearest or any hit) over `rays`, finishes
    /// the rays it leaves to the CPU with the traversal mirror (whose nearest hit
    /// answers either query), and gives `keep(sanitised ray, record)` per ray.
    fn walk_instances<T: Send>(
        &self,
        scene: &GpuInstanceScene,
        rays: &[Ray],
        options: &TraceOptions,
        query: Query,
        keep: impl Fn(&Ray, &InstanceHitRecord) -> T + Sync,
    ) -> Result<Vec<T>> {
        scene.check(self)?;
        self.errors.check()?;
        let far_limit = scene.flush(self);
        // Each ray's answer from its record, read straight from the staging memory:
        // the ray sanitised as the GPU's copy was, and rays left to the CPU finished
        // by the traversal mirror.
        let (cull, mode) = (options.cull, options.mode);
        let finish = |ray: &Ray, record: &InstanceHitRecord| {
            let ray = sanitize_ray(ray);
            match record.prim {
                UNFINISHED => keep(
                    &ray,
                    &instance_traverse::trace_ray(&scene.scene, &ray, cull, mode),
                ),
                _ => keep(&ray, record),
            }
        };
        let mut out = Vec::with_capacity(rays.len());
        if scene.scene.tlas_nodes().is_empty() || rays.is_empty() {
            rays.par_iter()
                .map(|ray| finish(ray, &InstanceHitRecord::MISS))
                .collect_into_vec(&mut out);
            self.errors.check()?;
            return Ok(out);
        }
        let (pipeline, workgroup) = match scene.structures {
            Structures::Bvh { layout, .. } => (
                self.pipelines
                    .instance_traverse(&self.device, layout, query, options.mode)?,
                INSTANCE_TRAVERSE_WORKGROUP,
            ),
            Structures::RayQuery(_) => (
                self.pipelines
                    .instance_ray_query(&self.device, query, options.mode)?,
                INSTANCE_RAY_QUERY_WORKGROUP,
            ),
        };
        let per_dispatch = self
            .max_rays_per_dispatch()
            .min(65_535 * workgroup as usize);
        let mut scratch = scene.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let capacity = rays.len().min(per_dispatch);
        if scratch.as_ref().is_none_or(|s| s.capacity < capacity) {
            *scratch = None; // free the old buffers first
            *scratch = Some(self.scoped(|| Scratch::new(&self.device, capacity))?);
        }
        let scratch = scratch.as_ref().expect("scratch was just created");
        let params = TraverseParams {
            far_limit,
            ..self.traverse_params(0, options)
        };
        // Where the time goes, as for meshes (GpuOptions::timing).
        let timer = self.timer.as_ref();
        let laps = Laps(timer);
        for rays in rays.chunks(per_dispatch) {
            let params = TraverseParams {
                ray_count: rays.len() as u32,
                ..params
            };
            let submitting = laps.start();
            laps.begin_batch();
            self.dispatch_instances((pipeline, workgroup), scene, scratch, rays, &params);
            laps.lap(HostStage::Submit, submitting);
            let waiting = laps.start();
            let bytes = rays.len() as u64 * RECORD_BYTES;
            let read = |records: &[InstanceHitRecord]| {
                laps.lap(HostStage::Wait, waiting);
                let finishing = laps.start();
                out.par_extend(
                    rays.par_iter()
                        .zip(records.par_iter())
                        .map(|(ray, record)| finish(ray, record)),
                );
                laps.lap(HostStage::Finish, finishing);
            };
            // A failed readback on a lost device is device loss.
            pollster::block_on(read_mapped(
                &self.device,
                &scratch.staging,
                bytes,
                Wait::Block,
                read,
            ))
            .map_err(|e| self.lost_or(e))?;
            if let Some(timer) = timer {
                pollster::block_on(timer.collect(&self.device, Wait::Block))
                    .map_err(|e| self.lost_or(e))?;
            }
        }
        self.errors.check()?;
        Ok(out)
    }

    /// One dispatch of `pipeline` (workgroups of `workgroup`) over `rays` (at most
    /// one dispatch's worth), hits copied to the staging buffer.
    fn dispatch_instances(
        &self,
        (pipeline, workgroup): (&wgpu::ComputePipeline, u32),
        scene: &GpuInstanceScene,
        scratch: &Scratch,
        rays: &[Ray],
        params: &TraverseParams,
    ) {
        self.queue
            .write_buffer(&scratch.params, 0, bytemuck::bytes_of(params));
        write_rays(&self.queue, &scratch.rays, rays);
        let layout = pipeline.get_bind_group_layout(0);
        let bind_group = match &scene.structures {
            Structures::Bvh {
                tlas,
                nodes,
                triangles,
                ..
            } => self.bind_group(
                &layout,
                &[
                    &scratch.params,
                    tlas,
                    &scene.instances,
                    nodes,
                    triangles,
                    &scratch.rays,
                    &scratch.hits,
                ],
            ),
            Structures::RayQuery(driver) => self.bind_resources(
                &layout,
                [
                    scratch.params.as_entire_binding(),
                    driver.tlas.as_binding(),
                    scene.instances.as_entire_binding(),
                    driver.triangles.as_entire_binding(),
                    scratch.rays.as_entire_binding(),
                    scratch.hits.as_entire_binding(),
                ],
            ),
        };
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("raypick instances"),
                timestamp_writes: self.timer.as_ref().and_then(|t| t.pass_writes()),
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups((rays.len() as u32).div_ceil(workgroup), 1, 1);
        }
        if let Some(timer) = &self.timer {
            timer.resolve(&mut encoder);
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
