"""Re-runs the ```console examples of README.md and docs/*.md; reports those whose output changed.

A command with no output lines under it is run but not compared; `echo $?`
prints the previous command's exit code. With --update, changed outputs are written
back into the file (the part above a "…" line only): re-approve them after reading
the diff.

Each file's commands run in order in one scratch directory (so a later command can read
a file an earlier one wrote), from the repository root's `scenarios/` copied there. An
expected output ending in a line "…" is compared up to it. Commands that take long
(`vmsim reproduce` without `--scale`, `vmsim fidelity --record`) are skipped unless
--all is given.

    python scripts/check_docs.py [FILE…] [--all] [--update]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from vmsim import atomic

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of every `$ ` line in the console blocks.

    A command continues on the next line after a trailing backslash or on lines
    starting with "> " (the shell's PS2).
    """
    out: list[tuple[str, list[str]]] = []
    for block in BLOCK.findall(text):
        cont = False
        started = False  # output before a block's first command belongs to no command
        for line in block.splitlines():
            if line.startswith("$ "):
                started = True
                out.append((line[2:], []))
                cont = line.endswith("\\")
            elif out and not out[-1][1] and (cont or line.startswith("> ")):
                body = line[2:] if line.startswith("> ") and not cont else line
                out[-1] = (out[-1][0] + "\n" + body, [])
                cont = line.endswith("\\")
            elif out and started:
                out[-1][1].append(line)
    return out


def slow(cmd: str) -> bool:
    return ("vmsim reproduce" in cmd and "--scale" not in cmd) or "--record" in cmd


def check(path: Path, run_all: bool, update: bool) -> int:
    bad = 0
    text = path.read_text(encoding="utf-8")
    new_text = text
    last_rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "scenarios", Path(tmp) / "scenarios")
        # The recorded traces that docs/replay.md replays.
        shutil.copytree(ROOT / "tests" / "data" / "replay", Path(tmp) / "tests" / "data" / "replay")
        for cmd, expected in examples(text):
            if slow(cmd) and not run_all:
                if expected:
                    print(f"{path.name}: skipped (slow): {cmd}")
                continue
            if cmd.strip() == "echo $?":
                got = [str(last_rc)]
            else:
                r = subprocess.run(cmd, shell=True, cwd=tmp, capture_output=True, text=True)
                last_rc = r.returncode
                got = (r.stdout + r.stderr).rstrip("\n").splitlines()
            if not expected:
                continue  # run for what it leaves behind (files), nothing to compare
            want = expected
            for cut in ("…", "..."):
                if cut in want:
                    want = want[: want.index(cut)]
                    got = got[: len(want)]
            if [w.rstrip() for w in want] != [g.rstrip() for g in got]:
                bad += 1
                print(f"{path.name}: CHANGED: {cmd}")
                for w, g in zip(want, got, strict=False):
                    if w.rstrip() != g.rstrip():
                        print(f"  doc: {w}\n  now: {g}")
                        break
                else:
                    print(f"  doc has {len(want)} lines, now {len(got)}")
                if update:
                    shown = cmd.replace("\n", "\n> ") if "\\\n" not in cmd else cmd
                    old = "$ " + shown + "\n" + "".join(w + "\n" for w in want)
                    new = "$ " + shown + "\n" + "".join(g + "\n" for g in got)
                    if new_text.count(old) == 1:
                        new_text = new_text.replace(old, new)
                    else:
                        print("  not updated: the example is not unique in the file")
    if update and new_text != text:
        atomic.write_text(path, new_text)
    return bad


def main() -> int:
    args = [a for a in sys.argv[1:] if a not in ("--all", "--update")]
    files = [Path(a) for a in args] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = sum(check(p, "--all" in sys.argv, "--update" in sys.argv) for p in files)
    print(f"{bad} example(s) changed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
