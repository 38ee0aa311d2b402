"""Every console example of README.md and docs/ prints what the docs show.

Runs scripts/check_docs.py's comparison per file (the full-size reproductions and
real-kernel recordings are skipped as slow). After an intended change, re-run
`python scripts/check_docs.py FILE --update` and read the diff.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_docs.py"
_spec = importlib.util.spec_from_file_location("check_docs", SCRIPT)
assert _spec is not None and _spec.loader is not None
check_docs = importlib.util.module_from_spec(_spec)
sys.modules["check_docs"] = check_docs
_spec.loader.exec_module(check_docs)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_console_examples_print_what_the_docs_show(doc: Path, monkeypatch, capsys) -> None:
    # The examples call `vmsim`: the one installed beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    changed = check_docs.check(doc, run_all=False, update=False)
    out = capsys.readouterr().out
    assert changed == 0, f"{doc.name}: examples whose output changed:\n{out}"


def test_examples_are_found_with_their_output() -> None:
    text = "```console\n$ vmsim run --version\nvmsim 0.1.0\n$ echo $?\n0\n```\n"
    assert check_docs.examples(text) == [
        ("vmsim run --version", ["vmsim 0.1.0"]),
        ("echo $?", ["0"]),
    ]
