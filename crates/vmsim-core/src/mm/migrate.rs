//! Page migration for compaction.
//!
//! Models mm/migrate.c (≈v6.17) as compaction calls it: `migrate_pages()` with
//! `compaction_alloc()` as the allocator of destinations (`MR_COMPACTION`).
//! A folio of any order moves as one unit to a free block of its order
//! (`migrate_folio_unmap()` + `migrate_folio_move()`); when no block of its
//! order can be had, a large folio is split (`try_split_folio()`) and its
//! pages are tried once more as order-0 folios after the rest of the batch,
//! while an order-0 folio without a destination, or a large one that cannot
//! be split (dirty: its buffers cannot be released), ends the batch with
//! -ENOMEM (`migrate_pages_batch()`), which ends the zone's compaction.
//!
//! Simplifications: migration is immediate and never fails for a lock, a
//! reference or writeback (-EAGAIN), so the batch's retry passes and the
//! synchronous one-by-one fallback of `migrate_pages_sync()` change nothing;
//! the moved folio keeps its place on its LRU list (the kernel puts it back
//! at the head).

use super::compaction::CompactControl;
use super::page::{pfn32, Pfn, NIL, NO_OWNER};
use super::rmap::Entry;
use super::vmstat::Event;
use crate::kernel::Kernel;

/// How a migrate_pages() call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrateOutcome {
    /// Base pages moved (stats.nr_succeeded).
    pub nr_succeeded: u64,
    /// Base pages that found no destination (stats.nr_failed_pages; untried ones are not
    /// counted).
    pub nr_failed_pages: u64,
    /// Large folios split because no free block of their order was left (stats.nr_split).
    pub nr_split: u64,
    /// An order-0 folio found no destination: the call returned -ENOMEM.
    pub enomem: bool,
}

impl Kernel {
    /// Moves a folio to the free block `dst` of its order (migrate_folio_move →
    /// move_to_new_folio → filemap_migrate_folio / buffer_migrate_folio, then
    /// remove_migration_ptes): every slot of the owner that held `src`, the place on the
    /// LRU, the page state and the buffers go to `dst`; `src` returns to the buddy lists.
    pub fn migrate_folio(&mut self, src: Pfn, dst: Pfn) {
        debug_assert!(self.page_is_migratable(src));
        debug_assert_eq!(self.mm.page_zone(src), self.mm.page_zone(dst));
        let old = self.mm.map[src as usize];
        let order = old.order();
        let nr: Pfn = 1 << order;
        debug_assert!(self.mm.map[dst as usize].order() == order);
        let l = self.mm.folio_lru_list(src);
        let nid = self.mm.pfn_to_nid(src);
        // The folio's state, list links included; the tails follow their head.
        for q in dst..dst + nr {
            self.mm.pb_unaccount(q);
        }
        {
            let d = &mut self.mm.map[dst as usize];
            d.flags = old.flags;
            d.ok = old.ok;
            d.mt = old.mt;
            d.owner = old.owner;
            d.prev = old.prev;
            d.next = old.next;
        }
        for i in 1..nr {
            let t = self.mm.map[(src + i) as usize];
            let d = &mut self.mm.map[(dst + i) as usize];
            d.flags = t.flags;
            d.ok = t.ok;
            d.owner = NO_OWNER;
        }
        for q in dst..dst + nr {
            self.mm.pb_account(q);
        }
        // Replace src by dst in place on its LRU list (list_replace): the lruvec of the
        // folio's memory cgroup on its node (folio_lruvec), not the node's own.
        {
            let id = self.mm.memcg.folio_memcg(old.kind(), old.owner);
            let list = &mut super::memcontrol::mem_cgroup_lruvec(
                &mut self.mm.nodes,
                &mut self.mm.memcg,
                id,
                nid,
            )
            .lists[l];
            if old.prev() == NIL {
                list.head = dst;
            } else {
                self.mm.map[old.prev as usize].next = pfn32(dst);
            }
            if old.next() == NIL {
                list.tail = dst;
            } else {
                self.mm.map[old.next as usize].prev = pfn32(dst);
            }
        }
        // The page table or every page-cache slot of the folio now points at the new
        // frame (remove_migration_ptes; the multi-index xarray entry).
        for i in 0..nr as u32 {
            debug_assert_eq!(self.rmap.get(old.owner + i), Entry::Page(src));
            self.rmap.set(old.owner + i, Entry::Page(dst));
        }
        self.buffer_migrate_folio(src, dst);
        // The old block is free again.
        let zid = self.mm.page_zone(src);
        for q in src..src + nr {
            self.mm.pb_unaccount(q);
            let s = &mut self.mm.map[q as usize];
            s.flags = 0;
            s.ok = 0;
            s.owner = NO_OWNER;
            s.next = pfn32(NIL);
            s.prev = pfn32(NIL);
        }
        let mt = self.mm.get_pageblock_migratetype(src);
        self.mm.count_vm_events(Event::PGFREE, nr as u64);
        self.mm.cur.acc += nr as u64 * self.mm.cost.migrate_page + self.mm.cost.buddy_free;
        self.mm.__free_one_page(zid, src, order, mt, false);
        self.mm.count_vm_events(Event::PGMIGRATE_SUCCESS, nr as u64);
    }

    /// Whether an isolated large folio can be split (__folio_split's filemap_release_folio):
    /// not when it is dirty, whose buffers (ext4's try_to_free_buffers) or block state
    /// (iomap_release_folio) cannot be released.
    pub fn can_split_folio(&self, p: Pfn) -> bool {
        !self.mm.map[p as usize].test(super::page::pg::DIRTY)
    }

    /// Migrates the folios compaction isolated, in the order the kernel's list holds them
    /// (the last isolated first), each to a destination from compaction_alloc
    /// (migrate_pages → migrate_pages_batch, MR_COMPACTION). A large folio without a
    /// destination of its order is split and its pages tried once after the batch
    /// (try_split_folio, the split_folios pass); an order-0 folio without one ends the
    /// call with -ENOMEM, leaving the rest untried. Counts pgmigrate_success/fail.
    pub fn migrate_pages(&mut self, cc: &mut CompactControl, from: &[Pfn]) -> MigrateOutcome {
        let mut out = MigrateOutcome {
            nr_succeeded: 0,
            nr_failed_pages: 0,
            nr_split: 0,
            enomem: false,
        };
        let mut split_folios = Vec::new();
        for &src in from.iter().rev() {
            let order = self.mm.map[src as usize].order();
            match self.compaction_alloc(cc, order) {
                Some(dst) => {
                    self.migrate_folio(src, dst);
                    out.nr_succeeded += 1 << order;
                }
                None if order > 0 && self.can_split_folio(src) => {
                    let cpu = self.tasks[cc.tid as usize].cpu;
                    split_folios.extend(self.split_folio(src, cpu));
                    out.nr_split += 1;
                }
                None if order > 0 => {
                    // The split failed (-EBUSY): the folio's pages count as failed and
                    // the call returns -ENOMEM.
                    out.nr_failed_pages += 1 << order;
                    out.enomem = true;
                    break;
                }
                None => {
                    out.nr_failed_pages += 1;
                    out.enomem = true;
                    break;
                }
            }
        }
        if !out.enomem {
            // The split folios' pages: MIGRATE_ASYNC, one pass, failures not retried.
            for src in split_folios {
                match self.compaction_alloc(cc, 0) {
                    Some(dst) => {
                        self.migrate_folio(src, dst);
                        out.nr_succeeded += 1;
                    }
                    None => {
                        out.nr_failed_pages += 1;
                        break;
                    }
                }
            }
        }
        if out.nr_failed_pages > 0 {
            self.mm
                .count_vm_events(Event::PGMIGRATE_FAIL, out.nr_failed_pages);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::engine::TaskId;
    use crate::kernel::AllocResult;
    use crate::mm::compaction::CompactControl;
    use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
    use crate::mm::page::{pg, PAGE_SIZE};
    use crate::mm::vmstat::NodeStat;

    /// A booted 512 MiB kernel with a task and a file `f` of `pages` pages written in
    /// 1 MiB write(2) calls (order-8 folios), cleaned unless `dirty`.
    fn boot_with_file(pages: u64, dirty: bool) -> (Kernel, TaskId, u32) {
        let sc = Scenario::from_toml("[machine]\nmemory = \"512MiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        let ino = k.lookup_or_create("f");
        let bs = 1u64 << 20;
        for i in 0..pages {
            let left = (bs - (i * PAGE_SIZE) % bs).min((pages - i) * PAGE_SIZE);
            assert!(matches!(
                k.file_write_folio(tid, ino, i, left),
                AllocResult::Page(_)
            ));
        }
        if !dirty {
            let mut i = 0;
            while i < pages {
                let p = k.filemap_get_folio(ino, i).unwrap();
                k.folio_clear_dirty(p);
                i += k.mm.folio_nr_pages(p);
            }
        }
        (k, tid, ino)
    }

    /// A compaction of `p`'s zone that isolates nothing more (its lists are what the test
    /// puts on them).
    fn control(k: &Kernel, p: Pfn, tid: TaskId) -> CompactControl {
        CompactControl::new(k.mm.page_zone(p), 0, true, tid)
    }

    #[test]
    fn a_large_folio_moves_whole_to_a_block_of_its_order() {
        let (mut k, tid, ino) = boot_with_file(512, false);
        let src = k.filemap_get_folio(ino, 256).unwrap();
        assert_eq!(k.mm.map[src as usize].order(), 8);
        let had_buffers = k.buffers.bh.contains_key(&src);
        let AllocResult::Page(dst) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 8, tid) else {
            panic!("no free block of order 8");
        };
        let free = k.mm.nr_free_pages();
        let files = k.mm.nodes[0].vm_stat[NodeStat::NR_FILE_PAGES as usize];
        k.migrate_folio(src, dst);
        // Every index of the folio now finds the new block, whole and of the same order.
        for i in 256..512 {
            assert_eq!(k.filemap_get_folio(ino, i), Some(dst));
        }
        assert_eq!(k.mm.map[dst as usize].order(), 8);
        assert_eq!(k.folio_index(dst), 256);
        assert!(k.mm.map[dst as usize].test(pg::LRU));
        assert_eq!(k.buffers.bh.contains_key(&dst), had_buffers);
        assert!(!k.buffers.bh.contains_key(&src));
        // The old block is free, its pages counted once each.
        assert_eq!(k.mm.nr_free_pages(), free + 256);
        assert_eq!(
            k.mm.nodes[0].vm_stat[NodeStat::NR_FILE_PAGES as usize],
            files
        );
        assert_eq!(k.mm.events[Event::PGMIGRATE_SUCCESS as usize], 256);
        k.mm.check_lru().unwrap();
    }

    #[test]
    fn compaction_alloc_splits_the_smallest_larger_block_onto_the_lower_lists() {
        let (mut k, tid, _) = boot_with_file(0, false);
        let AllocResult::Page(block) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 10, tid) else {
            panic!("no free block of order 10");
        };
        let mut cc = control(&k, block, tid);
        cc.freepages[10].push_back(block);
        cc.nr_freepages = 1024;
        assert_eq!(k.compaction_alloc(&mut cc, 8), Some(block));
        assert_eq!(
            cc.freepages[9].iter().copied().collect::<Vec<_>>(),
            vec![block + 512]
        );
        assert_eq!(
            cc.freepages[8].iter().copied().collect::<Vec<_>>(),
            vec![block + 256]
        );
        assert!(cc.freepages[10].is_empty());
        assert_eq!(cc.nr_freepages, 768);
        assert_eq!(k.mm.map[(block + 256) as usize].order(), 8);
        // Nothing of order 10 is left, and this compaction isolates no more.
        assert_eq!(k.compaction_alloc(&mut cc, 10), None);
        // An order-0 request takes the smallest block there is, the order-8 one.
        assert_eq!(k.compaction_alloc(&mut cc, 0), Some(block + 256));
        assert_eq!(cc.freepages[0].len(), 1);
        assert_eq!(cc.freepages[7].len(), 1);
    }

    /// `n` allocated order-0 pages on the isolated lists of `cc`.
    #[test]
    fn a_folio_at_either_end_of_its_groups_lru_list_moves_there() {
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"512MiB\"\ncpus = 1\n[[cgroup]]\npath = \"g\"\n",
        )
        .unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        k.mm.memcg.create_from_specs(&sc.cgroups);
        let g = k.mm.memcg.paths["g"];
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        k.attach_task_memcg(tid, g);
        let ino = k.lookup_or_create("f");
        // Two order-8 folios, the first written the tail of the group's list, the second
        // its head.
        for i in 0..512u64 {
            let left = (1u64 << 20) - (i * PAGE_SIZE) % (1 << 20);
            assert!(matches!(
                k.file_write_folio(tid, ino, i, left),
                AllocResult::Page(_)
            ));
        }
        for index in [0, 256] {
            let src = k.filemap_get_folio(ino, index).unwrap();
            k.folio_clear_dirty(src);
            let AllocResult::Page(dst) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 8, tid) else {
                panic!("no free block of order 8");
            };
            k.migrate_folio(src, dst);
            assert_eq!(k.filemap_get_folio(ino, index), Some(dst));
        }
        k.mm.check_lru().unwrap();
    }

    fn order0_targets(k: &mut Kernel, cc: &mut CompactControl, n: u64, tid: TaskId) {
        for _ in 0..n {
            let AllocResult::Page(p) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, tid) else {
                panic!("out of memory");
            };
            cc.freepages[0].push_back(p);
            cc.nr_freepages += 1;
        }
    }

    #[test]
    fn a_clean_large_folio_without_a_block_of_its_order_is_split_and_moved_page_by_page() {
        let (mut k, tid, ino) = boot_with_file(256, false);
        let src = k.filemap_get_folio(ino, 0).unwrap();
        let mut cc = control(&k, src, tid);
        order0_targets(&mut k, &mut cc, 256, tid);
        let out = k.migrate_pages(&mut cc, &[src]);
        assert_eq!(
            out,
            MigrateOutcome {
                nr_succeeded: 256,
                nr_failed_pages: 0,
                nr_split: 1,
                enomem: false
            }
        );
        for i in 0..256 {
            let p = k.filemap_get_folio(ino, i).unwrap();
            assert_eq!(k.mm.map[p as usize].order(), 0);
            assert_eq!(k.folio_index(p), i);
        }
        assert!(k.buffers.bh.is_empty(), "the split released the buffers");
        assert_eq!(k.inodes[ino as usize].nrpages, 256);
        assert_eq!(k.mm.events[Event::PGMIGRATE_SUCCESS as usize], 256);
        assert_eq!(k.mm.events[Event::PGMIGRATE_FAIL as usize], 0);
        k.mm.check_lru().unwrap();
    }

    #[test]
    fn a_dirty_large_folio_without_a_block_of_its_order_fails_with_enomem() {
        let (mut k, tid, ino) = boot_with_file(512, true);
        let (a, b) = (
            k.filemap_get_folio(ino, 0).unwrap(),
            k.filemap_get_folio(ino, 256).unwrap(),
        );
        let mut cc = control(&k, a, tid);
        order0_targets(&mut k, &mut cc, 512, tid);
        // The last isolated folio is tried first; it cannot be split: the call ends and
        // the other folio is not tried.
        let out = k.migrate_pages(&mut cc, &[a, b]);
        assert_eq!(
            out,
            MigrateOutcome {
                nr_succeeded: 0,
                nr_failed_pages: 256,
                nr_split: 0,
                enomem: true
            }
        );
        assert_eq!(k.filemap_get_folio(ino, 300), Some(b));
        assert_eq!(k.mm.map[b as usize].order(), 8);
        assert_eq!(k.filemap_get_folio(ino, 3), Some(a));
        assert_eq!(k.mm.events[Event::PGMIGRATE_FAIL as usize], 256);
        k.mm.check_lru().unwrap();
    }
}
