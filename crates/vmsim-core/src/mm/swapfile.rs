//! The swap device's slots and the swap cache.
//!
//! Models mm/swapfile.c (swap_info_struct, the swap_map use counts,
//! scan_swap_map_slots allocating slots in ascending order from a cursor so
//! that swap-out writes are sequential, swap_free) and mm/swap_state.c (the
//! swap cache: a page being written to or read from a slot is found by slot).
//! With `kernel.swap_slot_cache` (6.1's mm/swap_slots.c), each CPU takes
//! its slots from a cache of SWAP_SLOTS_CACHE_SIZE (64) refilled from the
//! device in one go (`folio_alloc_swap()` → `refill_swap_slots_cache()` →
//! `get_swap_pages()`), and keeps the slots it frees until 64 have gathered
//! (`free_swap_slot()` → `swapcache_free_entries()`); the caches work only
//! while more than 5 × 64 slots per CPU are free and are drained below
//! 2 × 64 per CPU (`check_cache_active()`). 6.18 has no slot cache (slots
//! come from per-CPU clusters in `folio_alloc_swap()`).
//!
//! Each slot also remembers the page-table entry that holds it (the rmap
//! slot, so that readahead by swap offset knows whose page it reads) and the
//! memory cgroup charged for it (mm/swap_cgroup.c's swap_cgroup_record). A
//! page in the swap cache keeps its slot until the last user goes: it is
//! found by slot (the swap address space) and by frame (its folio->swap),
//! with the folio's PG_readahead and the time its read completes.
//!
//! Simplifications: one swap device; no clusters; a slot has one user (no
//! fork sharing).

use super::page::{Pfn, NIL};

/// A map keyed by frame number.
type PfnMap<V> = super::page::IntMap<Pfn, V>;

/// A page in the swap cache, as its folio says (folio->swap, PG_readahead, PG_uptodate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwapCacheFolio {
    /// Its swap slot (folio->swap).
    pub slot: u32,
    /// Read by readahead and not yet found by a fault (PG_readahead).
    pub readahead: bool,
    /// When its read from the device completes; 0 for a page that was never read (PG_uptodate) [ns].
    pub uptodate_at: u64,
}

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
    /// The swap-cache pages by frame (folio->swap and the folio flags the model reads).
    folios: PfnMap<SwapCacheFolio>,
    /// The rmap slot whose page-table entry holds each slot, or NIL.
    owner: Vec<u32>,
    /// The memory cgroup charged for each slot's swap, or NIL (swap_cgroup_record).
    memcg: Vec<u32>,
    /// Readahead state: VMA windows per task and the cluster heuristic's (swap_state.rs).
    pub ra: super::swap_state::SwapRaState,
    /// When the last read submitted completes [ns].
    reads_done_by: u64,
    /// Pages in the swap cache whose read is not submitted yet (under the plug).
    reads_unsubmitted: u32,
    /// Where the next search for a free slot starts (cluster_next).
    cursor: u32,
    /// 6.1's per-CPU swap slot caches (`kernel.swap_slot_cache`); None without.
    slots_cache: Option<SwapSlotsCache>,
}

/// Slots per CPU cache, for allocation and for freeing (SWAP_SLOTS_CACHE_SIZE = SWAP_BATCH).
pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;

/// The per-CPU swap slot caches of 6.1 (mm/swap_slots.c).
#[derive(Debug, Clone, Default)]
pub struct SwapSlotsCache {
    /// CPUs online (num_online_cpus()), for the activation thresholds.
    nr_cpus: u32,
    /// swap_slot_cache_active.
    active: bool,
    /// Each CPU's cache of slots to hand out, next first (cache->slots from cache->cur).
    slots: Vec<std::collections::VecDeque<u32>>,
    /// Each CPU's freed slots not yet returned (cache->slots_ret).
    slots_ret: Vec<Vec<u32>>,
}

impl SwapInfo {
    /// A swap area of `pages` slots (swapon).
    pub fn new(pages: u32) -> Self {
        SwapInfo {
            pages,
            inuse_pages: 0,
            swap_map: vec![0; pages as usize],
            cache: vec![NIL; pages as usize],
            folios: PfnMap::default(),
            owner: vec![NIL; pages as usize],
            memcg: vec![NIL; pages as usize],
            ra: Default::default(),
            reads_done_by: 0,
            reads_unsubmitted: 0,
            cursor: 0,
            slots_cache: None,
        }
    }

    /// The same area with 6.1's per-CPU slot caches for `nr_cpus` CPUs (enable_swap_slots_cache).
    pub fn with_slot_cache(mut self, nr_cpus: u32) -> Self {
        let n = nr_cpus as usize;
        self.slots_cache = Some(SwapSlotsCache {
            nr_cpus,
            active: false,
            slots: vec![Default::default(); n],
            slots_ret: vec![Vec::new(); n],
        });
        self
    }

    /// A slot for a page being swapped out on `cpu` (folio_alloc_swap): from the CPU's
    /// slot cache while the caches are active, else straight from the device.
    pub fn folio_alloc_swap(&mut self, cpu: usize) -> Option<u32> {
        if self.check_cache_active() {
            if let Some(s) = self.alloc_swap_slot_cache(cpu) {
                return Some(s);
            }
        }
        self.get_swap_page()
    }

    /// The next slot of `cpu`'s cache, refilling an empty cache with up to
    /// SWAP_SLOTS_CACHE_SIZE slots (refill_swap_slots_cache → get_swap_pages).
    fn alloc_swap_slot_cache(&mut self, cpu: usize) -> Option<u32> {
        let mut cache = self.slots_cache.take()?;
        let q = &mut cache.slots[cpu];
        if q.is_empty() {
            while q.len() < SWAP_SLOTS_CACHE_SIZE {
                match self.get_swap_page() {
                    Some(s) => q.push_back(s),
                    None => break,
                }
            }
        }
        let s = q.pop_front();
        self.slots_cache = Some(cache);
        s
    }

    /// Whether the slot caches are in use, switching them on above 5 × 64 free slots per
    /// CPU and off (every cache drained) below 2 × 64 (check_cache_active).
    fn check_cache_active(&mut self) -> bool {
        let free = self.nr_free() as usize;
        let Some(c) = &mut self.slots_cache else {
            return false;
        };
        let per_cpu = c.nr_cpus as usize * SWAP_SLOTS_CACHE_SIZE;
        if !c.active {
            // reactivate_swap_slots_cache()
            c.active = free > 5 * per_cpu;
        } else if free < 2 * per_cpu {
            self.deactivate_swap_slots_cache();
        }
        self.slots_cache.as_ref().is_some_and(|c| c.active)
    }

    /// Returns every cached slot, to hand out or freed, to the device (deactivate_swap_slots_cache).
    fn deactivate_swap_slots_cache(&mut self) {
        let Some(mut c) = self.slots_cache.take() else {
            return;
        };
        c.active = false;
        for s in c.slots.iter_mut().flat_map(|q| q.drain(..)) {
            self.swap_free(s);
        }
        for s in c.slots_ret.iter_mut().flat_map(|r| r.drain(..)) {
            self.swap_free(s);
        }
        self.slots_cache = Some(c);
    }

    /// Frees a slot from `cpu` (free_swap_slot): into the CPU's return cache while the
    /// caches are active, the 64 gathered there going back together; else at once.
    pub fn free_swap_slot(&mut self, cpu: usize, slot: u32) {
        if !self.slots_cache.as_ref().is_some_and(|c| c.active) {
            self.swap_free(slot);
            return;
        }
        let Some(mut c) = self.slots_cache.take() else {
            return;
        };
        if c.slots_ret[cpu].len() >= SWAP_SLOTS_CACHE_SIZE {
            // swapcache_free_entries()
            for s in std::mem::take(&mut c.slots_ret[cpu]) {
                self.swap_free(s);
            }
        }
        c.slots_ret[cpu].push(slot);
        self.slots_cache = Some(c);
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
        self.owner[slot as usize] = NIL;
        debug_assert_eq!(
            self.memcg[slot as usize], NIL,
            "freeing a charged swap slot"
        );
        self.inuse_pages -= 1;
    }

    /// Whether a slot is allocated (swap_map != 0; readahead skips free slots).
    #[inline]
    pub fn in_use(&self, slot: u32) -> bool {
        self.swap_map.get(slot as usize).is_some_and(|&c| c != 0)
    }

    /// The page in the swap cache for a slot (swap_cache_get_folio).
    #[inline]
    pub fn cache_lookup(&self, slot: u32) -> Option<Pfn> {
        let p = self.cache[slot as usize];
        (p != NIL).then_some(p)
    }

    /// Puts a page being swapped out in the swap cache (add_to_swap_cache): its page-table
    /// entry holds the slot, so it needs no folio record until it is mapped again.
    pub fn cache_add(&mut self, slot: u32, pfn: Pfn) {
        debug_assert_eq!(self.cache[slot as usize], NIL);
        self.cache[slot as usize] = pfn;
    }

    /// Puts a page being read in the swap cache with its folio record (swap_cache_add_folio):
    /// PG_readahead and when its read completes (u64::MAX until it is submitted).
    pub fn cache_add_folio(&mut self, slot: u32, pfn: Pfn, readahead: bool, uptodate_at: u64) {
        self.cache_add(slot, pfn);
        if uptodate_at == u64::MAX {
            self.reads_unsubmitted += 1;
        }
        let f = SwapCacheFolio {
            slot,
            readahead,
            uptodate_at,
        };
        self.folios.insert(pfn, f);
    }

    /// Takes a page out of the swap cache (__delete_from_swap_cache).
    pub fn cache_del(&mut self, slot: u32) {
        let p = self.cache[slot as usize];
        debug_assert_ne!(p, NIL);
        if !self.folios.is_empty()
            && self
                .folios
                .remove(&p)
                .is_some_and(|f| f.uptodate_at == u64::MAX)
        {
            self.reads_unsubmitted -= 1;
        }
        self.cache[slot as usize] = NIL;
    }

    /// The folio record of a swap-cache page that was read in or is mapped (folio->swap);
    /// None for a page being swapped out, whose page-table entry holds its slot.
    #[inline]
    pub fn folio(&self, pfn: Pfn) -> Option<SwapCacheFolio> {
        if self.folios.is_empty() {
            return None;
        }
        self.folios.get(&pfn).copied()
    }

    /// Gives a swap-cache page that is being mapped a folio record, if it has none.
    pub fn track(&mut self, pfn: Pfn, slot: u32) {
        debug_assert_eq!(self.cache[slot as usize], pfn);
        self.folios.entry(pfn).or_insert(SwapCacheFolio {
            slot,
            readahead: false,
            uptodate_at: 0,
        });
    }

    /// Drops the folio record of a swap-cache page whose page-table entry holds its slot
    /// again (unmapped, its read complete), keeping one for a read not yet submitted.
    pub fn untrack(&mut self, pfn: Pfn) {
        if self.folios.is_empty() {
            return;
        }
        if self
            .folios
            .get(&pfn)
            .is_some_and(|f| f.uptodate_at != u64::MAX)
        {
            self.folios.remove(&pfn);
        }
    }

    /// Clears a swap-cache page's PG_readahead, returning whether it was set (folio_test_clear_readahead).
    pub fn folio_test_clear_readahead(&mut self, pfn: Pfn) -> bool {
        self.folios
            .get_mut(&pfn)
            .is_some_and(|f| std::mem::take(&mut f.readahead))
    }

    /// Sets when the read of a swap-cache page completes (the bio's end_io sets PG_uptodate).
    pub fn set_uptodate_at(&mut self, slot: u32, pfn: Pfn, at: u64) {
        debug_assert_eq!(self.cache[slot as usize], pfn);
        if let Some(f) = self.folios.get_mut(&pfn) {
            if f.uptodate_at == u64::MAX {
                self.reads_unsubmitted -= 1;
            }
            f.uptodate_at = at;
            self.reads_done_by = self.reads_done_by.max(at);
        }
    }

    /// No read of a swap-cache page completes after this [ns] (u64::MAX while a read is
    /// not submitted yet).
    #[inline]
    pub fn reads_done_by(&self) -> u64 {
        if self.reads_unsubmitted > 0 {
            u64::MAX
        } else {
            self.reads_done_by
        }
    }

    /// Pages in the swap cache (total_swapcache_pages).
    pub fn nr_swapcache(&self) -> usize {
        self.folios.len()
    }

    /// The rmap slot whose page-table entry holds a swap slot, or NIL.
    #[inline]
    pub fn slot_owner(&self, slot: u32) -> u32 {
        self.owner[slot as usize]
    }

    /// Records the page-table entry holding a swap slot.
    #[inline]
    pub fn set_slot_owner(&mut self, slot: u32, rslot: u32) {
        self.owner[slot as usize] = rslot;
    }

    /// The memory cgroup charged for a slot's swap, or NIL (lookup_swap_cgroup_id).
    #[inline]
    pub fn swap_cgroup(&self, slot: u32) -> u32 {
        self.memcg[slot as usize]
    }

    /// Sets (or with NIL clears) the group charged for a slot, returning the old one (swap_cgroup_record / _clear).
    #[inline]
    pub fn swap_cgroup_record(&mut self, slot: u32, id: u32) -> u32 {
        std::mem::replace(&mut self.memcg[slot as usize], id)
    }

    /// Whether more than half the swap space is in use (vm_swap_full).
    pub fn vm_swap_full(&self) -> bool {
        self.pages > 0 && self.nr_free() * 2 < self.pages
    }

    /// Slots of the device (si->max).
    #[inline]
    pub fn max(&self) -> u32 {
        self.pages
    }

    /// Slots held by the slot caches, to hand out or freed and not yet returned.
    pub fn nr_cached(&self) -> u32 {
        self.slots_cache.as_ref().map_or(0, |c| {
            let n: usize = c.slots.iter().map(|q| q.len()).sum::<usize>()
                + c.slots_ret.iter().map(|r| r.len()).sum::<usize>();
            n as u32
        })
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
    fn six_one_slot_caches_hand_each_cpu_a_run_of_64_and_return_frees_in_batches() {
        // Without the cache (6.18 here) two CPUs swapping in turn interleave their slots.
        let mut plain = SwapInfo::new(4096);
        let got: Vec<u32> = (0..4)
            .map(|i| plain.folio_alloc_swap(i % 2).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2, 3]);
        // With it each CPU takes from its own run of 64.
        let mut si = SwapInfo::new(4096).with_slot_cache(2);
        let got: Vec<u32> = (0..4)
            .map(|i| si.folio_alloc_swap(i % 2).unwrap())
            .collect();
        assert_eq!(got, [0, 64, 1, 65]);
        assert_eq!(
            si.nr_free(),
            4096 - 128,
            "cached slots are taken from the device"
        );
        // A freed slot waits in the CPU's return cache until 64 have gathered.
        let mut si = SwapInfo::new(4096).with_slot_cache(2);
        let held: Vec<u32> = (0..65).map(|_| si.folio_alloc_swap(0).unwrap()).collect();
        assert_eq!(si.nr_free(), 4096 - 128);
        for &s in &held[..64] {
            si.free_swap_slot(1, s);
        }
        assert_eq!(si.nr_free(), 4096 - 128);
        si.free_swap_slot(1, held[64]);
        assert_eq!(si.nr_free(), 4096 - 128 + 64);
    }

    #[test]
    fn slot_caches_are_off_while_swap_is_nearly_full() {
        // 2 CPUs: active above 5 × 64 × 2 = 640 free slots, drained below 256.
        let mut small = SwapInfo::new(640).with_slot_cache(2);
        let got: Vec<u32> = (0..2).map(|i| small.folio_alloc_swap(i).unwrap()).collect();
        assert_eq!(got, [0, 1], "640 free is not above 640");
        let mut si = SwapInfo::new(1024).with_slot_cache(2);
        assert_eq!(si.folio_alloc_swap(1), Some(0));
        assert_eq!(si.nr_free(), 1024 - 64);
        // Fill until fewer than 256 are free: the caches drain and slots come one by one.
        while si.nr_free() >= 256 {
            si.get_swap_page().unwrap();
        }
        let before = si.nr_free();
        let s = si.folio_alloc_swap(0).unwrap();
        assert_eq!(
            si.nr_free(),
            before + 63 - 1,
            "the 63 cached slots came back"
        );
        assert!(s < 1024);
        si.free_swap_slot(0, s);
        assert_eq!(si.nr_free(), before + 63, "an inactive cache frees at once");
    }

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
        si.cache_add_folio(1, 77, true, 5);
        assert_eq!(si.cache_lookup(1), Some(77));
        assert_eq!(si.folio(77).map(|f| f.slot), Some(1));
        assert!(si.folio_test_clear_readahead(77));
        assert!(
            !si.folio_test_clear_readahead(77),
            "PG_readahead is cleared once"
        );
        si.cache_del(1);
        assert_eq!(si.folio(77), None);
        si.swap_free(1);
        assert_eq!(si.nr_free(), 1);
    }
}
