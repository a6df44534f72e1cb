"""benchlib.py - what the benchmarks in bench/ share.

  - where things are (ROOT) and the options every benchmark takes (parser:
    --build, --reps or BENCH_REPS);
  - the environment a measured program runs in (clean_env);
  - the machine, described once (machine, machine_line, tool_version, git_rev);
  - one program run, measured (run): wall time, CPU time and peak RSS from
    wait4 (or GNU time, find_gnu_time), its output captured, a timeout;
  - a trace recorded under libdmmtrace.so (record);
  - the real-program workloads of make bench, by size: the sqlite3 SQL, the
    python3 dict/JSON script, the perl hash script, the sort input, and the
    command lines that run them (command);
  - the statistics and formatting the reports repeat (median, summary,
    geomean, pct, fmt, mib);
  - the report written as BUILD/bench/NAME.md and NAME.json (write_results).

The numbers dmm computes (T, M, F, the cost model, a .dmm's fields) are read
from its JSON, never computed here.  Standard library only."""
import argparse
import hashlib
import json
import math
import os
import platform
import random
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cpupin  # noqa: E402  (scripts/cpupin.py: timed runs on the fastest CPU)
from measure_candidates import own_make_env  # noqa: E402,F401  (a make of its own)
# The python3 of the workloads: the system's, the same whatever python3 comes
# first on PATH (a virtualenv's, a version manager's shim).
PYTHON = "/usr/bin/python3"


def reps_default(n):
    """BENCH_REPS from the environment, else n."""
    return int(os.environ.get("BENCH_REPS") or n)


def parser(doc, reps):
    """The options every benchmark takes: --build DIR (default build) and
    --reps N (default BENCH_REPS, else reps)."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=reps_default(reps))
    return ap


def clean_env():
    """This process's environment without what would change a measured
    program's allocator: LD_PRELOAD, DMM_*, MALLOC_* (glibc's, and jemalloc's
    MALLOC_CONF), GLIBC_TUNABLES and PYTHONMALLOC."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "PYTHONMALLOC")
            and not k.startswith("DMM_") and not k.startswith("MALLOC_")}


# --------------------------------------------------------------------------
# the machine

def machine():
    """dict(nproc, model, glibc, kernel): the CPUs, their model name, the C
    library and the kernel release."""
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = " ".join(platform.libc_ver())
    return dict(nproc=os.cpu_count() or 0, model=model, glibc=glibc,
                kernel=platform.release())


def machine_line(m=None):
    """The machine in one line: 'MODEL, N CPUs, Linux RELEASE'."""
    m = m or machine()
    return "%s, %d CPUs, %s %s" % (m["model"], m["nproc"], platform.system(), m["kernel"])


def tool_version(argv):
    """The first line a tool prints about its version, or None."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def git_rev():
    """`git describe --always --dirty` of the repository, or None."""
    try:
        r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=20)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------
# one run, measured

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
    time runs out.  With gnu_time (find_gnu_time), GNU time spawns it and
    gives its peak RSS.

    Returns dict(exit: status or -signal, wall_s, user_s, sys_s, cpu_s,
    maxrss_kib (None when GNU time reported none), minflt (minor page faults
    of it and what it waited for: GNU time's few hundred included), timed_out,
    out, err: the captured bytes, or None)."""
    rusage = None
    if gnu_time:
        fd, rusage = tempfile.mkstemp(prefix="dmm-bench-time.")
        os.close(fd)
        argv = [gnu_time, "-f", "maxrss=%M", "-o", rusage, "--"] + list(argv)
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


def record(build, trace, argv, extra=None, stack="0"):
    """Runs argv once under BUILD/libdmmtrace.so, its trace written to trace
    (replaced when there is one: the tracer itself never overwrites);
    DMM_TRACE_STACK=stack (None: the tracer's default).  Returns run()'s
    dict; the trace is there when exit is 0."""
    if os.path.exists(trace):
        os.unlink(trace)
    env = dict(clean_env(), **(extra or {}))
    env.update(LD_PRELOAD=os.path.join(build, "libdmmtrace.so"), DMM_TRACE_FILE=trace)
    if stack is not None:
        env["DMM_TRACE_STACK"] = stack
    return run(argv, env)


def tail(data, n=15):
    """The last n lines of a program's output (bytes), as a list."""
    return (data or b"").decode("utf-8", "replace").splitlines()[-n:]


def measure_program(argv, extra, output, allocs, reps, gnu_time, pins, pin=True, strict=True,
                    timeout=600):
    """A real program under each allocator: {allocator: {wall, cpu, rss,
    exit: [per round], same: its output and exit status those of glibc's
    first run}}.

    allocs: [(name, library to preload or None[, its own environment])],
    glibc's first; extra: the environment added to clean_env() for every
    run; output(stdout bytes): what of stdout is compared, or None for
    stdout itself.  Every round runs each allocator once, in an order
    shuffled anew each round (seeded by the round), so that no allocator
    always runs just after the same one (a replay run just after glibc's
    took up to 2x its usual time: scripts/measure_candidates.py).  With pin (a single-threaded program),
    each round runs on one CPU, the fastest at the round's start
    (scripts/cpupin.py).  pins gets a line per round saying where, and in
    which order.  strict: a run that exits nonzero raises RuntimeError;
    else its status is compared as its output is.  timeout: seconds a run
    may take (None: no limit), then it is killed (exit -9)."""
    res = {a[0]: dict(wall=[], cpu=[], rss=[], exit=[], same=True) for a in allocs}
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
                r = run(argv, env, gnu_time=gnu_time, timeout=timeout)
                if r["exit"] != 0 and strict:
                    raise RuntimeError("%s under %s exited %s: %s" % (
                        argv[0], a, r["exit"], "\n".join(tail(r["err"], 5))))
                out = r["out"] or b""
                digests[a].append((r["exit"],
                                   hashlib.sha256(output(out) if output else out).hexdigest()))
                res[a]["wall"].append(r["wall_s"])
                res[a]["cpu"].append(r["cpu_s"])
                res[a]["rss"].append(r["maxrss_kib"])
                res[a]["exit"].append(r["exit"])
    ref = digests["glibc"][0] if digests.get("glibc") else None
    for a in res:
        res[a]["same"] = all(d == ref for d in digests[a])
    return res


# --------------------------------------------------------------------------
# the real-program workloads: text and input by size; each benchmark picks
# its sizes (make bench's traces: RECORDED)

def sqlite3_sql(rows, delete_thirds=False):
    """rows rows into an indexed table of sqlite3 :memory: (and a third of
    them deleted again)."""
    return ("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);\n"
            "     CREATE INDEX t_k ON t(k);\n"
            "     WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%d)\n"
            "       INSERT INTO t(k,v) SELECT printf('key%%08d',(x*7919)%%100003), x FROM c;\n"
            "%s"
            "     SELECT count(*), sum(v), min(k), max(k) FROM t;"
            % (rows, "     DELETE FROM t WHERE v % 3 = 0;\n" if delete_thirds else ""))


def python3_script(entries, sort=False):
    """A dict of `entries` entries to JSON and back (and its values sorted)."""
    body = ('\nimport json\n'
            'd = {}\n'
            'for i in range(%d):\n'
            '    d["k%%d" %% i] = {"id": i, "name": "item%%d" %% i,\n'
            '                   "tags": [i %% 7, i %% 11, "t%%d" %% (i %% 13)], "v": i * 0.5}\n'
            's = json.dumps(d, sort_keys=True)\n'
            'e = json.loads(s)\n'
            'del d\n') % entries
    if sort:
        return body + ('l = sorted(e.values(), key=lambda v: (v["tags"][2], -v["id"]))\n'
                       'print(len(s), sum(v["id"] for v in e.values()), l[0]["name"], '
                       'l[-1]["name"])')
    return body + 'print(len(s), sum(v["id"] for v in e.values()), len(e))'


def perl_script(keys):
    """A perl hash of `keys` keys, half of them deleted."""
    return ('\nmy %%h; my $n = %d;\n'
            'for my $i (1..$n) { $h{"key$i"} = [$i, "v" x ($i %% 17)] }\n'
            'my $t = 0; $t += $h{$_}[0] for keys %%h;\n'
            'delete $h{"key$_"} for grep { $_ %% 2 } 1..$n;\n'
            'print scalar(keys %%h), " $t\\n"' % keys)


SORT_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
              "india", "juliet"]


def sort_input(path, lines):
    """`lines` lines for sort, the same every time (a fixed seed)."""
    rnd = random.Random(20240601)
    with open(path, "w") as f:
        for i in range(lines):
            f.write("%s %08d %s %d\n" % (rnd.choice(SORT_WORDS), rnd.randrange(10**8),
                                         rnd.choice(SORT_WORDS), i))


# The sizes of make bench's traces (bench/record_traces.py; bench/tune_glibc.py
# runs the same): each replays in well under 0.5 s.
RECORDED = dict(sqlite3=20000, python3=4000, perl=30000, sort=50000)
PROGRAMS = ("sqlite3", "python3", "perl", "sort")


def command(name, size, workdir, **opts):
    """The command line and extra environment of one workload of PROGRAMS at
    size (rows, entries, keys, lines) as make bench records it: (argv, env).
    python3 runs with PYTHONMALLOC=malloc, every object through malloc
    (pymalloc would serve the small ones from its own arenas, leaving a few
    thousand calls); sort with LC_ALL=C and one thread, its input written
    into workdir.  opts go to the workload's text (sqlite3_sql,
    python3_script)."""
    if name == "sqlite3":
        return ["sqlite3", ":memory:", sqlite3_sql(size, **opts)], {}
    if name == "python3":
        return [PYTHON, "-s", "-c", python3_script(size, **opts)], {"PYTHONMALLOC": "malloc"}
    if name == "perl":
        return ["perl", "-e", perl_script(size)], {}
    if name == "sort":
        path = os.path.join(workdir, "sort_input.txt")
        sort_input(path, size)
        return ["sort", "--parallel=1", path], {"LC_ALL": "C"}
    raise ValueError("no workload %r (known: %s)" % (name, ", ".join(PROGRAMS)))


def installed(argv0):
    """Whether a program (a path or a name on PATH) is there to run."""
    return shutil.which(argv0) is not None


# --------------------------------------------------------------------------
# statistics and formatting

def median(v):
    """The median of the values that are not None; None when there are none."""
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def geomean(v):
    """The geometric mean of the positive values; None when there are none."""
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def pct(a, b):
    """a against b in per cent: 100 (a - b) / b; 0 when b is 0."""
    return 100.0 * (a - b) / b if b else 0.0


def fmt(x, f="%.3f"):
    """x in format f, or '–' for None."""
    return "–" if x is None else f % x


def mib(b):
    return None if b is None else b / 1048576.0


# --------------------------------------------------------------------------
# results

def write_results(build, name, text, data):
    """BUILD/bench/NAME.md (text) and BUILD/bench/NAME.json (data); returns
    their paths."""
    outdir = os.path.join(build, "bench")
    os.makedirs(outdir, exist_ok=True)
    md, js = os.path.join(outdir, name + ".md"), os.path.join(outdir, name + ".json")
    with open(md, "w") as f:
        f.write(text)
    with open(js, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return md, js

