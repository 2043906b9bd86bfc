//! Brute force on the CPU, mirroring `shaders/brute_force.wgsl`.
//!
//! The shader walks triangles in id order in tiles of workgroup memory; here they are
//! walked in id order in blocks of [`LANES`] triangles stored as structure of arrays,
//! so the per-lane loop compiles to AVX-512 / AVX2 vector code, and for nearest hits
//! a group of rays walks the blocks a tile at a time, each tile read from beyond
//! the core's caches once for the whole group. Each lane keeps its
//! own best hit (strictly nearer wins, so the lowest id wins ties within a lane) and
//! the lanes are reduced at the end by (t, id) — the same answer as the shader's
//! sequential walk.
//!
//! The other queries of the shader ([`occluded_rays`], [`collect_rays`]) walk the same
//! blocks in id order and offer each block's accepted triangles in lane (= id) order
//! to a [`Collect`]or, stopping when it says so.

use super::bvh_walk::nearer;
use super::hit_list::HitList;
use super::intersect::{Candidates, RayFrame, SoaTriangles, place};
use super::query::{AnyHit, Collect};
use super::simd::simd_dispatch;
use crate::options::{Cull, Mode};
use crate::prepare::sanitize_ray;
use crate::types::{Hit, MISS, PackedTriangle, Ray};

/// Triangles per block: one AVX-512 register of f32, or two AVX2 registers.
pub const LANES: usize = 16;

/// [`LANES`] triangles as structure of arrays; unused lanes of the last block are
/// degenerate and never hit.
pub type TriangleBlock = SoaTriangles<LANES>;

/// A mesh laid out for the CPU brute-force kernel.
#[derive(Clone, Debug, Default)]
pub struct TriangleBlocks {
    blocks: Vec<TriangleBlock>,
    triangle_count: usize,
}

impl TriangleBlocks {
    /// Lays packed triangles out in blocks, keeping id order.
    pub fn new(triangles: &[PackedTriangle]) -> Self {
        let blocks = triangles.chunks(LANES).map(TriangleBlock::new).collect();
        Self {
            blocks,
            triangle_count: triangles.len(),
        }
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangle_count
    }

    /// Bytes held.
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val(self.blocks.as_slice())
    }
}

/// Calls `$run::<CULL, WATERTIGHT>($args)` with the constants for `cull` and `mode`.
macro_rules! with_consts {
    ($run:ident, $cull:expr, $mode:expr, ($($args:expr),*)) => {
        const NONE: u32 = Cull::None as u32;
        const BACK: u32 = Cull::Back as u32;
        const FRONT: u32 = Cull::Front as u32;
        match ($cull, $mode == Mode::Watertight) {
            (Cull::Back, false) => $run::<BACK, false>($($args),*),
            (Cull::Front, false) => $run::<FRONT, false>($($args),*),
            (Cull::None, false) => $run::<NONE, false>($($args),*),
            (Cull::Back, true) => $run::<BACK, true>($($args),*),
            (Cull::Front, true) => $run::<FRONT, true>($($args),*),
            (Cull::None, true) => $run::<NONE, true>($($args),*),
        }
    };
}

/// Blocks that a group of rays ([`GROUP_RAYS`]) tests in turn before the next
/// ones: 160 KiB of triangles, which stay in a core's second-level cache while
/// every ray of the group reads them. A mesh larger than that cache would
/// otherwise be read from memory, or a shared cache, once per ray, and that read
/// rather than the arithmetic would set the pace.
const TILE_BLOCKS: usize = 256;

/// Rays that share each tile of blocks ([`TILE_BLOCKS`]): each tile is read from
/// beyond the core's caches once per this many rays. Their nearest hits so far
/// take 256 bytes each.
const GROUP_RAYS: usize = 32;

/// One ray's nearest hit so far in each lane: strictly nearer replaces, so within a
/// lane the lowest id wins ties. The same, block after block in id order, however
/// the blocks are split into tiles.
struct LaneHits {
    t: [f32; LANES],
    u: [f32; LANES],
    v: [f32; LANES],
    id: [u32; LANES],
}

impl LaneHits {
    const MISS: Self = Self {
        t: [f32::INFINITY; LANES],
        u: [0.0; LANES],
        v: [0.0; LANES],
        id: [MISS; LANES],
    };

    /// Tests `blocks`, whose first is the mesh's block `first`, against `ray`
    /// (already sanitised) with its frame; `CULL` is a `crate::Cull` as `u32`,
    /// `WATERTIGHT` selects the test.
    #[inline(always)]
    fn test<const CULL: u32, const WATERTIGHT: bool>(
        &mut self,
        blocks: &[TriangleBlock],
        first: usize,
        ray: &Ray,
        frame: &RayFrame,
    ) {
        for (index, block) in (first..).zip(blocks) {
            let base = (index * LANES) as u32;
            let c = block.candidates::<WATERTIGHT>(frame, Cull::from_bits(CULL));
            if !c.any() {
                continue;
            }
            for lane in c.lanes() {
                let vertices = block.triangle(lane);
                let (t, accepted) = place(c.t[lane], ray, frame, vertices, self.t[lane]);
                if accepted {
                    self.t[lane] = t;
                    self.u[lane] = c.u[lane];
                    self.v[lane] = c.v[lane];
                    self.id[lane] = base + lane as u32;
                }
            }
        }
    }

    /// The nearest of the lanes' hits, ties to the lowest id: the shader's answer
    /// from its walk in id order. A lane without a hit (at `t` = ∞) never wins.
    fn nearest(&self) -> Hit {
        let mut hit = Hit::MISS;
        for lane in 0..LANES {
            if nearer(self.t[lane], self.id[lane], &hit) {
                hit = Hit {
                    t: self.t[lane],
                    u: self.u[lane],
                    v: self.v[lane],
                    prim: self.id[lane],
                };
            }
        }
        hit
    }
}

/// Nearest hits of `rays`, [`GROUP_RAYS`] at a time, each group testing the blocks
/// a tile at a time ([`TILE_BLOCKS`]); `CULL` is a `crate::Cull` as `u32`,
/// `WATERTIGHT` selects the test.
#[inline(always)]
fn trace_rays_with<const CULL: u32, const WATERTIGHT: bool>(
    blocks: &[TriangleBlock],
    rays: &[Ray],
    hits: &mut [Hit],
) {
    // Each ray of the group, ready for the blocks, with its lanes' hits so far.
    let mut group = Vec::with_capacity(GROUP_RAYS.min(rays.len()));
    for (rays, hits) in rays.chunks(GROUP_RAYS).zip(hits.chunks_mut(GROUP_RAYS)) {
        group.clear();
        group.extend(rays.iter().map(|ray| {
            let ray = sanitize_ray(ray);
            (ray, RayFrame::new(&ray), LaneHits::MISS)
        }));
        for (tile, first) in blocks.chunks(TILE_BLOCKS).zip((0..).step_by(TILE_BLOCKS)) {
            for (ray, frame, lanes) in &mut group {
                lanes.test::<CULL, WATERTIGHT>(tile, first, ray, frame);
            }
        }
        for (hit, (_, _, lanes)) in hits.iter_mut().zip(&group) {
            *hit = lanes.nearest();
        }
    }
}

#[inline(always)]
fn trace_rays_portable(
    blocks: &TriangleBlocks,
    rays: &[Ray],
    hits: &mut [Hit],
    cull: Cull,
    mode: Mode,
) {
    let blocks = blocks.blocks.as_slice();
    with_consts!(trace_rays_with, cull, mode, (blocks, rays, hits));
}

simd_dispatch! {
    /// Traces `rays` against all triangles on the calling thread, writing one hit per
    /// ray (`hits.len()` must equal `rays.len()`); `cull` is a `crate::Cull`,
    /// `mode` is a `crate::Mode`. Picks the widest vector unit the CPU has at
    /// run time; results are the same on every path.
    pub fn trace_rays(blocks: &TriangleBlocks, rays: &[Ray], hits: &mut [Hit], cull: Cull, mode: Mode) => trace_rays_portable
}

/// Offers a block's accepted hits (`accepted`: [`Candidates::placed`]) to
/// `collect` in lane order (`prim` gives a lane's triangle id); returns `true` when
/// `collect` says stop. Brute force and the wide BVH's leaves both offer their
/// blocks' hits this way.
#[inline(always)]
pub(super) fn offer_accepted<const N: usize>(
    accepted: &Candidates<N>,
    prim: impl Fn(usize) -> u32,
    collect: &mut impl Collect,
) -> bool {
    accepted.lanes().any(|lane| {
        let hit = Hit {
            t: accepted.t[lane],
            u: accepted.u[lane],
            v: accepted.v[lane],
            prim: prim(lane),
        };
        collect.offer(hit)
    })
}

/// Offers the accepted triangles of one (already sanitised) ray to `collect` in id
/// order, until it says stop.
#[inline(always)]
fn collect_ray<const CULL: u32, const WATERTIGHT: bool>(
    blocks: &[TriangleBlock],
    ray: &Ray,
    collect: &mut impl Collect,
) {
    let frame = RayFrame::new(ray);
    for (index, block) in blocks.iter().enumerate() {
        let base = (index * LANES) as u32;
        let prim = |lane: usize| base + lane as u32;
        let c = block.candidates::<WATERTIGHT>(&frame, Cull::from_bits(CULL));
        if c.any() && offer_accepted(&c.placed(block, ray, &frame), prim, collect) {
            return;
        }
    }
}

#[inline(always)]
fn occluded_rays_with<const CULL: u32, const WATERTIGHT: bool>(
    blocks: &[TriangleBlock],
    rays: &[Ray],
    occluded: &mut [bool],
) {
    for (ray, out) in rays.iter().zip(occluded) {
        let mut any = AnyHit::default();
        collect_ray::<CULL, WATERTIGHT>(blocks, &sanitize_ray(ray), &mut any);
        *out = any.0;
    }
}

#[inline(always)]
fn occluded_rays_portable(
    blocks: &TriangleBlocks,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
    mode: Mode,
) {
    let blocks = blocks.blocks.as_slice();
    with_consts!(occluded_rays_with, cull, mode, (blocks, rays, occluded));
}

simd_dispatch! {
    /// Writes whether each ray hits any triangle (`occluded.len()` must equal
    /// `rays.len()`); each ray stops at its first accepted hit.
    pub fn occluded_rays(blocks: &TriangleBlocks, rays: &[Ray], occluded: &mut [bool], cull: Cull, mode: Mode) => occluded_rays_portable
}

#[inline(always)]
fn collect_rays_with<const CULL: u32, const WATERTIGHT: bool>(
    blocks: &[TriangleBlock],
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
) {
    let k = (slots.len() / rays.len().max(1)).max(1);
    for ((ray, slots), state) in rays.iter().zip(slots.chunks_exact_mut(k)).zip(states) {
        let mut list = HitList::new(slots, 0);
        collect_ray::<CULL, WATERTIGHT>(blocks, &sanitize_ray(ray), &mut list);
        *state = list.state();
    }
}

#[inline(always)]
fn collect_rays_portable(
    blocks: &TriangleBlocks,
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
    cull: Cull,
    mode: Mode,
) {
    let blocks = blocks.blocks.as_slice();
    with_consts!(collect_rays_with, cull, mode, (blocks, rays, slots, states));
}

simd_dispatch! {
    /// Lists each ray's nearest hits: `slots` holds `k >= 1` MISS-filled slots per ray
    /// (`slots.len() == k * rays.len()`), `states` one list state per ray (see
    /// [`HitList`]).
    pub fn collect_rays(blocks: &TriangleBlocks, rays: &[Ray], slots: &mut [Hit], states: &mut [u32], cull: Cull, mode: Mode) => collect_rays_portable
}
