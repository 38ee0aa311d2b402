"""The example scenarios shipped inside the package: ``vmsim scenario --list`` and
``vmsim scenario NAME``.

Two kinds: the examples of ``vmsim/scenarios/*.toml`` (the repository's
``scenarios/`` is a link to them), named by their file's stem, and the templates
the reproductions build their runs from (``vmsim/reproduce/scenarios/*.toml``),
named ``reproduce/STEM``. Both are package data, so an installed vmsim has them.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

__all__ = ["ExampleError", "describe", "names", "text"]

#: The longest description printed by ``--list`` [characters].
DESCRIPTION_MAX = 70
_SOURCES = (("", "vmsim", "scenarios"), ("reproduce/", "vmsim.reproduce", "scenarios"))


class ExampleError(ValueError):
    """An unknown example name; one line naming the known ones."""


def _files() -> dict[str, Traversable]:
    """Every example by name, in listing order (examples first, then templates)."""
    out: dict[str, Traversable] = {}
    for prefix, package, folder in _SOURCES:
        root = resources.files(package).joinpath(folder)
        entries = sorted(
            (e for e in root.iterdir() if e.name.endswith(".toml")), key=lambda e: e.name
        )
        for e in entries:
            out[prefix + e.name.removesuffix(".toml")] = e
    return out


def names() -> list[str]:
    """The names of every example and template."""
    return list(_files())


def text(name: str) -> str:
    """The TOML text of example ``name``; ExampleError for an unknown one."""
    files = _files()
    if name.endswith(".toml"):
        name = name.removesuffix(".toml")
    if name not in files:
        raise ExampleError(
            f"no example scenario '{name}' (known: {', '.join(files)}; vmsim scenario --list)"
        )
    return files[name].read_text(encoding="utf-8")


def describe(toml_text: str) -> str:
    """The first comment paragraph of a scenario, on one line, cut to DESCRIPTION_MAX."""
    words: list[str] = []
    for line in toml_text.splitlines():
        if not line.startswith("#"):
            break
        body = line.lstrip("#").strip()
        if not body:
            break
        words.append(body)
    desc = " ".join(words)
    if len(desc) <= DESCRIPTION_MAX:
        return desc
    return desc[: DESCRIPTION_MAX - 1].rsplit(" ", 1)[0] + "…"
