//! Meshes uploaded to the GPU once and reused across ray batches.

use wgpu::util::DeviceExt;

use super::GpuContext;
use crate::Mesh;
use crate::error::Result;
use crate::prepare::pack_mesh;
use crate::types::PackedTriangle;

/// A run of consecutive triangles in one storage buffer.
#[derive(Debug)]
pub(crate) struct TriangleChunk {
    pub(crate) buffer: wgpu::Buffer,
    /// Id of the first triangle.
    pub(crate) base: u32,
    /// Number of triangles.
    pub(crate) count: u32,
}

/// A mesh in GPU memory. Triangles beyond one storage binding are split across
/// several buffers, traced one after another in id order.
#[derive(Debug)]
pub struct GpuMesh {
    pub(crate) chunks: Vec<TriangleChunk>,
    pub(crate) context_id: u64,
    triangle_count: usize,
}

impl GpuMesh {
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangle_count
    }

    /// Bytes of GPU memory held.
    pub fn size_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.buffer.size()).sum()
    }

    /// Number of storage buffers the triangles are split across.
    pub fn buffer_count(&self) -> usize {
        self.chunks.len()
    }
}

impl GpuContext {
    /// Packs a mesh and uploads it.
    pub fn upload(&self, mesh: &Mesh) -> Result<GpuMesh> {
        self.upload_packed(&pack_mesh(mesh))
    }

    /// Uploads already packed triangles (see [`crate::prepare::pack_mesh`]).
    pub fn upload_packed(&self, triangles: &[PackedTriangle]) -> Result<GpuMesh> {
        self.errors.check()?;
        let per_chunk =
            (self.max_binding_bytes() as usize / std::mem::size_of::<PackedTriangle>()).max(1);
        let chunks = self.scoped(|| {
            triangles
                .chunks(per_chunk)
                .enumerate()
                .map(|(i, chunk)| TriangleChunk {
                    buffer: self
                        .device
                        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some("raypick triangles"),
                            contents: bytemuck::cast_slice(chunk),
                            usage: wgpu::BufferUsages::STORAGE,
                        }),
                    base: (i * per_chunk) as u32,
                    count: chunk.len() as u32,
                })
                .collect()
        })?;
        Ok(GpuMesh {
            chunks,
            context_id: self.id,
            triangle_count: triangles.len(),
        })
    }
}
