//! The kernel's migratetype fallback rules (mm/page_alloc.c, v6.15+), checked on constructed states.
//!
//! Most tests build a state in which the only free memory of the zone is
//! one chosen pageblock `P` with a chosen layout: every free page of the
//! machine is first allocated as MOVABLE blocks (ignoring watermarks), then
//! `P` is freed and re-populated. A request then has nothing of its own type
//! left and must go through `__rmqueue_claim()` / `__rmqueue_steal()`:
//!
//! * `fallbacks[]`: UNMOVABLE → RECLAIMABLE, MOVABLE; MOVABLE → RECLAIMABLE,
//!   UNMOVABLE; RECLAIMABLE → UNMOVABLE, MOVABLE.
//! * `should_try_claim_block()`: claiming is tried for fallback orders >=
//!   pageblock_order/2, and at every order for UNMOVABLE/RECLAIMABLE requests;
//!   small MOVABLE requests only steal.
//! * `try_to_claim_block()`: a block of order >= pageblock_order changes owner
//!   as a whole; below that the pageblock is claimed when `free + alike >=
//!   pageblock_nr_pages / 2`, where alike = movable pages for a MOVABLE
//!   request, the non-free non-movable pages for UNMOVABLE/RECLAIMABLE
//!   falling back to a MOVABLE block, and 0 between UNMOVABLE and RECLAIMABLE.
//! * mm_page_alloc_extfrag: one event per fallback; fragmenting =
//!   fallback_order < pageblock_order; change_ownership = the pageblock now
//!   has the requested type.

use vmsim_core::mm::gfp::alloc_flags::ALLOC_NO_WATERMARKS;
use vmsim_core::mm::gfp::{Gfp, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE};
use vmsim_core::mm::mmzone::{
    MigrateType, ZoneType, FALLBACKS, MAX_PAGE_ORDER, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER,
};
use vmsim_core::mm::page::{pg, Pfn};
use vmsim_core::mm::Mm;
use vmsim_core::Scenario;

use MigrateType::{Movable, Reclaimable, Unmovable};

fn boot_with(memory: &str, kernel: &str) -> Mm {
    let sc = Scenario::from_toml(&format!(
        "[machine]\nmemory=\"{memory}\"\ncpus=2\n[kernel]\n{kernel}\n"
    ))
    .unwrap();
    Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
}

/// 256 MiB: DMA and DMA32 only, so ALLOC_NOFRAGMENT never applies.
fn boot(grouping: bool) -> Mm {
    boot_with("256MiB", &format!("mobility_grouping={grouping}"))
}

fn gfp_of(mt: MigrateType) -> Gfp {
    match mt {
        Unmovable => GFP_KERNEL,
        Movable => GFP_HIGHUSER_MOVABLE,
        Reclaimable => GFP_KERNEL_RECLAIMABLE,
        _ => unreachable!(),
    }
}

/// get_page_from_freelist() on CPU 0 of node 0 ignoring watermarks, so a zone can be emptied.
fn alloc_nw(mm: &mut Mm, gfp: Gfp, order: usize) -> Option<Pfn> {
    let ac = mm.prepare_alloc_pages(gfp, 0, 0);
    mm.get_page_from_freelist(order, ALLOC_NO_WATERMARKS, &ac)
}

/// Allocates every free page of the machine as MOVABLE blocks of order <= pageblock_order.
fn fill_movable(mm: &mut Mm) -> Vec<(Pfn, usize)> {
    let mut held = Vec::new();
    for order in (0..=PAGEBLOCK_ORDER).rev() {
        while let Some(p) = alloc_nw(mm, GFP_HIGHUSER_MOVABLE, order) {
            held.push((p, order));
        }
    }
    assert_eq!(mm.nr_free_pages(), 0, "fill left free pages");
    assert_eq!(mm.nr_pcp_pages(), 0, "fill left pcp pages");
    assert_eq!(
        mm.frag.extfrag_events, 0,
        "movable fill of movable blocks falls back"
    );
    held
}

/// Frees the `nth` held order-9 block of ZONE_DMA32: afterwards it is the machine's only free memory.
fn free_pageblock(mm: &mut Mm, held: &mut Vec<(Pfn, usize)>, nth: usize) -> Pfn {
    let i = held
        .iter()
        .enumerate()
        .filter(|(_, &(p, o))| {
            o == PAGEBLOCK_ORDER && mm.zones[mm.page_zone(p)].zone_type == ZoneType::Dma32
        })
        .nth(nth)
        .map(|(i, _)| i)
        .expect("an order-9 block in DMA32");
    let (p, _) = held.swap_remove(i);
    mm.free_pages(p, PAGEBLOCK_ORDER, 0);
    p
}

/// A state whose only free memory is one pageblock `P` (pageblock type MOVABLE, one free order-9 block).
fn one_free_pageblock() -> (Mm, Vec<(Pfn, usize)>, Pfn) {
    let mut mm = boot(true);
    let mut held = fill_movable(&mut mm);
    let p = free_pageblock(&mut mm, &mut held, 3);
    assert_eq!(mm.nr_free_pages(), PAGEBLOCK_NR_PAGES);
    assert_eq!(mm.get_pageblock_migratetype(p), Movable);
    (mm, held, p)
}

/// Re-populates the free pageblock `p` with `gfp` blocks of `order`; returns them in pfn order.
fn populate(mm: &mut Mm, p: Pfn, gfp: Gfp, order: usize) -> Vec<Pfn> {
    let mut blocks = Vec::new();
    for _ in 0..(PAGEBLOCK_NR_PAGES >> order) {
        let b = alloc_nw(mm, gfp, order).expect("room in P");
        assert!(in_block(b, p), "block {b} outside pageblock {p}");
        blocks.push(b);
    }
    assert_eq!(mm.nr_free_pages(), 0);
    blocks.sort();
    blocks
}

fn in_block(pfn: Pfn, block: Pfn) -> bool {
    pfn >> PAGEBLOCK_ORDER == block >> PAGEBLOCK_ORDER
}

fn free_blocks(mm: &mut Mm, blocks: &[Pfn], order: usize) {
    for &b in blocks {
        mm.free_pages(b, order, 0);
    }
    mm.drain_all_pages();
}

fn free_of(mm: &Mm, p: Pfn, mt: MigrateType) -> u64 {
    mm.zones[mm.page_zone(p)].nr_free_mt[mt as usize]
}

/// (events, fragmenting, change_ownership, mixed, blocks_claimed)
fn frag(mm: &Mm) -> [u64; 5] {
    let f = &mm.frag;
    [
        f.extfrag_events,
        f.extfrag_fragmenting,
        f.extfrag_change_ownership,
        f.extfrag_mixed,
        f.blocks_claimed,
    ]
}

fn delta(before: [u64; 5], mm: &Mm) -> [u64; 5] {
    let now = frag(mm);
    std::array::from_fn(|i| now[i] - before[i])
}

/// A pageblock of type `owner` (claimed by an order-9 fallback), fully allocated as `order` blocks of `owner`.
fn owned_pageblock(owner: MigrateType, order: usize) -> (Mm, Pfn, Vec<Pfn>) {
    let (mut mm, _held, p) = one_free_pageblock();
    let before = frag(&mm);
    let blocks = populate(&mut mm, p, gfp_of(owner), order);
    assert_eq!(mm.get_pageblock_migratetype(p), owner);
    if owner != Movable {
        // The first request claimed the whole order-9 block: not fragmenting, ownership changed.
        assert_eq!(delta(before, &mm), [1, 0, 1, 0, 0]);
    }
    (mm, p, blocks)
}

#[test]
fn fallback_table_is_the_kernels() {
    assert_eq!(
        FALLBACKS,
        [
            [Reclaimable, Movable],   // MIGRATE_UNMOVABLE
            [Reclaimable, Unmovable], // MIGRATE_MOVABLE
            [Unmovable, Movable],     // MIGRATE_RECLAIMABLE
        ]
    );
}

/// With a free pageblock of each of the two other types, a request takes the first type of
/// fallbacks[] and leaves the second alone; with only the second, it takes that.
#[test]
fn fallback_order_is_followed() {
    let expected = [
        (Unmovable, Reclaimable, Movable),
        (Movable, Reclaimable, Unmovable),
        (Reclaimable, Unmovable, Movable),
    ];
    for (want, first, second) in expected {
        let mut mm = boot(true);
        let mut held = fill_movable(&mut mm);
        // Give each pageblock its type while it is the only free memory: an order-9 request
        // of that type claims it whole. Then free both.
        let p1 = free_pageblock(&mut mm, &mut held, 3);
        let a1 = alloc_nw(&mut mm, gfp_of(first), PAGEBLOCK_ORDER).unwrap();
        let p2 = free_pageblock(&mut mm, &mut held, 7);
        let a2 = alloc_nw(&mut mm, gfp_of(second), PAGEBLOCK_ORDER).unwrap();
        assert_eq!((a1, a2), (p1, p2));
        mm.free_pages(p1, PAGEBLOCK_ORDER, 0);
        mm.free_pages(p2, PAGEBLOCK_ORDER, 0);
        assert_eq!(mm.get_pageblock_migratetype(p2), second);
        // Types were set in order p1 then p2; p1 must have stayed `first`.
        assert_eq!(mm.get_pageblock_migratetype(p1), first);
        assert_eq!(free_of(&mm, p1, first), PAGEBLOCK_NR_PAGES);
        assert_eq!(free_of(&mm, p2, second), PAGEBLOCK_NR_PAGES);

        let got = alloc_nw(&mut mm, gfp_of(want), 2).unwrap();
        assert!(
            in_block(got, p1),
            "{want:?} should fall back to {first:?} first"
        );
        assert_eq!(mm.get_pageblock_migratetype(p1), want, "order-9 claim");
        assert_eq!(mm.get_pageblock_migratetype(p2), second);
        // Use up p1, then the next request must come from p2.
        while free_of(&mm, p1, want) > 0 {
            let b = alloc_nw(&mut mm, gfp_of(want), 2).unwrap();
            assert!(in_block(b, p1));
        }
        let got = alloc_nw(&mut mm, gfp_of(want), 2).unwrap();
        assert!(
            in_block(got, p2),
            "{want:?} should fall back to {second:?} next"
        );
        assert_eq!(mm.get_pageblock_migratetype(p2), want);
        mm.check_invariants().unwrap();
    }
}

#[test]
fn should_try_claim_block_rules() {
    let mm = boot(true);
    for order in 0..=MAX_PAGE_ORDER {
        assert_eq!(
            mm.should_try_claim_block(order, Movable),
            order >= PAGEBLOCK_ORDER / 2,
            "movable order {order}"
        );
        assert!(mm.should_try_claim_block(order, Unmovable));
        assert!(mm.should_try_claim_block(order, Reclaimable));
    }
    let off = boot(false);
    for order in 0..=MAX_PAGE_ORDER {
        assert!(
            off.should_try_claim_block(order, Movable),
            "grouping off: always claim"
        );
    }
    // find_suitable_fallback() reports "too small to claim" (-2) before looking at the lists.
    let zid = mm.zonelists[0][0];
    assert_eq!(mm.find_suitable_fallback(zid, 3, Movable, true), -2);
    assert_eq!(
        mm.find_suitable_fallback(zid, 4, Movable, true),
        -1,
        "no order-4 blocks at boot"
    );
    assert_eq!(
        mm.find_suitable_fallback(zid, MAX_PAGE_ORDER, Unmovable, true),
        Movable as i32
    );
    assert_eq!(
        mm.find_suitable_fallback(zid, MAX_PAGE_ORDER, Movable, false),
        -1
    );
}

/// A movable order-2 request whose only choice is a free order-3 block in an UNMOVABLE
/// (or RECLAIMABLE) pageblock steals it: the pageblock keeps its type even though half of
/// it is free (a claim would have succeeded), because order 3 < pageblock_order / 2.
#[test]
fn small_movable_request_steals_without_claiming() {
    for owner in [Unmovable, Reclaimable] {
        let (mut mm, p, blocks) = owned_pageblock(owner, 3);
        // Free every other order-3 block: 32 unmergeable free blocks, 256 pages.
        let freed: Vec<Pfn> = blocks.iter().copied().step_by(2).collect();
        free_blocks(&mut mm, &freed, 3);
        assert_eq!(free_of(&mm, p, owner), 256);
        assert_eq!(mm.zones[mm.page_zone(p)].free_area[3].nr_free, 32);

        let before = frag(&mm);
        let got = alloc_nw(&mut mm, GFP_HIGHUSER_MOVABLE, 2).unwrap();
        assert!(in_block(got, p));
        assert_eq!(
            mm.get_pageblock_migratetype(p),
            owner,
            "stolen, not claimed"
        );
        assert_eq!(
            mm.map[got as usize].mt, Movable as u8,
            "allocated as movable"
        );
        // One event: fragmenting, no change of ownership, mixed.
        assert_eq!(delta(before, &mm), [1, 1, 0, 1, 0]);
        // The other half of the stolen order-3 block stays on the owner's list.
        assert_eq!(free_of(&mm, p, owner), 252);
        assert_eq!(free_of(&mm, p, Movable), 0);
        mm.check_invariants().unwrap();

        // Order-0 requests go through the pcp list: rmqueue_bulk() steals a batch, one event each.
        let batch = mm.pcp[mm.page_zone(p) * mm.nr_cpus].batch as u64;
        let before = frag(&mm);
        let got = alloc_nw(&mut mm, GFP_HIGHUSER_MOVABLE, 0).unwrap();
        assert!(in_block(got, p));
        assert_eq!(mm.get_pageblock_migratetype(p), owner);
        assert_eq!(mm.nr_pcp_pages(), batch - 1);
        assert_eq!(delta(before, &mm), [batch, batch, 0, batch, 0]);
        mm.check_invariants().unwrap();
    }
}

/// The same layout one order up: fallback order 4 >= pageblock_order / 2, so a movable
/// request tries to claim, and 256 free of 512 is enough.
#[test]
fn movable_request_of_order_4_claims() {
    let (mut mm, p, blocks) = owned_pageblock(Unmovable, 4);
    let freed: Vec<Pfn> = blocks.iter().copied().step_by(2).collect();
    free_blocks(&mut mm, &freed, 4);
    assert_eq!(free_of(&mm, p, Unmovable), 256);
    let before = frag(&mm);
    let got = alloc_nw(&mut mm, GFP_HIGHUSER_MOVABLE, 4).unwrap();
    assert!(in_block(got, p));
    assert_eq!(mm.get_pageblock_migratetype(p), Movable, "claimed");
    // Fragmenting (order 4 < 9) but the block changed owner: not mixed.
    assert_eq!(delta(before, &mm), [1, 1, 1, 0, 1]);
    assert_eq!(free_of(&mm, p, Unmovable), 0, "every free block moved");
    assert_eq!(free_of(&mm, p, Movable), 240);
    mm.check_invariants().unwrap();
}

/// An unmovable request falling back to a MOVABLE pageblock whose free + alike pages are
/// half of it or more claims the whole pageblock; with fewer it only steals.
#[test]
fn unmovable_claims_movable_block_only_when_half_is_free() {
    for (nfree, claims) in [(38usize, true), (32, true), (31, false), (24, false)] {
        let (mut mm, p, blocks) = owned_pageblock(Movable, 3);
        free_blocks(&mut mm, &blocks[..nfree], 3);
        let free = 8 * nfree as u64;
        assert_eq!(free_of(&mm, p, Movable), free);
        let before = frag(&mm);
        let got = alloc_nw(&mut mm, GFP_KERNEL, 1).unwrap();
        assert!(in_block(got, p));
        assert_eq!(mm.map[got as usize].mt, Unmovable as u8);
        let d = delta(before, &mm);
        if claims {
            assert_eq!(
                mm.get_pageblock_migratetype(p),
                Unmovable,
                "{free} free: claim"
            );
            assert_eq!(d, [1, 1, 1, 0, 1], "{free} free");
            assert_eq!(free_of(&mm, p, Unmovable), free - 2);
            assert_eq!(free_of(&mm, p, Movable), 0);
        } else {
            assert_eq!(
                mm.get_pageblock_migratetype(p),
                Movable,
                "{free} free: steal"
            );
            assert_eq!(d, [1, 1, 0, 1, 0], "{free} free");
            assert_eq!(free_of(&mm, p, Movable), free - 2);
            assert_eq!(free_of(&mm, p, Unmovable), 0);
        }
        mm.check_invariants().unwrap();
    }
}

/// Non-free, non-movable pages of a MOVABLE pageblock count as "alike" for an unmovable
/// request: 240 free + 64 stolen unmovable pages >= 256 claims, 240 free alone does not.
#[test]
fn unmovable_pages_count_as_alike_in_a_movable_block() {
    for with_unmovable in [true, false] {
        let (mut mm, p, blocks) = owned_pageblock(Movable, 3);
        let mut rest: Vec<Pfn> = blocks.clone();
        if with_unmovable {
            // Free 8 separated order-3 blocks and let unmovable requests steal them back
            // (64 free + 0 alike < 256 each time).
            let holes: Vec<Pfn> = blocks.iter().copied().step_by(2).take(8).collect();
            rest.retain(|b| !holes.contains(b));
            free_blocks(&mut mm, &holes, 3);
            let before = frag(&mm);
            for _ in 0..8 {
                let got = alloc_nw(&mut mm, GFP_KERNEL, 3).unwrap();
                assert!(holes.contains(&got));
            }
            assert_eq!(delta(before, &mm), [8, 8, 0, 8, 0], "eight steals");
            assert_eq!(mm.get_pageblock_migratetype(p), Movable);
        }
        // Free 30 movable blocks: 240 free pages.
        free_blocks(&mut mm, &rest[..30], 3);
        assert_eq!(mm.nr_free_pages(), 240);
        let before = frag(&mm);
        let got = alloc_nw(&mut mm, GFP_KERNEL, 1).unwrap();
        assert!(in_block(got, p));
        if with_unmovable {
            assert_eq!(
                mm.get_pageblock_migratetype(p),
                Unmovable,
                "240 free + 64 alike"
            );
            assert_eq!(delta(before, &mm), [1, 1, 1, 0, 1]);
        } else {
            assert_eq!(
                mm.get_pageblock_migratetype(p),
                Movable,
                "240 free, 0 alike"
            );
            assert_eq!(delta(before, &mm), [1, 1, 0, 1, 0]);
        }
        mm.check_invariants().unwrap();
    }
}

/// Between UNMOVABLE and RECLAIMABLE nothing counts as alike: a reclaimable pageblock with
/// 240 free pages and 272 reclaimable ones is only stolen from; with 272 free it is claimed.
#[test]
fn unmovable_into_reclaimable_is_conservative() {
    for (nfree, claims) in [(30usize, false), (34, true)] {
        let (mut mm, p, blocks) = owned_pageblock(Reclaimable, 3);
        free_blocks(&mut mm, &blocks[..nfree], 3);
        let before = frag(&mm);
        let got = alloc_nw(&mut mm, GFP_KERNEL, 1).unwrap();
        assert!(in_block(got, p));
        let want = if claims { Unmovable } else { Reclaimable };
        assert_eq!(mm.get_pageblock_migratetype(p), want, "{nfree} blocks free");
        let d = delta(before, &mm);
        assert_eq!(d[..3], [1, 1, claims as u64]);
        mm.check_invariants().unwrap();
    }
}

/// A fallback from a block of order >= pageblock_order changes the type of every pageblock
/// it covers, whatever the request's order; the event is not fragmenting.
#[test]
fn pageblock_order_fallback_changes_the_whole_range() {
    // Order-0 unmovable request at boot: the first fallback is an order-10 MOVABLE block.
    let mut mm = boot(true);
    let before = frag(&mm);
    let (got, _) = mm.alloc_pages_fast(GFP_KERNEL, 0, 0, 0);
    let got = got.unwrap();
    let base = got & !((1 << MAX_PAGE_ORDER) - 1);
    assert_eq!(mm.get_pageblock_migratetype(base), Unmovable);
    assert_eq!(
        mm.get_pageblock_migratetype(base + PAGEBLOCK_NR_PAGES as Pfn),
        Unmovable
    );
    assert_eq!(delta(before, &mm), [1, 0, 1, 0, 0]);
    // rmqueue_bulk took a batch; the rest of the 1024 pages are free on UNMOVABLE lists.
    let batch = mm.pcp[mm.page_zone(got) * mm.nr_cpus].batch as u64;
    assert_eq!(free_of(&mm, got, Unmovable), 1024 - batch);
    let pageblocks_unmovable = mm
        .pageblock_mt
        .iter()
        .filter(|&&t| t == Unmovable as u8)
        .count();
    assert_eq!(pageblocks_unmovable, 2);
    mm.check_invariants().unwrap();

    // An order-10 UNMOVABLE free block taken by a movable order-9 request becomes MOVABLE.
    let mut mm = boot(true);
    let u = alloc_nw(&mut mm, GFP_KERNEL, MAX_PAGE_ORDER).unwrap();
    assert_eq!(mm.get_pageblock_migratetype(u), Unmovable);
    let _held = fill_movable_after_setup(&mut mm);
    mm.free_pages(u, MAX_PAGE_ORDER, 0);
    assert_eq!(mm.nr_free_pages(), 1024);
    assert_eq!(free_of(&mm, u, Unmovable), 1024);
    let before = frag(&mm);
    let got = alloc_nw(&mut mm, GFP_HIGHUSER_MOVABLE, PAGEBLOCK_ORDER).unwrap();
    assert!(got == u || got == u + PAGEBLOCK_NR_PAGES as Pfn);
    assert_eq!(mm.get_pageblock_migratetype(u), Movable);
    assert_eq!(
        mm.get_pageblock_migratetype(u + PAGEBLOCK_NR_PAGES as Pfn),
        Movable
    );
    assert_eq!(delta(before, &mm), [1, 0, 1, 0, 0]);
    assert_eq!(free_of(&mm, u, Movable), 512, "the other half, now movable");
    assert_eq!(free_of(&mm, u, Unmovable), 0);
    mm.check_invariants().unwrap();

    // Exactly pageblock order: a single pageblock changes owner.
    let (mut mm, _held, p) = one_free_pageblock();
    let before = frag(&mm);
    let got = alloc_nw(&mut mm, GFP_KERNEL_RECLAIMABLE, 0).unwrap();
    assert!(in_block(got, p));
    assert_eq!(mm.get_pageblock_migratetype(p), Reclaimable);
    assert_eq!(delta(before, &mm), [1, 0, 1, 0, 0]);
    mm.check_invariants().unwrap();
}

/// Like fill_movable() but after other allocations exist (fallback events are allowed).
fn fill_movable_after_setup(mm: &mut Mm) -> Vec<(Pfn, usize)> {
    let mut held = Vec::new();
    for order in (0..=PAGEBLOCK_ORDER).rev() {
        while let Some(p) = alloc_nw(mm, GFP_HIGHUSER_MOVABLE, order) {
            held.push((p, order));
        }
    }
    assert_eq!(mm.nr_free_pages() + mm.nr_pcp_pages(), 0);
    held
}

/// ALLOC_NOFRAGMENT (alloc_flags_nofragment): a Normal-zone request first refuses to fall
/// back below pageblock order and tries DMA32 instead, where it claims a whole pageblock;
/// only a second pass without the flag would steal. Disabled, it steals in Normal at once.
#[test]
fn nofragment_prefers_a_whole_pageblock_in_a_lower_zone() {
    for nofragment in [true, false] {
        let mut mm = boot_with("5GiB", &format!("alloc_nofragment={nofragment}"));
        let mut held = fill_movable(&mut mm);
        // One free pageblock in DMA32, one in Normal re-populated with movable order-3
        // blocks of which 8 are freed (64 free pages: never claimable).
        let pd = free_pageblock(&mut mm, &mut held, 5);
        let pn = {
            let i = held
                .iter()
                .position(|&(p, o)| {
                    o == PAGEBLOCK_ORDER && mm.zones[mm.page_zone(p)].zone_type == ZoneType::Normal
                })
                .unwrap();
            let (p, _) = held.swap_remove(i);
            mm.free_pages(p, PAGEBLOCK_ORDER, 0);
            p
        };
        // Re-populate Normal's pageblock (Normal comes first in the zonelist, so it is used
        // before DMA32 by a movable request).
        let mut pieces = Vec::new();
        for _ in 0..64 {
            let b = alloc_nw(&mut mm, GFP_HIGHUSER_MOVABLE, 3).unwrap();
            assert!(in_block(b, pn));
            pieces.push(b);
        }
        pieces.sort();
        let holes: Vec<Pfn> = pieces.iter().copied().step_by(2).take(8).collect();
        free_blocks(&mut mm, &holes, 3);
        assert_eq!(mm.nr_free_pages(), 512 + 64);

        let ac = mm.prepare_alloc_pages(GFP_KERNEL, 0, 0);
        let flags = ALLOC_NO_WATERMARKS | mm.alloc_flags_nofragment(&ac, GFP_KERNEL);
        let before = frag(&mm);
        let got = mm.get_page_from_freelist(1, flags, &ac).unwrap();
        if nofragment {
            assert!(in_block(got, pd), "NOFRAGMENT: claim a pageblock in DMA32");
            assert_eq!(mm.get_pageblock_migratetype(pd), Unmovable);
            assert_eq!(delta(before, &mm), [1, 0, 1, 0, 0]);
        } else {
            assert!(in_block(got, pn), "no NOFRAGMENT: steal in Normal");
            assert_eq!(mm.get_pageblock_migratetype(pd), Movable);
            assert_eq!(delta(before, &mm), [1, 1, 0, 1, 0]);
        }
        assert_eq!(mm.get_pageblock_migratetype(pn), Movable);
        mm.check_invariants().unwrap();
    }
}

/// Deterministic xorshift, so the workload is the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Pageblocks holding an unmovable page, and the fewest that could hold them all.
fn unmovable_spread(grouping: bool) -> (usize, usize) {
    let mut mm = boot_with("512MiB", &format!("mobility_grouping={grouping}"));
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut unmovable: Vec<Pfn> = Vec::new();
    let mut movable: Vec<Pfn> = Vec::new();
    for _ in 0..60_000 {
        let r = rng.next();
        let cpu = (r >> 32) as usize % 2;
        match r % 10 {
            0 => {
                if let (Some(p), _) = mm.alloc_pages_fast(GFP_KERNEL, 0, 0, cpu) {
                    unmovable.push(p);
                }
            }
            1..=6 => {
                if let (Some(p), _) = mm.alloc_pages_fast(GFP_HIGHUSER_MOVABLE, 0, 0, cpu) {
                    movable.push(p);
                }
            }
            _ => {
                if !movable.is_empty() {
                    let i = (r >> 16) as usize % movable.len();
                    let p = movable.swap_remove(i);
                    mm.free_pages(p, 0, cpu);
                }
            }
        }
    }
    mm.check_invariants().unwrap();
    for &p in &unmovable {
        assert!(mm.map[p as usize].test(pg::HEAD));
    }
    let mut blocks: Vec<Pfn> = unmovable.iter().map(|p| p >> PAGEBLOCK_ORDER).collect();
    blocks.sort();
    blocks.dedup();
    let min = unmovable.len().div_ceil(PAGEBLOCK_NR_PAGES as usize);
    assert!(
        unmovable.len() > 5000,
        "workload too small: {}",
        unmovable.len()
    );
    (blocks.len(), min)
}

/// Grouping by mobility keeps unmovable pages together; without it they spread over the
/// pageblocks the movable pages use.
#[test]
fn grouping_keeps_unmovable_pages_in_few_pageblocks() {
    let (grouped, min) = unmovable_spread(true);
    let (spread, min2) = unmovable_spread(false);
    assert_eq!(min, min2, "same workload");
    assert!(
        grouped <= min + min / 2 + 2,
        "with grouping, unmovable pages sit in {grouped} pageblocks (minimum {min})"
    );
    assert!(
        spread >= 3 * grouped,
        "without grouping {spread} pageblocks, with grouping {grouped}"
    );
}
