//! Large build buffers backed by huge pages where the system offers them.
//!
//! A 1M-triangle build writes some 190 MB of fresh memory (packed triangles, boxes,
//! nodes and the reordered triangles); with 4 KiB pages that is about 45,000 page
//! faults, a sizeable share of the build. On Linux the triangle and box buffers and
//! the compacted node array are marked for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`, which systems set to `madvise` honour), so they fault
//! in 2 MiB at a time. Elsewhere, or when the system declines, they are ordinary
//! allocations. The node array under construction is left as it is: its windows
//! leave gaps that are never touched (see `nodes`), which huge pages would zero all
//! the same.

/// Buffers smaller than this are not worth marking.
const MIN_BYTES: usize = 4 << 20;

/// An empty vector with room for `capacity` elements, marked for huge pages.
pub(super) fn with_capacity<T>(capacity: usize) -> Vec<T> {
    let v = Vec::with_capacity(capacity);
    advise_huge(v.as_ptr() as usize, v.capacity() * size_of::<T>());
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(start: usize, bytes: usize) {
    const PAGE: usize = 4096;
    if bytes < MIN_BYTES {
        return;
    }
    // madvise wants a page-aligned start; the partial page before it is left out.
    let first = start.next_multiple_of(PAGE);
    let len = (start + bytes).saturating_sub(first) / PAGE * PAGE;
    // SAFETY: the range lies within an allocation this process owns, and
    // MADV_HUGEPAGE only changes how its pages are backed, never their contents.
    // A failure (e.g. no THP support) leaves ordinary pages, so it is ignored.
    unsafe {
        libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _bytes: usize) {}
