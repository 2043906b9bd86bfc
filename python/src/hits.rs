//! Every hit of every ray, however many: the library's all-hits query
//! (`Picker::trace_all`, which lists the `max_hits` nearest) asked again with a
//! larger `max_hits` for the rays whose list was cut.

use std::collections::HashMap;

use raypick::{Hit, PickMesh, Picker, TraceOptions, TraceRay};

/// Rays per call of the first round.
const CHUNK: usize = 1 << 16;

/// Hits listed per ray in the first round; later rounds multiply it by 8.
const FIRST_MAX_HITS: usize = 8;

/// Largest number of hit slots (16 bytes each) of one call.
const MAX_SLOTS: usize = 1 << 22;

/// The hits of every ray, nearest first: ray `i`'s are `hits[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Default)]
pub struct HitLists {
    /// One more than there are rays.
    pub offsets: Vec<usize>,
    /// Every ray's hits, in ray order.
    pub hits: Vec<Hit>,
}

/// Every accepted hit of every ray (sorted by `(t, triangle id)`, as
/// `Picker::trace_all` sorts them).
pub fn all_hits<R: TraceRay + Copy>(
    picker: &Picker,
    mesh: &PickMesh,
    rays: &[R],
    options: &TraceOptions,
) -> raypick::Result<HitLists> {
    // No ray can hit more triangles than the mesh has: a list that long is never cut.
    let most = mesh.triangle_count().max(1);
    let mut lists = HitLists {
        offsets: Vec::with_capacity(rays.len() + 1),
        hits: Vec::new(),
    };
    lists.offsets.push(0);
    for chunk in rays.chunks(CHUNK) {
        let first = picker.trace_all(mesh, chunk, FIRST_MAX_HITS.min(most), options)?;
        let mut cut: Vec<usize> = (0..chunk.len())
            .filter(|&i| first.is_truncated(i))
            .collect();
        let mut long: HashMap<usize, Vec<Hit>> = HashMap::new();
        let mut max_hits = FIRST_MAX_HITS;
        while !cut.is_empty() {
            max_hits = max_hits.saturating_mul(8).min(most);
            let per_call = (MAX_SLOTS / max_hits).max(1);
            let mut still = Vec::new();
            for group in cut.chunks(per_call) {
                let again: Vec<R> = group.iter().map(|&i| chunk[i]).collect();
                let all = picker.trace_all(mesh, &again, max_hits, options)?;
                for (j, &i) in group.iter().enumerate() {
                    if all.is_truncated(j) {
                        still.push(i);
                    } else {
                        long.insert(i, all.hits_of(j).to_vec());
                    }
                }
            }
            cut = still;
        }
        for i in 0..chunk.len() {
            match long.get(&i) {
                Some(hits) => lists.hits.extend_from_slice(hits),
                None => lists.hits.extend_from_slice(first.hits_of(i)),
            }
            lists.offsets.push(lists.hits.len());
        }
    }
    Ok(lists)
}
