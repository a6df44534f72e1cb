"""cpupin.py - timed runs on one CPU, the fastest this process may use.

On a shared virtual machine the CPUs need not run at one speed: on the
2-CPU machine where dmm is developed, CPU 0 ran a busy loop 1.4x slower than
CPU 1, for minutes on end, so that a single-threaded program's time
depended more on where the scheduler put it than on its allocator.  The
measuring scripts (make evolve's measure_candidates.py, the benchmarks)
time single-threaded runs pinned to one CPU, the same for every allocator,
chosen here by a short busy loop on each.

    cpu, speeds = fastest_cpu()      # speeds: {cpu: loop seconds}
    with pinned(cpu):                # children spawned inside inherit it
        ...

Nothing is pinned where only one CPU is allowed, or when DMM_BENCH_CPU=no;
DMM_BENCH_CPU=N chooses CPU N without measuring."""
import contextlib
import os
import time


def _loop_seconds(n=300000):
    t = time.perf_counter()
    s = 0
    for i in range(n):
        s += i
    return time.perf_counter() - t


def fastest_cpu(rounds=3):
    """(cpu, {cpu: best loop seconds}) among this process's allowed CPUs;
    (None, {}) when there is nothing to choose, DMM_BENCH_CPU=no, or the
    process may not change its affinity."""
    want = os.environ.get("DMM_BENCH_CPU", "")
    if want == "no" or not hasattr(os, "sched_getaffinity"):
        return None, {}
    allowed = sorted(os.sched_getaffinity(0))
    if want.isdigit() and int(want) in allowed:
        return int(want), {}
    if len(allowed) < 2:
        return None, {}
    best = {c: float("inf") for c in allowed}
    try:
        for _ in range(rounds):
            for c in allowed:
                os.sched_setaffinity(0, {c})
                best[c] = min(best[c], _loop_seconds())
    except OSError:
        return None, {}   # not allowed to move (a restricted container): unpinned
    finally:
        os.sched_setaffinity(0, allowed)
    return min(allowed, key=lambda c: best[c]), best


def describe(cpu, speeds):
    """One line for a report: where the runs were pinned and why."""
    if cpu is None:
        return "runs not pinned to a CPU"
    if not speeds:
        return "runs pinned to CPU %d (DMM_BENCH_CPU)" % cpu
    base = speeds[cpu]
    return "runs pinned to CPU %d, the fastest by a busy loop (%s)" % (
        cpu, ", ".join("cpu%d %.2fx" % (c, speeds[c] / base) for c in sorted(speeds)))


@contextlib.contextmanager
def pinned(cpu):
    """This process (and what it spawns meanwhile) on cpu alone; nothing
    changes for None."""
    if cpu is None:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)
