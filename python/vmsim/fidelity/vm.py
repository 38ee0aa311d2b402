"""``vmsim fidelity --record NAME --kernel K``: the real side of an experiment in a virtual machine.

The guest is a distribution's kernel package booted under QEMU's software
emulation (TCG: nested KVM hangs on the machines vmsim is developed on), with
no root filesystem image of its own: the host's root is shared read-only over
9p and the guest runs the host's own Python in a chroot of it
(:mod:`vmsim.fidelity.initramfs`, :mod:`vmsim.fidelity.guest`). The
experiment's files go to a raw ext4 disk image made for the run; the
recording comes back through a writable 9p share and is written beside the
host's recordings, tagged with the guest's kernel, memory, CPUs, emulation
and MGLRU state.

What is installed (``make fidelity-vm``, or the first ``--kernel`` recording):
the Debian packages of :data:`TOOLS` (needs root and apt-get), and the kernel
package, downloaded with ``apt-get download``, unpacked with ``dpkg-deb -x``
into :func:`cache_dir` with its ``modules.dep`` (``depmod -b``) and the
initramfs. Nothing is installed into the host's own /boot or /lib/modules.

A run leaves nothing behind: the guest is killed on an error, Ctrl-C,
SIGTERM or when it overruns its time limit, and its disk image and share are
deleted.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vmsim
from vmsim.fidelity import host, initramfs
from vmsim.fidelity.experiment import Experiment, FidelityError
from vmsim.fidelity.record import MAX_RUNS, load_recording, write_json, write_recording

Log = Callable[[str], None]

# Debian package of each tool the guest needs on the host.
TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "depmod": "kmod",
    "mkfs.ext4": "e2fsprogs",
}
BUSYBOX = Path("/bin/busybox")  # busybox-static's
GUEST_MEMORY = 2 << 30
GUEST_CPUS = 2
# Seconds allowed for booting, mounting and starting Python, and for the disk probe.
BOOT_SECONDS = 180
PROBE_SECONDS = 120
EMULATION = "tcg"
CPU_MODEL = "max"
KERNEL_CMDLINE = "console=ttyS0 panic=-1 loglevel=1 quiet"


class VmUnavailable(FidelityError):
    """QEMU, busybox or the kernel package cannot be installed on this machine."""


@dataclass(frozen=True)
class GuestKernel:
    """A kernel that boots as a guest: its Debian package and exact version, its release.

    Without a package, the kernel is one unpacked by hand into
    :func:`kernel_dir` (``vmlinuz`` and ``root/lib/modules/RELEASE``), for
    kernels of other distributions (docs/fidelity.md).
    """

    name: str
    package: str | None
    version: str
    release: str
    description: str


# The guest kernels, as data: adding one is adding a line (docs/fidelity.md).
KERNELS = {
    "debian-6.1": GuestKernel(
        name="debian-6.1",
        package="linux-image-6.1.0-56-amd64",
        version="6.1.192-2",
        release="6.1.0-56-amd64",
        description="Debian 12's Linux 6.1 LTS",
    ),
}


def _quiet(_: str) -> None:
    pass


def guest_kernel(name: str) -> GuestKernel:
    """A guest kernel by name; one line naming the known ones otherwise."""
    if name not in KERNELS:
        raise FidelityError(f"--kernel {name}: unknown guest kernel (known: {', '.join(KERNELS)})")
    return KERNELS[name]


def cache_dir() -> Path:
    """Where kernels are unpacked: ``$XDG_CACHE_HOME/vmsim/fidelity-vm`` (``~/.cache/…``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vmsim" / "fidelity-vm"


def kernel_dir(k: GuestKernel) -> Path:
    """The unpacked kernel package: ``vmlinuz``, ``kernel.json``, ``root/`` (its modules)."""
    return cache_dir() / k.name / f"{k.package or 'unpacked'}_{k.version}"


def _which(tool: str) -> str | None:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return shutil.which(tool, path=path)


def missing_packages() -> list[str]:
    """The Debian packages of the tools this machine lacks."""
    out = [pkg for tool, pkg in TOOLS.items() if _which(tool) is None]
    try:
        static = initramfs.is_static_elf(BUSYBOX.read_bytes())
    except OSError:
        static = False
    if not static:
        out.append("busybox-static")
    return out


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)


def _last_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit code {r.returncode}"


def install_tools(log: Log = _quiet) -> None:
    """Installs the missing Debian packages of :data:`TOOLS` with apt-get (root)."""
    missing = missing_packages()
    if not missing:
        return
    what = " ".join(missing)
    if os.geteuid() != 0 or _which("apt-get") is None:
        raise VmUnavailable(
            f"the guest needs the Debian packages {what}: run 'make fidelity-vm' as root "
            f"(apt-get install {what})"
        )
    log(f"installing {what}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _run(["apt-get", "update", "-q"])
    r = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if r.returncode != 0 or missing_packages():
        raise VmUnavailable(f"apt-get install {what} failed: {_last_line(r)}")


def install_kernel(k: GuestKernel, log: Log = _quiet) -> Path:
    """Downloads, unpacks and prepares a guest kernel once; returns its directory."""
    d = kernel_dir(k)
    if (d / "kernel.json").exists():
        return d
    if k.package is None:
        return prepare_unpacked(k, d, log)
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d.parent / f".{d.name}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        log(f"downloading {k.package} {k.version}")
        spec = f"{k.package}={k.version}"
        r = _run(["apt-get", "download", "-q", spec], cwd=tmp)
        if r.returncode != 0 and os.geteuid() == 0:
            _run(["apt-get", "update", "-q"])
            r = _run(["apt-get", "download", "-q", spec], cwd=tmp)
        debs = list(tmp.glob("*.deb"))
        if r.returncode != 0 or len(debs) != 1:
            raise VmUnavailable(f"apt-get download {spec} failed: {_last_line(r)}")
        root = tmp / "root"
        r = _run(["dpkg-deb", "-x", str(debs[0]), str(root)])
        if r.returncode != 0:
            raise VmUnavailable(f"dpkg-deb -x {debs[0].name} failed: {_last_line(r)}")
        debs[0].unlink()
        vmlinuz = root / "boot" / f"vmlinuz-{k.release}"
        if not vmlinuz.exists():
            raise FidelityError(f"{k.package} has no boot/vmlinuz-{k.release}")
        os.replace(vmlinuz, tmp / "vmlinuz")
        _modules_and_initrd(k, tmp, log)
        os.replace(tmp, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return d


def _modules_and_initrd(k: GuestKernel, d: Path, log: Log) -> None:
    """modules.dep (``depmod -b``) and ``kernel.json`` of an unpacked kernel; a trial initramfs."""
    depmod = _which("depmod") or "depmod"
    r = _run([depmod, "-b", str(d / "root"), k.release])
    if r.returncode != 0:
        raise FidelityError(f"depmod -b for {k.release} failed: {_last_line(r)}")
    log("building the initramfs")
    initramfs.build(d / "root", k.release, BUSYBOX)  # every run builds its own (below)
    write_json(
        d / "kernel.json", {"package": k.package, "version": k.version, "release": k.release}
    )


def prepare_unpacked(k: GuestKernel, d: Path, log: Log = _quiet) -> Path:
    """A kernel unpacked by hand into ``d``: checks it, then its modules.dep and initramfs."""
    if not (d / "vmlinuz").is_file() or not (d / "root" / "lib" / "modules" / k.release).is_dir():
        raise VmUnavailable(
            f"{k.name}: unpack the kernel by hand first: {d}/vmlinuz and "
            f"{d}/root/lib/modules/{k.release}/ (docs/fidelity.md)"
        )
    _modules_and_initrd(k, d, log)
    return d


def install(name: str, log: Log = _quiet) -> Path:
    """Everything a guest of kernel ``name`` needs (``make fidelity-vm``); returns its directory."""
    k = guest_kernel(name)
    install_tools(log)
    return install_kernel(k, log)


def qemu_version() -> str:
    """The first line of ``qemu-system-x86_64 --version``."""
    r = _run([_which("qemu-system-x86_64") or "qemu-system-x86_64", "--version"])
    return r.stdout.splitlines()[0].strip() if r.stdout else "unknown"


def _opt(path: Path) -> str:
    """A path inside a QEMU option (commas doubled)."""
    return str(path).replace(",", ",,")


def qemu_argv(
    kdir: Path, initrd: Path, share: Path, disk: Path, console: Path, memory: int, cpus: int
) -> list[str]:
    """The QEMU command line of a guest."""
    return [
        _which("qemu-system-x86_64") or "qemu-system-x86_64",
        "-nodefaults",
        "-no-reboot",
        "-machine",
        "q35",
        "-accel",
        f"{EMULATION},thread=multi",
        "-cpu",
        CPU_MODEL,
        "-m",
        f"{memory >> 20}M",
        "-smp",
        str(cpus),
        "-display",
        "none",
        "-serial",
        f"file:{_opt(console)}",
        "-kernel",
        str(kdir / "vmlinuz"),
        "-initrd",
        str(initrd),
        "-append",
        KERNEL_CMDLINE,
        "-virtfs",
        f"local,path=/,mount_tag={initramfs.ROOT_TAG},security_model=none,readonly=on,"
        "multidevs=remap",
        "-virtfs",
        f"local,path={_opt(share)},mount_tag={initramfs.SHARE_TAG},security_model=none,"
        "multidevs=remap",
        "-drive",
        f"file={_opt(disk)},if=virtio,format=raw",
    ]


def make_disk(path: Path, size: int) -> None:
    """A sparse raw disk image of ``size`` bytes formatted ext4 (inode tables written now)."""
    with open(path, "wb") as f:
        f.truncate(size)
    r = _run(
        [
            _which("mkfs.ext4") or "mkfs.ext4",
            "-q",
            "-F",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            str(path),
        ]
    )
    if r.returncode != 0:
        raise FidelityError(f"mkfs.ext4 {path} failed: {_last_line(r)}")


def disk_size(exp: Experiment) -> int:
    """The experiment's disk: twice what it writes, plus 1 GiB, at least 2 GiB [bytes]."""
    return max(2 << 30, (2 * exp.footprint()["disk"] + (1 << 30) + (1 << 20) - 1) >> 20 << 20)


def time_limit(exp: Experiment, runs: int) -> float:
    """Seconds the whole guest may take: boot, disk probe, every phase's timeout per run."""
    return BOOT_SECONDS + PROBE_SECONDS + runs * (exp.timeout * len(exp.phases) + 60)


class Console:
    """The guest's serial console (a file QEMU writes), passed on line by line."""

    def __init__(self, path: Path, log: Log) -> None:
        self.path = path
        self.log = log
        self.pos = 0
        self.rest = b""
        self.tail: collections.deque[str] = collections.deque(maxlen=8)

    def poll(self) -> None:
        """Passes on the lines written since the last call."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return
        self.pos += len(chunk)
        lines = (self.rest + chunk).split(b"\n")
        self.rest = lines.pop()
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if line.strip():
                self.tail.append(line.strip())
                self.log(line)

    def last(self) -> str:
        """The guest's last error line, else the last line it said (for error messages)."""
        errors = [line for line in self.tail if line.startswith("vmsim-guest: error:")]
        if errors:
            return errors[-1].removeprefix("vmsim-guest: error: ")
        return self.tail[-1] if self.tail else "nothing"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kills QEMU if it still runs, and reaps it."""
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)


def run_guest(
    k: GuestKernel,
    job: dict[str, Any],
    work_root: Path,
    *,
    disk_bytes: int,
    limit: float,
    memory: int = GUEST_MEMORY,
    cpus: int = GUEST_CPUS,
    log: Log = _quiet,
) -> dict[str, Any]:
    """Boots the guest on a job and returns its recording (the JSON object)."""
    return boot_guest(
        k,
        job,
        work_root,
        lambda share, status: load_recording(share / status["recording"]),
        disk_bytes=disk_bytes,
        limit=limit,
        memory=memory,
        cpus=cpus,
        log=log,
    )


def boot_guest(
    k: GuestKernel,
    job: dict[str, Any],
    work_root: Path,
    collect: Callable[[Path, dict[str, Any]], Any],
    *,
    disk_bytes: int,
    limit: float,
    memory: int = GUEST_MEMORY,
    cpus: int = GUEST_CPUS,
    log: Log = _quiet,
) -> Any:
    """Boots the guest on a job; ``collect(share, status)`` takes its result out of the
    share before the share is deleted."""
    kdir = kernel_dir(k)
    for d in initramfs.MOUNT_POINTS:
        if not Path(d).is_dir():
            raise FidelityError(f"the guest mounts over the host's {d}, which is not a directory")
    for what, path in (("Python", Path(sys.executable)), ("vmsim", Path(vmsim.__file__).parent)):
        if not path.is_absolute() or any(path.is_relative_to(d) for d in initramfs.MOUNT_POINTS):
            raise FidelityError(
                f"the guest runs the host's {what} ({path}), which it cannot see under "
                f"{', '.join(initramfs.MOUNT_POINTS)}"
            )
    with contextlib.ExitStack() as stack, host.signals_as_interrupt():
        tmp = work_root / f"vmsim-fidelity-vm-{os.getpid()}"
        tmp.mkdir()
        stack.callback(shutil.rmtree, tmp, True)
        share = tmp / "share"
        share.mkdir()
        # The guest sees the host's root, less what it mounts over (/run, /proc, …): the
        # experiment travels in the share.
        if "experiment" in job:
            exps = share / "experiments"
            exps.mkdir()
            src = Path(job["experiments"]) / f"{job['experiment']}.toml"
            if src.exists():
                shutil.copyfile(src, exps / src.name)
            job = job | {"experiments": initramfs.SHARE_DIR + "/experiments"}
        write_json(share / "job.json", job)
        (share / "python").write_text(sys.executable + "\n")
        disk = tmp / "disk.img"
        make_disk(disk, disk_bytes)
        # Built for every run (a second), so that it always has today's /init.
        initrd = tmp / "initrd.img"
        initrd.write_bytes(initramfs.build(kdir / "root", k.release, BUSYBOX))
        console = Console(tmp / "console.log", log)
        with open(tmp / "qemu.err", "wb") as err:
            proc = subprocess.Popen(
                qemu_argv(kdir, initrd, share, disk, console.path, memory, cpus),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        stack.callback(_stop, proc)
        deadline = time.monotonic() + limit
        while proc.poll() is None:
            console.poll()
            if time.monotonic() > deadline:
                raise FidelityError(
                    f"the guest did not finish within {limit:.0f} s and was killed "
                    f"(it last said: {console.last()})"
                )
            time.sleep(0.2)
        console.poll()
        status_path = share / "status.json"
        if not status_path.exists():
            qemu_err = (tmp / "qemu.err").read_text(errors="replace").strip().splitlines()
            said = qemu_err[-1] if qemu_err and proc.returncode else console.last()
            raise FidelityError(f"the guest stopped without a result (it last said: {said})")
        status = json.loads(status_path.read_text(encoding="utf-8"))
        if not status.get("ok"):
            raise FidelityError(f"in the guest: {status.get('error', 'unknown error')}")
        return collect(share, status)


def tag_machine(
    rec: dict[str, Any], k: GuestKernel, memory: int, cpus: int, thp: str | None = None
) -> None:
    """Adds what the guest cannot know of itself: emulation, QEMU, the package, the host.

    ``thp_set`` says that THP's ``enabled`` was set for the run, not the kernel's default.
    """
    rec["machine"]["vm"] = {
        "emulation": EMULATION,
        "cpu_model": CPU_MODEL,
        "qemu": qemu_version(),
        "kernel_package": f"{k.package or 'unpacked by hand'} {k.version}",
        "guest_kernel": k.name,
        "memory_bytes": memory,
        "cpus": cpus,
        "host_kernel": os.uname().release,
    }
    if thp:
        rec["machine"]["vm"]["thp_set"] = thp


def record_in_vm(
    exp: Experiment,
    kernel: str,
    runs: int,
    recordings: Path,
    work_root: Path,
    *,
    mglru: bool = False,
    thp: str | None = None,
    trace: bool = True,
    memory: int = GUEST_MEMORY,
    cpus: int = GUEST_CPUS,
    disk_probe: bool = True,
    log: Log = _quiet,
) -> Path:
    """Records ``runs`` runs of an experiment in a guest of ``kernel``; returns the file written."""
    k = guest_kernel(kernel)
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise FidelityError(f"--runs {runs}: must be an integer from 1 to {MAX_RUNS}")
    if not 256 << 20 <= memory <= 16 << 30:
        raise FidelityError(f"--guest-memory {memory >> 20} MiB: must be from 256 MiB to 16 GiB")
    if not 1 <= cpus <= (os.cpu_count() or 1):
        raise FidelityError(f"--guest-cpus {cpus}: must be from 1 to this machine's CPUs")
    need = exp.footprint()["memory"]
    if need > 0.75 * memory:
        raise FidelityError(
            f"{exp.name}: needs {need >> 20} MiB of anonymous memory and hugetlb pool; the guest "
            f"has {memory >> 20} MiB: too large for it (--guest-memory)"
        )
    if thp not in (None, "always", "madvise", "never"):
        raise FidelityError(f"--guest-thp {thp}: must be always, madvise or never")
    if not work_root.is_dir():
        raise FidelityError(f"--work-dir {work_root}: no such directory")
    disk_bytes = disk_size(exp)
    if disk_bytes > 0.5 * host.disk_free(work_root):
        raise FidelityError(f"the guest's disk of {disk_bytes >> 20} MiB does not fit {work_root}")
    install(kernel, log)
    job = {
        "experiment": exp.name,
        "experiments": str(exp.path.resolve().parent),
        "runs": runs,
        "trace": trace,
        "mglru": mglru,
        "thp": thp,
        "disk_probe": disk_probe,
    }
    log(f"{exp.name}: booting {k.description} ({k.package}) under QEMU {EMULATION}")
    rec = run_guest(
        k,
        job,
        work_root,
        disk_bytes=disk_bytes,
        limit=time_limit(exp, runs),
        memory=memory,
        cpus=cpus,
        log=log,
    )
    tag_machine(rec, k, memory, cpus, thp)
    path = recordings / host.machine_key(rec["machine"]) / f"{exp.name}.json"
    write_recording(path, rec)
    return path


# Seconds a guest calibration may take (``vmsim calibrate --quick`` takes about two
# minutes on the host; the emulated CPU is about 8-15x slower), and its disk.
CALIBRATE_SECONDS = {True: 3600, False: 4 * 3600}
CALIBRATE_DISK = 4 << 30


def calibrate_in_vm(
    kernel: str,
    quick: bool,
    base: str,
    work_root: Path,
    *,
    memory: int = GUEST_MEMORY,
    cpus: int = GUEST_CPUS,
    log: Log = _quiet,
) -> dict[str, Any]:
    """Runs ``vmsim calibrate`` in a guest of ``kernel``: the calibration's JSON (as
    ``vmsim calibrate --json`` prints it; its ``machine`` tagged as a recording's is)."""
    k = guest_kernel(kernel)
    if not work_root.is_dir():
        raise FidelityError(f"--work-dir {work_root}: no such directory")
    if CALIBRATE_DISK > 0.5 * host.disk_free(work_root):
        raise FidelityError(
            f"the guest's disk of {CALIBRATE_DISK >> 20} MiB does not fit {work_root}"
        )
    install(kernel, log)
    log(f"calibrate: booting {k.description} ({k.package}) under QEMU {EMULATION}")

    def collect(share: Path, status: dict[str, Any]) -> dict[str, Any]:
        return json.loads((share / "out" / "calibration.json").read_text(encoding="utf-8"))

    cal = boot_guest(
        k,
        {"calibrate": {"quick": quick, "base": base}},
        work_root,
        collect,
        disk_bytes=CALIBRATE_DISK,
        limit=CALIBRATE_SECONDS[quick],
        memory=memory,
        cpus=cpus,
        log=log,
    )
    rec = {"machine": cal.setdefault("machine", {})}
    tag_machine(rec, k, memory, cpus)
    return cal
