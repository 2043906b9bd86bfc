// The steps of a BVH walk that the traversal stages share: reading nodes and
// triangles, popping the stack and counting loop steps (every traversal: the BVH
// ones, and the instance one for its top level and meshes), visiting a binary node
// and indexing the triangles of its leaf children (bvh_traverse.wgsl). The walk is
// src/cpu/bvh_traverse.rs's `traverse`, cut at the points where the traversals'
// loops meet. A stage that includes this file declares `nodes` and `triangles` as
// arrays of 16-byte rows (array<vec4<f32>>).

// Entries of a traversal stack (the builder bounds every tree's depth).
const MAX_DEPTH: u32 = 64u;

// Node n (a BvhNode is four rows): one load per row (a driver may load each member
// of a struct on its own, lane by lane).
fn node_at(n: u32) -> BvhNode {
    return bvh_node(nodes[n * 4u], nodes[n * 4u + 1u], nodes[n * 4u + 2u], nodes[n * 4u + 3u]);
}

// Triangle i (a PackedTriangle is three rows).
fn triangle_at(i: u32) -> PackedTriangle {
    let a = triangles[i * 3u];
    let b = triangles[i * 3u + 1u];
    let c = triangles[i * 3u + 2u];
    return PackedTriangle(a.xyz, bitcast<u32>(a.w), b.xyz, b.w, c.xyz, bitcast<u32>(c.w));
}

// Pops pending entries (an index and its entry distance as bits) until one whose box
// is not beyond `bound`, and returns its index; EMPTY_CHILD once the stack is empty.
// Mirrors pop_pending in src/cpu/bvh_walk.rs.
fn pop_pending(stack: ptr<function, array<vec2<u32>, MAX_DEPTH>>, depth: ptr<function, u32>, bound: f32) -> u32 {
    var found = EMPTY_CHILD;
    loop {
        if *depth == 0u {
            break;
        }
        *depth -= 1u;
        let pending = (*stack)[*depth];
        if !beyond(bitcast<f32>(pending.y), bound) {
            found = pending.x;
            break;
        }
    }
    return found;
}

// `next` when there is one (not EMPTY_CHILD), else the nearest pending entry that can
// still change the answer (pop_pending).
fn take_next(next: u32, stack: ptr<function, array<vec2<u32>, MAX_DEPTH>>, depth: ptr<function, u32>, bound: f32) -> u32 {
    if next != EMPTY_CHILD {
        return next;
    }
    return pop_pending(stack, depth, bound);
}

// Counts one loop step; true once a ray has taken more than `max_steps`.
fn out_of_steps(steps: ptr<function, u32>, max_steps: u32) -> bool {
    *steps += 1u;
    return *steps > max_steps;
}

// What visiting a node leaves to do:
//   next: the node to visit next (the nearer interior child, else the farther one;
//     EMPTY_CHILD: none, pop one);
//   push, pending: whether to push the farther child (both children are interior),
//     as a stack entry;
//   first_a, count_a: the nearer child's triangles when it is a leaf not beyond the
//     bound (count 0: none);
//   first_b, count_b, entry_b: the farther child's when it is a leaf, and its entry
//     distance (tested once the nearer leaf is done; see leaf_triangle).
struct NodeVisit {
    next: u32,
    push: bool,
    pending: vec2<u32>,
    first_a: u32,
    count_a: u32,
    first_b: u32,
    count_b: u32,
    entry_b: f32,
}

// Nothing to do (before the first visit).
const NO_VISIT = NodeVisit(EMPTY_CHILD, false, vec2<u32>(0u), 0u, 0u, 0u, 0u, 0.0);

// Visits `node` for a ray (boxes), its boxes entered up to `limit` and leaves culled
// beyond `bound` (both in the units of the ray's direction).
fn visit_node(node: BvhNode, boxes: RayBoxes, limit: f32, bound: f32, one: f32) -> NodeVisit {
    let order = order_children(node, boxes, limit, one);
    let near_in = order.entry_near != NOT_ENTERED;
    let far_in = order.entry_far != NOT_ENTERED;
    let near_node = near_in && order.near.count == 0u;
    let far_node = far_in && order.far.count == 0u;
    let near_leaf = near_in && order.near.count > 0u && !beyond(order.entry_near, bound);
    let far_leaf = far_in && order.far.count > 0u;
    return NodeVisit(
        select(select(EMPTY_CHILD, order.far.index, far_node), order.near.index, near_node),
        near_node && far_node,
        vec2<u32>(order.far.index, bitcast<u32>(order.entry_far)),
        select(0u, order.near.index, near_leaf),
        select(0u, order.near.count, near_leaf),
        select(0u, order.far.index, far_leaf),
        select(0u, order.far.count, far_leaf),
        order.entry_far,
    );
}

// Pushes the farther child a visit leaves pending (when it does) and returns the
// node to visit next.
fn follow(visit: NodeVisit, stack: ptr<function, array<vec2<u32>, MAX_DEPTH>>, depth: ptr<function, u32>) -> u32 {
    if visit.push {
        (*stack)[*depth] = visit.pending;
        *depth += 1u;
    }
    return visit.next;
}

// The j-th triangle of a visit's leaves (the nearer leaf's, then the farther one's),
// or EMPTY_CHILD where the farther leaf starts when it lies beyond `bound` by then (a
// nearer hit already beat it: the walk stops there).
fn leaf_triangle(visit: NodeVisit, j: u32, bound: f32) -> u32 {
    let skip = j == visit.count_a && beyond(visit.entry_b, bound);
    let far = select(visit.first_b + (j - visit.count_a), EMPTY_CHILD, skip);
    return select(far, visit.first_a + j, j < visit.count_a);
}
