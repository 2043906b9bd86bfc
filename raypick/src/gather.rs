//! Meshes described the way a renderer draws them: positions at a byte offset and
//! stride in a vertex buffer, a 16- or 32-bit index buffer with a byte offset and
//! count, and a base vertex added to every index.
//!
//! The same [`MeshLayout`] reads a renderer's GPU buffers without a CPU round trip
//! ([`GpuContext::upload_buffers`](crate::gpu::GpuContext::upload_buffers), through
//! `shaders/gather.wgsl`) or CPU byte slices ([`mesh_from_slices`], through its
//! mirror `cpu::gather`), and both give the very same packed triangles.
//!
//! Triangle `k` is made of indices `3k, 3k+1, 3k+2` (a triangle list; a trailing
//! one or two indices are ignored, as a draw does). An index whose vertex
//! (`index + base_vertex`) is outside `0..vertex_count` makes its triangle
//! degenerate: it never hits and is never read out of bounds.

use glam::Vec3;

use crate::Mesh;
use crate::error::{Error, Result};
use crate::types::{GatherParams, PackedTriangle};

/// Width of the indices in an index buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IndexFormat {
    /// 16-bit indices.
    U16,
    /// 32-bit indices.
    #[default]
    U32,
}

impl IndexFormat {
    /// Bytes per index.
    pub fn size(self) -> u64 {
        match self {
            IndexFormat::U16 => 2,
            IndexFormat::U32 => 4,
        }
    }
}

/// Where a mesh's positions and indices are in its vertex and index buffers
/// (little-endian, as GPUs store them).
///
/// Vertex `i`'s position is three `f32` at byte `vertex_offset + i * vertex_stride`;
/// both must be multiples of 4, and the stride at least 12. Index `e` is at byte
/// `index_offset + e * index_format.size()` (`index_offset` a multiple of the index
/// size). All of it must lie inside the buffers; [`MeshLayout::check`] says so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeshLayout {
    /// Byte offset of vertex 0's position in the vertex buffer.
    pub vertex_offset: u64,
    /// Bytes from one vertex to the next.
    pub vertex_stride: u64,
    /// Vertices that indices may refer to.
    pub vertex_count: u32,
    /// Width of the indices.
    pub index_format: IndexFormat,
    /// Byte offset of the first index in the index buffer.
    pub index_offset: u64,
    /// Number of indices (three per triangle).
    pub index_count: u32,
    /// Added to every index before the vertex is looked up (may be negative).
    pub base_vertex: i32,
}

impl MeshLayout {
    /// Tightly packed `[f32; 3]` positions and 32-bit indices from the start of
    /// their buffers.
    pub fn packed(vertex_count: u32, index_count: u32) -> Self {
        Self {
            vertex_stride: 12,
            vertex_count,
            index_count,
            ..Default::default()
        }
    }

    /// Number of triangles (`index_count / 3`).
    pub fn triangle_count(&self) -> usize {
        self.index_count as usize / 3
    }

    /// Checks the layout against buffers of `vertex_bytes` and `index_bytes` bytes:
    /// alignment, and every vertex and index inside its buffer.
    pub fn check(&self, vertex_bytes: u64, index_bytes: u64) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(format!("mesh layout: {what}")));
        if self.vertex_stride < 12 || !self.vertex_stride.is_multiple_of(4) {
            return bad(format!(
                "vertex stride {} is not a multiple of 4 of at least 12 bytes",
                self.vertex_stride
            ));
        }
        if !self.vertex_offset.is_multiple_of(4) {
            return bad(format!(
                "vertex offset {} is not a multiple of 4",
                self.vertex_offset
            ));
        }
        let size = self.index_format.size();
        if !self.index_offset.is_multiple_of(size) {
            return bad(format!(
                "index offset {} is not a multiple of the index size {size}",
                self.index_offset
            ));
        }
        let vertex_end = match self.vertex_count {
            0 => 0,
            n => (n as u64 - 1) * self.vertex_stride + self.vertex_offset + 12,
        };
        if vertex_end > vertex_bytes {
            return bad(format!(
                "{} vertices need {vertex_end} bytes, the vertex buffer has {vertex_bytes}",
                self.vertex_count
            ));
        }
        let index_end = self.index_offset + self.index_count as u64 * size;
        if index_end > index_bytes {
            return bad(format!(
                "{} indices need {index_end} bytes, the index buffer has {index_bytes}",
                self.index_count
            ));
        }
        if vertex_end.max(index_end) > u32::MAX as u64 {
            return bad("buffers over 4 GiB are not supported".into());
        }
        Ok(())
    }

    /// The gather stage's parameters for `slot_count` output triangles.
    pub(crate) fn params(&self, slot_count: u32, use_order: bool) -> GatherParams {
        GatherParams {
            vertex_offset: (self.vertex_offset / 4) as u32,
            vertex_stride: (self.vertex_stride / 4) as u32,
            vertex_count: self.vertex_count,
            index_u16: u32::from(self.index_format == IndexFormat::U16),
            index_first: (self.index_offset / self.index_format.size()) as u32,
            slot_count,
            base_vertex: self.base_vertex,
            use_order: u32::from(use_order),
        }
    }
}

/// The packed triangles (in id order) of the mesh `layout` describes in CPU byte
/// slices: the CPU mirror of the GPU gather, bit for bit.
pub fn pack_slices(
    layout: &MeshLayout,
    vertices: &[u8],
    indices: &[u8],
) -> Result<Vec<PackedTriangle>> {
    layout.check(vertices.len() as u64, indices.len() as u64)?;
    let words = |bytes: &[u8]| -> Vec<u32> {
        bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    };
    let params = layout.params(layout.triangle_count() as u32, false);
    Ok(crate::cpu::gather::gather(
        &params,
        &words(vertices),
        &words(indices),
        &[],
    ))
}

/// The mesh `layout` describes in CPU byte slices, as a [`Mesh`] of the same
/// triangles (ids and positions; a triangle with an out-of-range index becomes a
/// degenerate one at the origin). Tracing it answers exactly like the same buffers
/// gathered on the GPU.
pub fn mesh_from_slices(layout: &MeshLayout, vertices: &[u8], indices: &[u8]) -> Result<Mesh> {
    Ok(mesh_from_packed(&pack_slices(layout, vertices, indices)?))
}

/// A mesh of packed triangles in id order (degenerate ones are all zeros, which
/// stays degenerate).
pub(crate) fn mesh_from_packed(packed: &[PackedTriangle]) -> Mesh {
    let triangles: Vec<[Vec3; 3]> = packed.iter().map(|t| [t.v0, t.v1, t.v2]).collect();
    Mesh::from_triangles(&triangles)
}
