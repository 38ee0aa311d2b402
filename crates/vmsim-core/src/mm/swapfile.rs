//! The swap device's slots and the swap cache.
//!
//! Models mm/swapfile.c (swap_info_struct, the swap_map use counts, the
//! cluster allocator of folio_alloc_swap, swap_free, swapon and swapoff's
//! bookkeeping) and mm/swap_state.c (the
//! swap cache: a page being written to or read from a slot is found by slot).
//! With `kernel.swap_slot_cache` (6.1's mm/swap_slots.c), each CPU takes
//! its slots from a cache of SWAP_SLOTS_CACHE_SIZE (64) refilled from the
//! device in one go (`folio_alloc_swap()` → `refill_swap_slots_cache()` →
//! `get_swap_pages()`), and keeps the slots it frees until 64 have gathered
//! (`free_swap_slot()` → `swapcache_free_entries()`); the caches work only
//! while more than 5 × 64 slots per CPU are free and are drained below
//! 2 × 64 per CPU (`check_cache_active()`). 6.18 has no slot cache (slots
//! come from per-CPU clusters in `folio_alloc_swap()`).
//!
//! Each slot also remembers the page-table entry that holds it (the rmap
//! slot, so that readahead by swap offset knows whose page it reads) and the
//! memory cgroup charged for it (mm/swap_cgroup.c's swap_cgroup_record). A
//! page in the swap cache keeps its slot until the last user goes: it is
//! found by slot (the swap address space) and by frame (its folio->swap),
//! with the folio's PG_readahead and the time its read completes.
//!
//! Several swap devices share one slot space: device `type` owns the slots
//! [base, base + max), offset 0 of each being its header (never allocated),
//! so a swap entry (type, offset) is the slot `base + offset`. Devices are
//! used by priority, highest first, equal priorities in turn
//! (swap_avail_heads, plist_requeue); each hands out slots from clusters of
//! SWAPFILE_CLUSTER slots kept on free / nonfull / frag / full lists, a
//! non-rotational device from each CPU's current cluster
//! (percpu_swap_cluster), a rotational one from the device's one current
//! cluster (si->global_cluster), as 6.18's cluster_alloc_swap_entry does.
//!
//! Simplifications: a slot has one user (no fork sharing); no large (THP)
//! swap entries, so every cluster is order 0; no discard; full clusters
//! are not scanned for slots held only by the swap cache
//! (swap_reclaim_full_clusters); a swap file is laid out on the disk as one
//! extent, so a file and a partition do the same I/O; swap devices have no
//! NUMA node, so automatic (negative) priorities keep their order.

use super::page::{pfn32, Pfn, NIL, NO_OWNER};

/// No cluster, device, slot owner or group: the end of a cluster list, an unset entry.
const NONE: u32 = NO_OWNER;

/// A map keyed by frame number.
type PfnMap<V> = super::page::IntMap<Pfn, V>;

/// A page in the swap cache, as its folio says (folio->swap, PG_readahead, PG_uptodate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwapCacheFolio {
    /// Its swap slot (folio->swap).
    pub slot: u32,
    /// Read by readahead and not yet found by a fault (PG_readahead).
    pub readahead: bool,
    /// When its read from the device completes; 0 for a page that was never read (PG_uptodate) [ns].
    pub uptodate_at: u64,
}

/// The swap devices and their slots (swap_info[], with the totals nr_swap_pages and
/// total_swap_pages).
#[derive(Debug, Clone, Default)]
pub struct SwapInfo {
    /// Slots of the devices swapped on and not being swapped off [pages] (total_swap_pages).
    pub pages: u32,
    /// Slots in use on those devices (total_swap_pages - nr_swap_pages).
    pub inuse_pages: u32,
    /// The devices, by type (swap_info[type]).
    pub devices: Vec<SwapDevice>,
    /// Devices that can hand out slots, highest priority first (swap_avail_heads).
    avail: Vec<usize>,
    /// Each CPU's current cluster on a non-rotational device: (type, offset) or (NONE, 0)
    /// (percpu_swap_cluster.si[0], .offset[0]).
    percpu_cluster: Vec<(u32, u32)>,
    /// The last automatic priority given (least_priority).
    least_priority: i32,
    /// Use count of each slot (swap_map).
    swap_map: Vec<u8>,
    /// Page in the swap cache for each slot ([`pfn32`]), or NIL (the swap address space).
    cache: Vec<u32>,
    /// The swap-cache pages by frame (folio->swap and the folio flags the model reads).
    folios: PfnMap<SwapCacheFolio>,
    /// The rmap slot whose page-table entry holds each slot, or NONE.
    owner: Vec<u32>,
    /// The memory cgroup charged for each slot's swap, or NONE (swap_cgroup_record).
    memcg: Vec<u32>,
    /// Readahead state: VMA windows per task and the cluster heuristic's (swap_state.rs).
    pub ra: super::swap_state::SwapRaState,
    /// When the last read submitted completes [ns].
    reads_done_by: u64,
    /// Pages in the swap cache whose read is not submitted yet (under the plug).
    reads_unsubmitted: u32,
    /// 6.1's per-CPU swap slot caches (`kernel.swap_slot_cache`); None without.
    slots_cache: Option<SwapSlotsCache>,
}

/// Slots per cluster (SWAPFILE_CLUSTER in mm/swap.h: HPAGE_PMD_NR = 512 with
/// CONFIG_THP_SWAP, as x86-64 kernels are built, this machine's 6.18 included; 256 without).
pub const SWAPFILE_CLUSTER: u32 = 512;

/// A slot that is never handed out: the swap header at offset 0 (SWAP_MAP_BAD).
const SWAP_MAP_BAD: u8 = 0x3f;

/// Which list a cluster is on (enum swap_cluster_flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClusterFlag {
    /// Off every list: being scanned (CLUSTER_FLAG_NONE).
    None,
    /// No slot used (CLUSTER_FLAG_FREE).
    Free,
    /// A slot freed since it was last full or partly used (CLUSTER_FLAG_NONFULL).
    Nonfull,
    /// Partly used by allocation (CLUSTER_FLAG_FRAG).
    Frag,
    /// Every slot used (CLUSTER_FLAG_FULL).
    Full,
}

/// One cluster of SWAPFILE_CLUSTER slots (struct swap_cluster_info).
#[derive(Debug, Clone, Copy)]
struct SwapCluster {
    /// Slots used, the header and slots past the device's end included.
    count: u32,
    /// Its list.
    flags: ClusterFlag,
    /// Previous cluster on its list, or NONE.
    prev: u32,
    /// Next cluster on its list, or NONE.
    next: u32,
}

/// Where a swap device keeps its pages (`[[swap]] type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapKind {
    /// A swap file on the disk's filesystem.
    File,
    /// A partition of the disk.
    Partition,
    /// A compressed RAM disk (drivers/block/zram).
    Zram,
}

/// One swap device (struct swap_info_struct).
#[derive(Debug, Clone)]
pub struct SwapDevice {
    /// Its path, as swapon and /proc/swaps name it.
    pub name: String,
    /// File, partition or zram.
    pub kind: SwapKind,
    /// Priority given at swapon, or None for an automatic one (swapon -p).
    pub fixed_prio: Option<i32>,
    /// Its priority while swapped on (si->prio).
    pub prio: i32,
    /// Its first slot in the shared slot space (offset 0, the header).
    pub base: u32,
    /// Slots, the header included (si->max).
    pub max: u32,
    /// Usable slots (si->pages = max - 1).
    pub pages: u32,
    /// Slots in use (si->inuse_pages).
    pub inuse_pages: u32,
    /// Swapped on and not being swapped off (SWP_WRITEOK).
    pub writeok: bool,
    /// Not rotational: slots come from per-CPU clusters (SWP_SOLIDSTATE).
    pub solidstate: bool,
    /// First sector of the device on the disk (file and partition).
    pub sector: u64,
    /// Failed swapon and swapoff calls (EBUSY, EINVAL, ENOMEM).
    pub failed_calls: u32,
    /// Its clusters (si->cluster_info).
    clusters: Vec<SwapCluster>,
    /// Heads and tails of the free, nonfull, frag and full lists.
    lists: [(u32, u32); 4],
    /// The next offset of the device's one cluster on a rotational disk (si->global_cluster->next[0]), 0 for none.
    global_next: u32,
    /// Where swapoff's walk of the device's slots is (find_next_to_unuse's `i`).
    pub unuse_cursor: u32,
    /// Slots swapoff freed in its current pass over the device.
    pub unuse_progress: u32,
    /// The compressed RAM disk behind a zram device.
    pub zram: Option<crate::block::zram::Zram>,
}

/// The list a flag names, if any.
fn list_index(f: ClusterFlag) -> Option<usize> {
    match f {
        ClusterFlag::None => None,
        ClusterFlag::Free => Some(0),
        ClusterFlag::Nonfull => Some(1),
        ClusterFlag::Frag => Some(2),
        ClusterFlag::Full => Some(3),
    }
}

impl SwapDevice {
    /// A device of `max` slots starting at slot `base`, its clusters set up with the header
    /// and the slots past the end used (setup_clusters): those clusters nonfull, the rest free.
    pub fn new(name: &str, kind: SwapKind, max: u32, base: u32, solidstate: bool) -> Self {
        let c = SWAPFILE_CLUSTER;
        let nr = max.div_ceil(c);
        let mut d = SwapDevice {
            name: name.to_string(),
            kind,
            fixed_prio: None,
            prio: 0,
            base,
            max,
            pages: max.saturating_sub(1),
            inuse_pages: 0,
            writeok: false,
            solidstate,
            sector: 0,
            failed_calls: 0,
            clusters: vec![
                SwapCluster {
                    count: 0,
                    flags: ClusterFlag::None,
                    prev: NONE,
                    next: NONE,
                };
                nr as usize
            ],
            lists: [(NONE, NONE); 4],
            global_next: 0,
            unuse_cursor: 0,
            unuse_progress: 0,
            zram: None,
        };
        if nr > 0 {
            d.clusters[0].count += 1;
            d.clusters[nr as usize - 1].count += nr * c - max;
        }
        for ci in 0..nr {
            let f = if d.clusters[ci as usize].count > 0 {
                ClusterFlag::Nonfull
            } else {
                ClusterFlag::Free
            };
            d.move_cluster(ci, f);
        }
        d
    }

    /// Takes a cluster off its list and puts it on the tail of `to`'s (move_cluster, list_move_tail).
    fn move_cluster(&mut self, ci: u32, to: ClusterFlag) {
        let c = self.clusters[ci as usize];
        if let Some(l) = list_index(c.flags) {
            if c.prev == NONE {
                self.lists[l].0 = c.next;
            } else {
                self.clusters[c.prev as usize].next = c.next;
            }
            if c.next == NONE {
                self.lists[l].1 = c.prev;
            } else {
                self.clusters[c.next as usize].prev = c.prev;
            }
        }
        let (mut prev, mut next) = (NONE, NONE);
        if let Some(l) = list_index(to) {
            let tail = self.lists[l].1;
            prev = tail;
            if tail == NONE {
                self.lists[l].0 = ci;
            } else {
                self.clusters[tail as usize].next = ci;
            }
            self.lists[l].1 = ci;
            next = NONE;
        }
        let cl = &mut self.clusters[ci as usize];
        cl.flags = to;
        cl.prev = prev;
        cl.next = next;
    }

    /// The first cluster of a list, taken off it (isolate_lock_cluster).
    fn isolate_cluster(&mut self, list: ClusterFlag) -> Option<u32> {
        let head = self.lists[list_index(list)?].0;
        if head == NONE {
            return None;
        }
        self.move_cluster(head, ClusterFlag::None);
        Some(head)
    }

    /// Puts a cluster on the list its use says after an allocation (relocate_cluster).
    fn relocate_cluster(&mut self, ci: u32) {
        let c = self.clusters[ci as usize];
        let to = if c.count == 0 {
            ClusterFlag::Free
        } else if c.count != SWAPFILE_CLUSTER {
            ClusterFlag::Frag
        } else {
            ClusterFlag::Full
        };
        if c.flags != to {
            self.move_cluster(ci, to);
        }
    }

    /// Clusters on each list (free, nonfull, frag, full), for tests and checks.
    pub fn cluster_lists(&self) -> [u32; 4] {
        let mut n = [0u32; 4];
        for c in &self.clusters {
            if let Some(l) = list_index(c.flags) {
                n[l] += 1;
            }
        }
        n
    }

    /// Whether the device has a swap on a rotational disk (counted in nr_rotate_swap).
    pub fn rotational(&self) -> bool {
        self.kind != SwapKind::Zram && !self.solidstate
    }
}

/// Slots per CPU cache, for allocation and for freeing (SWAP_SLOTS_CACHE_SIZE = SWAP_BATCH).
pub const SWAP_SLOTS_CACHE_SIZE: usize = 64;

/// The per-CPU swap slot caches of 6.1 (mm/swap_slots.c).
#[derive(Debug, Clone, Default)]
pub struct SwapSlotsCache {
    /// CPUs online (num_online_cpus()), for the activation thresholds.
    nr_cpus: u32,
    /// swap_slot_cache_active.
    active: bool,
    /// Each CPU's cache of slots to hand out, next first (cache->slots from cache->cur).
    slots: Vec<std::collections::VecDeque<u32>>,
    /// Each CPU's freed slots not yet returned (cache->slots_ret).
    slots_ret: Vec<Vec<u32>>,
}

impl SwapInfo {
    /// One swap file of `pages` slots on a rotational disk, swapped on (the `machine.swap` form).
    pub fn new(pages: u32) -> Self {
        if pages == 0 {
            return SwapInfo::default();
        }
        let mut si = SwapInfo::with_devices(vec![SwapDevice::new(
            "/swapfile",
            SwapKind::File,
            pages,
            0,
            false,
        )]);
        si.swapon(0).expect("a new device is off");
        si
    }

    /// The swap devices of a scenario: `machine.swap`'s "/swapfile" (`machine_swap` bytes,
    /// 0 for none) and the `[[swap]]` entries, on a disk that is `rotational` or not; those
    /// swapped on at boot are enabled in order (swapon at boot).
    pub fn from_config(
        machine_swap: u64,
        specs: &[crate::config::SwapDeviceSpec],
        rotational: bool,
        slot_cache_cpus: Option<u32>,
    ) -> Self {
        use crate::config::SwapType;
        let page = super::page::PAGE_SIZE;
        let mut devs = Vec::new();
        let mut on = Vec::new();
        if machine_swap > 0 {
            let max = (machine_swap / page) as u32;
            devs.push(SwapDevice::new(
                "/swapfile",
                SwapKind::File,
                max,
                0,
                !rotational,
            ));
            on.push(true);
        }
        for sp in specs {
            let kind = match sp.kind {
                SwapType::File => SwapKind::File,
                SwapType::Partition => SwapKind::Partition,
                SwapType::Zram => SwapKind::Zram,
            };
            let bytes = sp.size.or(sp.disksize).map_or(0, |b| b.0);
            let max = (bytes / page) as u32;
            // zram is not rotational (SWP_SOLIDSTATE).
            let ssd = !rotational || kind == SwapKind::Zram;
            let mut d = SwapDevice::new(&sp.path, kind, max, 0, ssd);
            if kind == SwapKind::Zram {
                use crate::block::zram::*;
                d.zram = Some(Zram::new(
                    max,
                    sp.comp_ratio.unwrap_or(ZRAM_COMP_RATIO),
                    sp.compress_ns.unwrap_or(ZRAM_COMPRESS_NS),
                    sp.decompress_ns.unwrap_or(ZRAM_DECOMPRESS_NS),
                ));
            }
            d.fixed_prio = sp.priority.map(|p| p as i32);
            devs.push(d);
            on.push(sp.swapon);
        }
        let mut si = SwapInfo::with_devices(devs);
        for (t, _) in on.iter().enumerate().filter(|(_, &o)| o) {
            let _ = si.swapon(t);
        }
        match slot_cache_cpus {
            Some(n) => si.with_slot_cache(n),
            None => si,
        }
    }

    /// The swap space of these devices, none swapped on yet; each device's `base` is
    /// set here, the disk devices' sectors laid out from the start of the disk.
    pub fn with_devices(mut devices: Vec<SwapDevice>) -> Self {
        let mut base = 0u32;
        let mut sector = 0u64;
        for d in &mut devices {
            d.base = base;
            base += d.max;
            if d.kind != SwapKind::Zram {
                d.sector = sector;
                sector += d.max as u64 * 8;
            }
        }
        let n = base as usize;
        SwapInfo {
            devices,
            least_priority: -1,
            swap_map: vec![0; n],
            cache: vec![pfn32(NIL); n],
            owner: vec![NONE; n],
            memcg: vec![NONE; n],
            ..Default::default()
        }
        .with_headers()
    }

    /// Marks every device's header slot as never handed out.
    fn with_headers(mut self) -> Self {
        for d in &self.devices {
            if d.max > 0 {
                self.swap_map[d.base as usize] = SWAP_MAP_BAD;
            }
        }
        self
    }

    /// The same area with 6.1's per-CPU slot caches for `nr_cpus` CPUs (enable_swap_slots_cache).
    pub fn with_slot_cache(mut self, nr_cpus: u32) -> Self {
        let n = nr_cpus as usize;
        self.slots_cache = Some(SwapSlotsCache {
            nr_cpus,
            active: false,
            slots: vec![Default::default(); n],
            slots_ret: vec![Vec::new(); n],
        });
        self
    }

    /// A slot for a page being swapped out on `cpu` (folio_alloc_swap): from the CPU's
    /// slot cache while the caches are active, else straight from the device.
    pub fn folio_alloc_swap(&mut self, cpu: usize) -> Option<u32> {
        if self.check_cache_active() {
            if let Some(s) = self.alloc_swap_slot_cache(cpu) {
                return Some(s);
            }
        }
        self.get_swap_page(cpu)
    }

    /// The next slot of `cpu`'s cache, refilling an empty cache with up to
    /// SWAP_SLOTS_CACHE_SIZE slots (refill_swap_slots_cache → get_swap_pages).
    fn alloc_swap_slot_cache(&mut self, cpu: usize) -> Option<u32> {
        let mut cache = self.slots_cache.take()?;
        let q = &mut cache.slots[cpu];
        if q.is_empty() {
            while q.len() < SWAP_SLOTS_CACHE_SIZE {
                match self.get_swap_page(cpu) {
                    Some(s) => q.push_back(s),
                    None => break,
                }
            }
        }
        let s = q.pop_front();
        self.slots_cache = Some(cache);
        s
    }

    /// Whether the slot caches are in use, switching them on above 5 × 64 free slots per
    /// CPU and off (every cache drained) below 2 × 64 (check_cache_active).
    fn check_cache_active(&mut self) -> bool {
        let free = self.nr_free() as usize;
        let Some(c) = &mut self.slots_cache else {
            return false;
        };
        let per_cpu = c.nr_cpus as usize * SWAP_SLOTS_CACHE_SIZE;
        if !c.active {
            // reactivate_swap_slots_cache()
            c.active = free > 5 * per_cpu;
        } else if free < 2 * per_cpu {
            self.deactivate_swap_slots_cache();
        }
        self.slots_cache.as_ref().is_some_and(|c| c.active)
    }

    /// Returns every cached slot, to hand out or freed, to the device (deactivate_swap_slots_cache).
    fn deactivate_swap_slots_cache(&mut self) {
        let Some(mut c) = self.slots_cache.take() else {
            return;
        };
        c.active = false;
        for s in c.slots.iter_mut().flat_map(|q| q.drain(..)) {
            self.swap_free(s);
        }
        for s in c.slots_ret.iter_mut().flat_map(|r| r.drain(..)) {
            self.swap_free(s);
        }
        self.slots_cache = Some(c);
    }

    /// Frees a slot from `cpu` (free_swap_slot): into the CPU's return cache while the
    /// caches are active, the 64 gathered there going back together; else at once.
    pub fn free_swap_slot(&mut self, cpu: usize, slot: u32) {
        if !self.slots_cache.as_ref().is_some_and(|c| c.active) {
            self.swap_free(slot);
            return;
        }
        let Some(mut c) = self.slots_cache.take() else {
            return;
        };
        if c.slots_ret[cpu].len() >= SWAP_SLOTS_CACHE_SIZE {
            // swapcache_free_entries()
            for s in std::mem::take(&mut c.slots_ret[cpu]) {
                self.swap_free(s);
            }
        }
        c.slots_ret[cpu].push(slot);
        self.slots_cache = Some(c);
    }

    /// Takes a free slot for `cpu`: from its current cluster, else from the first device
    /// by priority (folio_alloc_swap → swap_alloc_fast, swap_alloc_slow); None if swap is full.
    pub fn get_swap_page(&mut self, cpu: usize) -> Option<u32> {
        if let Some(s) = self.swap_alloc_fast(cpu) {
            return Some(s);
        }
        self.swap_alloc_slow(cpu)
    }

    /// A slot from the CPU's current cluster on a non-rotational device (swap_alloc_fast).
    fn swap_alloc_fast(&mut self, cpu: usize) -> Option<u32> {
        let (t, offset) = *self.percpu_cluster.get(cpu)?;
        if t == NONE || offset == 0 || !self.devices[t as usize].writeok {
            return None;
        }
        let ci = offset / SWAPFILE_CLUSTER;
        let d = &self.devices[t as usize];
        let offset = if d.clusters[ci as usize].count == 0 {
            ci * SWAPFILE_CLUSTER
        } else {
            offset
        };
        self.alloc_swap_scan_cluster(t as usize, ci, offset, cpu)
    }

    /// Takes a slot from the devices in priority order, each moved behind the others of
    /// its priority first, so that equal priorities take turns (swap_alloc_slow, plist_requeue).
    fn swap_alloc_slow(&mut self, cpu: usize) -> Option<u32> {
        for _ in 0..self.avail.len() {
            let t = *self.avail.first()?;
            self.plist_requeue(t);
            if let Some(s) = self.cluster_alloc_swap_entry(t, cpu) {
                return Some(s);
            }
        }
        None
    }

    /// Moves a device behind the last available device of the same priority (plist_requeue).
    fn plist_requeue(&mut self, t: usize) {
        let Some(i) = self.avail.iter().position(|&x| x == t) else {
            return;
        };
        self.avail.remove(i);
        self.add_to_avail_list(t);
    }

    /// Puts a device on the available list after every device of its priority or above (add_to_avail_list, plist_add).
    fn add_to_avail_list(&mut self, t: usize) {
        if self.avail.contains(&t) {
            return;
        }
        let prio = self.devices[t].prio;
        let at = self
            .avail
            .iter()
            .position(|&x| self.devices[x].prio < prio)
            .unwrap_or(self.avail.len());
        self.avail.insert(at, t);
    }

    /// Takes a device off the available list (del_from_avail_list).
    fn del_from_avail_list(&mut self, t: usize) {
        self.avail.retain(|&x| x != t);
    }

    /// A slot from a device: its one current cluster on a rotational disk, else a nonfull
    /// cluster, a free one, or the first partly used one (cluster_alloc_swap_entry, order 0).
    fn cluster_alloc_swap_entry(&mut self, t: usize, cpu: usize) -> Option<u32> {
        let d = &self.devices[t];
        if !d.solidstate && d.global_next != 0 {
            let offset = d.global_next;
            let ci = offset / SWAPFILE_CLUSTER;
            let offset = if d.clusters[ci as usize].count == 0 {
                ci * SWAPFILE_CLUSTER
            } else {
                offset
            };
            if let Some(s) = self.alloc_swap_scan_cluster(t, ci, offset, cpu) {
                return Some(s);
            }
        }
        // alloc_swap_scan_list(nonfull_clusters, scan_all), then one free, then one frag cluster.
        while let Some(ci) = self.devices[t].isolate_cluster(ClusterFlag::Nonfull) {
            if let Some(s) = self.alloc_swap_scan_cluster(t, ci, ci * SWAPFILE_CLUSTER, cpu) {
                return Some(s);
            }
        }
        for list in [ClusterFlag::Free, ClusterFlag::Frag] {
            if let Some(ci) = self.devices[t].isolate_cluster(list) {
                if let Some(s) = self.alloc_swap_scan_cluster(t, ci, ci * SWAPFILE_CLUSTER, cpu) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// Takes the first free slot of cluster `ci` from `offset` on, puts the cluster on the
    /// list its use says and remembers where to go on: per CPU on a non-rotational device,
    /// per device on a rotational one (alloc_swap_scan_cluster).
    fn alloc_swap_scan_cluster(
        &mut self,
        t: usize,
        ci: u32,
        offset: u32,
        cpu: usize,
    ) -> Option<u32> {
        let d = &self.devices[t];
        let (base, solidstate) = (d.base, d.solidstate);
        let start = ci * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(d.max);
        let mut found = None;
        let mut next = 0;
        if d.clusters[ci as usize].count < SWAPFILE_CLUSTER {
            for off in offset..end {
                if self.swap_map[(base + off) as usize] == 0 {
                    self.swap_map[(base + off) as usize] = 1;
                    self.devices[t].clusters[ci as usize].count += 1;
                    self.swap_range_alloc(t);
                    found = Some(base + off);
                    if self.devices[t].clusters[ci as usize].count < SWAPFILE_CLUSTER
                        && off + 1 < end
                    {
                        next = off + 1;
                    }
                    break;
                }
            }
        }
        self.devices[t].relocate_cluster(ci);
        if solidstate {
            if self.percpu_cluster.len() <= cpu {
                self.percpu_cluster.resize(cpu + 1, (NONE, 0));
            }
            self.percpu_cluster[cpu] = (t as u32, next);
        } else {
            self.devices[t].global_next = next;
        }
        found
    }

    /// Counts a slot taken; a device with no slot left leaves the available list (swap_range_alloc).
    fn swap_range_alloc(&mut self, t: usize) {
        let d = &mut self.devices[t];
        d.inuse_pages += 1;
        let full = d.inuse_pages == d.pages;
        if d.writeok {
            self.inuse_pages += 1;
        }
        if full {
            self.del_from_avail_list(t);
        }
    }

    /// The device a slot belongs to (swp_type).
    #[inline]
    pub fn swp_type(&self, slot: u32) -> usize {
        if self.devices.len() == 1 {
            return 0;
        }
        self.devices
            .iter()
            .position(|d| slot >= d.base && slot < d.base + d.max)
            .unwrap_or(0)
    }

    /// The first and last usable slots of the device holding `slot`.
    pub fn device_range(&self, slot: u32) -> (u32, u32) {
        let d = &self.devices[self.swp_type(slot)];
        (d.base + 1, d.base + d.max - 1)
    }

    /// The disk sector of a slot on a file or partition (swap_folio_sector through the swap extents).
    #[inline]
    pub fn swap_sector(&self, slot: u32) -> u64 {
        let d = &self.devices[self.swp_type(slot)];
        d.sector + (slot - d.base) as u64 * 8
    }

    /// Sectors the swap devices take at the start of the disk (files are laid out after them).
    pub fn disk_sectors(&self) -> u64 {
        self.devices
            .iter()
            .filter(|d| d.kind != SwapKind::Zram)
            .map(|d| d.max as u64 * 8)
            .sum()
    }

    /// Whether a swapped-on device is on a rotational disk (nr_rotate_swap > 0).
    pub fn nr_rotate_swap(&self) -> bool {
        self.devices.iter().any(|d| d.writeok && d.rotational())
    }

    /// Enables a device (swapon → enable_swap_info): its priority given or the next
    /// automatic one (setup_swap_info: --least_priority), its slots counted, available.
    /// Err(EBUSY) if it is on already.
    pub fn swapon(&mut self, t: usize) -> Result<(), &'static str> {
        if self.devices[t].writeok {
            return Err("EBUSY");
        }
        let prio = match self.devices[t].fixed_prio {
            Some(p) => p,
            None => {
                self.least_priority -= 1;
                self.least_priority
            }
        };
        self.enable_swap_info(t, prio);
        Ok(())
    }

    /// Counts a device's slots and puts it on the available list (_enable_swap_info).
    fn enable_swap_info(&mut self, t: usize, prio: i32) {
        let d = &mut self.devices[t];
        d.prio = prio;
        d.writeok = true;
        self.pages += d.pages;
        self.inuse_pages += d.inuse_pages;
        if d.inuse_pages < d.pages {
            self.add_to_avail_list(t);
        }
    }

    /// Starts a swapoff: the device no longer gives slots and its slots leave the totals;
    /// automatic priorities below it move up by one (swapoff before try_to_unuse).
    /// Err(EINVAL) if it is not on.
    pub fn swapoff_begin(&mut self, t: usize) -> Result<(), &'static str> {
        if !self.devices[t].writeok {
            return Err("EINVAL");
        }
        self.del_from_avail_list(t);
        let prio = self.devices[t].prio;
        if prio < 0 {
            for d in self
                .devices
                .iter_mut()
                .filter(|d| d.writeok && d.prio < prio)
            {
                d.prio += 1;
            }
            self.least_priority += 1;
        }
        let d = &mut self.devices[t];
        d.writeok = false;
        self.pages -= d.pages;
        self.inuse_pages -= d.inuse_pages;
        // flush_percpu_swap_cluster()
        for c in &mut self.percpu_cluster {
            if c.0 == t as u32 {
                *c = (NONE, 0);
            }
        }
        self.devices[t].global_next = 0;
        Ok(())
    }

    /// Puts a device whose swapoff failed back (reinsert_swap_info): a negative priority
    /// becomes the next automatic one, as setup_swap_info gives it.
    pub fn reinsert_swap_info(&mut self, t: usize) {
        let prio = self.devices[t].prio;
        let prio = if prio >= 0 {
            prio
        } else {
            self.least_priority -= 1;
            self.least_priority
        };
        self.enable_swap_info(t, prio);
    }

    /// The next slot in use on device `t` at or after `from` (find_next_to_unuse), or None.
    pub fn find_next_to_unuse(&self, t: usize, from: u32) -> Option<u32> {
        let d = &self.devices[t];
        (from.max(d.base + 1)..d.base + d.max).find(|&s| self.swap_map[s as usize] == 1)
    }

    /// Drops the slot's user (swap_free → swap_entry_free).
    pub fn swap_free(&mut self, slot: u32) {
        debug_assert_eq!(
            self.swap_map[slot as usize], 1,
            "freeing a free swap slot {slot}"
        );
        debug_assert_eq!(
            self.cache[slot as usize] as Pfn, NIL,
            "freeing a slot still in the swap cache"
        );
        self.swap_map[slot as usize] = 0;
        self.owner[slot as usize] = NONE;
        debug_assert_eq!(
            self.memcg[slot as usize], NONE,
            "freeing a charged swap slot"
        );
        self.swap_entries_free(slot);
    }

    /// Returns a slot to its cluster, which goes to the free list when empty, else to the
    /// nonfull list (swap_entries_free → free_cluster / partial_free_cluster, swap_range_free).
    fn swap_entries_free(&mut self, slot: u32) {
        let t = self.swp_type(slot);
        let d = &mut self.devices[t];
        let ci = (slot - d.base) / SWAPFILE_CLUSTER;
        let c = &mut d.clusters[ci as usize];
        c.count -= 1;
        if c.count == 0 {
            d.move_cluster(ci, ClusterFlag::Free);
        } else if c.flags != ClusterFlag::Nonfull {
            d.move_cluster(ci, ClusterFlag::Nonfull);
        }
        let was_full = d.inuse_pages == d.pages;
        d.inuse_pages -= 1;
        if d.writeok {
            self.inuse_pages -= 1;
            if was_full {
                self.add_to_avail_list(t);
            }
        }
    }

    /// Whether a slot is allocated (swap_map has a user; readahead skips free slots and headers).
    #[inline]
    pub fn in_use(&self, slot: u32) -> bool {
        self.swap_map.get(slot as usize).is_some_and(|&c| c == 1)
    }

    /// The page in the swap cache for a slot (swap_cache_get_folio).
    #[inline]
    pub fn cache_lookup(&self, slot: u32) -> Option<Pfn> {
        let p = self.cache[slot as usize] as Pfn;
        (p != NIL).then_some(p)
    }

    /// Puts a page being swapped out in the swap cache (add_to_swap_cache): its page-table
    /// entry holds the slot, so it needs no folio record until it is mapped again.
    pub fn cache_add(&mut self, slot: u32, pfn: Pfn) {
        debug_assert_eq!(self.cache[slot as usize] as Pfn, NIL);
        self.cache[slot as usize] = pfn32(pfn);
    }

    /// Puts a page being read in the swap cache with its folio record (swap_cache_add_folio):
    /// PG_readahead and when its read completes (u64::MAX until it is submitted).
    pub fn cache_add_folio(&mut self, slot: u32, pfn: Pfn, readahead: bool, uptodate_at: u64) {
        self.cache_add(slot, pfn);
        if uptodate_at == u64::MAX {
            self.reads_unsubmitted += 1;
        }
        let f = SwapCacheFolio {
            slot,
            readahead,
            uptodate_at,
        };
        self.folios.insert(pfn, f);
    }

    /// Takes a page out of the swap cache (__delete_from_swap_cache).
    pub fn cache_del(&mut self, slot: u32) {
        let p = self.cache[slot as usize] as Pfn;
        debug_assert_ne!(p, NIL);
        if !self.folios.is_empty()
            && self
                .folios
                .remove(&p)
                .is_some_and(|f| f.uptodate_at == u64::MAX)
        {
            self.reads_unsubmitted -= 1;
        }
        self.cache[slot as usize] = pfn32(NIL);
    }

    /// The folio record of a swap-cache page that was read in or is mapped (folio->swap);
    /// None for a page being swapped out, whose page-table entry holds its slot.
    #[inline]
    pub fn folio(&self, pfn: Pfn) -> Option<SwapCacheFolio> {
        if self.folios.is_empty() {
            return None;
        }
        self.folios.get(&pfn).copied()
    }

    /// Gives a swap-cache page that is being mapped a folio record, if it has none.
    pub fn track(&mut self, pfn: Pfn, slot: u32) {
        debug_assert_eq!(self.cache[slot as usize] as Pfn, pfn);
        self.folios.entry(pfn).or_insert(SwapCacheFolio {
            slot,
            readahead: false,
            uptodate_at: 0,
        });
    }

    /// Drops the folio record of a swap-cache page whose page-table entry holds its slot
    /// again (unmapped, its read complete), keeping one for a read not yet submitted.
    pub fn untrack(&mut self, pfn: Pfn) {
        if self.folios.is_empty() {
            return;
        }
        if self
            .folios
            .get(&pfn)
            .is_some_and(|f| f.uptodate_at != u64::MAX)
        {
            self.folios.remove(&pfn);
        }
    }

    /// Clears a swap-cache page's PG_readahead, returning whether it was set (folio_test_clear_readahead).
    pub fn folio_test_clear_readahead(&mut self, pfn: Pfn) -> bool {
        self.folios
            .get_mut(&pfn)
            .is_some_and(|f| std::mem::take(&mut f.readahead))
    }

    /// Sets when the read of a swap-cache page completes (the bio's end_io sets PG_uptodate).
    pub fn set_uptodate_at(&mut self, slot: u32, pfn: Pfn, at: u64) {
        debug_assert_eq!(self.cache[slot as usize] as Pfn, pfn);
        if let Some(f) = self.folios.get_mut(&pfn) {
            if f.uptodate_at == u64::MAX {
                self.reads_unsubmitted -= 1;
            }
            f.uptodate_at = at;
            self.reads_done_by = self.reads_done_by.max(at);
        }
    }

    /// No read of a swap-cache page completes after this [ns] (u64::MAX while a read is
    /// not submitted yet).
    #[inline]
    pub fn reads_done_by(&self) -> u64 {
        if self.reads_unsubmitted > 0 {
            u64::MAX
        } else {
            self.reads_done_by
        }
    }

    /// Pages in the swap cache (total_swapcache_pages).
    pub fn nr_swapcache(&self) -> usize {
        self.folios.len()
    }

    /// The rmap slot whose page-table entry holds a swap slot, or NONE.
    #[inline]
    pub fn slot_owner(&self, slot: u32) -> u32 {
        self.owner[slot as usize]
    }

    /// Records the page-table entry holding a swap slot.
    #[inline]
    pub fn set_slot_owner(&mut self, slot: u32, rslot: u32) {
        self.owner[slot as usize] = rslot;
    }

    /// The memory cgroup charged for a slot's swap, or NONE (lookup_swap_cgroup_id).
    #[inline]
    pub fn swap_cgroup(&self, slot: u32) -> u32 {
        self.memcg[slot as usize]
    }

    /// Sets (or with NONE clears) the group charged for a slot, returning the old one (swap_cgroup_record / _clear).
    #[inline]
    pub fn swap_cgroup_record(&mut self, slot: u32, id: u32) -> u32 {
        std::mem::replace(&mut self.memcg[slot as usize], id)
    }

    /// Whether more than half the swap space is in use (vm_swap_full).
    pub fn vm_swap_full(&self) -> bool {
        self.pages > 0 && self.nr_free() * 2 < self.pages
    }

    /// Slots of every device, headers included (the sum of si->max).
    #[inline]
    pub fn max(&self) -> u32 {
        self.swap_map.len() as u32
    }

    /// Slots held by the slot caches, to hand out or freed and not yet returned.
    pub fn nr_cached(&self) -> u32 {
        self.slots_cache.as_ref().map_or(0, |c| {
            let n: usize = c.slots.iter().map(|q| q.len()).sum::<usize>()
                + c.slots_ret.iter().map(|r| r.len()).sum::<usize>();
            n as u32
        })
    }

    /// Free slots (get_nr_swap_pages).
    pub fn nr_free(&self) -> u32 {
        self.pages - self.inuse_pages
    }
}

/// A swap device at the end of a run (`swap_devices` in the result).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SwapDeviceReport {
    /// Its path.
    pub path: String,
    /// file, partition or zram.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Swapped on.
    pub on: bool,
    /// Usable size (si->pages) [KiB].
    pub size_kb: u64,
    /// In use [KiB].
    pub used_kb: u64,
    /// Its priority (the last one it had, if off).
    pub priority: i32,
    /// swapon and swapoff calls that failed (EBUSY, EINVAL, ENOMEM).
    pub failed_calls: u32,
    /// A zram device's /sys/block/zramN/mm_stat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mm_stat: Option<String>,
}

impl From<&SwapDevice> for SwapDeviceReport {
    fn from(d: &SwapDevice) -> Self {
        SwapDeviceReport {
            path: d.name.clone(),
            kind: d.kind.name(),
            on: d.writeok,
            size_kb: d.pages as u64 * 4,
            used_kb: d.inuse_pages as u64 * 4,
            priority: d.prio,
            failed_calls: d.failed_calls,
            mm_stat: d.zram.as_ref().map(|z| z.mm_stat()),
        }
    }
}

impl SwapKind {
    /// Its `[[swap]] type` name.
    pub fn name(self) -> &'static str {
        match self {
            SwapKind::File => "file",
            SwapKind::Partition => "partition",
            SwapKind::Zram => "zram",
        }
    }
}

impl SwapInfo {
    /// /proc/swaps: the devices swapped on, in type order (swap_show).
    pub fn proc_swaps(&self) -> String {
        let mut out = String::from("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        for d in self.devices.iter().filter(|d| d.writeok) {
            let len = d.name.len();
            let pad = if len < 40 { 40 - len } else { 1 };
            let bytes = d.pages as u64 * 4;
            let inuse = d.inuse_pages as u64 * 4;
            out += &format!(
                "{}{:>pad$}{}\t{}\t{}{}\t{}{}\n",
                d.name,
                " ",
                if d.kind == SwapKind::File {
                    "file\t"
                } else {
                    "partition"
                },
                bytes,
                if bytes < 10_000_000 { "\t" } else { "" },
                inuse,
                if inuse < 10_000_000 { "\t" } else { "" },
                d.prio,
            );
        }
        out
    }
}

/// What one step of swapoff's try_to_unuse did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unuse {
    /// Every slot of the device is free: swapoff completes.
    Done,
    /// One slot was freed (its page read back and mapped, or dropped from the swap cache).
    Progress,
    /// The page is still being read or written: wait until this time [ns], then retry.
    Wait(u64),
    /// The page could not be brought in (no memory, or the caller was OOM-killed).
    Failed(super::memory::Fault),
}

impl crate::kernel::Kernel {
    /// Whether /proc/swaps lists a device (swapped on).
    pub fn proc_swaps_has(&self, path: &str) -> bool {
        self.swap_type_by_path(path)
            .is_some_and(|t| self.swap.devices[t].writeok)
    }

    /// The swap type of a device path.
    pub fn swap_type_by_path(&self, path: &str) -> Option<usize> {
        self.swap.devices.iter().position(|d| d.name == path)
    }

    /// `swapon PATH` (sys_swapon): enables the device; Err("EBUSY") if it is on.
    pub fn sys_swapon(&mut self, t: usize) -> Result<(), &'static str> {
        let r = self.swap.swapon(t);
        if r.is_err() {
            self.swap.devices[t].failed_calls += 1;
        }
        r
    }

    /// The start of `swapoff PATH` (sys_swapoff up to try_to_unuse); Err("EINVAL") if
    /// the device is not on. The caller becomes the OOM killer's first choice
    /// (set_current_oom_origin) until [`Kernel::swapoff_end`].
    pub fn swapoff_begin(
        &mut self,
        t: usize,
        tid: crate::engine::TaskId,
    ) -> Result<(), &'static str> {
        if let Err(e) = self.swap.swapoff_begin(t) {
            self.swap.devices[t].failed_calls += 1;
            return Err(e);
        }
        let d = &mut self.swap.devices[t];
        d.unuse_cursor = d.base + 1;
        d.unuse_progress = 0;
        self.tasks[tid as usize].swapoff_type = Some(t);
        Ok(())
    }

    /// The end of swapoff: the device off when try_to_unuse succeeded, put back
    /// (reinsert_swap_info) when it failed; the caller's OOM preference cleared.
    pub fn swapoff_end(&mut self, t: usize, tid: crate::engine::TaskId, ok: bool) {
        if self.tasks[tid as usize].swapoff_type.take() != Some(t) {
            return;
        }
        if !ok {
            self.swap.devices[t].failed_calls += 1;
            self.swap.reinsert_swap_info(t);
        }
    }

    /// Frees the next slot in use on device `t` for swapoff (try_to_unuse): a page whose
    /// page-table entry holds the slot is read back by `tid` (swapin_readahead), mapped
    /// (unuse_pte) and taken out of the swap cache (folio_free_swap); a mapped page still
    /// in the swap cache is taken out of it. Slots are walked in offset order.
    pub fn try_to_unuse_one(&mut self, t: usize, tid: crate::engine::TaskId) -> Unuse {
        use super::rmap::{Entry, Owner};
        let d = &self.swap.devices[t];
        if d.inuse_pages == 0 {
            return Unuse::Done;
        }
        let Some(s) = self.swap.find_next_to_unuse(t, d.unuse_cursor) else {
            // The end of a pass: another, unless this one freed nothing (retry in try_to_unuse).
            let d = &mut self.swap.devices[t];
            if d.unuse_progress == 0 {
                return Unuse::Failed(super::memory::Fault::Failed);
            }
            d.unuse_cursor = d.base + 1;
            d.unuse_progress = 0;
            return Unuse::Progress;
        };
        let now = self.mm.clock();
        let rslot = self.swap.slot_owner(s);
        let p = if rslot != NONE && self.rmap.get(rslot) == Entry::Swap(s) {
            let p = match self.swap.cache_lookup(s) {
                Some(p) => p,
                None => match self.swapin_for_unuse(tid, s) {
                    Ok(p) => p,
                    Err(f) => return Unuse::Failed(f),
                },
            };
            if let Some(f) = self.swap.folio(p).filter(|f| f.uptodate_at > now) {
                return Unuse::Wait(f.uptodate_at);
            }
            if self.mm.map[p as usize].test(super::page::pg::WRITEBACK) {
                return Unuse::Wait(self.disk.next_completion_at().unwrap_or(now + 1_000_000));
            }
            // unuse_pte(): the owner's page-table entry maps the page again.
            if let (Owner::Task { tid: owner, .. }, _) = self.rmap.owner(rslot) {
                self.tasks[owner as usize].swapents -= 1;
                self.map_anon_page(owner, rslot, p);
                self.swap.track(p, s);
            }
            p
        } else {
            match self.swap.cache_lookup(s) {
                Some(p) => p,
                None => {
                    // A slot nobody's entry holds: nothing to bring back; leave it for the next pass.
                    self.swap.devices[t].unuse_cursor = s + 1;
                    return Unuse::Progress;
                }
            }
        };
        if self.mm.map[p as usize].test(super::page::pg::WRITEBACK) {
            return Unuse::Wait(self.disk.next_completion_at().unwrap_or(now + 1_000_000));
        }
        if self.folio_free_swap(p) {
            let d = &mut self.swap.devices[t];
            d.unuse_progress += 1;
        }
        self.swap.devices[t].unuse_cursor = s + 1;
        Unuse::Progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_one_slot_caches_hand_each_cpu_a_run_of_64_and_return_frees_in_batches() {
        // Without the cache (6.18 here) two CPUs swapping in turn to a rotational device
        // share its one current cluster; offset 0 is the header.
        let mut plain = SwapInfo::new(4096);
        let got: Vec<u32> = (0..4)
            .map(|i| plain.folio_alloc_swap(i % 2).unwrap())
            .collect();
        assert_eq!(got, [1, 2, 3, 4]);
        // With it each CPU takes from its own run of 64.
        let mut si = SwapInfo::new(4096).with_slot_cache(2);
        let got: Vec<u32> = (0..4)
            .map(|i| si.folio_alloc_swap(i % 2).unwrap())
            .collect();
        assert_eq!(got, [1, 65, 2, 66]);
        assert_eq!(
            si.nr_free(),
            4095 - 128,
            "cached slots are taken from the device"
        );
        // A freed slot waits in the CPU's return cache until 64 have gathered.
        let mut si = SwapInfo::new(4096).with_slot_cache(2);
        let held: Vec<u32> = (0..65).map(|_| si.folio_alloc_swap(0).unwrap()).collect();
        assert_eq!(si.nr_free(), 4095 - 128);
        for &s in &held[..64] {
            si.free_swap_slot(1, s);
        }
        assert_eq!(si.nr_free(), 4095 - 128);
        si.free_swap_slot(1, held[64]);
        assert_eq!(si.nr_free(), 4095 - 128 + 64);
    }

    #[test]
    fn slot_caches_are_off_while_swap_is_nearly_full() {
        // 2 CPUs: active above 5 × 64 × 2 = 640 free slots, drained below 256.
        let mut small = SwapInfo::new(641).with_slot_cache(2);
        let got: Vec<u32> = (0..2).map(|i| small.folio_alloc_swap(i).unwrap()).collect();
        assert_eq!(got, [1, 2], "640 free is not above 640");
        let mut si = SwapInfo::new(1025).with_slot_cache(2);
        assert_eq!(si.folio_alloc_swap(1), Some(1));
        assert_eq!(si.nr_free(), 1024 - 64);
        // Fill until fewer than 256 are free: the caches drain and slots come one by one.
        while si.nr_free() >= 256 {
            si.get_swap_page(0).unwrap();
        }
        let before = si.nr_free();
        let s = si.folio_alloc_swap(0).unwrap();
        assert_eq!(
            si.nr_free(),
            before + 63 - 1,
            "the 63 cached slots came back"
        );
        assert!(s < 1025);
        si.free_swap_slot(0, s);
        assert_eq!(si.nr_free(), before + 63, "an inactive cache frees at once");
    }

    #[test]
    fn the_current_cluster_goes_on_before_a_freed_slot_is_reused() {
        let mut si = SwapInfo::new(4);
        assert_eq!(si.pages, 3, "offset 0 is the swap header");
        assert_eq!(si.get_swap_page(0), Some(1));
        assert_eq!(si.get_swap_page(0), Some(2));
        si.swap_free(1);
        assert_eq!(si.get_swap_page(0), Some(3), "the device's cluster goes on");
        assert_eq!(si.get_swap_page(0), Some(1), "then the nonfull cluster");
        assert_eq!(si.get_swap_page(0), None);
        si.cache_add_folio(1, 77, true, 5);
        assert_eq!(si.cache_lookup(1), Some(77));
        assert_eq!(si.folio(77).map(|f| f.slot), Some(1));
        assert!(si.folio_test_clear_readahead(77));
        assert!(
            !si.folio_test_clear_readahead(77),
            "PG_readahead is cleared once"
        );
        si.cache_del(1);
        assert_eq!(si.folio(77), None);
        si.swap_free(1);
        assert_eq!(si.nr_free(), 1);
    }

    /// Devices of `slots` slots each, swapped on in order with the given priorities.
    fn devices(specs: &[(u32, Option<i32>, bool)]) -> SwapInfo {
        let devs = specs
            .iter()
            .enumerate()
            .map(|(i, &(max, prio, ssd))| {
                let mut d = SwapDevice::new(&format!("/swap{i}"), SwapKind::File, max, 0, ssd);
                d.fixed_prio = prio;
                d
            })
            .collect();
        let mut si = SwapInfo::with_devices(devs);
        for t in 0..specs.len() {
            si.swapon(t).unwrap();
        }
        si
    }

    #[test]
    fn non_rotational_cpus_each_take_their_own_cluster() {
        let mut si = devices(&[(4096, None, true)]);
        let got: Vec<u32> = (0..4).map(|i| si.get_swap_page(i % 2).unwrap()).collect();
        // CPU 0 takes the nonfull cluster 0 (its header used), CPU 1 a free one.
        assert_eq!(got, [1, 512, 2, 513]);
        assert_eq!(si.devices[0].cluster_lists(), [6, 0, 2, 0]);
        // Fill cluster 1: it goes to the full list; a free in it moves it to nonfull,
        // and a CPU without a current cluster takes that one before a free cluster.
        while si.devices[0].clusters[1].count < SWAPFILE_CLUSTER {
            si.get_swap_page(1).unwrap();
        }
        assert_eq!(si.devices[0].cluster_lists(), [6, 0, 1, 1]);
        si.swap_free(600);
        assert_eq!(si.devices[0].cluster_lists(), [6, 1, 1, 0]);
        assert_eq!(si.get_swap_page(1), Some(600));
        assert_eq!(si.devices[0].cluster_lists(), [6, 0, 1, 1]);
    }

    #[test]
    fn higher_priority_first_then_the_next() {
        let mut si = devices(&[(1024, Some(5), false), (16, Some(10), false)]);
        let base1 = si.devices[1].base;
        let got: Vec<u32> = (0..16).map(|_| si.get_swap_page(0).unwrap()).collect();
        assert!(got[..15].iter().all(|&s| s > base1), "{got:?}");
        assert_eq!(got[15], 1, "priority 10 is full: priority 5 next");
        si.swap_free(base1 + 3);
        assert_eq!(si.get_swap_page(0), Some(base1 + 3), "back to priority 10");
    }

    #[test]
    fn equal_priorities_take_turns_per_page_on_rotational_disks_per_cluster_on_others() {
        let mut hdd = devices(&[(2048, Some(1), false), (2048, Some(1), false)]);
        let b = hdd.devices[1].base;
        let got: Vec<u32> = (0..4).map(|_| hdd.get_swap_page(0).unwrap()).collect();
        assert_eq!(got, [1, b + 1, 2, b + 2]);
        let mut ssd = devices(&[(2048, Some(1), true), (2048, Some(1), true)]);
        let b = ssd.devices[1].base;
        let got: Vec<u32> = (0..512).map(|_| ssd.get_swap_page(0).unwrap()).collect();
        assert_eq!(got[..511], (1..512).collect::<Vec<u32>>()[..]);
        assert_eq!(got[511], b + 1, "the next cluster from the other device");
    }

    #[test]
    fn automatic_priorities_decrease_and_close_up_at_swapoff() {
        let mut si = devices(&[(64, None, false), (64, None, false), (64, Some(7), false)]);
        let prios: Vec<i32> = si.devices.iter().map(|d| d.prio).collect();
        assert_eq!(prios, [-2, -3, 7]);
        assert_eq!(si.pages, 3 * 63);
        assert_eq!(si.get_swap_page(0), Some(si.devices[2].base + 1));
        si.swapoff_begin(0).unwrap();
        assert_eq!(si.devices[1].prio, -2);
        assert_eq!(si.pages, 2 * 63);
        assert_eq!(si.swapoff_begin(0), Err("EINVAL"));
        assert_eq!(si.swapon(1), Err("EBUSY"));
        si.swapon(0).unwrap();
        assert_eq!(si.devices[0].prio, -3);
    }
}
