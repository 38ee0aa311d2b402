"""The guest's initramfs: busybox, the kernel modules that reach the disks, and ``/init``.

Built without a compiler or root: the archive is written here in the kernel's
``newc`` cpio format (``Documentation/driver-api/early-userspace/buffer-format.rst``),
gzipped, from a static busybox and the modules of an unpacked kernel package.
``/init`` loads the modules in dependency order, mounts the host's root
read-only over 9p, the experiment's ext4 disk on its ``/run/vmsim-disk``, a
writable 9p share on its ``/run/vmsim`` (a tmpfs on ``/run``), the cgroup-v1 memory controller,
and runs the guest driver (:mod:`vmsim.fidelity.guest`) with the host's own
Python inside ``chroot``.
"""

from __future__ import annotations

import gzip
import io
import lzma
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from vmsim.fidelity.experiment import FidelityError

# The modules that reach the disk, the 9p shares and ext4; their dependencies
# come from modules.dep (crc32c_generic is ext4's and jbd2's soft dependency).
# loop: `vmsim calibrate --kernel`'s file creates run on a loop-mounted scratch ext4.
MODULES = ("virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "crc32c_generic", "ext4", "loop")
ROOT_TAG = "vmsim-root"
SHARE_TAG = "vmsim-share"
# Where the share and the experiment's disk are mounted inside the chroot: under
# the host's /run, covered by a tmpfs, so that every other directory of the host
# (its /tmp and /var/tmp too, where a checkout may live) stays visible.
SHARE_DIR = "/run/vmsim"
DISK_DIR = "/run/vmsim-disk"
TMP_DIR = "/run/vmsim-tmp"
# Directories of the host's root the guest mounts over (they must exist on the host).
MOUNT_POINTS = ("/proc", "/sys", "/dev", "/run")
_NEWC_TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    """One file of a cpio archive: a directory, a regular file, a symlink or a device."""

    path: str
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def newc(entries: list[Entry]) -> bytes:
    """A ``newc`` cpio archive of the entries (uid/gid 0, mtime 0: the same bytes every time)."""
    out = io.BytesIO()
    for ino, e in enumerate([*entries, Entry(_NEWC_TRAILER, 0)], start=1):
        name = e.path.lstrip("/").encode() + b"\0"
        fields = (
            ino if e.path != _NEWC_TRAILER else 0,
            e.mode,
            0,
            0,
            2 if stat.S_ISDIR(e.mode) else 1,
            0,
            len(e.data),
            0,
            0,
            e.rdev[0],
            e.rdev[1],
            len(name),
            0,
        )
        out.write(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.write(name)
        out.write(b"\0" * (-(110 + len(name)) % 4))
        out.write(e.data)
        out.write(b"\0" * (-len(e.data) % 4))
    return out.getvalue()


def read_newc(data: bytes) -> list[Entry]:
    """The entries of a ``newc`` archive (the inverse of :func:`newc`, for checking)."""
    out: list[Entry] = []
    pos = 0
    while True:
        if data[pos : pos + 6] != b"070701":
            raise FidelityError(f"not a newc cpio archive at byte {pos}")
        f = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = f[11], f[6]
        start = pos + 110
        name = data[start : start + namesize - 1].decode()
        start += namesize + (-(110 + namesize) % 4)
        body = data[start : start + filesize]
        pos = start + filesize + (-filesize % 4)
        if name == _NEWC_TRAILER:
            return out
        out.append(Entry("/" + name, f[1], body, (f[9], f[10])))


def module_paths(modules_dir: Path) -> dict[str, tuple[str, list[str]]]:
    """modules.dep of a kernel's module tree: module name -> (path, dependencies' names)."""
    dep = modules_dir / "modules.dep"
    try:
        text = dep.read_text(encoding="utf-8")
    except OSError as e:
        raise FidelityError(f"{dep}: cannot read ({e.strerror}); run depmod -b first") from None
    out = {}
    for line in text.splitlines():
        path, _, deps = line.partition(":")
        out[_module_name(path)] = (path, [_module_name(d) for d in deps.split()])
    return out


def _module_name(path: str) -> str:
    """A module's name from its path (``kernel/fs/9p/9p.ko.xz``: ``9p``), ``-`` as ``_``."""
    base = Path(path).name
    return re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base).replace("-", "_")


def builtin_modules(modules_dir: Path) -> frozenset[str]:
    """The modules built into the kernel image (modules.builtin): nothing to load."""
    try:
        text = (modules_dir / "modules.builtin").read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(_module_name(line) for line in text.split())


def load_order(
    deps: dict[str, tuple[str, list[str]]],
    wanted: tuple[str, ...],
    builtin: frozenset[str] = frozenset(),
) -> list[str]:
    """The modules to insmod, each after its dependencies (as modprobe would load them)."""
    order: list[str] = []

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in order or (name in builtin and name not in deps):
            return
        if name in chain:
            raise FidelityError(f"modules.dep: a dependency loop through {name}")
        if name not in deps:
            raise FidelityError(f"the kernel package has no module {name}")
        for d in reversed(deps[name][1]):
            visit(d, (*chain, name))
        order.append(name)

    for w in wanted:
        visit(w, ())
    return order


def init_script(order: list[str]) -> str:
    """The guest's ``/init`` (busybox sh): mounts, then the guest driver, then power off."""
    return f"""#!/bin/busybox sh
# vmsim fidelity guest: the host's root read-only over 9p, the experiment's disk
# and a writable share, then the guest driver in a chroot; powers off at the end.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() {{ echo "vmsim-guest: error: $*"; sync; poweroff -f; }}
for m in {" ".join(order)}; do
  insmod /modules/$m.ko || fail "insmod $m"
done
R=/host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 {ROOT_TAG} $R \\
  || fail "cannot mount the host's root over 9p"
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/shm && mount -t tmpfs tmpfs $R/dev/shm
mount -t tmpfs tmpfs $R/run
mkdir -p $R{SHARE_DIR} $R{DISK_DIR} $R{TMP_DIR}
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 {SHARE_TAG} $R{SHARE_DIR} \\
  || fail "cannot mount the share"
# The cgroup-v1 memory controller where the kernel has it (CONFIG_MEMCG_V1 since
# 6.11); an experiment that needs it is refused by the recorder otherwise.
mount -t tmpfs cgroup $R/sys/fs/cgroup && mkdir $R/sys/fs/cgroup/memory
mount -t cgroup -o memory memory $R/sys/fs/cgroup/memory 2>/dev/null \\
  || echo "vmsim-guest: this kernel has no cgroup-v1 memory controller"
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.5; done
mount -t ext4 /dev/vda $R{DISK_DIR} || fail "cannot mount the experiment's disk"
PY=$(cat $R{SHARE_DIR}/python)
echo "vmsim-guest: up, $(nproc) CPUs, Linux $(uname -r)"
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
  HOME=/root LANG=C.UTF-8 TMPDIR={TMP_DIR} PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \\
  "$PY" -m vmsim.fidelity.guest {SHARE_DIR}/job.json
sync
umount $R{DISK_DIR}
poweroff -f
"""


def build(kernel_root: Path, release: str, busybox: Path) -> bytes:
    """The gzipped initramfs of an unpacked kernel package (modules in ``lib/modules/RELEASE``)."""
    mdir = kernel_root / "lib" / "modules" / release
    deps = module_paths(mdir)
    order = load_order(deps, MODULES, builtin_modules(mdir))
    bb = busybox.read_bytes()
    if not is_static_elf(bb):
        raise FidelityError(f"{busybox} is not a static executable (install busybox-static)")
    entries = [Entry(d, stat.S_IFDIR | 0o755) for d in ("/bin", "/dev", "/proc", "/sys", "/host")]
    entries.append(Entry("/dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)))
    entries.append(Entry("/bin/busybox", stat.S_IFREG | 0o755, bb))
    entries.append(Entry("/bin/sh", stat.S_IFLNK | 0o777, b"busybox"))
    entries.append(Entry("/init", stat.S_IFREG | 0o755, init_script(order).encode()))
    entries.append(Entry("/modules", stat.S_IFDIR | 0o755))
    for m in order:
        data = module_bytes(mdir / deps[m][0])
        entries.append(Entry(f"/modules/{m}.ko", stat.S_IFREG | 0o644, data))
    return gzip.compress(newc(entries), compresslevel=6, mtime=0)


def module_bytes(path: Path) -> bytes:
    """A module file's ELF bytes, unpacked here if it is xz- or gzip-compressed."""
    data = path.read_bytes()
    if path.name.endswith(".ko.xz"):
        return lzma.decompress(data)
    if path.name.endswith(".ko.gz"):
        return gzip.decompress(data)
    if not path.name.endswith(".ko"):
        raise FidelityError(f"{path}: a module compressed in a way not supported here (xz, gz)")
    return data


def is_static_elf(data: bytes) -> bool:
    """True for a 64-bit little-endian ELF executable without a program interpreter."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    phnum = int.from_bytes(data[0x38:0x3A], "little")
    for i in range(phnum):
        p_type = int.from_bytes(data[phoff + i * phentsize : phoff + i * phentsize + 4], "little")
        if p_type == 3:  # PT_INTERP
            return False
    return True
