//! `echo N > /proc/sys/vm/drop_caches`.
//!
//! Models fs/drop_caches.c (≈v6.17): drop_caches_sysctl_handler() with bit 1
//! dropping the page cache of every inode (iterate_supers → drop_pagecache_sb
//! → invalidate_mapping_pages) and bit 2 the reclaimable slab (drop_slab, in
//! mm/shrinker.rs), each counted in /proc/vmstat (`drop_pagecache`,
//! `drop_slab`). mm/truncate.c's mapping_try_invalidate() frees the clean,
//! unmapped page-cache pages (mapping_evict_folio, which leaves no shadow
//! entry), clears the file's shadow entries, skips pages under writeback
//! (find_lock_entries) and deactivates the dirty and mapped ones it could not
//! free (deactivate_file_folio → lru_deactivate_file).
//!
//! Simplified: vmsim has no page lock, so no page is skipped for being locked;
//! LRU additions are never held in per-CPU batches, so lru_add_drain_all() has
//! nothing to do.

use crate::kernel::Kernel;
use crate::mm::page::{pg, PageKind, Pfn};
use crate::mm::rmap::Entry;
use crate::mm::vmstat::Event;

impl Kernel {
    /// Writes `value` (1..=4) to /proc/sys/vm/drop_caches (drop_caches_sysctl_handler):
    /// bit 1 drops the clean page cache, bit 2 the unused dentries and inodes; bit 4 only
    /// silences the kernel's log line. Returns `(pages freed, slab objects freed)`.
    pub fn drop_caches_sysctl_handler(&mut self, value: u32, cpu: usize) -> (u64, u64) {
        let mut pages = 0;
        let mut objects = 0;
        if value & 1 != 0 {
            pages = self.drop_pagecache(cpu);
            self.mm.count_vm_events(Event::DROP_PAGECACHE, 1);
        }
        if value & 2 != 0 {
            objects = self.drop_slab(cpu);
            self.mm.count_vm_events(Event::DROP_SLAB, 1);
        }
        (pages, objects)
    }

    /// Invalidates the page cache of every live inode, oldest first (iterate_supers →
    /// drop_pagecache_sb, which skips inodes with an empty mapping); returns pages freed.
    fn drop_pagecache(&mut self, cpu: usize) -> u64 {
        let inos: Vec<u32> = self.files.values().copied().collect();
        let mut freed = 0;
        for ino in inos {
            let inode = &self.inodes[ino as usize];
            if inode.pages.chunks.is_empty() {
                continue;
            }
            freed += self.invalidate_mapping_pages(ino, cpu);
        }
        freed
    }

    /// Frees every clean, unmapped page of a file and clears its shadow entries
    /// (invalidate_mapping_pages → mapping_try_invalidate); returns the pages freed.
    pub fn invalidate_mapping_pages(&mut self, ino: u32, cpu: usize) -> u64 {
        let size = self.inodes[ino as usize].size_pages;
        let mut freed = 0;
        for index in 0..size {
            let Some(slot) = self.inodes[ino as usize].pages.slot(index) else {
                continue;
            };
            match self.rmap.get(slot) {
                Entry::Page(p) => {
                    let flags = self.mm.map[p as usize].flags;
                    // find_lock_entries() passes over folios under writeback.
                    if flags & pg::WRITEBACK != 0 {
                        continue;
                    }
                    self.mm.cur.acc += self.mm.cost.shrink_page / 4;
                    if flags & (pg::DIRTY | pg::MAPPED) != 0 {
                        self.deactivate_file_folio(p);
                        continue;
                    }
                    // mapping_evict_folio() → remove_mapping(): no shadow entry is left.
                    self.mm.lru_remove_for_free(p, cpu);
                    self.remove_file_page_and_free(p, cpu);
                    freed += 1;
                }
                _ => {
                    // A shadow entry: clear_shadow_entries().
                    self.shadow_take(ino, slot);
                }
            }
        }
        freed
    }

    /// Moves a page invalidation could not free towards reclaim (deactivate_file_folio →
    /// lru_deactivate_file): a mapped page stays where it is; a dirty one goes to the
    /// head of the inactive list marked for reclaim once written; either loses its
    /// active and referenced bits, counting `pgdeactivate` if it was active.
    fn deactivate_file_folio(&mut self, p: Pfn) {
        let page = &self.mm.map[p as usize];
        if page.test(pg::UNEVICTABLE)
            || !page.test(pg::LRU)
            || page.test(pg::MAPPED)
            || page.kind() != PageKind::File
        {
            return;
        }
        let active = page.test(pg::ACTIVE);
        self.mm.lruvec_del_folio(p);
        self.mm.map[p as usize].flags &= !(pg::ACTIVE | pg::REFERENCED);
        if self.mm.map[p as usize].flags & (pg::WRITEBACK | pg::DIRTY) != 0 {
            self.mm.lruvec_add_folio(p);
            self.mm.map[p as usize].flags |= pg::RECLAIM;
        } else {
            self.mm.lruvec_add_folio_tail(p);
            self.mm.count_vm_events(Event::PGROTATED, 1);
        }
        if active {
            self.mm.count_vm_events(Event::PGDEACTIVATE, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;
    use crate::mm::vmstat::ProcSnapshot;

    /// Runs a one-task scenario on a 1 GiB machine without the flusher (so that written
    /// pages stay dirty) and without filesystem metadata (`fs = "bare"`: the page counts
    /// are the data's, and no buffer_head stays in the reclaimable slab), and returns its
    /// snapshots by name.
    fn run(files: &str, program: &str) -> Vec<ProcSnapshot> {
        let text = format!(
            "duration = \"60s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n\
             [kernel]\nflusher = false\nfs = \"bare\"\n{files}\n\
             [[task]]\nname = \"op\"\nprogram = [{program}]\n"
        );
        let sc = Scenario::from_toml(&text).unwrap();
        crate::sim::run(&sc, &mut |_, _| {}).snapshots
    }

    fn v(s: &ProcSnapshot, name: &str) -> i64 {
        s.vmstat[name]
    }

    #[test]
    fn drop_caches_1_frees_clean_page_cache_and_leaves_dirty_pages() {
        let snaps = run(
            "[[file]]\nname = \"old\"\nsize = \"16MiB\"",
            "{ op = \"read\", file = \"old\" }, { op = \"write\", file = \"new\", size = \"8MiB\" },\
             { op = \"snapshot\", name = \"before\" }, { op = \"drop_caches\", value = 1 },\
             { op = \"snapshot\", name = \"after\" }, { op = \"read\", file = \"old\" },\
             { op = \"snapshot\", name = \"reread\" }",
        );
        let (before, after, reread) = (&snaps[0], &snaps[1], &snaps[2]);
        assert_eq!(v(before, "nr_file_pages"), 4096 + 2048);
        assert_eq!(v(before, "nr_dirty"), 2048);
        // The 16 MiB read is gone; the 8 MiB still dirty stays.
        assert_eq!(v(after, "nr_file_pages"), 2048);
        assert_eq!(v(after, "nr_dirty"), 2048);
        assert_eq!(v(after, "drop_pagecache") - v(before, "drop_pagecache"), 1);
        assert_eq!(v(after, "drop_slab"), 0);
        // Read again from the disk, and not a refault: invalidation leaves no shadow.
        assert_eq!(v(reread, "pgpgin") - v(after, "pgpgin"), 16 << 10);
        assert_eq!(v(reread, "workingset_refault_file"), 0);
        assert_eq!(v(reread, "nr_file_pages"), 4096 + 2048);
    }

    #[test]
    fn drop_caches_2_frees_unused_dentries_and_inodes_and_3_both() {
        let snaps = run(
            "",
            "{ op = \"fio_write\", files = 2000, file_size = \"4KiB\" },\
             { op = \"snapshot\", name = \"before\" }, { op = \"drop_caches\", value = 1 },\
             { op = \"snapshot\", name = \"pagecache\" }, { op = \"drop_caches\", value = 2 },\
             { op = \"snapshot\", name = \"slab\" }, { op = \"drop_caches\", value = 3 },\
             { op = \"snapshot\", name = \"both\" }",
        );
        let (before, pagecache, slab, both) = (&snaps[0], &snaps[1], &snaps[2], &snaps[3]);
        let reclaimable = |s: &ProcSnapshot| v(s, "nr_slab_reclaimable");
        assert!(reclaimable(before) > 0);
        // 1 leaves the slab alone (and the files' pages are dirty: kept too).
        assert_eq!(reclaimable(pagecache), reclaimable(before));
        assert_eq!(v(pagecache, "nr_dirty"), 2000);
        // 2 frees every unused dentry and inode, and their slab pages.
        assert_eq!(reclaimable(slab), 0);
        assert!(
            slab.slabinfo.contains("dentry                 0 "),
            "{}",
            slab.slabinfo
        );
        assert_eq!(v(slab, "drop_slab"), 1);
        assert_eq!(v(slab, "drop_pagecache"), 1);
        assert_eq!((v(both, "drop_pagecache"), v(both, "drop_slab")), (2, 2));
    }

    #[test]
    fn the_same_scenario_gives_the_same_bytes() {
        let text = "duration = \"30s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n\
                    [[file]]\nname = \"f\"\nsize = \"64MiB\"\n\
                    [[task]]\nname = \"op\"\nprogram = [{ op = \"read\", file = \"f\" },\
                    { op = \"fio_write\", files = 500, file_size = \"8KiB\" },\
                    { op = \"drop_caches\", value = 3 }, { op = \"compact_memory\" },\
                    { op = \"sysctl\", name = \"vm.min_free_kbytes\", value = 20000 },\
                    { op = \"read\", file = \"f\" }]\n";
        let a = crate::run_toml(text, None, &mut |_, _| {}).unwrap();
        let b = crate::run_toml(text, None, &mut |_, _| {}).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(a.vmstat["drop_pagecache"], 1);
    }
}
