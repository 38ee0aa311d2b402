//! AF_UNIX stream sockets (net/unix/af_unix.c), reduced to their memory and wake-ups.
//!
//! A message written with `unix_stream_sendmsg()` becomes one skb whose
//! `truesize` is charged to the sending socket's `sk_wmem_alloc` until the
//! reader consumes it (`sock_wfree`). The sender sleeps while
//! `sk_wmem_alloc >= sk_sndbuf` (`sock_alloc_send_pskb`), and is woken when
//! the reader brings it down to a quarter of `sk_sndbuf` (`unix_writable`,
//! `unix_write_space`); the reader sleeps on an empty queue and is woken by
//! every message (`sk_data_ready`).
//!
//! Simplification: skbs live in kmalloc and skbuff_head_cache slabs; here a
//! socket's queued skbs occupy `ceil(wmem / PAGE_SIZE)` unmovable slab pages,
//! allocated with GFP_KERNEL when the queue grows past a page boundary and
//! freed when it shrinks below one. The memory and its reclaim pressure are
//! the kernel's; the per-object slab layout is not modelled.

use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::GFP_KERNEL;
use crate::mm::page::{PageKind, Pfn, PAGE_SIZE};
use crate::mm::vmstat::NodeStat;

/// sizeof(struct sk_buff) rounded to its slab (skbuff_head_cache) [bytes].
pub const SKB_HEAD_SIZE: u64 = 256;
/// sizeof(struct skb_shared_info) at the end of every skb's data [bytes].
pub const SKB_SHARED_INFO: u64 = 320;

/// The memory one message of `datasize` bytes is charged for (SKB_TRUESIZE of its
/// kmalloc'd data: SKB_DATA_ALIGN(len) + shared info, rounded to its kmalloc size, plus the head).
pub fn skb_truesize(datasize: u64) -> u64 {
    let data = datasize.div_ceil(64) * 64 + SKB_SHARED_INFO;
    data.next_power_of_two().max(64) + SKB_HEAD_SIZE
}

/// One connected stream socket pair seen from the receiving end (struct unix_sock).
#[derive(Debug, Clone)]
pub struct UnixSock {
    /// Bytes charged by queued skbs (sk_wmem_alloc of the sending end) [bytes].
    pub wmem: u64,
    /// Send buffer limit (sk_sndbuf) [bytes].
    pub sndbuf: u64,
    /// Messages queued (sk_receive_queue length).
    pub queued: u64,
    /// Slab pages holding the queued skbs.
    pub pages: Vec<Pfn>,
    /// Wait queue of the reader (sk_sleep on the receiving end).
    pub reader_wq: usize,
    /// Wait queue of writers blocked on a full buffer (sk_sleep on the sending end).
    pub writer_wq: usize,
    /// A reader sleeps on `reader_wq`.
    pub reader_waiting: bool,
    /// Writers sleep on `writer_wq`.
    pub writers_waiting: bool,
}

impl UnixSock {
    /// A connected, empty socket (unix_stream_connect / socketpair).
    pub fn new(sndbuf: u64, reader_wq: usize, writer_wq: usize) -> Self {
        UnixSock {
            wmem: 0,
            sndbuf,
            queued: 0,
            pages: Vec::new(),
            reader_wq,
            writer_wq,
            reader_waiting: false,
            writers_waiting: false,
        }
    }
}

/// What a send did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Send {
    /// The message is queued.
    Sent,
    /// The buffer is full: the sender must sleep on the socket (it is marked waiting).
    Full,
    /// Allocating the skb was throttled in reclaim: sleep, then send again.
    Retry,
    /// The allocation failed or the sender was killed.
    Failed,
}

impl Kernel {
    /// Queues one message of `truesize` bytes on socket `s` for task `tid` (unix_stream_sendmsg).
    pub fn unix_stream_sendmsg(&mut self, tid: TaskId, s: usize, truesize: u64) -> Send {
        let sock = &self.sockets[s];
        if sock.wmem >= sock.sndbuf {
            // sock_alloc_send_pskb → sock_wait_for_wmem
            self.sockets[s].writers_waiting = true;
            return Send::Full;
        }
        let need = (sock.wmem + truesize).div_ceil(PAGE_SIZE) as usize;
        if need > sock.pages.len() {
            match self.alloc_pages(GFP_KERNEL, 0, tid) {
                AllocResult::Page(p) => {
                    let page = &mut self.mm.map[p as usize];
                    page.set_kind(PageKind::Slab);
                    page.owner =
                        crate::mm::slab::builtin_cache("skbuff_head_cache").unwrap_or(0) as u32;
                    let nid = self.mm.pfn_to_nid(p);
                    self.mm
                        .mod_node_page_state(nid, NodeStat::NR_SLAB_UNRECLAIMABLE, 1);
                    self.sockets[s].pages.push(p);
                }
                AllocResult::Retry => return Send::Retry,
                AllocResult::Failed | AllocResult::Killed => return Send::Failed,
            }
        }
        self.mm.cur.acc += self.mm.cost.unix_sendmsg;
        let sock = &mut self.sockets[s];
        sock.wmem += truesize;
        sock.queued += 1;
        if sock.reader_waiting {
            // other->sk_data_ready(other)
            sock.reader_waiting = false;
            let wq = sock.reader_wq;
            self.mm.cur.wake.push(wq);
        }
        Send::Sent
    }

    /// Takes up to `max` queued messages of `truesize` bytes from socket `s` (unix_stream_recvmsg);
    /// returns how many. With none queued the reader is marked waiting and must sleep.
    pub fn unix_stream_recvmsg(&mut self, s: usize, max: u64, truesize: u64, cpu: usize) -> u64 {
        let sock = &mut self.sockets[s];
        let n = sock.queued.min(max);
        if n == 0 {
            sock.reader_waiting = true;
            return 0;
        }
        sock.queued -= n;
        sock.wmem -= n * truesize;
        let keep = sock.wmem.div_ceil(PAGE_SIZE) as usize;
        let freed: Vec<Pfn> = if sock.pages.len() > keep {
            sock.pages.split_off(keep)
        } else {
            Vec::new()
        };
        let writable = sock.wmem << 2 <= sock.sndbuf;
        if writable && sock.writers_waiting {
            // sock_wfree → unix_write_space: wake the writers once unix_writable().
            sock.writers_waiting = false;
            let wq = sock.writer_wq;
            self.mm.cur.wake.push(wq);
        }
        self.mm.cur.acc += n * self.mm.cost.unix_recvmsg;
        for p in freed {
            let nid = self.mm.pfn_to_nid(p);
            self.mm
                .mod_node_page_state(nid, NodeStat::NR_SLAB_UNRECLAIMABLE, -1);
            self.mm.map[p as usize].set_kind(PageKind::Other);
            self.mm.free_pages(p, 0, cpu);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundred_byte_message_costs_a_kmalloc_512_and_a_head() {
        assert_eq!(skb_truesize(100), 768);
        assert_eq!(skb_truesize(1), 768);
        assert_eq!(skb_truesize(1000), 2048 + 256);
    }
}
