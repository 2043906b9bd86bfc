//! WGSL sources of the compute stages.
//!
//! WGSL has no `#include`, so each stage is assembled here from the shared struct file
//! (`shaders/types.wgsl`), the shared functions it uses and its own file.

/// Structs and constants shared by every stage (mirrors `src/types.rs`).
pub const TYPES: &str = include_str!("../shaders/types.wgsl");
/// The ray–triangle test: per-ray set-up, choice of test, acceptance (mirrored by
/// `src/cpu/intersect.rs`).
pub const INTERSECT: &str = include_str!("../shaders/intersect.wgsl");
/// The fast test (mirrored by `src/cpu/moller_trumbore.rs`).
pub const MOLLER_TRUMBORE: &str = include_str!("../shaders/moller_trumbore.wgsl");
/// The watertight test (mirrored by `src/cpu/watertight.rs`).
pub const WATERTIGHT: &str = include_str!("../shaders/watertight.wgsl");
/// The sorted hit list of the all-hits query (mirrored by `src/cpu/hit_list.rs`).
pub const HIT_LIST: &str = include_str!("../shaders/hit_list.wgsl");
/// The brute-force stage (mirrored by `src/cpu/brute_force.rs`).
pub const BRUTE_FORCE: &str = include_str!("../shaders/brute_force.wgsl");

/// The steps of a BVH walk shared by the traversal stages: the stack and step
/// count of every one, the binary node visit of the BVH stage (mirrored by
/// `src/cpu/bvh_traverse.rs`).
pub const BVH_WALK: &str = include_str!("../shaders/bvh_walk.wgsl");

/// What the BVH traversals keep of the hits they find (mirrored by
/// `src/cpu/query.rs`).
pub const QUERY: &str = include_str!("../shaders/query.wgsl");

/// The steps of an eight-wide BVH walk shared by the eight-wide BVH and instance
/// traversal stages (mirrored by `src/cpu/wide_bvh_traverse.rs`).
pub const WIDE_WALK: &str = include_str!("../shaders/wide_walk.wgsl");

/// The BVH traversal stage over binary nodes (mirrored by `src/cpu/bvh_traverse.rs`).
pub const BVH_TRAVERSE: &str = include_str!("../shaders/bvh_traverse.wgsl");

/// The BVH traversal stage over eight-wide nodes (mirrored by
/// `src/cpu/wide_bvh_traverse.rs`).
pub const WIDE_BVH_TRAVERSE: &str = include_str!("../shaders/wide_bvh_traverse.wgsl");
/// Entry point of the eight-wide BVH traversal stage.
pub const WIDE_BVH_TRAVERSE_ENTRY: &str = "wide_bvh_traverse";

/// The gather stage: triangles from a renderer's buffers (mirrored by
/// `src/cpu/gather.rs`).
pub const GATHER: &str = include_str!("../shaders/gather.wgsl");
/// Entry point of the gather stage.
pub const GATHER_ENTRY: &str = "gather";
/// Workgroup size of the gather stage (`GATHER_WORKGROUP` in the WGSL).
pub const GATHER_WORKGROUP: u32 = 64;

/// The refit stage: BVH boxes, one level per dispatch (mirrored by
/// `Bvh::refit_boxes` in `src/cpu/refit.rs`).
pub const REFIT: &str = include_str!("../shaders/refit.wgsl");
/// Entry point of the refit stage.
pub const REFIT_ENTRY: &str = "refit";
/// Workgroup size of the refit stage (`REFIT_WORKGROUP` in the WGSL).
pub const REFIT_WORKGROUP: u32 = 64;

/// Entry point of the BVH traversal stage.
pub const BVH_TRAVERSE_ENTRY: &str = "bvh_traverse";
/// Workgroup size of the BVH traversal stage (`WORKGROUP_SIZE` in the WGSL).
pub const BVH_TRAVERSE_WORKGROUP: u32 = 64;
/// Triangle id the traversal reports for a ray that ran out of loop steps.
pub const UNFINISHED: u32 = 0xFFFF_FFFE;

/// The two-level traversal of instance scenes (mirrored by
/// `src/cpu/instance_traverse.rs`).
pub const INSTANCE_TRAVERSE: &str = include_str!("../shaders/instance_traverse.wgsl");
/// Entry point of the instance traversal stage.
pub const INSTANCE_TRAVERSE_ENTRY: &str = "instance_traverse";
/// Workgroup size of the instance traversal stage (`WORKGROUP_SIZE` in the WGSL).
pub const INSTANCE_TRAVERSE_WORKGROUP: u32 = 64;

/// What the instance stages share: instance records, rays taken into object space,
/// the order of hits (mirrored by `src/instances/transform.rs` and
/// `src/cpu/instance_traverse.rs`).
pub const INSTANCE_SPACE: &str = include_str!("../shaders/instance_space.wgsl");

/// The segments of a ray the ray-query stages search and the distances they
/// commit (mirrored by `src/cpu/ray_query.rs`).
pub const SEGMENTS: &str = include_str!("../shaders/segments.wgsl");

/// The ray-query stage: hardware ray queries over one box per triangle, raypick's
/// test on each candidate (its decisions mirrored by `src/cpu/ray_query.rs`).
pub const RAY_QUERY: &str = include_str!("../shaders/ray_query.wgsl");
/// Entry point of the ray-query stage (not `ray_query`: WGSL names the type so).
pub const RAY_QUERY_ENTRY: &str = "ray_query_trace";
/// Workgroup size of the ray-query stage (`WORKGROUP_SIZE` in the WGSL).
pub const RAY_QUERY_WORKGROUP: u32 = 64;

/// The instance ray-query stage: hardware ray queries over instances of per-mesh
/// structures, raypick's transform and test on each candidate (its decisions
/// mirrored by `src/cpu/instance_ray_query.rs`).
pub const INSTANCE_RAY_QUERY: &str = include_str!("../shaders/instance_ray_query.wgsl");
/// Entry point of the instance ray-query stage.
pub const INSTANCE_RAY_QUERY_ENTRY: &str = "instance_ray_query";
/// Workgroup size of the instance ray-query stage (`WORKGROUP_SIZE` in the WGSL).
pub const INSTANCE_RAY_QUERY_WORKGROUP: u32 = 64;

/// Entry point of the brute-force stage.
pub const BRUTE_FORCE_ENTRY: &str = "brute_force";
/// Entry point merging the rows of a split brute-force dispatch.
pub const BRUTE_FORCE_MERGE_ENTRY: &str = "brute_force_merge";
/// Workgroup size of the brute-force stage (`WORKGROUP_SIZE` in the WGSL).
pub const BRUTE_FORCE_WORKGROUP: u32 = 64;

/// How a stage's triangle tests scale the offsets of triangles close to a ray's
/// origin (`SCALE_EVERY_TEST` in `shaders/intersect.wgsl`). The answers are the
/// same either way; the cost is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scaling {
    /// Every test runs on its offsets scaled: one copy of the test in the code,
    /// a few more operations per test (the BVH stages, bound by memory).
    EveryTest,
    /// Only a test with tiny values runs again, scaled (brute force, bound by
    /// arithmetic; the arithmetic probe, whose stage values are the CPU's).
    TinyTests,
}

/// The shared triangle tests (set-up, both tests, acceptance), scaling as
/// `scaling` says.
fn triangle_tests(scaling: Scaling) -> String {
    let every = scaling == Scaling::EveryTest;
    [
        &format!("const SCALE_EVERY_TEST: bool = {every};"),
        INTERSECT,
        MOLLER_TRUMBORE,
        WATERTIGHT,
    ]
    .join("\n")
}

/// The complete WGSL module of the brute-force stage.
pub fn brute_force_module() -> String {
    [TYPES, &triangle_tests(Scaling::TinyTests), HIT_LIST, BRUTE_FORCE].join("\n")
}

/// The complete WGSL module of the BVH traversal stage over binary nodes.
pub fn bvh_traverse_module() -> String {
    mesh_traverse_module(&[BVH_TRAVERSE])
}

/// The complete WGSL module of the BVH traversal stage over eight-wide nodes.
pub fn wide_bvh_traverse_module() -> String {
    mesh_traverse_module(&[WIDE_WALK, WIDE_BVH_TRAVERSE])
}

/// A mesh BVH traversal stage (`stage`, its files) with the files it shares.
fn mesh_traverse_module(stage: &[&str]) -> String {
    let tests = triangle_tests(Scaling::EveryTest);
    let shared = [TYPES, &tests, HIT_LIST, QUERY, BVH_WALK];
    shared.iter().chain(stage).copied().collect::<Vec<_>>().join("\n")
}

/// The complete WGSL module of the instance traversal stage, walking meshes in
/// `layout` (`BINARY_MESHES` in the WGSL).
pub fn instance_traverse_module(layout: crate::NodeLayout) -> String {
    let binary = layout == crate::NodeLayout::Binary;
    [
        &format!("const BINARY_MESHES: bool = {binary};"),
        TYPES,
        &triangle_tests(Scaling::EveryTest),
        BVH_WALK,
        WIDE_WALK,
        INSTANCE_SPACE,
        INSTANCE_TRAVERSE,
    ]
    .join("\n")
}

/// The complete WGSL module of the ray-query stage. The stage's own file comes
/// first: its `enable wgpu_ray_query;` directive must open the module (WGSL
/// declarations may come in any order).
pub fn ray_query_module() -> String {
    [
        RAY_QUERY,
        TYPES,
        &triangle_tests(Scaling::EveryTest),
        HIT_LIST,
        SEGMENTS,
    ]
    .join("\n")
}

/// The complete WGSL module of the instance ray-query stage (its own file first,
/// for its `enable` directive).
pub fn instance_ray_query_module() -> String {
    [
        INSTANCE_RAY_QUERY,
        TYPES,
        &triangle_tests(Scaling::EveryTest),
        SEGMENTS,
        INSTANCE_SPACE,
    ]
    .join("\n")
}

/// The arithmetic self-check's probe: every stage of the triangle test written out
/// for the host to compare with the CPU's (`src/gpu/arithmetic.rs`).
pub const ARITHMETIC_PROBE: &str = include_str!("../shaders/arithmetic_probe.wgsl");
/// Entry point of the arithmetic probe.
pub const ARITHMETIC_PROBE_ENTRY: &str = "probe";

/// The complete WGSL module of the arithmetic probe.
pub fn arithmetic_probe_module() -> String {
    [TYPES, &triangle_tests(Scaling::TinyTests), ARITHMETIC_PROBE].join("\n")
}

/// The complete WGSL module of the gather stage.
pub fn gather_module() -> String {
    [TYPES, GATHER].join("\n")
}

/// The complete WGSL module of the refit stage.
pub fn refit_module() -> String {
    [TYPES, REFIT].join("\n")
}

/// Every complete module, by name (used by the naga validation test).
#[cfg(any(test, feature = "kernels"))]
pub fn all_modules() -> Vec<(&'static str, String)> {
    vec![
        ("brute_force", brute_force_module()),
        ("bvh_traverse", bvh_traverse_module()),
        ("wide_bvh_traverse", wide_bvh_traverse_module()),
        (
            "instance_traverse (binary meshes)",
            instance_traverse_module(crate::NodeLayout::Binary),
        ),
        (
            "instance_traverse (wide meshes)",
            instance_traverse_module(crate::NodeLayout::Wide),
        ),
        ("ray_query", ray_query_module()),
        ("instance_ray_query", instance_ray_query_module()),
        ("gather", gather_module()),
        ("refit", refit_module()),
    ]
}
