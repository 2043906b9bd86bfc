//! Small value types that select how rays are traced.

/// Which triangles may be hit, by facing.
///
/// A triangle is *front-facing* to a ray when `dot(dir, cross(v1 - v0, v2 - v0)) < 0`,
/// i.e. its vertices appear counter-clockwise seen from the ray origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Cull {
    /// Double-sided: every triangle can be hit.
    #[default]
    None,
    /// Back faces are skipped: only front-facing triangles are hit.
    Back,
    /// Front faces are skipped: only back-facing triangles are hit.
    Front,
}

impl Cull {
    /// The value the shaders read (`CULL_NONE`, `CULL_BACK`, `CULL_FRONT` in `types.wgsl`).
    pub const fn to_u32(self) -> u32 {
        match self {
            Cull::None => 0,
            Cull::Back => 1,
            Cull::Front => 2,
        }
    }
}

/// How each ray finds its candidate triangles; chosen when a mesh is uploaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Accel {
    /// A bounding volume hierarchy ([`crate::bvh::Bvh`]): the default.
    #[default]
    Bvh,
    /// Every ray against every triangle: the reference, O(rays × triangles).
    Brute,
}

/// Options for one trace call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceOptions {
    /// Face culling.
    pub cull: Cull,
}

impl TraceOptions {
    /// Options with the given culling mode.
    pub fn with_cull(mut self, cull: Cull) -> Self {
        self.cull = cull;
        self
    }
}
