//! Cost profiles: a named, complete set of `[cost]` values that a scenario
//! (`costs = "NAME"`) or the command line (`vmsim run --costs NAME|FILE`) selects.
//!
//! A profile is TOML with four tables, and no others:
//!
//! * `[profile]`: `name` (required), and free text saying where the figures come from:
//!   `machine` (the CPU model measured), `kernel` (`uname -r` of the kernel measured),
//!   `date` and `source`;
//! * `[cost]` (required): every knob of [`Cost`] [ns], none missing and none unknown, each
//!   at most its declared maximum;
//! * `[spread]` (optional): `knob = [low, high]` [ns], the range over a calibration's
//!   repetitions;
//! * `[method]` (optional): `knob = "…"`, one line saying how the figure was measured or
//!   where it comes from.
//!
//! The built-in profiles are embedded from `crates/vmsim-core/costs/NAME.toml`, one line
//! each in `BUILTIN`. A scenario without a `costs` key takes [`DEFAULT_PROFILE`]'s
//! figures, and [`Cost::default`] equals them (a test checks it), so switching the default
//! is this one constant plus the literals in config.rs. A scenario's own `[cost]` keys
//! override its profile's ([`merged_cost`]). Profile files are read by the Python front
//! end, which rewrites the scenario's `[cost]` table from them: the engine itself reads no
//! file.

use crate::config::{self, Cost};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The profile a scenario without a `costs` key takes: this machine kind's figures as
/// `vmsim calibrate` measured them on Linux 6.18 (docs/cost-model.md).
pub const DEFAULT_PROFILE: &str = "measured-6.18";

/// The built-in profiles: name and TOML text. Adding one is one line here and its file.
const BUILTIN: &[(&str, &str)] = &[
    ("measured-6.18", include_str!("../costs/measured-6.18.toml")),
    ("seed-era", include_str!("../costs/seed-era.toml")),
];

/// The names of [`BUILTIN`], in order.
static BUILTIN_NAMES: [&str; BUILTIN.len()] = {
    let mut names = [""; BUILTIN.len()];
    let mut i = 0;
    while i < BUILTIN.len() {
        names[i] = BUILTIN[i].0;
        i += 1;
    }
    names
};

/// The TOML text of the built-in profile `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// The names of the built-in profiles, [`DEFAULT_PROFILE`] among them.
pub fn builtin_names() -> &'static [&'static str] {
    &BUILTIN_NAMES
}

/// The built-in profile `name`, parsed; None when there is no such profile.
pub fn builtin_profile(name: &str) -> Option<Result<CostProfile>> {
    builtin(name).map(CostProfile::from_toml)
}

/// A named, complete set of `[cost]` values with where they come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostProfile {
    /// The profile's name (`seed-era`), as `costs = "…"` and `--costs` give it.
    pub name: String,
    /// The machine measured (its CPU model), free text.
    pub machine: Option<String>,
    /// The kernel measured (`uname -r`), free text.
    pub kernel: Option<String>,
    /// When the figures were measured or written, free text.
    pub date: Option<String>,
    /// How the figures were obtained (a script, a document), free text.
    pub source: Option<String>,
    /// Every cost [ns].
    pub cost: Cost,
    /// Knob → (low, high) over the calibration's repetitions [ns]; knobs of [`Cost`] only.
    pub spread: BTreeMap<String, (f64, f64)>,
    /// Knob → one line saying how it was measured or where it comes from.
    pub method: BTreeMap<String, String>,
}

/// A profile file as TOML has it, before the checks that need more than types.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    profile: Header,
    cost: BTreeMap<String, u64>,
    /// Knob → [low, high]: a Vec, since a tuple would take the first two of three.
    #[serde(default)]
    spread: BTreeMap<String, Vec<f64>>,
    #[serde(default)]
    method: BTreeMap<String, String>,
}

/// The `[profile]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    machine: Option<String>,
    kernel: Option<String>,
    date: Option<String>,
    source: Option<String>,
}

/// At most this many names of missing or unknown knobs in a message; then "and N more".
const NAMES_SHOWN: usize = 10;

/// `a, b, c` of at most [`NAMES_SHOWN`] names (each clipped), then `and N more`.
fn name_list<S: AsRef<str>>(names: &[S]) -> String {
    let mut out: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| config::clip(n.as_ref()))
        .collect();
    if names.len() > NAMES_SHOWN {
        out.push(format!("and {} more", names.len() - NAMES_SHOWN));
    }
    out.join(", ")
}

/// Whether `name` is a knob of [`Cost`].
fn is_knob(name: &str) -> bool {
    Cost::KNOBS.iter().any(|k| k.name == name)
}

/// Every cost knob with its value [ns], in [`Cost::KNOBS`] order.
pub fn cost_values(cost: &Cost) -> Vec<(&'static str, u64)> {
    let v = serde_json::to_value(cost).expect("Cost serializes");
    Cost::KNOBS
        .iter()
        .map(|k| (k.name, v[k.name].as_u64().expect("every cost is a u64")))
        .collect()
}

/// The cost model of a scenario: `profile`'s figures, with the knobs its own `[cost]` table
/// sets (`explicit`, the keys written there) taken from `own` (that table as deserialized).
/// Names that are not knobs of [`Cost`] are ignored (deserialization has refused them).
pub fn merged_cost<'a>(
    profile: &Cost,
    own: &Cost,
    explicit: impl IntoIterator<Item = &'a str>,
) -> Cost {
    let mut merged = serde_json::to_value(profile).expect("Cost serializes");
    let own = serde_json::to_value(own).expect("Cost serializes");
    for k in explicit {
        if let Some(v) = own.get(k) {
            merged[k] = v.clone();
        }
    }
    serde_json::from_value(merged).expect("knobs of Cost make a Cost")
}

/// What is wrong with a piece of free text of a profile, if anything.
fn not_one_line(what: &str, text: &str) -> Option<String> {
    text.contains(['\n', '\r'])
        .then(|| format!("{what} must be one line"))
}

impl CostProfile {
    /// Parses and checks a profile; every error is one line starting `cost profile NAME:`
    /// ([`Error::Profile`]).
    pub fn from_toml(text: &str) -> Result<CostProfile> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            Error::Profile(format!(
                "cost profile: {}",
                config::one_line_toml_error(&e, text)
            ))
        })?;
        let h = file.profile;
        // The name as messages show it: on one line, whatever it holds.
        let who = format!(
            "cost profile {}",
            config::clip(&h.name.trim().replace(['\n', '\r'], " "))
        );
        let fail = |msg: String| Err(Error::Profile(format!("{who}: {msg}")));
        if h.name.trim().is_empty() {
            return Err(Error::Profile(
                "cost profile: [profile] name must not be empty".into(),
            ));
        }
        let texts = [
            ("[profile] name", Some(&h.name)),
            ("[profile] machine", h.machine.as_ref()),
            ("[profile] kernel", h.kernel.as_ref()),
            ("[profile] date", h.date.as_ref()),
            ("[profile] source", h.source.as_ref()),
        ];
        for (what, t) in texts {
            if let Some(msg) = t.and_then(|t| not_one_line(what, t)) {
                return fail(msg);
            }
        }
        // Every knob, and nothing else.
        let unknown: Vec<&String> = file.cost.keys().filter(|k| !is_knob(k)).collect();
        let missing: Vec<&str> = Cost::KNOBS
            .iter()
            .map(|k| k.name)
            .filter(|k| !file.cost.contains_key(*k))
            .collect();
        let mut problems = Vec::new();
        if !unknown.is_empty() {
            let s = if unknown.len() == 1 { "" } else { "s" };
            problems.push(format!("has unknown key{s} {}", name_list(&unknown)));
        }
        if !missing.is_empty() {
            problems.push(format!("lacks {}", name_list(&missing)));
        }
        if !problems.is_empty() {
            let hint = if unknown.is_empty() {
                ""
            } else {
                " (vmsim knobs lists every knob of [cost])"
            };
            return fail(format!("[cost] {}{hint}", problems.join(" and ")));
        }
        let cost: Cost = serde_json::to_value(&file.cost)
            .and_then(serde_json::from_value)
            .expect("knobs of Cost make a Cost");
        if let Err(e) = cost.check_maxima() {
            let msg = e.to_string();
            return fail(msg.trim_start_matches("scenario: ").to_string());
        }
        for (table, keys) in [
            ("[spread]", file.spread.keys().collect::<Vec<_>>()),
            ("[method]", file.method.keys().collect()),
        ] {
            let unknown: Vec<&&String> = keys.iter().filter(|k| !is_knob(k)).collect();
            if !unknown.is_empty() {
                let s = if unknown.len() == 1 { "" } else { "s" };
                return fail(format!(
                    "{table} has unknown key{s} {} (its keys are knobs of [cost])",
                    name_list(&unknown)
                ));
            }
        }
        let mut spread = BTreeMap::new();
        for (k, range) in file.spread {
            match range[..] {
                [low, high] if low.is_finite() && high.is_finite() && 0.0 <= low && low <= high => {
                    spread.insert(k, (low, high));
                }
                _ => {
                    let shown: Vec<String> = range.iter().take(4).map(f64::to_string).collect();
                    return fail(format!(
                        "[spread] {k} = [{}]: must be [low, high], two finite figures [ns] with \
                         0 <= low <= high",
                        shown.join(", ")
                    ));
                }
            }
        }
        for (k, m) in &file.method {
            if let Some(msg) = not_one_line(&format!("[method] {k}"), m) {
                return fail(msg);
            }
        }
        Ok(CostProfile {
            name: h.name,
            machine: h.machine,
            kernel: h.kernel,
            date: h.date,
            source: h.source,
            cost,
            spread,
            method: file.method,
        })
    }

    /// The profile as TOML that [`CostProfile::from_toml`] reads back equal: `[cost]` in
    /// [`Cost::KNOBS`] order, `[spread]` and `[method]` (when not empty) likewise.
    pub fn to_toml(&self) -> String {
        use std::fmt::Write;
        let string = |s: &str| toml::Value::String(s.to_string()).to_string();
        let float = |f: f64| toml::Value::Float(f).to_string();
        let mut out = String::from("[profile]\n");
        let _ = writeln!(out, "name = {}", string(&self.name));
        for (key, value) in [
            ("machine", &self.machine),
            ("kernel", &self.kernel),
            ("date", &self.date),
            ("source", &self.source),
        ] {
            if let Some(v) = value {
                let _ = writeln!(out, "{key} = {}", string(v));
            }
        }
        out.push_str("\n[cost]\n");
        for (k, v) in cost_values(&self.cost) {
            let _ = writeln!(out, "{k} = {v}");
        }
        if !self.spread.is_empty() {
            out.push_str("\n[spread]\n");
            for (k, (low, high)) in knob_order(&self.spread) {
                let _ = writeln!(out, "{} = [{}, {}]", key(k), float(*low), float(*high));
            }
        }
        if !self.method.is_empty() {
            out.push_str("\n[method]\n");
            for (k, m) in knob_order(&self.method) {
                let _ = writeln!(out, "{} = {}", key(k), string(m));
            }
        }
        out
    }
}

/// The entries of a map keyed by knob name, in [`Cost::KNOBS`] order, then any other keys.
fn knob_order<V>(map: &BTreeMap<String, V>) -> Vec<(&String, &V)> {
    let mut out: Vec<(&String, &V)> = Cost::KNOBS
        .iter()
        .filter_map(|k| map.get_key_value(k.name))
        .collect();
    out.extend(map.iter().filter(|(k, _)| !is_knob(k)));
    out
}

/// A TOML key: bare when it can be, else a quoted string.
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

/// Whether a scenario's `costs` value names a file rather than a built-in profile.
pub fn is_file_name(value: &str) -> bool {
    value.ends_with(".toml") || value.contains('/')
}

/// The profile a scenario's `costs` key names (None: [`DEFAULT_PROFILE`]): a built-in one.
/// A file name, or a name no built-in profile has, is a one-line error.
pub fn scenario_profile(costs: Option<&str>) -> Result<CostProfile> {
    let name = costs.unwrap_or(DEFAULT_PROFILE);
    let known = builtin_names().join(", ");
    let shown = config::clip(name);
    if is_file_name(name) {
        return Err(Error::Invalid(format!(
            "costs = {shown:?}: a cost profile file is read by the command line and the Python \
             API (vmsim run, vmsim.run), relative to the scenario's directory; the engine \
             alone knows only the built-in profiles ({known})"
        )));
    }
    builtin_profile(name).unwrap_or_else(|| {
        Err(Error::Invalid(format!(
            "costs = {shown:?}: no such cost profile (built in: {known}); give a profile \
             file with vmsim run --costs FILE"
        )))
    })
}

/// The names of the knobs a scenario's `[cost]` table sets: its keys, or for the positional
/// form serde also reads (`cost = [60, 50]`), the first knobs. The text has parsed as a
/// scenario already, so it parses here.
pub fn explicit_cost_keys(text: &str) -> Result<Vec<String>> {
    /// The knob names of a `cost` value, whichever form it has.
    struct Names(Vec<String>);
    impl<'de> Deserialize<'de> for Names {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Names;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a [cost] table")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> std::result::Result<Names, A::Error> {
                    let mut names = Vec::new();
                    while let Some((k, serde::de::IgnoredAny)) = m.next_entry::<String, _>()? {
                        names.push(k);
                    }
                    Ok(Names(names))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut s: A,
                ) -> std::result::Result<Names, A::Error> {
                    let mut n = 0;
                    while s.next_element::<serde::de::IgnoredAny>()?.is_some() {
                        n += 1;
                    }
                    let knobs = Cost::KNOBS.iter().take(n);
                    Ok(Names(knobs.map(|k| k.name.to_string()).collect()))
                }
            }
            d.deserialize_any(Visit)
        }
    }
    #[derive(Deserialize)]
    struct Keys {
        cost: Option<Names>,
    }
    let keys: Keys =
        toml::from_str(text).map_err(|e| Error::Parse(config::one_line_toml_error(&e, text)))?;
    Ok(keys.cost.map_or_else(Vec::new, |n| n.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;

    /// The built-in seed-era profile's text with `edit` applied to it.
    fn edited(edit: impl Fn(&str) -> String) -> String {
        edit(builtin("seed-era").unwrap())
    }

    fn err(text: &str) -> String {
        let e = CostProfile::from_toml(text).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn builtin_default_equals_cost_default() {
        // Cost::default()'s literals in config.rs are the default profile's figures:
        // switching DEFAULT_PROFILE means changing them too.
        let p = builtin_profile(DEFAULT_PROFILE).unwrap().unwrap();
        let literals = cost_values(&Cost::default());
        let differ: Vec<String> = cost_values(&p.cost)
            .into_iter()
            .zip(literals)
            .filter(|(a, b)| a != b)
            .map(|((k, v), (_, d))| format!("{k}: {v} in the profile, {d} in config.rs"))
            .collect();
        assert!(
            differ.is_empty(),
            "Cost::default() differs from the {DEFAULT_PROFILE} profile: {}",
            differ.join("; ")
        );
        assert_eq!(p.cost, Cost::default());
    }

    #[test]
    fn every_builtin_parses_under_its_own_name() {
        assert!(builtin_names().contains(&DEFAULT_PROFILE));
        for name in builtin_names() {
            let p = builtin_profile(name).unwrap().unwrap();
            assert_eq!(&p.name, name);
            assert!(p.method.keys().all(|k| is_knob(k)));
        }
        assert!(builtin("no-such").is_none());
    }

    #[test]
    fn seed_era_says_where_each_figure_comes_from() {
        let p = builtin_profile("seed-era").unwrap().unwrap();
        for k in Cost::KNOBS {
            assert!(p.method.contains_key(k.name), "no [method] for {}", k.name);
        }
        assert!(p.method["msg_user"].contains("back-solved from seed 000's own user time"));
        assert!(p.method["syscall"].starts_with("measured"));
    }

    #[test]
    fn round_trip_keeps_everything() {
        let mut p = builtin_profile(DEFAULT_PROFILE).unwrap().unwrap();
        p.name = "odd \"name\" — ü".into();
        p.machine = None;
        p.kernel = Some("6.18.0-rc1".into());
        p.cost.page_fault = 1234;
        p.spread.insert("page_fault".into(), (1180.25, 1301.0));
        p.spread.insert("clear_page".into(), (0.1, 1e-7 + 250.0));
        p.spread.insert("syscall".into(), (0.0, 1e300));
        p.method
            .insert("page_fault".into(), "perf stat of 'x' \\ \"y\"".into());
        let text = p.to_toml();
        let back = CostProfile::from_toml(&text).unwrap();
        assert_eq!(back, p, "{text}");
        assert_eq!(back.to_toml(), text);
        // [cost] is written in Cost::KNOBS order.
        let order: Vec<&str> = text
            .split("[cost]\n")
            .nth(1)
            .unwrap()
            .lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.split(" = ").next().unwrap())
            .collect();
        let knobs: Vec<&str> = Cost::KNOBS.iter().map(|k| k.name).collect();
        assert_eq!(order, knobs);
        // Without spread or method, no empty tables.
        p.spread.clear();
        p.method.clear();
        let text = p.to_toml();
        assert!(
            !text.contains("[spread]") && !text.contains("[method]"),
            "{text}"
        );
        assert_eq!(CostProfile::from_toml(&text).unwrap(), p);
    }

    #[test]
    fn a_missing_knob_is_named() {
        let text = edited(|t| {
            t.replace("page_fault = 700\n", "")
                .replace("clear_page = 250\n", "")
        });
        assert_eq!(
            err(&text),
            "cost profile seed-era: [cost] lacks page_fault, clear_page"
        );
        // Many missing: the first ten, then a count.
        let e = err("[profile]\nname = \"x\"\n[cost]\npcp_alloc = 1\n");
        assert!(
            e.starts_with("cost profile x: [cost] lacks pcp_free, buddy_alloc,"),
            "{e}"
        );
        assert!(
            e.ends_with(&format!("and {} more", Cost::KNOBS.len() - 11)),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_key_is_named() {
        let text = edited(|t| t.replace("page_fault = 700", "pagefault = 700"));
        let e = err(&text);
        assert!(
            e.starts_with("cost profile seed-era: [cost] has unknown key pagefault"),
            "{e}"
        );
        assert!(
            e.ends_with("and lacks page_fault (vmsim knobs lists every knob of [cost])"),
            "{e}"
        );
        let e = err(&edited(|t| format!("{t}\n[spread]\nbogus = [1, 2]\n")));
        assert!(
            e.contains("[spread] has unknown key bogus (its keys are knobs of [cost])"),
            "{e}"
        );
        let e = err(&edited(|t| {
            t.replace("[method]\n", "[method]\nbogus = \"x\"\n")
        }));
        assert!(e.contains("[method] has unknown key bogus"), "{e}");
        let e = err(&edited(|t| {
            t.replace("[profile]\n", "[profile]\ncpu = \"x\"\n")
        }));
        assert!(
            e.starts_with("cost profile: line 2 in [profile]: unknown field `cpu`"),
            "{e}"
        );
        let e = err(&edited(|t| format!("{t}\n[extra]\na = 1\n")));
        assert!(e.contains("unknown table [extra]"), "{e}");
    }

    #[test]
    fn values_above_the_maximum_are_refused() {
        let text = edited(|t| t.replace("page_fault = 700", "page_fault = 1000000001"));
        assert_eq!(
            err(&text),
            "cost profile seed-era: cost.page_fault = 1000000001 is above the maximum 1000000000"
        );
        let text = edited(|t| t.replace("page_fault = 700", "page_fault = -1"));
        assert!(err(&text).contains("page_fault: expected a whole number"));
        let text = edited(|t| t.replace("page_fault = 700", "page_fault = 7.5"));
        assert!(err(&text).contains("line 15 in [cost]: page_fault"));
    }

    #[test]
    fn malformed_profiles_are_one_line() {
        assert!(err("[cost\n").starts_with("cost profile: line 1"));
        assert!(err("").contains("missing field `profile`"));
        assert!(err("[profile]\nname = \"x\"\n").contains("missing field `cost`"));
        let e = err(&edited(|t| t.replace("name = \"seed-era\"\n", "")));
        assert!(e.contains("missing field `name`"), "{e}");
        let e = err(&edited(|t| {
            t.replace("name = \"seed-era\"", "name = \" \"")
        }));
        assert_eq!(e, "cost profile: [profile] name must not be empty");
        let e = err(&edited(|t| {
            t.replace("kernel = \"—\"", "kernel = \"a\\nb\"")
        }));
        assert_eq!(
            e,
            "cost profile seed-era: [profile] kernel must be one line"
        );
        let e = err(&edited(|t| t.replace("\"seed-era\"", "\"a\\nb\"")));
        assert_eq!(e, "cost profile a b: [profile] name must be one line");
        let e = err(&edited(|t| {
            format!("{t}\n[spread]\nsyscall = [160, 149]\n")
        }));
        assert!(
            e.contains("[spread] syscall = [160, 149]: must be [low, high]"),
            "{e}"
        );
        let e = err(&edited(|t| {
            format!("{t}\n[spread]\nsyscall = [nan, 149]\n")
        }));
        assert!(e.contains("[spread] syscall"), "{e}");
        let e = err(&edited(|t| format!("{t}\n[spread]\nsyscall = [1, 2, 3]\n")));
        assert!(e.contains("[spread] syscall = [1, 2, 3]: must be"), "{e}");
        let e = err(&edited(|t| {
            format!("{t}\n[spread]\nsyscall = [1, \"x\"]\n")
        }));
        assert!(e.contains("in [spread]: syscall"), "{e}");
        // Integers and floats are both figures.
        let p = CostProfile::from_toml(&edited(|t| {
            format!("{t}\n[spread]\nsyscall = [149, 160.5]\n")
        }))
        .unwrap();
        assert_eq!(p.spread["syscall"], (149.0, 160.5));
    }

    /// A profile file's text with one figure changed.
    fn with_page_fault(ns: u64) -> CostProfile {
        let mut p = builtin_profile(DEFAULT_PROFILE).unwrap().unwrap();
        p.name = "mine".into();
        p.cost.page_fault = ns;
        p
    }

    #[test]
    fn a_scenario_s_own_cost_keys_override_its_profile() {
        // Without a costs key: the default profile, the scenario's keys on top.
        let sc = Scenario::from_toml("[cost]\nclear_page = 99\n").unwrap();
        assert_eq!(sc.cost.clear_page, 99);
        assert_eq!(sc.cost.page_fault, Cost::default().page_fault);
        // A built-in profile by name.
        let sc = Scenario::from_toml("costs = \"seed-era\"\n[cost]\nclear_page = 99\n").unwrap();
        assert_eq!(sc.costs.as_deref(), Some("seed-era"));
        assert_eq!((sc.cost.clear_page, sc.cost.page_fault), (99, 700));
        // A profile given beside the text (the front end read it from a file): its figures,
        // except those the scenario's [cost] sets, even to the default value.
        let p = with_page_fault(5000);
        let mut q = p.clone();
        q.cost.clear_page = 1;
        let sc = Scenario::from_toml_with("costs = \"mine.toml\"\n", Some(&q)).unwrap();
        assert_eq!((sc.cost.page_fault, sc.cost.clear_page), (5000, 1));
        let text = "[cost]\npage_fault = 700\n";
        let sc = Scenario::from_toml_with(text, Some(&q)).unwrap();
        assert_eq!((sc.cost.page_fault, sc.cost.clear_page), (700, 1));
        assert_eq!(
            merged_cost(&p.cost, &Cost::default(), ["page_fault", "not_a_knob"]),
            Cost::default()
        );
        // The positional form serde reads too sets the first knobs.
        let sc = Scenario::from_toml_with("cost = [1, 2]\n", Some(&p)).unwrap();
        assert_eq!((sc.cost.pcp_alloc, sc.cost.pcp_free), (1, 2));
        assert_eq!(sc.cost.page_fault, 5000);
        // The scenario's own values are still checked against their maxima.
        let e = Scenario::from_toml("[cost]\npcp_alloc = 18446744073709551615\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "scenario: cost.pcp_alloc = 18446744073709551615 is above the maximum 1000000000"
        );
    }

    #[test]
    fn an_unknown_profile_name_is_one_line() {
        let e = Scenario::from_toml("costs = \"foo\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "scenario: costs = \"foo\": no such cost profile (built in: {}); give a profile \
                 file with vmsim run --costs FILE",
                builtin_names().join(", ")
            )
        );
        let e = Scenario::from_toml("costs = \"calib/m.toml\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("scenario: costs = \"calib/m.toml\": a cost profile file is read by"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = Scenario::from_toml("costs = 3\n").unwrap_err().to_string();
        assert!(e.contains("line 1: costs: expected a string"), "{e}");
        // Errors elsewhere in the text keep their lines.
        let e = Scenario::from_toml("costs = \"foo\"\n[machine]\nmemroy = 1\n").unwrap_err();
        assert!(e.to_string().contains("line 3 in [machine]"), "{e}");
    }
}
