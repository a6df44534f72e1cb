"""benchlib.py - what the benchmarks in bench/ share.

  - where things are (ROOT) and the options every benchmark takes (parser:
    --build, --reps or BENCH_REPS);
  - the machine, described once (machine, machine_line, tool_version, git_rev);
  - from scripts/progrun.py, shared with make evolve's measured step: the
    environment a measured program runs in (clean_env), one program run,
    measured (run, find_gnu_time, tail), and a program under several
    allocators side by side (measure_program);
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
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cpupin  # noqa: E402,F401  (scripts/cpupin.py: timed runs on the fastest CPU)
# one run measured, and a program under several allocators (scripts/progrun.py)
from progrun import clean_env, find_gnu_time, measure_program, run, tail  # noqa: E402,F401
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


def kernel_costs(directory, fault_mib=64, calls=100000, write_mib=32, block=256 << 10):
    """What the kernel charges a program on this machine, in microseconds:
    dict(fault_us, syscall_us, write_us).  fault_us: the first touch of a
    page of anonymous memory (huge pages refused where the kernel allows
    that), less the same loop over the pages once resident; syscall_us:
    getppid(), less a loop over a builtin that makes no system call;
    write_us: a write of `block` bytes to a new file in `directory`, as a
    tracer's blocks are written (the file is removed after).  A figure that
    cannot be measured is None.  On the VM dmm is developed on: 10.5-15.6,
    1.0-1.3, and 35-39 (ext4) or 67 (tmpfs): a workload that faults much
    spends most of its time in the kernel there, and what moves its faults
    moves its time."""
    import mmap
    out = dict(fault_us=None, syscall_us=None, write_us=None, block_kib=block >> 10)
    n = fault_mib << 20
    try:
        m = mmap.mmap(-1, n)
    except (OSError, ValueError):
        m = None
    if m is not None:
        try:
            if hasattr(m, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
                m.madvise(mmap.MADV_NOHUGEPAGE)
            page = mmap.PAGESIZE
            pages = range(0, n, page)
            passes = []
            for _ in range(2):   # the first faults every page in, the second does not
                t0 = time.perf_counter()
                for i in pages:
                    m[i] = 1
                passes.append(time.perf_counter() - t0)
            out["fault_us"] = max(0.0, passes[0] - passes[1]) / len(pages) * 1e6
        finally:
            m.close()
    loops = []
    for f in (os.getppid, sys.getrecursionlimit):   # a system call; a builtin that makes none
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        loops.append(time.perf_counter() - t0)
    out["syscall_us"] = max(0.0, loops[0] - loops[1]) / calls * 1e6
    path = os.path.join(directory, "kernel-costs.%d.tmp" % os.getpid())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            buf = bytes(range(256)) * (block // 256)
            count = max(1, (write_mib << 20) // block)
            t0 = time.perf_counter()
            for _ in range(count):
                os.write(fd, buf)
            out["write_us"] = (time.perf_counter() - t0) / count * 1e6
        except OSError:
            out["write_us"] = None
        finally:
            os.close(fd)
            os.unlink(path)
    return out


def kernel_costs_line(c):
    """kernel_costs() in words, for a report."""
    def us(x, f):
        return (f % x) + " µs" if x is not None else "not measured"
    return ("a page fault %s, a system call %s, a %d KiB write to the trace directory %s"
            % (us(c.get("fault_us"), "%.2f"), us(c.get("syscall_us"), "%.2f"),
               c.get("block_kib", 256), us(c.get("write_us"), "%.0f")))


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
# a trace recorded (one run: run(), scripts/progrun.py)

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


def python3_threads_script(entries, threads=2):
    """python3_script's dict, JSON and back in each of `threads` threads at
    once, each with a dict of its own (the GIL takes them in turns, every
    few milliseconds, so that the process allocates from both).  No line
    starts with t: heaptrack reads the command line back as its own
    records, and takes such a line for one."""
    return ('\nimport json, threading\n'
            'out = {}\n'
            'def work(t):\n'
            '    d = {}\n'
            '    for i in range(%d):\n'
            '        d["k%%d" %% i] = {"id": i + t, "name": "item%%d" %% i,\n'
            '                       "tags": [i %% 7, i %% 11, "t%%d" %% (i %% 13)], "v": i * 0.5}\n'
            '    s = json.dumps(d, sort_keys=True)\n'
            '    e = json.loads(s)\n'
            '    out[t] = (len(s), sum(v["id"] for v in e.values()))\n'
            'workers = [threading.Thread(target=work, args=(t,)) for t in range(%d)]\n'
            'for w in workers:\n'
            '    w.start()\n'
            'for w in workers:\n'
            '    w.join()\n'
            'print(sorted(out.items()))') % (entries, threads)


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

