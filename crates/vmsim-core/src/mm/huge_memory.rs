//! Transparent huge pages for anonymous memory.
//!
//! Models the anonymous-fault side of mm/huge_memory.c: the policies of
//! /sys/kernel/mm/transparent_hugepage/enabled (`thp_vma_allowable_order()`
//! for an anonymous VMA: always, madvise, never) and .../defrag
//! (`vma_thp_gfp_mask()`: always, defer, defer+madvise, madvise, never),
//! `do_huge_pmd_anonymous_page()` with `thp_fault_alloc` and
//! `thp_fault_fallback`, and MADV_HUGEPAGE (`madvise` marks the whole
//! anonymous space of a task, as thpfioscale marks its whole mapping).
//!
//! Simplification: a huge page is allocated as one order-9 block, zeroed and
//! mapped at once, and then lives as 512 base pages (as if split right away,
//! `split_page()`): reclaim, swap and compaction handle them one by one, and
//! `nr_anon_transparent_hugepages` is not kept. A fault takes the huge path
//! only when its whole aligned 2 MiB region is still empty.
//!
//! Every anonymous fault's simulated latency (CPU time in the fault plus any
//! sleep it caused) is recorded, base and huge apart ([`ThpState`]).
//!
//! The split of a large page-cache folio that migration could not place
//! (`split_folio_to_list()` → `__folio_split()`) lives here too.

use super::gfp::{
    Gfp, __GFP_DIRECT_RECLAIM, __GFP_KSWAPD_RECLAIM, __GFP_NORETRY, GFP_TRANSHUGE_LIGHT,
};
use super::memory::Fault;
use super::page::{pfn32, Pfn, NIL};
use super::rmap::{Entry, CHUNK_SLOTS};
use super::vmstat::Event;
use crate::config::{ThpDefrag, ThpEnabled};
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Order of a PMD-mapped huge page (HPAGE_PMD_ORDER).
pub const HPAGE_PMD_ORDER: usize = 9;
/// Base pages in a huge page (HPAGE_PMD_NR).
pub const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;

impl Kernel {
    /// Splits a clean, unmapped page-cache folio into order-0 folios
    /// (try_split_folio → split_folio_to_list → __folio_split): its buffers are released
    /// first (filemap_release_folio), each page takes over the slot of its own index and
    /// keeps the folio's flags, and the new folios follow the head on its LRU list (where
    /// the kernel's isolated folio would be put back). Returns the new folios in the
    /// order the kernel's split list holds them: the tails, then the head. The split itself
    /// costs no simulated time.
    pub fn split_folio(&mut self, p: Pfn, cpu: usize) -> Vec<Pfn> {
        let head = self.mm.map[p as usize];
        let nr = 1u32 << head.order();
        debug_assert!(head.kind() == super::page::PageKind::File && nr > 1);
        self.try_to_free_buffers(p, cpu);
        let l = self.mm.folio_lru_list(p);
        let nid = self.mm.pfn_to_nid(p);
        let ok = head.ok & 0xF0;
        self.mm.map[p as usize].ok = ok;
        let mut prev = p;
        for i in 1..nr {
            let q = p + i as Pfn;
            let next = self.mm.map[prev as usize].next();
            self.mm.pb_unaccount(q);
            {
                let t = &mut self.mm.map[q as usize];
                t.flags = head.flags;
                t.ok = ok;
                t.mt = head.mt;
                t.owner = head.owner + i;
                t.prev = pfn32(prev);
                t.next = pfn32(next);
            }
            self.mm.pb_account(q);
            self.mm.map[prev as usize].next = pfn32(q);
            if next == NIL {
                self.mm.nodes[nid].lruvec.lists[l].tail = q;
            } else {
                self.mm.map[next as usize].prev = pfn32(q);
            }
            debug_assert_eq!(self.rmap.get(head.owner + i), Entry::Page(p));
            self.rmap.set(head.owner + i, Entry::Page(q));
            prev = q;
        }
        let mut out: Vec<Pfn> = (p + 1..p + nr as Pfn).collect();
        out.push(p);
        out
    }
}

impl super::Mm {
    /// Raises min_free_kbytes so that THP allocations find free pageblocks, when THP is
    /// enabled and the administrator did not set it (set_recommended_min_free_kbytes of
    /// mm/khugepaged.c, run when khugepaged starts at boot): two free pageblocks per zone
    /// up to ZONE_NORMAL plus MIGRATE_PCPTYPES² to keep fallbacks apart, at most 5 % of
    /// lowmem; then the watermarks again.
    pub fn set_recommended_min_free_kbytes(&mut self) {
        use super::mmzone::{ZoneType, MIGRATE_PCPTYPES, PAGEBLOCK_NR_PAGES};
        let nr_zones = self
            .zones
            .iter()
            .filter(|z| z.populated() && z.zone_type <= ZoneType::Normal)
            .count() as u64;
        let pb = PAGEBLOCK_NR_PAGES;
        let mut recommended = pb * nr_zones * 2;
        recommended += pb * nr_zones * (MIGRATE_PCPTYPES * MIGRATE_PCPTYPES) as u64;
        // nr_free_buffer_pages(): managed pages above the high watermark, up to Normal.
        let buffer_pages: u64 = self
            .zones
            .iter()
            .filter(|z| z.zone_type <= ZoneType::Normal)
            .map(|z| {
                z.managed_pages
                    .saturating_sub(z.wmark_pages(super::mmzone::Wmark::High))
            })
            .sum();
        recommended = recommended.min(buffer_pages / 20) * 4;
        if recommended > self.min_free_kbytes {
            self.min_free_kbytes = recommended;
        }
        self.setup_per_zone_wmarks();
    }
}

/// Latency figures of one class of anonymous faults [ns].
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct LatStat {
    /// Faults.
    pub count: u64,
    /// Sum of latencies [ns].
    pub sum_ns: u64,
    /// Shortest [ns].
    pub min_ns: u64,
    /// Longest [ns].
    pub max_ns: u64,
}

impl LatStat {
    /// Adds one sample.
    pub fn add(&mut self, ns: u64) {
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.sum_ns += ns;
    }
}

/// Huge-page and fault-latency bookkeeping of the whole machine.
#[derive(Debug, Clone, Default)]
pub struct ThpState {
    /// Tasks whose anonymous memory is marked MADV_HUGEPAGE (VM_HUGEPAGE), by task id.
    pub vm_hugepage: Vec<bool>,
    /// Latency of every anonymous fault served by a base page [ns].
    pub fault_base: LatStat,
    /// Latency of every anonymous fault served by a huge page [ns].
    pub fault_huge: LatStat,
    /// Per 2 MiB region of a `thp_fault` operation: (huge?, latency [ns]), as thpfioscale records them.
    pub regions: Vec<(bool, u64)>,
    /// Named counters of the `signal` and `wait` operations.
    pub signals: indexmap::IndexMap<String, u64>,
    /// When each counter was last signalled [ns] (`sleep_elapsed`'s `upto`).
    pub signal_times: indexmap::IndexMap<String, u64>,
}

impl Kernel {
    /// Marks or unmarks a task's anonymous memory MADV_HUGEPAGE (madvise → hugepage_madvise).
    pub fn madvise_hugepage(&mut self, tid: TaskId, on: bool) {
        let v = &mut self.thp.vm_hugepage;
        if v.len() <= tid as usize {
            v.resize(tid as usize + 1, false);
        }
        v[tid as usize] = on;
    }

    /// Whether the task's anonymous memory is MADV_HUGEPAGE (VM_HUGEPAGE).
    pub fn task_vm_hugepage(&self, tid: TaskId) -> bool {
        self.thp
            .vm_hugepage
            .get(tid as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Whether an anonymous fault of this task may use a huge page (thp_vma_allowable_order).
    pub fn thp_allowed(&self, tid: TaskId) -> bool {
        match self.mm.kcfg.thp_enabled {
            ThpEnabled::Always => true,
            ThpEnabled::Madvise => self.task_vm_hugepage(tid),
            ThpEnabled::Never => false,
        }
    }

    /// The gfp mask of a huge-page fault under the defrag policy (vma_thp_gfp_mask).
    pub fn vma_thp_gfp_mask(&self, madvised: bool) -> Gfp {
        let light = GFP_TRANSHUGE_LIGHT;
        let transhuge = light | __GFP_DIRECT_RECLAIM;
        match self.mm.kcfg.thp_defrag {
            ThpDefrag::Always if madvised => transhuge,
            ThpDefrag::Always => transhuge | __GFP_NORETRY,
            ThpDefrag::Defer => light | __GFP_KSWAPD_RECLAIM,
            ThpDefrag::DeferMadvise if madvised => light | __GFP_DIRECT_RECLAIM,
            ThpDefrag::DeferMadvise => light | __GFP_KSWAPD_RECLAIM,
            ThpDefrag::Madvise if madvised => light | __GFP_DIRECT_RECLAIM,
            ThpDefrag::Madvise | ThpDefrag::Never => light,
        }
    }

    /// Tries to fault a whole 2 MiB region in with one huge page (do_huge_pmd_anonymous_page);
    /// None when the fault should fall back to a base page.
    pub fn do_huge_pmd_anonymous_page(&mut self, tid: TaskId, index: u64) -> Option<Fault> {
        if !self.thp_allowed(tid) {
            return None;
        }
        let t = tid as usize;
        let base = index & !(HPAGE_PMD_NR - 1);
        let slot0 = self.tasks[t].pt.slot(base)?;
        if (0..CHUNK_SLOTS).any(|i| self.rmap.get(slot0 + i) != Entry::None) {
            return None;
        }
        let gfp = self.vma_thp_gfp_mask(self.task_vm_hugepage(tid));
        self.mm.cur.acc += self.mm.cost.page_fault;
        match self.alloc_pages(gfp, HPAGE_PMD_ORDER, tid) {
            AllocResult::Page(p) => {
                let memcg = self.task_memcg(tid);
                if !self.mem_cgroup_charge_huge(memcg, HPAGE_PMD_NR, gfp, tid) {
                    // vma_alloc_anon_folio_pmd: folio_put and count_vm_event(THP_FAULT_FALLBACK{,_CHARGE}).
                    let cpu = self.tasks[t].cpu;
                    self.mm.free_pages(p, HPAGE_PMD_ORDER, cpu);
                    self.mm.count_vm_events(Event::THP_FAULT_FALLBACK, 1);
                    self.mm.count_vm_events(Event::THP_FAULT_FALLBACK_CHARGE, 1);
                    return None;
                }
                // __do_huge_pmd_anonymous_page: the page table deposited with the huge
                // mapping is allocated after the folio (pte_alloc_one); without it, the
                // folio is released and the fault fails (VM_FAULT_OOM) or is retried.
                if let Err(f) = self.pte_alloc(tid, base + HPAGE_PMD_NR) {
                    if self.mm.memcg.enabled() {
                        self.mm.memcg.uncharge_memory_memsw(memcg, HPAGE_PMD_NR);
                    }
                    let cpu = self.tasks[t].cpu;
                    self.mm.free_pages(p, HPAGE_PMD_ORDER, cpu);
                    return Some(f);
                }
                self.map_huge_anon(tid, slot0, p, memcg);
                Some(Fault::Minor)
            }
            AllocResult::Failed => {
                self.mm.count_vm_events(Event::THP_FAULT_FALLBACK, 1);
                None
            }
            AllocResult::Retry => Some(Fault::Retry),
            AllocResult::Killed => Some(Fault::Killed),
        }
    }

    /// Zeroes and maps a new huge page, charged to group `memcg`, over a region
    /// (clear_huge_page, map_anon_folio_pmd).
    fn map_huge_anon(&mut self, tid: TaskId, slot0: u32, p: Pfn, memcg: u32) {
        self.mm.count_vm_events(Event::THP_FAULT_ALLOC, 1);
        self.mm.count_vm_events(Event::PGFAULT, 1);
        self.tasks[tid as usize].stats.faults += 1;
        self.mm.split_page(p, HPAGE_PMD_ORDER);
        self.mm.cur.acc += HPAGE_PMD_NR * self.mm.cost.clear_page;
        let cpu = self.tasks[tid as usize].cpu;
        for i in 0..HPAGE_PMD_NR as u32 {
            let q = p + i as Pfn;
            self.map_anon_page(tid, slot0 + i, q);
            self.mem_cgroup_commit_charge(q, memcg);
            self.mm.folio_add_lru(q, cpu);
        }
    }

    /// An anonymous fault on an empty slot: a huge page if allowed and available, else a
    /// base page; its latency is recorded (the pte_none branch of handle_pte_fault and
    /// __handle_mm_fault's create_huge_pmd).
    pub fn do_anonymous_fault(&mut self, tid: TaskId, index: u64, slot: u32) -> Fault {
        let (t0, s0) = (self.mm.cur.acc, self.mm.cur.sleep);
        let (fault, huge) = match self.do_huge_pmd_anonymous_page(tid, index) {
            Some(Fault::Minor) => (Fault::Minor, true),
            Some(f) => (f, false),
            None => match self.pte_alloc(tid, index + 1) {
                Ok(()) => (self.do_anonymous_page_at(tid, slot), false),
                Err(f) => (f, false),
            },
        };
        if matches!(fault, Fault::Minor | Fault::Major) {
            let ns = (self.mm.cur.acc - t0) + (self.mm.cur.sleep - s0);
            if huge {
                self.thp.fault_huge.add(ns);
            } else {
                self.thp.fault_base.add(ns);
            }
        }
        fault
    }

    /// Adds one to a named counter at `now` (the `signal` operation).
    pub fn signal(&mut self, name: &str, now: u64) {
        *self.thp.signals.entry(name.to_string()).or_insert(0) += 1;
        self.thp.signal_times.insert(name.to_string(), now);
    }

    /// When a named counter was last signalled, if ever [ns].
    pub fn signal_time(&self, name: &str) -> Option<u64> {
        self.thp.signal_times.get(name).copied()
    }

    /// A named counter's value (the `wait` operation).
    pub fn signal_count(&self, name: &str) -> u64 {
        self.thp.signals.get(name).copied().unwrap_or(0)
    }
}

/// What a run reports of anonymous faults (part of the run result).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ThpReport {
    /// Every anonymous fault served by a base page.
    pub fault_base: LatStat,
    /// Every anonymous fault served by a huge page.
    pub fault_huge: LatStat,
    /// Latency of each 2 MiB region of `thp_fault` that got base pages [µs].
    pub region_base_us: Vec<f64>,
    /// Latency of each 2 MiB region of `thp_fault` that got a huge page [µs].
    pub region_huge_us: Vec<f64>,
}

impl ThpState {
    /// The run-result view.
    pub fn report(&self) -> ThpReport {
        let us = |huge: bool| {
            self.regions
                .iter()
                .filter(|r| r.0 == huge)
                .map(|r| r.1 as f64 / 1000.0)
                .collect()
        };
        ThpReport {
            fault_base: self.fault_base,
            fault_huge: self.fault_huge,
            region_base_us: us(false),
            region_huge_us: us(true),
        }
    }
}
