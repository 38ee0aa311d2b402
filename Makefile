# One entry point for what CI runs: `make all` installs the test dependencies
# (and what vmsim fidelity's guests need, chromium for the report's browser
# tests and perf for calibrate's kernel paths), checks formatting, lints and types
# (mypy), and runs every test (Rust and Python).
PYTHON ?= python3

.PHONY: all install fidelity-vm browser perf lint test test-rust test-python bench docs fmt fuzz profile profile-tools

all: install fidelity-vm browser perf lint test

install:
	$(PYTHON) -m pip install --quiet -e '.[test]'

# QEMU, busybox-static and kmod (apt-get, as root) and the Debian 6.1 kernel
# package unpacked into ~/.cache/vmsim for `vmsim fidelity --kernel debian-6.1`
# (docs/fidelity.md). Where they cannot be installed, make goes on and the
# guest tests skip, saying why.
fidelity-vm:
	-$(PYTHON) -m vmsim.cli fidelity --kernel debian-6.1 --install

# Debian's chromium (apt-get, as root), headless, for the tests that open `vmsim report`
# pages in a browser (tests/test_report_browser.py). Where it cannot be installed, make
# goes on and those tests skip, saying why.
browser:
	-command -v chromium >/dev/null || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }

# Debian's linux-perf (apt-get, as root): `vmsim calibrate` samples the kernel's own
# functions with it (the kernel-paths knobs, docs/cost-model.md) and `make profile`
# records vmsim. Where it cannot be installed, make goes on and calibrate keeps those
# knobs' estimates, saying why.
perf:
	-command -v perf >/dev/null || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-perf; }

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests scripts
	$(PYTHON) -m ruff format --check python tests scripts
	$(PYTHON) -m mypy

test: test-rust test-python

test-rust:
	cargo test --workspace --exclude vmsim-py

# Two workers (pytest-xdist): the tests that use the real kernel or time the host run
# one after another on one of them (tests/conftest.py, HOST_MODULES).
test-python:
	$(PYTHON) -m pytest -q -n 2 --dist loadgroup

bench:
	vmsim bench --json

# A flame graph of one run (docs/dev.md, "Profiling"): `perf record` of `vmsim run
# $(SCENARIO) $(ARGS)` (the built-in default scenario when SCENARIO is empty), folded and
# drawn by inferno into $(PROFILE_OUT)/flamegraph.svg: stacks from the extension's entry
# point up, the Python interpreter's own time as one frame, frames under 0.5 % hidden. perf comes from Debian's linux-perf
# (apt-get, as root) and inferno from crates.io, pinned, into target/tools.
SCENARIO ?=
ARGS ?=
PROFILE_OUT ?= out/profile
PROFILE_FREQ ?= 499
INFERNO_VERSION = 0.12.8
profile: profile-tools
	mkdir -p $(PROFILE_OUT)
	perf record -F $(PROFILE_FREQ) --call-graph dwarf,16384 -o $(PROFILE_OUT)/perf.data -- \
		$(PYTHON) -m vmsim.cli run $(SCENARIO) $(ARGS) > $(PROFILE_OUT)/run.txt
	perf script -i $(PROFILE_OUT)/perf.data 2>/dev/null | target/tools/bin/inferno-collapse-perf > $(PROFILE_OUT)/folded.txt
	sed -E -e 's/^[^;]*;.*;(_vmsim::)/\1/' \
		-e '/^_vmsim::/!s/^([^;]*);.* ([0-9]+)$$/\1;[interpreter, imports, output] \2/' \
		$(PROFILE_OUT)/folded.txt | target/tools/bin/inferno-flamegraph --minwidth 0.5 \
		--title "vmsim run $(or $(SCENARIO),(default scenario)) $(ARGS)" > $(PROFILE_OUT)/flamegraph.svg.tmp
	mv $(PROFILE_OUT)/flamegraph.svg.tmp $(PROFILE_OUT)/flamegraph.svg
	@echo "$(PROFILE_OUT)/flamegraph.svg"

profile-tools: perf
	test -x target/tools/bin/inferno-flamegraph || \
		cargo install inferno --version =$(INFERNO_VERSION) --locked --root target/tools

# A fuzz campaign over the scenario schema (FUZZ_SECONDS, default 600) and the Rust
# parsers' property tests with many more cases; failures are kept under
# tests/data/fuzz-crashers/ (docs/bad-input.md).
FUZZ_SECONDS ?= 600
fuzz:
	PROPTEST_CASES=20000 cargo test --release -p vmsim-core --test fuzz_parsers
	$(PYTHON) scripts/fuzz.py --seconds $(FUZZ_SECONDS)

docs:
	vmsim knobs --markdown > docs/knobs.md

fmt:
	cargo fmt --all
	$(PYTHON) -m ruff format python tests scripts
