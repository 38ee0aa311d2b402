//! Block devices: request queue, bandwidth, latency and congestion.
