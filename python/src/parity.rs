//! Inside or outside: the parity of the number of times a ray from the point crosses
//! the surface, with raypick's watertight test deciding every crossing.
//!
//! ## Why a crossing count can be trusted here
//!
//! The watertight test (Woop, Benthin, Wald) moves each vertex into the ray's sheared
//! frame, where the ray is the `+z` axis through `(0, 0)`, and decides "inside" by the
//! signs of three 2D edge functions. raypick computes an edge function's sign exactly
//! for the sheared (rounded) vertex coordinates: rounding never flips it, and an
//! exact zero is recomputed exactly. Every triangle that uses a vertex sees the same
//! sheared coordinates, so the test answers exactly as if the mesh had been moved by
//! at most a few units in the last place of its coordinates relative to the point
//! (a closed mesh stays closed), and then tested exactly. For such a mesh the parity
//! of the number of triangles the ray passes through is the inside/outside answer,
//! provided the ray meets no edge or vertex: then every crossing is in the interior of
//! exactly one triangle.
//!
//! A ray that meets an edge or a vertex is recognised by its hits: an edge function of
//! a hit triangle is exactly zero, so `u == 0` or `v == 0` (the weights are `U/det`,
//! `V/det`), or `u + v` is within rounding of 1 (the third weight is zero). Such a ray
//! is not counted; the point is traced again along the next of 16 fixed directions
//! (8 lines, both ways; none along an axis or a diagonal), until `nsamples` rays have
//! met no edge or vertex, and the majority of their parities decides (`nsamples = 1`:
//! the first clean ray decides). A point that is lined up with a vertex or edge along
//! one direction is not along the next one, unless it lies on the surface.
//!
//! - A hit at `t == 0` means the point lies on the surface: it counts as inside (the
//!   solid includes its boundary), and no further ray is traced.
//! - Points within rounding of the surface (about `1e-7` of their distance to the
//!   triangles involved) may be classified either way; their distance is about zero.
//! - A triangle almost parallel to a ray (within raypick's parallel bound, about
//!   `2^-20` relative) is not hit by it; such a ray can miscount. The directions are
//!   chosen so that this needs a triangle nearly parallel to one of them.
//! - If all 16 directions meet an edge or vertex (which needs a point on the
//!   surface), the majority of all the parities seen decides, ties inside.
//! - The answer is only meaningful for closed meshes (every edge shared by two
//!   triangles, no self-intersections); for others it depends on the direction, and
//!   `nsamples > 1` votes over several.

use glam::Vec3;

use crate::hits::HitLists;
use crate::scene::{Failure, Outcome, PointRay, hits_of};

/// The 8 direction lines (unit vectors rounded to f32): no component near 0 or
/// ±1, no two components of nearly equal size (no diagonal), no two lines closer
/// than about 37°.
pub const LINES: [[f32; 3]; 8] = [
    [0.494_781_6, -0.202_501_67, 0.845_094_2],
    [-0.390_194_1, -0.740_369_9, -0.547_358_2],
    [-0.337_361_63, 0.803_796_05, -0.489_999_06],
    [0.530_783_2, 0.792_398_04, -0.300_623_66],
    [0.534_959_3, -0.777_957_26, -0.329_546_75],
    [-0.634_545_56, 0.207_652_64, 0.744_467_8],
    [-0.843_599_8, 0.437_543_12, -0.311_280_28],
    [-0.849_564_43, -0.272_996_93, -0.451_345_65],
];

/// Number of directions tried: every line both ways.
pub const DIRECTIONS: usize = 2 * LINES.len();

/// Points per round of tracing.
const CHUNK: usize = 1 << 16;

/// Direction `i` of [`DIRECTIONS`]: the lines in order, then the lines reversed.
pub fn direction(i: usize) -> Vec3 {
    let d = Vec3::from_array(LINES[i % LINES.len()]);
    if i < LINES.len() { d } else { -d }
}

/// Whether a hit lies on an edge or vertex of its triangle, as far as its weights
/// show (see the module docs; a few hits near an edge are counted too, which only
/// costs another ray).
pub fn on_boundary(u: f32, v: f32) -> bool {
    u == 0.0 || v == 0.0 || 1.0 - (f64::from(u) + f64::from(v)) <= 1.0 / (1u64 << 20) as f64
}

/// Votes of one point.
#[derive(Clone, Copy, Default)]
struct Votes {
    clean_in: u8,
    clean_out: u8,
    other_in: u8,
    other_out: u8,
    rays: u8,
    decided: Option<bool>,
}

impl Votes {
    fn majority(&self) -> bool {
        if self.clean_in != self.clean_out {
            return self.clean_in > self.clean_out;
        }
        self.clean_in + self.other_in >= self.clean_out + self.other_out
    }
}

/// Inside (`true`) or outside of every point, and the number of rays each needed;
/// `trace` returns every hit of each ray of a batch (`[0, inf]`, no culling,
/// watertight test). `nsamples` must be odd and at most [`DIRECTIONS`].
pub fn classify<P: PointRay>(
    points: &[P],
    nsamples: usize,
    trace: impl Fn(&[P::Ray]) -> raypick::Result<HitLists>,
) -> Outcome<(Vec<bool>, Vec<u8>)> {
    if nsamples == 0 || nsamples.is_multiple_of(2) || nsamples > DIRECTIONS {
        return Err(Failure::Value(format!(
            "nsamples must be odd and between 1 and {DIRECTIONS}, got {nsamples}"
        )));
    }
    let mut inside = Vec::with_capacity(points.len());
    let mut rays_used = Vec::with_capacity(points.len());
    for chunk in points.chunks(CHUNK) {
        let mut votes = vec![Votes::default(); chunk.len()];
        let mut pending: Vec<usize> = (0..chunk.len()).collect();
        for d in 0..DIRECTIONS {
            if pending.is_empty() {
                break;
            }
            let dir = direction(d);
            let rays: Vec<P::Ray> = pending.iter().map(|&i| chunk[i].ray(dir)).collect();
            let lists = trace(&rays)?;
            let mut next = Vec::new();
            for (j, &i) in pending.iter().enumerate() {
                let hits = hits_of(&lists, j);
                let vote = &mut votes[i];
                vote.rays += 1;
                if hits.iter().any(|h| h.t == 0.0) {
                    vote.decided = Some(true);
                    continue;
                }
                let odd = hits.len() % 2 == 1;
                if hits.iter().any(|h| on_boundary(h.u, h.v)) {
                    if odd {
                        vote.other_in += 1;
                    } else {
                        vote.other_out += 1;
                    }
                    next.push(i);
                    continue;
                }
                if odd {
                    vote.clean_in += 1;
                } else {
                    vote.clean_out += 1;
                }
                if usize::from(vote.clean_in + vote.clean_out) == nsamples {
                    vote.decided = Some(vote.clean_in > vote.clean_out);
                } else {
                    next.push(i);
                }
            }
            pending = next;
        }
        for vote in &votes {
            inside.push(vote.decided.unwrap_or_else(|| vote.majority()));
            rays_used.push(vote.rays);
        }
    }
    Ok((inside, rays_used))
}
