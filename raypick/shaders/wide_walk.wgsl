// The steps of an eight-wide BVH walk that the eight-wide BVH and instance
// traversals share (wide_bvh_traverse.wgsl, instance_traverse.wgsl): reading a node
// and decoding its children, visiting it (entering, ordering and pushing its
// children), and taking its entered leaves nearest first. Mirrored by
// src/cpu/wide_bvh_traverse.rs and src/cpu/wide_nodes.rs. A stage that includes
// this file (after bvh_walk.wgsl, for MAX_DEPTH) declares `nodes` as an array of
// 16-byte rows holding WideBvhNodes, then their exact boxes.

// Children of a node.
const WIDTH: u32 = 8u;
// Rows of 16 bytes in one WideBvhNode.
const NODE_ROWS: u32 = 8u;

// The rows of node n, loaded once per visit (vectors, not arrays: a lane's child is
// picked with `select` and a dynamic component, which every backend compiles
// without spilling the node to memory).
struct WideRows {
    origin_exact: vec4<u32>,
    step: vec4<u32>,
    // lo x, lo y (two words each); lo z, hi x; hi y, hi z.
    planes0: vec4<u32>,
    planes1: vec4<u32>,
    planes2: vec4<u32>,
    // children 0-3, 4-7.
    child0: vec4<u32>,
    child1: vec4<u32>,
    count: vec4<u32>,
}

fn wide_node_at(n: u32) -> WideRows {
    let r = n * NODE_ROWS;
    return WideRows(
        bitcast<vec4<u32>>(nodes[r]),
        bitcast<vec4<u32>>(nodes[r + 1u]),
        bitcast<vec4<u32>>(nodes[r + 2u]),
        bitcast<vec4<u32>>(nodes[r + 3u]),
        bitcast<vec4<u32>>(nodes[r + 4u]),
        bitcast<vec4<u32>>(nodes[r + 5u]),
        bitcast<vec4<u32>>(nodes[r + 6u]),
        bitcast<vec4<u32>>(nodes[r + 7u]),
    );
}

// Byte `lane % 4` of the word pair (lo, hi) word `lane / 4`.
fn lane_byte(pair: vec2<u32>, lane: u32) -> u32 {
    return (select(pair.x, pair.y, lane >= 4u) >> ((lane & 3u) * 8u)) & 0xffu;
}

// Child `lane` of `node`: its decoded box, node index or first triangle, and
// triangle count; an unused slot is empty (EMPTY_CHILD, count 0). Mirrors
// WideNodes::children (lane by lane) in src/cpu/wide_nodes.rs. The products of the
// decoding are kept from fusing with the sum (`rounded`), which then rounds as the CPU's.
fn wide_child(node: WideRows, lane: u32, one: f32) -> BvhChild {
    let index = child_of(node, lane);
    if index == EMPTY_CHILD {
        return BvhChild(vec3<f32>(0.0), EMPTY_CHILD, vec3<f32>(0.0), 0u);
    }
    let count = lane_byte(node.count.xy, lane);
    let exact = node.origin_exact.w;
    if exact != EMPTY_CHILD {
        // Two rows per axis (lanes 0-3, 4-7): minima x, y, z, then maxima.
        let r = exact + lane / 4u;
        let k = lane & 3u;
        let lo = vec3<f32>(nodes[r][k], nodes[r + 2u][k], nodes[r + 4u][k]);
        let hi = vec3<f32>(nodes[r + 6u][k], nodes[r + 8u][k], nodes[r + 10u][k]);
        return BvhChild(lo, index, hi, count);
    }
    let q_lo = vec3<u32>(
        lane_byte(node.planes0.xy, lane),
        lane_byte(node.planes0.zw, lane),
        lane_byte(node.planes1.xy, lane),
    );
    let q_hi = vec3<u32>(
        lane_byte(node.planes1.zw, lane),
        lane_byte(node.planes2.xy, lane),
        lane_byte(node.planes2.zw, lane),
    );
    let origin = bitcast<vec3<f32>>(node.origin_exact.xyz);
    let step = bitcast<vec3<f32>>(node.step.xyz);
    let lo = origin + rounded3(vec3<f32>(q_lo) * step, one);
    let hi = origin + rounded3(vec3<f32>(q_hi) * step, one);
    return BvhChild(lo, index, hi, count);
}

// Node index or first triangle of child `lane` of `node`.
fn child_of(node: WideRows, lane: u32) -> u32 {
    return select(node.child0, node.child1, lane >= 4u)[lane & 3u];
}

// A child picked from a mask of children, and its entry distance.
struct Picked {
    lane: u32,
    entry: f32,
}

// The child of `mask` (bit per lane, not empty) entered nearest (ties to the lowest
// lane), or with `farthest` the one entered farthest (ties to the highest lane):
// the order sorting the entered children nearest first gives. Every invocation
// scans the eight lanes in step, so no per-invocation index into an array is
// needed (SIMD drivers turn those into gathers).
fn pick_child(entry: ptr<function, array<f32, WIDTH>>, mask: u32, farthest: bool) -> Picked {
    var best = Picked(WIDTH, 0.0);
    for (var lane = 0u; lane < WIDTH; lane++) {
        let e = (*entry)[lane];
        let better = best.lane == WIDTH || select((e < best.entry), (e >= best.entry), farthest);
        if (mask & (1u << lane)) != 0u && better {
            best = Picked(lane, e);
        }
    }
    return best;
}

// What visiting a node leaves to do: the nearest entered interior child, to visit
// next (EMPTY_CHILD: none), and whether a push would have overflowed the stack.
struct WideVisit {
    next: u32,
    overflow: bool,
}

// Visits `node` for a ray (boxes): every child's box entered up to `limit` (its
// entry distance in *entry), the entered leaves added to *leaves, and the entered
// interior children but the nearest pushed farthest first with their entry
// distances, while the stack has fewer than `capacity` entries.
fn visit_wide(node: WideRows, boxes: RayBoxes, limit: f32, one: f32, entry: ptr<function, array<f32, WIDTH>>, leaves: ptr<function, u32>, stack: ptr<function, array<vec2<u32>, MAX_DEPTH>>, depth: ptr<function, u32>, capacity: u32) -> WideVisit {
    var interior = 0u;
    for (var lane = 0u; lane < WIDTH; lane++) {
        let child = wide_child(node, lane, one);
        let e = enter_child(child, boxes, limit, one);
        (*entry)[lane] = e;
        if e != NOT_ENTERED {
            if child.count > 0u {
                *leaves |= 1u << lane;
            } else {
                interior |= 1u << lane;
            }
        }
    }
    var visit = WideVisit(EMPTY_CHILD, false);
    if interior != 0u {
        let nearest = pick_child(entry, interior, false).lane;
        visit.next = child_of(node, nearest);
        interior &= ~(1u << nearest);
    }
    // The other interior children, farthest first.
    loop {
        if interior == 0u {
            break;
        }
        if *depth == capacity {
            visit.overflow = true;
            break;
        }
        let far = pick_child(entry, interior, true);
        (*stack)[*depth] = vec2<u32>(child_of(node, far.lane), bitcast<u32>(far.entry));
        *depth += 1u;
        interior &= ~(1u << far.lane);
    }
    return visit;
}

// The nearest leaf of *leaves that no hit so far has beaten (not beyond `bound`):
// its first triangle and triangle count (count 0: none left). The leaves passed
// over are taken out of *leaves.
fn next_leaf(node: WideRows, entry: ptr<function, array<f32, WIDTH>>, leaves: ptr<function, u32>, bound: f32) -> vec2<u32> {
    var leaf = vec2<u32>(0u, 0u);
    loop {
        if *leaves == 0u {
            break;
        }
        let near = pick_child(entry, *leaves, false);
        *leaves &= ~(1u << near.lane);
        if !beyond(near.entry, bound) {
            leaf = vec2<u32>(child_of(node, near.lane), lane_byte(node.count.xy, near.lane));
            break;
        }
    }
    return leaf;
}

// Where a walk over a node's entered leaves is: the current leaf's first triangle
// and triangle count, and how many of them were taken.
struct LeafWalk {
    first: u32,
    count: u32,
    taken: u32,
}

// The next triangle of the walk over `node`'s entered leaves (*leaves), nearest
// leaf first, a leaf skipped once beyond `bound` (next_leaf); EMPTY_CHILD when none
// is left.
fn next_triangle(walk: ptr<function, LeafWalk>, node: WideRows, entry: ptr<function, array<f32, WIDTH>>, leaves: ptr<function, u32>, bound: f32) -> u32 {
    if (*walk).taken == (*walk).count {
        let leaf = next_leaf(node, entry, leaves, bound);
        *walk = LeafWalk(leaf.x, leaf.y, 0u);
        if leaf.y == 0u {
            return EMPTY_CHILD;
        }
    }
    let i = (*walk).first + (*walk).taken;
    (*walk).taken += 1u;
    return i;
}
