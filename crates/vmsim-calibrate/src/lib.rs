//! Microbenchmarks of the running kernel's per-operation costs (`vmsim calibrate`).
//!
//! Each function times one operation many times on this machine and returns nanoseconds
//! per operation, for one repetition; `python/vmsim/calibrate.py` repeats them and turns
//! them into a cost profile (docs/cost-model.md says how each figure is measured).
//! CPU time is read from CLOCK_THREAD_CPUTIME_ID or CLOCK_PROCESS_CPUTIME_ID (the
//! scheduler's exact `sum_exec_runtime`, so time spent preempted is not counted); wall
//! time from CLOCK_MONOTONIC where two tasks take part. Every function undoes what it
//! set up (mappings, files, CPU affinity, child processes) before it returns, errors
//! included.

use std::ffi::CString;
use std::io;

/// A failed measurement: one line naming the system call and its error.
pub type Result<T> = std::result::Result<T, String>;

/// 4 KiB, the page every figure is per.
pub const PAGE: usize = 4096;

fn os_error(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Reads a clock [ns].
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; the clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread [ns].
fn thread_cpu() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Wall-clock time [ns].
fn wall() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// An anonymous private mapping, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of anonymous memory without huge pages (MADV_NOHUGEPAGE), so that
    /// every fault is of one 4 KiB page; with `populate`, writes every page first.
    fn new(len: usize, populate: bool) -> Result<Mapping> {
        // SAFETY: a fresh anonymous mapping; the pointer is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let m = Mapping {
            ptr: ptr as *mut u8,
            len,
        };
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        if populate {
            for i in (0..len).step_by(PAGE) {
                // SAFETY: i < len, inside the mapping.
                unsafe { m.ptr.add(i).write_volatile(1) };
            }
        }
        Ok(m)
    }

    fn pages(&self) -> usize {
        self.len / PAGE
    }

    fn page(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.pages());
        // SAFETY: i is a page index inside the mapping.
        unsafe { self.ptr.add(i * PAGE) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in new().
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

fn pages_of(bytes: usize) -> Result<usize> {
    let n = bytes / PAGE;
    if n == 0 {
        return Err(format!("{bytes} bytes: less than one page"));
    }
    Ok(n)
}

/// The cost of reading the thread CPU clock twice [ns], subtracted where a figure is
/// timed in small batches.
pub fn clock_overhead(iters: usize) -> f64 {
    let t0 = thread_cpu();
    for _ in 0..iters {
        std::hint::black_box(thread_cpu());
    }
    (thread_cpu() - t0) as f64 / iters.max(1) as f64
}

/// A system call that does almost nothing in the kernel: `syscall(SYS_getppid)` [ns each]
/// (entry_SYSCALL_64, dispatch, the return to user space with this machine's mitigations).
pub fn syscall(iters: usize) -> f64 {
    let t0 = thread_cpu();
    for _ in 0..iters {
        // SAFETY: getppid has no arguments and cannot fail.
        std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    (thread_cpu() - t0) as f64 / iters.max(1) as f64
}

/// The page indices 0..n in an order that defeats the prefetchers (a fixed xorshift shuffle).
fn shuffled(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// One read of an already-mapped page, pages in random order [ns each]: a cache and TLB
/// miss, what `cost.touch_page` stands for. With `sequential`, in address order instead.
pub fn touch(bytes: usize, sequential: bool) -> Result<f64> {
    let n = pages_of(bytes)?;
    let m = Mapping::new(n * PAGE, true)?;
    let order: Vec<usize> = if sequential {
        (0..n).collect()
    } else {
        shuffled(n)
    };
    let t0 = thread_cpu();
    let mut sum = 0u8;
    for &i in &order {
        // SAFETY: i < n, a populated page of the mapping.
        sum = sum.wrapping_add(unsafe { m.page(i).add(i % 64 * 64).read_volatile() });
    }
    let dt = thread_cpu() - t0;
    std::hint::black_box(sum);
    Ok(dt as f64 / n as f64)
}

/// Zeroing one 4 KiB page of a buffer larger than the caches [ns each] (memset, which
/// glibc does with `rep stosb` at this size as the kernel's clear_page_erms does).
pub fn clear(bytes: usize) -> Result<f64> {
    let n = pages_of(bytes)?;
    let m = Mapping::new(n * PAGE, true)?;
    let t0 = thread_cpu();
    for i in 0..n {
        // SAFETY: a whole page inside the mapping.
        unsafe { std::ptr::write_bytes(std::hint::black_box(m.page(i)), 0, PAGE) };
    }
    let dt = thread_cpu() - t0;
    Ok(dt as f64 / n as f64)
}

/// Copying one 4 KiB page between two buffers larger than the caches [ns each] (memcpy,
/// as copy_page and the page cache's copy_page_to_iter/copy_page_from_iter do).
pub fn copy(bytes: usize) -> Result<f64> {
    let n = pages_of(bytes)?;
    let src = Mapping::new(n * PAGE, true)?;
    let dst = Mapping::new(n * PAGE, true)?;
    let t0 = thread_cpu();
    for i in 0..n {
        // SAFETY: whole pages of two distinct mappings.
        unsafe {
            std::ptr::copy_nonoverlapping(src.page(i), std::hint::black_box(dst.page(i)), PAGE)
        };
    }
    let dt = thread_cpu() - t0;
    Ok(dt as f64 / n as f64)
}

/// First touch of each page of a fresh anonymous mapping [ns each]: with `write`, a
/// write fault (do_anonymous_page: allocate, zero, charge, add to the LRU, map); without,
/// a read fault, which maps the shared zero page (no allocation, no zeroing).
pub fn fault(bytes: usize, write: bool) -> Result<f64> {
    let n = pages_of(bytes)?;
    let m = Mapping::new(n * PAGE, false)?;
    let t0 = thread_cpu();
    let mut sum = 0u8;
    for i in 0..n {
        // SAFETY: a page of the mapping.
        unsafe {
            if write {
                m.page(i).write_volatile(1);
            } else {
                sum = sum.wrapping_add(m.page(i).read_volatile());
            }
        }
    }
    let dt = thread_cpu() - t0;
    std::hint::black_box(sum);
    Ok(dt as f64 / n as f64)
}

/// `rounds` times: maps `bytes` of anonymous memory, write-faults each page, unmaps it
/// [ns a page, fault and unmap]. A small mapping recycles its pages through the per-CPU
/// lists (free_unref_folios puts them there, rmqueue_pcplist takes them back) without
/// reaching the buddy lists; a large one refills from and drains to them.
pub fn fault_cycles(bytes: usize, rounds: usize) -> Result<f64> {
    let n = pages_of(bytes)?;
    let t0 = thread_cpu();
    for _ in 0..rounds {
        let m = Mapping::new(n * PAGE, true)?;
        drop(m);
    }
    let dt = thread_cpu() - t0;
    Ok(dt as f64 / (n * rounds.max(1)) as f64)
}

/// The pages on this CPU's per-CPU free lists, all zones (the `count:` lines of
/// /proc/zoneinfo under `cpu: N`).
fn pcp_count(cpu: usize) -> Result<u64> {
    let text =
        std::fs::read_to_string("/proc/zoneinfo").map_err(|e| format!("/proc/zoneinfo: {e}"))?;
    Ok(pcp_count_in(&text, cpu))
}

/// The `count:` lines under `cpu: N` of a /proc/zoneinfo text, summed over its zones
/// (zoneinfo_show_print's pagesets).
fn pcp_count_in(text: &str, cpu: usize) -> u64 {
    let (mut here, mut sum) = (false, 0u64);
    for line in text.lines() {
        let line = line.trim();
        if let Some(c) = line.strip_prefix("cpu:") {
            here = c.trim().parse::<usize>().ok() == Some(cpu);
        } else if let (true, Some(n)) = (here, line.strip_prefix("count:")) {
            sum += n.trim().parse::<u64>().unwrap_or(0);
            here = false;
        } else if line.starts_with("Node") {
            here = false;
        }
    }
    sum
}

/// Write-faults every page of a fresh `bytes` anonymous mapping, then unmaps it, and
/// reads this CPU's per-CPU list count before, between and after: the pages the faults
/// took from the buddy lists (rmqueue_bulk) and the unmap gave back to them
/// (free_pcppages_bulk) follow from the counts, as the kernel keeps them.
pub struct PcpCycle {
    pub pages: u64,
    pub fault_ns: f64,
    pub unmap_ns: f64,
    /// Pages on this CPU's lists before the faults, after them, after the unmap.
    pub pcp: [u64; 3],
}

/// Runs a [`PcpCycle`] on the calling thread's CPU (pin it first).
pub fn pcp_cycle(bytes: usize) -> Result<PcpCycle> {
    let n = pages_of(bytes)?;
    // SAFETY: no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return Err(os_error("sched_getcpu"));
    }
    let cpu = cpu as usize;
    let m = Mapping::new(n * PAGE, false)?;
    let p0 = pcp_count(cpu)?;
    let t0 = thread_cpu();
    for i in 0..n {
        // SAFETY: a page of the mapping.
        unsafe { m.page(i).write_volatile(1) };
    }
    let t1 = thread_cpu();
    let p1 = pcp_count(cpu)?;
    let t2 = thread_cpu();
    drop(m);
    let t3 = thread_cpu();
    let p2 = pcp_count(cpu)?;
    Ok(PcpCycle {
        pages: n as u64,
        fault_ns: (t1 - t0) as f64 / n as f64,
        unmap_ns: (t3 - t2) as f64 / n as f64,
        pcp: [p0, p1, p2],
    })
}

/// `count` times: creates an empty file in `dir` (open O_CREAT|O_EXCL), closes and
/// unlinks it [ns each]: a dentry, an inode, a struct file and the filesystem's own
/// objects allocated from and freed to their slab caches.
pub fn create_unlink(dir: &str, count: usize) -> Result<f64> {
    let pid = std::process::id();
    let t0 = thread_cpu();
    for i in 0..count {
        let name = path_in(dir, &format!("vmsim-calibrate-{pid}-{i}"))?;
        create_empty(&name)?;
        // SAFETY: our path.
        unsafe { libc::unlink(name.as_ptr()) };
    }
    let dt = thread_cpu() - t0;
    Ok(dt as f64 / count.max(1) as f64)
}

/// `dir/name` as a C path.
fn path_in(dir: &str, name: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(format!("{dir}/{name}"))
        .map_err(|_| format!("{dir}: a NUL byte in the directory"))
}

/// Creates the empty file `name` (open O_CREAT|O_EXCL) and closes it.
fn create_empty(name: &std::ffi::CStr) -> Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(os_error("open"));
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    Ok(())
}

/// What [`recently_deleted`] measured: thread CPU time per empty file created [ns],
/// before and after `deleted` files of the same directory were unlinked.
#[derive(Debug, Clone, Copy)]
pub struct RecentlyDeleted {
    /// Per create, the directory's group holding only live inodes below the new ones.
    pub before_ns: f64,
    /// Per create, `deleted` free inodes deleted a moment ago below the new ones.
    pub after_ns: f64,
    /// Free inodes deleted between the two.
    pub deleted: usize,
}

/// Creates (O_CREAT|O_EXCL, then close) `count` empty files in `dir` and returns the
/// thread CPU time per file [ns]; names are `{prefix}{i}`.
fn create_files(dir: &str, prefix: &str, count: usize) -> Result<f64> {
    let t0 = thread_cpu();
    for i in 0..count {
        create_empty(&path_in(dir, &format!("{prefix}{i}"))?)?;
    }
    Ok((thread_cpu() - t0) as f64 / count.max(1) as f64)
}

/// Unlinks `{dir}/{prefix}{i}` for i below `count`.
fn unlink_files(dir: &str, prefix: &str, count: usize) -> Result<()> {
    for i in 0..count {
        let name = path_in(dir, &format!("{prefix}{i}"))?;
        // SAFETY: a NUL-terminated path of ours.
        if unsafe { libc::unlink(name.as_ptr()) } != 0 {
            return Err(os_error("unlink"));
        }
    }
    Ok(())
}

/// `count` empty files created in `dir` (open O_CREAT|O_EXCL, then close) [ns each,
/// thread CPU time]; the files are left for the caller to remove.
pub fn create_close(dir: &str, count: usize) -> Result<f64> {
    create_files(dir, "c", count)
}

/// ext4 without a journal passing over recently deleted inodes (find_inode_bit →
/// recently_deleted): in the empty directory `dir`, creates `deleted` files (the group's
/// low free inodes), times `count` creates, unlinks the first `deleted`, waits 1.1 s (an
/// inode deleted in the current second is not "recent"), and times `count` more creates.
/// Each create of the second batch looks at the `deleted` free inodes below the fresh
/// ones besides whatever the first batch's looked at. The `2 × count` files made are left
/// in `dir` (deleting them here would put them in the way of the next repetition); on
/// an error, whatever was made is removed.
pub fn recently_deleted(dir: &str, deleted: usize, count: usize) -> Result<RecentlyDeleted> {
    let run = || -> Result<RecentlyDeleted> {
        create_files(dir, "old", deleted)?;
        let before_ns = create_files(dir, "a", count)?;
        unlink_files(dir, "old", deleted)?;
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let after_ns = create_files(dir, "b", count)?;
        Ok(RecentlyDeleted {
            before_ns,
            after_ns,
            deleted,
        })
    };
    let out = run();
    if out.is_err() {
        for prefix in ["old", "a", "b"] {
            for i in 0..deleted.max(count) {
                if let Ok(name) = path_in(dir, &format!("{prefix}{i}")) {
                    // SAFETY: a NUL-terminated path of ours; a missing file is fine.
                    unsafe { libc::unlink(name.as_ptr()) };
                }
            }
        }
    }
    out
}

/// munmap of a populated anonymous mapping, per page [ns each] (zap_pte_range,
/// the rmap and LRU removal, the uncharge, free_unref_folios).
pub fn unmap(bytes: usize) -> Result<f64> {
    let n = pages_of(bytes)?;
    let m = Mapping::new(n * PAGE, true)?;
    let t0 = thread_cpu();
    drop(m);
    let dt = thread_cpu() - t0;
    Ok(dt as f64 / n as f64)
}

/// Two file descriptors closed when dropped.
struct Fds([libc::c_int; 2]);

impl Drop for Fds {
    fn drop(&mut self) {
        for fd in self.0 {
            if fd >= 0 {
                // SAFETY: our own descriptors.
                unsafe { libc::close(fd) };
            }
        }
    }
}

fn pipe() -> Result<Fds> {
    let mut fds = [-1; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(os_error("pipe"));
    }
    Ok(Fds(fds))
}

fn write1(fd: libc::c_int, b: &[u8]) -> bool {
    // SAFETY: b is a valid buffer.
    unsafe { libc::write(fd, b.as_ptr() as *const libc::c_void, b.len()) == b.len() as isize }
}

fn read1(fd: libc::c_int, b: &mut [u8]) -> bool {
    // SAFETY: b is a valid buffer.
    unsafe { libc::read(fd, b.as_mut_ptr() as *mut libc::c_void, b.len()) == b.len() as isize }
}

/// A write(2) of one byte to a pipe and its read(2) back, in one task with nobody to wake
/// [ns per pair]: the system-call part of a ping-pong round trip.
pub fn pipe_pair(iters: usize) -> Result<f64> {
    let p = pipe()?;
    let mut b = [0u8; 1];
    let t0 = thread_cpu();
    for _ in 0..iters {
        if !write1(p.0[1], &b) || !read1(p.0[0], &mut b) {
            return Err(os_error("pipe write/read"));
        }
    }
    Ok((thread_cpu() - t0) as f64 / iters.max(1) as f64)
}

/// The calling thread's CPU affinity, restored when dropped.
struct Affinity(libc::cpu_set_t);

impl Affinity {
    /// Pins the calling thread to `cpu`, keeping the mask it had.
    fn pin(cpu: usize) -> Result<Affinity> {
        // SAFETY: cpu_set_t is plain data; the calls get valid pointers and sizes.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) != 0 {
                return Err(os_error("sched_getaffinity"));
            }
            pin_to(cpu)?;
            Ok(Affinity(old))
        }
    }
}

fn pin_to(cpu: usize) -> Result<()> {
    // SAFETY: as in Affinity::pin.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(os_error(&format!("sched_setaffinity to CPU {cpu}")));
        }
    }
    Ok(())
}

impl Drop for Affinity {
    fn drop(&mut self) {
        // SAFETY: restores the mask read in pin().
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
    }
}

/// Waits for a child and says whether it exited with status 0.
fn reap(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: pid is our child.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// A round trip of one byte between two processes pinned to the same CPU through two
/// pipes [ns each]: two context switches (try_to_wake_up, schedule, switch_mm) and two
/// write/read pairs.
pub fn ping_pong(iters: usize, cpu: usize) -> Result<f64> {
    let a = pipe()?;
    let b = pipe()?;
    let _pin = Affinity::pin(cpu)?;
    // SAFETY: the child only makes system calls and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        let mut buf = [0u8; 1];
        let ok = (0..iters + 100).all(|_| read1(a.0[0], &mut buf) && write1(b.0[1], &buf));
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut buf = [0u8; 1];
    let mut ok = (0..100).all(|_| write1(a.0[1], &buf) && read1(b.0[0], &mut buf));
    let t0 = wall();
    ok = ok && (0..iters).all(|_| write1(a.0[1], &buf) && read1(b.0[0], &mut buf));
    let dt = wall() - t0;
    drop(a);
    let reaped = reap(pid);
    if !ok || !reaped {
        return Err("ping-pong: the partner process failed".into());
    }
    Ok(dt as f64 / iters.max(1) as f64)
}

/// The parent's side of fork() [ns, median of `iters`], the child _exiting at once, with
/// `extra` bytes of populated anonymous memory mapped on top of what the process has, cut
/// into `vmas` mappings (every other page read-only, so that they do not merge) when
/// `vmas` > 1: copy_process, dup_mmap's copy of each mapping and of its page tables,
/// wake_up_new_task.
pub fn fork(iters: usize, extra: usize, vmas: usize) -> Result<f64> {
    let _m = if extra >= PAGE {
        let m = Mapping::new(extra / PAGE * PAGE, true)?;
        let step = (m.pages() / vmas.max(1)).max(1);
        if vmas > 1 {
            for i in (step..m.pages()).step_by(2 * step) {
                // SAFETY: whole pages inside the mapping.
                if unsafe {
                    libc::mprotect(m.page(i) as *mut libc::c_void, PAGE * step, libc::PROT_READ)
                } != 0
                {
                    return Err(os_error("mprotect"));
                }
            }
        }
        Some(m)
    } else {
        None
    };
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters.max(1) {
        let t0 = wall();
        // SAFETY: the child _exits at once.
        let pid = unsafe { libc::fork() };
        let dt = wall() - t0;
        if pid == 0 {
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            return Err(os_error("fork"));
        }
        if !reap(pid) {
            return Err("fork: the child did not exit cleanly".into());
        }
        times.push(dt);
    }
    times.sort_unstable();
    Ok(times[times.len() / 2] as f64)
}

extern "C" fn exit_at_once(_: *mut libc::c_void) -> libc::c_int {
    // SAFETY: ends the child task only; it shares the parent's memory and touches none of it.
    unsafe { libc::syscall(libc::SYS_exit, 0) };
    0
}

/// The parent's side of clone(CLONE_VM | SIGCHLD) [ns, median of `iters`], the child
/// exiting at once: copy_process and wake_up_new_task without dup_mmap, what a fork costs
/// before its memory is copied.
pub fn clone_vm(iters: usize) -> Result<f64> {
    let stack = Mapping::new(64 << 10, true)?;
    // SAFETY: the top of the mapping, 16-byte aligned.
    let top = unsafe { stack.ptr.add(stack.len) } as *mut libc::c_void;
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters.max(1) {
        let t0 = wall();
        // SAFETY: the child runs exit_at_once on its own stack and exits; the parent waits
        // for it before the stack is used again.
        let pid = unsafe {
            libc::clone(
                exit_at_once,
                top,
                libc::CLONE_VM | libc::SIGCHLD,
                std::ptr::null_mut(),
            )
        };
        let dt = wall() - t0;
        if pid < 0 {
            return Err(os_error("clone"));
        }
        if !reap(pid) {
            return Err("clone: the child did not exit cleanly".into());
        }
        times.push(dt);
    }
    times.sort_unstable();
    Ok(times[times.len() / 2] as f64)
}

/// What [`unix_messages`] measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnixMessages {
    /// CPU time of one write(2) of a message to an AF_UNIX stream socket [ns].
    pub send: f64,
    /// CPU time of one read(2) of a message from it [ns].
    pub recv: f64,
    /// User time per write(2) or read(2) [ns], from the thread's rusage split.
    pub user: f64,
}

fn rusage_thread() -> (u64, u64) {
    // SAFETY: ru is plain data.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        (us(ru.ru_utime) * 1000, us(ru.ru_stime) * 1000)
    }
}

/// Messages of `size` bytes written to and read from an AF_UNIX stream socket pair in
/// batches of 32 by one thread (nobody sleeps, so no wake-up is counted): the kernel side of
/// unix_stream_sendmsg and unix_stream_recvmsg, and the user side of each call.
pub fn unix_messages(iters: usize, size: usize) -> Result<UnixMessages> {
    const BATCH: usize = 32;
    let mut fds = [-1; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        return Err(os_error("socketpair"));
    }
    let s = Fds(fds);
    let mut buf = vec![7u8; size.max(1)];
    let clock = clock_overhead(1000);
    let batches = iters.div_ceil(BATCH).max(1);
    let (mut send, mut recv) = (0u64, 0u64);
    let (u0, s0) = rusage_thread();
    let t_all = thread_cpu();
    for _ in 0..batches {
        let t0 = thread_cpu();
        for _ in 0..BATCH {
            if !write1(s.0[0], &buf) {
                return Err(os_error("AF_UNIX write"));
            }
        }
        let t1 = thread_cpu();
        for _ in 0..BATCH {
            if !read1(s.0[1], &mut buf) {
                return Err(os_error("AF_UNIX read"));
            }
        }
        let t2 = thread_cpu();
        send += t1 - t0;
        recv += t2 - t1;
    }
    let total = (thread_cpu() - t_all) as f64;
    let (u1, s1) = rusage_thread();
    let calls = (2 * batches * BATCH) as f64;
    let n = (batches * BATCH) as f64;
    let ticks = (u1 - u0 + s1 - s0) as f64;
    let user_share = if ticks > 0.0 {
        (u1 - u0) as f64 / ticks
    } else {
        0.0
    };
    Ok(UnixMessages {
        send: (send as f64 - batches as f64 * clock).max(0.0) / n,
        recv: (recv as f64 - batches as f64 * clock).max(0.0) / n,
        user: user_share * total / calls,
    })
}

/// A file created in a directory, closed and unlinked when dropped.
struct TempFile {
    fd: libc::c_int,
    path: CString,
}

impl TempFile {
    fn create(dir: &str, tag: &str, flags: libc::c_int) -> Result<TempFile> {
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() };
        let path = format!("{}/.vmsim-calibrate-{tag}-{pid}", dir.trim_end_matches('/'));
        let c = CString::new(path.clone()).map_err(|_| format!("{path}: a NUL in the path"))?;
        // SAFETY: c is a valid C string.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC | flags,
                0o600,
            )
        };
        if fd < 0 {
            return Err(os_error(&format!("open {path}")));
        }
        Ok(TempFile { fd, path: c })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // SAFETY: our own descriptor and path.
        unsafe {
            libc::close(self.fd);
            libc::unlink(self.path.as_ptr());
        }
    }
}

fn pwrite_all(fd: libc::c_int, buf: *const u8, len: usize, off: usize) -> Result<()> {
    // SAFETY: buf points to len readable bytes.
    let r = unsafe { libc::pwrite(fd, buf as *const libc::c_void, len, off as libc::off_t) };
    if r != len as isize {
        return Err(os_error("pwrite"));
    }
    Ok(())
}

/// What [`page_cache`] measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageCache {
    /// A buffered write(2) of one new 4 KiB page at the end of a file [ns]: allocation,
    /// the page-cache insert and charge, the copy, dirtying (ext4's write_begin/write_end).
    pub write: f64,
    /// A pread(2) of one 4 KiB page already in the page cache [ns]: the lookup and the copy.
    pub read: f64,
}

/// Buffered writes of `bytes` to a new file in `dir`, `chunk` bytes (a multiple of 4 KiB)
/// a call, then preads of the same cached pages as large; per 4 KiB page. The file is
/// removed before returning.
pub fn page_cache(dir: &str, bytes: usize, chunk: usize) -> Result<PageCache> {
    let n = pages_of(bytes)?;
    let per = (chunk / PAGE).max(1);
    let calls = n.div_ceil(per);
    let len = per * PAGE;
    let f = TempFile::create(dir, "pagecache", 0)?;
    let mut buf = vec![0x5au8; len];
    let t0 = thread_cpu();
    for i in 0..calls {
        pwrite_all(f.fd, buf.as_ptr(), len, i * len)?;
    }
    let t1 = thread_cpu();
    for i in 0..calls {
        // SAFETY: buf has len bytes.
        let r = unsafe {
            libc::pread(
                f.fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                len,
                (i * len) as libc::off_t,
            )
        };
        if r != len as isize {
            return Err(os_error("pread"));
        }
    }
    let t2 = thread_cpu();
    // Drop the file's pages so that nothing of it outlives the measurement.
    // SAFETY: our own descriptor.
    unsafe { libc::posix_fadvise(f.fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    let pages = (calls * per) as f64;
    Ok(PageCache {
        write: (t1 - t0) as f64 / pages,
        read: (t2 - t1) as f64 / pages,
    })
}

/// CPU time of one 4 KiB O_DIRECT overwrite of an allocated block [ns each]: iomap, the
/// bio built and submitted (submit_bio), the completion; the wait for the disk is sleep,
/// not CPU time. The file in `dir` is removed before returning.
pub fn direct_write(dir: &str, count: usize) -> Result<f64> {
    let count = count.max(1);
    let f = TempFile::create(dir, "dio", 0)?;
    let buf = Mapping::new(PAGE, true)?;
    for i in 0..count {
        pwrite_all(f.fd, buf.ptr, PAGE, i * PAGE)?;
    }
    // SAFETY: our own descriptor.
    if unsafe { libc::fsync(f.fd) } != 0 {
        return Err(os_error("fsync"));
    }
    let c = f.path.clone();
    // SAFETY: c is the file's path.
    let dfd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_DIRECT | libc::O_CLOEXEC) };
    if dfd < 0 {
        return Err(os_error("open O_DIRECT"));
    }
    let d = Fds([dfd, -1]);
    let t0 = thread_cpu();
    for i in 0..count {
        pwrite_all(d.0[0], buf.ptr, PAGE, i * PAGE)?;
    }
    let dt = thread_cpu() - t0;
    // SAFETY: our own descriptor.
    unsafe { libc::posix_fadvise(f.fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(dt as f64 / count as f64)
}

/// What [`read_in_cgroup`] measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgroupRead {
    /// CPU time of the reading process [ns].
    pub cpu_ns: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Reads the file at `path` 4 KiB a pread with readahead off (POSIX_FADV_RANDOM, so the
/// page cache gets one order-0 folio a read) in a child process that first joins the
/// memory cgroup whose `cgroup.procs` is `procs`; returns the child's CPU time.
pub fn read_in_cgroup(path: &str, procs: Option<&str>) -> Result<CgroupRead> {
    let cpath = CString::new(path).map_err(|_| format!("{path}: a NUL in the path"))?;
    let cprocs = match procs {
        Some(p) => Some(CString::new(p).map_err(|_| format!("{p}: a NUL in the path"))?),
        None => None,
    };
    let out = pipe()?;
    // SAFETY: the child only makes system calls and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        // SAFETY: system calls on buffers of this frame; _exit at the end.
        unsafe {
            let fail = |code: i32| -> ! { libc::_exit(code) };
            if let Some(p) = &cprocs {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, b"0".as_ptr() as *const libc::c_void, 1) != 1 {
                    fail(3);
                }
                libc::close(fd);
            }
            let fd = libc::open(cpath.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                fail(4);
            }
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM);
            let mut buf = [0u8; PAGE];
            let t0 = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
            let mut total: u64 = 0;
            loop {
                let r = libc::pread(
                    fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    PAGE,
                    total as libc::off_t,
                );
                if r < 0 {
                    fail(5);
                }
                if r == 0 {
                    break;
                }
                total += r as u64;
            }
            let dt = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) - t0;
            let mut msg = [0u8; 16];
            msg[..8].copy_from_slice(&dt.to_le_bytes());
            msg[8..].copy_from_slice(&total.to_le_bytes());
            let ok = libc::write(out.0[1], msg.as_ptr() as *const libc::c_void, 16) == 16;
            libc::_exit(if ok { 0 } else { 6 });
        }
    }
    // The parent's copy of the write end is closed, so a child that dies early ends the read.
    let mut out = out;
    // SAFETY: our own descriptor, closed once (marked -1 for Fds::drop).
    unsafe { libc::close(out.0[1]) };
    out.0[1] = -1;
    let mut msg = [0u8; 16];
    let got = read1(out.0[0], &mut msg);
    let mut status = 0;
    // SAFETY: pid is our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    match code {
        0 if got => Ok(CgroupRead {
            cpu_ns: u64::from_le_bytes(msg[..8].try_into().unwrap_or([0; 8])),
            bytes: u64::from_le_bytes(msg[8..].try_into().unwrap_or([0; 8])),
        }),
        3 => Err(format!(
            "{}: cannot join the memory cgroup",
            procs.unwrap_or("")
        )),
        4 => Err(format!("{path}: cannot open")),
        5 => Err(format!("{path}: read failed")),
        _ => Err(format!("reading {path}: the child process failed ({code})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_positive_and_physical() {
        let sys = syscall(10_000);
        assert!(sys > 1.0 && sys < 100_000.0, "{sys}");
        let w = fault(4 << 20, true).unwrap();
        let r = fault(4 << 20, false).unwrap();
        assert!(r > 1.0 && w > r, "write {w} read {r}");
        assert!(clear(4 << 20).unwrap() > 1.0);
        assert!(copy(4 << 20).unwrap() > 1.0);
        assert!(touch(4 << 20, false).unwrap() > 0.1);
        assert!(unmap(4 << 20).unwrap() > 1.0);
    }

    #[test]
    fn per_cpu_list_counts_are_summed_over_zones_for_one_cpu() {
        // The layout of 6.18's /proc/zoneinfo (../shared/formats/proc-zoneinfo.txt).
        let text = "Node 0, zone      DMA\n  pagesets\n    cpu: 0\n              count:    3\n              high:     0\n  vm stats threshold: 4\n    cpu: 1\n              count:    5\n              high:     0\nNode 0, zone   Normal\n  pagesets\n    cpu: 0\n              count:    700\n              high:     7388\n    cpu: 1\n              count:    11\n              high:     7388\n";
        assert_eq!(pcp_count_in(text, 0), 703);
        assert_eq!(pcp_count_in(text, 1), 16);
        assert_eq!(pcp_count_in(text, 2), 0);
    }

    #[test]
    fn kernel_path_shapes_run() {
        assert!(fault_cycles(32 * PAGE, 10).unwrap() > 1.0);
        let c = pcp_cycle(16 << 20).unwrap();
        assert_eq!(c.pages, 4096);
        assert!(
            c.fault_ns > 1.0 && c.unmap_ns > 1.0,
            "{} {}",
            c.fault_ns,
            c.unmap_ns
        );
        let dir = std::env::temp_dir();
        assert!(create_unlink(dir.to_str().unwrap(), 50).unwrap() > 1.0);
        assert!(create_unlink("/no/such/dir", 1).is_err());
    }

    #[test]
    fn processes_and_sockets() {
        assert!(pipe_pair(1000).unwrap() > 1.0);
        let rt = ping_pong(1000, 0).unwrap();
        assert!(rt > 100.0, "{rt}");
        assert!(fork(5, 0, 1).unwrap() > 1000.0);
        assert!(fork(5, 1 << 20, 64).unwrap() > 1000.0);
        assert!(clone_vm(20).unwrap() > 100.0);
        let u = unix_messages(2000, 100).unwrap();
        assert!(u.send > 10.0 && u.recv > 10.0, "{u:?}");
    }

    #[test]
    fn files_are_removed() {
        let dir = std::env::temp_dir();
        let d = dir.to_str().unwrap();
        let pc = page_cache(d, 1 << 20, PAGE).unwrap();
        assert!(page_cache(d, 1 << 20, 64 << 10).unwrap().write > 1.0);
        assert!(pc.write > 10.0 && pc.read > 10.0, "{pc:?}");
        assert!(direct_write(d, 16).unwrap() > 10.0);
        let pid = std::process::id();
        let left = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-{pid}"))
            });
        assert!(!left, "a .vmsim-calibrate file was left in {d}");
    }

    #[test]
    fn reads_a_file_in_a_child() {
        let p = std::env::temp_dir().join(format!("vmsim-calib-read-{}", std::process::id()));
        std::fs::write(&p, vec![1u8; 256 << 10]).unwrap();
        let r = read_in_cgroup(p.to_str().unwrap(), None);
        std::fs::remove_file(&p).unwrap();
        let r = r.unwrap();
        assert_eq!(r.bytes, 256 << 10);
        assert!(r.cpu_ns > 0);
        let e = read_in_cgroup("/nonexistent/vmsim", None).unwrap_err();
        assert!(e.contains("cannot open"), "{e}");
    }
}
