//! Large build buffers backed by huge pages where the system offers them.
//!
//! A 1M-triangle build writes some 100 MB of fresh memory (the triangles' boxes,
//! the node array under construction and each node's triangle range), a [`Bvh`](super::Bvh)
//! some 90 MB more (the compacted node array, the triangles in leaf order), and
//! the CPU's collapse, which reads the tree without those, some 70 MB (its leaf
//! blocks). Fresh
//! pages are zeroed by the system as they are first touched, several times faster
//! with 2 MiB pages than with 4 KiB ones. On Linux every such buffer is therefore
//! marked for transparent huge pages (`madvise(MADV_HUGEPAGE)`, which systems set
//! to `madvise` honour). That includes the node array under construction, whose
//! windows leave gaps (see `nodes`) that huge pages zero with their neighbours
//! where small pages would never touch them: zeroing that fast is still the
//! cheaper, and the CPU's tree, with a fifth as many nodes as triangles, takes
//! windows of half the usual room, so that less of the array is zeroed at all.
//! Elsewhere, or when the system declines, they are ordinary allocations. The
//! build's own buffers of a few MiB ([`scratch`]) ask for at least 32 MiB of
//! address space, so that they come from fresh pages even after earlier builds'
//! buffers were freed.

/// Buffers smaller than this are not worth marking.
const MIN_BYTES: usize = 4 << 20;

/// Large buffers take at least this many bytes of address space: glibc's
/// allocator serves requests this large from fresh pages of the system, whereas
/// below it, once earlier large buffers have been freed (which raises its
/// threshold up to 32 MiB), it serves them from its heap, whose reused memory it
/// zeroes by hand and whose pages come back small. The excess is never touched,
/// so it costs address space only.
const FRESH_BYTES: usize = (32 << 20) + 4096;

/// Room for `capacity` elements of `T`, or more where that makes the buffer
/// large enough to come from fresh pages ([`FRESH_BYTES`]).
fn fresh_capacity<T>(capacity: usize) -> usize {
    let bytes = capacity * size_of::<T>();
    if bytes < MIN_BYTES { capacity } else { capacity.max(FRESH_BYTES.div_ceil(size_of::<T>())) }
}

/// An empty vector with room for `capacity` elements, marked for huge pages.
pub(crate) fn with_capacity<T>(capacity: usize) -> Vec<T> {
    let v = Vec::with_capacity(capacity);
    advise_huge(v.as_ptr() as usize, v.capacity() * size_of::<T>());
    v
}

/// A vector of `len` zeroed elements, marked for huge pages before any is touched
/// (a large zeroed allocation comes straight from the system, whose fresh pages are
/// zero already). Only for types aligned to at most 16 bytes: the allocator zeroes
/// more strictly aligned ones itself, touching every page before the mark.
pub(crate) fn zeroed<T: bytemuck::Zeroable>(len: usize) -> Vec<T> {
    zeroed_with_room::<T>(len, len)
}

/// [`zeroed`] for a buffer that the build frees before it returns: where it is
/// large, with room for more, so that it comes from fresh pages
/// ([`FRESH_BYTES`]; buffers that are kept do not hold on to the excess).
pub(crate) fn scratch<T: bytemuck::Zeroable>(len: usize) -> Vec<T> {
    zeroed_with_room::<T>(len, fresh_capacity::<T>(len))
}

/// `len` zeroed elements with room for `capacity`, marked for huge pages.
fn zeroed_with_room<T: bytemuck::Zeroable>(len: usize, capacity: usize) -> Vec<T> {
    debug_assert!(align_of::<T>() <= 16, "zeroed by the allocator before the mark");
    let mut v = bytemuck::zeroed_vec(capacity);
    v.truncate(len);
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
