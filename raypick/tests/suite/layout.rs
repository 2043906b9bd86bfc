//! Every WGSL module parses and validates with naga, and every struct shared with
//! Rust has the same size and member offsets as its `#[repr(C)]` twin in src/types.rs.

use std::mem::{offset_of, size_of};

use raypick::shaders;
use raypick::types::{
    BvhChild, BvhNode, GatherParams, Hit, InstanceHitRecord, PackedInstance, PackedTriangle, Ray,
    RefitParams, TraceParams, TraverseParams, WideBvhNode,
};

fn parse(source: &str, name: &str) -> naga::Module {
    naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)))
}

/// What the module `name` may use beyond core WGSL: ray queries for the ray-query
/// stage, nothing for the others.
fn capabilities(name: &str) -> naga::valid::Capabilities {
    match name {
        "ray_query" | "instance_ray_query" => naga::valid::Capabilities::RAY_QUERY,
        _ => naga::valid::Capabilities::empty(),
    }
}

/// (size, [(member name, offset)]) of a struct declared in the WGSL module.
fn wgsl_layout(module: &naga::Module, name: &str) -> (u32, Vec<(String, u32)>) {
    let ty = module
        .types
        .iter()
        .find(|(_, ty)| ty.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("struct {name} not found in types.wgsl"))
        .1;
    match &ty.inner {
        naga::TypeInner::Struct { members, span } => (
            *span,
            members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                .collect(),
        ),
        other => panic!("{name} is not a struct: {other:?}"),
    }
}

macro_rules! assert_layout {
    ($module:expr, $ty:ty, [$($field:ident),* $(,)?]) => {{
        let name = stringify!($ty);
        let (size, members) = wgsl_layout($module, name);
        assert_eq!(size as usize, size_of::<$ty>(), "size of {name}");
        let rust: Vec<(String, u32)> =
            vec![$((stringify!($field).to_string(), offset_of!($ty, $field) as u32)),*];
        assert_eq!(members, rust, "members and offsets of {name}");
    }};
}

#[test]
fn shared_structs_match_rust() {
    let module = parse(shaders::TYPES, "types.wgsl");
    assert_layout!(&module, Ray, [origin, tmin, dir, tmax]);
    assert_layout!(&module, Hit, [t, u, v, prim]);
    assert_layout!(&module, PackedTriangle, [v0, id, v1, edge_norm, v2, _pad2]);
    assert_layout!(
        &module,
        TraceParams,
        [
            ray_count, tri_count, tri_base, cull, accumulate, miss_t, one, tri_first, mode,
            max_hits, chunk_size, _pad2
        ]
    );
    assert_layout!(&module, BvhChild, [lo, index, hi, count]);
    assert_layout!(
        &module,
        GatherParams,
        [
            vertex_offset,
            vertex_stride,
            vertex_count,
            index_u16,
            index_first,
            slot_count,
            base_vertex,
            use_order
        ]
    );
    assert_layout!(&module, RefitParams, [first, count, _pad0, _pad1]);
    assert_layout!(&module, BvhNode, [children]);
    assert_layout!(
        &module,
        WideBvhNode,
        [origin, exact, step, _pad0, lo, hi, child, count, _pad1]
    );
    assert_layout!(
        &module,
        PackedInstance,
        [inv0, inv1, inv2, node_offset, tri_offset, node_count, _pad0]
    );
    assert_layout!(
        &module,
        InstanceHitRecord,
        [t, u, v, prim, instance, _pad0, _pad1, _pad2]
    );
    assert_layout!(
        &module,
        TraverseParams,
        [
            ray_count, cull, accumulate, miss_t, one, max_steps, max_hits, far_limit, max_stack,
            _pad0, _pad1, _pad2
        ]
    );
}

#[test]
fn every_module_validates() {
    for (name, source) in shaders::all_modules() {
        let module = parse(&source, name);
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(name))
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
    }
}

/// The value of the WGSL constant `name`, which must be a literal.
fn literal(module: &naga::Module, name: &str) -> naga::Literal {
    let (_, c) = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("constant {name} missing"));
    match module.global_expressions[c.init] {
        naga::Expression::Literal(l) => l,
        ref other => panic!("{name} is not a literal: {other:?}"),
    }
}

/// The workgroup size of the entry point `entry`.
fn workgroup_size(module: &naga::Module, entry: &str) -> [u32; 3] {
    module
        .entry_points
        .iter()
        .find(|e| e.name == entry)
        .unwrap_or_else(|| panic!("entry point {entry} missing"))
        .workgroup_size
}

#[test]
fn shader_constants_match_rust() {
    let module = parse(&shaders::brute_force_module(), "brute_force");
    let constant = |name: &str| match literal(&module, name) {
        naga::Literal::U32(v) => v,
        other => panic!("{name} is not a u32: {other:?}"),
    };
    assert_eq!(constant("MISS"), raypick::types::MISS);
    assert_eq!(constant("EMPTY_CHILD"), raypick::types::EMPTY_CHILD);
    assert_eq!(constant("CULL_NONE"), raypick::Cull::None as u32);
    assert_eq!(constant("CULL_BACK"), raypick::Cull::Back as u32);
    assert_eq!(constant("CULL_FRONT"), raypick::Cull::Front as u32);
    assert_eq!(constant("MODE_FAST"), raypick::Mode::Fast as u32);
    assert_eq!(
        constant("MODE_WATERTIGHT"),
        raypick::Mode::Watertight as u32
    );
    assert_eq!(constant("WORKGROUP_SIZE"), shaders::BRUTE_FORCE_WORKGROUP);
    for (name, query) in ["QUERY_CLOSEST", "QUERY_ANY", "QUERY_ALL"]
        .into_iter()
        .zip(raypick::types::Query::ALL)
    {
        assert_eq!(constant(name), query as u32, "{query:?}");
    }
    assert_eq!(constant("LIST_TRUNCATED"), raypick::types::LIST_TRUNCATED);
    assert_eq!(
        workgroup_size(&module, shaders::BRUTE_FORCE_ENTRY),
        [shaders::BRUTE_FORCE_WORKGROUP, 1, 1]
    );
}

#[test]
fn traversal_constants_match_rust() {
    let module = parse(&shaders::bvh_traverse_module(), "bvh_traverse");
    let constant = |name: &str| literal(&module, name);
    use naga::Literal::{F32, U32};
    assert_eq!(constant("MAX_DEPTH"), U32(raypick::bvh::MAX_DEPTH as u32));
    assert_eq!(constant("UNFINISHED"), U32(shaders::UNFINISHED));
    assert_eq!(
        constant("BOX_MARGIN"),
        F32(raypick::cpu::intersect::BOX_MARGIN)
    );
    assert_eq!(constant("BIG"), F32(raypick::cpu::intersect::BIG));
    assert_eq!(
        constant("WORKGROUP_SIZE"),
        U32(shaders::BVH_TRAVERSE_WORKGROUP)
    );
}

#[test]
fn wide_traversal_constants_match_rust() {
    use naga::Literal::{F32, U32};
    use raypick::cpu::wide_nodes::NODE_ROWS;
    let module = parse(&shaders::wide_bvh_traverse_module(), "wide_bvh_traverse");
    let constant = |name: &str| literal(&module, name);
    assert_eq!(
        constant("MAX_DEPTH"),
        U32(raypick::cpu::wide_bvh_traverse::STACK_ENTRIES as u32)
    );
    assert_eq!(constant("WIDTH"), U32(raypick::cpu::wide_bvh::WIDTH as u32));
    assert_eq!(constant("NODE_ROWS"), U32(NODE_ROWS as u32));
    assert_eq!(constant("UNFINISHED"), U32(shaders::UNFINISHED));
    assert_eq!(
        constant("BOX_MARGIN"),
        F32(raypick::cpu::intersect::BOX_MARGIN)
    );
    assert_eq!(
        constant("WORKGROUP_SIZE"),
        U32(shaders::BVH_TRAVERSE_WORKGROUP)
    );
    assert_eq!(
        workgroup_size(&module, shaders::WIDE_BVH_TRAVERSE_ENTRY),
        [shaders::BVH_TRAVERSE_WORKGROUP, 1, 1]
    );
}

#[test]
fn instance_traversal_constants_match_rust() {
    let module = parse(
        &shaders::instance_traverse_module(raypick::NodeLayout::Binary),
        "instance_traverse",
    );
    let constant = |name: &str| literal(&module, name);
    use naga::Literal::{F32, U32};
    assert_eq!(constant("MAX_DEPTH"), U32(raypick::bvh::MAX_DEPTH as u32));
    assert_eq!(constant("UNFINISHED"), U32(shaders::UNFINISHED));
    assert_eq!(
        constant("LEAF_BIT"),
        U32(raypick::cpu::instance_traverse::LEAF_BIT)
    );
    assert_eq!(
        constant("BOX_MARGIN"),
        F32(raypick::cpu::intersect::BOX_MARGIN)
    );
    assert_eq!(constant("BIG"), F32(raypick::cpu::intersect::BIG));
    assert_eq!(
        constant("WORKGROUP_SIZE"),
        U32(shaders::INSTANCE_TRAVERSE_WORKGROUP)
    );
}

#[test]
fn gather_and_refit_constants_match_rust() {
    use naga::Literal::U32;
    let gather = parse(&shaders::gather_module(), "gather");
    assert_eq!(
        literal(&gather, "GATHER_WORKGROUP"),
        U32(shaders::GATHER_WORKGROUP)
    );
    assert_eq!(
        literal(&gather, "NO_VERTEX"),
        U32(raypick::cpu::gather::NO_VERTEX)
    );
    let refit = parse(&shaders::refit_module(), "refit");
    assert_eq!(
        literal(&refit, "REFIT_WORKGROUP"),
        U32(shaders::REFIT_WORKGROUP)
    );
}

#[test]
fn ray_query_constants_match_rust() {
    use naga::Literal::{F32, U32};
    use raypick::cpu::ray_query::SEGMENT_MARGIN;
    let stages = [
        (
            "ray_query",
            shaders::ray_query_module(),
            shaders::RAY_QUERY_ENTRY,
            shaders::RAY_QUERY_WORKGROUP,
        ),
        (
            "instance_ray_query",
            shaders::instance_ray_query_module(),
            shaders::INSTANCE_RAY_QUERY_ENTRY,
            shaders::INSTANCE_RAY_QUERY_WORKGROUP,
        ),
    ];
    for (name, source, entry, workgroup) in stages {
        let module = parse(&source, name);
        let constant = |name: &str| literal(&module, name);
        assert_eq!(constant("UNFINISHED"), U32(shaders::UNFINISHED));
        assert_eq!(constant("SEGMENT_MARGIN"), F32(SEGMENT_MARGIN));
        assert_eq!(constant("MAX_T"), F32(f32::MAX));
        assert_eq!(constant("BIG"), F32(raypick::cpu::intersect::BIG));
        assert_eq!(constant("WORKGROUP_SIZE"), U32(workgroup), "{name}");
        assert_eq!(workgroup_size(&module, entry), [workgroup, 1, 1], "{name}");
    }
}
