//! Networking, as far as memory management sees it: socket buffers.
//!
//! Only what the seed workloads need: AF_UNIX stream sockets
//! ([`af_unix`]), whose queued messages are unmovable kernel memory that
//! their senders allocate with GFP_KERNEL (and so enter direct reclaim).

pub mod af_unix;
