// Eight-wide BVH traversal: one invocation per ray, nearest hit kept.
// Mirrored by src/cpu/wide_bvh_traverse.rs. Prepended with types.wgsl, the
// intersection files, hit_list.wgsl, query.wgsl (what is kept of the hits) and
// bvh_walk.wgsl (triangle_at, pop_pending, take_next, out_of_steps).
//
// Nodes are WideBvhNode (types.wgsl): eight children, boxes quantized outward to 8
// bits per plane, leaves the binary tree's own (first triangle and count in the
// triangle buffer), exact boxes after the nodes for the few that cannot quantize.
// At each node every child's box is decoded and tested as the binary traversal
// tests its two (enter_child), and the entered children are ordered nearest first
// (ties in slot order). The entered interior children but the nearest are pushed
// farthest first with their entry distances; the entered leaves' triangles are
// tested at once, nearest leaf first, a leaf skipped once a nearer hit beats it;
// then the nearest interior child is visited, or the nearest pending entry that
// can still change the answer. The answers are the binary traversal's, bit for
// bit: decoded boxes hold the binary boxes and triangles use the same test.
//
// The stack holds MAX_DEPTH entries of 8 bytes (node index, entry distance as
// bits), of which params.max_stack are used: a ray that would push beyond is
// reported as UNFINISHED and the host completes it on the CPU, as it does a ray
// that runs out of params.max_steps (node visits plus triangle tests). `accumulate`
// and QUERY work as in bvh_traverse.wgsl, and so do the loops' shapes: an inner
// loop visits nodes until one has leaves to test or none is left, then one loop
// tests those leaves' triangles.

@group(0) @binding(0) var<uniform> params: TraverseParams;
// WideBvhNode rows and exact boxes (wide_node_at, wide_child), PackedTriangle rows
// (triangle_at).
@group(0) @binding(1) var<storage, read> nodes: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> triangles: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(5) var<storage, read_write> all_hits: array<Hit>;

const WORKGROUP_SIZE: u32 = 64u;
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
// decoding are kept from fusing with the sum (`one`), which then rounds as the CPU's.
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
    let lo = origin + (vec3<f32>(q_lo) * step) * one;
    let hi = origin + (vec3<f32>(q_hi) * step) * one;
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

@compute @workgroup_size(WORKGROUP_SIZE)
fn wide_bvh_traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ray_index = gid.x;
    if ray_index >= params.ray_count {
        return;
    }
    let ray = rays[ray_index];
    let first_slot = ray_index * params.max_hits;
    let start = start_ray(ray_index, ray, first_slot);
    if !start.go {
        return;
    }
    var kept = start.kept;
    let frame = ray_frame(ray);
    let boxes = ray_boxes(ray, frame);
    let capacity = min(params.max_stack, MAX_DEPTH);
    // Pending subtrees: node index and entry distance (as bits).
    var stack: array<vec2<u32>, MAX_DEPTH>;
    var depth = 0u;
    var node_index = 0u;
    var steps = 0u;
    var finished = false; // nothing left to visit, out of steps, or out of stack
    // The last node visited, its children's entry distances, and its entered leaves
    // not yet tested (bit per lane).
    var node = WideRows();
    var entry: array<f32, WIDTH>;
    var leaves = 0u;
    loop {
        // Visit nodes until one has leaves to test, or none is left.
        loop {
            node_index = take_next(node_index, &stack, &depth, kept.bound);
            if node_index == EMPTY_CHILD {
                finished = true;
                break;
            }
            if out_of_steps(&steps, params.max_steps) {
                give_up(&kept);
                finished = true;
                break;
            }
            node = wide_node_at(node_index);
            let limit = min(kept.bound, ray.tmax);
            var interior = 0u;
            for (var lane = 0u; lane < WIDTH; lane++) {
                let child = wide_child(node, lane, params.one);
                entry[lane] = enter_child(child, boxes, limit, params.one);
                if entry[lane] != NOT_ENTERED {
                    if child.count > 0u {
                        leaves |= 1u << lane;
                    } else {
                        interior |= 1u << lane;
                    }
                }
            }
            var next = EMPTY_CHILD;
            if interior != 0u {
                let nearest = pick_child(&entry, interior, false).lane;
                next = child_of(node, nearest);
                interior &= ~(1u << nearest);
            }
            // The other interior children, farthest first.
            loop {
                if interior == 0u {
                    break;
                }
                if depth == capacity {
                    give_up(&kept);
                    finished = true;
                    break;
                }
                let far = pick_child(&entry, interior, true);
                stack[depth] = vec2<u32>(child_of(node, far.lane), bitcast<u32>(far.entry));
                depth += 1u;
                interior &= ~(1u << far.lane);
            }
            node_index = next;
            if finished || leaves != 0u {
                break;
            }
        }
        if finished {
            break; // no leaves left to test, or given up
        }
        // The leaves' triangles, nearest leaf first: `count` from `first`, the j-th next.
        var first = 0u;
        var count = 0u;
        var j = 0u;
        loop {
            if j == count {
                // The nearest leaf left that no hit so far has beaten.
                count = 0u;
                j = 0u;
                loop {
                    if leaves == 0u {
                        break;
                    }
                    let near = pick_child(&entry, leaves, false);
                    leaves &= ~(1u << near.lane);
                    if !beyond(near.entry, kept.bound) {
                        first = child_of(node, near.lane);
                        count = lane_byte(node.count.xy, near.lane);
                        break;
                    }
                }
                if count == 0u {
                    break;
                }
            }
            test_triangle(first + j, ray, frame, first_slot, &kept, &steps);
            j += 1u;
            if kept.done {
                break;
            }
        }
        if kept.done {
            break;
        }
    }
    finish(ray_index, kept);
}
