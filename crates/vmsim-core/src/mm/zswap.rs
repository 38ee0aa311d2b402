//! zswap: a compressed cache in front of the swap devices (mm/zswap.c, 6.18).
//!
//! With `kernel.zswap` on (/sys/module/zswap/parameters/enabled; off by default,
//! as CONFIG_ZSWAP_DEFAULT_ON is on this machine's kernel), reclaim's swap-out of
//! an anonymous page first offers it to zswap (`swap_writeout` → `zswap_store`):
//! the page is compressed on the reclaimer's CPU and stored as one zsmalloc object
//! (`mm/zsmalloc.rs`) keyed by its swap slot. The write is then done: the page is
//! clean, not under writeback, and reclaim frees it in the same pass, with no
//! disk I/O (`zswpout`, no `pswpout`). A fault on the slot finds the object
//! (`swap_read_folio` → `zswap_load`), decompresses it into the new swap-cache
//! page (`zswpin`, no `pswpin`) and frees the object: the page is marked dirty, so
//! reclaiming it again compresses it again (exclusive loads). A freed slot frees
//! its object (`zswap_invalidate`).
//!
//! The pool is limited to `max_pool_percent` of RAM (`zswap_check_limits`): at
//! the limit (`pool_limit_hit`) every store is refused, and the page goes to the
//! disk, until the pool is back under `accept_threshold_percent` of the limit.
//! A refused store queues `shrink_worker` on a kworker, which writes entries back
//! to the swap device from the groups' LRUs, round-robin, until the pool is under
//! that threshold: each entry is decompressed into a new swap-cache page
//! (`zswap_writeback_entry`: `zswpwb`, `written_back_pages`) that is written to
//! the disk (`pswpout`) and freed by reclaim once written. An entry stored since
//! the last pass is given a second chance (its `referenced` bit), and the worker
//! gives up after MAX_RECLAIM_RETRIES passes that wrote nothing back.
//!
//! Under cgroup v2 a stored page's compressed bytes are charged to its memory
//! cgroup as kernel memory, forced over the limit since the store runs inside
//! reclaim (`obj_cgroup_charge_zswap`), and counted in memory.stat's `zswap` and
//! `zswapped`; under cgroup v1 they are not charged at all (the function returns
//! at once unless the memory controller is on the default hierarchy); /proc/meminfo's `Zswap` and `Zswapped` count the pool and the
//! pages it holds.
//!
//! Simplifications: every page compresses to the one length `zswap_comp_ratio`
//! gives (no same-filled or incompressible pages, so no `reject_compress_poor`);
//! the 56-byte `zswap_entry` objects are not allocated; one LRU per group rather
//! than one per group and node; memory.zswap.max and the memory-pressure shrinker
//! (`shrinker_enabled`, off by default) are not modelled.

use super::memcontrol::{NO_MEMCG, ROOT_MEM_CGROUP};
use super::page::{pg, IntMap, Pfn, PAGE_SHIFT, PAGE_SIZE};
use super::vmstat_items::Event;
use super::zsmalloc::{compressed_len, PoolId, ZsPool};
use crate::engine::{Program, Step, StepCtx, StepOut, TaskId};
use crate::kernel::Kernel;
use std::collections::{BTreeMap, VecDeque};

/// Passes without progress before shrink_worker gives up (MAX_RECLAIM_RETRIES).
const MAX_RECLAIM_RETRIES: u32 = 16;

/// Entries shrink_worker handles per step before it lets others run (its cond_resched).
const SHRINK_BATCH: u32 = 32;

/// One stored page (struct zswap_entry, reduced).
#[derive(Debug, Clone, Copy)]
struct ZswapEntry {
    /// Group its compressed bytes are charged to (NO_MEMCG: none).
    objcg: u32,
    /// Stored since the writeback last passed it (entry->referenced).
    referenced: bool,
    /// Tells this entry from an older one of the same slot on the LRU.
    gen: u32,
}

/// One group's zswap LRU (a zswap_list_lru list); freed entries leave it lazily.
#[derive(Debug, Clone, Default)]
struct ZswapLru {
    /// (slot, generation), oldest first.
    list: VecDeque<(u32, u32)>,
    /// Entries of the list still stored.
    live: u64,
}

/// zswap's debugfs counters (/sys/kernel/debug/zswap).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ZswapStats {
    /// The pool reached max_pool_percent (zswap_pool_limit_hit).
    pub pool_limit_hit: u64,
    /// A writeback that failed (zswap_reject_reclaim_fail).
    pub reject_reclaim_fail: u64,
    /// A store whose object got no memory (zswap_reject_alloc_fail).
    pub reject_alloc_fail: u64,
    /// A store whose entry got no memory (zswap_reject_kmemcache_fail).
    pub reject_kmemcache_fail: u64,
    /// A compression that failed (zswap_reject_compress_fail).
    pub reject_compress_fail: u64,
    /// A page that compressed to more than a page (zswap_reject_compress_poor).
    pub reject_compress_poor: u64,
    /// A decompression that failed (zswap_decompress_fail).
    pub decompress_fail: u64,
    /// Entries written back to the swap device (zswap_written_back_pages).
    pub written_back_pages: u64,
    /// The pool's size (pool_total_size) [bytes].
    pub pool_total_size: u64,
    /// Pages stored (zswap_stored_pages).
    pub stored_pages: u64,
}

/// zswap's state: parameters, entries, LRUs, pool and the shrink work.
#[derive(Debug, Clone)]
pub struct Zswap {
    /// /sys/module/zswap/parameters/enabled.
    pub enabled: bool,
    /// max_pool_percent: the pool's limit [% of RAM].
    pub max_pool_percent: u64,
    /// accept_threshold_percent: stores resume under this share of the limit [%].
    pub accept_thr_percent: u64,
    /// A page's compressed length [bytes].
    pub length: u64,
    /// CPU time to compress a page [ns].
    pub compress_ns: u64,
    /// CPU time to decompress a page [ns].
    pub decompress_ns: u64,
    /// Stored pages by swap slot (the zswap_trees).
    entries: IntMap<u32, ZswapEntry>,
    /// The LRUs by group (zswap_list_lru).
    lru: BTreeMap<u32, ZswapLru>,
    /// Next entry generation.
    gen: u32,
    /// The zsmalloc pool.
    pub pool: ZsPool,
    /// The limit was hit and stores wait for the accept threshold (zswap_pool_reached_full).
    reached_full: bool,
    /// The debugfs counters.
    pub stats: ZswapStats,
    /// shrink_worker's cursor (zswap_next_shrink).
    next_shrink: Option<u32>,
    /// The shrink work is queued or running.
    work_pending: bool,
    /// Passes without progress of the running work (shrink_worker's `failures`).
    failures: u32,
    /// Groups tried since the cursor last wrapped (shrink_worker's `attempts`).
    attempts: u32,
    /// The kworker's wait queue.
    pub wq: usize,
}

impl Zswap {
    /// zswap with the kernel config's parameters.
    pub fn new(kcfg: &crate::mm::KernelCfg) -> Self {
        let length = compressed_len(kcfg.zswap_comp_ratio);
        Zswap {
            enabled: kcfg.zswap,
            max_pool_percent: kcfg.zswap_max_pool_percent,
            accept_thr_percent: kcfg.zswap_accept_threshold_percent,
            length,
            compress_ns: kcfg.zswap_compress_ns,
            decompress_ns: kcfg.zswap_decompress_ns,
            entries: IntMap::default(),
            lru: BTreeMap::new(),
            gen: 0,
            pool: ZsPool::new(length),
            reached_full: false,
            stats: ZswapStats::default(),
            next_shrink: None,
            work_pending: false,
            failures: 0,
            attempts: 0,
            wq: usize::MAX,
        }
    }

    /// Pages stored (zswap_stored_pages).
    pub fn stored_pages(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Whether no page is stored.
    pub fn stored_is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether slot `s` has a stored page.
    pub fn has(&self, s: u32) -> bool {
        self.entries.contains_key(&s)
    }

    /// The debugfs counters with the pool's size and stored pages of now.
    pub fn debugfs(&self) -> ZswapStats {
        ZswapStats {
            pool_total_size: self.pool.total_pages() * PAGE_SIZE,
            stored_pages: self.stored_pages(),
            ..self.stats.clone()
        }
    }

    /// Puts a new entry on its group's LRU (zswap_lru_add).
    fn lru_add(&mut self, memcg: u32, s: u32, gen: u32) {
        let l = self.lru.entry(memcg).or_default();
        l.list.push_back((s, gen));
        l.live += 1;
    }

    /// Takes an entry off its group's LRU (zswap_lru_del); the list forgets it lazily,
    /// and is compacted once most of it is stale.
    fn lru_del(&mut self, memcg: u32) {
        let entries = &self.entries;
        if let Some(l) = self.lru.get_mut(&memcg) {
            l.live = l.live.saturating_sub(1);
            if l.list.len() as u64 > 2 * l.live + 64 {
                l.list
                    .retain(|(s, g)| entries.get(s).is_some_and(|e| e.gen == *g));
            }
        }
    }

    /// The LRU's group of an entry charged to `objcg` (mem_cgroup_from_entry, root for none).
    fn lru_memcg(objcg: u32) -> u32 {
        if objcg == NO_MEMCG {
            ROOT_MEM_CGROUP
        } else {
            objcg
        }
    }

    /// Pool pages the limit allows (zswap_max_pages).
    fn max_pages(&self, totalram: u64) -> u64 {
        totalram * self.max_pool_percent / 100
    }

    /// Pool pages stores resume under (zswap_accept_thr_pages).
    fn accept_thr_pages(&self, totalram: u64) -> u64 {
        self.max_pages(totalram) * self.accept_thr_percent / 100
    }

    /// Whether the pool is full (zswap_check_limits): at the limit it is, and stays so
    /// until it is back under the accept threshold.
    fn check_limits(&mut self, totalram: u64) -> bool {
        let cur = self.pool.total_pages();
        if cur >= self.max_pages(totalram) {
            self.stats.pool_limit_hit += 1;
            self.reached_full = true;
        } else if self.reached_full && cur <= self.accept_thr_pages(totalram) {
            self.reached_full = false;
        }
        self.reached_full
    }
}

impl Kernel {
    /// RAM the pool's limit is a share of (totalram_pages).
    fn zswap_totalram(&self) -> u64 {
        self.mm.zones.iter().map(|z| z.managed_pages).sum()
    }

    /// Offers a swap-cache page being written to zswap (zswap_store); true when it is
    /// stored and its write is done. A refused store drops the slot's old entry, and
    /// queues the shrink work when the pool is full.
    pub fn zswap_store(&mut self, p: Pfn) -> bool {
        let Some(s) = self.swap_slot_of(p) else {
            return false;
        };
        let stored = self.zswap.enabled && self.zswap_store_page(p, s);
        if !stored {
            if self.zswap.enabled && self.zswap.reached_full {
                self.zswap_queue_shrink_work();
            }
            // check_old: a stale entry of this slot must not be written back over the page.
            self.zswap_invalidate(s);
        }
        stored
    }

    /// Compresses and stores one page (zswap_store_page + zswap_compress).
    fn zswap_store_page(&mut self, p: Pfn, s: u32) -> bool {
        let totalram = self.zswap_totalram();
        if self.zswap.check_limits(totalram) {
            return false;
        }
        self.mm.cur.acc += self.zswap.compress_ns;
        if !self.zs_malloc(PoolId::Zswap) {
            self.zswap.stats.reject_alloc_fail += 1;
            return false;
        }
        // A stale entry of the slot (the page was redirtied) is replaced.
        self.zswap_invalidate(s);
        let objcg = self.zswap_folio_objcg(p);
        self.obj_cgroup_charge_zswap(objcg);
        let gen = self.zswap.gen;
        self.zswap.gen = gen.wrapping_add(1);
        self.zswap.entries.insert(
            s,
            ZswapEntry {
                objcg,
                referenced: true,
                gen,
            },
        );
        self.zswap.lru_add(Zswap::lru_memcg(objcg), s, gen);
        self.mm.count_vm_events(Event::ZSWPOUT, 1);
        if objcg != NO_MEMCG {
            self.mm.memcg.ext_mut(objcg).zswpout += 1;
        }
        true
    }

    /// The group a page's compressed copy is charged to (get_obj_cgroup_from_folio): its
    /// own, none for the root group or without kernel-memory accounting.
    fn zswap_folio_objcg(&self, p: Pfn) -> u32 {
        if !self.mm.memcg.enabled() || !self.mm.kcfg.rules().memcg_kmem {
            return NO_MEMCG;
        }
        let page = self.mm.map[p as usize];
        match self.mm.memcg.folio_memcg(page.kind(), page.owner) {
            ROOT_MEM_CGROUP => NO_MEMCG,
            id => id,
        }
    }

    /// Charges a stored page's compressed bytes to `objcg` (obj_cgroup_charge_zswap): from
    /// the CPU's byte stock, else whole pages forced over the limit (PF_MEMALLOC: the
    /// store runs in reclaim); memory.stat's zswap and zswapped move. Under cgroup v1
    /// nothing is charged (`!cgroup_subsys_on_dfl(memory_cgrp_subsys)`).
    fn obj_cgroup_charge_zswap(&mut self, objcg: u32) {
        if objcg == NO_MEMCG || !self.mm.memcg.dfl {
            return;
        }
        let size = self.zswap.length;
        let cpu = self.mm.cur.cpu;
        if !self.mm.memcg.consume_obj_stock(cpu, objcg, size) {
            let nr_pages = size.div_ceil(PAGE_SIZE);
            self.mm.memcg.force_charge_memory_memsw(objcg, nr_pages);
            self.mm.memcg.memcg_account_kmem(objcg, nr_pages as i64);
            let left = (nr_pages << PAGE_SHIFT) - size;
            if left > 0 {
                let page_stock = self.mm.kcfg.rules().memcg_charge_batch;
                self.mm
                    .memcg
                    .refill_obj_stock(cpu, objcg, left, false, page_stock);
            }
        }
        let e = self.mm.memcg.ext_mut(objcg);
        e.zswap_b += size;
        e.zswapped += 1;
    }

    /// Returns a freed entry's charge (obj_cgroup_uncharge_zswap; none under cgroup v1).
    fn obj_cgroup_uncharge_zswap(&mut self, objcg: u32) {
        if objcg == NO_MEMCG || !self.mm.memcg.dfl {
            return;
        }
        let size = self.zswap.length;
        let cpu = self.mm.cur.cpu;
        let e = self.mm.memcg.ext_mut(objcg);
        e.zswap_b = e.zswap_b.saturating_sub(size);
        e.zswapped = e.zswapped.saturating_sub(1);
        let page_stock = self.mm.kcfg.rules().memcg_charge_batch;
        self.mm
            .memcg
            .refill_obj_stock(cpu, objcg, size, true, page_stock);
    }

    /// Frees slot `s`'s entry, if any (zswap_entry_free): off its LRU, its object and
    /// its charge freed.
    fn zswap_entry_free(&mut self, s: u32) -> bool {
        let Some(e) = self.zswap.entries.remove(&s) else {
            return false;
        };
        self.zswap.lru_del(Zswap::lru_memcg(e.objcg));
        self.zs_free(PoolId::Zswap);
        self.obj_cgroup_uncharge_zswap(e.objcg);
        true
    }

    /// Drops the entry of a freed or rewritten slot (zswap_invalidate).
    pub fn zswap_invalidate(&mut self, s: u32) {
        if !self.zswap.entries.is_empty() {
            self.zswap_entry_free(s);
        }
    }

    /// Loads slot `s` into its new page `p` if zswap holds it (zswap_load): decompressed
    /// on this CPU. A swap-cache page is up to date now and marked dirty, and the entry
    /// freed; a private page (a synchronous device's fault) leaves the entry to the
    /// slot's release.
    pub fn zswap_load(&mut self, s: u32, p: Pfn, swapcache: bool) -> bool {
        let Some(objcg) = self.zswap.entries.get(&s).map(|e| e.objcg) else {
            return false;
        };
        self.mm.cur.acc += self.zswap.decompress_ns;
        self.mm.count_vm_events(Event::ZSWPIN, 1);
        if objcg != NO_MEMCG {
            self.mm.memcg.ext_mut(objcg).zswpin += 1;
        }
        if swapcache {
            self.zswap_entry_free(s);
            self.mm.map[p as usize].flags |= pg::DIRTY;
            let now = self.mm.clock();
            self.swap.set_uptodate_at(s, p, now);
        }
        true
    }

    /// Queues shrink_worker on its kworker (queue_work: nothing if it is queued already).
    fn zswap_queue_shrink_work(&mut self) {
        if self.zswap.work_pending || self.zswap.wq == usize::MAX {
            return;
        }
        self.zswap.work_pending = true;
        self.zswap.failures = 0;
        self.zswap.attempts = 0;
        self.mm.cur.wake.push(self.zswap.wq);
    }

    /// Runs up to [`SHRINK_BATCH`] rounds of shrink_worker's loop for the kworker `tid`;
    /// true when the work is finished (the pool under the accept threshold, or
    /// MAX_RECLAIM_RETRIES failures).
    pub fn zswap_shrink_worker(&mut self, tid: TaskId) -> bool {
        let thr = self.zswap.accept_thr_pages(self.zswap_totalram());
        for _ in 0..SHRINK_BATCH {
            if self.zswap.pool.total_pages() <= thr {
                return true;
            }
            // mem_cgroup_iter() from the cursor: the next group with entries; None at the end
            // of the walk.
            let next = match self.zswap.next_shrink {
                None => self.zswap.lru.range(..).find(|(_, l)| l.live > 0),
                Some(c) => self.zswap.lru.range(c + 1..).find(|(_, l)| l.live > 0),
            }
            .map(|(&m, _)| m);
            self.zswap.next_shrink = next;
            let Some(memcg) = next else {
                if self.zswap.attempts == 0 {
                    self.zswap.failures += 1;
                    if self.zswap.failures == MAX_RECLAIM_RETRIES {
                        return true;
                    }
                }
                self.zswap.attempts = 0;
                continue;
            };
            self.zswap.attempts += 1;
            match self.zswap_shrink_memcg(memcg, tid) {
                Some(true) => {}
                Some(false) => {
                    self.zswap.failures += 1;
                    if self.zswap.failures == MAX_RECLAIM_RETRIES {
                        return true;
                    }
                }
                // The allocation must be retried: the worker sleeps and comes back.
                None => return false,
            }
        }
        self.zswap.pool.total_pages() <= thr
    }

    /// Walks one entry of each node on a group's LRU (shrink_memcg → shrink_memcg_cb): a
    /// referenced one loses its bit and goes to the tail, another is written back.
    /// Some(whether one was written back); None when the worker must retry later.
    fn zswap_shrink_memcg(&mut self, memcg: u32, tid: TaskId) -> Option<bool> {
        let mut shrunk = false;
        for _ in 0..self.mm.nodes.len() {
            // The list's first entry still stored.
            let head = loop {
                let Some((s, g)) = self
                    .zswap
                    .lru
                    .get_mut(&memcg)
                    .and_then(|l| l.list.pop_front())
                else {
                    break None;
                };
                if self.zswap.entries.get(&s).is_some_and(|e| e.gen == g) {
                    break Some((s, g));
                }
            };
            let Some((s, g)) = head else {
                break;
            };
            // Rotated before the lock drops: a failed writeback leaves it at the tail.
            if let Some(l) = self.zswap.lru.get_mut(&memcg) {
                l.list.push_back((s, g));
            }
            // The head was checked to be stored.
            if self
                .zswap
                .entries
                .get_mut(&s)
                .is_some_and(|e| std::mem::take(&mut e.referenced))
            {
                continue;
            }
            match self.zswap_writeback_entry(s, tid) {
                Ok(()) => {
                    self.zswap.stats.written_back_pages += 1;
                    shrunk = true;
                }
                Err(true) => return None,
                Err(false) => self.zswap.stats.reject_reclaim_fail += 1,
            }
        }
        Some(shrunk)
    }

    /// Writes slot `s`'s entry back to its swap device (zswap_writeback_entry): a new
    /// swap-cache page (__read_swap_cache_async) gets the decompressed data, the entry is
    /// freed, and the page is written (__swap_writepage) to the inactive tail, so
    /// reclaim frees it once written. Err(true) when the allocation must be retried.
    fn zswap_writeback_entry(&mut self, s: u32, tid: TaskId) -> Result<(), bool> {
        if self.swap.cache_lookup(s).is_some() {
            // -EEXIST: the page was swapped in meanwhile.
            return Err(false);
        }
        let p = match self.read_swap_cache_async(s, tid, false) {
            Ok(Some((p, true))) => p,
            Ok(_) => return Err(false),
            Err(crate::mm::memory::Fault::Retry) => return Err(true),
            Err(_) => return Err(false),
        };
        self.mm.cur.acc += self.zswap.decompress_ns;
        let objcg = self.zswap.entries.get(&s).map_or(NO_MEMCG, |e| e.objcg);
        self.mm.count_vm_events(Event::ZSWPWB, 1);
        if objcg != NO_MEMCG {
            self.mm.memcg.ext_mut(objcg).zswpwb += 1;
        }
        self.zswap_entry_free(s);
        let now = self.mm.clock();
        self.swap.set_uptodate_at(s, p, now);
        self.__swap_writepage(p, false);
        Ok(())
    }
}

/// The kworker that runs zswap's shrink work (shrink_wq's worker running shrink_worker).
#[derive(Debug, Default)]
pub struct ZswapShrinkWorker;

impl Program<Kernel> for ZswapShrinkWorker {
    /// Runs the queued work a batch at a time; sleeps until work is queued.
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let k = &mut *cx.k;
        if !k.zswap.work_pending {
            return StepOut {
                user_ns: 0,
                next: Step::Block {
                    wq: k.zswap.wq,
                    timeout: None,
                },
            };
        }
        let done = k.zswap_shrink_worker(cx.tid);
        k.blk_finish_plug();
        if done {
            k.zswap.work_pending = false;
        }
        k.mm.cur.acc = k.mm.cur.acc.max(1);
        StepOut {
            user_ns: 0,
            next: Step::Run,
        }
    }
}
