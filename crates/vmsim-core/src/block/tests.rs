//! Tests of the block device model against the kernel's rules and the seed 001 costs.

use super::*;

const MS: u64 = 1_000_000;
/// 512 KiB in pages.
const CHUNK: u32 = 128;
/// 512 KiB in sectors.
const CHUNK_SECTORS: u64 = 1024;

/// A disk whose 512 KiB transfer takes exactly 8 ms and whose seek takes 8 ms.
fn exact_disk(sync_priority: bool) -> BlockConfig {
    BlockConfig {
        name: "sdx".into(),
        read_bandwidth: 65_536_000,
        write_bandwidth: 65_536_000,
        latency: 8 * MS,
        sync_priority,
        ..BlockConfig::sata_2010()
    }
}

/// Sector far from everything else, so each request seeks.
fn random_sector(i: u64) -> u64 {
    1_000_000 + i * 10_000_000
}

fn drain(dev: &mut BlockDevice) -> Vec<Completion> {
    let mut out = Vec::new();
    while let Some(t) = dev.next_completion_at() {
        out.extend(dev.complete_until(t));
    }
    out
}

#[test]
fn congestion_thresholds_follow_blk_queue_congestion_threshold() {
    let dev = BlockDevice::new(BlockConfig::sata_2010());
    assert_eq!(dev.congestion_on_threshold(), 113);
    assert_eq!(dev.congestion_off_threshold(), 103);
    let th = |nr| {
        BlockConfig {
            nr_requests: nr,
            ..BlockConfig::sata_2010()
        }
        .congestion_thresholds()
    };
    assert_eq!(th(1), (1, 1));
    assert_eq!(th(4), (4, 3));
    assert_eq!(th(32), (29, 25));
    assert_eq!(th(256), (225, 207));
}

#[test]
fn sequential_writes_take_bytes_over_bandwidth_plus_one_latency() {
    let n = 10u64;
    let mut dev = BlockDevice::new(exact_disk(true));
    let mut last = 0;
    for i in 0..n {
        let r = dev.submit(0, Request::write(i * CHUNK_SECTORS, CHUNK, i, false));
        let Submitted::Queued { completes_at } = r else {
            panic!("queue full")
        };
        last = completes_at;
    }
    assert_eq!(last, 8 * MS + n * 8 * MS);

    // The 2010 preset: same shape, its own numbers.
    let cfg = BlockConfig::sata_2010();
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..n {
        dev.submit(0, Request::write(i * CHUNK_SECTORS, CHUNK, i, false));
    }
    let per_chunk = (512u64 * 1024 * 1_000_000_000).div_ceil(cfg.write_bandwidth);
    assert_eq!(
        dev.next_completion_at(),
        Some(cfg.latency + per_chunk),
        "first request seeks"
    );
    let done = drain(&mut dev);
    assert_eq!(done.len(), n as usize);
    assert_eq!(
        done.last().unwrap().completed_at,
        cfg.latency + n * per_chunk
    );
    // 5 MiB at 60 MB/s plus one seek: about 95 ms.
    let total = done.last().unwrap().completed_at;
    assert!((90 * MS..100 * MS).contains(&total), "{total}");
}

#[test]
fn random_requests_pay_latency_each_time() {
    let n = 10u64;
    let mut seq = BlockDevice::new(BlockConfig::sata_2010());
    let mut rnd = BlockDevice::new(BlockConfig::sata_2010());
    for i in 0..n {
        seq.submit(0, Request::read(i * 8, 1, i));
        rnd.submit(0, Request::read(random_sector(i), 1, i));
    }
    let cfg = BlockConfig::sata_2010();
    let xfer = cfg.service_time(Op::Read, 1, true);
    let seq_end = drain(&mut seq).last().unwrap().completed_at;
    let rnd_end = drain(&mut rnd).last().unwrap().completed_at;
    assert_eq!(seq_end, cfg.latency + n * xfer);
    assert_eq!(rnd_end, n * (cfg.latency + xfer));
    // A 4 KiB random read on the 2010 disk costs about 8 ms: ~125 IOPS.
    assert!(rnd_end / n > 8 * MS && rnd_end / n < 9 * MS);
}

#[test]
fn request_latency_runs_from_submission_and_overlaps_requests_in_flight() {
    // A virtual disk: every request waits out the hypervisor's round trip, but requests
    // in flight together wait it out at once; only their transfers take turns.
    let cfg = BlockConfig {
        latency: 0,
        request_latency: 40_000,
        ..BlockConfig::ssd()
    };
    let xfer = cfg.service_time(Op::Read, 1, true);
    let n = 10u64;
    let mut queued = BlockDevice::new(cfg.clone());
    for i in 0..n {
        queued.submit(0, Request::read(random_sector(i), 1, i));
    }
    let end = drain(&mut queued).last().unwrap().completed_at;
    assert_eq!(end, 40_000 + n * xfer);
    // One at a time (a synchronous reader), each pays the round trip in full.
    let mut one = BlockDevice::new(cfg.clone());
    let mut t = 0;
    for i in 0..n {
        let Submitted::Queued { completes_at } = one.submit(t, Request::read(i * 8, 1, i)) else {
            panic!("queue full")
        };
        assert_eq!(completes_at, t + 40_000 + xfer);
        t = completes_at;
    }
}

#[test]
fn sequential_after_idle_gap_does_not_seek() {
    let cfg = exact_disk(true);
    let mut dev = BlockDevice::new(cfg.clone());
    dev.submit(0, Request::write(0, CHUNK, 1, false));
    drain(&mut dev);
    let r = dev.submit(100 * MS, Request::write(CHUNK_SECTORS, CHUNK, 2, false));
    assert_eq!(
        r,
        Submitted::Queued {
            completes_at: 108 * MS
        }
    );
}

#[test]
fn full_queue_returns_first_completion_as_retry_time() {
    let cfg = BlockConfig::sata_2010();
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..128 {
        let r = dev.submit(0, Request::write(random_sector(i), 1, i, false));
        assert!(matches!(r, Submitted::Queued { .. }), "request {i}");
    }
    let first = cfg.service_time(Op::Write, 1, false);
    assert_eq!(
        dev.submit(5, Request::write(random_sector(200), 1, 200, false)),
        Submitted::Full { retry_at: first }
    );
    assert_eq!(dev.stats().async_full, 1);
    // Sync requests have their own 128 slots.
    assert!(matches!(
        dev.submit(5, Request::read(0, 1, 300)),
        Submitted::Queued { .. }
    ));
    // At the retry time a slot is free again.
    assert!(matches!(
        dev.submit(first, Request::write(random_sector(201), 1, 201, false)),
        Submitted::Queued { .. }
    ));
    assert_eq!(dev.in_flight(first, BlkRw::Async), 128);
}

#[test]
fn congestion_sets_at_113_and_clears_below_103() {
    let cfg = BlockConfig::sata_2010();
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..112 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    assert!(!dev.bdi_write_congested(0));
    assert_eq!(dev.congestion_clears_at(0, BlkRw::Async), None);
    dev.submit(0, Request::write(random_sector(112), 1, 112, false));
    assert!(dev.bdi_write_congested(0));
    assert!(!dev.bdi_read_congested(0), "classes are separate");
    assert_eq!(dev.stats().async_congested, 1);

    // 113 → 102 takes 11 completions.
    let each = cfg.service_time(Op::Write, 1, false);
    let clear = 11 * each;
    assert_eq!(dev.congestion_clears_at(0, BlkRw::Async), Some(clear));
    assert!(dev.is_congested(clear - 1, BlkRw::Async));
    assert_eq!(dev.in_flight(clear - 1, BlkRw::Async), 103);
    assert!(!dev.is_congested(clear, BlkRw::Async));
    assert_eq!(dev.in_flight(clear, BlkRw::Async), 102);

    // The stored state agrees once completions are collected.
    assert_eq!(dev.complete_until(clear - 1).len(), 10);
    assert!(dev.bdi_write_congested(clear - 1));
    assert_eq!(dev.complete_until(clear).len(), 1);
    assert!(!dev.bdi_write_congested(clear));

    // Hysteresis: back up to 112 is not congested, 113 is.
    for i in 0..10 {
        dev.submit(
            clear,
            Request::write(random_sector(500 + i), 1, 500 + i, false),
        );
    }
    assert_eq!(dev.in_flight(clear, BlkRw::Async), 112);
    assert!(!dev.bdi_write_congested(clear));
    dev.submit(clear, Request::write(random_sector(600), 1, 600, false));
    assert!(dev.bdi_write_congested(clear));
    assert_eq!(dev.stats().async_congested, 2);
}

#[test]
fn congested_flag_holds_between_the_thresholds_while_draining() {
    let mut dev = BlockDevice::new(BlockConfig::sata_2010());
    for i in 0..120 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    // 120 → 103 still congested after 17 completions; the 18th clears it.
    let ends: Vec<u64> = {
        let mut d = dev.clone();
        drain(&mut d).iter().map(|c| c.completed_at).collect()
    };
    assert!(dev.is_congested(ends[16], BlkRw::Async));
    assert!(!dev.is_congested(ends[17], BlkRw::Async));
    assert_eq!(dev.congestion_clears_at(0, BlkRw::Async), Some(ends[17]));
}

#[test]
fn congestion_wait_follows_the_seed_001_rule() {
    let cfg = BlockConfig::sata_2010();
    let timeout = 100 * MS; // HZ/10
    let each = cfg.service_time(Op::Write, 1, false);

    // Not congested: the full timeout.
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..50 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    assert_eq!(dev.congestion_wait(7, timeout), 7 + timeout);

    // Congested, clears (113 → 102) after 11 × ~8.07 ms ≈ 89 ms: wakes then.
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..113 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    assert_eq!(
        11 * each,
        dev.congestion_clears_at(0, BlkRw::Async).unwrap()
    );
    assert!(11 * each < timeout);
    assert_eq!(dev.congestion_wait(0, timeout), 11 * each);

    // Congested, clears (125 → 102) only after 23 completions ≈ 186 ms: the timeout.
    let mut dev = BlockDevice::new(cfg.clone());
    for i in 0..125 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    assert!(dev.bdi_write_congested(0));
    assert_eq!(dev.congestion_wait(0, timeout), timeout);
    // The sync class is not congested: a sync waiter sleeps the full timeout.
    assert_eq!(dev.congestion_wait_rw(0, BlkRw::Sync, timeout), timeout);

    // Over several devices the first to clear wakes the sleeper.
    let mut quick = BlockDevice::new(cfg.clone());
    for i in 0..113 {
        quick.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    let devs = vec![dev, quick];
    assert_eq!(
        congestion_wait_all(&devs, 0, BlkRw::Async, timeout),
        11 * each
    );
    assert_eq!(
        congestion_wait_all(&[], 3, BlkRw::Async, timeout),
        3 + timeout
    );
}

#[test]
fn congestion_wait_kernel_wakes_at_any_free_below_off() {
    let cfg = BlockConfig::sata_2010();
    let timeout = 100 * MS;
    let each = cfg.service_time(Op::Write, 1, false);
    let mut dev = BlockDevice::new(cfg);
    for i in 0..5 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    // Not congested, but the first freed async request wakes the sleeper.
    assert_eq!(dev.congestion_wait(0, timeout), timeout);
    assert_eq!(dev.next_clear_bdi_congested(0, BlkRw::Async), Some(each));
    assert_eq!(dev.congestion_wait_kernel(0, BlkRw::Async, timeout), each);
    // Reads complete on the sync class only.
    assert_eq!(dev.congestion_wait_kernel(0, BlkRw::Sync, timeout), timeout);
    // An idle device never wakes anyone.
    let idle = BlockDevice::new(BlockConfig::ssd());
    assert_eq!(
        idle.congestion_wait_kernel(1, BlkRw::Async, timeout),
        1 + timeout
    );
}

#[test]
fn large_requests_are_split_at_max_sectors_kb() {
    let mut dev = BlockDevice::new(exact_disk(true));
    assert_eq!(dev.pieces_for(256), 2);
    assert_eq!(dev.pieces_for(300), 3);
    let r = dev.submit(0, Request::write(0, 300, 9, false));
    // 300 pages: 8 ms seek + 300/128 × 8 ms = 26.75 ms.
    assert_eq!(
        r,
        Submitted::Queued {
            completes_at: 8 * MS + 18_750_000
        }
    );
    assert_eq!(dev.in_flight(0, BlkRw::Async), 3);
    assert_eq!(dev.projected_completion(9), Some(8 * MS + 18_750_000));
    let done = drain(&mut dev);
    let shape: Vec<(u32, u32, u64, bool)> = done
        .iter()
        .map(|c| (c.offset, c.pages, c.sector, c.last))
        .collect();
    assert_eq!(
        shape,
        vec![
            (0, 128, 0, false),
            (128, 128, 1024, false),
            (256, 44, 2048, true)
        ]
    );
    assert!(done.iter().all(|c| c.tag == 9));
    assert_eq!(dev.stats().splits, 2);
    assert_eq!(dev.stats().write_ios, 3);
    assert_eq!(dev.stats().write_sectors, 300 * 8);
}

#[test]
fn fifo_completes_in_submission_order_at_the_promised_times() {
    let mut dev = BlockDevice::new(exact_disk(false));
    let mut promised = Vec::new();
    for i in 0..40u64 {
        let req = if i % 3 == 0 {
            Request::read(random_sector(i), 4, i)
        } else {
            Request::write(random_sector(i), 8, i, i % 2 == 0)
        };
        match dev.submit(i * MS, req) {
            Submitted::Queued { completes_at } => promised.push((i, completes_at)),
            Submitted::Full { .. } | Submitted::Throttled { .. } => panic!("not full"),
        }
    }
    let done: Vec<(u64, u64)> = drain(&mut dev)
        .iter()
        .map(|c| (c.tag, c.completed_at))
        .collect();
    assert_eq!(done, promised);
}

#[test]
fn sync_request_waits_for_the_async_batch_then_goes_first() {
    let mut dev = BlockDevice::new(exact_disk(true));
    for i in 0..40 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    // At t=1 the first write is being served; async keeps the channel for 16.
    dev.submit(1, Request::read(random_sector(99), 1, 99));
    let order: Vec<u64> = drain(&mut dev).iter().map(|c| c.tag).collect();
    assert_eq!(order.iter().position(|&t| t == 99), Some(16));

    // Without sync priority the read is served after all 40 writes.
    let mut dev = BlockDevice::new(exact_disk(false));
    for i in 0..40 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    dev.submit(1, Request::read(random_sector(99), 1, 99));
    let order: Vec<u64> = drain(&mut dev).iter().map(|c| c.tag).collect();
    assert_eq!(order.last(), Some(&99));

    // A read arriving with the writes (same instant) is served first.
    let mut dev = BlockDevice::new(exact_disk(true));
    for i in 0..40 {
        dev.submit(0, Request::write(random_sector(i), 1, i, false));
    }
    dev.submit(0, Request::read(random_sector(99), 1, 99));
    assert_eq!(drain(&mut dev)[0].tag, 99);
}

#[test]
fn async_is_not_starved_by_a_stream_of_sync_requests() {
    let mut dev = BlockDevice::new(exact_disk(true));
    dev.submit(0, Request::write(random_sector(0), 1, 1000, false));
    for i in 0..60 {
        dev.submit(0, Request::read(random_sector(i + 1), 1, i));
    }
    let order: Vec<u64> = drain(&mut dev).iter().map(|c| c.tag).collect();
    // 32 sync requests in a row, then the waiting write.
    assert_eq!(order.iter().position(|&t| t == 1000), Some(32));
}

#[test]
fn a_later_sync_request_delays_queued_async_ones() {
    let mut dev = BlockDevice::new(exact_disk(true));
    let mut promised = 0;
    for i in 0..20 {
        if let Submitted::Queued { completes_at } =
            dev.submit(0, Request::write(random_sector(i), 1, i, false))
        {
            promised = completes_at;
        }
    }
    dev.submit(MS, Request::read(random_sector(50), 1, 50));
    let moved = dev.projected_completion(19).unwrap();
    assert!(moved > promised, "{moved} > {promised}");
    let done = drain(&mut dev);
    assert_eq!(done.last().unwrap().completed_at, moved);
}

#[test]
fn stats_match_diskstats_fields() {
    let mut dev = BlockDevice::new(exact_disk(true));
    dev.submit(0, Request::read(0, CHUNK, 1));
    dev.submit(0, Request::write(random_sector(1), CHUNK, 2, false));
    // read: 0..16 ms, write: 16..32 ms; idle; write 100..116 ms.
    dev.complete_until(50 * MS);
    dev.submit(100 * MS, Request::write(random_sector(2), CHUNK, 3, true));
    dev.complete_until(200 * MS);
    let s = dev.stats();
    assert_eq!(
        (s.read_ios, s.read_sectors, s.read_nsecs),
        (1, 1024, 16 * MS)
    );
    assert_eq!(
        (s.write_ios, s.write_sectors, s.write_nsecs),
        (2, 2048, 32 * MS + 16 * MS)
    );
    assert_eq!(s.io_ticks, 48 * MS);
    assert_eq!(s.time_in_queue, s.read_nsecs + s.write_nsecs);
    assert_eq!(s.max_in_flight, 2);
    assert_eq!(
        dev.diskstats(8, 0),
        "   8       0 sdx 1 0 1024 16 2 0 2048 48 0 48 64 0 0 0 0 0 0\n"
    );
}

/// A small deterministic generator for test workloads.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Runs a mixed workload the way the engine will: submit, then wake at the next completion.
fn run_mixed(cfg: BlockConfig, seed: u64) -> (Vec<Completion>, DiskStats, Vec<Submitted>) {
    let mut dev = BlockDevice::new(cfg);
    let mut rng = seed;
    let mut now = 0;
    let mut done = Vec::new();
    let mut answers = Vec::new();
    for tag in 0..2000u64 {
        now += xorshift(&mut rng) % (3 * MS);
        let r = xorshift(&mut rng);
        let pages = 1 + (r % 300) as u32;
        let sector = if r.is_multiple_of(4) {
            r % (1 << 30)
        } else {
            tag * 2400
        };
        let req = match r % 5 {
            0 => Request::read(sector, pages, tag),
            1 => Request::write(sector, pages, tag, true),
            _ => Request::write(sector, pages, tag, false),
        };
        answers.push(dev.submit(now, req));
        if let Some(t) = dev.next_completion_at() {
            if t <= now + MS {
                done.extend(dev.complete_until(t));
                now = t;
            }
        }
    }
    done.extend(drain(&mut dev));
    (done, dev.stats().clone(), answers)
}

#[test]
fn same_inputs_same_results() {
    for cfg in [
        BlockConfig::sata_2010(),
        exact_disk(false),
        BlockConfig::ssd(),
    ] {
        let a = run_mixed(cfg.clone(), 0x9e37_79b9_7f4a_7c15);
        let b = run_mixed(cfg, 0x9e37_79b9_7f4a_7c15);
        assert_eq!(a, b);
    }
}

#[test]
fn every_queued_request_completes_once_in_time_order() {
    for cfg in [BlockConfig::sata_2010(), exact_disk(false)] {
        let (done, stats, answers) = run_mixed(cfg.clone(), 12345);
        let mut last = 0;
        let mut pages = std::collections::BTreeMap::<u64, u32>::new();
        for c in &done {
            assert!(c.completed_at >= last, "completion order");
            assert!(c.started_at >= c.submitted_at);
            assert!(c.completed_at > c.started_at);
            last = c.completed_at;
            *pages.entry(c.tag).or_default() += c.pages;
        }
        let queued = answers
            .iter()
            .filter(|a| matches!(a, Submitted::Queued { .. }))
            .count();
        assert_eq!(pages.len(), queued);
        assert_eq!(done.iter().filter(|c| c.last).count(), queued);
        assert!(
            stats.async_full + stats.sync_full > 0,
            "workload fills the queue"
        );
        // Each class holds at most nr_requests - 1 plus the pieces of one split request (3).
        assert!(stats.max_in_flight <= 2 * (cfg.nr_requests + 2));
    }
}

#[test]
fn bad_config_is_one_clear_error() {
    let cfg = BlockConfig {
        write_bandwidth: 0,
        ..BlockConfig::sata_2010()
    };
    let e = BlockDevice::try_new(cfg).unwrap_err().to_string();
    assert_eq!(
        e,
        "scenario: block device sda: write_bandwidth must be above 0 bytes/s"
    );
}

#[test]
fn config_reads_from_toml_with_defaults() {
    let cfg: BlockConfig = toml::from_str("name = \"vda\"\nlatency = 100000").unwrap();
    assert_eq!(cfg.name, "vda");
    assert_eq!(cfg.latency, 100_000);
    assert_eq!(cfg.nr_requests, 128);
    assert!(toml::from_str::<BlockConfig>("bogus = 1").is_err());
}

#[test]
fn a_completion_retired_by_a_later_submission_is_still_handed_out() {
    // The first write ends at 16 ms; a second submitted at 20 ms retires it inside
    // submit(), so the next completion due is the second's, yet the first must still
    // come out of complete_until() (process_io checks has_completed() for it).
    let mut dev = BlockDevice::new(exact_disk(true));
    let Submitted::Queued { completes_at } = dev.submit(0, Request::write(0, CHUNK, 1, false))
    else {
        panic!("an empty queue takes the request");
    };
    assert_eq!(completes_at, 16 * MS);
    assert!(!dev.has_completed());
    dev.submit(20 * MS, Request::write(random_sector(1), CHUNK, 2, false));
    assert!(dev.has_completed());
    assert!(dev.next_completion_at().is_some_and(|t| t > 20 * MS));
    let done = dev.complete_until(20 * MS);
    assert_eq!(done.iter().map(|c| c.tag).collect::<Vec<_>>(), vec![1]);
    assert!(!dev.has_completed());
}

/// The exact disk serving its requests in flight at once (`service = "shared"`).
fn shared_disk() -> BlockConfig {
    BlockConfig {
        service: Service::Shared,
        ..exact_disk(false)
    }
}

#[test]
fn shared_service_completes_requests_in_flight_together() {
    // Two 512 KiB writes far apart (8 ms of seek and 8 of transfer each) submitted
    // together share the device and both end at 32 ms, where one channel ends the
    // first at 16 ms.
    let mut fifo = BlockDevice::new(exact_disk(false));
    let mut dev = BlockDevice::new(shared_disk());
    for d in [&mut fifo, &mut dev] {
        d.submit(0, Request::write(random_sector(1), CHUNK, 1, false));
        d.submit(0, Request::write(random_sector(2), CHUNK, 2, false));
    }
    assert_eq!(fifo.next_completion_at(), Some(16 * MS));
    assert_eq!(dev.next_completion_at(), Some(32 * MS));
    let done = drain(&mut dev);
    assert_eq!(done.len(), 2);
    assert!(done
        .iter()
        .all(|c| c.completed_at == 32 * MS && c.started_at == 0));
    // A request that continues the one before it needs no seek: 8 ms of work, done at
    // 16 ms while the other still has 8 ms left alone.
    let mut seq = BlockDevice::new(shared_disk());
    seq.submit(0, Request::write(random_sector(1), CHUNK, 1, false));
    seq.submit(
        0,
        Request::write(random_sector(1) + CHUNK_SECTORS, CHUNK, 2, false),
    );
    let done = drain(&mut seq);
    assert_eq!(
        done.iter()
            .map(|c| (c.tag, c.completed_at))
            .collect::<Vec<_>>(),
        vec![(2, 16 * MS), (1, 24 * MS)]
    );
}

#[test]
fn shared_service_slows_a_request_in_flight_when_another_arrives() {
    // A 512 KiB write alone ends at 16 ms (the idle device's head is nowhere, so even
    // sector 0 seeks). At 4 ms a second one arrives: the first has 12 ms of work left
    // and now gets half the device.
    let mut dev = BlockDevice::new(shared_disk());
    let Submitted::Queued { completes_at } = dev.submit(0, Request::write(0, CHUNK, 1, false))
    else {
        panic!("queue full")
    };
    assert_eq!(completes_at, 16 * MS);
    dev.submit(4 * MS, Request::write(random_sector(1), CHUNK, 2, false));
    // First: 12 ms left at half speed → 28 ms. Second: 16 ms of work (it seeks), 12 of
    // it done at half speed by 28 ms, the remaining 4 alone → 32 ms.
    assert_eq!(dev.projected_completion(1), Some(28 * MS));
    assert_eq!(dev.projected_completion(2), Some(32 * MS));
    let done = drain(&mut dev);
    assert_eq!(
        done.iter()
            .map(|c| (c.tag, c.completed_at))
            .collect::<Vec<_>>(),
        vec![(1, 28 * MS), (2, 32 * MS)]
    );
    assert_eq!(dev.stats().io_ticks, 32 * MS);
}

#[test]
fn writeback_throttling_holds_the_fifth_background_write_until_the_queue_drains() {
    // blk-wbt on a 128-deep queue with a write-back cache: background writeback may
    // have wb_background = 4 writes in flight, and a throttled writer is let in only
    // once all of them have completed (wbt_rqw_done with limit 0).
    let cfg = BlockConfig {
        wbt_lat_usec: 75_000,
        queue_depth: 128,
        write_cache: true,
        ..exact_disk(false)
    };
    let mut dev = BlockDevice::new(cfg);
    let bg = |i: u64| Request::write(i * CHUNK_SECTORS, CHUNK, i, false).wbt(WbtKind::Background);
    for i in 0..4 {
        assert!(matches!(dev.submit(0, bg(i)), Submitted::Queued { .. }));
    }
    let Submitted::Throttled { retry_at } = dev.submit(0, bg(4)) else {
        panic!("the fifth background write must be throttled")
    };
    // The four end at 16, 24, 32 and 40 ms; the writer wakes at the last.
    assert_eq!(retry_at, 40 * MS);
    // A read is not throttled, and a swap write has its own tokens.
    assert!(matches!(
        dev.submit(0, Request::read(random_sector(9), 1, 9)),
        Submitted::Queued { .. }
    ));
    let swap = Request::write(random_sector(10), 1, 10, false).wbt(WbtKind::Swap);
    assert!(matches!(dev.submit(0, swap), Submitted::Queued { .. }));
    // After three completions it is still held; after the fourth it goes in.
    dev.complete_until(32 * MS);
    assert!(matches!(
        dev.submit(32 * MS, bg(4)),
        Submitted::Throttled { .. }
    ));
    let last_bg = dev.projected_completion(3).unwrap();
    dev.complete_until(last_bg);
    assert!(matches!(
        dev.submit(last_bg, bg(4)),
        Submitted::Queued { .. }
    ));
    assert_eq!(dev.wbt().unwrap().inflight(), [1, 1]);
}
