"""`vmsim replay access`: libCacheSim's trace formats through the kernel's page cache
and LRU, bad input, determinism, and the cross-check against libCacheSim's LRU and
SLRU on the same trace."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest
from vmsim import replay

ZIPF = Path(__file__).parent / "data" / "replay" / "zipf-20k.oracleGeneral.zst"


def oracle(ids: list[int]) -> bytes:
    """oracleGeneral records (u32 time, u64 id, u32 size, i64 next access) of these ids."""
    return b"".join(struct.pack("<IQIq", i, obj, 4096, -1) for i, obj in enumerate(ids))


def test_a_zstd_trace_is_read_and_replayed(cli):
    p = cli(
        "replay", "access", ZIPF, "--format", "oracleGeneral", "--cache-size", "1MiB,4MiB", "--json"
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["requests"] == 20000
    small, large = r["sizes"]
    assert (small["cache_pages"], large["cache_pages"]) == (256, 1024)
    assert small["hits"] + small["misses"] == 20000
    assert 0 < small["hit_ratio"] < large["hit_ratio"] < 1
    # Reclaim ran: what it stole left shadows, some of which refaulted.
    assert small["pgsteal"] > 0 and small["pgscan"] >= small["pgsteal"]
    assert 0 < small["refaults"] <= small["misses"]
    assert p.stderr == ""


def test_the_same_trace_in_every_format_gives_the_same_hits(cli, tmp_path):
    ids = [(i * 7919) % 600 for i in range(5000)]
    (tmp_path / "t.bin").write_bytes(oracle(ids))
    (tmp_path / "t.txt").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "t.csv").write_text("time,obj\n" + "".join(f"{n},{i}\n" for n, i in enumerate(ids)))
    with gzip.open(tmp_path / "t.txt.gz", "wt") as f:
        f.write("".join(f"{i}\n" for i in ids))
    # vscsi version 2: one 4 KiB request per id at sector id*8.
    v2 = b"".join(
        struct.pack("<HHIIIQQQ", 0x28, 0x0200, n, 4096, 1, i * 8, n, 0) for n, i in enumerate(ids)
    )
    (tmp_path / "t.vscsi").write_bytes(v2)
    runs = [
        ("t.bin", "oracleGeneral", []),
        ("t.txt", "txt", []),
        ("t.txt.gz", "txt", []),
        ("t.csv", "csv", ["--obj-id-col", "2", "--has-header"]),
        ("t.vscsi", "vscsi", []),
    ]
    hits = set()
    for name, fmt, extra in runs:
        p = cli(
            "replay",
            "access",
            tmp_path / name,
            "--format",
            fmt,
            "--cache-size",
            "1MiB",
            "--json",
            *extra,
        )
        assert p.returncode == 0, (name, p.stderr)
        r = json.loads(p.stdout)
        assert r["requests"] == 5000, name
        hits.add(r["sizes"][0]["hits"])
    assert len(hits) == 1


def test_malformed_lines_are_counted_with_their_numbers(cli, tmp_path):
    t = tmp_path / "bad.txt"
    t.write_text("1\n2\nbanana\n3\n\n0x10\n-5\n" + "7\n" * 10 + "x y\n")
    p = cli("replay", "access", t, "--format", "txt", "--cache-size", "1MiB", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["requests"] == 14
    assert r["bad_input"]["malformed"] == 3
    assert [n for n, _ in r["bad_input"]["examples"]] == [3, 7, 18]
    assert p.stderr.strip() == (
        "vmsim: warning: 3 malformed lines skipped (first: line 3: 'banana'; "
        "line 7: '-5'; line 18: 'x y')"
    )


def test_a_truncated_record_ends_the_replay_with_the_results_so_far(cli, tmp_path):
    t = tmp_path / "cut.bin"
    t.write_bytes(oracle(list(range(100)) * 3)[: 24 * 250 + 7])
    p = cli("replay", "access", t, "--format", "oracleGeneral", "--cache-size", "1MiB")
    assert p.returncode == 0, p.stderr
    assert "100 distinct pages" in p.stdout and "250 requests" in p.stdout
    assert p.stderr.strip() == (
        "vmsim: warning: truncated record 251 at byte 6000: 7 of 24 bytes; "
        "the results are those of the requests before it"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.bin", "--format", "txt", "--cache-size", "1MiB"], "missing.bin: no such file"),
        (["t.bin", "--format", "lcs", "--cache-size", "1MiB"], "'lcs' is not one of"),
        (["t.bin", "--format", "txt", "--cache-size", "12"], "smaller than one 4 KiB page"),
        (["t.bin", "--format", "txt", "--cache-size", "1Mib"], "--cache-size '1Mib'"),
        (
            ["t.bin", "--format", "csv", "--cache-size", "1MiB", "--delimiter", "::"],
            "must be one byte",
        ),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(cli, tmp_path, args, message):
    (tmp_path / "t.bin").write_text("1\n")
    p = cli("replay", "access", *args, cwd=tmp_path)
    assert p.returncode == 2, p.stdout
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("vmsim: error: ")
    assert message in p.stderr


def test_a_fifo_is_refused_and_a_line_without_end_is_malformed(cli, tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    p = cli("replay", "access", tmp_path / "fifo", "--format", "txt", "--cache-size", "1MiB")
    assert p.returncode == 2 and "is a FIFO, not a regular file" in p.stderr
    (tmp_path / "long.txt").write_bytes(b"1\n" + b"9" * 200_000 + b"\n2\n")
    p = cli(
        "replay",
        "access",
        tmp_path / "long.txt",
        "--format",
        "txt",
        "--cache-size",
        "1MiB",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["requests"] == 2 and r["bad_input"]["malformed"] == 1
    assert r["bad_input"]["examples"][0][0] == 2


def test_replays_are_byte_identical(cli, tmp_path):
    outs = [
        cli("replay", "access", ZIPF, "--format", "oracleGeneral", "--cache-size", "2MiB").stdout
        for _ in range(2)
    ]
    assert outs[0] == outs[1] and "hit ratio" in outs[0]


def test_the_miss_ratio_curve_is_plotted(cli, tmp_path):
    png = tmp_path / "mrc.png"
    p = cli(
        "replay",
        "access",
        ZIPF,
        "--format",
        "oracleGeneral",
        "--cache-size",
        "512KiB,1MiB,2MiB,4MiB",
        "--plot",
        png,
    )
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_kernel_lru_lands_between_libcachesim_lru_and_slru(tmp_path, capsys):
    """On a Zipf(1.0) trace (a popularity skew both kinds of cache are built for), the
    kernel's two lists with refault detection keep more of the hot pages than plain LRU
    and fewer than SLRU's segments; printed side by side."""
    pytest.importorskip("libcachesim")
    trace = tmp_path / "zipf.oracleGeneral"
    replay.write_zipf_trace(trace, 200_000, 20_000, 1.0, seed=3)
    sizes = [250, 1000, 4000]
    ours = replay.replay_access(str(trace), "oracleGeneral", sizes)["sizes"]
    rows = []
    for pages, r in zip(sizes, ours, strict=True):
        lcs = replay.libcachesim_hit_ratios(trace, pages)
        assert lcs is not None
        rows.append((pages, lcs["LRU"][0], r["hit_ratio"], lcs["SLRU"][0]))
    with capsys.disabled():
        print("\ncache [pages]  libCacheSim LRU  vmsim kernel LRU  libCacheSim SLRU")
        for pages, lru, k, slru in rows:
            print(f"{pages:13d}  {lru:15.4f}  {k:16.4f}  {slru:16.4f}")
    for pages, lru, k, slru in rows:
        assert lru < k < slru, (pages, lru, k, slru)
