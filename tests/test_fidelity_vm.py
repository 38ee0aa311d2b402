"""vmsim fidelity in a virtual machine: initramfs, guest driver, QEMU's lifetime, a real guest."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vmsim.fidelity import compare as fc
from vmsim.fidelity import guest, initramfs, vm
from vmsim.fidelity.experiment import FidelityError, load_experiments, parse_experiment
from vmsim.fidelity.record import load_recording

# A minimal static ELF header: 64-bit little-endian, one PT_LOAD program header.
STATIC_ELF = (
    b"\x7fELF\x02\x01\x01" + b"\0" * 9 + (2).to_bytes(2, "little") + b"\0" * 14
    + (64).to_bytes(8, "little") + b"\0" * 14 + (56).to_bytes(2, "little")
    + (1).to_bytes(2, "little") + b"\0" * 6 + (1).to_bytes(4, "little") + b"\0" * 52
)  # fmt: skip
DYNAMIC_ELF = STATIC_ELF[:64] + (3).to_bytes(4, "little") + STATIC_ELF[68:]

MODULES_DEP = """kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko
kernel/lib/crc16.ko:
kernel/fs/mbcache.ko:
kernel/fs/jbd2/jbd2.ko:
kernel/crypto/crc32c_generic.ko:
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/loop.ko:
"""  # noqa: E501 - modules.dep lines as depmod writes them


def fake_kernel(root: Path, release: str = "6.1.0-0-test") -> Path:
    """A kernel package's module tree with the modules the guest needs (dummy contents)."""
    mdir = root / "lib" / "modules" / release
    for line in MODULES_DEP.splitlines():
        path = mdir / line.split(":")[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"module " + path.stem.encode())
    (mdir / "modules.dep").write_text(MODULES_DEP)
    return mdir


# ---------------------------------------------------------------------------
# The initramfs


def test_newc_round_trip_and_padding():
    entries = [
        initramfs.Entry("/bin", stat.S_IFDIR | 0o755),
        initramfs.Entry("/init", stat.S_IFREG | 0o755, b"#!/bin/sh\necho hi\n"),
        initramfs.Entry("/dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)),
        initramfs.Entry("/bin/sh", stat.S_IFLNK | 0o777, b"busybox"),
    ]
    data = initramfs.newc(entries)
    assert len(data) % 4 == 0 and data.startswith(b"070701")
    assert initramfs.read_newc(data) == entries
    assert initramfs.newc(entries) == data  # the same bytes every time
    with pytest.raises(FidelityError, match="not a newc"):
        initramfs.read_newc(b"0808" + data[4:])


def test_newc_is_what_cpio_reads(tmp_path):
    cpio = shutil.which("cpio") or (shutil.which("busybox") and "busybox")
    if cpio is None:
        pytest.skip("no cpio here to cross-check the archive with")
    entries = [
        initramfs.Entry("/d", stat.S_IFDIR | 0o755),
        initramfs.Entry("/d/odd-name.txt", stat.S_IFREG | 0o644, b"x" * 5),
        initramfs.Entry("/link", stat.S_IFLNK | 0o777, b"d/odd-name.txt"),
    ]
    argv = [cpio, "-t"] if cpio != "busybox" else ["busybox", "cpio", "-t"]
    r = subprocess.run(argv, input=initramfs.newc(entries), capture_output=True, check=True)
    assert r.stdout.decode().split() == ["d", "d/odd-name.txt", "link"]


def test_modules_load_after_their_dependencies(tmp_path):
    deps = initramfs.module_paths(fake_kernel(tmp_path))
    order = initramfs.load_order(deps, initramfs.MODULES)
    assert order == [
        "virtio_ring",
        "virtio",
        "virtio_pci_modern_dev",
        "virtio_pci_legacy_dev",
        "virtio_pci",
        "virtio_blk",
        "9pnet",
        "9pnet_virtio",
        "netfs",
        "fscache",
        "9p",
        "crc32c_generic",
        "jbd2",
        "mbcache",
        "crc16",
        "ext4",
        "loop",
    ]
    for m, (_, ds) in deps.items():
        if m in order:
            assert all(order.index(d) < order.index(m) for d in ds), m
    with pytest.raises(FidelityError, match="no module xfs"):
        initramfs.load_order(deps, ("xfs",))
    loop = {"a": ("a.ko", ["b"]), "b": ("b.ko", ["a"])}
    with pytest.raises(FidelityError, match="dependency loop"):
        initramfs.load_order(loop, ("a",))


def test_initramfs_holds_busybox_the_modules_in_order_and_init(tmp_path):
    fake_kernel(tmp_path / "root")
    bb = tmp_path / "busybox"
    bb.write_bytes(STATIC_ELF)
    entries = initramfs.read_newc(
        gzip.decompress(initramfs.build(tmp_path / "root", "6.1.0-0-test", bb))
    )
    files = {e.path: e for e in entries}
    assert files["/bin/busybox"].data == STATIC_ELF
    assert files["/dev/console"].rdev == (5, 1) and stat.S_ISCHR(files["/dev/console"].mode)
    assert files["/modules/ext4.ko"].data == b"module ext4"
    init = files["/init"].data.decode()
    assert files["/init"].mode & 0o111
    assert "for m in virtio_ring virtio " in init and " crc16 ext4 loop; do" in init
    # The host's root read-only, the share writable, the disk under /run, then the driver.
    assert f"ro,cache=loose,msize=512000 {initramfs.ROOT_TAG} $R" in init
    assert f"{initramfs.SHARE_TAG} $R{initramfs.SHARE_DIR}" in init
    assert f"mount -t ext4 /dev/vda $R{initramfs.DISK_DIR}" in init
    assert "$R/tmp" not in init  # the host's /tmp stays visible (a checkout may be there)
    assert f"-m vmsim.fidelity.guest {initramfs.SHARE_DIR}/job.json" in init
    assert init.rstrip().endswith("poweroff -f")
    bb.write_bytes(DYNAMIC_ELF)
    with pytest.raises(FidelityError, match="not a static executable"):
        initramfs.build(tmp_path / "root", "6.1.0-0-test", bb)


def test_compressed_and_builtin_modules(tmp_path):
    mdir = fake_kernel(tmp_path / "root")
    # virtio_pci built into the kernel image, ext4 shipped xz-compressed (as Debian's 6.12 does).
    dep = (mdir / "modules.dep").read_text()
    dep = "\n".join(
        ln for ln in dep.splitlines() if not ln.startswith("kernel/drivers/virtio/virtio_pci.ko")
    )
    (mdir / "modules.dep").write_text(dep.replace("ext4/ext4.ko:", "ext4/ext4.ko.xz:") + "\n")
    (mdir / "modules.builtin").write_text("kernel/drivers/virtio/virtio_pci.ko\n")
    ext4 = mdir / "kernel/fs/ext4/ext4.ko"
    ext4.with_name("ext4.ko.xz").write_bytes(lzma.compress(b"module ext4"))
    ext4.unlink()
    bb = tmp_path / "busybox"
    bb.write_bytes(STATIC_ELF)
    entries = initramfs.read_newc(
        gzip.decompress(initramfs.build(tmp_path / "root", "6.1.0-0-test", bb))
    )
    files = {e.path: e for e in entries}
    assert files["/modules/ext4.ko"].data == b"module ext4"  # unpacked on the host
    assert "/modules/virtio_pci.ko" not in files
    assert " virtio_pci " not in files["/init"].data.decode()
    (mdir / "kernel/fs/ext4/ext4.ko.xz").rename(mdir / "kernel/fs/ext4/ext4.ko.zst")
    (mdir / "modules.dep").write_text(dep.replace("ext4/ext4.ko:", "ext4/ext4.ko.zst:") + "\n")
    with pytest.raises(FidelityError, match="compressed in a way not supported"):
        initramfs.build(tmp_path / "root", "6.1.0-0-test", bb)


def test_a_kernel_unpacked_by_hand_is_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    k = vm.GuestKernel("fedora-6.9", None, "6.9.0", "6.9.0-test", "a kernel unpacked by hand")
    with pytest.raises(vm.VmUnavailable, match="unpack the kernel by hand first"):
        vm.install_kernel(k)
    d = vm.kernel_dir(k)
    fake_kernel(d / "root", k.release)
    (d / "vmlinuz").write_bytes(b"kernel")
    monkeypatch.setattr(vm, "BUSYBOX", tmp_path / "busybox")
    (tmp_path / "busybox").write_bytes(STATIC_ELF)
    monkeypatch.setattr(
        vm, "_run", lambda argv, cwd=None: subprocess.CompletedProcess(argv, 0, "", "")
    )
    assert vm.install_kernel(k) == d
    assert json.loads((d / "kernel.json").read_text())["release"] == "6.9.0-test"


def test_static_elf_check():
    assert initramfs.is_static_elf(STATIC_ELF)
    assert not initramfs.is_static_elf(DYNAMIC_ELF)
    assert not initramfs.is_static_elf(b"#!/bin/sh\n")
    assert not initramfs.is_static_elf(Path(sys.executable).resolve().read_bytes()[: 1 << 16])


# ---------------------------------------------------------------------------
# The guest driver


class FakeLruGen(type(Path())):  # type: ignore[misc]
    """lru_gen/enabled as the kernel answers: written y or n, read 0x0007 or 0x0000."""

    def write_text(self, data, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        return super().write_text({"y\n": "0x0007\n", "n\n": "0x0000\n"}[data])


class FakeThp(type(Path())):  # type: ignore[misc]
    """transparent_hugepage/enabled as the kernel answers: the chosen mode in brackets."""

    def write_text(self, data, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        modes = ["always", "madvise", "never"]
        return super().write_text(" ".join(f"[{m}]" if m == data.strip() else m for m in modes))


def job(**kw) -> dict:
    return {
        "experiment": "tiny-memcg",
        "experiments": str(load_experiments()["tiny-memcg"].path.parent),
        "runs": 2,
        "trace": True,
        "mglru": False,
    } | kw


def test_guest_job_is_checked(tmp_path):
    p = tmp_path / "job.json"
    p.write_text(json.dumps(job()))
    assert guest.load_job(p) == job()
    for bad, msg in (({"runs": True}, "'runs'"), ({"mglru": "yes"}, "'mglru'")):
        p.write_text(json.dumps(job(**bad)))
        with pytest.raises(FidelityError, match=msg):
            guest.load_job(p)
    p.write_text("{")
    with pytest.raises(FidelityError, match="not a job"):
        guest.load_job(p)


def test_guest_switches_mglru_and_records_into_the_share(tmp_path, monkeypatch):
    lru = FakeLruGen(tmp_path / "enabled")
    lru.write_text("n\n")
    calls = []

    def fake_record(exp, runs, out, work, **kw):  # noqa: ANN001, ANN003
        calls.append((exp.name, runs, out, work, kw["trace"], kw["disk_probe"]))
        return out / "m" / "tiny-memcg.json"

    monkeypatch.setattr(guest, "record", fake_record)
    path = guest.run_job(job(mglru=True), tmp_path, lru_gen=lru, work=tmp_path / "w")
    assert lru.read_text() == "0x0007\n"
    assert calls == [("tiny-memcg", 2, tmp_path / "out", tmp_path / "w", True, True)]
    assert path == tmp_path / "out" / "m" / "tiny-memcg.json"
    thp = FakeThp(tmp_path / "thp")
    thp.write_text("always\n")
    guest.run_job(job(thp="madvise"), tmp_path, lru_gen=lru, thp=thp, work=tmp_path / "w")
    assert lru.read_text() == "0x0000\n" and thp.read_text() == "always [madvise] never"
    p = tmp_path / "job.json"
    p.write_text(json.dumps(job(thp="sometimes")))
    with pytest.raises(FidelityError, match="'thp' must be one of"):
        guest.load_job(p)
    with pytest.raises(FidelityError, match="no MGLRU"):
        guest.set_lru_gen(True, tmp_path / "absent")
    assert guest.set_lru_gen(False, tmp_path / "absent") == "absent"


def test_a_calibration_job_is_checked_and_writes_the_profile_into_the_share(tmp_path, monkeypatch):
    from vmsim import calibrate

    p = tmp_path / "job.json"
    good = {"calibrate": {"quick": True, "base": "measured-6.18"}}
    p.write_text(json.dumps(good))
    assert guest.load_job(p) == good
    for bad, msg in (({"quick": 1, "base": "x"}, "'calibrate.quick'"), ({"quick": True}, "base")):
        p.write_text(json.dumps({"calibrate": bad}))
        with pytest.raises(FidelityError, match=msg):
            guest.load_job(p)
    seen = {}

    def fake_measure(quick, workdir, base_cost, progress, base_name):  # noqa: ANN001
        seen.update(quick=quick, workdir=workdir, base_name=base_name, syscall=base_cost["syscall"])
        cal = calibrate.Calibration(
            machine={"machine": "emulated", "kernel": "6.1.0-0-test", "date": "2026-11-30"}
        )
        cal.figures["syscall"] = calibrate.Figure("syscall", [1000.0, 1200.0, 1100.0], "getppid")
        cal.knobs["syscall"] = cal.figures["syscall"]
        return cal

    monkeypatch.setattr(calibrate, "measure", fake_measure)
    path = guest.run_calibration(good, tmp_path, work=tmp_path / "w")
    assert seen == {"quick": True, "workdir": tmp_path / "w", "base_name": "measured-6.18",
                    "syscall": 174}  # fmt: skip
    assert path == tmp_path / "out" / "costs.toml"
    text = path.read_text()
    assert 'name = "calibrated-6.1.0-0-test"' in text and "syscall = 1100" in text
    figures = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert figures["knobs"]["syscall"]["values"] == [1000.0, 1200.0, 1100.0]


def test_a_recording_runs_with_the_costs_measured_on_its_own_machine(tmp_path):
    guest_machine = {
        "kernel": "6.1.0-56-amd64",
        "kernel_version": "6.1.192",
        "memory_bytes": 2 << 30,
        "cpus": 2,
        "vm": {"emulation": "tcg", "thp_set": "madvise"},
        "lru_gen": "0x0007",
    }
    host_machine = {"kernel": "6.18.44", "memory_bytes": 24 << 30, "cpus": 2}
    from vmsim.fidelity import host

    assert host.cost_key(guest_machine) == "6.1.192-2GiB-2cpu-tcg"
    assert host.machine_key(guest_machine) == "6.1.192-2GiB-2cpu-tcg-thp-madvise-mglru"
    assert fc.machine_costs(guest_machine, tmp_path) is None
    (tmp_path / "6.1.192-2GiB-2cpu-tcg.toml").write_text("x")
    assert fc.machine_costs(guest_machine, tmp_path) == str(tmp_path / "6.1.192-2GiB-2cpu-tcg.toml")
    assert fc.machine_costs(host_machine, tmp_path) is None


def test_guest_failure_is_a_one_line_status(tmp_path, capsys):
    (tmp_path / "job.json").write_text(json.dumps(job(experiment="nope")))
    assert guest.main([str(tmp_path / "job.json")]) == 1
    status = json.loads((tmp_path / "status.json").read_text())
    assert status == {"ok": False, "error": "unknown experiment 'nope'"}


# ---------------------------------------------------------------------------
# The host side


K = vm.KERNELS["debian-6.1"]


def test_qemu_command_line(tmp_path):
    argv = vm.qemu_argv(
        tmp_path, tmp_path / "i", tmp_path / "a,b", tmp_path / "d.img", tmp_path / "c", 2 << 30, 2
    )
    text = " ".join(argv)
    assert "-accel tcg,thread=multi" in text and "-m 2048M -smp 2" in text
    assert f"local,path=/,mount_tag={initramfs.ROOT_TAG},security_model=none,readonly=on" in text
    assert f"path={tmp_path}/a,,b,mount_tag={initramfs.SHARE_TAG}" in text  # commas doubled
    assert "-nodefaults" in argv and "-no-reboot" in argv
    assert "-virtfs" in argv and argv[argv.index("-append") + 1] == vm.KERNEL_CMDLINE
    assert argv[argv.index("-initrd") + 1] == str(tmp_path / "i")


def test_guest_sizes_follow_the_experiment():
    exps = load_experiments()
    assert vm.disk_size(exps["tiny-memcg"]) == 2 << 30  # the 2 GiB floor
    assert vm.disk_size(exps["dd-memcg"]) == 3 << 30  # twice 1 GiB plus 1 GiB
    e = exps["tiny-memcg"]
    assert vm.time_limit(e, 2) == vm.BOOT_SECONDS + vm.PROBE_SECONDS + 2 * (60 * 2 + 60)


def test_record_in_vm_refuses_before_booting(tmp_path, monkeypatch):
    booted = []
    monkeypatch.setattr(vm, "install", lambda *a: booted.append(a))
    exps = load_experiments()
    cases = (
        (exps["thp-writers-boost"], {}, "too large for it"),
        (exps["tiny-memcg"], {"memory": 64 << 20}, "--guest-memory 64 MiB"),
        (exps["tiny-memcg"], {"cpus": 999}, "--guest-cpus 999"),
    )
    for e, kw, msg in cases:
        with pytest.raises(FidelityError, match=msg) as ei:
            vm.record_in_vm(e, "debian-6.1", 1, tmp_path, tmp_path, **kw)
        assert "\n" not in str(ei.value)
    with pytest.raises(FidelityError, match="unknown guest kernel"):
        vm.record_in_vm(exps["tiny-memcg"], "debian-9", 1, tmp_path, tmp_path)
    assert booted == [] and not any(tmp_path.iterdir())


def test_console_passes_whole_lines(tmp_path):
    said = []
    c = vm.Console(tmp_path / "console", said.append)
    c.poll()  # not there yet
    (tmp_path / "console").write_bytes(b"vmsim-guest: up\r\n  write: 1.0")
    c.poll()
    assert said == ["vmsim-guest: up"]
    with open(tmp_path / "console", "ab") as f:
        f.write(b" s\n\n")
    c.poll()
    assert said == ["vmsim-guest: up", "  write: 1.0 s"] and c.last() == "write: 1.0 s"
    with open(tmp_path / "console", "ab") as f:
        f.write(b"vmsim-guest: error: no disk\n[    6.4] reboot: Power down\n")
    c.poll()
    assert c.last() == "no disk"  # the guest's error, not the kernel's last word


def fake_qemu(monkeypatch, tmp_path, script: str) -> Path:
    """QEMU replaced by a shell script; returns where it writes its pid."""
    pidfile = tmp_path / "qemu.pid"
    monkeypatch.setattr(vm, "qemu_argv", lambda *a: ["sh", "-c", f"echo $$ > {pidfile}; {script}"])
    monkeypatch.setattr(vm, "kernel_dir", lambda k: tmp_path)
    monkeypatch.setattr(vm.initramfs, "build", lambda *a: b"initrd")
    return pidfile


def alive(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text()), 0)
    except ProcessLookupError:
        return False
    return True


def test_a_hung_guest_is_killed_and_its_files_removed(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    pidfile = fake_qemu(monkeypatch, tmp_path, "exec sleep 60")
    t0 = time.monotonic()
    with pytest.raises(FidelityError, match="did not finish within 2 s and was killed"):
        vm.run_guest(K, job(), work, disk_bytes=64 << 20, limit=2.0)
    assert time.monotonic() - t0 < 20
    assert not alive(pidfile) and list(work.iterdir()) == []


def test_an_interrupted_guest_is_killed_and_its_files_removed(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    pidfile = fake_qemu(monkeypatch, tmp_path, "exec sleep 60")
    real_sleep = time.sleep

    pressed = []

    def ctrl_c(s: float) -> None:
        if pidfile.exists() and not pressed:
            pressed.append(True)
            raise KeyboardInterrupt
        real_sleep(s)

    monkeypatch.setattr(vm.time, "sleep", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        vm.run_guest(K, job(), work, disk_bytes=64 << 20, limit=60.0)
    assert not alive(pidfile) and list(work.iterdir()) == []


def test_a_guest_that_stops_without_a_result_says_what_it_said_last(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    fake_qemu(monkeypatch, tmp_path, "exit 0")
    with pytest.raises(FidelityError, match="stopped without a result"):
        vm.run_guest(K, job(), work, disk_bytes=64 << 20, limit=30.0)
    assert list(work.iterdir()) == []


# ---------------------------------------------------------------------------
# A real guest (CI installs QEMU and the kernel package with make fidelity-vm)


def installed_or_skip() -> None:
    """Installs what the guest needs; skips with the one-line reason where it cannot be."""
    try:
        vm.install("debian-6.1")
    except vm.VmUnavailable as e:
        pytest.skip(f"no guest kernel here: {e}")


def test_tiny_experiment_in_a_debian_6_1_guest(tmp_path):
    installed_or_skip()
    e = load_experiments()["tiny-memcg"]
    said: list[str] = []
    path = vm.record_in_vm(
        e, "debian-6.1", 1, tmp_path / "rec", tmp_path, disk_probe=False, log=said.append
    )
    assert path == tmp_path / "rec" / "6.1.192-2GiB-2cpu-tcg" / "tiny-memcg.json"
    rec = load_recording(path)
    m = rec["machine"]
    assert m["kernel"] == K.release and m["kernel_version"] == "6.1.192"
    assert m["cpus"] == 2 and m["lru_gen"] == "0x0000" and m["filesystem"] == "ext4"
    assert m["vm"]["emulation"] == "tcg" and m["vm"]["kernel_package"] == f"{K.package} {K.version}"
    assert abs(m["memory_bytes"] - (2 << 30)) < 64 << 20
    run = rec["runs"][0]
    start, write = run["snapshots"][0], run["snapshots"][1]
    # 64 MiB dirtied, less what per-CPU counters not yet folded into /proc/vmstat hold.
    assert write["vmstat"]["nr_dirtied"] - start["vmstat"]["nr_dirtied"] >= 0.99 * 16384
    assert write["memcg"]["max_usage_in_bytes"] <= 32 << 20
    assert any(line.startswith("tiny-memcg: run 1 of 1") for line in said)
    assert [p.name for p in tmp_path.iterdir()] == ["rec"]  # no disk image, no share left
    out = fc.fidelity({e.name: e}, [], tmp_path / "rec")
    (k,) = out["kernels"].values()
    assert k["label"] == "6.1" and k["emulated"] and k["total"] == len(e.metrics) - 1


def test_a_failing_guest_experiment_is_one_line(tmp_path):
    installed_or_skip()
    text = """
name = "absent"
description = "reads a file that does not exist"
metrics = ["vmstat.nr_dirtied", "vmstat.pgscan_file", "vmstat.pgsteal_file",
           "vmstat.oom_kill", "time.seconds"]
timeout = "30s"
[[task]]
name = "dd"
[[phase]]
name = "read"
steps = [{ task = "dd", op = "read", file = "absent" }]
"""
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "absent.toml").write_text(text)
    e = parse_experiment(text, tmp_path / "exp" / "absent.toml")
    with pytest.raises(FidelityError, match="in the guest: task dd: FileNotFoundError") as ei:
        vm.record_in_vm(e, "debian-6.1", 1, tmp_path / "rec", tmp_path, disk_probe=False)
    assert "\n" not in str(ei.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]


def test_cli_guest_errors_are_one_line(capsys):
    from vmsim.cli import main

    for argv, msg in (
        (["fidelity", "--mglru"], "--mglru needs --kernel"),
        (["fidelity", "--guest-thp", "never"], "--guest-thp needs --kernel"),
        (["fidelity", "--record", "tiny-memcg", "--kernel", "nope"], "unknown guest kernel"),
        (
            ["fidelity", "--record", "tiny-memcg", "--kernel", "debian-6.1", "--guest-memory", "x"],
            "--guest-memory x: not a size",
        ),
        (
            ["fidelity", "--record", "hugetlb-fill", "--kernel", "debian-6.1"],
            "too large for it (--guest-memory)",
        ),
    ):
        with pytest.raises(SystemExit) as ei:
            main(argv)
        assert ei.value.code == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err


def test_calibrate_kernel_writes_the_guests_profile_named_as_emulated(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from vmsim import api, calibrate, cli

    cal = calibrate.Calibration(
        machine={"machine": "QEMU TCG CPU", "kernel": "6.1.0-0-test", "date": "2026-11-30"}
    )
    cal.figures["syscall"] = calibrate.Figure("syscall", [800.0, 900.0, 850.0], "getppid")
    cal.knobs["syscall"] = cal.figures["syscall"]
    prof = calibrate.profile(cal, api.cost_profile("measured-6.18"), "calibrated-6.1.0-0-test")
    data = calibrate.as_json(cal, prof)
    data["machine"]["vm"] = {"emulation": "tcg", "qemu": "QEMU emulator version 7.2"}
    asked = []

    def fake(kernel, quick, base, workdir, log):  # noqa: ANN001
        asked.append((kernel, quick, base, workdir))
        return data

    monkeypatch.setattr(vm, "calibrate_in_vm", fake)
    out = tmp_path / "guest.toml"
    r = CliRunner().invoke(
        cli.main_group,
        ["calibrate", "--kernel", "debian-6.1", "--quick", "--base", "measured-6.18",
         "--dir", str(tmp_path), "--name", "measured-test", "-o", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert asked == [("debian-6.1", True, "measured-6.18", tmp_path)]
    profile = api.cost_profile(str(out))
    assert profile["name"] == "measured-test" and profile["cost"]["syscall"] == 850
    assert profile["machine"] == "QEMU TCG CPU; a QEMU tcg guest (QEMU emulator version 7.2)"
    assert "syscall" in r.output and f"wrote {out}" in r.output
