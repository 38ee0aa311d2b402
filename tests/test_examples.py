"""`vmsim scenario --list` / `vmsim scenario NAME`: the examples shipped in the package,
and `--plot`'s watermarks on their own scale."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from vmsim import api, examples, plots

REPO = Path(__file__).resolve().parent.parent
PACKAGE_EXAMPLES = REPO / "python" / "vmsim" / "scenarios"
TEMPLATES = REPO / "python" / "vmsim" / "reproduce" / "scenarios"


def test_the_examples_are_package_data_and_the_repository_links_to_them():
    # maturin puts real files under python/vmsim into the wheel, not what a link names.
    assert PACKAGE_EXAMPLES.is_dir() and not PACKAGE_EXAMPLES.is_symlink()
    assert (REPO / "scenarios").is_symlink()
    assert (REPO / "scenarios").resolve() == PACKAGE_EXAMPLES.resolve()
    shipped = resources.files("vmsim").joinpath("scenarios")
    assert sorted(e.name for e in shipped.iterdir() if e.name.endswith(".toml")) == sorted(
        p.name for p in PACKAGE_EXAMPLES.glob("*.toml")
    )


def test_list_names_every_example_and_template(cli):
    p = cli("scenario", "--list")
    assert p.returncode == 0, p.stderr
    names = [line.split()[0] for line in p.stdout.splitlines()]
    expected = ["default"]
    expected += sorted(f.stem for f in PACKAGE_EXAMPLES.glob("*.toml"))
    expected += sorted(f"reproduce/{f.stem}" for f in TEMPLATES.glob("*.toml"))
    assert names == expected
    hackbench = next(line for line in p.stdout.splitlines() if line.startswith("hackbench "))
    assert "hackbench 15 process 1000" in hackbench


@pytest.mark.parametrize("name", examples.names())
def test_each_example_prints_its_file(name):
    from click.testing import CliRunner
    from vmsim.cli import main_group

    p = CliRunner().invoke(main_group, ["scenario", name])
    assert p.exit_code == 0, p.output
    folder, stem = (TEMPLATES, name.split("/", 1)[1]) if "/" in name else (PACKAGE_EXAMPLES, name)
    assert p.stdout == (folder / f"{stem}.toml").read_text().rstrip("\n") + "\n"


@pytest.mark.parametrize("name", [n for n in examples.names() if "/" not in n])
def test_each_example_is_a_valid_scenario(name):
    from vmsim import _vmsim

    _vmsim.validate(api.load_scenario(examples.text(name)))


def test_no_name_prints_the_default_and_a_bad_name_is_one_line(cli):
    p = cli("scenario")
    assert p.returncode == 0 and p.stdout == api.default_scenario().rstrip("\n") + "\n"
    p = cli("scenario", "nosuch")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "no example scenario 'nosuch' (known: boost-sweep," in p.stderr
    p = cli("scenario", "hackbench", "--list")
    assert p.returncode == 2 and "--list takes no NAME" in p.stderr


def test_descriptions_are_one_short_line():
    text = "# one two three\n# four\n#\n# not this\nname = 'x'\n"
    assert examples.describe(text) == "one two three four"
    long = "# " + "word " * 40 + "\n"
    d = examples.describe(long)
    assert len(d) <= examples.DESCRIPTION_MAX and d.endswith("…")


def test_plot_draws_the_watermarks_on_their_own_axis(small_scenario):
    r = api.run(small_scenario)
    fig = plots.timeseries_figure([r.data])
    free_ax, wm_ax, pb_ax = fig.axes[:3]
    ts = r.data["timeseries"]
    assert [line.get_label() for line in free_ax.lines] == ["nr_free_pages"]
    for i, line in enumerate(wm_ax.lines):
        assert list(line.get_ydata()) == [w[i] for w in ts["watermarks"]]
    # Their own scale: the axis ends near the high watermark, far below free memory.
    top = max(w[2] for w in ts["watermarks"])
    assert top <= wm_ax.get_ylim()[1] < max(ts["vmstat"]["nr_free_pages"])
    assert pb_ax.get_ylabel() == "pageblocks"
