//! Bindings of vmsim-calibrate's microbenchmarks (`vmsim calibrate`): each returns
//! nanoseconds per operation for one repetition, or raises OSError with one line.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use vmsim_calibrate as cal;

fn os(e: String) -> PyErr {
    PyOSError::new_err(e)
}

/// The figures one microbenchmark measures, by name [ns].
type Figures = BTreeMap<&'static str, f64>;

/// Runs the microbenchmark `name` with a size (`bytes`, or a count of operations) and,
/// for the file ones, a directory; `cpu` is the CPU of ping_pong, the number of
/// mappings of fork, the pages per call of page_cache and the rounds of fault_cycles. Releases the GIL while it measures.
#[pyfunction]
#[pyo3(signature = (name, size, path=None, cpu=0))]
pub fn calibrate_bench(
    py: Python<'_>,
    name: &str,
    size: usize,
    path: Option<String>,
    cpu: usize,
) -> PyResult<Figures> {
    let one = |k: &'static str, v: f64| BTreeMap::from([(k, v)]);
    let path = path.unwrap_or_default();
    let name = name.to_string();
    py.detach(move || -> PyResult<Figures> {
        Ok(match name.as_str() {
            "syscall" => one("ns", cal::syscall(size)),
            "clock" => one("ns", cal::clock_overhead(size)),
            "touch_random" => one("ns", cal::touch(size, false).map_err(os)?),
            "touch_seq" => one("ns", cal::touch(size, true).map_err(os)?),
            "clear" => one("ns", cal::clear(size).map_err(os)?),
            "copy" => one("ns", cal::copy(size).map_err(os)?),
            "fault_read" => one("ns", cal::fault(size, false).map_err(os)?),
            "fault_write" => one("ns", cal::fault(size, true).map_err(os)?),
            "unmap" => one("ns", cal::unmap(size).map_err(os)?),
            "fault_cycles" => one("ns", cal::fault_cycles(size, cpu.max(1)).map_err(os)?),
            "pcp_cycle" => {
                let c = cal::pcp_cycle(size).map_err(os)?;
                BTreeMap::from([
                    ("pages", c.pages as f64),
                    ("fault", c.fault_ns),
                    ("unmap", c.unmap_ns),
                    ("pcp_before", c.pcp[0] as f64),
                    ("pcp_faulted", c.pcp[1] as f64),
                    ("pcp_after", c.pcp[2] as f64),
                ])
            }
            "create_unlink" => one("ns", cal::create_unlink(&path, size).map_err(os)?),
            "create_close" => one("ns", cal::create_close(&path, size).map_err(os)?),
            "recently_deleted" => {
                let r = cal::recently_deleted(&path, size, 100).map_err(os)?;
                BTreeMap::from([
                    ("before_ns", r.before_ns),
                    ("after_ns", r.after_ns),
                    ("deleted", r.deleted as f64),
                ])
            }
            "pipe_pair" => one("ns", cal::pipe_pair(size).map_err(os)?),
            "ping_pong" => one("ns", cal::ping_pong(size, cpu).map_err(os)?),
            "clone_vm" => one("ns", cal::clone_vm(size).map_err(os)?),
            "fork" => one("ns", cal::fork(9, size, cpu.max(1)).map_err(os)?),
            "unix" => {
                let u = cal::unix_messages(size, 100).map_err(os)?;
                BTreeMap::from([("send", u.send), ("recv", u.recv), ("user", u.user)])
            }
            "page_cache" => {
                let p = cal::page_cache(&path, size, cpu.max(1) * cal::PAGE).map_err(os)?;
                BTreeMap::from([("write", p.write), ("read", p.read)])
            }
            "direct_write" => one("ns", cal::direct_write(&path, size).map_err(os)?),
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "no microbenchmark '{other}'"
                )))
            }
        })
    })
}

/// Reads `file` 4 KiB a pread, readahead off, in a child process that first joins the
/// memory cgroup whose `cgroup.procs` is `procs`; returns its CPU time and bytes read.
#[pyfunction]
#[pyo3(signature = (file, procs=None))]
pub fn calibrate_read_in_cgroup(
    py: Python<'_>,
    file: String,
    procs: Option<String>,
) -> PyResult<(u64, u64)> {
    py.detach(move || {
        cal::read_in_cgroup(&file, procs.as_deref())
            .map(|r| (r.cpu_ns, r.bytes))
            .map_err(os)
    })
}
