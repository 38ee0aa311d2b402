//! The swap device's slots and the swap cache.
//!
//! Models mm/swapfile.c (swap_info_struct, the swap_map use counts,
//! scan_swap_map_slots allocating slots in ascending order from a cursor so
//! that swap-out writes are sequential, swap_free) and mm/swap_state.c (the
//! swap cache: a page being written to or read from a slot is found by slot).
//! Simplifications: one swap device; no clusters or per-CPU slot caches; a
//! slot has one user (no fork sharing); a page read back in leaves the swap
//! cache and frees its slot at once (as when vm_swap_full() holds).

use super::page::{Pfn, NIL};

/// The swap area (struct swap_info_struct).
#[derive(Debug, Clone, Default)]
pub struct SwapInfo {
    /// Slots [pages] (si->pages).
    pub pages: u32,
    /// Slots in use (si->inuse_pages).
    pub inuse_pages: u32,
    /// Use count of each slot (swap_map).
    swap_map: Vec<u8>,
    /// Page in the swap cache for each slot, or NIL (the swap address space).
    cache: Vec<Pfn>,
    /// Where the next search for a free slot starts (cluster_next).
    cursor: u32,
}

impl SwapInfo {
    /// A swap area of `pages` slots (swapon).
    pub fn new(pages: u32) -> Self {
        SwapInfo {
            pages,
            inuse_pages: 0,
            swap_map: vec![0; pages as usize],
            cache: vec![NIL; pages as usize],
            cursor: 0,
        }
    }

    /// Takes a free slot, searching upwards from the cursor (scan_swap_map_slots); None if full.
    pub fn get_swap_page(&mut self) -> Option<u32> {
        if self.inuse_pages >= self.pages {
            return None;
        }
        let n = self.pages;
        for i in 0..n {
            let s = (self.cursor + i) % n;
            if self.swap_map[s as usize] == 0 {
                self.swap_map[s as usize] = 1;
                self.inuse_pages += 1;
                self.cursor = (s + 1) % n;
                return Some(s);
            }
        }
        None
    }

    /// Drops the slot's user (swap_free → swap_entry_free).
    pub fn swap_free(&mut self, slot: u32) {
        debug_assert_eq!(
            self.swap_map[slot as usize], 1,
            "freeing a free swap slot {slot}"
        );
        debug_assert_eq!(
            self.cache[slot as usize], NIL,
            "freeing a slot still in the swap cache"
        );
        self.swap_map[slot as usize] = 0;
        self.inuse_pages -= 1;
    }

    /// The page in the swap cache for a slot (swap_cache_get_folio).
    #[inline]
    pub fn cache_lookup(&self, slot: u32) -> Option<Pfn> {
        let p = self.cache[slot as usize];
        (p != NIL).then_some(p)
    }

    /// Puts a page in the swap cache (add_to_swap_cache).
    pub fn cache_add(&mut self, slot: u32, pfn: Pfn) {
        debug_assert_eq!(self.cache[slot as usize], NIL);
        self.cache[slot as usize] = pfn;
    }

    /// Takes a page out of the swap cache (__delete_from_swap_cache).
    pub fn cache_del(&mut self, slot: u32) {
        debug_assert_ne!(self.cache[slot as usize], NIL);
        self.cache[slot as usize] = NIL;
    }

    /// Free slots (get_nr_swap_pages).
    pub fn nr_free(&self) -> u32 {
        self.pages - self.inuse_pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_in_ascending_order_and_reused() {
        let mut si = SwapInfo::new(4);
        assert_eq!(si.get_swap_page(), Some(0));
        assert_eq!(si.get_swap_page(), Some(1));
        si.swap_free(0);
        assert_eq!(
            si.get_swap_page(),
            Some(2),
            "the cursor moves on before reusing"
        );
        assert_eq!(si.get_swap_page(), Some(3));
        assert_eq!(si.get_swap_page(), Some(0));
        assert_eq!(si.get_swap_page(), None);
        si.cache_add(1, 77);
        assert_eq!(si.cache_lookup(1), Some(77));
        si.cache_del(1);
        si.swap_free(1);
        assert_eq!(si.nr_free(), 1);
    }
}
