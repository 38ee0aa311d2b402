# One entry point for what CI runs: `make all` installs the test dependencies,
# checks formatting, lints and types (mypy), and runs every test (Rust and Python).
PYTHON ?= python3

.PHONY: all install lint test test-rust test-python bench docs fmt

all: install lint test

install:
	$(PYTHON) -m pip install --quiet -e '.[test]'

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

docs:
	vmsim knobs --markdown > docs/knobs.md

fmt:
	cargo fmt --all
	$(PYTHON) -m ruff format python tests
