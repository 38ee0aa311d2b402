//! The memory-management mechanisms, one module per kernel file.

pub mod compaction;
pub mod deferred;
pub mod fadvise;
pub mod filemap;
pub mod free_area_layout;
pub mod gfp;
pub mod huge_memory;
pub mod hugetlb;
pub mod memcg_kmem;
pub mod memcg_stock;
pub mod memcg_write;
pub mod memcontrol;
pub mod memcontrol_v1;
pub mod memmap;
pub mod memory;
pub mod migrate;
pub mod mm_init;
pub mod mmzone;
pub mod oom_kill;
pub mod page;
pub mod page_alloc;
pub mod page_writeback;
pub mod pageblock_stat;
pub mod readahead;
pub mod rmap;
pub mod shrinker;
pub mod shuffle;
pub mod slab;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod sysctl;
pub mod vmscan;
pub mod vmstat;
#[allow(missing_docs)]
pub mod vmstat_items;
pub mod watermark_boost;
pub mod workingset;
pub mod zsmalloc;
pub mod zswap;

use crate::config::{Cost, Kernel as KernelCfg};
use mmzone::{PerCpuPages, PgData, Zone};
use vmstat_items::{Event, NumaStat};

/// Counters of external-fragmentation events (the mm_page_alloc_extfrag tracepoint).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FragStats {
    /// Every mm_page_alloc_extfrag event.
    pub extfrag_events: u64,
    /// Events with fragmenting=1 (fallback_order < pageblock_order).
    pub extfrag_fragmenting: u64,
    /// Events with change_ownership=1 (the block now has the requested type).
    pub extfrag_change_ownership: u64,
    /// Events below pageblock order that did not claim the block (fragmenting and mixing types).
    pub extfrag_mixed: u64,
    /// Whole pageblocks claimed by try_to_claim_block below pageblock order.
    pub blocks_claimed: u64,
    /// Allocation attempts that failed, by order.
    pub alloc_fail: [u64; mmzone::NR_PAGE_ORDERS],
    /// Allocation attempts that succeeded, by order.
    pub alloc_success: [u64; mmzone::NR_PAGE_ORDERS],
}

/// The page allocator's state: frames, nodes, zones, per-CPU lists and counters.
#[derive(Debug)]
pub struct Mm {
    /// mem_map: one entry per frame of the machine.
    pub map: memmap::MemMap,
    /// Migratetype of every pageblock (the pageblock bitmap), indexed by pfn >> pageblock_order.
    pub pageblock_mt: Vec<u8>,
    /// Zone id of every pageblock (zones and nodes are pageblock-aligned).
    pub pageblock_zone: Vec<u16>,
    /// Pageblock counters kept up to date incrementally (what a sample records).
    pub pb_stat: pageblock_stat::PageblockStat,
    /// All zones, node by node, lowest zone type first.
    pub zones: Vec<Zone>,
    /// NUMA nodes.
    pub nodes: Vec<PgData>,
    /// Per-CPU pages: `pcp[zone_id * nr_cpus + cpu]`.
    pub pcp: Vec<PerCpuPages>,
    /// Number of CPUs.
    pub nr_cpus: usize,
    /// Node of each CPU.
    pub cpu_to_node: Vec<usize>,
    /// Zonelists: `zonelists[nid * MAX_NR_ZONES + highest_zoneidx]` lists zone ids in fallback order
    /// (ZONELIST_FALLBACK); `zonelists[(nr_nodes + nid) * MAX_NR_ZONES + highest_zoneidx]` only the
    /// node's own zones (ZONELIST_NOFALLBACK, for __GFP_THISNODE).
    pub zonelists: Vec<Vec<usize>>,
    /// Global event counters (vm_event_states).
    pub events: [u64; Event::COUNT],
    /// NUMA counters.
    pub numa: [u64; NumaStat::COUNT],
    /// External fragmentation statistics.
    pub frag: FragStats,
    /// !page_group_by_mobility_disabled.
    pub grouping: bool,
    /// vm.min_free_kbytes in force [KiB].
    pub min_free_kbytes: u64,
    /// Kernel switches.
    pub kcfg: KernelCfg,
    /// Cost model.
    pub cost: Cost,
    /// The running task's context (the kernel's `current`): the step's clock, the system
    /// time it accrued and what the scheduler must do when it ends. Installed by the engine.
    pub cur: crate::engine::Current,
    /// The ftrace buffer, when tracing.
    pub tracer: Option<crate::trace::Tracer>,
    /// Whether any kmem page event is enabled: the one test the allocator's hot paths
    /// make before they look at the tracer (set by [`Mm::set_tracer`]).
    pub kmem_trace: bool,
    /// Pages added to each CPU's LRU batch since lru_lock was last taken.
    pub lru_batch: Vec<u64>,
    /// Memory cgroups: the hierarchy, charges and per-group lruvecs.
    pub memcg: memcontrol::MemcgState,
    /// The random stream of page allocator randomization (`kernel.shuffle_page_alloc`,
    /// mm/shuffle.c); None when it is off.
    pub shuffle: Option<crate::engine::rng::Stream>,
    /// Free MAX_PAGE_ORDER blocks whose frames boot has not written yet.
    pub deferred: deferred::Deferred,
}

impl Mm {
    /// Simulated time inside the current operation [ns].
    #[inline(always)]
    pub fn clock(&self) -> u64 {
        self.cur.clock()
    }

    /// Installs (or removes) the ftrace buffer and notes whether it records kmem events.
    pub fn set_tracer(&mut self, tracer: Option<crate::trace::Tracer>) {
        use crate::trace::TraceEventId::*;
        self.kmem_trace = tracer.as_ref().is_some_and(|t| {
            [
                MmPageAlloc,
                MmPageFree,
                MmPageAllocZoneLocked,
                MmPagePcpuDrain,
            ]
            .into_iter()
            .any(|id| t.enabled(id))
        });
        self.tracer = tracer;
    }

    /// Whether kmem page event `id` is recorded: [`Mm::kmem_trace`] first, the tracer's
    /// filter only when some kmem event is on (the allocator's hot paths).
    #[inline(always)]
    pub fn kmem_trace_enabled(&self, id: crate::trace::TraceEventId) -> bool {
        self.kmem_trace && self.trace_enabled(id)
    }

    /// Whether tracepoint `id` is recorded (trace_<event>_enabled()): the check hot paths
    /// make before they build an event.
    #[inline(always)]
    pub fn trace_enabled(&self, id: crate::trace::TraceEventId) -> bool {
        self.tracer.as_ref().is_some_and(|t| t.enabled(id))
    }

    /// Records a tracepoint hit by the running task at the current time (trace_<event>).
    #[inline]
    pub fn trace(&mut self, ev: crate::trace::TraceEvent) {
        if let Some(t) = self.tracer.as_mut() {
            let c = &self.cur;
            t.emit(c.now + c.acc, c.cpu as u32, &c.comm, c.pid, &ev);
        }
    }

    /// Counts a vm event (count_vm_events).
    #[inline(always)]
    pub fn count_vm_events(&mut self, e: Event, n: u64) {
        self.events[e as usize] += n;
    }

    /// Adjusts a node counter (mod_node_page_state).
    #[inline(always)]
    pub fn mod_node_page_state(&mut self, nid: usize, item: vmstat_items::NodeStat, delta: i64) {
        self.nodes[nid].vm_stat[item as usize] += delta;
    }

    /// Zone id of a frame (page_zone).
    #[inline(always)]
    pub fn page_zone(&self, pfn: page::Pfn) -> usize {
        self.pageblock_zone[(pfn >> mmzone::PAGEBLOCK_ORDER) as usize] as usize
    }

    /// Node of a frame (page_to_nid).
    #[inline(always)]
    pub fn pfn_to_nid(&self, pfn: page::Pfn) -> usize {
        self.zones[self.page_zone(pfn)].nid
    }
}
