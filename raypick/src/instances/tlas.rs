//! The top-level BVH over instances' world boxes.
//!
//! Same node layout as a mesh BVH ([`BvhNode`]: two child boxes per node, node 0 the
//! root, children after their parent), one instance per leaf: a leaf child has
//! `count == 1` and `index` = the instance's index in the scene. Instances that can
//! never be hit (empty meshes) are left out.
//!
//! Built top-down: an SAH sweep along the longest centroid axis for the top
//! [`SAH_DEPTH`] levels, median splits below, so the depth stays within
//! [`MAX_DEPTH`] (the traversal stack) for any instance count. Moving one instance
//! refits the boxes on its path to the root (`refit`), O(depth).

use glam::Vec3;

use crate::bvh::{MAX_DEPTH, SAH_DEPTH};
use crate::types::{BvhChild, BvhNode};

/// Marks "no node" in the parent links.
const NONE: u32 = u32::MAX;

/// An instance to place in the tree.
#[derive(Clone, Copy, Debug)]
struct Item {
    lo: Vec3,
    hi: Vec3,
    instance: u32,
}

impl Item {
    fn centroid2(&self) -> Vec3 {
        self.lo + self.hi
    }
}

/// The top-level tree and the links a refit walks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tlas {
    pub(crate) nodes: Vec<BvhNode>,
    /// Parent of each node (`NONE` for the root).
    parent: Vec<u32>,
    /// Per instance: the node whose child is its leaf (`NONE`: not in the tree).
    leaf_node: Vec<u32>,
    /// Interior nodes on the longest root-to-leaf path.
    pub(crate) depth: usize,
}

fn half_area(lo: Vec3, hi: Vec3) -> f32 {
    let d = (hi - lo).max(Vec3::ZERO);
    d.x * d.y + d.y * d.z + d.z * d.x
}

fn union(a: &BvhChild, b: &BvhChild) -> (Vec3, Vec3) {
    (a.lo.min(b.lo), a.hi.max(b.hi))
}

impl Tlas {
    /// Builds the tree over the instances' world boxes (`None`: never hit).
    pub(crate) fn build(boxes: &[Option<(Vec3, Vec3)>]) -> Self {
        let mut items: Vec<Item> = boxes
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.map(|(lo, hi)| Item {
                    lo,
                    hi,
                    instance: i as u32,
                })
            })
            .collect();
        let mut tlas = Tlas {
            nodes: Vec::with_capacity(items.len().saturating_sub(1).max(1)),
            parent: Vec::new(),
            leaf_node: vec![NONE; boxes.len()],
            depth: 0,
        };
        match items.len() {
            0 => {}
            1 => {
                let leaf = tlas.leaf(&items[0], 0);
                tlas.nodes.push(BvhNode {
                    children: [leaf, BvhChild::EMPTY],
                });
                tlas.parent.push(NONE);
                tlas.depth = 1;
            }
            _ => {
                tlas.subtree(&mut items, 0, NONE);
            }
        }
        debug_assert!(tlas.depth <= MAX_DEPTH);
        tlas
    }

    fn leaf(&mut self, item: &Item, node: u32) -> BvhChild {
        self.leaf_node[item.instance as usize] = node;
        BvhChild {
            lo: item.lo,
            index: item.instance,
            hi: item.hi,
            count: 1,
        }
    }

    /// Builds the subtree over `items` (at least two) at `depth`; returns the child
    /// slot that refers to it.
    fn subtree(&mut self, items: &mut [Item], depth: usize, parent: u32) -> BvhChild {
        let index = self.nodes.len() as u32;
        self.nodes.push(BvhNode {
            children: [BvhChild::EMPTY; 2],
        });
        self.parent.push(parent);
        self.depth = self.depth.max(depth + 1);
        let split = split(items, depth);
        let (left, right) = items.split_at_mut(split);
        let mut children = [BvhChild::EMPTY; 2];
        for (slot, side) in children.iter_mut().zip([left, right]) {
            *slot = if side.len() == 1 {
                self.leaf(&side[0], index)
            } else {
                self.subtree(side, depth + 1, index)
            };
        }
        let (lo, hi) = union(&children[0], &children[1]);
        self.nodes[index as usize] = BvhNode { children };
        BvhChild {
            lo,
            index,
            hi,
            count: 0,
        }
    }

    /// Sets instance `instance`'s leaf box and refits every box on its path to the
    /// root. Returns the nodes that changed (nothing if the instance is not in the
    /// tree).
    pub(crate) fn refit(&mut self, instance: usize, (lo, hi): (Vec3, Vec3)) -> Vec<u32> {
        let mut changed = Vec::new();
        let Some(&leaf_node) = self.leaf_node.get(instance).filter(|&&n| n != NONE) else {
            return changed;
        };
        let mut node = leaf_node;
        let leaf = self.slot(node, instance as u32, 1);
        (leaf.lo, leaf.hi) = (lo, hi);
        changed.push(node);
        loop {
            let parent = self.parent[node as usize];
            if parent == NONE {
                return changed;
            }
            // An empty slot's inverted box leaves the union alone.
            let (lo, hi) = union(
                &self.nodes[node as usize].children[0],
                &self.nodes[node as usize].children[1],
            );
            let slot = self.slot(parent, node, 0);
            (slot.lo, slot.hi) = (lo, hi);
            changed.push(parent);
            node = parent;
        }
    }

    /// The child of `node` with this `index` and `count`.
    fn slot(&mut self, node: u32, index: u32, count: u32) -> &mut BvhChild {
        self.nodes[node as usize]
            .children
            .iter_mut()
            .find(|c| c.index == index && c.count == count)
            .expect("the TLAS links lead to the child")
    }
}

/// Reorders `items` and returns where to split them (`1..items.len()`): the lowest
/// SAH cost along the longest centroid axis in the top [`SAH_DEPTH`] levels, the
/// median below (and when all centroids coincide).
fn split(items: &mut [Item], depth: usize) -> usize {
    let (mut clo, mut chi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for item in items.iter() {
        clo = clo.min(item.centroid2());
        chi = chi.max(item.centroid2());
    }
    let extent = chi - clo;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let key = |item: &Item| (item.centroid2()[axis], item.instance);
    let median = items.len() / 2;
    let spread = extent[axis] > 0.0; // false for NaN
    if depth >= SAH_DEPTH || !spread {
        items.select_nth_unstable_by(median, |a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
        });
        return median;
    }
    items.sort_unstable_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
    });
    // right[k]: half area of items[k..].
    let n = items.len();
    let mut right = vec![0.0f32; n];
    let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for k in (1..n).rev() {
        lo = lo.min(items[k].lo);
        hi = hi.max(items[k].hi);
        right[k] = half_area(lo, hi);
    }
    let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    let (mut best, mut best_cost) = (median, f32::INFINITY);
    for k in 1..n {
        lo = lo.min(items[k - 1].lo);
        hi = hi.max(items[k - 1].hi);
        let cost = k as f32 * half_area(lo, hi) + (n - k) as f32 * right[k];
        if cost < best_cost {
            (best, best_cost) = (k, cost);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Rng;

    /// Checks that every instance with a box is in exactly one leaf, that leaf boxes
    /// are the instances' boxes and interior boxes the unions of their children, and
    /// that the depth is within bounds.
    fn check(tlas: &Tlas, boxes: &[Option<(Vec3, Vec3)>]) {
        let mut seen = vec![0; boxes.len()];
        let mut stack = vec![(0u32, 1usize)];
        let mut deepest = 0;
        while let Some((node, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            for child in &tlas.nodes[node as usize].children {
                if child.is_leaf() {
                    seen[child.index as usize] += 1;
                    assert_eq!(Some((child.lo, child.hi)), boxes[child.index as usize]);
                } else if !child.is_empty() {
                    let [a, b] = tlas.nodes[child.index as usize].children;
                    assert_eq!((child.lo, child.hi), union(&a, &b));
                    stack.push((child.index, depth + 1));
                }
            }
        }
        for (count, b) in seen.iter().zip(boxes) {
            assert_eq!(*count, usize::from(b.is_some()));
        }
        assert_eq!(deepest, tlas.depth);
        assert!(tlas.depth <= MAX_DEPTH);
    }

    fn unit_box(at: Vec3, size: f32) -> Option<(Vec3, Vec3)> {
        Some((at, at + Vec3::splat(size)))
    }

    #[test]
    fn depth_stays_bounded_for_coincident_and_skewed_instances() {
        let same = vec![unit_box(Vec3::ONE, 1.0); 5000];
        check(&Tlas::build(&same), &same);
        // Sizes growing geometrically: the SAH peels one instance per level.
        let skewed: Vec<_> = (0..3000)
            .map(|i| unit_box(Vec3::splat(1.01f32.powi(i)), 1.02f32.powi(i)))
            .collect();
        let tlas = Tlas::build(&skewed);
        check(&tlas, &skewed);
        assert!(tlas.depth > 20, "depth {}", tlas.depth);
        // Empty slots: instances that can never be hit are left out.
        let mixed = vec![None, unit_box(Vec3::ZERO, 1.0), None];
        check(&Tlas::build(&mixed), &mixed);
        assert!(Tlas::build(&[None, None]).nodes.is_empty());
    }

    #[test]
    fn refit_keeps_every_box_tight() {
        let mut rng = Rng::new(7);
        let mut boxes: Vec<_> = (0..500)
            .map(|_| {
                unit_box(
                    rng.point_in_box(Vec3::ZERO, Vec3::splat(100.0)),
                    rng.range(0.1, 5.0),
                )
            })
            .collect();
        let mut tlas = Tlas::build(&boxes);
        for _ in 0..2000 {
            let i = rng.below(boxes.len());
            boxes[i] = unit_box(
                rng.point_in_box(Vec3::splat(-500.0), Vec3::splat(500.0)),
                rng.range(0.1, 50.0),
            );
            let changed = tlas.refit(i, boxes[i].expect("a box"));
            assert!(changed.len() <= tlas.depth && changed.last() == Some(&0));
        }
        check(&tlas, &boxes);
    }
}
