//! Small value types that select how rays are traced.

/// Which triangles may be hit, by facing.
///
/// A triangle is *front-facing* to a ray when `dot(dir, cross(v1 - v0, v2 - v0)) < 0`,
/// i.e. its vertices appear counter-clockwise seen from the ray origin.
///
/// The discriminants are the values the shaders read (`CULL_NONE`, `CULL_BACK`,
/// `CULL_FRONT` in `types.wgsl`; `Cull::Back as u32`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Cull {
    /// Double-sided: every triangle can be hit.
    #[default]
    None = 0,
    /// Back faces are skipped: only front-facing triangles are hit.
    Back = 1,
    /// Front faces are skipped: only back-facing triangles are hit.
    Front = 2,
}

impl Cull {
    /// The culling whose discriminant is `bits` (`None` for any other value): how
    /// kernels specialised on a `const CULL: u32` name it again.
    pub(crate) const fn from_bits(bits: u32) -> Cull {
        match bits {
            1 => Cull::Back,
            2 => Cull::Front,
            _ => Cull::None,
        }
    }
}

/// Which ray–triangle test decides hits. Both keep the hit contract (same `t`, `u`,
/// `v` meaning, ties to the lowest id) and give identical answers on CPU and GPU.
///
/// The default is [`Mode::Watertight`]: a pick that slips through a shared edge selects
/// the wrong object, and measured on coplanar triangle pairs the fast test lets about
/// 4 % of rays through an exact edge point pass (the watertight test: none). It costs
/// nothing measurable on the GPU (lavapipe brute force 102 vs 102 M tests/s) and
/// 0.57× / 0.79× of the fast test's rate on the CPU BVH (1M triangles, camera /
/// incoherent rays, 2 threads; `cargo bench --bench main -- mode_cost`). Choose
/// [`Mode::Fast`] for CPU throughput when edge-exactness does not matter.
///
/// The discriminants are the values the shaders read (`MODE_FAST`, `MODE_WATERTIGHT`
/// in `types.wgsl`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Mode {
    /// Möller–Trumbore: the determinant test on edge vectors. A ray aimed exactly at
    /// an edge or vertex shared by several triangles can slip through all of them,
    /// because each triangle rounds its own edge vectors.
    Fast = 0,
    /// Watertight (Woop, Benthin, Wald 2013): vertices are moved into a sheared frame
    /// where the ray runs along +z, and 2D edge functions decide inside-ness. A shared
    /// edge's function is computed from the same two vertex values in both triangles
    /// and flips sign exactly between them, and an exactly-zero edge function is
    /// recomputed exactly, so a ray can never pass between triangles that share an
    /// edge or a vertex.
    #[default]
    Watertight = 1,
}

/// How each ray finds its candidate triangles; chosen when a mesh is uploaded.
///
/// Every structure gives the same hits bit for bit (`docs/contracts.md` §1); they
/// differ in speed and in where they run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Accel {
    /// A bounding volume hierarchy (a SAH tree, depth-bounded) built on the CPU and
    /// traversed by raypick's own code on either backend: what runs everywhere, and
    /// what [`Picker::upload`](crate::Picker::upload) gives a mesh except on a hardware
    /// GPU with ray queries ([`Picker::default_accel`](crate::Picker::default_accel)).
    /// `Accel::default()`.
    #[default]
    Bvh,
    /// Every ray against every triangle: the reference, O(rays × triangles).
    Brute,
    /// The GPU's hardware ray queries: the driver builds an acceleration structure
    /// over one box per triangle and finds the boxes a ray crosses; raypick's own
    /// triangle test decides each hit, so the answers are the BVH's. Needs a GPU
    /// context whose adapter offers `wgpu::Features::EXPERIMENTAL_RAY_QUERY`
    /// ([`GpuContext::has_ray_queries`](crate::gpu::GpuContext::has_ray_queries));
    /// elsewhere (the CPU backend, a GPU without ray queries) preparing a mesh with it
    /// fails with [`Error::NoRayQueries`](crate::Error::NoRayQueries). Rays from
    /// farther than 16 mesh magnitudes, and rays meeting too many boxes, are finished
    /// on the CPU. What [`Picker::upload`](crate::Picker::upload) chooses on a hardware
    /// GPU that has ray queries; a software adapter's ray queries (lavapipe's run at
    /// about a tenth of the BVH's rate) are used only when named. The exact answers
    /// rest on the driver's box test being conservative (reporting every box a ray
    /// crosses, as Vulkan allows no less; `docs/contracts.md` §1.11). Instance scenes
    /// take it too
    /// ([`Picker::upload_instances_with`](crate::Picker::upload_instances_with)),
    /// with rays from beyond the scene's far limit finished on the CPU.
    RayQuery,
}

/// The BVH node layout of a mesh traversed by the GPU's compute shaders
/// ([`Accel::Bvh`]). Both give the same hits bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum NodeLayout {
    /// Two children per node, boxes as `f32` (64 bytes a node): the faster kernel
    /// on the hardware GPU and the software adapter measured
    /// (docs/performance.md), so what an uploaded mesh gets, and what a mesh read
    /// from a renderer's buffers is traversed with, as the GPU refits its boxes in
    /// place.
    /// `NodeLayout::default()`.
    #[default]
    Binary,
    /// Eight children per node, boxes quantized outward to 8 bits per plane (128
    /// bytes a node): fewer node visits and fewer bytes read per ray, for eight
    /// boxes decoded at every node.
    Wide,
}

impl NodeLayout {
    /// Bytes of one node.
    pub fn node_bytes(self) -> usize {
        match self {
            NodeLayout::Binary => size_of::<crate::types::BvhNode>(),
            NodeLayout::Wide => size_of::<crate::types::WideBvhNode>(),
        }
    }
}

/// Options for one trace call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceOptions {
    /// Face culling.
    pub cull: Cull,
    /// The ray–triangle test.
    pub mode: Mode,
}

impl TraceOptions {
    /// Options with the given ray–triangle test.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Options with the given culling mode.
    pub fn with_cull(mut self, cull: Cull) -> Self {
        self.cull = cull;
        self
    }
}

/// Names of a selector enum's values, as the command line, reports and
/// configuration spell them (`Display` writes the name, `FromStr` reads it).
macro_rules! named_values {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value's name: lower case, as `FromStr` reads it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = crate::Error;

            fn from_str(s: &str) -> crate::Result<Self> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|value| value.name() == s)
                    .ok_or_else(|| {
                        let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                        crate::Error::UnknownName {
                            what: $what,
                            name: s.to_string(),
                            expected: names.join(", "),
                        }
                    })
            }
        }
    };
}
pub(crate) use named_values;

named_values!(Cull, "culling mode", { None => "none", Back => "back", Front => "front" });
named_values!(Mode, "ray-triangle test", { Fast => "fast", Watertight => "watertight" });
named_values!(NodeLayout, "node layout", { Binary => "binary", Wide => "wide" });
named_values!(Accel, "acceleration structure", {
    Bvh => "bvh",
    Brute => "brute",
    RayQuery => "ray-query",
});
