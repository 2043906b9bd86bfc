//! The order in which a batch of incoherent rays is traced: grouped by the octant of
//! their directions, and each group sorted along a Morton curve by the point where
//! each ray enters the mesh's box, so that rays traced one after another on a
//! thread visit the same nodes and leaves while they are still in the caches, and
//! take the same branches on the signs of their directions.
//!
//! Batches that are already coherent (camera rays, whose neighbours start at one
//! point and differ little in direction) are not sorted; when they are the rows of
//! an image, they are traced in square tiles, one packet each, rather than in
//! strips of a row. Small batches are traced as given, and so are incoherent
//! batches whose traversal interleaves its walks ([`Incoherent::AsGiven`]).
//!
//! Only the order of work changes: each ray is traced on its own, as it would be in
//! the caller's order (a packet gives each of its rays the answer it would get
//! alone), and its answer is written back to its own slot.

use std::marker::PhantomData;

use glam::{Vec3, Vec3A};
use rayon::prelude::*;

use super::packet_traverse::PACKET;
use crate::bvh::spread;
use crate::types::Ray;

/// Batches of fewer rays are traced as given: too few rays per node for the caches
/// to keep what their neighbours read.
pub(crate) const MIN_RAYS: usize = 1 << 14;

/// Rays sorted at a time; longer batches are sorted window by window, which bounds
/// the memory the sort takes (16 bytes per ray of the window at most: the sort
/// codes and the radix sort's second buffer of them, then the codes and the order).
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

/// Bits sorted per pass of [`sorted_positions`]: two passes for [`CODE_BITS`],
/// with a table of counts of 32 KiB per thread.
const DIGIT: u32 = 12;

/// What becomes of a large batch of incoherent rays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Incoherent {
    /// Sorted by where the rays enter the box: for traversals that take one walk
    /// at a time, which wait on the caches less when neighbouring walks read the
    /// same nodes.
    Sorted,
    /// Traced as given: for traversals that interleave their walks (module
    /// `interleaved_walks`), which hide those waits, so that the sort would cost
    /// more than it saves.
    AsGiven,
}

/// The order in which a window's rays are traced.
pub(crate) struct RayOrder {
    /// Position in the window of the `i`-th ray traced: a permutation of the
    /// window's positions.
    order: Vec<u32>,
}

impl RayOrder {
    /// The order to trace `rays` (at most [`WINDOW`]) in against a mesh whose box
    /// is `bounds`, or `None` when they are best traced as given; `incoherent` says
    /// what becomes of an incoherent batch.
    pub(crate) fn for_batch(
        rays: &[Ray],
        bounds: Option<(Vec3, Vec3)>,
        incoherent: Incoherent,
    ) -> Option<Self> {
        debug_assert!(rays.len() <= WINDOW);
        let bounds = EntryBox::new(bounds?);
        if rays.len() < MIN_RAYS {
            return None;
        }
        if coherent(rays, &bounds) {
            return image_width(rays).map(|width| Self::tiles(rays.len(), width));
        }
        if incoherent == Incoherent::AsGiven {
            return None;
        }
        let keyed: Vec<u64> = rays
            .par_iter()
            .enumerate()
            .map(|(i, ray)| (u64::from(entry_code(ray, &bounds)) << 32) | i as u64)
            .collect();
        Some(Self { order: sorted_positions(keyed) })
    }

    /// The rays of an image `width` rays wide, in row order, taken in tiles of
    /// [`TILE`] × [`TILE`]: one packet each, rays whose paths through the tree
    /// stay closer together than those of a strip of one row. The tiles of each
    /// band of [`TILE`] rows come first, then what is left over (the columns
    /// right of the last whole tile, the rows below the last whole band) in row
    /// order, so that every tile starts at a multiple of a packet.
    fn tiles(rays: usize, width: usize) -> Self {
        let (bands, columns) = (rays / (TILE * width), width / TILE * TILE);
        let mut order = vec![0u32; rays];
        let (tiled, rest) = order.split_at_mut(bands * TILE * columns);
        if columns > 0 {
            tiled.par_chunks_mut(TILE * columns).enumerate().for_each(|(band, slots)| {
                let mut slots = slots.iter_mut();
                for x in (0..columns).step_by(TILE) {
                    for row in band * TILE..(band + 1) * TILE {
                        // The range first: `zip` asks it before taking a slot.
                        for (column, slot) in (x..x + TILE).zip(slots.by_ref()) {
                            *slot = (row * width + column) as u32;
                        }
                    }
                }
            });
        }
        let right = (0..bands * TILE).flat_map(|row| (columns..width).map(move |x| row * width + x));
        for (slot, i) in rest.iter_mut().zip(right.chain(bands * TILE * width..rays)) {
            *slot = i as u32;
        }
        Self { order }
    }

    /// Runs `task` on the pool over `rays` (the window this order was made for) in
    /// tracing order, `per_task` rays at a time: each call gets its rays, gathered
    /// into a buffer of its own, and their [`Places`] in the window, through which
    /// it writes their answers to the caller's slots ([`Scatter::write`]).
    pub(crate) fn for_each_task(
        &self,
        rays: &[Ray],
        per_task: usize,
        task: impl Fn(&[Ray], &Places) + Send + Sync,
    ) {
        assert_eq!(rays.len(), self.order.len(), "the window this order was made for");
        self.order
            .par_chunks(per_task)
            .for_each_init(Vec::new, |gathered, positions| {
                gathered.clear();
                gathered.extend(positions.iter().map(|&i| rays[i as usize]));
                task(gathered, &Places { order: self, positions, _here: PhantomData });
            });
    }
}

/// The places in the window of one task's rays ([`RayOrder::for_each_task`]), in
/// tracing order. Tasks of one order have disjoint places, and a `Places` never
/// leaves the thread that runs its task (it is neither `Send` nor `Sync`), so no
/// two threads write one slot.
pub(crate) struct Places<'a> {
    order: &'a RayOrder,
    positions: &'a [u32],
    _here: PhantomData<*const ()>,
}

/// A window's answers in the caller's order (`per_ray` values per ray), written by
/// the tasks of one [`RayOrder`] at their rays' places.
pub(crate) struct Scatter<'a, T> {
    out: *mut T,
    per_ray: usize,
    order: &'a RayOrder,
    _out: PhantomData<&'a mut [T]>,
}

// SAFETY: threads write disjoint slots of one exclusively borrowed slice of `Send`
// values (see `Places`), which outlives the borrow.
unsafe impl<T: Send> Send for Scatter<'_, T> {}
unsafe impl<T: Send> Sync for Scatter<'_, T> {}

impl<'a, T: Copy> Scatter<'a, T> {
    /// Answers for the rays of `order`'s window, `per_ray` each, into `out`.
    ///
    /// # Panics
    /// If `out` does not hold `per_ray` values for each ray of the window.
    pub(crate) fn new(out: &'a mut [T], per_ray: usize, order: &'a RayOrder) -> Self {
        assert_eq!(out.len(), order.order.len() * per_ray, "per_ray values per ray");
        Self { out: out.as_mut_ptr(), per_ray, order, _out: PhantomData }
    }

    /// Writes `values` (`per_ray` for each ray of `places`, in tracing order) to
    /// the slots of their rays.
    ///
    /// # Panics
    /// If `places` belong to another order, or `values` is not `per_ray` values
    /// for each of their rays.
    #[inline]
    pub(crate) fn write(&self, places: &Places, values: &[T]) {
        assert!(std::ptr::eq(places.order, self.order), "places of this scatter's order");
        assert_eq!(values.len(), places.positions.len() * self.per_ray);
        // SAFETY (both loops): each `slot` is a position of the window (`order` is
        // a permutation of them) and `out` holds `per_ray` values for each
        // (asserted by `new`); `places` are this task's own, disjoint from every
        // other task's, and stay on this thread (see `Places`); `values` is a
        // shared borrow, so it cannot overlap the exclusively borrowed `out`.
        if self.per_ray == 1 {
            // One value per ray (nearest hits, occlusion): a plain store each, not
            // a copy of a run-time length.
            for (&slot, &value) in places.positions.iter().zip(values) {
                unsafe { self.out.add(slot as usize).write(value) };
            }
            return;
        }
        for (&slot, values) in places.positions.iter().zip(values.chunks_exact(self.per_ray)) {
            unsafe {
                std::ptr::copy_nonoverlapping(
                    values.as_ptr(),
                    self.out.add(slot as usize * self.per_ray),
                    self.per_ray,
                );
            }
        }
    }
}

/// A mesh's box, with what [`entry_point`] needs of it computed once per batch.
struct EntryBox {
    lo: Vec3A,
    hi: Vec3A,
    /// `1 / (hi - lo)`, each extent at least the smallest normal float.
    inv_extent: Vec3A,
}

impl EntryBox {
    fn new((lo, hi): (Vec3, Vec3)) -> Self {
        let (lo, hi) = (Vec3A::from(lo), Vec3A::from(hi));
        let inv_extent = (hi - lo).max(Vec3A::splat(f32::MIN_POSITIVE)).recip();
        Self { lo, hi, inv_extent }
    }
}

/// Where `ray` starts inside `bounds`: its origin moved forward to the box when it
/// starts outside, clamped to the box when it misses it (such rays are quick
/// anyway), as a unit-cube position. Invalid rays give some point of the cube.
fn entry_point(ray: &Ray, bounds: &EntryBox) -> Vec3A {
    let (origin, dir) = (Vec3A::from(ray.origin), Vec3A::from(ray.dir));
    let inv = dir.recip();
    let (a, b) = ((bounds.lo - origin) * inv, (bounds.hi - origin) * inv);
    let enter = a.min(b).max_element().max(ray.tmin).max(0.0);
    let enter = if enter.is_finite() { enter } else { 0.0 };
    let point = (origin + dir * enter).clamp(bounds.lo, bounds.hi);
    ((point - bounds.lo) * bounds.inv_extent).clamp(Vec3A::ZERO, Vec3A::ONE)
}

/// The sort code of `ray`: the octant of its direction (bit per negative
/// component) above the Morton code of its [`entry_point`] ([`BITS`] bits per
/// axis).
fn entry_code(ray: &Ray, bounds: &EntryBox) -> u32 {
    let p = entry_point(ray, bounds) * ((1u32 << BITS) - 1) as f32;
    // `as` saturates and maps NaN to 0.
    let morton = spread(p.x as u32) | (spread(p.y as u32) << 1) | (spread(p.z as u32) << 2);
    (ray.dir.cmplt(Vec3::ZERO).bitmask() << (3 * BITS)) | morton
}

/// Rays per side of the square tiles a camera image is traced in: a tile is one
/// packet.
const TILE: usize = 4;
const _: () = assert!(TILE * TILE == PACKET);

/// Widest image row that [`image_width`] looks for.
const MAX_WIDTH: usize = 1 << 14;

/// The width of the image whose rays `rays` are, in row order, if they look like
/// one: the ray below the first is the one, past the first [`TILE`], whose
/// direction is nearest the first's (along a row the directions move away from
/// it), and at most places of the batch the next ray in the row points nearly
/// the same way and the ray a row down about as nearly. `None` for batches of any other shape, which keep
/// their order.
fn image_width(rays: &[Ray]) -> Option<usize> {
    let limit = (rays.len() / TILE).min(MAX_WIDTH);
    let first = rays[0].dir;
    let width = (TILE..limit).min_by(|&a, &b| {
        first.distance_squared(rays[a].dir).total_cmp(&first.distance_squared(rays[b].dir))
    })?;
    let span = rays.len() - width - 1;
    let rows = (0..SAMPLES)
        .filter(|&s| {
            let i = (s as u64 * 0x9e37_79b9 % span as u64) as usize;
            let dir = rays[i].dir;
            let across = dir.distance(rays[i + 1].dir);
            let down = dir.distance(rays[i + width].dir);
            across <= CLOSE * dir.length() && down <= ROW_PITCH * across
        })
        .count();
    (rows * 4 >= SAMPLES * 3).then_some(width)
}

/// How much farther than the next ray in its row the ray a row down may point,
/// in an image: pixels taller than wide, and the ends of rows (where the next ray
/// starts the following row) within the quarter of samples allowed to miss.
const ROW_PITCH: f32 = 4.0;

/// Whether most neighbouring rays of the batch (a sample of [`SAMPLES`] pairs, at
/// scattered places so that no image width lines up with the sampling) already
/// start close together and point the same way.
fn coherent(rays: &[Ray], bounds: &EntryBox) -> bool {
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

/// The positions (low 32 bits) of `codes` in the order of their upper 32 bits (of
/// which the low [`CODE_BITS`] are used), equal codes keeping their order: a
/// least-significant-digit radix sort, each pass split among the pool's threads
/// (the same order whatever their number: each pass is stable).
fn sorted_positions(mut codes: Vec<u64>) -> Vec<u32> {
    const PASSES: u32 = CODE_BITS.div_ceil(DIGIT);
    let mut other = vec![0u64; codes.len()];
    for pass in 0..PASSES - 1 {
        scatter_by_digit(&codes, 32 + pass * DIGIT, &mut other, |code| code);
        std::mem::swap(&mut codes, &mut other);
    }
    drop(other);
    let mut positions = vec![0u32; codes.len()];
    scatter_by_digit(&codes, 32 + (PASSES - 1) * DIGIT, &mut positions, |code| code as u32);
    positions
}

/// Codes per part of a radix pass, at the least: enough to outweigh a table of
/// counts and a task.
const MIN_PART: usize = 1 << 16;

/// One stable pass of [`sorted_positions`]: `value` of each of `codes` into `out`,
/// in the order of the digit at `shift`. The codes are cut into one part per
/// thread; each part counts its digits, and writes its values into slices of
/// `out` of its own, one per digit: after those of every digit below, and after
/// the earlier parts' of the same digit.
fn scatter_by_digit<T: Send>(
    codes: &[u64],
    shift: u32,
    out: &mut [T],
    value: impl Fn(u64) -> T + Sync,
) {
    const DIGITS: usize = 1 << DIGIT;
    let digit = |code: u64| ((code >> shift) as usize) & (DIGITS - 1);
    let part = codes.len().div_ceil(rayon::current_num_threads()).max(MIN_PART);
    let counts: Vec<Vec<usize>> = codes
        .par_chunks(part)
        .map(|codes| {
            let mut count = vec![0; DIGITS];
            for &code in codes {
                count[digit(code)] += 1;
            }
            count
        })
        .collect();
    let mut slots: Vec<Vec<std::slice::IterMut<T>>> =
        counts.iter().map(|_| Vec::with_capacity(DIGITS)).collect();
    let mut rest = out;
    for d in 0..DIGITS {
        for (count, slots) in counts.iter().zip(&mut slots) {
            let (slice, after) = rest.split_at_mut(count[d]);
            slots.push(slice.iter_mut());
            rest = after;
        }
    }
    codes.par_chunks(part).zip(slots).for_each(|(codes, mut slots)| {
        for &code in codes {
            // Each part's slice for a digit holds exactly its codes of that digit.
            if let Some(slot) = slots[digit(code)].next() {
                *slot = value(code);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::{self, Rng, fixtures};

    const BOX: (Vec3, Vec3) = (Vec3::splat(-1.0), Vec3::splat(1.0));

    #[test]
    fn radix_sort_orders_by_code_and_keeps_ties_in_order() {
        // Few codes (one part), and enough for a part per thread on pools of
        // several sizes, with codes spread over every bit and with many ties.
        let mut rng = Rng::new(3);
        for (n, bits) in [(5000, CODE_BITS), (300_000, CODE_BITS), (300_000, 5)] {
            let codes: Vec<u64> = (0..n as u64)
                .map(|i| (u64::from(rng.next_u32() >> (32 - bits)) << 32) | i)
                .collect();
            let mut expected = codes.clone();
            expected.sort_by_key(|c| (c >> 32, c & 0xffff_ffff));
            let expected: Vec<u32> = expected.iter().map(|&c| c as u32).collect();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let sorted = pool.install(|| sorted_positions(codes.clone()));
                assert!(sorted == expected, "{n} codes of {bits} bits, {threads} threads");
            }
        }
    }

    #[test]
    fn entry_points_are_where_rays_reach_the_box() {
        let point = |ray: &Ray| Vec3::from(entry_point(ray, &EntryBox::new(BOX)));
        let ray = Ray::new(Vec3::new(-3.0, 0.5, 0.0), Vec3::X);
        assert_eq!(point(&ray), Vec3::new(0.0, 0.75, 0.5));
        let inside = Ray::new(Vec3::new(0.0, 0.5, -0.5), -Vec3::X);
        assert_eq!(point(&inside), Vec3::new(0.5, 0.75, 0.25));
        let past_tmin = Ray::with_interval(Vec3::new(-3.0, 0.0, 0.0), Vec3::X, 3.5, 9.0);
        assert_eq!(point(&past_tmin), Vec3::new(0.75, 0.5, 0.5));
        // Rays that miss the box, and invalid ones, still give a point of the cube.
        for ray in [
            Ray::new(Vec3::new(-3.0, 5.0, 0.0), Vec3::X),
            Ray::new(Vec3::NAN, Vec3::X),
            Ray::new(Vec3::ZERO, Vec3::ZERO),
            Ray::new(Vec3::splat(f32::MAX), Vec3::splat(f32::INFINITY)),
        ] {
            let p = point(&ray);
            assert!(p.cmpge(Vec3::ZERO).all() && p.cmple(Vec3::ONE).all(), "{p}");
        }
    }

    #[test]
    fn morton_codes_interleave_the_axes() {
        assert_eq!(spread(0b1011), 0b1_000_001_001);
        let entry = EntryBox::new(BOX);
        let code = |p: Vec3| entry_code(&Ray::new(p - Vec3::Z * 3.0, Vec3::Z), &entry);
        assert_eq!(code(Vec3::new(-1.0, -1.0, 0.0)), 0);
        assert_eq!(code(Vec3::new(1.0, 1.0, 0.0)), 3 * spread((1 << BITS) - 1));
        // The octant comes first: x and z negative are bits 0 and 2 of it.
        let back = Ray::new(Vec3::new(3.0, 0.0, 3.0), Vec3::new(-1.0, 0.0, -1.0));
        assert_eq!(entry_code(&back, &entry) >> (3 * BITS), 0b101);
    }

    #[test]
    fn camera_images_are_traced_in_tiles() {
        for (width, height) in [(256, 256), (203, 97)] {
            let rays = kit::rays(fixtures::camera_rays(BOX, width, height));
            assert_eq!(image_width(&rays), Some(width as usize));
            let order = RayOrder::for_batch(&rays, Some(BOX), Incoherent::Sorted).expect("an image's rays are tiled");
            let as_given = RayOrder::for_batch(&rays, Some(BOX), Incoherent::AsGiven);
            assert_eq!(as_given.expect("an image's rays are tiled").order, order.order);
            let tile = |x: u32, y: u32| -> Vec<u32> {
                (y..y + 4).flat_map(|row| (x..x + 4).map(move |col| row * width + col)).collect()
            };
            assert_eq!(order.order[..16], tile(0, 0)[..]);
            assert_eq!(order.order[16..32], tile(4, 0)[..]);
            let band = (width / 4 * 16) as usize;
            assert_eq!(order.order[band..band + 16], tile(0, 4)[..]);
            // Every ray once; the rays right of the last whole tile, then those
            // below the last whole band, come last in row order.
            let mut sorted = order.order.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().copied().eq(0..width * height));
            let tiled = (height / 4 * 4) * (width / 4 * 4);
            let rest = &order.order[tiled as usize..];
            assert!(rest.is_sorted());
            assert!(rest.iter().all(|&i| i % width >= width / 4 * 4 || i / width >= height / 4 * 4));
        }
        // Incoherent rays, and rays from one point in random directions, are not
        // rows of an image.
        let mut rng = Rng::new(8);
        let incoherent = kit::rays(fixtures::incoherent_rays(MIN_RAYS, &mut rng, BOX));
        assert_eq!(image_width(&incoherent), None);
        let spray: Vec<Ray> = (0..MIN_RAYS).map(|_| Ray::new(Vec3::ZERO, rng.unit_vector())).collect();
        assert_eq!(image_width(&spray), None);
    }

    #[test]
    fn small_batches_keep_their_order() {
        let mut rng = Rng::new(4);
        let few = kit::rays(fixtures::incoherent_rays(MIN_RAYS - 1, &mut rng, BOX));
        assert!(RayOrder::for_batch(&few, Some(BOX), Incoherent::Sorted).is_none());
        assert!(RayOrder::for_batch(&few, None, Incoherent::Sorted).is_none());
    }

    #[test]
    fn incoherent_rays_are_sorted_and_answers_go_to_their_slots() {
        let mut rng = Rng::new(5);
        let rays = kit::rays(fixtures::incoherent_rays(MIN_RAYS * 2, &mut rng, BOX));
        assert!(RayOrder::for_batch(&rays, Some(BOX), Incoherent::AsGiven).is_none());
        let order = RayOrder::for_batch(&rays, Some(BOX), Incoherent::Sorted).expect("incoherent rays are sorted");
        let entry = EntryBox::new(BOX);
        let codes: Vec<u32> = order.order.iter().map(|&i| entry_code(&rays[i as usize], &entry)).collect();
        assert!(codes.is_sorted());
        // Each task gets its rays in tracing order, and the values it writes for
        // them (two per ray here, one there) land in their rays' slots.
        let mut out = vec![[0.0; 3]; rays.len() * 2];
        let mut first = vec![Ray::new(Vec3::ZERO, Vec3::X); rays.len()];
        let (pairs, ones) = (Scatter::new(&mut out, 2, &order), Scatter::new(&mut first, 1, &order));
        order.for_each_task(&rays, 100, |task_rays, places| {
            assert!(task_rays.len() <= 100);
            let codes: Vec<u32> = task_rays.iter().map(|r| entry_code(r, &entry)).collect();
            assert!(codes.is_sorted());
            let values: Vec<[f32; 3]> = task_rays
                .iter()
                .flat_map(|r| [r.origin.to_array(), r.dir.to_array()])
                .collect();
            pairs.write(places, &values);
            ones.write(places, task_rays);
        });
        let expected: Vec<[f32; 3]> = rays
            .iter()
            .flat_map(|r| [r.origin.to_array(), r.dir.to_array()])
            .collect();
        assert_eq!(out, expected);
        assert_eq!(first, rays);
    }

    #[test]
    #[should_panic(expected = "places of this scatter's order")]
    fn a_scatter_takes_only_the_places_of_its_own_order() {
        let mut rng = Rng::new(7);
        let rays = kit::rays(fixtures::incoherent_rays(MIN_RAYS, &mut rng, BOX));
        let (one, other) = (
            RayOrder::for_batch(&rays, Some(BOX), Incoherent::Sorted).expect("incoherent rays are sorted"),
            RayOrder::for_batch(&rays, Some(BOX), Incoherent::Sorted).expect("incoherent rays are sorted"),
        );
        let mut out = vec![0u8; rays.len()];
        let out = Scatter::new(&mut out, 1, &one);
        other.for_each_task(&rays, 64, |rays, places| out.write(places, &vec![1; rays.len()]));
    }

    #[test]
    fn reordered_batches_answer_like_brute_force() {
        // Two windows' worth of rays would take too long here; one batch of
        // incoherent rays, which the BVH traces as given (interleaved; the entry
        // order they would take sorted is checked above), and one camera image,
        // which it traces in tiles, must get brute force's answers (traced as
        // given) in the caller's slots for every query.
        use crate::cpu::{CpuBackend, CpuMesh};
        use crate::{Accel, TraceOptions};
        let mut rng = Rng::new(6);
        let mesh = kit::mesh(fixtures::concat(&[
            fixtures::icosphere(3, 0.6, Vec3::new(0.2, 0.1, 0.0)),
            fixtures::soup(1500, &mut rng, BOX),
        ]));
        let bounds = mesh.bounds();
        let incoherent = kit::rays(fixtures::incoherent_rays(
            MIN_RAYS + 1000,
            &mut rng,
            bounds.unwrap(),
        ));
        let camera = kit::rays(fixtures::camera_rays(bounds.unwrap(), 190, 101));
        let cpu = CpuBackend::with_threads(2).expect("a 2-thread pool");
        let (bvh, brute) = (
            CpuMesh::new(&mesh),
            CpuMesh::with_accel(&mesh, Accel::Brute),
        );
        let options = TraceOptions::default();
        for rays in [incoherent, camera] {
            assert!(RayOrder::for_batch(&rays, bounds, Incoherent::Sorted).is_some());
            let expected = cpu.trace(&brute, &rays, &options);
            assert!(expected.iter().filter(|h| h.is_hit()).count() > rays.len() / 5);
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
}
