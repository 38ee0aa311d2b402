//! Thin PyO3 bindings of vmsim-core: the Python package `vmsim` calls these.
//!
//! Results cross the boundary as JSON text, which the Python side parses once.

mod calibrate;
mod output;

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting live heap bytes so `bench` can measure bytes per frame.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE_BYTES.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE_BYTES.fetch_sub(l.size(), Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

create_exception!(
    _vmsim,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be run; the message is one line."
);

fn to_py(e: vmsim_core::Error) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

create_exception!(
    _vmsim,
    InvariantError,
    pyo3::exceptions::PyRuntimeError,
    "A kernel invariant broken during a run (check_invariants): a bug in vmsim; the message \
     names the invariant and the simulated time."
);

/// Runs a scenario given as TOML text; returns the result as JSON text.
///
/// `progress(now_ns, end_ns)` is called after every sample. Ctrl-C (any pending Python
/// signal whose handler raises) stops the run within a few thousand events and raises
/// KeyboardInterrupt; nothing is written. `events` lists trace event selectors (`vmscan`,
/// `kmem:mm_page_alloc`, `all`, comma-separated within an item); without it the default
/// events are traced. `max_wall` is a wall-clock budget [s]: when spent, the run ends
/// and the partial result says where (`cut`). `check_invariants` checks the kernel's
/// invariants at every sample and raises InvariantError at the first one broken.
/// `timeline_path` records the run's timeline (every task's changes of state, per-zone
/// counters; `vmsim run --perfetto`) and writes it there as JSON. Without `pageblocks`
/// the result's pageblock map (a walk of every pageblock) is left empty.
#[pyfunction]
#[pyo3(signature = (scenario, seed=None, progress=None, trace_path=None, trace_format="modern", events=None, max_wall=None, check_invariants=false, timeline_path=None, pageblocks=true))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    scenario: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
    trace_path: Option<std::path::PathBuf>,
    trace_format: &str,
    events: Option<Vec<String>>,
    max_wall: Option<f64>,
    check_invariants: bool,
    timeline_path: Option<std::path::PathBuf>,
    pageblocks: bool,
) -> PyResult<String> {
    let fmt = match trace_format {
        "modern" => vmsim_core::trace::TraceFormat::Modern,
        "legacy" => vmsim_core::trace::TraceFormat::Legacy,
        other => {
            return Err(ScenarioError::new_err(format!(
                "trace format '{other}': use modern or legacy"
            )))
        }
    };
    let max_wall = match max_wall {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(ScenarioError::new_err(format!(
                "max_wall {s}: a number of seconds above 0 (at most 1e9)"
            )))
        }
    };
    let events = match events {
        Some(lists) => vmsim_core::trace::EventFilter::parse(lists)
            .map_err(|e| ScenarioError::new_err(e.to_string()))?,
        None => vmsim_core::trace::EventFilter::default(),
    };
    let sc = {
        let mut sc = vmsim_core::Scenario::from_toml(scenario).map_err(to_py)?;
        if let Some(s) = seed {
            sc.seed = s;
        }
        sc
    };
    let budget = vmsim_core::capacity::check(&sc).map_err(to_py)?;
    // The first Python exception raised (Ctrl-C's KeyboardInterrupt, or one from `progress`)
    // stops the run.
    let err: std::cell::RefCell<Option<PyErr>> = std::cell::RefCell::new(None);
    let mut on_progress = |now: u64, end: u64| {
        if err.borrow().is_some() {
            return;
        }
        if let Some(p) = &progress {
            if let Err(e) = p.call1(py, (now, end)) {
                *err.borrow_mut() = Some(e);
            }
        }
    };
    let mut interrupted = || {
        if err.borrow().is_some() {
            return true;
        }
        match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                *err.borrow_mut() = Some(e);
                true
            }
        }
    };
    let mut ctl = vmsim_core::sim::Control {
        progress: &mut on_progress,
        interrupted: Some(&mut interrupted),
        max_wall,
        check_invariants,
        timeline: timeline_path.is_some(),
        pageblock_map: pageblocks,
        budget,
    };
    let outcome =
        vmsim_core::sim::run_controlled(&sc, trace_path.as_ref().map(|_| (fmt, events)), &mut ctl);
    if let Some(e) = err.into_inner() {
        return Err(e);
    }
    let (mut r, tracer) = match outcome {
        Ok(v) => v,
        Err(e @ vmsim_core::sim::Stopped::Invariant { .. }) => {
            return Err(InvariantError::new_err(e.to_string()))
        }
        Err(e @ vmsim_core::sim::Stopped::Interrupted { .. }) => {
            return Err(PyKeyboardInterrupt::new_err(e.to_string()))
        }
        Err(e @ vmsim_core::sim::Stopped::HostMemory { .. }) => {
            return Err(ScenarioError::new_err(e.to_string()))
        }
    };
    let os_error = |e: std::io::Error, path: &std::path::Path| {
        let path = path.display().to_string();
        pyo3::exceptions::PyOSError::new_err((e.raw_os_error(), output::reason(&e), path))
    };
    if let (Some(path), Some(t)) = (trace_path, tracer) {
        output::write_whole(&path, |w| t.write_to(w)).map_err(|e| os_error(e, &path))?;
    }
    if let (Some(path), Some(tl)) = (timeline_path, r.timeline.take()) {
        output::write_whole(&path, |w| Ok(serde_json::to_writer(w, &tl)?))
            .map_err(|e| os_error(e, &path))?;
    }
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Checks a scenario without running it; raises ScenarioError with one line if it is wrong.
/// `costs` is the TOML text of a cost profile standing in for the scenario's `costs` key
/// (one the Python side read from a file), so the scenario's own lines are checked as
/// written.
#[pyfunction]
#[pyo3(signature = (scenario, costs=None))]
fn validate(scenario: &str, costs: Option<&str>) -> PyResult<()> {
    let profile = costs
        .map(vmsim_core::costs::CostProfile::from_toml)
        .transpose()
        .map_err(to_py)?;
    vmsim_core::Scenario::from_toml_with(scenario, profile.as_ref())
        .map(|_| ())
        .map_err(to_py)
}

/// A cost profile's TOML text, checked and parsed, as JSON: name, machine, kernel, date,
/// source, cost (every knob [ns], in `vmsim knobs` order), spread and method. Raises
/// ScenarioError (one line, `cost profile NAME: …`) if it is wrong.
#[pyfunction]
fn cost_profile(text: &str) -> PyResult<String> {
    let p = vmsim_core::costs::CostProfile::from_toml(text).map_err(to_py)?;
    serde_json::to_string(&p).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The TOML text of the built-in cost profile `name`, or None.
#[pyfunction]
fn builtin_cost_profile(name: &str) -> Option<&'static str> {
    vmsim_core::costs::builtin(name)
}

/// The names of the built-in cost profiles, in order.
#[pyfunction]
fn builtin_cost_profiles() -> Vec<&'static str> {
    vmsim_core::costs::builtin_names().to_vec()
}

/// The cost profile a scenario without a `costs` key takes.
#[pyfunction]
fn default_cost_profile() -> &'static str {
    vmsim_core::costs::DEFAULT_PROFILE
}

/// Host memory one run of a scenario needs, by part, as JSON ({"frame_table": …, "total": …,
/// "at_start": …: what is written before the first event});
/// raises ScenarioError if the scenario is wrong.
#[pyfunction]
fn capacity_need(scenario: &str) -> PyResult<String> {
    let sc = vmsim_core::Scenario::from_toml(scenario).map_err(to_py)?;
    let need = vmsim_core::capacity::need(&sc);
    let mut v = serde_json::to_value(need).map_err(|e| PyValueError::new_err(e.to_string()))?;
    v["total"] = need.total().into();
    v["at_start"] = need.at_start().into();
    Ok(v.to_string())
}

/// The built-in default scenario (TOML).
#[pyfunction]
fn default_scenario() -> &'static str {
    vmsim_core::config::DEFAULT_SCENARIO
}

/// Every knob of a section as JSON: section, name, key (as --set writes it), unit, doc,
/// default and maximum.
#[pyfunction]
fn knobs() -> PyResult<String> {
    let defaults = vmsim_core::Scenario::from_toml("").map_err(to_py)?;
    let dv = serde_json::to_value(&defaults).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let rows: Vec<serde_json::Value> = vmsim_core::config::knob_table()
        .into_iter()
        .filter(|k| !k.section.is_empty() && !k.section.starts_with('['))
        .map(|k| {
            let default = dv.get(k.section).and_then(|s| s.get(k.name)).cloned().unwrap_or(serde_json::Value::Null);
            serde_json::json!({"section": k.section, "name": k.name, "key": format!("{}.{}", k.section, k.name), "unit": k.unit, "doc": k.doc.trim(), "default": default, "max": k.max_text()})
        })
        .collect();
    serde_json::to_string(&rows).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The keys of the top level and of array tables (`[[task]]`, `[[cgroup]]`, …) that carry a
/// maximum, as JSON: section, name, key (`[[task]] count`), unit, doc and maximum.
#[pyfunction]
fn table_knobs() -> PyResult<String> {
    let rows: Vec<serde_json::Value> = vmsim_core::config::TABLE_KNOBS
        .iter()
        .map(|k| {
            let key = if k.section.is_empty() { k.name.to_string() } else { format!("{} {}", k.section, k.name) };
            serde_json::json!({"section": k.section, "name": k.name, "key": key, "unit": k.unit, "doc": k.doc.trim(), "max": k.max_text()})
        })
        .collect();
    serde_json::to_string(&rows).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Runs the engine benchmarks; returns JSON. `throttle_scenario` is the TOML of seed
/// 000's reproduction template (the Python package's), timed at full size when given.
#[pyfunction]
#[pyo3(name = "bench", signature = (min_seconds=1.0, throttle_scenario=None))]
fn run_bench(min_seconds: f64, throttle_scenario: Option<&str>) -> PyResult<String> {
    let heap = || LIVE_BYTES.load(Ordering::Relaxed);
    let throttle = throttle_scenario
        .map(vmsim_core::Scenario::from_toml)
        .transpose()
        .map_err(to_py)?;
    let r = vmsim_core::bench::run_all(min_seconds, Some(&heap), throttle.as_ref());
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Replays a page-access trace (`vmsim replay access`) at each cache size [pages];
/// returns the report as JSON. ValueError names a trace that cannot be read or a bad
/// format; what does not parse inside the trace is in the report.
#[pyfunction]
#[pyo3(signature = (path, format, cache_pages, kernel_toml="", obj_id_col=1, delimiter=",", has_header=false))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments, one per CLI option.
fn replay_access(
    py: Python<'_>,
    path: &str,
    format: &str,
    cache_pages: Vec<u64>,
    kernel_toml: &str,
    obj_id_col: usize,
    delimiter: &str,
    has_header: bool,
) -> PyResult<String> {
    use vmsim_core::replay::{access, input, trace_access::Format};
    let delim = match delimiter.as_bytes() {
        [b] => *b,
        _ => {
            return Err(PyValueError::new_err(format!(
                "--delimiter {delimiter:?}: must be one byte"
            )))
        }
    };
    let fmt = Format::parse(format, obj_id_col, delim, has_header).ok_or_else(|| {
        PyValueError::new_err(format!(
            "--format {format}: unknown (csv, txt, oracleGeneral or vscsi)"
        ))
    })?;
    let path = path.to_string();
    let kernel_toml = kernel_toml.to_string();
    let r = py
        .detach(move || {
            let (mut r, _) = input::open(&path)?;
            access::replay_access(&mut r, &fmt, &cache_pages, &kernel_toml)
        })
        .map_err(PyValueError::new_err)?;
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Replays a kmem trace (`vmsim replay kmem`) on a scenario's machine and kernel (with
/// its workloads beside the replay when `workloads`), sampling every `interval` seconds
/// of trace time; returns the report as JSON.
/// ScenarioError for a bad scenario or a trace whose pfns the machine does not have
/// (naming the memory it needs), ValueError for a trace that cannot be read.
#[pyfunction]
#[pyo3(signature = (path, scenario, interval=1.0, workloads=false))]
fn replay_kmem(
    py: Python<'_>,
    path: &str,
    scenario: &str,
    interval: f64,
    workloads: bool,
) -> PyResult<String> {
    use vmsim_core::replay::{input, kmem};
    let sc = vmsim_core::Scenario::from_toml(scenario).map_err(to_py)?;
    // The start must fit this host; a replay writes only the frames its trace and
    // workloads use.
    vmsim_core::capacity::check(&sc).map_err(to_py)?;
    if !(interval > 0.0 && interval <= 1e6) {
        return Err(PyValueError::new_err(format!(
            "--interval {interval}: must be in (0, 1e6] seconds"
        )));
    }
    let path = path.to_string();
    let r = py.detach(move || {
        let mut open = || input::open(&path).map(|(r, _)| r);
        kmem::replay_kmem(&mut open, &sc, (interval * 1e9) as u64, workloads)
    });
    let r = r.map_err(|e| match e {
        kmem::KmemError::TooSmall {
            max_pfn,
            frames,
            needed,
        } => ScenarioError::new_err(format!(
            "the trace names pfn {max_pfn:#x}, beyond the simulated machine's {frames} frames: \
             it needs machine.memory of at least {}GiB (--set machine.memory={}GiB)",
            needed >> 30,
            needed >> 30
        )),
        kmem::KmemError::Other(m) => PyValueError::new_err(m),
    })?;
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Boots and runs scale case `name` of `vmsim bench` (`vmsim_core::bench::SCALE_CASES`);
/// returns JSON. ScenarioError says why the case cannot run on this host.
#[pyfunction]
fn bench_scale(name: &str) -> PyResult<String> {
    let sc = vmsim_core::bench::scale_scenario(name).map_err(to_py)?;
    let r = vmsim_core::bench::scale_run(&sc);
    serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The names of `vmsim bench`'s scale cases, in order.
#[pyfunction]
fn bench_scale_cases() -> Vec<&'static str> {
    vmsim_core::bench::SCALE_CASES.to_vec()
}

/// Bytes of a size written as in scenarios (`"8GiB"`, `"1.5MiB"`, `"4096"`, `"1GB"`);
/// ValueError names the problem (the units of scenarios, `vmsim_core::units`).
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    vmsim_core::units::parse_size(text).map_err(PyValueError::new_err)
}

/// Nanoseconds of a duration written as in scenarios (`"100ms"`, `"2s"`, `"5min"`; a bare
/// number is seconds); ValueError names the problem.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    vmsim_core::units::parse_duration(text).map_err(PyValueError::new_err)
}

/// The engine version.
#[pyfunction]
fn version() -> &'static str {
    vmsim_core::sim::VERSION
}

/// The extension module.
#[pymodule]
fn _vmsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(cost_profile, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_cost_profile, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_cost_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(default_cost_profile, m)?)?;
    m.add_function(wrap_pyfunction!(default_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(capacity_need, m)?)?;
    m.add_function(wrap_pyfunction!(knobs, m)?)?;
    m.add_function(wrap_pyfunction!(table_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scale, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scale_cases, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(replay_access, m)?)?;
    m.add_function(wrap_pyfunction!(replay_kmem, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::calibrate_bench, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::calibrate_read_in_cgroup, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("InvariantError", m.py().get_type::<InvariantError>())?;
    Ok(())
}
