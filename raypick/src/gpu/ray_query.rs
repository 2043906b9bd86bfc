//! Meshes traced with hardware ray queries ([`Accel::RayQuery`](crate::Accel::RayQuery)).
//!
//! Upload: the driver builds a bottom-level acceleration structure over one box per
//! hittable triangle (procedural AABB geometry, boxes from
//! [`DriverBoxes`]) and a top-level one holding
//! it once, untransformed; the triangles go to a storage buffer in box order, so a
//! candidate's primitive index names its triangle. A mesh larger than one storage
//! binding or than the device's primitives per structure is split into chunks,
//! traced one after the other with the best hit carried over, like BVH chunks.
//!
//! Trace: `shaders/ray_query.wgsl`, one dispatch per chunk. Rays the stage leaves to
//! the CPU (far origins, too many candidates) are finished by the BVH traversal on
//! a BVH built from the host copy of the triangles the first time one is needed;
//! the same BVH traces the mesh after a fallback to the CPU.

use std::sync::{Arc, OnceLock};

use super::GpuContext;
use super::mesh::{Content, GpuMesh};
use super::trace::{Scratch, chunk_passes};
use crate::Mesh;
use crate::bvh::Bvh;
use crate::cpu::ray_query::DriverBoxes;
use crate::error::{Error, Result};
use crate::gather::mesh_from_packed;
use crate::options::TraceOptions;
use crate::prepare::pack_mesh;
use crate::shaders::RAY_QUERY_WORKGROUP;
use crate::types::{PackedTriangle, Query, TraverseParams};

/// Bytes of one box in the driver's input: `[lo, hi]` as six f32.
const BOX_BYTES: u64 = 24;

/// One acceleration structure of a ray-query mesh and the triangles its boxes stand for.
#[derive(Clone, Debug)]
pub(crate) struct RayQueryChunk {
    /// The top-level structure the stage binds: one untransformed instance of the
    /// bottom-level structure over the boxes (which the instance keeps alive).
    pub(crate) tlas: wgpu::Tlas,
    /// The chunk's triangles in box order.
    pub(crate) triangles: wgpu::Buffer,
}

/// What a ray-query mesh holds.
#[derive(Clone, Debug)]
pub(crate) struct RayQueryMesh {
    pub(crate) chunks: Vec<RayQueryChunk>,
    /// Origins beyond this magnitude are finished on the CPU.
    pub(crate) far_limit: f32,
    /// The mesh's packed triangles in id order (the host copy).
    packed: Arc<[PackedTriangle]>,
    /// The BVH of the host copy, built on first need (shared by the clones the pick
    /// service makes).
    bvh: Arc<OnceLock<Arc<Bvh>>>,
}

impl RayQueryMesh {
    /// The BVH that finishes rays left to the CPU and traces the mesh there after a
    /// fallback (built from the host copy the first time).
    pub(crate) fn bvh(&self) -> Arc<Bvh> {
        self.bvh
            .get_or_init(|| Arc::new(Bvh::build(&mesh_from_packed(&self.packed))))
            .clone()
    }

    /// Bytes of GPU memory in raypick's own buffers (the driver's structures are not
    /// counted: wgpu does not report their size).
    pub(crate) fn size_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.triangles.size()).sum()
    }
}

impl GpuContext {
    /// Uploads `mesh` for hardware ray queries ([`Accel::RayQuery`](crate::Accel::RayQuery)).
    pub(crate) fn upload_ray_query(&self, mesh: &Mesh) -> Result<GpuMesh> {
        if !self.has_ray_queries() {
            return Err(Error::NoRayQueries(format!(
                "the GPU {} ({})",
                self.adapter().name,
                self.adapter().backend
            )));
        }
        self.errors.check()?;
        let packed: Arc<[PackedTriangle]> = pack_mesh(mesh).into();
        let boxes = DriverBoxes::new(&packed);
        let bytes = boxes.triangles.len() as u64
            * (std::mem::size_of::<PackedTriangle>() as u64 + BOX_BYTES);
        self.check_mesh_bytes(bytes)?;
        let per_chunk = self
            .triangles_per_chunk()
            .min(self.device.limits().max_blas_primitive_count as usize)
            .max(1);
        let chunks = self.scoped(|| {
            boxes
                .boxes
                .chunks(per_chunk)
                .zip(boxes.triangles.chunks(per_chunk))
                .map(|(boxes, triangles)| self.build_chunk(boxes, triangles))
                .collect::<Vec<_>>()
        })?;
        Ok(GpuMesh {
            content: Content::RayQuery(RayQueryMesh {
                chunks,
                far_limit: boxes.far_limit(),
                packed,
                bvh: Arc::default(),
            }),
            context_id: self.id,
            triangle_count: mesh.triangle_count(),
            host_triangles: None,
            gathered: None,
        })
    }

    /// Builds the acceleration structures of one chunk of boxes (submitted, not
    /// waited for: later submissions run after it).
    fn build_chunk(
        &self,
        boxes: &[[glam::Vec3; 2]],
        triangles: &[PackedTriangle],
    ) -> RayQueryChunk {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let blas = self.box_blas(&mut encoder, boxes);
        let mut tlas = self.driver_tlas(1);
        tlas[0] = Some(wgpu::TlasInstance::new(
            &blas,
            row_major(&glam::Mat4::IDENTITY),
            0,
            0xff,
        ));
        encoder.build_acceleration_structures(std::iter::empty(), std::iter::once(&tlas));
        self.queue.submit([encoder.finish()]);
        RayQueryChunk {
            tlas,
            triangles: self.storage(
                "raypick ray-query triangles",
                bytemuck::cast_slice(triangles),
            ),
        }
    }

    /// A bottom-level structure over `boxes` (procedural AABB geometry), its build
    /// recorded in `encoder`.
    pub(crate) fn box_blas(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        boxes: &[[glam::Vec3; 2]],
    ) -> wgpu::Blas {
        let input = self.filled(
            "raypick ray-query boxes",
            bytemuck::cast_slice(boxes),
            wgpu::BufferUsages::BLAS_INPUT,
        );
        let size = wgpu::BlasAABBGeometrySizeDescriptor {
            primitive_count: boxes.len() as u32,
            // Opaque: no any-hit stage; every box still comes to the shader as a
            // candidate (procedural geometry). No duplicate reports where the driver
            // honours it (the stages cope with them anyway).
            flags: wgpu::AccelerationStructureGeometryFlags::OPAQUE
                | wgpu::AccelerationStructureGeometryFlags::NO_DUPLICATE_ANY_HIT_INVOCATION,
        };
        let blas = self.device.create_blas(
            &wgpu::CreateBlasDescriptor {
                label: Some("raypick ray-query boxes"),
                flags: wgpu::AccelerationStructureFlags::PREFER_FAST_TRACE,
                update_mode: wgpu::AccelerationStructureUpdateMode::Build,
            },
            wgpu::BlasGeometrySizeDescriptors::AABBs {
                descriptors: vec![size.clone()],
            },
        );
        encoder.build_acceleration_structures(
            std::iter::once(&wgpu::BlasBuildEntry {
                blas: &blas,
                geometry: wgpu::BlasGeometries::AabbGeometries(vec![wgpu::BlasAabbGeometry {
                    size: &size,
                    stride: BOX_BYTES,
                    aabb_buffer: &input,
                    primitive_offset: 0,
                }]),
            }),
            std::iter::empty(),
        );
        blas
    }

    /// An empty top-level structure for `max_instances` instances.
    pub(crate) fn driver_tlas(&self, max_instances: u32) -> wgpu::Tlas {
        self.device.create_tlas(&wgpu::CreateTlasDescriptor {
            label: Some("raypick ray-query scene"),
            flags: wgpu::AccelerationStructureFlags::PREFER_FAST_TRACE,
            update_mode: wgpu::AccelerationStructureUpdateMode::Build,
            max_instances,
        })
    }

    /// The ray-query stage over the ray batch in `scratch`: one dispatch per chunk.
    pub(crate) fn dispatch_ray_query(
        &self,
        mesh: &RayQueryMesh,
        ray_count: usize,
        options: &TraceOptions,
        (query, max_hits): (Query, u32),
        scratch: &Scratch,
    ) -> Result<()> {
        let pipeline = self
            .pipelines
            .ray_query(&self.device, query, options.mode)?;
        let layout = pipeline.get_bind_group_layout(0);
        let params = TraverseParams {
            max_hits,
            far_limit: mesh.far_limit,
            ..self.traverse_params(ray_count, options)
        };
        let bind_groups = mesh.chunks.iter().map(|chunk| {
            self.bind_resources(
                &layout,
                [
                    scratch.params.as_entire_binding(),
                    chunk.tlas.as_binding(),
                    chunk.triangles.as_entire_binding(),
                    scratch.rays.as_entire_binding(),
                    scratch.hits.as_entire_binding(),
                    scratch.list.as_entire_binding(),
                ],
            )
        });
        self.submit_passes(
            chunk_passes(pipeline, params, bind_groups),
            RAY_QUERY_WORKGROUP,
            (ray_count, query, max_hits),
            scratch,
        );
        Ok(())
    }
}

/// An affine transform as the driver takes it: three rows of four, row major.
pub(crate) fn row_major(transform: &glam::Mat4) -> [f32; 12] {
    let rows = [0, 1, 2].map(|i| transform.row(i).to_array());
    std::array::from_fn(|k| rows[k / 4][k % 4])
}
