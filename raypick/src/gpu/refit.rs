//! Following vertex motion on the GPU.
//!
//! For a mesh uploaded from the CPU ([`GpuContext::upload`]) the refit runs on the
//! CPU ([`Bvh::refit`](crate::bvh::Bvh::refit) on the kept copy) and the new nodes
//! and triangles are written over the old buffers (no new allocation, no readback).
//! A mesh gathered from a renderer's buffers is refitted on the GPU instead (see
//! [`GpuContext::refit_gathered`]).

use std::sync::Arc;

use super::mesh::Content;
use super::{GpuContext, GpuMesh};
use crate::Mesh;
use crate::bvh::{Bvh, RefitError, Refitted};
use crate::error::{Error, Result};
use crate::prepare::pack_mesh;

impl GpuContext {
    /// Moves an uploaded mesh to `mesh`'s vertex positions (same triangles): brute
    /// force writes the packed triangles again; a BVH is refitted on the CPU copy
    /// and its buffers are overwritten in place (eight-wide nodes collapsed again
    /// from the refitted tree, in a new buffer when they take more room; or, when a triangle left out as
    /// degenerate can now be hit, built and uploaded again: [`Refitted::Rebuilt`]);
    /// a ray-query mesh's acceleration structures are built again by the driver
    /// ([`Refitted::Rebuilt`]).
    /// The next trace sees the new positions (writes are queued before any later
    /// submission).
    pub fn refit(&self, uploaded: &mut GpuMesh, mesh: &Mesh) -> Result<Refitted> {
        if uploaded.context_id != self.id {
            return Err(Error::WrongBackend);
        }
        if mesh.triangle_count() != uploaded.triangle_count() {
            return Err(RefitError::TriangleCount {
                mesh: mesh.triangle_count(),
                tree: uploaded.triangle_count(),
            }
            .into());
        }
        self.errors.check()?;
        if uploaded.gathered.is_some() {
            return Err(Error::Unsupported(
                "a mesh gathered from GPU buffers is refitted with refit_gathered".into(),
            ));
        }
        match &mut uploaded.content {
            Content::Brute(chunks) => {
                let packed = pack_mesh(mesh);
                for (chunk, tris) in chunks.iter().zip(packed.chunks(self.triangles_per_chunk())) {
                    self.queue
                        .write_buffer(&chunk.buffer, 0, bytemuck::cast_slice(tris));
                }
                uploaded.host_triangles = Some(packed.into());
            }
            Content::RayQuery(_) => {
                *uploaded = self.upload_ray_query(mesh)?;
                return Ok(Refitted::Rebuilt);
            }
            Content::Bvh {
                chunks,
                cpu,
                layout,
            } => {
                match Arc::make_mut(cpu).refit(mesh) {
                    Ok(()) => {}
                    Err(RefitError::NoLeafFor(_)) => {
                        let layout = *layout;
                        *uploaded = self.upload_bvh_as(Arc::new(Bvh::build(mesh)), layout)?;
                        return Ok(Refitted::Rebuilt);
                    }
                    Err(e) => return Err(e.into()),
                }
                let pieces = self.bvh_pieces(cpu, *layout);
                if pieces.len() != chunks.len() {
                    // Wide nodes that now keep exact boxes cut the tree differently.
                    let (tree, layout) = (cpu.clone(), *layout);
                    *uploaded = self.upload_bvh_as(tree, layout)?;
                    return Ok(Refitted::Refit);
                }
                for (buffers, piece) in chunks.iter_mut().zip(pieces) {
                    // The same tree collapsed eight-wide may take more nodes.
                    let nodes = piece.nodes.bytes();
                    if nodes.len() as u64 > buffers.nodes.size() {
                        buffers.nodes = self.scoped(|| self.storage("raypick bvh nodes", nodes))?;
                    } else if !nodes.is_empty() {
                        self.queue.write_buffer(&buffers.nodes, 0, nodes);
                    }
                    if !piece.triangles.is_empty() {
                        self.queue.write_buffer(
                            &buffers.triangles,
                            0,
                            bytemuck::cast_slice(&piece.triangles),
                        );
                    }
                }
            }
        }
        self.errors.check()?;
        Ok(Refitted::Refit)
    }
}
