"""hugewarm.py - huge pages the next timed run can fault at their usual cost.

Under a hypervisor that takes back the memory its guest has freed (as
virtio balloon's free page reporting does; the VM this project is measured
on behaves so, with virtio_balloon loaded), a 2 MiB page that the guest
kernel held free for a few seconds is no longer backed by the host, and the
next process to fault it waits for the host to back it again.  Measured
there (a C program faulting 100 huge pages advised MADV_HUGEPAGE, one CPU):
3.1-3.5 ms a page when started 5 s after the last such run, 0.12-0.13 ms
when started just after one.  Runs in 4 KiB pages did not show it (glibc's
runs of python3 there: 0.68-0.71 s, where its library in huge pages took
0.27 or 0.40 s).  So an allocator that uses huge pages
(glibc.malloc.hugetlb, jemalloc thp:always, mimalloc's large OS pages, a
design with `pages huge=yes`) ran fast or slow according to what ran just
before it, by up to 1.5x on python3's run of bench/programs.py.

warm(nbytes) faults nbytes of huge pages in this process and frees them, so
that the run that follows finds as many host-backed huge pages free as it
needs: every run starts as it would on a machine without such a host, and
as the run before it left things does not matter.  It does nothing where
the kernel has no transparent huge pages (or has them off), or when
DMM_BENCH_WARM=no.  Standard library only."""
import ctypes
import mmap
import os
import re

HUGE = 2 << 20
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def thp_mode():
    """The kernel's transparent huge pages setting ("always", "madvise",
    "never"), or None where it has none."""
    try:
        with open(THP_ENABLED) as f:
            m = re.search(r"\[(\w+)\]", f.read())
    except OSError:
        return None
    return m.group(1) if m else "unknown"


def thp_on():
    """Does the kernel give huge pages to a mapping advised MADV_HUGEPAGE?"""
    return thp_mode() not in (None, "never") and hasattr(mmap, "MADV_HUGEPAGE")


def _read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None   # "max", or not there


def cgroup_room():
    """What this process's memory cgroup still allows, in bytes (v2:
    memory.max - memory.current; v1: memory.limit_in_bytes -
    memory.usage_in_bytes: more than the machine has where v1 sets no
    limit), or None where v2 sets none ("max") or neither says."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [l.rstrip("\n").split(":", 2) for l in f]
    except OSError:
        return None
    for ident, ctrls, rel in (l for l in lines if len(l) == 3):
        if ident == "0" and not ctrls:
            d, files = os.path.join("/sys/fs/cgroup", rel.lstrip("/")), ("memory.max",
                                                                         "memory.current")
        elif "memory" in ctrls.split(","):
            d, files = (os.path.join("/sys/fs/cgroup/memory", rel.lstrip("/")),
                        ("memory.limit_in_bytes", "memory.usage_in_bytes"))
        else:
            continue
        top, cur = (_read_int(os.path.join(d, f)) for f in files)
        if top is not None and cur is not None:
            return max(0, top - cur)
    return None


def available():
    """The memory this process may still take, in bytes: MemAvailable
    (/proc/meminfo), or less where its cgroup allows less (cgroup_room);
    None when neither says."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    room = cgroup_room()
    if room is not None and (avail is None or room < avail):
        avail = room
    return avail


def size_for(peak_kib, avail):
    """What to warm before a run whose program peaked at peak_kib KiB of RSS
    so far (None: not known yet), avail bytes of memory being available
    (None: not known): 256 MiB, or a quarter more than that peak if larger;
    at most 2 GiB and a quarter of avail."""
    n = 256 << 20
    if peak_kib:
        n = max(n, peak_kib * 1024 * 5 // 4)
    return min(n, 2 << 30, avail // 4 if avail else 256 << 20)


def before_run(peak_kib=None):
    """warm() as much as size_for() says, before a timed run."""
    return warm(size_for(peak_kib, available()))


def warm(nbytes):
    """nbytes (rounded up to 2 MiB) of huge pages faulted and freed; the
    number of bytes, or 0 when it did nothing."""
    if os.environ.get("DMM_BENCH_WARM") == "no" or not thp_on() or nbytes <= 0:
        return 0
    n = -(-nbytes // HUGE) * HUGE
    try:
        m = mmap.mmap(-1, n + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:
        return 0
    try:
        m.madvise(mmap.MADV_HUGEPAGE)
        buf = ctypes.c_char.from_buffer(m)
        skew = -ctypes.addressof(buf) % HUGE   # to the first 2 MiB boundary
        del buf
        for off in range(skew, skew + n, HUGE):
            m[off] = 1   # one write faults the whole huge page
    except (OSError, ValueError):
        pass
    finally:
        m.close()
    return n
