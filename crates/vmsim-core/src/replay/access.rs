//! Replay of a page-access trace through the kernel's page cache and LRU.
//!
//! Each cache size is one booted [`Kernel`] whose page cache is limited to that
//! size by a memory cgroup (cgroup v2 `memory.max`), so its capacity is exact and
//! the machine's own reserves and watermarks do not blur it; the machine has
//! room to spare, so reclaim is the group's limit reclaim (try_charge →
//! try_to_free_mem_cgroup_pages → shrink_lruvec), as for a container whose page
//! cache fills its limit. A trace's object is one page of one file: a hit is
//! filemap_get_folio() + folio_mark_accessed() (as filemap_read() marks a folio it
//! reads), a miss is __filemap_get_folio(FGP_CREAT) — a new page charged,
//! inserted with its shadow entry judged by workingset_refault() and put on the
//! LRU by folio_add_lru(). Deactivation (shrink_active_list), the inactive
//! list's second chance (folio_check_references) and the shadow entries are the
//! kernel's own code; nothing is written here that the simulator does not run
//! elsewhere. No readahead: one access brings in one page, as in libCacheSim.
//! The task engine is not used: one task makes every access back to back, and a
//! throttled reclaim (which would sleep) is retried at once.

use super::trace_access::{for_each_access, BadInput, Format};
use crate::config::Scenario;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::{Gfp, GFP_HIGHUSER_MOVABLE};
use crate::mm::page::{IntMap, PAGE_SIZE};
use crate::mm::vmstat::{Event, NodeStat};
use serde::Serialize;

/// Spare memory of the machine beyond the page cache's limit [bytes].
const SPARE_BYTES: u64 = 256 << 20;

/// The figures of one cache size.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SizeResult {
    /// Page-cache limit (memory.max) [pages].
    pub cache_pages: u64,
    /// Accesses that found their page cached.
    pub hits: u64,
    /// Accesses that did not.
    pub misses: u64,
    /// hits / accesses.
    pub hit_ratio: f64,
    /// Misses whose shadow entry was found (workingset_refault_file).
    pub refaults: u64,
    /// Refaults judged part of the workingset and activated (workingset_activate_file).
    pub refault_activations: u64,
    /// Pages scanned by reclaim (pgscan_file + pgscan_anon: limit reclaim is not
    /// counted in pgscan_direct).
    pub pgscan: u64,
    /// Pages reclaimed (pgsteal_file + pgsteal_anon).
    pub pgsteal: u64,
    /// Pages moved to the active list (pgactivate).
    pub pgactivate: u64,
    /// Pages moved to the inactive list (pgdeactivate).
    pub pgdeactivate: u64,
    /// Pages the kernel could not bring in (a failed allocation or charge).
    pub failed: u64,
}

/// A kernel booted to replay accesses at one cache size.
pub struct PageCacheReplay {
    /// The kernel.
    k: Kernel,
    /// The task making the accesses.
    tid: TaskId,
    /// The one file whose pages the trace's objects are.
    ino: u32,
    /// The figures so far.
    r: SizeResult,
}

impl PageCacheReplay {
    /// Boots a kernel whose page cache is limited to `cache_pages` pages; `kernel_toml`
    /// holds `[kernel]` settings (may be empty).
    pub fn new(cache_pages: u64, kernel_toml: &str) -> Result<Self, String> {
        if cache_pages == 0 {
            return Err("the cache size must be at least one page".into());
        }
        let limit = cache_pages * PAGE_SIZE;
        let memory = (limit + SPARE_BYTES).div_ceil(2 << 20) * (2 << 20);
        let sc = Scenario::from_toml(&format!(
            "name = \"replay-access\"\n[machine]\nmemory = {memory}\ncpus = 1\n\
             [kernel]\n{kernel_toml}\n\
             [[cgroup]]\npath = \"replay\"\nhierarchy = \"v2\"\nmax = {limit}\n"
        ))
        .map_err(|e| e.to_string())?;
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        k.mm.memcg.create_from_specs(&sc.cgroups);
        let tid = k.alloc_task_struct("replay", 0, false);
        if !k.copy_process(tid, 0) {
            return Err("the replay task could not be created".into());
        }
        let id = k.mm.memcg.paths["replay"];
        k.attach_task_memcg(tid, id);
        let ino = k.lookup_or_create("trace");
        Ok(PageCacheReplay {
            k,
            tid,
            ino,
            r: SizeResult {
                cache_pages,
                ..Default::default()
            },
        })
    }

    /// One access to page `index` of the trace's file; true on a hit.
    #[inline]
    pub fn access(&mut self, index: u32) -> bool {
        let index = index as u64;
        if let Some(p) = self.k.filemap_get_folio(self.ino, index) {
            // filemap_read() → folio_mark_accessed().
            self.k.mm.folio_mark_accessed(p, 0);
            self.r.hits += 1;
            return true;
        }
        self.r.misses += 1;
        self.add_to_page_cache(index);
        false
    }

    /// A miss: __filemap_get_folio(FGP_CREAT) of one page with the readahead gfp mask
    /// (page_cache_ra_unbounded: __GFP_NORETRY | __GFP_NOWARN); a reclaim that would
    /// sleep is retried at once, a bounded number of times.
    fn add_to_page_cache(&mut self, index: u64) {
        let gfp = Gfp(GFP_HIGHUSER_MOVABLE.0
            | crate::mm::gfp::__GFP_NORETRY.0
            | crate::mm::gfp::__GFP_NOWARN.0);
        for _ in 0..64 {
            match self
                .k
                .filemap_create_folio(self.tid, self.ino, index, 0, gfp, false)
            {
                AllocResult::Page(_) => return,
                AllocResult::Retry => {
                    self.k.mm.cur.sleep = 0;
                }
                AllocResult::Failed | AllocResult::Killed => break,
            }
        }
        self.r.failed += 1;
    }

    /// The figures so far.
    pub fn result(&self) -> SizeResult {
        let ev = |e: Event| self.k.mm.events[e as usize];
        let mut r = self.r.clone();
        let n = r.hits + r.misses;
        r.hit_ratio = if n == 0 {
            0.0
        } else {
            r.hits as f64 / n as f64
        };
        let node = |i: NodeStat| {
            self.k
                .mm
                .nodes
                .iter()
                .map(|n| n.vm_stat[i as usize])
                .sum::<i64>()
        };
        r.refaults = node(NodeStat::WORKINGSET_REFAULT_FILE) as u64;
        r.refault_activations = node(NodeStat::WORKINGSET_ACTIVATE_FILE) as u64;
        r.pgscan = ev(Event::PGSCAN_FILE) + ev(Event::PGSCAN_ANON);
        r.pgsteal = ev(Event::PGSTEAL_FILE) + ev(Event::PGSTEAL_ANON);
        r.pgactivate = ev(Event::PGACTIVATE);
        r.pgdeactivate = ev(Event::PGDEACTIVATE);
        r
    }

    /// Re-verifies the LRU lists (Mm::check_lru).
    pub fn check(&self) -> Result<(), String> {
        self.k.mm.check_lru()
    }
}

/// The result of a replay.
#[derive(Debug, Clone, Serialize)]
pub struct AccessReport {
    /// Requests read (page accesses).
    pub requests: u64,
    /// Distinct pages in the trace.
    pub distinct_pages: u64,
    /// What did not parse.
    pub bad_input: BadInput,
    /// One entry per cache size, in the order given.
    pub sizes: Vec<SizeResult>,
}

/// Replays the accesses of a trace stream at each cache size, reading it once: every
/// access goes to every size's kernel in turn. Memory is that of the kernels plus one
/// word per distinct page (the map from the trace's object ids to file indices).
pub fn replay_access(
    r: &mut dyn std::io::BufRead,
    fmt: &Format,
    cache_pages: &[u64],
    kernel_toml: &str,
) -> Result<AccessReport, String> {
    let mut kernels = cache_pages
        .iter()
        .map(|&n| PageCacheReplay::new(n, kernel_toml))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids: IntMap<u64, u32> = IntMap::default();
    let mut requests = 0u64;
    let mut too_many = false;
    let bad = for_each_access(r, fmt, |obj| {
        let next = ids.len() as u32;
        let index = *ids.entry(obj).or_insert(next);
        if index == u32::MAX {
            too_many = true;
            return false;
        }
        requests += 1;
        for k in kernels.iter_mut() {
            k.access(index);
        }
        true
    });
    if too_many {
        return Err("the trace has more than 4,294,967,294 distinct pages".into());
    }
    Ok(AccessReport {
        requests,
        distinct_pages: ids.len() as u64,
        bad_input: bad,
        sizes: kernels.iter().map(|k| k.result()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accesses of a list of pages at one cache size.
    fn run(pages: &[u32], cache: u64) -> (PageCacheReplay, Vec<bool>) {
        let mut k = PageCacheReplay::new(cache, "").unwrap();
        let hits = pages.iter().map(|&p| k.access(p)).collect();
        k.check().unwrap();
        (k, hits)
    }

    #[test]
    fn a_working_set_that_fits_hits_after_its_first_pass() {
        let pages: Vec<u32> = (0..3).flat_map(|_| 0..500).collect();
        let (k, hits) = run(&pages, 1024);
        let r = k.result();
        assert_eq!(r.misses, 500);
        assert_eq!(r.hits, 1000);
        assert!(hits[500..].iter().all(|&h| h));
        assert_eq!(r.pgscan, 0, "nothing to reclaim below the limit");
    }

    #[test]
    fn a_loop_larger_than_the_cache_thrashes_without_second_accesses() {
        // Pages used once are never referenced: they stay inactive, and with an empty
        // active list no refault is judged recent (workingset_test_recent), so a loop
        // over 1.5x the cache misses every time, as on the kernel.
        let pages: Vec<u32> = (0..6).flat_map(|_| 0..1536).collect();
        let (k, _) = run(&pages, 1024);
        let r = k.result();
        assert_eq!(r.hits, 0);
        assert!(r.pgsteal > 0 && r.pgscan >= r.pgsteal);
        assert!(r.refaults > 0, "evicted pages leave shadows that refault");
        assert_eq!(r.refault_activations, 0);
        assert_eq!(r.failed, 0);
    }

    #[test]
    fn pages_touched_three_times_are_activated_and_later_deactivated() {
        // Three accesses: added inactive, referenced, activated (folio_mark_accessed).
        // Twice the cache of them fills the active list past its share, so
        // shrink_active_list deactivates, and refaults with a non-empty active list
        // are activated.
        let mut pages: Vec<u32> = (0..2048).flat_map(|p| [p, p, p]).collect();
        pages.extend((0..3).flat_map(|_| 0..800));
        let (k, _) = run(&pages, 1024);
        let r = k.result();
        assert!(r.pgactivate >= 1024, "{r:?}");
        assert!(r.pgdeactivate > 0, "{r:?}");
        assert!(r.refault_activations > 0, "{r:?}");
    }

    #[test]
    fn an_active_page_survives_a_scan_of_once_touched_pages() {
        // Page 0 is accessed three times (promoted to the active list); then a stream
        // of pages used once, twice the cache, flows through the inactive list.
        let mut pages = vec![0u32, 0, 0];
        pages.extend(1..2049);
        pages.push(0);
        let (_, hits) = run(&pages, 1024);
        assert!(
            *hits.last().unwrap(),
            "the active page outlives the streaming scan"
        );
        // Touched twice only, it is referenced but inactive: reclaimed like the rest
        // (folio_check_references: FOLIOREF_RECLAIM_CLEAN for an unmapped file folio).
        let mut pages = vec![0u32, 0];
        pages.extend(1..2049);
        pages.push(0);
        let (_, hits) = run(&pages, 1024);
        assert!(!*hits.last().unwrap());
    }

    #[test]
    fn replays_are_deterministic() {
        let trace: String = (0..20000u64)
            .map(|i| format!("{}\n", (i * 7919) % 3001 + (i % 13) * 100))
            .collect();
        let go = || {
            let mut r: &[u8] = trace.as_bytes();
            serde_json::to_string(&replay_access(&mut r, &Format::Txt, &[256, 1024], "").unwrap())
                .unwrap()
        };
        assert_eq!(go(), go());
    }
}
