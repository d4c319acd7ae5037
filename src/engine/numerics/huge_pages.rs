//! Large buffers backed by transparent huge pages where the kernel offers
//! them only on request (`/sys/kernel/mm/transparent_hugepage/enabled` =
//! `madvise`, a common default). A 10⁷-row table's columns fault in 4 KiB at
//! a time otherwise: a quarter of its load's CPU went to page faults.

/// Below this a buffer is left as the allocator gives it (a huge page is
/// 2 MiB; smaller requests gain nothing).
const HUGE: usize = 4 << 20;

/// An empty vector with room for `cap` elements, its pages asked to be huge.
/// Only advice: the contents and the results are the same either way.
pub fn vec_with_capacity<T>(cap: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(cap);
    advise(
        v.as_ptr().cast(),
        cap.saturating_mul(std::mem::size_of::<T>()),
    );
    v
}

#[cfg(target_os = "linux")]
fn advise(ptr: *const u8, bytes: usize) {
    const PAGE: usize = 2 << 20;
    if bytes < HUGE {
        return;
    }
    // The 2 MiB-aligned interior of the allocation (madvise needs an aligned
    // start; the ragged ends keep small pages).
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + bytes) / PAGE * PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside the allocation just made, and
        // MADV_HUGEPAGE changes no contents; an error (no THP) is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: *const u8, _: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn a_huge_buffer_holds_what_is_written() {
        let n = 3 << 20;
        let mut v: Vec<f64> = super::vec_with_capacity(n);
        assert!(v.capacity() >= n && v.is_empty());
        v.extend((0..n).map(|i| i as f64));
        assert_eq!(v[n - 1], (n - 1) as f64);
        let small: Vec<u8> = super::vec_with_capacity(10);
        assert!(small.capacity() >= 10);
    }
}
