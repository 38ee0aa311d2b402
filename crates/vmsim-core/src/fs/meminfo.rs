//! /proc/meminfo (fs/proc/meminfo.c, `meminfo_proc_show`), in 6.18's exact format.
//!
//! Every line comes from the same counters as /proc/vmstat, the zones'
//! watermarks and the hugetlb pool, as the kernel computes it: `MemAvailable`
//! by `si_mem_available()`, `CommitLimit` by `vm_commit_limit()`.
//!
//! Simplifications: `Buffers` is 0 (no block-device page cache yet);
//! `Committed_AS` is the tasks' mapped anonymous memory (the kernel counts
//! every private writable mapping); `VmallocUsed` is the kernel stacks
//! (`CONFIG_VMAP_STACK`); `Percpu` is 0; `DirectMap*` splits the machine's
//! memory as `init_memory_mapping()` does without firmware holes: the first
//! 2 MiB in 4 KiB pages, the rest of the first GiB in 2 MiB pages, whole GiBs
//! in 1 GiB pages and what is left in 2 MiB pages.

use crate::kernel::Kernel;
use crate::mm::mmzone::Wmark;
use std::fmt::Write as _;

/// vm.overcommit_ratio's default (sysctl_overcommit_ratio).
pub const OVERCOMMIT_RATIO: u64 = 50;

/// One `Name:   value kB` line (show_val_kb): the label padded to 16 columns, the value
/// right-aligned in 8.
fn kb(s: &mut String, name: &str, kib: u64) {
    let _ = writeln!(s, "{:<16}{:>8} kB", format!("{name}:"), kib);
}

/// A line of pages shown in kB.
fn pages(s: &mut String, name: &str, n: i64) {
    kb(s, name, n.max(0) as u64 * 4);
}

impl Kernel {
    /// Pages the kernel keeps out of reach of user allocations: per zone, the largest
    /// lowmem_reserve plus the high watermark (calculate_totalreserve_pages).
    pub fn totalreserve_pages(&self) -> u64 {
        self.mm
            .zones
            .iter()
            .map(|z| {
                let max = z.lowmem_reserve.iter().copied().max().unwrap_or(0)
                    + z.wmark_pages(Wmark::High);
                max.min(z.managed_pages)
            })
            .sum()
    }

    /// Memory available for new user allocations without swapping (si_mem_available) [pages].
    pub fn si_mem_available(&self, v: &dyn Fn(&str) -> i64) -> i64 {
        let wmark_low: i64 = self
            .mm
            .zones
            .iter()
            .map(|z| z.wmark_pages(Wmark::Low) as i64)
            .sum();
        let mut available = v("nr_free_pages") - self.totalreserve_pages() as i64;
        let mut pagecache = v("nr_active_file") + v("nr_inactive_file");
        pagecache -= (pagecache / 2).min(wmark_low);
        available += pagecache;
        let mut reclaimable = v("nr_slab_reclaimable") + v("nr_kernel_misc_reclaimable");
        reclaimable -= (reclaimable / 2).min(wmark_low);
        available += reclaimable;
        available.max(0)
    }

    /// /proc/meminfo now (meminfo_proc_show).
    pub fn meminfo(&self) -> String {
        let snap = self.vmstat_snapshot();
        let v = |name: &str| -> i64 {
            snap.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, x)| *x)
                .unwrap_or(0)
        };
        let totalram: u64 = self.mm.zones.iter().map(|z| z.managed_pages).sum();
        let swap_total = self.swap.pages as u64;
        let swap_free = self.swap.nr_free() as u64;
        let h = &self.hstate;
        let hpage_kb = 2048;
        let hugetlb_pages = h.nr_huge_pages * 512;
        let committed: u64 = self.tasks.iter().filter(|t| t.alive).map(|t| t.vsize).sum();
        let swapcached = v("nr_swapcached");
        let zswap_pages = self.zswap.pool.total_pages();
        let zswapped = self.zswap.stored_pages();
        let buffers = 0;
        let mut s = String::with_capacity(1600);
        pages(&mut s, "MemTotal", totalram as i64);
        pages(&mut s, "MemFree", v("nr_free_pages"));
        pages(&mut s, "MemAvailable", self.si_mem_available(&v));
        pages(&mut s, "Buffers", buffers);
        pages(&mut s, "Cached", v("nr_file_pages") - swapcached - buffers);
        pages(&mut s, "SwapCached", swapcached);
        pages(&mut s, "Active", v("nr_active_anon") + v("nr_active_file"));
        pages(
            &mut s,
            "Inactive",
            v("nr_inactive_anon") + v("nr_inactive_file"),
        );
        pages(&mut s, "Active(anon)", v("nr_active_anon"));
        pages(&mut s, "Inactive(anon)", v("nr_inactive_anon"));
        pages(&mut s, "Active(file)", v("nr_active_file"));
        pages(&mut s, "Inactive(file)", v("nr_inactive_file"));
        pages(&mut s, "Unevictable", v("nr_unevictable"));
        pages(&mut s, "Mlocked", v("nr_mlock"));
        pages(&mut s, "SwapTotal", swap_total as i64);
        pages(&mut s, "SwapFree", swap_free as i64);
        pages(&mut s, "Zswap", zswap_pages as i64);
        pages(&mut s, "Zswapped", zswapped as i64);
        pages(&mut s, "Dirty", v("nr_dirty"));
        pages(&mut s, "Writeback", v("nr_writeback"));
        pages(&mut s, "AnonPages", v("nr_anon_pages"));
        pages(&mut s, "Mapped", v("nr_mapped"));
        pages(&mut s, "Shmem", v("nr_shmem"));
        let sreclaimable = v("nr_slab_reclaimable");
        let sunreclaim = v("nr_slab_unreclaimable");
        pages(
            &mut s,
            "KReclaimable",
            sreclaimable + v("nr_kernel_misc_reclaimable"),
        );
        pages(&mut s, "Slab", sreclaimable + sunreclaim);
        pages(&mut s, "SReclaimable", sreclaimable);
        pages(&mut s, "SUnreclaim", sunreclaim);
        kb(&mut s, "KernelStack", v("nr_kernel_stack").max(0) as u64);
        pages(&mut s, "PageTables", v("nr_page_table_pages"));
        pages(&mut s, "SecPageTables", v("nr_sec_page_table_pages"));
        pages(&mut s, "NFS_Unstable", 0);
        pages(&mut s, "Bounce", v("nr_bounce"));
        pages(&mut s, "WritebackTmp", v("nr_writeback_temp"));
        let commit_limit =
            (totalram - hugetlb_pages.min(totalram)) * OVERCOMMIT_RATIO / 100 + swap_total;
        pages(&mut s, "CommitLimit", commit_limit as i64);
        pages(&mut s, "Committed_AS", committed as i64);
        kb(&mut s, "VmallocTotal", 34_359_738_367);
        kb(&mut s, "VmallocUsed", v("nr_kernel_stack").max(0) as u64);
        kb(&mut s, "VmallocChunk", 0);
        kb(&mut s, "Percpu", 0);
        kb(
            &mut s,
            "AnonHugePages",
            v("nr_anon_transparent_hugepages").max(0) as u64 * hpage_kb,
        );
        kb(
            &mut s,
            "ShmemHugePages",
            v("nr_shmem_hugepages").max(0) as u64 * hpage_kb,
        );
        kb(
            &mut s,
            "ShmemPmdMapped",
            v("nr_shmem_pmdmapped").max(0) as u64 * hpage_kb,
        );
        kb(
            &mut s,
            "FileHugePages",
            v("nr_file_hugepages").max(0) as u64 * hpage_kb,
        );
        kb(
            &mut s,
            "FilePmdMapped",
            v("nr_file_pmdmapped").max(0) as u64 * hpage_kb,
        );
        pages(&mut s, "Balloon", v("nr_balloon_pages"));
        // hugetlb_report_meminfo()
        let _ = writeln!(s, "HugePages_Total:   {:>5}", h.nr_huge_pages);
        let _ = writeln!(s, "HugePages_Free:    {:>5}", h.free_huge_pages);
        let _ = writeln!(s, "HugePages_Rsvd:    {:>5}", 0);
        let _ = writeln!(s, "HugePages_Surp:    {:>5}", 0);
        kb(&mut s, "Hugepagesize", hpage_kb);
        kb(&mut s, "Hugetlb", h.nr_huge_pages * hpage_kb);
        let (d4k, d2m, d1g) = direct_map_kb(self.mm.map.len() as u64 * 4);
        kb(&mut s, "DirectMap4k", d4k);
        kb(&mut s, "DirectMap2M", d2m);
        kb(&mut s, "DirectMap1G", d1g);
        s
    }
}

/// The direct map of `mem_kb` of memory in 4 KiB, 2 MiB and 1 GiB pages [kB] (see the
/// module docs).
pub fn direct_map_kb(mem_kb: u64) -> (u64, u64, u64) {
    const M2: u64 = 2048;
    const G1: u64 = 1 << 20;
    let d4k = mem_kb.min(M2);
    let first_gib = mem_kb.min(G1).saturating_sub(d4k) / M2 * M2;
    let above = mem_kb.saturating_sub(G1);
    let d1g = above / G1 * G1;
    let d2m = first_gib + (above - d1g) / M2 * M2;
    (d4k, d2m, d1g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;

    /// The labels of this machine's /proc/meminfo (Linux 6.18), in order.
    fn real_labels() -> Vec<String> {
        include_str!("../../../../tests/data/proc-meminfo.txt")
            .lines()
            .map(|l| l.split(':').next().unwrap_or("").to_string())
            .collect()
    }

    #[test]
    fn lines_are_the_kernels_labels_in_its_order_and_widths() {
        let sc = Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 2\n").unwrap();
        let k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let text = k.meminfo();
        let labels: Vec<String> = text
            .lines()
            .map(|l| l.split(':').next().unwrap_or("").to_string())
            .collect();
        assert_eq!(labels, real_labels());
        // Same columns as the real file: every kB line ends at column 27 unless wider.
        let real = include_str!("../../../../tests/data/proc-meminfo.txt");
        for (ours, theirs) in text.lines().zip(real.lines()) {
            if ours.ends_with(" kB") && ours.len() <= 27 {
                assert_eq!(ours.len(), theirs.len().min(27), "{ours:?} vs {theirs:?}");
            }
            if ours.starts_with("HugePages_") {
                assert_eq!(ours.len(), theirs.len(), "{ours:?} vs {theirs:?}");
            }
        }
        let managed: u64 = k.mm.zones.iter().map(|z| z.managed_pages).sum();
        assert!(
            text.starts_with(&format!("MemTotal:       {:>8} kB\n", managed * 4)),
            "{text}"
        );
    }

    #[test]
    fn available_memory_follows_si_mem_available() {
        let sc = Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 2\n").unwrap();
        let k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let snap = k.vmstat_snapshot();
        let v = |n: &str| snap.iter().find(|(x, _)| *x == n).map(|(_, y)| *y).unwrap();
        // Freshly booted: no page cache or slab, so free minus the reserve.
        let expect = v("nr_free_pages") - k.totalreserve_pages() as i64;
        assert_eq!(k.si_mem_available(&|n: &str| v(n)), expect);
        assert!(expect > 0);
    }

    #[test]
    fn the_direct_map_covers_memory() {
        assert_eq!(direct_map_kb(24 << 20), (2048, 1046528, 23 << 20));
        assert_eq!(direct_map_kb(512 << 10), (2048, (510) << 10, 0));
        let (a, b, c) = direct_map_kb(3 << 20);
        assert_eq!(a + b + c, 3 << 20);
    }
}
