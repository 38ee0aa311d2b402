//! A start state's free lists as a real machine's: free blocks of every order, kept
//! apart by the pages in use between them.
//!
//! A freshly booted vmsim holds its free memory in whole MAX_PAGE_ORDER blocks; a real
//! machine that has run for a while holds a good part of it in smaller blocks, each
//! next to a buddy that is partly in use (/proc/buddyinfo shows how many of each
//! order). What an experiment then does — which allocations fall back, what reclaim
//! frees, what compaction has to move — depends on that layout. This module has no
//! kernel counterpart: it sets up the initial condition a recorded /proc/buddyinfo
//! describes. The `shape_free_lists` op takes whole free max-order blocks of a zone,
//! spread evenly over it, frees inside them the small blocks the target asks for (each
//! with a page of its buddy held back, as `__free_one_page` would otherwise merge
//! them), and keeps the pages between them for the task's next movable order-0
//! allocations (`Kernel::alloc_pages_node`): the memory the rest of the system had in
//! use sits between the holes, as on the real machine.

use super::gfp::{Gfp, __GFP_MOVABLE};
use super::mmzone::{MAX_PAGE_ORDER, NR_PAGE_ORDERS};
use super::page::{pg, Pfn};
use super::Mm;
use crate::engine::rng::Stream;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Pages in a MAX_PAGE_ORDER block.
const CHUNK: usize = 1 << MAX_PAGE_ORDER;

/// Free-block counts per order of one zone, as a line of /proc/buddyinfo gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuddyTarget {
    /// The node.
    pub nid: usize,
    /// The zone's name as /proc/buddyinfo prints it (`DMA32`, `Normal`).
    pub zone: String,
    /// Free blocks of each order, 0..=MAX_PAGE_ORDER.
    pub counts: [u64; NR_PAGE_ORDERS],
}

/// Reads /proc/buddyinfo text (`Node 0, zone   Normal  5659 11316 ...`, one line per
/// zone, 11 counts each); an error names the line that is not of that form.
pub fn parse_buddyinfo(text: &str) -> Result<Vec<BuddyTarget>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "buddyinfo line {}: expected 'Node N, zone NAME' and 11 counts, got '{line}'",
                i + 1
            )
        };
        let rest = line.strip_prefix("Node ").ok_or_else(bad)?;
        let (nid, rest) = rest.split_once(',').ok_or_else(bad)?;
        let nid: usize = nid.trim().parse().map_err(|_| bad())?;
        let rest = rest.trim().strip_prefix("zone").ok_or_else(bad)?;
        let mut words = rest.split_whitespace();
        let zone = words.next().ok_or_else(bad)?.to_string();
        let nums: Vec<u64> = words
            .map(|w| w.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let counts: [u64; NR_PAGE_ORDERS] = nums.try_into().map_err(|_| bad())?;
        out.push(BuddyTarget { nid, zone, counts });
    }
    Ok(out)
}

/// A page of a planned block: in use, a free hole, or in use and never to be freed
/// (it keeps a hole from merging with its buddy).
const USED: u8 = 0;
const HOLE: u8 = 1;
const PIN: u8 = 2;

/// Plans the holes of orders below MAX_PAGE_ORDER in `chunks` blocks of CHUNK pages:
/// the largest first, one block after another round the blocks so that they are spread
/// evenly, each at the first aligned place of pages in use whose buddy keeps a page in
/// use. Returns each block's page states and how many holes of each order found a place.
fn plan_holes(
    chunks: usize,
    counts: &[u64; NR_PAGE_ORDERS],
) -> (Vec<Vec<u8>>, [u64; NR_PAGE_ORDERS]) {
    let mut plan = vec![vec![USED; CHUNK]; chunks];
    let mut placed = [0u64; NR_PAGE_ORDERS];
    if chunks == 0 {
        return (plan, placed);
    }
    let mut cursor = 0usize;
    for order in (0..MAX_PAGE_ORDER).rev() {
        let sz = 1usize << order;
        'hole: for _ in 0..counts[order] {
            for step in 0..chunks {
                let c = &mut plan[(cursor + step) % chunks];
                if place_hole(c, sz) {
                    placed[order] += 1;
                    cursor = (cursor + step + 1) % chunks;
                    continue 'hole;
                }
            }
            // No block has room left for a hole of this order.
            break;
        }
    }
    (plan, placed)
}

/// Frees the first aligned run of `sz` pages in use in block `c` whose buddy keeps a
/// page in use (pinning its last page in use if none is pinned yet); false if none.
fn place_hole(c: &mut [u8], sz: usize) -> bool {
    for p in (0..CHUNK).step_by(sz) {
        if c[p..p + sz].iter().any(|&s| s != USED) {
            continue;
        }
        let b = p ^ sz;
        if !c[b..b + sz].contains(&PIN) {
            let Some(last) = c[b..b + sz].iter().rposition(|&s| s == USED) else {
                continue;
            };
            c[b + last] = PIN;
        }
        c[p..p + sz].fill(HOLE);
        return true;
    }
    false
}

/// The free blocks a planned block's holes make: each the largest aligned run of holes
/// at its start, as (offset, order).
fn holes_of(states: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < CHUNK {
        if states[off] != HOLE {
            off += 1;
            continue;
        }
        let mut order = (off.trailing_zeros() as usize).min(MAX_PAGE_ORDER - 1);
        while states[off..off + (1 << order)].iter().any(|&s| s != HOLE) {
            order -= 1;
        }
        out.push((off, order));
        off += 1 << order;
    }
    out
}

impl Mm {
    /// Lays out zone `zid`'s free memory as `counts` says (see the module comment) and
    /// returns the pages in use between the holes, to be handed out in place of free
    /// pages, and how many holes of each order were made. `pages` is how much memory
    /// in use those pages should be: it sets how many max-order blocks are broken up,
    /// (pages + the holes' pages) / MAX_ORDER_NR_PAGES; the target's own count of
    /// max-order blocks is what is left.
    pub fn shape_free_lists(
        &mut self,
        zid: usize,
        counts: &[u64; NR_PAGE_ORDERS],
        pages: u64,
    ) -> (Vec<Pfn>, [u64; NR_PAGE_ORDERS]) {
        let z = &self.zones[zid];
        let first = z.zone_start_pfn.next_multiple_of(CHUNK as Pfn);
        let whole: Vec<Pfn> = (first..z.zone_end_pfn())
            .step_by(CHUNK)
            .filter(|&pfn| pfn + CHUNK as Pfn <= z.zone_end_pfn())
            .filter(|&pfn| {
                // Untouched blocks (mm/deferred.rs) read as what boot would write.
                let p = self.frame(pfn);
                p.test(pg::BUDDY) && p.order() == MAX_PAGE_ORDER
            })
            .collect();
        let hole_pages: u64 = counts[..MAX_PAGE_ORDER]
            .iter()
            .enumerate()
            .map(|(k, &n)| n << k)
            .sum();
        let want = (pages + hole_pages).div_ceil(CHUNK as u64) as usize;
        let m = want.min(whole.len());
        let (plan, placed) = plan_holes(m, counts);
        let mut pool = Vec::new();
        for (i, states) in plan.iter().enumerate() {
            // Spread evenly over the zone's whole free blocks.
            let base = whole[i * whole.len() / m];
            self.init_deferred_range(base, base + CHUNK as Pfn);
            if !self.__isolate_free_page(base, MAX_PAGE_ORDER) {
                break;
            }
            // 1,024 allocated order-0 pages: the holes' are freed, the others kept.
            self.split_page(base, MAX_PAGE_ORDER);
            for (off, &s) in states.iter().enumerate() {
                let pfn = base + off as Pfn;
                if s == HOLE {
                    self.pb_unaccount(pfn);
                    self.map[pfn as usize].flags = 0;
                } else {
                    pool.push(pfn);
                }
            }
            for (off, order) in holes_of(states) {
                let pfn = base + off as Pfn;
                let mt = self.get_pageblock_migratetype(pfn);
                self.__free_one_page(zid, pfn, order, mt, false);
            }
        }
        (pool, placed)
    }
}

impl Kernel {
    /// Lays out the free lists of every zone `targets` names (`Mm::shape_free_lists`),
    /// `size_pages` of memory in use shared among them in proportion to their holes,
    /// and gives task `tid` the pages between the holes, in an order drawn from `rng`
    /// (which of them its next allocations take is not known of the real machine).
    /// Returns how many holes of each order were made, summed over the zones.
    pub fn shape_free_lists(
        &mut self,
        tid: TaskId,
        targets: &[BuddyTarget],
        size_pages: u64,
        rng: &mut Stream,
    ) -> [u64; NR_PAGE_ORDERS] {
        let holes = |c: &[u64; NR_PAGE_ORDERS]| -> u64 {
            c[..MAX_PAGE_ORDER]
                .iter()
                .enumerate()
                .map(|(k, &n)| n << k)
                .sum()
        };
        let all: u64 = targets.iter().map(|t| holes(&t.counts)).sum();
        let mut placed = [0u64; NR_PAGE_ORDERS];
        let mut pool = Vec::new();
        for t in targets {
            let Some(zid) = self.mm.zones.iter().position(|z| {
                z.nid == t.nid && z.zone_type.name() == t.zone && z.present_pages > 0
            }) else {
                continue;
            };
            let share = if all == 0 {
                0
            } else {
                (size_pages as u128 * holes(&t.counts) as u128 / all as u128) as u64
            };
            let (p, n) = self.mm.shape_free_lists(zid, &t.counts, share);
            pool.extend(p);
            for (a, b) in placed.iter_mut().zip(n) {
                *a += b;
            }
        }
        for i in (1..pool.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            pool.swap(i, j);
        }
        let held = &mut self.tasks[tid as usize].layout_pool;
        if held.is_empty() && !pool.is_empty() {
            self.layout_pools += 1;
        }
        held.extend(pool);
        placed
    }

    /// Frees the pages `shape_free_lists` kept for task `tid` that it has not taken.
    pub fn shape_free_lists_end(&mut self, tid: TaskId) {
        let cpu = self.tasks[tid as usize].cpu;
        let pool = std::mem::take(&mut self.tasks[tid as usize].layout_pool);
        if !pool.is_empty() {
            self.layout_pools -= 1;
        }
        for p in pool {
            self.mm.free_pages(p, 0, cpu);
        }
    }

    /// A movable allocation of task `tid` while it holds laid-out pages: order 0 takes
    /// the next of them, a higher order fails (the caller falls back to order 0); None
    /// when the task holds none or the allocation is not movable.
    pub fn alloc_from_layout_pool(
        &mut self,
        gfp: Gfp,
        order: usize,
        tid: TaskId,
    ) -> Option<AllocResult> {
        let pool = &mut self.tasks[tid as usize].layout_pool;
        if pool.is_empty() || !gfp.has(__GFP_MOVABLE) {
            return None;
        }
        if order > 0 {
            return Some(AllocResult::Failed);
        }
        let p = pool.pop()?;
        if pool.is_empty() {
            self.layout_pools -= 1;
        }
        let zid = self.mm.page_zone(p);
        let cpu = self.tasks[tid as usize].cpu;
        self.mm.count_alloc(zid, zid, cpu, 0);
        Some(AllocResult::Page(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buddyinfo_lines_parse_and_a_bad_one_is_named() {
        let t = parse_buddyinfo(
            "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
             Node 0, zone   Normal   5659  11316  14421  12290   6274   2569   1588    851    617    733   3537 \n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].zone, "Normal");
        assert_eq!(t[1].counts[0], 5659);
        assert_eq!(t[1].counts[10], 3537);
        let e = parse_buddyinfo("Node 0, zone Normal 1 2 3").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn planned_holes_never_have_a_wholly_free_buddy() {
        let counts = [30, 20, 15, 12, 9, 7, 5, 4, 3, 2, 0];
        let (plan, placed) = plan_holes(8, &counts);
        assert_eq!(&placed[..MAX_PAGE_ORDER], &counts[..MAX_PAGE_ORDER]);
        let mut made = [0u64; NR_PAGE_ORDERS];
        for c in &plan {
            for (off, order) in holes_of(c) {
                made[order] += 1;
                // Its buddy keeps a page in use: the two never merge.
                let b = off ^ (1 << order);
                assert!(c[b..b + (1 << order)].iter().any(|&s| s != HOLE));
            }
        }
        assert_eq!(made, counts);
    }

    #[test]
    fn holes_that_do_not_fit_are_counted_as_not_placed() {
        // One block holds at most one order-9 hole.
        let mut counts = [0; NR_PAGE_ORDERS];
        counts[9] = 3;
        let (_, placed) = plan_holes(2, &counts);
        assert_eq!(placed[9], 2);
    }

    /// A 1 GiB one-CPU machine (DMA, DMA32) and a task on it.
    fn boot() -> (Kernel, TaskId) {
        let sc =
            crate::config::Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        (k, tid)
    }

    /// The counts of one zone's line of /proc/buddyinfo.
    fn zone_counts(k: &Kernel, zone: &str) -> Vec<u64> {
        let text = k.mm.buddyinfo();
        let t = parse_buddyinfo(&text).unwrap();
        t.into_iter()
            .find(|t| t.zone == zone)
            .unwrap()
            .counts
            .to_vec()
    }

    #[test]
    fn the_free_lists_take_the_target_shape_and_keep_it_while_the_task_allocates() {
        let (mut k, tid) = boot();
        let before = zone_counts(&k, "DMA32");
        let target = "Node 0, zone DMA32 40 30 20 10 8 6 4 3 2 1 0";
        let targets = parse_buddyinfo(target).unwrap();
        let mut rng = Stream::new(1, 7);
        // 8 MiB in use between the holes.
        let placed = k.shape_free_lists(tid, &targets, 2048, &mut rng);
        assert_eq!(
            &placed[..MAX_PAGE_ORDER],
            &targets[0].counts[..MAX_PAGE_ORDER]
        );
        let after = zone_counts(&k, "DMA32");
        for order in 0..MAX_PAGE_ORDER {
            assert_eq!(
                after[order],
                before[order] + targets[0].counts[order],
                "order {order}"
            );
        }
        // Every hole's buddy keeps a page in use, so the task's order-0 movable
        // allocations take the pages between them and leave the holes as they are.
        let pool = k.tasks[tid as usize].layout_pool.len() as u64;
        assert!(pool >= 2048, "{pool} pages kept");
        for i in 0..pool {
            assert_eq!(k.handle_mm_fault(tid, i), crate::mm::memory::Fault::Minor);
        }
        assert!(k.tasks[tid as usize].layout_pool.is_empty());
        assert_eq!(k.layout_pools, 0, "the allocator stops looking");
        assert_eq!(zone_counts(&k, "DMA32"), after);
        // The next allocation comes from the free lists again.
        assert_eq!(
            k.handle_mm_fault(tid, pool),
            crate::mm::memory::Fault::Minor
        );
        k.mm.check_lru().unwrap();
    }

    #[test]
    fn what_the_task_did_not_take_is_freed_at_the_end_and_the_holes_merge_again() {
        let (mut k, tid) = boot();
        k.mm.drain_all_pages();
        let before = zone_counts(&k, "DMA32");
        let free =
            k.mm.zones
                .iter()
                .map(|z| z.vm_stat[crate::mm::vmstat_items::ZoneStat::NR_FREE_PAGES as usize])
                .sum::<i64>();
        let targets = parse_buddyinfo("Node 0, zone DMA32 9 7 5 3 1 1 1 1 1 1 0").unwrap();
        k.shape_free_lists(tid, &targets, 4096, &mut Stream::new(1, 7));
        // A movable order-9 allocation fails meanwhile; an unmovable one does not.
        assert_eq!(
            k.alloc_pages(crate::mm::gfp::GFP_HIGHUSER_MOVABLE, 9, tid),
            AllocResult::Failed
        );
        assert_eq!(k.layout_pools, 1);
        k.shape_free_lists_end(tid);
        assert_eq!(k.layout_pools, 0);
        k.mm.drain_all_pages();
        assert_eq!(zone_counts(&k, "DMA32"), before);
        let now =
            k.mm.zones
                .iter()
                .map(|z| z.vm_stat[crate::mm::vmstat_items::ZoneStat::NR_FREE_PAGES as usize])
                .sum::<i64>();
        assert_eq!(now, free);
    }

    #[test]
    fn a_layout_larger_than_memory_or_not_buddyinfo_is_refused_with_the_scenario() {
        let sc = |op: &str| {
            crate::config::Scenario::from_toml(&format!(
                "[machine]\nmemory = \"1GiB\"\n[[task]]\nname = \"t\"\nprogram = [{op}]\n"
            ))
        };
        let e = sc("{ op = \"shape_free_lists\", size = \"1MiB\", buddyinfo = \"Node 0, zone DMA32 0 0 0 0 0 0 0 0 0 99999999999999999 0\" }").unwrap_err();
        assert!(
            e.to_string().contains("more than the machine's memory"),
            "{e}"
        );
        let e = sc("{ op = \"shape_free_lists\", size = \"1MiB\", buddyinfo = \"Node 0, zone DMA32 1 2\" }").unwrap_err();
        assert!(e.to_string().contains("buddyinfo line 1"), "{e}");
        assert!(sc("{ op = \"shape_free_lists\", size = \"1MiB\", buddyinfo = \"Node 0, zone DMA32 1 1 1 1 1 1 1 1 1 1 0\" }").is_ok());
    }
}
