//! Writing a `vm.*` sysctl during a run, as root does with `sysctl -w`.
//!
//! Models the vm sysctl tables of mm/ and fs/ (≈v6.17) for the knobs vmsim
//! has: each entry has the kernel's name and bounds (extra1/extra2 of its
//! `ctl_table`, proc_dointvec_minmax / proc_doulongvec_minmax) and the
//! handler's side effects: min_free_kbytes_sysctl_handler and
//! watermark_scale_factor_sysctl_handler recompute the watermarks
//! (setup_per_zone_wmarks, then zone_pcp_update for every zone);
//! dirty_ratio_handler / dirty_bytes_handler and the background pair make the
//! ratio and the byte setting exclude each other. `vm.nr_hugepages` is the
//! `nr_hugepages` operation (mm/hugetlb.rs); `vm.drop_caches` and
//! `vm.compact_memory` are operations of their own.

use crate::config::INT_MAX;
use crate::kernel::Kernel;
use crate::mm::page::PAGE_SIZE;
use crate::units::Bytes;

/// ULONG_MAX as the kernel's `unsigned long` sysctls bound it (proc_doulongvec_minmax).
const ULONG_MAX: u64 = u64::MAX;

/// A writable `vm.*` sysctl vmsim models: its name and the kernel's bounds.
#[derive(Debug, Clone, Copy)]
pub struct VmSysctl {
    /// The name as `sysctl` spells it.
    pub name: &'static str,
    /// Smallest value the handler accepts (extra1).
    pub min: u64,
    /// Largest value the handler accepts (extra2, or the type's maximum).
    pub max: u64,
}

const fn vm(name: &'static str, min: u64, max: u64) -> VmSysctl {
    VmSysctl { name, min, max }
}

/// The `vm.*` sysctls a `sysctl` operation can write, with the kernel's bounds.
pub const VM_SYSCTLS: &[VmSysctl] = &[
    vm("vm.min_free_kbytes", 0, INT_MAX),
    vm("vm.watermark_scale_factor", 1, 3000),
    vm("vm.watermark_boost_factor", 0, INT_MAX),
    vm("vm.dirty_ratio", 0, 100),
    vm("vm.dirty_background_ratio", 0, 100),
    vm("vm.dirty_bytes", 2 * PAGE_SIZE, ULONG_MAX),
    vm("vm.dirty_background_bytes", 1, ULONG_MAX),
    vm("vm.swappiness", 0, 200),
    vm("vm.vfs_cache_pressure", 0, INT_MAX),
    vm("vm.extfrag_threshold", 0, 1000),
    vm("vm.compaction_proactiveness", 0, 100),
    vm("vm.nr_hugepages", 0, ULONG_MAX),
];

/// Sysctls a `sysctl` operation refuses, and why.
pub const VM_SYSCTLS_REFUSED: &[(&str, &str)] = &[
    (
        "vm.drop_caches",
        "is an operation of its own: op = \"drop_caches\"",
    ),
    (
        "vm.compact_memory",
        "is an operation of its own: op = \"compact_memory\"",
    ),
    ("fs.dentry-state", "is read-only (0444)"),
    ("fs.inode-nr", "is read-only (0444)"),
    ("fs.inode-state", "is read-only (0444)"),
    ("fs.file-nr", "is read-only (0444)"),
];

/// What is wrong with writing `value` to `name`, in one line; None when the kernel's
/// handler would take it.
pub fn check_vm_sysctl(name: &str, value: u64) -> Option<String> {
    if let Some((_, why)) = VM_SYSCTLS_REFUSED.iter().find(|(n, _)| *n == name) {
        return Some(format!("sysctl {name} {why}"));
    }
    let Some(s) = VM_SYSCTLS.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = VM_SYSCTLS.iter().map(|s| s.name).collect();
        return Some(format!(
            "sysctl: unknown sysctl '{}' (known: {})",
            crate::config::clip(name),
            known.join(", ")
        ));
    };
    if value < s.min || value > s.max {
        return Some(format!(
            "sysctl {name} = {value} is outside the kernel's bounds {}..={}",
            s.min, s.max
        ));
    }
    None
}

impl crate::mm::Mm {
    /// Recomputes every zone's watermarks and per-CPU list sizes after a change of
    /// min_free_kbytes or watermark_scale_factor (setup_per_zone_wmarks →
    /// __setup_per_zone_wmarks, then zone_pcp_update for every zone).
    pub fn setup_per_zone_wmarks_and_pcp(&mut self) {
        self.setup_per_zone_wmarks();
        for zid in 0..self.zones.len() {
            self.zone_pcp_update(zid);
        }
    }

    /// Sets pcp->high and pcp->batch of every CPU for a zone from its current
    /// watermarks (zone_pcp_update → zone_set_pageset_high_and_batch).
    fn zone_pcp_update(&mut self, zid: usize) {
        let batch = self.zone_batchsize(zid);
        let high = self.zone_highsize(zid, batch);
        for cpu in 0..self.nr_cpus {
            let pcp = &mut self.pcp[zid * self.nr_cpus + cpu];
            pcp.batch = batch;
            pcp.high = high;
        }
    }
}

impl Kernel {
    /// Writes a sysctl checked by [`check_vm_sysctl`] and applies its handler's side
    /// effects (proc_sys_call_handler → the entry's proc_handler). `vm.nr_hugepages` is
    /// not handled here: it is the `nr_hugepages` operation.
    pub fn vm_sysctl_write(&mut self, name: &str, value: u64) {
        let k = &mut self.mm.kcfg;
        match name {
            "vm.min_free_kbytes" => {
                // min_free_kbytes_sysctl_handler(): user_min_free_kbytes, then the marks.
                k.min_free_kbytes = value;
                self.mm.min_free_kbytes = value;
                self.mm.setup_per_zone_wmarks_and_pcp();
            }
            "vm.watermark_scale_factor" => {
                k.watermark_scale_factor = value;
                self.mm.setup_per_zone_wmarks_and_pcp();
            }
            "vm.watermark_boost_factor" => k.watermark_boost_factor = value,
            "vm.dirty_ratio" => {
                // dirty_ratio_handler(): a changed ratio clears vm_dirty_bytes.
                if k.dirty_ratio != value {
                    k.dirty_bytes = Bytes(0);
                }
                k.dirty_ratio = value;
            }
            "vm.dirty_background_ratio" => {
                // dirty_background_ratio_handler(): clears dirty_background_bytes.
                k.dirty_background_ratio = value;
                k.dirty_background_bytes = Bytes(0);
            }
            "vm.dirty_bytes" => {
                // dirty_bytes_handler(): changed bytes clear vm_dirty_ratio.
                if k.dirty_bytes.0 != value {
                    k.dirty_ratio = 0;
                }
                k.dirty_bytes = Bytes(value);
            }
            "vm.dirty_background_bytes" => {
                // dirty_background_bytes_handler(): clears dirty_background_ratio.
                k.dirty_background_bytes = Bytes(value);
                k.dirty_background_ratio = 0;
            }
            "vm.swappiness" => k.swappiness = value,
            "vm.vfs_cache_pressure" => k.vfs_cache_pressure = value,
            "vm.extfrag_threshold" => k.extfrag_threshold = value,
            "vm.compaction_proactiveness" => self.compaction_proactiveness_sysctl_handler(value),
            _ => debug_assert!(false, "sysctl {name} is checked by validation"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bounds_are_checked_as_the_handlers_do() {
        assert!(check_vm_sysctl("vm.swappiness", 200).is_none());
        assert!(check_vm_sysctl("vm.swappiness", 201)
            .unwrap()
            .contains("outside the kernel's bounds 0..=200"));
        assert!(check_vm_sysctl("vm.watermark_scale_factor", 0)
            .unwrap()
            .contains("1..=3000"));
        assert!(check_vm_sysctl("vm.dirty_bytes", 4096)
            .unwrap()
            .contains("8192.."));
        assert!(check_vm_sysctl("vm.nosuch", 1)
            .unwrap()
            .starts_with("sysctl: unknown sysctl 'vm.nosuch' (known: vm.min_free_kbytes"));
        assert!(check_vm_sysctl("fs.dentry-state", 1)
            .unwrap()
            .contains("read-only"));
        assert!(check_vm_sysctl("vm.drop_caches", 3)
            .unwrap()
            .contains("op = \"drop_caches\""));
    }

    fn boot() -> Kernel {
        let sc =
            crate::config::Scenario::from_toml("[machine]\nmemory = \"4GiB\"\ncpus = 2\n").unwrap();
        Kernel::boot(&sc.machine, &sc.kernel, &sc.cost)
    }

    #[test]
    fn watermark_sysctls_recompute_the_marks_and_the_pcp_high() {
        let mut k = boot();
        let zid = (0..k.mm.zones.len())
            .max_by_key(|&z| k.mm.zones[z].managed_pages)
            .unwrap();
        let managed = k.mm.zones[zid].managed_pages;
        let mark = |k: &Kernel, w: crate::mm::mmzone::Wmark| k.mm.zones[zid].watermark[w as usize];
        use crate::mm::mmzone::Wmark::{Low, Min};
        let high0 = k.mm.pcp[zid * k.mm.nr_cpus].high;
        k.vm_sysctl_write("vm.watermark_scale_factor", 200);
        // __setup_per_zone_wmarks(): low - min = managed × 200 / 10000 (above min / 4).
        assert_eq!(mark(&k, Low) - mark(&k, Min), managed * 200 / 10000);
        // zone_pcp_update(): pcp->high follows the low mark.
        let high1 = k.mm.pcp[zid * k.mm.nr_cpus].high;
        assert!(high1 > high0, "{high0} -> {high1}");
        assert_eq!(high1, k.mm.zone_highsize(zid, k.mm.zone_batchsize(zid)));
        // min_free_kbytes: the min marks add up to it, spread by managed pages.
        k.vm_sysctl_write("vm.min_free_kbytes", 100_000);
        let mins: u64 = k.mm.zones.iter().map(|z| z.watermark[Min as usize]).sum();
        let want = 100_000 / 4;
        assert!(
            mins <= want && mins + k.mm.zones.len() as u64 >= want,
            "{mins}"
        );
        assert_eq!(k.mm.min_free_kbytes, 100_000);
    }

    #[test]
    fn dirty_ratio_and_dirty_bytes_exclude_each_other() {
        let mut k = boot();
        let avail = k.global_dirtyable_memory();
        k.vm_sysctl_write("vm.dirty_bytes", 64 << 20);
        assert_eq!(k.mm.kcfg.dirty_ratio, 0);
        let (bg, thresh) = k.global_dirty_limits();
        assert_eq!(thresh, 16384);
        // The background ratio's threshold is above the hard one: half of it.
        assert_eq!(bg, 8192);
        k.vm_sysctl_write("vm.dirty_ratio", 30);
        assert_eq!(k.mm.kcfg.dirty_bytes.0, 0);
        assert_eq!(k.global_dirty_limits().1, avail * 30 / 100);
        k.vm_sysctl_write("vm.dirty_background_bytes", 8 << 20);
        assert_eq!(k.mm.kcfg.dirty_background_ratio, 0);
        assert_eq!(k.global_dirty_limits().0, 2048);
        k.vm_sysctl_write("vm.dirty_background_ratio", 5);
        assert_eq!(k.mm.kcfg.dirty_background_bytes.0, 0);
        assert_eq!(k.global_dirty_limits().0, avail * 5 / 100);
    }

    #[test]
    fn a_sysctl_operation_moves_the_thresholds_proc_vmstat_shows() {
        let text = "duration = \"10s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n\
                    [[task]]\nname = \"root\"\nprogram = [{ op = \"snapshot\", name = \"a\" },\
                    { op = \"sysctl\", name = \"vm.dirty_bytes\", value = 67108864 },\
                    { op = \"sysctl\", name = \"vm.swappiness\", value = 0 },\
                    { op = \"snapshot\", name = \"b\" }]\n";
        let sc = crate::config::Scenario::from_toml(text).unwrap();
        let r = crate::sim::run(&sc, &mut |_, _| {});
        let (a, b) = (&r.snapshots[0], &r.snapshots[1]);
        assert!(a.vmstat["nr_dirty_threshold"] > 16384);
        assert_eq!(b.vmstat["nr_dirty_threshold"], 16384);
        assert_eq!(b.vmstat["nr_dirty_background_threshold"], 8192);
    }

    #[test]
    fn vfs_cache_pressure_0_keeps_dentries_and_inodes() {
        // fs = "bare": no buffer_heads, which stay in the reclaimable slab while their pages do.
        let text = "duration = \"10s\"\n[kernel]\nfs = \"bare\"\n\
                    [machine]\nmemory = \"1GiB\"\ncpus = 2\n\
                    [[task]]\nname = \"root\"\nprogram = [\
                    { op = \"fio_write\", files = 1000, file_size = \"4KiB\" },\
                    { op = \"snapshot\", name = \"a\" },\
                    { op = \"sysctl\", name = \"vm.vfs_cache_pressure\", value = 0 },\
                    { op = \"drop_caches\", value = 2 }, { op = \"snapshot\", name = \"b\" },\
                    { op = \"sysctl\", name = \"vm.vfs_cache_pressure\", value = 100 },\
                    { op = \"drop_caches\", value = 2 }, { op = \"snapshot\", name = \"c\" }]\n";
        let sc = crate::config::Scenario::from_toml(text).unwrap();
        let r = crate::sim::run(&sc, &mut |_, _| {});
        let slab = |i: usize| r.snapshots[i].vmstat["nr_slab_reclaimable"];
        assert!(slab(0) > 0);
        assert_eq!(slab(1), slab(0));
        assert_eq!(slab(2), 0);
    }

    #[test]
    fn bad_sysctl_operations_are_refused_in_one_line() {
        let err = |op: &str| {
            crate::config::Scenario::from_toml(&format!(
                "[machine]\nmemory = \"1GiB\"\n[[task]]\nname = \"t\"\nprogram = [{op}]\n"
            ))
            .unwrap_err()
            .to_string()
        };
        let e = err("{ op = \"sysctl\", name = \"vm.swappiness\", value = 300 }");
        assert!(
            e.contains(
                "program[0] sysctl vm.swappiness = 300 is outside the kernel's bounds 0..=200"
            ),
            "{e}"
        );
        let e = err("{ op = \"sysctl\", name = \"vm.min_free_kbytes\", value = 2000000 }");
        assert!(e.contains("not below the machine's memory"), "{e}");
        let e = err("{ op = \"drop_caches\", value = 5 }");
        assert!(
            e.contains("drop_caches value 5 is outside the kernel's bounds 1..=4"),
            "{e}"
        );
        let e = err("{ op = \"compact_memory\", value = 1 }");
        assert!(e.contains("value"), "{e}");
    }
}
