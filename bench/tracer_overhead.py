#!/usr/bin/env python3
"""tracer_overhead.py - what recording a trace costs a program.

Runs a set of real, malloc-heavy workloads plain and under each tracer
(libdmmtrace.so with and without call stacks and with zstd, heaptrack, glibc's
mtrace; on the two-thread work_media also an interposer that records nothing
and spends what the recorder spends a call), repetitions interleaved (rep 1:
every workload x every variant, in an order rotated per rep; rep 2: ...), so
that a slow spell of the machine hits all variants alike; a workload whose plain run is short (the bundled
work_media's 0.08 s) runs up to 5 rounds of plain and libdmmtrace.so a rep,
for as many samples as its noise needs, and the two-thread work_media 9.  Per
run: wall time, child CPU time, peak RSS and minor page faults (from wait4),
exit status, stdout checked against the plain run's, and the bytes of trace
the run wrote (the files are then deleted).  A round of a workload with one
thread runs on the CPU that was fastest at its start (a tracer with a
process of its own, and a second plain run for it, unpinned), and a
variant's ratio is the median of its rounds' ratios to the plain run of
the same round.  Where a workload's plain runs'
page faults move (the two-thread work_media's), the report also reads a line
of wall time on faults fitted through each variant's runs at the plain runs'
median faults: what recording costs with the program's memory as it was.

    python3 bench/tracer_overhead.py [--reps N] [--quick] [--only NAME[,NAME]]
                                     [--spend NS[,NS]] [--build DIR]

--spend runs libspend.so (below) at each of those fixed times a call too,
beside the calibrated one, on the two-thread rows: how steeply a row
follows the time an interposer spends in each call.

BENCH_REPS= in the environment sets the default number of repetitions.
Writes BUILD/bench/tracer_overhead.md (also printed) and
BUILD/bench/tracer_overhead.json (every run's raw numbers).  Exits 1 if any run
failed or printed something other than the plain run did.

Standard library only.
"""

import argparse
import datetime
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import fmt, mib  # noqa: E402

ROOT = benchlib.ROOT
PYTHON = benchlib.PYTHON
RUN_TIMEOUT_S = 180
# A workload whose plain run is short is noisier, relative to its length, on
# a shared machine: it gets more rounds per rep, up to SHORT_ROUNDS, enough for
# about ROUND_S seconds of plain runs a rep.  The extra rounds run the plain
# run and libdmmtrace.so's variants only (heaptrack and mtrace take 5-30x as
# long and sit far from any threshold); each round is one interleaved cycle.
ROUND_S = 2.0
SHORT_ROUNDS = 5
# work_media -t 2 hands each thread's old frames to the other: how many wait
# in a queue, up to 64 of 3 planes each, follows which thread runs ahead, so
# its page faults (2 k to 8 k with the thresholds fixed, and its time with
# them) vary from run to run whatever the tracer does: its rows take
# THREAD_ROUNDS rounds a rep, and every row shows the runs' page faults.
THREAD_ROUNDS = 9
MORE_ROUNDS = ("work_media_t2", "work_media_t2_fixed", "work_media_t2_1cpu")
# Workloads with more than one thread (sort takes as many as it likes): their
# rounds run unpinned.  Every other round runs on one CPU, the fastest by a
# busy loop at the round's start (scripts/cpupin.py, as make bench's programs
# do): this machine's CPUs change speed by up to 1.8x from second to second,
# and a round's plain and traced runs, back to back on one CPU, then compare
# like with like.
THREADED = ("work_media_t2", "work_media_t2_fixed", "sort", "python3_threads")
UNPINNED = "plain, unpinned"
MAX_ROUNDS = max(SHORT_ROUNDS, THREAD_ROUNDS)
MALLOC_DEBUG = "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
# The two-thread rows also run libspend.so (bench/libspend.c), an interposer
# that records nothing and spends a fixed time in each call, where the
# recorder records: SPEND, as the report names it.  Its time a call is
# calibrated before the reps so that, with both threads on one CPU (where
# the program's memory does not move with time), it costs the program what
# libdmmtrace.so costs it: CAL_ROUNDS pinned rounds of plain, libdmmtrace.so
# and libspend.so at a first guess, then the guess scaled by the ratio of
# the two extra times (libspend.so's own calibration reads time on a tight
# malloc/free loop, where a call's loop costs less than among the program's
# own work).  What libspend.so reads unpinned is then what any interposer
# that cost as much would pay there, through glibc's trims alone.
SPEND = "interposer, recorder's time"
CAL_ROUNDS = 11
SPEND_GUESS_NS = 10.0
# glibc's dynamic thresholds pinned where work_media's frames never reach them
T2_FIXED = "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=67108864"

# --------------------------------------------------------------------------
# workloads: benchlib's texts and input; python3 as it comes (-I: pymalloc,
# no PYTHONMALLOC) and sort with as many threads as it likes, as a user runs them

def workloads(build, tmp, quick):
    """[(name, description, argv, extra_env, missing_reason_or_None, setup)]"""
    wm = os.path.join(build, "bench", "work_media")
    sort_in = os.path.join(tmp, "sort_input.txt")
    f1, f2 = (1000, 500) if quick else (3000, 1500)
    nsort = 100000 if quick else 300000
    npy = 12000 if quick else 32000
    nsql = 30000 if quick else 100000
    npl = 30000 if quick else 90000
    out = [
        ("work_media", "build/bench/work_media -f %d" % f1,
         [wm, "-f", str(f1)], {}, wm, None),
        ("work_media_t2", "build/bench/work_media -f %d -t 2" % f2,
         [wm, "-f", str(f2), "-t", "2"], {}, wm, None),
        # The same with glibc's mmap and trim thresholds fixed (for the plain
        # run too).  They move with the program's frees, so where its two
        # threads' frees fall in time decides how often glibc trims its arenas
        # and faults the pages in again: any delay in malloc and free shifts
        # that (SPEND, an interposer that only spends the recorder's time,
        # raises the faults too, if less), and this row is the tracer's own
        # cost on threads without that effect.
        ("work_media_t2_fixed", "build/bench/work_media -f %d -t 2, glibc thresholds fixed"
         % f2, [wm, "-f", str(f2), "-t", "2"], {"GLIBC_TUNABLES": T2_FIXED}, wm, None),
        # The same with both threads on the round's CPU, as where a program
        # has more threads than CPUs: they take turns a time slice each, and
        # which thread runs ahead no longer follows the CPUs' speeds, so the
        # plain runs' faults hold still (12 k to 15 k) and the row reads
        # what the recorder does to the program's threads (its clock syncs
        # once read the whole process's CPU time, which got the program
        # preempted inside malloc and free: 1.28x, 1.11x since).
        ("work_media_t2_1cpu", "build/bench/work_media -f %d -t 2, both threads on one CPU"
         % f2, [wm, "-f", str(f2), "-t", "2"], {}, wm, None),
        ("sort", "sort of a generated %dk-line file (LC_ALL=C)" % (nsort // 1000),
         [shutil.which("sort") or "/usr/bin/sort", sort_in], {"LC_ALL": "C"},
         shutil.which("sort"), lambda: benchlib.sort_input(sort_in, nsort)),
        ("python3", "/usr/bin/python3 -I: json/dict of %dk entries" % (npy // 1000),
         [PYTHON, "-I", "-c", benchlib.python3_script(npy)], {}, PYTHON, None),
        # every object through malloc: the heaviest recording python3 gives
        ("python3_malloc", "/usr/bin/python3 -s, PYTHONMALLOC=malloc: json/dict of %dk entries"
         % (npy // 1000),
         [PYTHON, "-s", "-c", benchlib.python3_script(npy)], {"PYTHONMALLOC": "malloc"},
         PYTHON, None),
        # two threads of it at once: a real program's records on the
        # recorder's multi-threaded way
        ("python3_threads", "/usr/bin/python3 -s, PYTHONMALLOC=malloc: 2 threads, json/dict of "
         "%dk entries each" % (npy // 2000),
         [PYTHON, "-s", "-c", benchlib.python3_threads_script(npy // 2)],
         {"PYTHONMALLOC": "malloc"}, PYTHON, None),
        ("sqlite3", "sqlite3 :memory:: %dk rows into an indexed table" % (nsql // 1000),
         [shutil.which("sqlite3") or "sqlite3", ":memory:", benchlib.sqlite3_sql(nsql)], {},
         shutil.which("sqlite3"), None),
        ("perl", "perl -e: hash of %dk keys" % (npl // 1000),
         [shutil.which("perl") or "perl", "-e", benchlib.perl_script(npl)], {},
         shutil.which("perl"), None),
    ]
    res = []
    for name, desc, argv, env, prog, setup in out:
        missing = None
        if not prog or not os.access(prog, os.X_OK):
            missing = "program %s not found" % (prog or argv[0])
        res.append(dict(name=name, desc=desc, argv=argv, env=env,
                        missing=missing, setup=setup))
    return res


# --------------------------------------------------------------------------
# variants: each turns (argv, env, rundir) into (argv, env)

def variants(build, spend_ns, fixed_ns=()):
    """spend_ns: a dict whose "ns" the calibration sets before the reps;
    fixed_ns: the times a call of --spend's variants."""
    tracer = os.path.join(build, "libdmmtrace.so")
    spender = os.path.join(build, "bench", "libspend.so")
    marker = os.path.join(build, "test", "progs", "libmtrace_on.so")
    heaptrack = shutil.which("heaptrack")

    def dmm(extra):
        def f(argv, env, d):
            e = dict(env, LD_PRELOAD=tracer,
                     DMM_TRACE_FILE=os.path.join(d, "t.%p.trc"))
            e.update(extra)
            return argv, e
        return f

    # pin: whether the variant runs on the round's CPU (a workload with one
    # thread).  A tracer with a process of its own beside the program (the
    # writer process, heaptrack_interpret) runs unpinned, as a user runs it,
    # and is compared with an unpinned plain run of the same round.
    plain = lambda argv, env, d: (argv, env)
    spend_missing = (None if os.path.exists(spender) else
                     spender + " not built (make %s)" % os.path.relpath(spender, ROOT))
    v = [
        dict(name="plain", make=plain, missing=None),
        dict(name=UNPINNED, make=plain, missing=None, pin=False),
        dict(name="dmmtrace", make=dmm({"DMM_TRACE_STACK": "0"}), missing=None),
        dict(name="dmmtrace stack=8", make=dmm({"DMM_TRACE_STACK": "8"}), missing=None),
        dict(name="dmmtrace zstd",
             make=dmm({"DMM_TRACE_STACK": "0", "DMM_TRACE_COMPRESS": "zstd"}),
             missing=None, pin=False),
        # the writer process for uncompressed blocks too (auto starts it for
        # compressed ones): what the default leaves out, measured beside it
        dict(name="dmmtrace writer",
             make=dmm({"DMM_TRACE_STACK": "0", "DMM_TRACE_WRITER": "yes"}),
             missing=None, pin=False),
        # only: the workloads it runs on; sub: it runs in every round
        dict(name=SPEND, only=MORE_ROUNDS, sub=True,
             make=lambda argv, env, d: (argv, dict(env, LD_PRELOAD=spender,
                                                   SPEND_NS="%.2f" % spend_ns["ns"])),
             missing=spend_missing),
        dict(name="heaptrack",
             make=lambda argv, env, d: ([heaptrack, "-o", os.path.join(d, "ht")] + argv, env),
             missing=None if heaptrack else "heaptrack not installed", pin=False),
        dict(name="glibc mtrace",
             make=lambda argv, env, d: (argv, dict(env, LD_PRELOAD=MALLOC_DEBUG + ":" + marker,
                                                   MALLOC_TRACE=os.path.join(d, "m.mtrace"))),
             missing=None if os.path.exists(MALLOC_DEBUG) else MALLOC_DEBUG + " not found"),
    ]
    # --spend's, beside the calibrated one
    at = next(i for i, x in enumerate(v) if x["name"] == SPEND) + 1
    v[at:at] = [dict(name=spend_fixed_name(ns), only=MORE_ROUNDS, sub=True,
                     make=lambda argv, env, d, ns=ns: (argv, dict(env, LD_PRELOAD=spender,
                                                                  SPEND_NS="%g" % ns)),
                     missing=spend_missing) for ns in fixed_ns]
    if not os.path.exists(tracer):
        for x in v:
            if x["name"].startswith("dmmtrace"):
                x["missing"] = tracer + " not built (run make)"
    mt = next(x for x in v if x["name"] == "glibc mtrace")
    if not os.path.exists(marker) and not mt["missing"]:
        mt["missing"] = marker + " not built (make %s)" % os.path.relpath(marker, ROOT)
    return v


def spend_fixed_name(ns):
    """The name of --spend's variant at ns nanoseconds a call."""
    return "interposer, %g ns" % ns


def spend_fixed_ratios(fixed_ns, wsum):
    """[(ns, summary)] of --spend's variants that ran on a workload whose
    variants' summaries are wsum, with a ratio."""
    out = [(ns, wsum.get(spend_fixed_name(ns))) for ns in fixed_ns]
    return [(ns, f) for ns, f in out if f and f["ratio"] is not None]


def faults_k(summary):
    """A variant's median page faults, in thousands, as the report says them."""
    f = summary.get("median_minflt")
    return "%.1fk" % (f / 1000.0) if f is not None else "faults unknown"


def parse_ns_list(text):
    """--spend's value: nanoseconds, comma-separated, each 0 to 1000."""
    out = []
    for part in text.split(","):
        try:
            ns = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number of nanoseconds" % part)
        if not 0 <= ns <= 1000:
            raise argparse.ArgumentTypeError("%g ns is outside 0 to 1000" % ns)
        if ns not in out:
            out.append(ns)
    return out


def heaptrack_stdout(data):
    """The program's own stdout out of heaptrack's: the lines between its
    'starting application' and 'Heaptrack finished!' messages."""
    start = b"starting application, this might take some time...\n"
    i = data.find(start)
    j = data.rfind(b"Heaptrack finished!")
    if i < 0 or j < 0 or j < i:
        return None
    return data[i + len(start):j]


# --------------------------------------------------------------------------
# one run

def tail(err):
    return "\n".join("    | " + l for l in benchlib.tail(err))


def dir_bytes(d):
    n = 0
    for dp, _, files in os.walk(d):
        for f in files:
            try:
                n += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return n


# --------------------------------------------------------------------------

def fit_line(xs, ys):
    """The least-squares line of ys on xs as (slope, its value at the xs'
    mean, that mean); None when the xs are all equal."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx, my, mx


def line_at(xs, ys, x0):
    """The least-squares line of ys on xs read at x0; None when the xs
    are all equal."""
    f = fit_line(xs, ys)
    return None if f is None else f[1] + f[0] * (x0 - f[2])


def equal_faults(rs):
    """A workload's dmmtrace/plain at equal page faults, where its plain
    runs' faults move (the largest at least 1.5x the smallest, 8 runs or
    more of each): each variant's wall time fitted on its faults, read at
    the plain runs' median.  A dict for the report, or None."""
    runs = {v: [r for r in rs if r["variant"] == v and r.get("minflt") is not None and
                r["exit"] == 0] for v in ("plain", "dmmtrace")}
    if min(len(v) for v in runs.values()) < 8:
        return None
    pf = [r["minflt"] for r in runs["plain"]]
    if min(pf) <= 0 or max(pf) < 1.5 * min(pf):
        return None
    x0 = statistics.median(pf)
    at = {v: line_at([r["minflt"] for r in vr], [r["wall_s"] for r in vr], x0)
          for v, vr in runs.items()}
    if not at["plain"] or not at["dmmtrace"] or at["plain"] <= 0:
        return None
    # what a fault adds to a plain run's wall time, and so how much of it
    # the faults stand for
    us = fit_line(pf, [r["wall_s"] for r in runs["plain"]])[0] * 1e6
    return dict(runs=min(len(v) for v in runs.values()), at_k=x0 / 1000.0,
                plain_min_k=min(pf) / 1000.0, plain_max_k=max(pf) / 1000.0,
                plain_s=at["plain"], dmmtrace_s=at["dmmtrace"],
                ratio=at["dmmtrace"] / at["plain"], plain_us_a_fault=us,
                plain_fault_share=us * 1e-6 * x0 / at["plain"])


def fault_share(eq, costs):
    """The equal-fault line's sentence on what a fault costs a plain run,
    where its runs' faults spread enough (the largest 3x the smallest) for
    the slope to mean that; else ''."""
    if eq["plain_max_k"] < 3 * eq["plain_min_k"]:
        return ""
    return (" Each fault adds %.1f µs to a plain run's wall time (the kernel's own cost of one "
            "here: %s), so the faults stand for %.0f %% of it at the median, and whatever "
            "moves them moves the run's time."
            % (eq["plain_us_a_fault"], "%.1f µs" % costs["fault_us"]
               if costs.get("fault_us") is not None else "not measured",
               100.0 * eq["plain_fault_share"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=None,
                    help="repetitions (default BENCH_REPS or 5; 2 with --quick)")
    ap.add_argument("--quick", action="store_true", help="2 reps, smaller workloads")
    ap.add_argument("--only", default=None,
                    help="comma-separated workload names to run")
    ap.add_argument("--spend", type=parse_ns_list, default=[], metavar="NS[,NS]",
                    help="also run libspend.so at these nanoseconds a call on the "
                         "two-thread rows")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build directory (default build/)")
    args = ap.parse_args()

    reps = args.reps
    if reps is None:
        reps = benchlib.reps_default(2 if args.quick else 5)
    if reps < 1:
        ap.error("--reps must be at least 1")
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="dmm-bench-")
    try:
        return bench(args, reps, build, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def calibrate_spend(w, vs, base_env, tmp, spend_ns):
    """Set spend_ns["ns"], libspend.so's time a call on workload w (the
    two-thread work_media), to what makes it cost the program, with both
    threads on the fastest CPU, what libdmmtrace.so costs it (see SPEND).
    A dict for the report."""
    by = {v["name"]: v for v in vs}
    trio = [by["plain"], by["dmmtrace"], by[SPEND]]
    spend_ns["ns"] = SPEND_GUESS_NS
    extra = {"dmmtrace": [], SPEND: []}
    for k in range(CAL_ROUNDS):
        cpu, _ = benchlib.cpupin.fastest_cpu()
        wall = {}
        for v in trio[k % 3:] + trio[:k % 3]:
            rundir = os.path.join(tmp, "run")
            os.mkdir(rundir)
            argv, env = v["make"](w["argv"], dict(base_env, **w["env"]), rundir)
            with benchlib.cpupin.pinned(cpu):
                res = benchlib.run(argv, env, timeout=RUN_TIMEOUT_S)
            shutil.rmtree(rundir)
            if res["exit"] != 0:
                raise SystemExit("tracer_overhead: calibrating %s: %s exited %d\n%s"
                                 % (SPEND, v["name"], res["exit"], tail(res["err"])))
            wall[v["name"]] = res["wall_s"]
        for name in extra:
            extra[name].append(wall[name] - wall["plain"])
    e_rec = statistics.median(extra["dmmtrace"])
    e_sp = statistics.median(extra[SPEND])
    scale = e_rec / e_sp if e_sp > 0 else 4.0
    scale = min(4.0, max(0.25, scale))
    spend_ns["ns"] = SPEND_GUESS_NS * scale
    return dict(workload=w["name"], rounds=CAL_ROUNDS, guess_ns=SPEND_GUESS_NS,
                recorder_extra_s=e_rec, guess_extra_s=e_sp, ns=spend_ns["ns"])


def run_round(w, sub, rep, order, base_env, gnu_time, ref, tmp, runs, failures, cpu):
    """One round of workload w: every variant in order (after the first
    round of a rep, the plain runs and libdmmtrace.so's only), each run
    appended to runs with the CPU it was pinned to (None: unpinned; cpu
    None: the round is, and has no unpinned plain run of its own)."""
    for pos, v in enumerate(order):
        if "only" in v and w["name"] not in v["only"]:
            continue
        if sub and not (v["name"].startswith("plain") or v["name"].startswith("dmmtrace")
                        or v.get("sub")):
            continue
        if v["name"] == UNPINNED and cpu is None:
            continue
        on = cpu if v.get("pin", True) else None
        rundir = os.path.join(tmp, "run")
        os.mkdir(rundir)
        argv, env = v["make"](w["argv"], dict(base_env, **w["env"]), rundir)
        with benchlib.cpupin.pinned(on):
            res = benchlib.run(argv, env, timeout=RUN_TIMEOUT_S, gnu_time=gnu_time)
        rc, to, data = res["exit"], res["timed_out"], res["out"]
        tbytes = dir_bytes(rundir)
        nfiles = sum(len(f) for _, _, f in os.walk(rundir))
        shutil.rmtree(rundir)
        if v["name"] == "heaptrack":
            data = heaptrack_stdout(data)
        same = data == ref[w["name"]]
        # rep: the round (plain and the variants of one round pair up)
        r = dict(workload=w["name"], variant=v["name"],
                 rep=rep * MAX_ROUNDS + sub + 1, position=pos, cpu=on,
                 wall_s=res["wall_s"], user_s=res["user_s"], sys_s=res["sys_s"],
                 cpu_s=res["cpu_s"], minflt=res.get("minflt"),
                 maxrss_kib=res["maxrss_kib"], trace_bytes=tbytes, trace_files=nfiles,
                 exit=rc, timed_out=to, stdout_ok=same,
                 stdout_sha1=hashlib.sha1(data or b"").hexdigest())
        runs.append(r)
        ok = rc == 0 and same and not to
        if not ok:
            why = ("timed out after %d s" % RUN_TIMEOUT_S if to
                   else "exited %d" % rc if rc != 0
                   else "STDOUT DIFFERS from the plain run's")
            msg = "%s / %s / rep %d: %s" % (w["name"], v["name"], rep + 1, why)
            failures.append(msg)
            print("tracer_overhead: FAIL " + msg + "\n" + tail(res["err"]),
                  file=sys.stderr)
            if not same and data is not None:
                print("    got:      %r\n    expected: %r"
                      % (data[:200], ref[w["name"]][:200]), file=sys.stderr)


def bench(args, reps, build, tmp):
    started = datetime.datetime.now().astimezone()
    t_start = time.perf_counter()
    notes = []
    wls = workloads(build, tmp, args.quick)
    if args.only:
        want = [w.strip() for w in args.only.split(",") if w.strip()]
        names = [w["name"] for w in wls]
        bad = [w for w in want if w not in names]
        if bad:
            print("tracer_overhead: unknown workload %s (known: %s)"
                  % (", ".join(bad), ", ".join(names)), file=sys.stderr)
            return 2
        wls = [w for w in wls if w["name"] in want]
    for w in wls:
        if w["missing"]:
            notes.append("workload %s skipped: %s" % (w["name"], w["missing"]))
    wls = [w for w in wls if not w["missing"]]
    spend_ns = dict(ns=SPEND_GUESS_NS)
    vs = variants(build, spend_ns, args.spend)
    for v in vs:
        if v["missing"]:
            notes.append("variant %s skipped: %s" % (v["name"], v["missing"]))
    vs = [v for v in vs if not v["missing"]]
    for n in notes:
        print("tracer_overhead: " + n, file=sys.stderr)
    base_env = benchlib.clean_env()

    gnu_time = benchlib.find_gnu_time()
    if not gnu_time:
        notes.append("GNU time not found: peak RSS is wait4's ru_maxrss, which includes "
                     "this Python harness's own peak (a floor of tens of MiB)")

    # setup and one untimed plain run each: warms caches, gives the reference
    # stdout and the number of rounds a rep
    ref = {}
    rounds = {}
    failures = []
    for w in wls:
        if w["setup"]:
            w["setup"]()
        res = benchlib.run(w["argv"], dict(base_env, **w["env"]), timeout=RUN_TIMEOUT_S,
                           gnu_time=gnu_time)
        rc, wall, data = res["exit"], res["wall_s"], res["out"]
        if rc != 0:
            failures.append("%s: warm-up plain run exited %d" % (w["name"], rc))
            print("tracer_overhead: %s: plain run exited %d\n%s"
                  % (w["name"], rc, tail(res["err"])), file=sys.stderr)
        ref[w["name"]] = data
        rounds[w["name"]] = (THREAD_ROUNDS if w["name"] in MORE_ROUNDS else
                             max(1, min(SHORT_ROUNDS, int(ROUND_S / max(wall, 1e-3)))))
        print("tracer_overhead: warm-up %-14s %.3f s  %s"
              % (w["name"], wall, data.decode("utf-8", "replace").splitlines()[0][:60]
                 if data else "(no output)"), file=sys.stderr)

    # what a fault, a system call and a block's write cost here: the two-thread
    # rows' times follow their faults (the equal-fault line below reads how)
    costs = benchlib.kernel_costs(tmp)
    print("tracer_overhead: kernel costs: " + benchlib.kernel_costs_line(costs), file=sys.stderr)

    cal = None
    # on the plain two-thread row where it runs, else the first that does
    t2 = sorted((w for w in wls if w["name"] in MORE_ROUNDS), key=lambda w: bool(w["env"]))
    if t2 and any(v["name"] == SPEND for v in vs) and any(v["name"] == "dmmtrace" for v in vs):
        cal = calibrate_spend(t2[0], vs, base_env, tmp, spend_ns)
        print("tracer_overhead: %s: %.1f ns a call (on one CPU, %d rounds: libdmmtrace.so "
              "+%.1f ms, libspend.so at %.0f ns +%.1f ms)"
              % (SPEND, cal["ns"], cal["rounds"], cal["recorder_extra_s"] * 1e3,
                 cal["guess_ns"], cal["guess_extra_s"] * 1e3), file=sys.stderr)

    runs = []
    nv = len(vs)
    for rep in range(reps):
        order = [vs[(i + rep) % nv] for i in range(nv)]
        for w, sub in [(w, sub) for w in wls for sub in range(rounds[w["name"]])]:
            cpu, speeds = ((None, {}) if w["name"] in THREADED
                           else benchlib.cpupin.fastest_cpu())
            run_round(w, sub, rep, order, base_env, gnu_time, ref, tmp, runs, failures, cpu)
        print("tracer_overhead: rep %d/%d done (%.0f s)"
              % (rep + 1, reps, time.perf_counter() - t_start), file=sys.stderr)

    elapsed = time.perf_counter() - t_start
    info = benchlib.machine()
    tools = dict(heaptrack=benchlib.tool_version(["heaptrack", "--version"])
                 if shutil.which("heaptrack") else None,
                 sqlite3=benchlib.tool_version(["sqlite3", "-version"])
                 if shutil.which("sqlite3") else None,
                 python3=benchlib.tool_version([PYTHON, "--version"])
                 if os.path.exists(PYTHON) else None,
                 git=benchlib.git_rev())

    # ---- summarise
    summary = {}
    lines = []
    lines.append("# Tracer overhead")
    lines.append("")
    lines.append("- date: %s" % started.strftime("%Y-%m-%d %H:%M:%S %z"))
    lines.append("- machine: %s CPUs, %s; kernel %s" % (info["nproc"], info["model"], info["kernel"]))
    lines.append("- glibc: %s" % info["glibc"])
    lines.append("- kernel costs, measured before the reps: %s" % benchlib.kernel_costs_line(costs))
    lines.append("- reps: %d%s, interleaved (per rep: every workload, every variant, "
                 "variant order rotated per rep); one untimed plain warm-up run each"
                 % (reps, " (--quick)" if args.quick else ""))
    pinned = sorted({r["cpu"] for r in runs if r.get("cpu") is not None})
    lines.append("- each round of a workload with one thread (and of work_media_t2_1cpu, "
                 "whose two threads share it) runs on one CPU, the fastest by "
                 "a busy loop at the round's start (%s), but for the tracers with a process "
                 "of their own (libdmmtrace.so's writer, heaptrack) and a second plain run "
                 "(`plain, unpinned`), their baseline; %s, with threads, run unpinned"
                 % ("CPUs " + ", ".join(str(c) for c in pinned) if pinned
                    else "none could be chosen: unpinned",
                    ", ".join(w["name"] for w in wls if w["name"] in THREADED) or "none"))
    more = ["%s %d" % (w["name"], rounds[w["name"]]) for w in wls if rounds[w["name"]] > 1]
    if more:
        lines.append("- rounds a rep for the runs shorter than %.0f s and for %s (plain "
                     "and libdmmtrace.so's variants; one of heaptrack and mtrace): %s"
                     % (ROUND_S, " and ".join(MORE_ROUNDS), ", ".join(more)))
    lines.append("- dmm %s; %s; %s" % (tools["git"] or "?", tools["heaptrack"] or "no heaptrack",
                                       tools["python3"] or "no /usr/bin/python3"))
    if cal:
        lines.append("- %s (libspend.so, bench/libspend.c: records nothing, each call to "
                     "glibc as it came, then a busy loop where the recorder records): %.1f ns "
                     "a call, calibrated before the reps on %s with both threads on one CPU, "
                     "%d interleaved rounds: libdmmtrace.so added %.1f ms a run (median), "
                     "libspend.so at %.0f ns %.1f ms"
                     % (SPEND, cal["ns"], cal["workload"], cal["rounds"],
                        cal["recorder_extra_s"] * 1e3, cal["guess_ns"],
                        cal["guess_extra_s"] * 1e3))
    lines.append("- total time %.0f s" % elapsed)
    for n in notes:
        lines.append("- " + n)
    lines.append("")
    lines.append("Wall = time.perf_counter() around spawn..wait4 of the whole command; CPU = "
                 "user+sys of it and every process it waited for (heaptrack: its launcher "
                 "script and heaptrack_interpret too), median; peak RSS = ru_maxrss as GNU "
                 "time reports it for the command (the largest single process), median. "
                 "Ratio = the median of the rounds' ratios (variant run / plain run of the "
                 "same round, on the same CPU where the workload has one thread; a tracer "
                 "with a process of its own runs unpinned, against the round's unpinned "
                 "plain run; the ratio of the medians is in the JSON); min–max ratio = their "
                 "extremes. Trace = bytes of every file the "
                 "run wrote (median over reps), deleted after each run. Faults = minor page "
                 "faults of the command and what it waited for (wait4's ru_minflt), median, "
                 "in thousands: where they move between the plain and the traced runs, the "
                 "program's memory moved, not only the tracer's instructions.")
    for w in wls:
        rs = [r for r in runs if r["workload"] == w["name"]]
        plain = {r["rep"]: r for r in rs if r["variant"] == "plain"}
        loose = {r["rep"]: r for r in rs if r["variant"] == UNPINNED}

        def base(r):
            """The plain run of r's round that r is compared with: the
            unpinned one for an unpinned run of a pinned round."""
            b = loose if r["cpu"] is None and r["rep"] in loose else plain
            return b.get(r["rep"])
        pmed = statistics.median(r["wall_s"] for r in plain.values()) if plain else None
        lines.append("")
        lines.append("## %s: %s" % (w["name"], w["desc"]))
        lines.append("")
        lines.append("| variant | median wall s | min–max | ratio to plain | min–max ratio "
                     "| peak RSS MiB | trace MiB | CPU s | faults k |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        wsum = {}
        for v in vs:
            vr = [r for r in rs if r["variant"] == v["name"]]
            if not vr:
                continue
            walls = [r["wall_s"] for r in vr]
            med = statistics.median(walls)
            per = [r["wall_s"] / base(r)["wall_s"] for r in vr
                   if base(r) and base(r)["wall_s"] > 0]
            # the median of the rounds' own ratios: a round's runs follow one
            # another on one CPU, while the machine's speed drifts between rounds
            ratio = statistics.median(per) if per else None
            of_medians = med / pmed if pmed else None
            rl = [r["maxrss_kib"] for r in vr if r["maxrss_kib"] is not None]
            rss = statistics.median(rl) / 1024.0 if rl else None
            tb = statistics.median(r["trace_bytes"] for r in vr)
            cpu = statistics.median(r["cpu_s"] for r in vr)
            fl = [r["minflt"] for r in vr if r.get("minflt") is not None]
            flt = statistics.median(fl) / 1000.0 if fl else None
            bad = [r for r in vr if r["exit"] != 0 or not r["stdout_ok"] or r["timed_out"]]
            label = v["name"]
            if bad:
                label += " **FAILED %d/%d**" % (len(bad), len(vr))
                if any(not r["stdout_ok"] for r in bad):
                    label += " **OUTPUT MISMATCH**"
            lines.append("| %s | %s | %s–%s | %s | %s | %s | %s | %s | %s |" % (
                label, fmt(med), fmt(min(walls)), fmt(max(walls)), fmt(ratio, "%.2f"),
                (fmt(min(per), "%.2f") + "–" + fmt(max(per), "%.2f")) if per else "-",
                fmt(rss, "%.1f"),
                fmt(mib(tb), "%.1f") if not v["name"].startswith("plain") else "-",
                fmt(cpu), fmt(flt, "%.1f")))
            wsum[v["name"]] = dict(median_wall_s=med, min_wall_s=min(walls), max_wall_s=max(walls),
                                   ratio=ratio, ratio_of_medians=of_medians,
                                   min_ratio=min(per) if per else None,
                                   max_ratio=max(per) if per else None,
                                   median_maxrss_mib=rss, median_trace_bytes=tb,
                                   median_cpu_s=cpu, median_minflt=statistics.median(fl)
                                   if fl else None, failed=len(bad))
        summary[w["name"]] = wsum
        d = wsum.get("dmmtrace")
        if d and d["ratio"] is not None:
            lines.append("")
            lines.append("dmmtrace/plain = %.2f (min %.2f, max %.2f)"
                         % (d["ratio"], d["min_ratio"], d["max_ratio"]))
            eq = equal_faults(rs)
            if eq:
                d["equal_faults"] = eq
                lines.append("")
                lines.append(
                    "At equal page faults: the plain runs' faults moved %.1fk–%.1fk and their "
                    "wall time with them; a least-squares line of wall time on faults through "
                    "each variant's %d runs, read at the plain runs' median (%.1fk), gives "
                    "plain %.3f s, dmmtrace %.3f s: **%.2f**, the recording's own cost where "
                    "the program's memory behaves as in the plain runs (%.2f as measured, with "
                    "faults %.1fk against %.1fk, medians).%s"
                    % (eq["plain_min_k"], eq["plain_max_k"], eq["runs"], eq["at_k"],
                       eq["plain_s"], eq["dmmtrace_s"], eq["ratio"], d["ratio"],
                       d["median_minflt"] / 1000.0, wsum["plain"]["median_minflt"] / 1000.0,
                       fault_share(eq, costs)))
        sp = wsum.get(SPEND)
        if sp and sp["ratio"] is not None and d and d["ratio"] is not None:
            lines.append("")
            lines.append(
                "%s/plain = %.2f (min %.2f, max %.2f), faults %.1fk: an interposer that "
                "records nothing and costs each call what the recorder costs it (%.1f ns), "
                "against dmmtrace's %.2f with %.1fk."
                % (SPEND, sp["ratio"], sp["min_ratio"], sp["max_ratio"],
                   sp["median_minflt"] / 1000.0, cal["ns"] if cal else float("nan"),
                   d["ratio"], d["median_minflt"] / 1000.0))
        fixed = spend_fixed_ratios(args.spend, wsum)
        if fixed and d and d["ratio"] is not None:
            lines.append("")
            lines.append("libspend.so at fixed times a call (--spend), ratio to plain and faults: "
                         + ", ".join("%g ns %.2f (%s)" % (ns, f["ratio"], faults_k(f))
                                     for ns, f in fixed)
                         + "; dmmtrace %.2f." % d["ratio"])
    lines.append("")
    lines.append("## Summary")
    lines.append("")
    for w in wls:
        d = summary[w["name"]].get("dmmtrace")
        if d and d["ratio"] is not None:
            eq = d.get("equal_faults")
            sp = summary[w["name"]].get(SPEND)
            fixed = spend_fixed_ratios(args.spend, summary[w["name"]])
            lines.append("- %s: dmmtrace/plain = %.2f (min %.2f, max %.2f)%s%s%s"
                         % (w["name"], d["ratio"], d["min_ratio"], d["max_ratio"],
                            "; %.2f at equal page faults" % eq["ratio"] if eq else "",
                            "; an interposer that only spends the recorder's time: %.2f"
                            % sp["ratio"] if sp and sp["ratio"] is not None else "",
                            "; at " + ", ".join("%g ns %.2f" % (ns, f["ratio"])
                                                for ns, f in fixed) if fixed else ""))
    lines.append("")
    if failures:
        lines.append("**%d run(s) FAILED or printed something else than the plain run:**" % len(failures))
        lines.append("")
        for f in failures:
            lines.append("- " + f)
    else:
        lines.append("All %d runs exited 0 and printed what the plain run printed." % len(runs))
    report = "\n".join(lines) + "\n"

    md, js = benchlib.write_results(build, "tracer_overhead", report, dict(
        date=started.isoformat(), machine=info, kernel_costs=costs, tools=tools, reps=reps,
        quick=args.quick,
        rounds=rounds, spend_calibration=cal, spend_fixed_ns=args.spend,
        elapsed_s=elapsed, notes=notes,
        workloads=[dict(name=w["name"], desc=w["desc"], argv=w["argv"], env=w["env"])
                   for w in wls],
        variants=[v["name"] for v in vs], runs=runs, summary=summary, failures=failures))
    sys.stdout.write(report)
    print("tracer_overhead: wrote %s and %s" % (os.path.relpath(md), os.path.relpath(js)),
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
