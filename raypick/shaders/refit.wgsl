// Refit: recomputes the boxes of one level of BVH nodes from the triangles (leaf
// children) and from the already refitted deeper level (interior children). One
// dispatch per level, deepest first. Mirrored by Bvh::refit_boxes in
// src/bvh/refit.rs (which sweeps the nodes backward instead of by level: every
// child follows its parent, so both see children first and compute the same boxes).
// Prepended with types.wgsl.

@group(0) @binding(0) var<uniform> refit_params: RefitParams;
@group(0) @binding(1) var<storage, read> level_nodes: array<u32>;
@group(0) @binding(2) var<storage, read> triangles: array<PackedTriangle>;
@group(0) @binding(3) var<storage, read_write> nodes: array<BvhNode>;

const REFIT_WORKGROUP: u32 = 64u;
const BOX_MAX: f32 = 3.40282347e38f;


// The union of the padded boxes of the hittable triangles first..first+count, or
// an inverted box when none can be hit.
fn leaf_box(first: u32, count: u32) -> Box {
    var lo = vec3<f32>(BOX_MAX);
    var hi = vec3<f32>(-BOX_MAX);
    for (var k = first; k < first + count; k++) {
        let t = triangles[k];
        if all(t.v1 == t.v0) {
            continue;
        }
        let b = triangle_box(t);
        lo = min(lo, b.lo);
        hi = max(hi, b.hi);
    }
    return Box(lo, hi);
}

@compute @workgroup_size(REFIT_WORKGROUP)
fn refit(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let k = gid.y * groups.x * REFIT_WORKGROUP + gid.x;
    if k >= refit_params.count {
        return;
    }
    let n = level_nodes[refit_params.first + k];
    var node = nodes[n];
    for (var c = 0u; c < 2u; c++) {
        let child = node.children[c];
        if child.count > 0u {
            let b = leaf_box(child.index, child.count);
            node.children[c].lo = b.lo;
            node.children[c].hi = b.hi;
        } else if child.index != EMPTY_CHILD {
            let kids = nodes[child.index].children;
            node.children[c].lo = min(kids[0].lo, kids[1].lo);
            node.children[c].hi = max(kids[0].hi, kids[1].hi);
        }
    }
    nodes[n] = node;
}
