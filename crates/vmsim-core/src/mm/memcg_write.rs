//! Writes to a memory cgroup's limit files mid-run (`echo 16M > memory.limit_in_bytes`).
//!
//! Models the write handlers of the memory controller's files as of 6.18:
//! cgroup v1's `mem_cgroup_write` → `mem_cgroup_resize_max` (mm/memcontrol-v1.c) and
//! v2's `memory_max_write`, `memory_high_write`, `memory_low_write`,
//! `memory_min_write` and `memory_reclaim` (mm/memcontrol.c, mm/vmscan.c's
//! `user_proactive_reclaim`). A hard limit set below the group's usage is
//! reached by limit reclaim in the writer's context before the write returns: v1 retries
//! a one-page `try_to_free_mem_cgroup_pages` until the new limit holds and gives up
//! (EBUSY, the old limit kept) on the first call that reclaims nothing; v2 sets the limit
//! at once, reclaims the excess with MAX_RECLAIM_RETRIES calls that may fail, then
//! OOM-kills in the group until it fits or no victim is left.
//!
//! Simplified: a write the kernel refuses (EBUSY, EINVAL) is not reported to the
//! program, which carries on as a shell script would; signals never interrupt a write;
//! O_NONBLOCK writes are not modelled.

use super::hugetlb::Resize;
use super::memcontrol::{memcg_event, PAGE_COUNTER_MAX};
use crate::config::CgroupValue;
use crate::engine::TaskId;
use crate::kernel::Kernel;
use crate::mm::page::PAGE_SIZE;

/// MAX_RECLAIM_RETRIES (mm/internal.h): failed reclaims a v2 write tolerates.
const MAX_RECLAIM_RETRIES: u32 = 16;

/// A memory controller file a `cgroup_write` operation can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcgFile {
    /// v1 memory.limit_in_bytes (RES_LIMIT of _MEM).
    LimitInBytes,
    /// v1 memory.memsw.limit_in_bytes (RES_LIMIT of _MEMSWAP).
    MemswLimitInBytes,
    /// v1 memory.soft_limit_in_bytes (RES_SOFT_LIMIT).
    SoftLimitInBytes,
    /// v2 memory.max.
    Max,
    /// v2 memory.high.
    High,
    /// v2 memory.low.
    Low,
    /// v2 memory.min.
    Min,
    /// v2 memory.reclaim: proactive reclaim of the amount written.
    Reclaim,
}

/// The files of each hierarchy, by name.
const V1_FILES: [(&str, MemcgFile); 3] = [
    ("memory.limit_in_bytes", MemcgFile::LimitInBytes),
    ("memory.memsw.limit_in_bytes", MemcgFile::MemswLimitInBytes),
    ("memory.soft_limit_in_bytes", MemcgFile::SoftLimitInBytes),
];
const V2_FILES: [(&str, MemcgFile); 5] = [
    ("memory.max", MemcgFile::Max),
    ("memory.high", MemcgFile::High),
    ("memory.low", MemcgFile::Low),
    ("memory.min", MemcgFile::Min),
    ("memory.reclaim", MemcgFile::Reclaim),
];

impl MemcgFile {
    /// The file called `name` in a group of the v1 (`v2` false) or v2 hierarchy.
    pub fn parse(name: &str, v2: bool) -> Option<MemcgFile> {
        let files: &[(&str, MemcgFile)] = if v2 { &V2_FILES } else { &V1_FILES };
        files.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// The names a group of the hierarchy accepts, for an error message.
    pub fn names(v2: bool) -> String {
        let files: &[(&str, MemcgFile)] = if v2 { &V2_FILES } else { &V1_FILES };
        files.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// The pages a written value stands for (page_counter_memparse: bytes rounded down).
pub fn value_pages(v: CgroupValue) -> u64 {
    match v {
        CgroupValue::Bytes(b) => (b / PAGE_SIZE).min(PAGE_COUNTER_MAX),
        CgroupValue::Max => PAGE_COUNTER_MAX,
    }
}

/// How far one write has gone, kept across the writer's steps.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemcgWrite {
    /// The group's per-CPU charge stocks were drained (`drained`).
    pub drained: bool,
    /// Reclaim calls that reclaimed nothing so far (v2's nr_reclaims / nr_retries).
    pub failures: u32,
    /// v2's new value was set (the handlers set it before they reclaim).
    pub set: bool,
    /// Pages memory.reclaim has reclaimed so far (nr_reclaimed).
    pub reclaimed: u64,
}

impl Kernel {
    /// One step of a write of `pages` to a group's file as task `tid`, within the step's
    /// quantum [ns]: Done once the handler returns, Yield or Sleep to go on later.
    pub fn mem_cgroup_file_write(
        &mut self,
        id: u32,
        file: MemcgFile,
        pages: u64,
        tid: TaskId,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Resize {
        match file {
            MemcgFile::LimitInBytes => {
                self.mem_cgroup_resize_max(id, pages, false, tid, quantum, st)
            }
            MemcgFile::MemswLimitInBytes => {
                self.mem_cgroup_resize_max(id, pages, true, tid, quantum, st)
            }
            MemcgFile::SoftLimitInBytes => {
                self.mm.memcg.set_soft_limit(id, pages);
                Resize::Done
            }
            MemcgFile::Max => self.memory_max_write(id, pages, tid, quantum, st),
            MemcgFile::High => self.memory_high_write(id, pages, tid, quantum, st),
            MemcgFile::Low => {
                self.mm.memcg.groups[id as usize].memory.low = pages;
                Resize::Done
            }
            MemcgFile::Min => {
                self.mm.memcg.groups[id as usize].memory.min = pages;
                Resize::Done
            }
            MemcgFile::Reclaim => self.user_proactive_reclaim(id, pages, tid, quantum, st),
        }
    }

    /// cgroup v2's memory.reclaim write (memory_reclaim → user_proactive_reclaim):
    /// limit reclaims of a quarter of what is left each (at least SWAP_CLUSTER_MAX)
    /// until the amount is reclaimed, or EAGAIN once MAX_RECLAIM_RETRIES + 1 of them
    /// have reclaimed nothing. Simplified: the reclaims are not marked proactive
    /// (MEMCG_RECLAIM_PROACTIVE), which 6.18 counts as `pgscan_proactive`.
    fn user_proactive_reclaim(
        &mut self,
        id: u32,
        nr_to_reclaim: u64,
        tid: TaskId,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Resize {
        while st.reclaimed < nr_to_reclaim {
            if self.mm.cur.acc >= quantum {
                return Resize::Yield;
            }
            let batch_size = (nr_to_reclaim - st.reclaimed) / 4;
            let reclaimed = self.try_to_free_mem_cgroup_pages(id, batch_size, tid);
            if reclaimed == 0 {
                if st.failures == MAX_RECLAIM_RETRIES {
                    return Resize::Done;
                }
                st.failures += 1;
            }
            st.reclaimed += reclaimed;
            if self.mm.cur.sleep > 0 {
                return Resize::Sleep;
            }
        }
        Resize::Done
    }

    /// cgroup v1's limit write (mem_cgroup_resize_max): the limit is set only once the
    /// usage is under it; one-page limit reclaims until then, EBUSY on the first that
    /// reclaims nothing; EINVAL when memory.limit_in_bytes would exceed memsw's.
    fn mem_cgroup_resize_max(
        &mut self,
        id: u32,
        max: u64,
        memsw: bool,
        tid: TaskId,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Resize {
        loop {
            let g = &self.mm.memcg.groups[id as usize];
            let memsw_max = self.mm.memcg.ext(id).memsw.max;
            let limits_invariant = if memsw {
                max >= g.memory.max
            } else {
                max <= memsw_max
            };
            if !limits_invariant {
                return Resize::Done;
            }
            // page_counter_set_max: refused while the usage is above the new limit.
            if memsw {
                let usage = self.mm.memcg.ext(id).memsw.usage;
                if usage <= max {
                    self.mm.memcg.ext_mut(id).memsw.max = max;
                    return Resize::Done;
                }
            } else if self.mm.memcg.set_max(id, max) {
                return Resize::Done;
            }
            if !st.drained {
                self.mm.memcg.drain_all_stock(id);
                st.drained = true;
                continue;
            }
            if self.mm.cur.acc >= quantum {
                return Resize::Yield;
            }
            if self.try_to_free_mem_cgroup_pages_swap(id, 1, tid, !memsw) == 0 {
                // EBUSY: the old limit stays.
                return Resize::Done;
            }
            if self.mm.cur.sleep > 0 {
                return Resize::Sleep;
            }
        }
    }

    /// The head of each turn of memory_max_write's and memory_high_write's loops: Done
    /// once the usage is at most `target`, the group's charge stocks drained once
    /// (drain_all_stock), Yield when the step's time is used; else the usage [pages].
    fn over_target(
        &mut self,
        id: u32,
        target: u64,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Result<u64, Resize> {
        let nr_pages = self.mm.memcg.groups[id as usize].memory.usage;
        if nr_pages <= target {
            return Err(Resize::Done);
        }
        if !st.drained {
            self.mm.memcg.drain_all_stock(id);
            st.drained = true;
            return self.over_target(id, target, quantum, st);
        }
        if self.mm.cur.acc >= quantum {
            return Err(Resize::Yield);
        }
        Ok(nr_pages)
    }

    /// cgroup v2's memory.max write (memory_max_write): the limit is set first, then the
    /// excess is reclaimed with up to MAX_RECLAIM_RETRIES failed calls, then the group's
    /// tasks are OOM-killed until it fits or none is left.
    fn memory_max_write(
        &mut self,
        id: u32,
        max: u64,
        tid: TaskId,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Resize {
        if !st.set {
            self.mm.memcg.groups[id as usize].memory.max = max;
            st.set = true;
        }
        loop {
            let nr_pages = match self.over_target(id, max, quantum, st) {
                Ok(n) => n,
                Err(r) => return r,
            };
            if st.failures < MAX_RECLAIM_RETRIES {
                if self.try_to_free_mem_cgroup_pages(id, nr_pages - max, tid) == 0 {
                    st.failures += 1;
                }
                if self.mm.cur.sleep > 0 {
                    return Resize::Sleep;
                }
                continue;
            }
            self.mm.memcg.memcg_memory_event(id, memcg_event::OOM);
            if self.mem_cgroup_out_of_memory(id).is_none() {
                return Resize::Done;
            }
        }
    }

    /// cgroup v2's memory.high write (memory_high_write): the value is set first, then
    /// the excess is reclaimed until it is gone or MAX_RECLAIM_RETRIES + 1 calls have
    /// reclaimed nothing; no OOM kill.
    fn memory_high_write(
        &mut self,
        id: u32,
        high: u64,
        tid: TaskId,
        quantum: u64,
        st: &mut MemcgWrite,
    ) -> Resize {
        if !st.set {
            self.mm.memcg.ext_mut(id).high = high;
            st.set = true;
        }
        loop {
            let nr_pages = match self.over_target(id, high, quantum, st) {
                Ok(n) => n,
                Err(r) => return r,
            };
            let reclaimed = self.try_to_free_mem_cgroup_pages(id, nr_pages - high, tid);
            if reclaimed == 0 {
                // `if (!reclaimed && !nr_retries--) break;`
                if st.failures == MAX_RECLAIM_RETRIES {
                    return Resize::Done;
                }
                st.failures += 1;
            }
            if self.mm.cur.sleep > 0 {
                return Resize::Sleep;
            }
        }
    }
}
