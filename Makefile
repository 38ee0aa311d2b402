# One entry point for what CI runs: `make all` installs the test dependencies
# (and what vmsim fidelity's guests need, and chromium for the report's browser
# tests), checks formatting, lints and types
# (mypy), and runs every test (Rust and Python).
PYTHON ?= python3

.PHONY: all install fidelity-vm browser lint test test-rust test-python bench docs fmt fuzz

all: install fidelity-vm browser lint test

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

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests scripts
	$(PYTHON) -m mypy

test: test-rust test-python

test-rust:
	cargo test --workspace --exclude vmsim-py

test-python:
	$(PYTHON) -m pytest -q

bench:
	vmsim bench --json

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
	$(PYTHON) -m ruff format python tests
