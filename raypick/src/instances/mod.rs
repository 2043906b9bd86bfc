//! Instances: many meshes in one scene, each placed with an affine transform and a
//! user id, picked together.
//!
//! Every mesh gets one bottom-level BVH ([`Blas`]), built once and shared
//! (`Arc`). An [`Instance`] places a mesh with a [`glam::Mat4`]; a small top-level
//! BVH over the instances' world boxes (the TLAS, module `tlas`) finds the
//! instances a ray can reach. Moving an instance ([`InstanceScene::set_transform`])
//! refits the TLAS along one root path; no BLAS is touched. Both levels are
//! raypick's own BVHs on either backend, or on a GPU with hardware ray queries
//! ([`crate::Accel::RayQuery`]) the driver's structures, with raypick's own
//! transform and test on every candidate (`docs/contracts.md` §1.11).
//!
//! ## What a hit means
//!
//! - A ray is taken into an instance's object space by the inverse transform,
//!   origin as a point and direction as a vector, **without renormalising** the
//!   direction: `t` means the same in world and object space, so hits of different
//!   instances compare by `t` directly, and `origin + t * dir` is the world point.
//! - The nearest hit over all instances wins; **ties on equal `t` go to the lowest
//!   instance index** (position in the scene), then to the lowest triangle id, on
//!   both backends.
//! - [`InstanceHit`] reports the instance index and its user id, the triangle id,
//!   `t`, `u`, `v` (the triangle's own barycentric weights, unchanged by the
//!   transform), the world point `origin + t * dir` and the world normal: the
//!   triangle's geometric normal `cross(v1 - v0, v2 - v0)` carried by the
//!   inverse-transpose of the transform, normalised.
//! - **Culling** ([`crate::Cull`]) is decided in object space with the contract's
//!   rule: a triangle is front-facing when `dot(d_obj, cross(e1, e2)) < 0`. That
//!   equals `dot(d_world, n_world) < 0` for the reported world normal, with or
//!   without a mirror: a mirroring transform (negative determinant) reverses the
//!   apparent winding of the transformed vertices, but not the facing, so a mirrored
//!   closed mesh still shows its outer side as front faces (what renderers do when
//!   they flip the front-face winding of negative-scale instances).
//!   [`InstanceHit::front_face`] says which side was hit.
//! - Transforms must be affine (last row `0 0 0 1`), finite and invertible; anything
//!   else is an [`InstanceError`] when the instance is created or moved, never a
//!   panic. An instance of an empty mesh (or of one whose triangles are all
//!   degenerate) is kept but never hit.
//!
//! ## Culling instances and GPU limits
//!
//! A ray meets an instance only if it enters the instance's world box (the TLAS
//! leaf: the mesh BVH's root box carried by the transform, padded for rounding)
//! and then, in object space, the mesh BVH's own root boxes — an oriented-box test
//! at the cost of the ray transform; there is no separate bounding-sphere test.
//! On the GPU the mesh BVHs of all meshes share one node and one triangle buffer;
//! a scene whose buffers exceed one storage binding is refused with
//! [`InstanceError::TooLarge`] (not split), and the CPU backend traces it.
//!
//! ## Stages
//!
//! | stage | shader | CPU |
//! | --- | --- | --- |
//! | two-level traversal | `shaders/instance_traverse.wgsl` | `cpu::instance_traverse` (twin) |
//! | hardware ray queries | `shaders/instance_ray_query.wgsl` | `cpu::instance_ray_query` (its decisions) |
//!
//! The CPU backend runs the mirror's
//! top-level loop with the 8-wide CPU BVH below it; the GPU backend
//! ([`crate::gpu::GpuContext::upload_instances`], [`GpuInstanceScene`]) runs the
//! shader, and the mirror finishes the rays that run out of GPU loop steps. Both
//! give bit-identical hits.

mod blas;
mod scene;
mod tlas;
mod transform;

pub use crate::gpu::GpuInstanceScene;
pub use crate::picker::PickInstances;
pub use blas::Blas;
pub use scene::InstanceScene;
pub use transform::object_ray;

use glam::{Mat4, Vec3};

use crate::types::MISS;

/// One placement of a mesh in an [`InstanceScene`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instance {
    /// Index of the mesh (its [`Blas`]) in the scene's mesh list.
    pub mesh: usize,
    /// Object-to-world transform: affine, finite, invertible.
    pub transform: Mat4,
    /// The caller's id, reported in hits.
    pub id: u32,
}

impl Instance {
    /// An instance of mesh `mesh` placed by `transform`, with user id `id`.
    pub fn new(mesh: usize, transform: Mat4, id: u32) -> Self {
        Self {
            mesh,
            transform,
            id,
        }
    }
}

/// The nearest hit of one ray in an [`InstanceScene`].
///
/// A miss is [`InstanceHit::MISS`]: `prim`, `instance` and `id` are
/// `u32::MAX` (as in [`Hit::MISS`](crate::Hit::MISS)), `t = +inf`, every other field zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceHit {
    /// Ray parameter, in units of the (world) ray direction.
    pub t: f32,
    /// Barycentric weight of the triangle's `v1`.
    pub u: f32,
    /// Barycentric weight of the triangle's `v2`.
    pub v: f32,
    /// Triangle id in the instance's mesh.
    pub prim: u32,
    /// Index of the instance in the scene.
    pub instance: u32,
    /// The instance's user id.
    pub id: u32,
    /// World point `origin + t * dir` (f32).
    pub point: Vec3,
    /// World normal: the triangle's `cross(v1 - v0, v2 - v0)` carried by the
    /// inverse-transpose of the instance transform, normalised (evaluated in f64).
    pub normal: Vec3,
    /// Whether the ray hit the front side: `dot(dir, normal) < 0` (evaluated in f64;
    /// with [`crate::Cull::Back`] every hit is a front hit up to rounding at grazing
    /// angles).
    pub front_face: bool,
}

impl InstanceHit {
    /// The miss marker.
    pub const MISS: InstanceHit = InstanceHit {
        t: f32::INFINITY,
        u: 0.0,
        v: 0.0,
        prim: MISS,
        instance: MISS,
        id: MISS,
        point: Vec3::ZERO,
        normal: Vec3::ZERO,
        front_face: false,
    };

    /// Whether this is a hit (not the miss marker).
    pub fn is_hit(&self) -> bool {
        self.prim != MISS
    }
}

/// What is wrong with an instance scene or an instance transform.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InstanceError {
    /// A transform has a NaN or infinite entry, or its inverse does not fit f32.
    #[error("instance {instance}: the transform (or its inverse) is not finite")]
    NonFinite {
        /// Index of the instance.
        instance: usize,
    },
    /// A transform's last row is not `0 0 0 1` (a projection, not an affine map).
    #[error("instance {instance}: the transform is not affine (last row must be 0 0 0 1)")]
    NotAffine {
        /// Index of the instance.
        instance: usize,
    },
    /// A transform's linear part is singular or nearly so (it flattens space).
    #[error("instance {instance}: the transform is singular (it cannot be inverted)")]
    Singular {
        /// Index of the instance.
        instance: usize,
    },
    /// An instance names a mesh the scene does not have.
    #[error("instance {instance} uses mesh {mesh}, but the scene has {meshes} meshes")]
    UnknownMesh {
        /// Index of the instance.
        instance: usize,
        /// The mesh it names.
        mesh: usize,
        /// Number of meshes in the scene.
        meshes: usize,
    },
    /// An instance index out of range.
    #[error("no instance {instance}: the scene has {instances}")]
    NoSuchInstance {
        /// The index asked for.
        instance: usize,
        /// Number of instances in the scene.
        instances: usize,
    },
    /// More instances than an instance index can name (2^31 - 1).
    #[error("{0} instances; at most 2147483647 are supported")]
    TooManyInstances(usize),
    /// A GPU buffer of the scene is larger than one storage binding (the GPU path
    /// does not split instance scenes across bindings).
    #[error(
        "the scene's {what} take {bytes} bytes, more than one GPU storage binding ({limit} bytes)"
    )]
    TooLarge {
        /// Which buffer.
        what: &'static str,
        /// Its size.
        bytes: u64,
        /// The largest binding.
        limit: u64,
    },
}
