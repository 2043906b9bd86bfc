//! The order in which a batch of incoherent rays is traced: grouped by the octant of
//! their directions, and each group sorted along a Morton curve by the point where
//! each ray enters the mesh's box, so that rays traced one after another on a
//! thread visit the same nodes and leaves while they are still in the caches, and
//! take the same branches on the signs of their directions.
//!
//! Only the order of work changes: each ray is traced on its own, as it would be in
//! the caller's order, and its answer is written back to its own slot. Batches that
//! are small, or already coherent (camera rays, whose neighbours start at one point
//! and differ little in direction), are traced as given.

use glam::Vec3;
use rayon::prelude::*;

use crate::bvh::spread;
use crate::types::Ray;

/// Batches of fewer rays are traced as given: too few rays per node for the caches
/// to keep what their neighbours read.
pub(crate) const MIN_RAYS: usize = 1 << 14;

/// Rays sorted at a time; longer batches are sorted window by window, which bounds
/// the memory the sorted copies take (some 52 bytes per ray of the window for
/// nearest hits: the order, the rays and their answers; more for hit lists).
pub(crate) const WINDOW: usize = 1 << 20;

/// Neighbouring rays checked when deciding whether a batch is already coherent.
const SAMPLES: usize = 256;

/// Neighbouring rays are close when they differ by less than this: the distance
/// between their entry points (in a unit cube for the box) plus the distance
/// between their unit directions. A batch is coherent when most are.
const CLOSE: f32 = 0.05;

/// Bits per axis of the Morton code of an entry point: cells of 1/128 of the box
/// on each axis. Finer cells traced no faster (rays in one cell still point every
/// way) and took the sort another pass.
const BITS: u32 = 7;

/// Bits of a ray's sort code ([`entry_code`]): the octant's three, then the
/// Morton code's.
const CODE_BITS: u32 = 3 + 3 * BITS;

/// Bits sorted per pass of [`radix_sort_codes`]: two passes for [`CODE_BITS`],
/// with a table of counts of 32 KiB.
const DIGIT: u32 = 12;

/// The rays of a window in tracing order.
pub(crate) struct RayOrder {
    /// Position in the window of the `i`-th ray traced.
    order: Vec<u32>,
    /// The rays, in tracing order.
    pub(crate) rays: Vec<Ray>,
}

impl RayOrder {
    /// The order to trace `rays` (at most [`WINDOW`]) in against a mesh whose box
    /// is `bounds`, or `None` when they are best traced as given.
    pub(crate) fn for_batch(rays: &[Ray], bounds: Option<(Vec3, Vec3)>) -> Option<Self> {
        debug_assert!(rays.len() <= WINDOW);
        let bounds = bounds?;
        if rays.len() < MIN_RAYS || coherent(rays, bounds) {
            return None;
        }
        let mut keyed: Vec<u64> = rays
            .par_iter()
            .enumerate()
            .map(|(i, ray)| (u64::from(entry_code(ray, bounds)) << 32) | i as u64)
            .collect();
        radix_sort_codes(&mut keyed);
        let order: Vec<u32> = keyed.into_par_iter().map(|k| k as u32).collect();
        let rays = order.par_iter().map(|&i| rays[i as usize]).collect();
        Some(Self { order, rays })
    }

    /// Writes `traced` (the answers in tracing order, `per_ray` values each) to
    /// `out` in the caller's order, on the pool in chunks: random writes that one
    /// thread alone would spend a good part of a large batch's time on.
    pub(crate) fn scatter<T: Copy + Send + Sync>(&self, traced: &[T], per_ray: usize, out: &mut [T]) {
        assert!(traced.len() == out.len() && out.len() == self.order.len() * per_ray);
        let out = SlotWriter(out.as_mut_ptr());
        self.order
            .par_chunks(SCATTER_CHUNK)
            .zip(traced.par_chunks(SCATTER_CHUNK * per_ray))
            .for_each(|(slots, values)| {
                // SAFETY: `order` is a permutation of the window's positions
                // (`for_batch` sorts the indices `0..n`), so each ray's `per_ray`
                // values of `out` (`n * per_ray` long, asserted above) are written
                // by exactly one iteration, and `traced` does not overlap `out` (a
                // shared and an exclusive borrow).
                if per_ray == 1 {
                    // One value per ray (nearest hits, occlusion): a plain store
                    // each, not a copy of a run-time length.
                    for (&slot, &value) in slots.iter().zip(values) {
                        unsafe { out.write_one(slot as usize, value) };
                    }
                } else {
                    for (&slot, value) in slots.iter().zip(values.chunks_exact(per_ray)) {
                        unsafe { out.write(slot as usize * per_ray, value) };
                    }
                }
            });
    }
}

/// Rays whose answers one scatter task writes.
const SCATTER_CHUNK: usize = 1 << 13;

/// `out` of [`RayOrder::scatter`], written at disjoint places by the pool's threads.
struct SlotWriter<T>(*mut T);

// SAFETY: the threads write disjoint slots of one slice of `Send` values (see
// `RayOrder::scatter`), which outlives the parallel loop.
unsafe impl<T: Send> Send for SlotWriter<T> {}
unsafe impl<T: Send> Sync for SlotWriter<T> {}

impl<T: Copy> SlotWriter<T> {
    /// Copies `values` to `start..start + values.len()`.
    ///
    /// # Safety
    /// The range lies inside the slice, and no other thread reads or writes it
    /// meanwhile.
    #[inline(always)]
    unsafe fn write(&self, start: usize, values: &[T]) {
        // SAFETY: as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.0.add(start), values.len()) };
    }

    /// [`SlotWriter::write`] of one value at `slot`.
    ///
    /// # Safety
    /// As for [`SlotWriter::write`].
    #[inline(always)]
    unsafe fn write_one(&self, slot: usize, value: T) {
        // SAFETY: as the caller promises.
        unsafe { self.0.add(slot).write(value) };
    }
}

/// A vector of `len` copies of `fill`, filled on the pool (the first touch of a
/// large batch's pages is much of its cost).
pub(crate) fn filled<T: Copy + Send + Sync>(len: usize, fill: T) -> Vec<T> {
    (0..len).into_par_iter().map(|_| fill).collect()
}

/// Where `ray` starts inside `bounds`: its origin moved forward to the box when it
/// starts outside, clamped to the box when it misses it (such rays are quick
/// anyway), as a unit-cube position. Invalid rays give some point of the cube.
fn entry_point(ray: &Ray, (lo, hi): (Vec3, Vec3)) -> Vec3 {
    let inv = ray.dir.recip();
    let (a, b) = ((lo - ray.origin) * inv, (hi - ray.origin) * inv);
    let enter = a.min(b).max_element().max(ray.tmin).max(0.0);
    let enter = if enter.is_finite() { enter } else { 0.0 };
    let point = (ray.origin + ray.dir * enter).clamp(lo, hi);
    ((point - lo) / (hi - lo).max(Vec3::splat(f32::MIN_POSITIVE))).clamp(Vec3::ZERO, Vec3::ONE)
}

/// The sort code of `ray`: the octant of its direction (bit per negative
/// component) above the Morton code of its [`entry_point`] ([`BITS`] bits per
/// axis).
fn entry_code(ray: &Ray, bounds: (Vec3, Vec3)) -> u32 {
    let p = entry_point(ray, bounds) * ((1u32 << BITS) - 1) as f32;
    // `as` saturates and maps NaN to 0.
    let morton = spread(p.x as u32) | (spread(p.y as u32) << 1) | (spread(p.z as u32) << 2);
    (ray.dir.cmplt(Vec3::ZERO).bitmask() << (3 * BITS)) | morton
}

/// Whether most neighbouring rays of the batch (a sample of [`SAMPLES`] pairs, at
/// scattered places so that no image width lines up with the sampling) already
/// start close together and point the same way.
fn coherent(rays: &[Ray], bounds: (Vec3, Vec3)) -> bool {
    let pairs = rays.len() - 1;
    let close = (0..SAMPLES)
        .filter(|&s| {
            let i = (s as u64 * 0x9e37_79b9 % pairs as u64) as usize;
            let (a, b) = (&rays[i], &rays[i + 1]);
            let moved = entry_point(a, bounds).distance(entry_point(b, bounds));
            let turned = a
                .dir
                .normalize_or_zero()
                .distance(b.dir.normalize_or_zero());
            moved + turned < CLOSE
        })
        .count();
    2 * close >= SAMPLES
}

/// Sorts `codes` by their upper 32 bits (of which the low [`CODE_BITS`] are used),
/// keeping equal codes in their order: a least-significant-digit radix sort.
fn radix_sort_codes(codes: &mut Vec<u64>) {
    let mut other = vec![0u64; codes.len()];
    for pass in 0..CODE_BITS.div_ceil(DIGIT) {
        let shift = 32 + pass * DIGIT;
        let digit = |c: u64| ((c >> shift) & ((1 << DIGIT) - 1)) as usize;
        let mut start = vec![0usize; 1 << DIGIT];
        for &c in codes.iter() {
            start[digit(c)] += 1;
        }
        let mut next = 0;
        for slot in start.iter_mut() {
            (*slot, next) = (next, next + *slot);
        }
        for &c in codes.iter() {
            let d = digit(c);
            other[start[d]] = c;
            start[d] += 1;
        }
        std::mem::swap(codes, &mut other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::{self, Rng, fixtures};

    const BOX: (Vec3, Vec3) = (Vec3::splat(-1.0), Vec3::splat(1.0));

    #[test]
    fn radix_sort_orders_by_code_and_keeps_ties_in_order() {
        let mut rng = Rng::new(3);
        let mut codes: Vec<u64> = (0..5000u64)
            .map(|i| (u64::from(rng.next_u32() >> (32 - CODE_BITS)) << 32) | i)
            .collect();
        let mut expected = codes.clone();
        expected.sort_by_key(|c| (c >> 32, c & 0xffff_ffff));
        radix_sort_codes(&mut codes);
        assert_eq!(codes, expected);
    }

    #[test]
    fn entry_points_are_where_rays_reach_the_box() {
        let ray = Ray::new(Vec3::new(-3.0, 0.5, 0.0), Vec3::X);
        assert_eq!(entry_point(&ray, BOX), Vec3::new(0.0, 0.75, 0.5));
        let inside = Ray::new(Vec3::new(0.0, 0.5, -0.5), -Vec3::X);
        assert_eq!(entry_point(&inside, BOX), Vec3::new(0.5, 0.75, 0.25));
        let past_tmin = Ray::with_interval(Vec3::new(-3.0, 0.0, 0.0), Vec3::X, 3.5, 9.0);
        assert_eq!(entry_point(&past_tmin, BOX), Vec3::new(0.75, 0.5, 0.5));
        // Rays that miss the box, and invalid ones, still give a point of the cube.
        for ray in [
            Ray::new(Vec3::new(-3.0, 5.0, 0.0), Vec3::X),
            Ray::new(Vec3::NAN, Vec3::X),
            Ray::new(Vec3::ZERO, Vec3::ZERO),
            Ray::new(Vec3::splat(f32::MAX), Vec3::splat(f32::INFINITY)),
        ] {
            let p = entry_point(&ray, BOX);
            assert!(p.cmpge(Vec3::ZERO).all() && p.cmple(Vec3::ONE).all(), "{p}");
        }
    }

    #[test]
    fn morton_codes_interleave_the_axes() {
        assert_eq!(spread(0b1011), 0b1_000_001_001);
        let code = |p: Vec3| entry_code(&Ray::new(p - Vec3::Z * 3.0, Vec3::Z), BOX);
        assert_eq!(code(Vec3::new(-1.0, -1.0, 0.0)), 0);
        assert_eq!(code(Vec3::new(1.0, 1.0, 0.0)), 3 * spread((1 << BITS) - 1));
        // The octant comes first: x and z negative are bits 0 and 2 of it.
        let back = Ray::new(Vec3::new(3.0, 0.0, 3.0), Vec3::new(-1.0, 0.0, -1.0));
        assert_eq!(entry_code(&back, BOX) >> (3 * BITS), 0b101);
    }

    #[test]
    fn camera_rays_and_small_batches_keep_their_order() {
        let rays = kit::rays(fixtures::camera_rays(BOX, 256, 256));
        assert!(RayOrder::for_batch(&rays, Some(BOX)).is_none());
        let mut rng = Rng::new(4);
        let few = kit::rays(fixtures::incoherent_rays(MIN_RAYS - 1, &mut rng, BOX));
        assert!(RayOrder::for_batch(&few, Some(BOX)).is_none());
        assert!(RayOrder::for_batch(&few, None).is_none());
    }

    #[test]
    fn incoherent_rays_are_sorted_and_scattered_back() {
        let mut rng = Rng::new(5);
        let rays = kit::rays(fixtures::incoherent_rays(MIN_RAYS * 2, &mut rng, BOX));
        let order = RayOrder::for_batch(&rays, Some(BOX)).expect("incoherent rays are sorted");
        let codes: Vec<u32> = order.rays.iter().map(|r| entry_code(r, BOX)).collect();
        assert!(codes.is_sorted());
        // Every ray once, and each answer back in its ray's slot (two values per ray).
        let traced: Vec<[f32; 3]> = order
            .rays
            .iter()
            .flat_map(|r| [r.origin.to_array(), r.dir.to_array()])
            .collect();
        let mut out = vec![[0.0; 3]; traced.len()];
        order.scatter(&traced, 2, &mut out);
        let expected: Vec<[f32; 3]> = rays
            .iter()
            .flat_map(|r| [r.origin.to_array(), r.dir.to_array()])
            .collect();
        assert_eq!(out, expected);
        // One value per ray, into a copy filled beforehand.
        let traced: Vec<Ray> = order.rays.clone();
        let mut out = filled(traced.len(), Ray::new(Vec3::ZERO, Vec3::X));
        assert!(out.iter().all(|r| r.dir == Vec3::X) && out.len() == rays.len());
        order.scatter(&traced, 1, &mut out);
        assert_eq!(out, rays);
    }

    #[test]
    fn reordered_batches_answer_like_brute_force() {
        // Two windows' worth of rays would take too long here; one batch of
        // incoherent rays, which the BVH traces in entry order and brute force as
        // given, must get the same answers in the caller's slots for every query.
        use crate::cpu::{CpuBackend, CpuMesh};
        use crate::{Accel, TraceOptions};
        let mut rng = Rng::new(6);
        let mesh = kit::mesh(fixtures::concat(&[
            fixtures::icosphere(3, 0.6, Vec3::new(0.2, 0.1, 0.0)),
            fixtures::soup(1500, &mut rng, BOX),
        ]));
        let bounds = mesh.bounds();
        let rays = kit::rays(fixtures::incoherent_rays(
            MIN_RAYS + 1000,
            &mut rng,
            bounds.unwrap(),
        ));
        assert!(RayOrder::for_batch(&rays, bounds).is_some());
        let cpu = CpuBackend::with_threads(2).expect("a 2-thread pool");
        let (bvh, brute) = (
            CpuMesh::new(&mesh),
            CpuMesh::with_accel(&mesh, Accel::Brute),
        );
        let options = TraceOptions::default();
        let expected = cpu.trace(&brute, &rays, &options);
        assert!(expected.iter().filter(|h| h.is_hit()).count() > rays.len() / 2);
        assert_eq!(cpu.trace(&bvh, &rays, &options), expected);
        assert_eq!(
            cpu.occluded(&bvh, &rays, &options),
            cpu.occluded(&brute, &rays, &options)
        );
        let all = |mesh| {
            cpu.trace_all(mesh, &rays, 3, &options)
                .expect("3 hits per ray")
        };
        assert_eq!(all(&bvh), all(&brute));
    }
}
