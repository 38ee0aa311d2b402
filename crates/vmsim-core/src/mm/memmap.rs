//! The frame table's memory: address space for every frame, host memory only where written.
//!
//! With CONFIG_SPARSEMEM_VMEMMAP the kernel reserves virtual space for the `struct page`
//! of every possible frame and backs it with memory only where sections are present
//! (`vmemmap_populate()`, mm/sparse-vmemmap.c). vmsim's frame table does the same on the
//! host: one anonymous mapping for the whole table, made with MAP_NORESERVE so that the
//! host's overcommit heuristic (`vm.overcommit_memory` 0, `__vm_enough_memory()`) does not
//! refuse a table larger than its memory, and backed page by page as frames are first
//! written (mm/deferred.rs writes a free block's frames only when it is used). What the
//! run may still write is watched while it runs (`capacity::Budget`).

use super::page::Page;

/// mem_map: one zero-initialised `Page` per frame, in one anonymous host mapping.
pub struct MemMap {
    ptr: std::ptr::NonNull<Page>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone, as a Vec's buffer is.
unsafe impl Send for MemMap {}
// SAFETY: shared references only read it, as a slice's do.
unsafe impl Sync for MemMap {}

impl MemMap {
    /// `n` frames, all bytes zero (a valid `Page` of plain integers); the host backs a page
    /// of the table only when it is first written.
    pub fn zeroed(n: usize) -> MemMap {
        let ptr = if n == 0 {
            std::ptr::NonNull::dangling()
        } else {
            let bytes = std::mem::size_of::<Page>()
                .checked_mul(n)
                .expect("frame table size fits the address space");
            // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                // The capacity check refuses a table the address space cannot hold
                // (RLIMIT_AS) before this; what is left is the allocator's own failure.
                let layout = std::alloc::Layout::array::<Page>(n).expect("frame table size");
                std::alloc::handle_alloc_error(layout);
            }
            std::ptr::NonNull::new(p as *mut Page).expect("mmap returned a null mapping")
        };
        MemMap { ptr, len: n }
    }
}

impl MemMap {
    /// Bytes of the mapping: address space, backed only where written.
    pub fn mapped_bytes(&self) -> usize {
        self.len * std::mem::size_of::<Page>()
    }
}

/// MAP_NORESERVE where the host has it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const NORESERVE: libc::c_int = libc::MAP_NORESERVE;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const NORESERVE: libc::c_int = 0;

impl std::ops::Deref for MemMap {
    type Target = [Page];
    fn deref(&self) -> &[Page] {
        // SAFETY: `len` zero-initialised, valid `Page`s live at `ptr` for as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for MemMap {
    fn deref_mut(&mut self) -> &mut [Page] {
        // SAFETY: as in deref, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for MemMap {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made in `zeroed`, of this size, unmapped once.
            unsafe {
                libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.mapped_bytes());
            }
        }
    }
}

impl std::fmt::Debug for MemMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemMap({} frames)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_start_zero_and_keep_what_is_written() {
        let mut m = MemMap::zeroed(3000);
        assert_eq!(m.len(), 3000);
        assert!(m
            .iter()
            .all(|p| p.flags == 0 && p.next == 0 && p.owner == 0));
        m[2999].owner = 7;
        m[0].next = 5;
        assert_eq!((m[2999].owner, m[0].next, m[1500].owner), (7, 5, 0));
        assert!(MemMap::zeroed(0).is_empty());
    }

    /// A table far larger than this host's memory is granted as address space and costs
    /// only the pages written (the overcommit heuristic would refuse it without NORESERVE).
    #[test]
    #[cfg(target_os = "linux")]
    fn a_table_larger_than_the_host_costs_only_what_is_written() {
        let ram = {
            let s = std::fs::read_to_string("/proc/meminfo").unwrap();
            let l = s.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
            l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
        };
        let n = (2 * ram / std::mem::size_of::<Page>() as u64) as usize;
        let mut m = MemMap::zeroed(n);
        for i in (0..n).step_by(n / 64) {
            m[i].owner = i as u32;
        }
        assert_eq!(m[n / 64].owner, (n / 64) as u32);
        // The host pages of this mapping that are resident (mincore), one byte per page.
        let bytes = n * std::mem::size_of::<Page>();
        let mut vec = vec![0u8; bytes.div_ceil(4096)];
        // SAFETY: the mapping of `m`, page-aligned, with one byte of `vec` per page.
        let rc =
            unsafe { libc::mincore(m.as_mut_ptr() as *mut libc::c_void, bytes, vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        let resident = vec.iter().filter(|&&b| b & 1 != 0).count();
        assert!((64..=65).contains(&resident), "{resident} pages resident");
    }
}
