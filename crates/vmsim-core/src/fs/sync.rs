//! sync(2) (fs/sync.c).
//!
//! `ksys_sync()` wakes the flushers for every dirty page
//! (`wakeup_flusher_threads(WB_REASON_SYNC)`, WB_SYNC_NONE), then for the
//! superblock `sync_inodes_sb()` queues a WB_SYNC_ALL work of every dirty page,
//! waits for it (`wb_wait_for_completion`) and for every page still under
//! writeback (`wait_sb_inodes`); then `sync_fs_one_sb()` (ext4: `ext4_sync_fs`
//! commits the running jbd2 transaction and waits for the commit), and
//! `sync_bdevs()`: the block device's page cache — ext4's metadata, dirtied in
//! place by the commit — is written (`filemap_fdatawrite`) and waited for
//! (`filemap_fdatawait_keep_errors`).
//!
//! Simplified: one superblock and one disk; XFS's `sync_fs` forces its log,
//! which vmsim does not model, so on XFS (and on "bare") nothing is done there;
//! the wait is for every file write in flight, where the kernel waits only for
//! the pages it tagged when the sync began (a writer still dirtying pages during
//! the sync makes vmsim's wait longer).

use crate::kernel::Kernel;
use crate::mm::memory::BioKind;
use crate::mm::page_writeback::WB_REASON_SYNC;

/// How far a sync(2) call has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPhase {
    /// Not begun.
    Start,
    /// Waiting for the WB_SYNC_ALL work and the writes it started (sync_inodes_sb).
    Inodes,
    /// Waiting for the journal to commit this transaction (ext4_sync_fs).
    Journal(u64),
    /// Waiting for the block device's writes (sync_bdevs(true)).
    Bdevs,
}

/// What the task in sync(2) does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncWait {
    /// sync(2) returns.
    Done,
    /// Sleep on the sync wait queue until the flusher or the journal wakes it.
    Block,
    /// Sleep until this time (the disk's next completion) and look again [ns].
    SleepUntil(u64),
}

impl Kernel {
    /// Starts writing the block device's dirty pages: the metadata dirtied in place, by a
    /// journal commit or without a journal (sync_bdevs(false)).
    fn sync_bdevs(&mut self) {
        if let Some(ino) = self.buffers.bdev_ino {
            self.write_inode_pages(ino, u64::MAX);
        }
    }

    /// Whether a file write is in flight: a page-cache or journal write submitted and
    /// not yet completed (what folio_wait_writeback and jbd2's commit wait on).
    pub fn file_writes_in_flight(&self) -> bool {
        self.bios
            .iter()
            .any(|b| matches!(b, Some(BioKind::FileWrite(_))))
    }

    /// When a task waiting for file writes looks again: the disk's next completion.
    fn next_write_check(&self) -> SyncWait {
        let now = self.mm.clock();
        let at = self
            .disk
            .next_completion_at()
            .unwrap_or(now + 1_000_000)
            .max(now + 1);
        SyncWait::SleepUntil(at)
    }

    /// One step of sync(2) (ksys_sync): moves `phase` on as far as it can and says how
    /// the task waits for the rest.
    pub fn ksys_sync_step(&mut self, phase: &mut SyncPhase) -> SyncWait {
        loop {
            match *phase {
                SyncPhase::Start => {
                    self.wakeup_flusher_threads(0, WB_REASON_SYNC);
                    if !self.wb_queue_sync_all() {
                        // No flusher thread: the caller writes the dirty pages itself.
                        self.writeback_inodes(u64::MAX, None);
                    }
                    *phase = SyncPhase::Inodes;
                }
                SyncPhase::Inodes => {
                    if self.wb.sync_works > 0 {
                        return SyncWait::Block;
                    }
                    if self.file_writes_in_flight() {
                        return self.next_write_check();
                    }
                    // sync_fs_one_sb(): ext4_sync_fs commits the running transaction
                    // (without a journal it has none to commit).
                    *phase = if self.fs_is_ext4() && self.mm.kcfg.ext4_journal {
                        SyncPhase::Journal(self.jbd2_journal_start_commit())
                    } else {
                        self.sync_bdevs();
                        SyncPhase::Bdevs
                    };
                }
                SyncPhase::Journal(target) => {
                    if self.journal.commit_sequence < target {
                        return SyncWait::Block;
                    }
                    self.sync_bdevs();
                    *phase = SyncPhase::Bdevs;
                }
                SyncPhase::Bdevs => {
                    if self.file_writes_in_flight() {
                        return self.next_write_check();
                    }
                    return SyncWait::Done;
                }
            }
        }
    }
}
