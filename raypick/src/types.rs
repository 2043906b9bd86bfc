//! GPU-visible structs, shared bit for bit with `shaders/types.wgsl`.
//!
//! Every struct here is `#[repr(C)]`, [`Pod`], has explicit padding and a
//! compile-time size assert. The test `tests/layout.rs` parses the WGSL with naga
//! and checks each struct's size and member offsets against these definitions.

use bytemuck::{Pod, Zeroable};
use glam::{Vec3, Vec4};

/// Triangle id reported for a ray that hits nothing.
pub const MISS: u32 = u32::MAX;

/// A ray `o + t*d` restricted to `t` in `[tmin, tmax]`.
///
/// The memory layout (8 × f32: `ox oy oz tmin dx dy dz tmax`) is also the layout of
/// the `.rays` file format. The direction need not be unit length; `t` is measured in
/// units of `dir`. A ray with a non-finite or zero-length direction, a non-finite
/// origin, or a NaN bound never hits anything.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Ray {
    /// Ray origin.
    pub origin: Vec3,
    /// Smallest accepted `t` (inclusive).
    pub tmin: f32,
    /// Ray direction (need not be normalised).
    pub dir: Vec3,
    /// Largest accepted `t` (inclusive); may be `+inf`.
    pub tmax: f32,
}

impl Ray {
    /// A ray over `[0, +inf]`.
    pub fn new(origin: Vec3, dir: Vec3) -> Self {
        Self::with_interval(origin, dir, 0.0, f32::INFINITY)
    }

    /// A ray over `[tmin, tmax]`.
    pub fn with_interval(origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) -> Self {
        Self {
            origin,
            tmin,
            dir,
            tmax,
        }
    }

    /// The point `origin + t * dir`.
    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + t * self.dir
    }
}

/// The nearest hit of one ray.
///
/// Hit point = `(1-u-v)*v0 + u*v1 + v*v2` = `origin + t*dir`. A miss has
/// `prim == MISS`, `t == +inf` and `u == v == 0` (see [`Hit::MISS`]).
/// The memory layout (16 bytes) is also the layout of the `.hits` file format.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Hit {
    /// Ray parameter of the hit, in units of the ray direction.
    pub t: f32,
    /// Barycentric weight of the triangle's second vertex `v1`.
    pub u: f32,
    /// Barycentric weight of the triangle's third vertex `v2`.
    pub v: f32,
    /// Triangle id (index in the mesh), or `u32::MAX` on a miss ([`Hit::MISS`]).
    pub prim: u32,
}

impl Hit {
    /// The miss marker.
    pub const MISS: Hit = Hit {
        t: f32::INFINITY,
        u: 0.0,
        v: 0.0,
        prim: MISS,
    };

    /// Whether this is a hit (not the miss marker).
    pub fn is_hit(&self) -> bool {
        self.prim != MISS
    }
}

/// A triangle as the intersection kernels read it: its three vertices, exactly as
/// the mesh gives them (the watertight test needs the very same vertex values in
/// every triangle that shares them; the fast test derives its edges from them).
///
/// Degenerate triangles (zero area or non-finite coordinates) are stored with all
/// geometry zero, so their determinant is exactly zero and they never hit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PackedTriangle {
    /// First vertex.
    pub v0: Vec3,
    /// The triangle's id in the caller's mesh (a BVH reorders triangles).
    pub id: u32,
    /// Second vertex.
    pub v1: Vec3,
    /// `|v1 - v0|₁ · |v2 - v0|₁`: scales the determinant tolerance (see
    /// `shaders/intersect.wgsl`).
    pub edge_norm: f32,
    /// Third vertex.
    pub v2: Vec3,
    /// Padding to 16 bytes.
    pub _pad2: u32,
}

/// Per-dispatch parameters of the brute-force kernel (a uniform buffer).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TraceParams {
    /// Number of rays in this dispatch.
    pub ray_count: u32,
    /// Number of triangles tested in this dispatch.
    pub tri_count: u32,
    /// Triangle id of the first triangle tested in this dispatch.
    pub tri_base: u32,
    /// Culling mode: 0 none, 1 back, 2 front (see [`crate::Cull`]).
    pub cull: u32,
    /// 1 when the hit buffer already holds the best hit of earlier triangle chunks.
    pub accumulate: u32,
    /// The `t` written for a miss (`+inf`; WGSL has no infinity literal).
    pub miss_t: f32,
    /// Always 1.0, unknown to the shader compiler: the zero bits of its difference
    /// from 1.0 keep products from being fused or rewritten (`rounded` in
    /// `shaders/intersect.wgsl`).
    pub one: f32,
    /// Index in the bound triangle buffer of the first triangle of this dispatch.
    pub tri_first: u32,
    /// Triangle test: 0 fast, 1 watertight (see [`crate::Mode`]). The brute-force
    /// shader is compiled per test (its `MODE` pipeline constant) and does not read
    /// it; it is set to the same value.
    pub mode: u32,
    /// Slots per ray of the all-hits list (`QUERY_ALL` in `types.wgsl`).
    pub max_hits: u32,
    /// Triangles per workgroup row when the dispatch's triangles are split across
    /// rows of workgroups (each row's nearest hits into the list buffer, merged by
    /// `brute_force_merge`); 0 when they are not.
    pub chunk_size: u32,
    /// Padding to 16 bytes.
    pub _pad2: u32,
}

/// What a traversal keeps of the hits it finds: `QUERY`, a pipeline constant of both
/// traversal stages (`QUERY_CLOSEST`, `QUERY_ANY`, `QUERY_ALL` in `types.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Query {
    /// The nearest hit per ray.
    Closest = 0,
    /// Whether a ray hits anything (stops at the first accepted hit).
    Any = 1,
    /// The `max_hits` nearest hits per ray, sorted by `(t, id)`.
    All = 2,
}

impl Query {
    /// Every query, in discriminant order (for the layout test).
    #[cfg(any(test, feature = "kernels"))]
    pub const ALL: [Query; 3] = [Query::Closest, Query::Any, Query::All];
}

/// Flag in the per-ray state of the all-hits query: more hits exist than the list
/// holds. The rest of the state is the number of hits in the list.
pub const LIST_TRUNCATED: u32 = 0x8000_0000;

/// Marks an empty [`BvhChild`] slot.
pub const EMPTY_CHILD: u32 = u32::MAX;

/// One child of a [`BvhNode`]: its bounding box and where its content is.
///
/// `count == 0`: an interior node, `index` is its position in the node array.
/// `count > 0`: a leaf of `count` triangles starting at `index` in the BVH's triangle
/// array. An empty slot has `index == EMPTY_CHILD` and `count == 0`; traversal
/// never enters it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BvhChild {
    /// Box minimum (padded outward so that box tests are conservative).
    pub lo: Vec3,
    /// Node index (interior) or first triangle (leaf).
    pub index: u32,
    /// Box maximum (padded outward).
    pub hi: Vec3,
    /// Triangle count of a leaf; 0 for an interior node or an empty slot.
    pub count: u32,
}

impl BvhChild {
    /// An empty slot (with an inverted box, so it bounds nothing).
    pub const EMPTY: BvhChild = BvhChild {
        lo: Vec3::splat(f32::MAX),
        index: EMPTY_CHILD,
        hi: Vec3::splat(-f32::MAX),
        count: 0,
    };

    /// Whether this child is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.count > 0
    }

    /// Whether this slot is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0 && self.index == EMPTY_CHILD
    }
}

/// A BVH node as both backends read it: the boxes of its two children (64 bytes).
/// Node 0 is the root; traversal tests both child boxes with one node fetch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BvhNode {
    /// The two children.
    pub children: [BvhChild; 2],
}

/// An eight-wide BVH node as the GPU's wide traversal reads it (128 bytes;
/// [`NodeLayout::Wide`](crate::NodeLayout)): children's boxes quantized to 8 bits
/// per plane relative to the node's box, what each child is, and where exact boxes
/// are kept when quantized ones cannot hold the children's.
///
/// Child `c`'s box is `origin + q * step` per axis, with `q` byte `c % 4` (lowest
/// first) of word `c / 4` of that axis's pair of words in `lo` (minima) or `hi`
/// (maxima); `step` is a power of two, so the product is exact.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WideBvhNode {
    /// Minimum corner of the node's box.
    pub origin: Vec3,
    /// First 16-byte row of the node's exact boxes in the node buffer (8 minima per
    /// axis, then 8 maxima per axis, as `f32`), or [`EMPTY_CHILD`] when the quantized
    /// boxes hold.
    pub exact: u32,
    /// Quantization step per axis (a power of two).
    pub step: Vec3,
    /// Unused (zero).
    pub _pad0: u32,
    /// Box minima in steps from `origin`: two words per axis, a byte per child.
    pub lo: [u32; 6],
    /// Box maxima in steps from `origin` (rounded up), laid out as `lo`.
    pub hi: [u32; 6],
    /// Node index (interior child), first triangle (leaf), or [`EMPTY_CHILD`].
    pub child: [u32; 8],
    /// Triangles of each leaf child, a byte per child (0: interior or unused).
    pub count: [u32; 2],
    /// Unused (zero).
    pub _pad1: [u32; 2],
}

/// Per-dispatch parameters of the traversal stages: BVH, instances and ray queries
/// (a uniform buffer).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TraverseParams {
    /// Number of rays in this dispatch.
    pub ray_count: u32,
    /// Culling mode: 0 none, 1 back, 2 front (see [`crate::Cull`]).
    pub cull: u32,
    /// 1 when the hit buffer already holds the best hit of earlier chunks of the mesh.
    pub accumulate: u32,
    /// The `t` written for a miss (`+inf`).
    pub miss_t: f32,
    /// Always 1.0 (see [`TraceParams::one`]).
    pub one: f32,
    /// Most loop steps one ray may take (BVH: node visits plus triangle tests; ray
    /// queries: candidate boxes; plus moves of listed hits); a ray that needs more is
    /// reported unfinished and completed on the CPU.
    pub max_steps: u32,
    /// Slots per ray of the all-hits list (`QUERY_ALL` in `types.wgsl`).
    pub max_hits: u32,
    /// Ray queries only: rays whose origin has a coordinate larger than this in
    /// magnitude are reported unfinished and completed on the CPU (see
    /// `cpu::ray_query::far_limit`); `+inf` for the other stages, which do not read it.
    pub far_limit: f32,
    /// Eight-wide BVH traversal only: most entries of one ray's stack (at most the
    /// shader's 64); a ray that needs more is reported unfinished and completed on
    /// the CPU.
    pub max_stack: u32,
    /// Unused (zero).
    pub _pad0: u32,
    /// Unused (zero).
    pub _pad1: u32,
    /// Unused (zero).
    pub _pad2: u32,
}

/// One instance as the two-level traversal reads it (64 bytes): the rows of its
/// inverse (object-from-world) affine transform and where its mesh's BVH starts in
/// the scene's concatenated node and triangle arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PackedInstance {
    /// Object `x = inv0.x * wx + inv0.y * wy + inv0.z * wz + inv0.w`.
    pub inv0: Vec4,
    /// Row for object `y`.
    pub inv1: Vec4,
    /// Row for object `z`.
    pub inv2: Vec4,
    /// Index of the mesh BVH's root in the node array.
    pub node_offset: u32,
    /// Index of the mesh BVH's first triangle in the triangle array.
    pub tri_offset: u32,
    /// Nodes of the mesh BVH (0: the mesh has nothing to hit).
    pub node_count: u32,
    /// Padding to 16 bytes.
    pub _pad0: u32,
}

/// The nearest hit of one ray in an instance scene as the traversal writes it
/// (32 bytes): `t`, `u`, `v` and triangle id as in [`Hit`], and the instance index.
/// A miss has `prim == instance == MISS`, `t == +inf`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct InstanceHitRecord {
    /// Ray parameter.
    pub t: f32,
    /// Barycentric weight of `v1`.
    pub u: f32,
    /// Barycentric weight of `v2`.
    pub v: f32,
    /// Triangle id in the instance's mesh, or [`MISS`].
    pub prim: u32,
    /// Instance index in the scene, or [`MISS`].
    pub instance: u32,
    /// Padding to 16 bytes.
    pub _pad0: u32,
    /// Padding to 16 bytes.
    pub _pad1: u32,
    /// Padding to 16 bytes.
    pub _pad2: u32,
}

impl InstanceHitRecord {
    /// The miss marker.
    pub const MISS: InstanceHitRecord = InstanceHitRecord {
        t: f32::INFINITY,
        u: 0.0,
        v: 0.0,
        prim: MISS,
        instance: MISS,
        _pad0: 0,
        _pad1: 0,
        _pad2: 0,
    };
}

const _: () = assert!(std::mem::size_of::<Ray>() == 32);
const _: () = assert!(std::mem::size_of::<BvhChild>() == 32);
const _: () = assert!(std::mem::size_of::<BvhNode>() == 64);
const _: () = assert!(std::mem::size_of::<TraverseParams>() == 48);
const _: () = assert!(std::mem::size_of::<WideBvhNode>() == 128);
const _: () = assert!(std::mem::size_of::<Hit>() == 16);
const _: () = assert!(std::mem::size_of::<PackedTriangle>() == 48);
const _: () = assert!(std::mem::size_of::<TraceParams>() == 48);
const _: () = assert!(std::mem::align_of::<Ray>() == 4);
const _: () = assert!(std::mem::size_of::<PackedInstance>() == 64);
const _: () = assert!(std::mem::size_of::<InstanceHitRecord>() == 32);

/// Parameters of the gather stage (`shaders/gather.wgsl`, a uniform buffer): how to
/// read triangles from a renderer's vertex and index buffers (see
/// [`crate::gather::MeshLayout`]). Offsets and strides are in 4-byte words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GatherParams {
    /// Word of the first vertex's position in the vertex buffer.
    pub vertex_offset: u32,
    /// Words from one vertex's position to the next.
    pub vertex_stride: u32,
    /// Vertices that may be referenced (an index + base vertex at or past this is
    /// out of range).
    pub vertex_count: u32,
    /// 1 for 16-bit indices, 0 for 32-bit.
    pub index_u16: u32,
    /// Position (in indices, not bytes) of the first index in the index buffer.
    pub index_first: u32,
    /// Output slots (triangles written) of this dispatch.
    pub slot_count: u32,
    /// Added to every index (may be negative), as in an indexed draw.
    pub base_vertex: i32,
    /// 1: slot `j` takes triangle `order[j]`; 0: slot `j` takes triangle `j`.
    pub use_order: u32,
}

/// Parameters of one refit dispatch (`shaders/refit.wgsl`, a uniform buffer): the
/// nodes of one tree level.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RefitParams {
    /// First entry of this level in the level node list.
    pub first: u32,
    /// Nodes in this level.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad0: u32,
    /// Padding to 16 bytes.
    pub _pad1: u32,
}

const _: () = assert!(std::mem::size_of::<GatherParams>() == 32);
const _: () = assert!(std::mem::size_of::<RefitParams>() == 16);
