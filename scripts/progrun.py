"""progrun.py - one program run, measured, and a program measured under
several allocators side by side: what make evolve's measured step (RUN=,
measure_candidates.py) and the benchmarks in bench/ (benchlib.py) share.

  - the environment a measured program runs in (clean_env);
  - one run (run): wall time, CPU time and peak RSS from wait4 (or GNU
    time, find_gnu_time), its output captured, a timeout;
  - a program under each of several allocators, interleaved rounds in an
    order shuffled each round, each round on the fastest CPU for a
    single-threaded program, outputs compared (measure_program).

Standard library only."""
import hashlib
import os
import random
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import cpupin
import hugewarm


def clean_env():
    """This process's environment without what would change a measured
    program's allocator: LD_PRELOAD, DMM_*, MALLOC_* (glibc's, and jemalloc's
    MALLOC_CONF), GLIBC_TUNABLES and PYTHONMALLOC."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "PYTHONMALLOC")
            and not k.startswith("DMM_") and not k.startswith("MALLOC_")}


def find_gnu_time():
    """GNU time, used as the spawner so that the peak RSS measured is the
    program's: a child spawned from this (big) Python process keeps Python's
    peak RSS in its ru_maxrss across exec; one spawned from time does not."""
    for t in ("/usr/bin/time", shutil.which("time")):
        if t and os.access(t, os.X_OK):
            try:
                r = subprocess.run([t, "--version"], capture_output=True, text=True, timeout=20)
                if "GNU" in r.stdout + r.stderr:
                    return t
            except (OSError, subprocess.SubprocessError):
                pass
    return None


def run(argv, env, stdin=None, stdout=None, stderr=None, timeout=None, gnu_time=None):
    """Runs argv (found on PATH when it names no directory) with env, and
    measures it.  stdin: a file to read, else /dev/null; stdout, stderr: a
    file to write (os.devnull to drop it), else captured.  With timeout
    (seconds), the program runs in a process group of its own, killed when
    time runs out.  With gnu_time (find_gnu_time), GNU time spawns it
    (through env, which gives env's LD_PRELOAD to the program alone:
    _preload_past_time) and gives its peak RSS.

    Returns dict(exit: status or -signal, wall_s, user_s, sys_s, cpu_s,
    maxrss_kib (None when GNU time reported none), minflt (minor page faults
    of it and what it waited for: GNU time's few hundred included), timed_out,
    out, err: the captured bytes, or None)."""
    rusage = None
    if gnu_time:
        fd, rusage = tempfile.mkstemp(prefix="dmm-bench-time.")
        os.close(fd)
        argv, env = _preload_past_time(argv, env)
        argv = [gnu_time, "-f", "maxrss=%M", "-o", rusage, "--"] + argv
    captured = {}
    actions = [(os.POSIX_SPAWN_OPEN, 0, stdin or os.devnull, os.O_RDONLY, 0)]
    try:
        for fd, path in ((1, stdout), (2, stderr)):
            if path is None:
                captured[fd] = tempfile.TemporaryFile()
                actions.append((os.POSIX_SPAWN_DUP2, captured[fd].fileno(), fd))
            else:
                actions.append((os.POSIX_SPAWN_OPEN, fd, path,
                                os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        res = _spawn_wait(argv, env, actions, timeout)
        for fd, key in ((1, "out"), (2, "err")):
            res[key] = None
            if fd in captured:
                captured[fd].seek(0)
                res[key] = captured[fd].read()
    finally:
        for f in captured.values():
            f.close()
    if rusage:
        res["maxrss_kib"] = None
        try:
            with open(rusage) as f:
                text = f.read()
            m = re.search(r"^maxrss=([0-9]+)$", text, re.M)
            if m:
                res["maxrss_kib"] = int(m.group(1))
            m = re.search(r"Command terminated by signal ([0-9]+)", text)
            if m:
                res["exit"] = -int(m.group(1))
        except OSError:
            pass
        os.unlink(rusage)
    return res


def _preload_past_time(argv, env):
    """argv and env for GNU time to spawn, so that env's LD_PRELOAD reaches
    the program alone: `env -- [LD_PRELOAD=...] argv...` (env execs the
    program in its own process), LD_PRELOAD taken out of time's own
    environment.  Left in, the preloaded library ran in GNU time too:
    libdmmtrace.so recorded time's calls, its fork and its exec (about
    1 ms a run), and the mtrace marker of bench/tracer_overhead.py made
    time open (and empty) the program's MALLOC_TRACE file as well.  Every run goes through env alike,
    preloaded or not, so that each pays the same exec (about 2 ms here,
    as GNU time's own fork and wait are in every run).  work_media -f 3000,
    150 pinned rounds: libdmmtrace.so 1.123x this way, 1.137x with time
    recorded too.  A program whose name has an "=" (env would take it for
    a variable) runs the old way."""
    argv = list(argv)
    if "=" in argv[0]:
        return argv, env
    pre = ["LD_PRELOAD=" + env["LD_PRELOAD"]] if "LD_PRELOAD" in env else []
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    return [shutil.which("env") or "/usr/bin/env", "--"] + pre + argv, env


def _spawn_wait(argv, env, actions, timeout):
    """posix_spawnp and wait4, with the timeout of run()."""
    timed_out = False
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions,
                          **({} if timeout is None else dict(setpgroup=0)))
    pidfd = None
    if timeout is not None:
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pass
    if pidfd is not None:
        p = select.poll()
        p.register(pidfd, select.POLLIN)
        if not p.poll(timeout * 1000):
            timed_out = True
            _kill_group(pid)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if pidfd is not None:
        os.close(pidfd)
    if timed_out:
        # the process group may hold other members still (heaptrack's interpreter)
        _kill_group(pid)
    # CPU: with GNU time, time's own few ms are included; it waits for the program.
    return dict(exit=os.waitstatus_to_exitcode(status), wall_s=wall, user_s=ru.ru_utime,
                sys_s=ru.ru_stime, cpu_s=ru.ru_utime + ru.ru_stime, maxrss_kib=ru.ru_maxrss,
                minflt=ru.ru_minflt, timed_out=timed_out)


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def tail(data, n=15):
    """The last n lines of a program's output (bytes), as a list."""
    return (data or b"").decode("utf-8", "replace").splitlines()[-n:]


def thp_faults():
    """Huge pages the kernel has handed out on a fault since boot
    (/proc/vmstat's thp_fault_alloc), machine-wide; None where it does not
    say."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("thp_fault_alloc "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def measure_program(argv, extra, output, allocs, reps, gnu_time, pins, pin=True, strict=True,
                    timeout=600):
    """A real program under each allocator: {allocator: {wall, cpu, rss,
    faults (minor page faults), huge (thp_faults() during the run: the
    program's own huge pages on a machine doing nothing else; None where
    the kernel does not count them), exit: [per round], same: its output
    and exit status those of glibc's first run}}.

    allocs: [(name, library to preload or None[, its own environment])],
    glibc's first; extra: the environment added to clean_env() for every
    run; output(stdout bytes): what of stdout is compared, or None for
    stdout itself.  Every round runs each allocator once, in an order
    shuffled anew each round (seeded by the round), so that no allocator
    always runs just after the same one (a replay run just after glibc's
    took up to 2x its usual time: scripts/measure_candidates.py).  With pin (a single-threaded program),
    each round runs on one CPU, the fastest at the round's start
    (scripts/cpupin.py).  Before each run, huge pages are faulted and freed
    (scripts/hugewarm.py), so that an allocator that uses them does not run
    slow or fast by what ran before it.  pins gets a line per round saying
    where, and in which order.  strict: a run that exits nonzero raises RuntimeError;
    else its status is compared as its output is.  timeout: seconds a run
    may take (None: no limit), then it is killed (exit -9)."""
    res = {a[0]: dict(wall=[], cpu=[], rss=[], faults=[], huge=[], exit=[], same=True)
           for a in allocs}
    digests = {a[0]: [] for a in allocs}
    for k in range(reps):
        cpu, speeds = cpupin.fastest_cpu() if pin else (None, {})
        order = list(allocs)
        random.Random(k).shuffle(order)
        pins.append("%s; order %s" % (cpupin.describe(cpu, speeds),
                                      ", ".join(a[0] for a in order)))
        with cpupin.pinned(cpu):
            for a, lib, *own in order:
                env = dict(clean_env(), **extra)
                env.update(own[0] if own else {})
                if lib:
                    env["LD_PRELOAD"] = lib
                hugewarm.before_run(max((x for v in res.values() for x in v["rss"] if x),
                                        default=None))
                h0 = thp_faults()
                r = run(argv, env, gnu_time=gnu_time, timeout=timeout)
                h1 = thp_faults()
                if r["exit"] != 0 and strict:
                    raise RuntimeError("%s under %s exited %s: %s" % (
                        argv[0], a, r["exit"], "\n".join(tail(r["err"], 5))))
                out = r["out"] or b""
                digests[a].append((r["exit"],
                                   hashlib.sha256(output(out) if output else out).hexdigest()))
                res[a]["wall"].append(r["wall_s"])
                res[a]["cpu"].append(r["cpu_s"])
                res[a]["rss"].append(r["maxrss_kib"])
                res[a]["faults"].append(r["minflt"])
                res[a]["huge"].append(h1 - h0 if h0 is not None and h1 is not None else None)
                res[a]["exit"].append(r["exit"])
    ref = digests["glibc"][0] if digests.get("glibc") else None
    for a in res:
        res[a]["same"] = all(d == ref for d in digests[a])
    return res
