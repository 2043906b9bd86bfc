//! Meshes uploaded to the GPU once and reused across ray batches.

use std::sync::Arc;

use super::GpuContext;
use super::ray_query::RayQueryMesh;
use crate::Mesh;
use crate::bvh::Bvh;
use crate::cpu::CpuMesh;
use crate::cpu::brute_force::TriangleBlocks;
use crate::cpu::wide_bvh::WideBvh;
use crate::cpu::wide_nodes::WideNodes;
use crate::error::Result;
use crate::options::{Accel, NodeLayout};
use crate::prepare::pack_mesh;
use crate::types::{BvhNode, PackedTriangle};

/// A run of consecutive triangles in one storage buffer (brute force).
#[derive(Clone, Debug)]
pub(crate) struct TriangleChunk {
    pub(crate) buffer: wgpu::Buffer,
    /// Id of the first triangle.
    pub(crate) base: u32,
    /// Number of triangles.
    pub(crate) count: u32,
}

/// One self-contained piece of a BVH in GPU memory: its nodes (of the mesh's
/// [`NodeLayout`]) and the triangles its leaves refer to.
#[derive(Clone, Debug)]
pub(crate) struct BvhBuffers {
    pub(crate) nodes: wgpu::Buffer,
    pub(crate) triangles: wgpu::Buffer,
}

/// One piece of a BVH ready to upload: its nodes and triangles.
pub(crate) struct BvhPiece {
    pub(crate) nodes: PieceNodes,
    pub(crate) triangles: Vec<PackedTriangle>,
}

/// The nodes of a [`BvhPiece`] in their layout.
pub(crate) enum PieceNodes {
    Binary(Vec<BvhNode>),
    /// [`WideNodes::gpu_rows`].
    Wide(Vec<[u32; 4]>),
}

impl PieceNodes {
    /// The node buffer's contents.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            PieceNodes::Binary(nodes) => bytemuck::cast_slice(nodes),
            PieceNodes::Wide(rows) => bytemuck::cast_slice(rows),
        }
    }
}

/// What a mesh holds on the GPU.
#[derive(Clone, Debug)]
pub(crate) enum Content {
    /// Triangles in id order, split across buffers of at most one binding.
    Brute(Vec<TriangleChunk>),
    /// A BVH, split into chunks of at most one binding each, its nodes in `layout`;
    /// the CPU copy finishes rays that run out of traversal steps (or stack).
    Bvh {
        chunks: Vec<BvhBuffers>,
        cpu: Arc<Bvh>,
        layout: NodeLayout,
    },
    /// The driver's acceleration structures over one box per triangle, and the
    /// host copy that finishes rays on the CPU.
    RayQuery(RayQueryMesh),
}

impl Content {
    /// Whether there is nothing on the GPU to hit (no dispatch needed: every ray
    /// misses). A BVH always has a root.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Content::Brute(chunks) => chunks.is_empty(),
            Content::Bvh { .. } => false,
            Content::RayQuery(mesh) => mesh.chunks.is_empty(),
        }
    }
}

/// A mesh in GPU memory: the packed triangles for brute force, a BVH, or the
/// driver's acceleration structures for hardware ray queries.
///
/// It also keeps a host copy (the packed triangles, or the BVH the CPU finishes long
/// traversals with), so that the mesh can still be traced on the CPU after the device
/// is lost ([`GpuMesh::to_cpu_mesh`]).
#[derive(Debug)]
pub struct GpuMesh {
    pub(crate) content: Content,
    pub(crate) context_id: u64,
    pub(crate) triangle_count: usize,
    /// Brute force: the packed triangles in id order (a BVH keeps its own copy).
    pub(crate) host_triangles: Option<Arc<[PackedTriangle]>>,
    /// Set for a mesh read from a renderer's buffers (what a GPU refit needs).
    pub(crate) gathered: Option<Box<super::gather::Gathered>>,
}

impl GpuMesh {
    /// Number of triangles of the mesh.
    pub fn triangle_count(&self) -> usize {
        self.triangle_count
    }

    /// The acceleration structure.
    pub fn accel(&self) -> Accel {
        match self.content {
            Content::Brute(_) => Accel::Brute,
            Content::Bvh { .. } => Accel::Bvh,
            Content::RayQuery(_) => Accel::RayQuery,
        }
    }

    /// The node layout of a BVH mesh ([`Accel::Bvh`]); `None` for the others.
    pub fn node_layout(&self) -> Option<NodeLayout> {
        match self.content {
            Content::Bvh { layout, .. } => Some(layout),
            _ => None,
        }
    }

    /// Bytes of GPU memory held in raypick's buffers (for ray queries, the driver's
    /// acceleration structures come on top: wgpu does not report their size).
    pub fn size_bytes(&self) -> u64 {
        match &self.content {
            Content::Brute(chunks) => chunks.iter().map(|c| c.buffer.size()).sum(),
            Content::Bvh { chunks, .. } => chunks
                .iter()
                .map(|c| c.nodes.size() + c.triangles.size())
                .sum(),
            Content::RayQuery(mesh) => mesh.size_bytes(),
        }
    }

    /// The same mesh prepared for the CPU backend, from the host copy (no GPU access;
    /// a ray-query mesh's BVH is built from its triangles).
    pub fn to_cpu_mesh(&self) -> CpuMesh {
        match (&self.content, &self.host_triangles) {
            (Content::Bvh { cpu, .. }, _) => CpuMesh::Bvh(WideBvh::from_bvh(cpu)),
            (Content::RayQuery(mesh), _) => CpuMesh::Bvh(WideBvh::from_bvh(&mesh.bvh())),
            (Content::Brute(_), Some(triangles)) => CpuMesh::Brute(TriangleBlocks::new(triangles)),
            (Content::Brute(_), None) => CpuMesh::Brute(TriangleBlocks::new(&[])),
        }
    }

    /// Number of pieces the mesh is split into so that each fits one storage binding
    /// (and, for ray queries, one acceleration structure).
    pub fn buffer_count(&self) -> usize {
        match &self.content {
            Content::Brute(chunks) => chunks.len(),
            Content::Bvh { chunks, .. } => chunks.len(),
            Content::RayQuery(mesh) => mesh.chunks.len(),
        }
    }
}

impl GpuContext {
    /// Uploads a mesh with this device's default acceleration structure
    /// ([`GpuContext::default_accel`]: hardware ray queries on a GPU that has them,
    /// else a BVH built on the CPU).
    pub fn upload(&self, mesh: &Mesh) -> Result<GpuMesh> {
        self.upload_with(mesh, self.default_accel())
    }

    /// Uploads a mesh for the given acceleration structure. [`Accel::RayQuery`] fails
    /// with [`Error::NoRayQueries`](crate::Error::NoRayQueries) unless
    /// [`GpuContext::has_ray_queries`].
    pub fn upload_with(&self, mesh: &Mesh, accel: Accel) -> Result<GpuMesh> {
        match accel {
            Accel::Brute => self.upload_packed(&pack_mesh(mesh)),
            Accel::Bvh => self.upload_bvh(Arc::new(Bvh::build(mesh))),
            Accel::RayQuery => self.upload_ray_query(mesh),
        }
    }

    /// Uploads already packed triangles for brute force (one packed triangle per mesh triangle, in id order).
    pub fn upload_packed(&self, triangles: &[PackedTriangle]) -> Result<GpuMesh> {
        self.errors.check()?;
        self.check_mesh_bytes(std::mem::size_of_val(triangles) as u64)?;
        let per_chunk = self.triangles_per_chunk();
        let chunks = self.scoped(|| {
            triangles
                .chunks(per_chunk)
                .enumerate()
                .map(|(i, chunk)| TriangleChunk {
                    buffer: self.storage("raypick triangles", bytemuck::cast_slice(chunk)),
                    base: (i * per_chunk) as u32,
                    count: chunk.len() as u32,
                })
                .collect()
        })?;
        Ok(GpuMesh {
            content: Content::Brute(chunks),
            context_id: self.id,
            triangle_count: triangles.len(),
            host_triangles: Some(triangles.into()),
            gathered: None,
        })
    }

    /// Uploads a BVH built on the CPU (shared, so the caller can keep tracing it on
    /// the CPU too) in the context's node layout ([`GpuContext::node_layout`]). A
    /// BVH larger than one storage binding is split into subtrees.
    pub fn upload_bvh(&self, bvh: Arc<Bvh>) -> Result<GpuMesh> {
        self.upload_bvh_as(bvh, self.node_layout())
    }

    /// Uploads a BVH built on the CPU with its nodes in `layout`. Both layouts give
    /// the same hits; [`NodeLayout::Binary`] is there to compare them.
    pub fn upload_bvh_as(&self, bvh: Arc<Bvh>, layout: NodeLayout) -> Result<GpuMesh> {
        self.errors.check()?;
        let pieces = self.bvh_pieces(&bvh, layout);
        self.check_mesh_bytes(
            pieces
                .iter()
                .map(|p| p.nodes.bytes().len() + std::mem::size_of_val(&p.triangles[..]))
                .sum::<usize>() as u64,
        )?;
        let chunks = self.scoped(|| {
            pieces
                .iter()
                .map(|piece| BvhBuffers {
                    nodes: self.storage("raypick bvh nodes", piece.nodes.bytes()),
                    triangles: self.storage(
                        "raypick bvh triangles",
                        bytemuck::cast_slice(&piece.triangles),
                    ),
                })
                .collect()
        })?;
        Ok(GpuMesh {
            content: Content::Bvh {
                chunks,
                cpu: bvh.clone(),
                layout,
            },
            context_id: self.id,
            triangle_count: bvh.mesh_triangle_count(),
            host_triangles: None,
            gathered: None,
        })
    }

    /// The BVH in pieces of at most one storage binding each, binary nodes.
    pub(crate) fn split_bvh(&self, bvh: &Bvh) -> Vec<crate::bvh::BvhChunk> {
        self.split_bvh_nodes(bvh, size_of::<BvhNode>())
    }

    /// The BVH in pieces of at most `node_bytes` per binary node (and one binding of
    /// triangles) each.
    fn split_bvh_nodes(&self, bvh: &Bvh, node_bytes: usize) -> Vec<crate::bvh::BvhChunk> {
        let bytes = self.max_binding_bytes() as usize;
        bvh.split(
            (bytes / node_bytes).max(1),
            (bytes / size_of::<PackedTriangle>()).max(1),
        )
    }

    /// The BVH in pieces whose nodes in `layout` fit one storage binding each.
    ///
    /// A wide tree has fewer nodes than the binary one it is collapsed from, but a
    /// node that keeps exact boxes takes more bytes than the binary nodes it
    /// replaces, so pieces are first cut as for binary nodes and cut smaller while
    /// one does not fit.
    pub(crate) fn bvh_pieces(&self, bvh: &Bvh, layout: NodeLayout) -> Vec<BvhPiece> {
        let bytes = self.max_binding_bytes() as usize;
        let mut node_bytes = size_of::<BvhNode>();
        loop {
            let chunks = self.split_bvh_nodes(bvh, node_bytes);
            let pieces: Vec<BvhPiece> = chunks
                .into_iter()
                .map(|chunk| BvhPiece {
                    nodes: match layout {
                        NodeLayout::Binary => PieceNodes::Binary(chunk.nodes),
                        NodeLayout::Wide => {
                            PieceNodes::Wide(WideNodes::from_nodes(&chunk.nodes).gpu_rows())
                        }
                    },
                    triangles: chunk.triangles,
                })
                .collect();
            let fits = pieces.iter().all(|p| p.nodes.bytes().len() <= bytes);
            if fits || node_bytes >= bytes {
                return pieces;
            }
            node_bytes *= 2;
        }
    }

    /// Triangles per brute-force chunk (one storage binding).
    pub(crate) fn triangles_per_chunk(&self) -> usize {
        (self.max_binding_bytes() as usize / std::mem::size_of::<PackedTriangle>()).max(1)
    }

    /// A read-only storage buffer holding `contents` (at least one 64-byte element:
    /// a binding smaller than the shader's array element is invalid).
    pub(crate) fn storage(&self, label: &str, contents: &[u8]) -> wgpu::Buffer {
        let padding = [0u8; 64];
        let contents = if contents.is_empty() {
            &padding[..]
        } else {
            contents
        };
        self.filled(label, contents, wgpu::BufferUsages::STORAGE)
    }

    /// A buffer of `usage` holding `contents` (not empty).
    ///
    /// The buffer is filled through the queue rather than mapped at creation: a
    /// buffer that could not be created (out of memory, lost device) is then an error
    /// the surrounding error scope reports, not a panic inside wgpu.
    pub(crate) fn filled(
        &self,
        label: &str,
        contents: &[u8],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: contents.len() as u64,
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&buffer, 0, contents);
        buffer
    }
}
