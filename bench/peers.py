#!/usr/bin/env python3
"""peers.py - the allocators side by side on real traces, and the simulator's fidelity.

For each trace (the bundled workload recorded by libdmmtrace.so, the traces
of real programs that bench/record_traces.py records, and ../shared/traces
when present) this replays the trace with `dmm replay --json` under every
allocator: glibc, jemalloc (the baseline), mimalloc and tcmalloc when
installed, libdmm.so with each preset (those of `dmm sim --all`), and
libdmm_evolved.so evolved for that trace (`dmm evolve --time S`, then built
with `make EVOLVED_DMM=...`).  Repetitions are interleaved (rep 1: every
allocator, in an order rotated per rep; rep 2: ...) so that a slow spell of
the machine hits all alike; before each replay, huge pages are faulted and
freed (scripts/hugewarm.py).  Per run: the replay's own wall time (not the
process start-up), peak RSS, wastage, latency percentiles, and for the dmm
libraries the footprint peak that DMM_STATS=1 prints at exit.

Simulator fidelity: every DMM is also simulated (`dmm sim --json`); its T and
M stand next to the measured time and footprint, with M's error (goal <= 1 %)
and per trace the Spearman rank correlation of T against measured time across
the DMMs (goal >= 0.9).  A least-squares fit of the measured times on the cost
counters (one intercept per trace) says which of the cost model's weights (its
`cost_model` in dmm sim's JSON) look off.

    python3 bench/peers.py [--reps N] [--quick] [--only NAME[,NAME]]
                           [--evolve-time S] [--build DIR]

--quick: the bundled workload only, one rep, a 10 s search.  BENCH_REPS= in the
environment sets the default number of repetitions.  Writes
BUILD/bench/peers.md (also printed) and BUILD/bench/peers.json (every run's raw
numbers); work files in BUILD/bench/peers/.  build/libdmm_evolved.so is rebuilt
from the .dmm it was built from before (the default chain if none).  Exits 1
if any replay failed or reported a check other than ok or off.

Standard library only.
"""

import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import hugewarm  # noqa: E402  (scripts/, on the path benchlib set)
import record_traces  # noqa: E402
from benchlib import fmt, geomean, mib  # noqa: E402

ROOT = benchlib.ROOT
SHARED_TRACES = os.path.join(os.path.dirname(ROOT), "shared", "traces")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
RUN_TIMEOUT_S = 120
WM_FRAMES = 300
WEE = ["dogfood", "gcc-hello", "ffmpeg", "source-map"]
ANDROID = ["systemui"]
REAL = list(benchlib.PROGRAMS)
FOOTPRINT_RE = re.compile(r"footprint (\d+) bytes now, (\d+) at peak")
# The counters of the cost model (dmm sim --json's cost_model) fitted as one:
# they move together.  "calls" is the same for every DMM of a trace, the
# intercept's; a counter named nowhere here is fitted on its own.
FIT_GROUPS = [["header_reads", "header_writes"], ["splits", "coalesces"]]


def log(msg):
    print("peers: " + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# traces

def prepare_traces(build, work, tmp, wanted, quick):
    """[(name, path, description)], [(name, why skipped)]"""
    traces, skipped = [], []

    def want(n):
        return n in wanted if wanted else (not quick or n == "work_media")

    tracer = os.path.join(build, "libdmmtrace.so")
    wm = os.path.join(build, "bench", "work_media")
    for name, args in (("work_media", ["-f", str(WM_FRAMES)]),
                       ("work_media_t2", ["-f", str(WM_FRAMES), "-t", "2"])):
        if not want(name):
            continue
        if not (os.path.exists(tracer) and os.path.exists(wm)):
            skipped.append((name, "build/libdmmtrace.so or build/bench/work_media not built"))
            continue
        path = os.path.join(work, "traces", name + ".trc")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        r = benchlib.record(build, path, [wm] + args, stack=None)
        if r["exit"] != 0 or not os.path.exists(path):
            skipped.append((name, "recording failed: " +
                            r["err"].decode(errors="replace").strip()[-200:]))
            continue
        traces.append((name, path, "build/bench/work_media %s under libdmmtrace.so" % " ".join(args)))

    real = [n for n in REAL if want(n)]
    if real:
        tdir = os.path.join(build, "bench", "traces")
        for n in real:
            p = os.path.join(tdir, n + ".trc")
            if os.path.exists(p):
                os.unlink(p)
        # all four, as make bench's traces (bench/offload.py replays them too)
        got = {r["name"]: r for r in record_traces.record_all(build, tdir)}
        for n in real:
            if got[n]["trace"]:
                traces.append((n, got[n]["trace"], "%s, recorded by bench/record_traces.py" % n))
            else:
                skipped.append((n, got[n]["message"].splitlines()[0]))

    for n in WEE:
        if not want(n):
            continue
        p = os.path.join(SHARED_TRACES, "wee_alloc", n + ".trace")
        if os.path.exists(p):
            traces.append((n, p, "../shared/traces/wee_alloc/%s.trace" % n))
        else:
            skipped.append((n, p + " not present"))
    for n in ANDROID:
        if not want(n):
            continue
        z = os.path.join(SHARED_TRACES, "android_memory_replay", n + ".zip")
        if not os.path.exists(z):
            skipped.append((n, z + " not present"))
            continue
        if not shutil.which("unzip"):
            skipped.append((n, "unzip not installed"))
            continue
        p = os.path.join(tmp, n + ".txt")
        with open(p, "wb") as f:
            r = subprocess.run(["unzip", "-p", z], stdout=f, stderr=subprocess.PIPE)
        if r.returncode != 0:
            skipped.append((n, "unzip -p %s failed" % z))
            continue
        traces.append((n, p, "../shared/traces/android_memory_replay/%s.zip (unzip -p)" % n))
    if wanted:
        known = {t[0] for t in traces} | {s[0] for s in skipped}
        for n in wanted:
            if n not in known:
                skipped.append((n, "no such trace (known: %s)" % ", ".join(
                    ["work_media", "work_media_t2"] + REAL + WEE + ANDROID)))
    return traces, skipped


# --------------------------------------------------------------------------
# allocators

def peer_allocators():
    """[(name, lib or None)], [(name, why skipped)]"""
    out, skipped = [("glibc", None)], []
    cands = [("jemalloc", [os.path.join(LIBDIR, "libjemalloc.so.2")]),
             ("mimalloc", sorted(glob.glob(os.path.join(LIBDIR, "libmimalloc.so.2*")), key=len)),
             ("tcmalloc", [os.path.join(LIBDIR, "libtcmalloc_minimal.so.4")])]
    for name, libs in cands:
        libs = [l for l in libs if os.path.exists(l)]
        if libs:
            out.append((name, libs[0]))
        else:
            skipped.append((name, "not installed (%s)" % os.path.join(LIBDIR, "lib%s*" % name)))
    return out, skipped


def huge_page_peers(installed=None):
    """The peers with transparent huge pages turned on, each by its own
    documented setting, as a user who knows them would run them:
    [(name, lib or None, {environment})], [(name, why skipped)].
    installed: peer_allocators()'s first list (None: asks it).

    glibc: the tunable glibc.malloc.hugetlb=1 (glibc 2.35 and later: heap
    and mmapped chunks advised MADV_HUGEPAGE); jemalloc: MALLOC_CONF
    thp:always,metadata_thp:always; mimalloc: MIMALLOC_LARGE_OS_PAGES=1.
    tcmalloc (gperftools) has no such setting.  None where the kernel has
    no transparent huge pages or has them off."""
    mode = hugewarm.thp_mode()
    if mode in (None, "never"):
        why = ("the kernel has none (%s)" % hugewarm.THP_ENABLED if mode is None
               else "off in this kernel (%s: never)" % hugewarm.THP_ENABLED)
        return [], [("huge-page peers", why)]
    if installed is None:
        installed, _ = peer_allocators()
    libs = {name: lib for name, lib in installed}
    out, skipped = [], []
    libc, ver = platform.libc_ver()
    try:
        new_glibc = libc == "glibc" and tuple(int(x) for x in ver.split(".")[:2]) >= (2, 35)
    except ValueError:
        new_glibc = False
    if new_glibc:
        out.append(("glibc+thp", None, {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}))
    else:
        skipped.append(("glibc+thp", "glibc.malloc.hugetlb needs glibc 2.35 (this is %s %s)"
                        % (libc or "not glibc", ver)))
    for name, env in (("jemalloc", {"MALLOC_CONF": "thp:always,metadata_thp:always"}),
                      ("mimalloc", {"MIMALLOC_LARGE_OS_PAGES": "1"})):
        if name in libs:
            out.append((name + "+thp", libs[name], env))
    if "tcmalloc" in libs:
        skipped.append(("tcmalloc+thp", "gperftools' tcmalloc has no setting for huge pages"))
    return out, skipped


def make_evolved(build, dmmfile, quiet=True):
    """build/libdmm_evolved.so from dmmfile (None: the Makefile's default)."""
    rel = os.path.relpath(build, ROOT)
    cmd = ["make", "-s", "-C", ROOT, "BUILD=" + rel, os.path.join(rel, "libdmm_evolved.so")]
    if dmmfile:
        cmd.append("EVOLVED_DMM=" + dmmfile)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=benchlib.own_make_env())
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), r.stdout[-2000:]))


def evolve(build, name, trace, outdir, seconds):
    """Evolves a DMM for trace into outdir; returns (best.dmm, libdmm_evolved.so, secs)."""
    dmm = os.path.join(build, "dmm")
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    t0 = time.monotonic()
    r = subprocess.run([dmm, "evolve", "-q", "--time", str(seconds), "--out", outdir, trace],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    secs = time.monotonic() - t0
    best = os.path.join(outdir, "best.dmm")
    if r.returncode != 0 or not os.path.exists(best):
        raise RuntimeError("dmm evolve on %s failed (%d): %s" % (name, r.returncode,
                                                                 r.stderr.strip()[-500:]))
    make_evolved(build, best)
    lib = os.path.join(outdir, "libdmm_evolved.so")
    shutil.copyfile(os.path.join(build, "libdmm_evolved.so"), lib)
    return best, lib, secs


# --------------------------------------------------------------------------
# one replay

def replay(build, trace, lib, extra_env, stats, csv=None):
    env = benchlib.clean_env()
    if lib:
        env["LD_PRELOAD"] = lib
    env.update(extra_env)
    if stats:
        env["DMM_STATS"] = "1"
    cmd = [os.path.join(build, "dmm"), "replay", "--json"] + (["--csv", csv] if csv else []) + [trace]
    res = dict(ok=False, error=None)
    hugewarm.before_run()   # a design in huge pages: not slow or fast by what ran before
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        res["error"] = "timed out after %d s" % RUN_TIMEOUT_S
        return res
    if r.returncode != 0:
        res["error"] = "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
        return res
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        res["error"] = "output is not JSON (%s): %s" % (e, r.stdout[:200])
        return res
    res["json"] = j
    check = str(j.get("check", "off"))
    if check not in ("ok", "off"):
        res["error"] = "check: %s" % check
        return res
    if stats:
        m = FOOTPRINT_RE.findall(r.stderr)
        if not m:
            res["error"] = "DMM_STATS printed no footprint line: %s" % r.stderr.strip()[-300:]
            return res
        res["footprint_peak"] = int(m[-1][1])
    res["ok"] = True
    return res


def summarise(runs):
    """Medians (and min-max of the time) over a list of successful replays."""
    js = [r["json"] for r in runs]

    def med(f):
        v = [f(j) for j in js]
        v = [x for x in v if x is not None]
        return statistics.median(v) if v else None

    def lat(kind, key):
        def f(j):
            l = (j.get("latency") or {}).get(kind) or {}
            return l.get(key) if l.get("count") else None
        return f

    walls = [j["wall_s"] for j in js]
    s = dict(n=len(js), wall_med=statistics.median(walls), wall_min=min(walls),
             wall_max=max(walls), walls=walls,
             op_med=med(lambda j: j.get("op_s")),
             op_min=min([j["op_s"] for j in js if j.get("op_s") is not None], default=None),
             # the calls' time less the timer's own overhead (lfence; rdtsc on both sides)
             op_net_med=med(lambda j: None if j.get("op_s") is None else max(0.0, j["op_s"] - (
                 (j.get("ops") or 0) * (j.get("timer_overhead_cycles") or 0) /
                 ((j.get("tsc_ghz") or 1.0) * 1e9)))),
             rss_peak=med(lambda j: j.get("peak_rss_bytes")),
             rss_base=med(lambda j: j.get("baseline_rss_bytes")),
             held=med(lambda j: j.get("peak_held_bytes")),
             wastage=med(lambda j: j.get("wastage_bytes")),
             ns_per_op=med(lambda j: j.get("ns_per_op")),
             failed=max(int(j.get("failed", 0) or 0) for j in js),
             ops=js[0].get("ops"),
             p99=med(lat("all", "p99_ns")),
             max_ns=med(lambda j: max([((j.get("latency") or {}).get(k) or {}).get("max_ns") or 0
                                       for k in ("all", "alloc", "realloc", "free")])))
    s["rss"] = s["rss_peak"]
    fps = [r["footprint_peak"] for r in runs if "footprint_peak" in r]
    s["footprint_peak"] = statistics.median(fps) if fps else None
    s["footprint_min"] = min(fps) if fps else None
    s["footprint_max"] = max(fps) if fps else None
    return s


# --------------------------------------------------------------------------
# statistics

def ranks(v):
    """Ranks 1..n, ties given the average of the ranks they span."""
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1
        i = j + 1
    return r


def spearman(x, y):
    """Spearman's rho with ties (Pearson's r of the average ranks); None when
    fewer than 3 points or one side is constant."""
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def lstsq(rows, ys):
    """Least squares by the normal equations (Gauss-Jordan, partial pivoting),
    columns scaled to unit norm first; None if singular."""
    n = len(rows[0])
    scale = [math.sqrt(sum(r[k] ** 2 for r in rows)) or 1.0 for k in range(n)]
    xs = [[r[k] / scale[k] for k in range(n)] for r in rows]
    a = [[sum(x[i] * x[j] for x in xs) for j in range(n)] +
         [sum(x[i] * y for x, y in zip(xs, ys))] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(a[i][c]))
        if abs(a[p][c]) < 1e-12:
            return None
        a[c], a[p] = a[p], a[c]
        for i in range(n):
            if i != c:
                f = a[i][c] / a[c][c]
                a[i] = [u - f * w for u, w in zip(a[i], a[c])]
    return [a[i][n] / a[i][i] / scale[i] for i in range(n)]


# --------------------------------------------------------------------------
# report

def trace_table(name, allocs, summ):
    g = summ.get("glibc")
    lines = ["| allocator | median replay s | min–max s | time / glibc | in calls s | peak RSS MiB | "
             "RSS / glibc | F_real | p99 ns | max ns | held MiB | wastage MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    f_real = {}
    for a in allocs:
        s = summ.get(a)
        if not s:
            lines.append("| %s | failed | | | | | | | | | | |" % a)
            continue
        tr = s["wall_med"] / g["wall_med"] if g and g["wall_med"] else None
        rr = s["rss"] / g["rss"] if g and g["rss"] and s["rss"] else None
        f = 0.5 * tr + 0.5 * rr if tr is not None and rr is not None else None
        f_real[a] = dict(time_ratio=tr, rss_ratio=rr, f_real=f)
        lines.append("| %s | %s | %s–%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            a, fmt(s["wall_med"], "%.4f"), fmt(s["wall_min"], "%.4f"), fmt(s["wall_max"], "%.4f"),
            fmt(tr, "%.2f×"), fmt(s["op_med"], "%.4f"), fmt(mib(s["rss"]), "%.1f"),
            fmt(rr, "%.2f×"), fmt(f, "%.3f"), fmt(s["p99"], "%.0f"), fmt(s["max_ns"], "%.0f"),
            fmt(mib(s["held"]), "%.2f"), fmt(mib(s["wastage"]), "%.2f")))
    return lines, f_real


def fidelity(name, dmms, sims, summ):
    """Lines of the fidelity table for one trace, and its numbers: Spearman's
    rho of T against the replay time (wall_s) and against the time in the
    allocator's calls alone (op_s: no payload writes, no RSS sampling), each
    the fastest of the repetitions: the machine's noise only ever adds time,
    so the minimum is the steadiest estimate of what the allocator costs."""
    lines = ["| DMM | sim T | sim M bytes | replay s (fastest) | in calls s (fastest) | "
             "ns per T unit | footprint peak bytes | M error % |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    xs, ys, zs, out = [], [], [], {}
    for d in dmms:
        sim, s = sims.get(d), summ.get(d)
        if not sim or not s:
            lines.append("| %s | %s | %s | failed | | | | |" % (
                d, fmt(sim and sim["t"], "%d"), fmt(sim and sim["m"], "%d")))
            continue
        fp = s["footprint_peak"]
        err = 100.0 * (fp - sim["m"]) / sim["m"] if fp is not None and sim["m"] else None
        wall, op = s["wall_min"], s["op_min"]
        per = wall * 1e9 / sim["t"] if sim["t"] else None
        out[d] = dict(t=sim["t"], m=sim["m"], wall=wall, op_s=op, op_net=s["op_net_med"],
                      footprint=fp, m_error_pct=err, ns_per_unit=per)
        xs.append(sim["t"])
        ys.append(wall)
        zs.append(op if op is not None else 0.0)
        fpr = fmt(fp, "%d")
        if s["footprint_min"] != s["footprint_max"]:
            fpr += " (%d–%d)" % (s["footprint_min"], s["footprint_max"])
        lines.append("| %s | %d | %d | %.4f | %s | %s | %s | %s |" % (
            d, sim["t"], sim["m"], wall, fmt(op, "%.4f"), fmt(per, "%.2f"), fpr,
            fmt(err, "%+.2f")))
    return lines, out, spearman(xs, ys), spearman(xs, zs)


def fit_groups(cost_model):
    """The counters fitted, as groups of indexes into cost_model: FIT_GROUPS,
    and every other counter but calls alone, in the model's order."""
    keys = [c["counter"] for c in cost_model]
    groups = []
    for k in keys:
        if k == "calls" or any(k in g for g in groups):
            continue
        groups.append([x for x in next((g for g in FIT_GROUPS if k in g), [k]) if x in keys])
    return [[keys.index(k) for k in g] for g in groups]


def weight_fit(points, cost_model):
    """The measured replay time against the cost counters over every (trace,
    DMM), by least squares with one intercept per trace (the replay's own work
    and the calls themselves, the same for every DMM of a trace): what one
    unit of each counter costs in ns, next to the model's weight (a unit of T
    is meant to be about 1 ns).  Counters that move together are fitted as
    groups; a group fitted negative is dropped and the fit redone.
    points: [(trace, seconds, sim dict)]; cost_model: dmm sim's."""
    weight = [float(c["weight"]) for c in cost_model]
    step = [c["step"] for c in cost_model]
    groups = fit_groups(cost_model)
    traces = sorted({p[0] for p in points})
    ys = [secs * 1e9 for _, secs, _ in points]
    raw = [[float(sim.get(c["counter"], 0) or 0) for c in cost_model] for _, _, sim in points]
    live = [g for g in groups if any(sum(r[k] * weight[k] for k in g) for r in raw)]
    if len(points) < len(live) + len(traces) + 2:
        return None
    dropped = []
    while live:
        rows = [[1.0 if tr == t else 0.0 for t in traces] +
                [sum(r[k] * weight[k] for k in g) for g in live]
                for (tr, _, _), r in zip(points, raw)]
        w = lstsq(rows, ys)
        if w is None:
            return None
        coef = w[len(traces):]
        neg = min(range(len(live)), key=lambda i: coef[i])
        if coef[neg] >= 0:
            break
        dropped.append(live.pop(neg))
    if not live:
        return None
    res = [dict(counters=[cost_model[k]["counter"] for k in g],
                label=" + ".join(step[k] for k in g),
                model_weight=weight[g[0]], ns_per_model_unit=c,
                ns_per_count=c * weight[g[0]]) for g, c in zip(live, coef)]
    pred = [sum(a * b for a, b in zip(r, w)) for r in rows]
    mean = {t: statistics.fmean([y for (tr, _, _), y in zip(points, ys) if tr == t]) for t in traces}
    ss_res = sum((y - q) ** 2 for y, q in zip(ys, pred))
    ss_tot = sum((y - mean[tr]) ** 2 for (tr, _, _), y in zip(points, ys))
    per_trace = {}
    for (tr, _, sim), y, q in zip(points, ys, pred):
        per_trace.setdefault(tr, ([], [], []))
        for lst, v in zip(per_trace[tr], (y, sim["t"], q)):
            lst.append(v)
    per_trace = {tr: dict(model=spearman(v[1], v[0]), fitted=spearman(v[2], v[0]))
                 for tr, v in per_trace.items()}
    return dict(groups=res, dropped=[" + ".join(step[k] for k in g) for g in dropped],
                r2_within=1 - ss_res / ss_tot if ss_tot else None, points=len(ys), traces=traces,
                per_trace=per_trace)


def repeatability(runs, dmms, key="wall_s"):
    """The measurement's own rank stability: the mean Spearman rho between
    the DMMs' times of every two repetitions.  T cannot rank the DMMs more
    reliably than the measurement ranks them against itself."""
    reps = min((len(runs.get(d) or []) for d in dmms), default=0)
    if reps < 2 or len(dmms) < 3:
        return None
    v = [[runs[d][r]["json"][key] for d in dmms] for r in range(reps)]
    rs = [spearman(v[i], v[j]) for i in range(reps) for j in range(i + 1, reps)]
    rs = [r for r in rs if r is not None]
    return statistics.fmean(rs) if rs else None


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="the bundled workload only, 1 rep")
    ap.add_argument("--only", default="", help="comma-separated trace names")
    ap.add_argument("--evolve-time", type=int, default=None,
                    help="dmm evolve --time per trace (default 20 s, 10 with --quick)")
    a = ap.parse_args()
    reps = a.reps if a.reps else (1 if a.quick else benchlib.reps_default(5))
    etime = a.evolve_time if a.evolve_time else (10 if a.quick else 20)
    build = os.path.abspath(a.build)
    dmm = os.path.join(build, "dmm")
    work = os.path.join(build, "bench", "peers")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()

    r = subprocess.run([dmm, "replay", "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode not in (0, 1) or "unknown command" in r.stdout:
        raise SystemExit("peers: %s has no replay command (not built yet?)" % dmm)

    srcpath = os.path.join(build, "evolved", "source.path")
    before = None
    if os.path.exists(srcpath):
        before = open(srcpath).read().strip() or None
        if before and not os.path.exists(os.path.join(ROOT, before)):
            before = None
    if before == "codegen/default.dmm":
        before = None

    tmp = tempfile.mkdtemp(prefix="dmm-peers.")
    failures = []
    try:
        wanted = [n for n in a.only.split(",") if n]
        traces, tskipped = prepare_traces(build, work, tmp, wanted, a.quick)
        for n, why in tskipped:
            log("trace %s skipped: %s" % (n, why))
        peers, askipped = peer_allocators()
        for n, why in askipped:
            log("allocator %s skipped: %s" % (n, why))
        if not traces:
            raise SystemExit("peers: no trace to run")

        # 1. evolve a DMM per trace (build/libdmm_evolved.so is rebuilt each time)
        evolved = {}
        try:
            for name, path, _ in traces:
                log("evolving for %s (%d s)" % (name, etime))
                try:
                    evolved[name] = evolve(build, name, path, os.path.join(work, name), etime)
                except RuntimeError as e:
                    log(str(e))
                    failures.append("%s: evolve: %s" % (name, str(e).splitlines()[0]))
        finally:
            log("rebuilding build/libdmm_evolved.so from %s" % (before or "the default chain"))
            make_evolved(build, before)

        results = dict(started=datetime.datetime.now().isoformat(timespec="seconds"),
                       machine=benchlib.machine_line(), reps=reps, evolve_time_s=etime, traces={},
                       skipped_traces=tskipped, skipped_allocators=askipped)
        md_traces, md_fid, f_all, fid_points = [], [], {}, []
        rho_all, rho_op_all, rep_all, merr_all = {}, {}, {}, []
        presets, cost_model = [], None
        for name, path, desc in traces:
            # 2. simulate: dmm's presets (--all), then the evolved DMM; the
            # presets replayed are those simulated
            sims = {}
            best = ["--dmm", evolved[name][0]] if name in evolved else []
            rs = subprocess.run([dmm, "sim", "--all", "--json"] + best + [path],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if rs.returncode == 0:
                sj = json.loads(rs.stdout)
                cost_model, ds = sj["cost_model"], sj["dmms"]
                presets = [d["name"] for d in (ds[:-1] if best else ds)]
                sims = dict(zip(["dmm-" + p for p in presets] + ["evolved"], ds))
            else:
                failures.append("%s: dmm sim failed: %s" % (name, rs.stderr.strip()[-200:]))
            allocs = [(n, lib, {}, False) for n, lib in peers]
            allocs += [("dmm-" + p, os.path.join(build, "libdmm.so"), {"DMM_CONFIG": p}, True)
                       for p in presets]
            dmms = ["dmm-" + p for p in presets]
            if name in evolved:
                allocs.append(("evolved", evolved[name][1], {}, True))
                dmms.append("evolved")

            # what the program asks for, for the report's size distribution
            tdir = os.path.join(work, name)
            series = os.path.join(tdir, "series")
            os.makedirs(series, exist_ok=True)
            stats_json = os.path.join(tdir, "stats.json")
            with open(stats_json, "w") as f:
                if subprocess.run([dmm, "stats", "--json", path], stdout=f,
                                  stderr=subprocess.DEVNULL).returncode != 0:
                    stats_json = None

            # 3. replay, interleaved; the first rep also writes each
            # allocator's memory over the run (the samples every replay takes)
            log("replaying %s: %d allocators x %d reps" % (name, len(allocs), reps))
            runs = {n: [] for n, _, _, _ in allocs}
            errors = {}
            for rep in range(reps):
                k = rep % len(allocs)
                for n, lib, env, stats in allocs[k:] + allocs[:k]:
                    res = replay(build, path, lib, env, stats,
                                 os.path.join(series, n + ".csv") if rep == 0 else None)
                    if res["ok"]:
                        runs[n].append(res)
                    else:
                        errors.setdefault(n, res["error"])
                        failures.append("%s on %s: %s" % (n, name, res["error"]))
                        log("FAILED %s on %s: %s" % (n, name, res["error"]))
            summ = {n: summarise(v) for n, v in runs.items() if v}
            names = [n for n, _, _, _ in allocs]
            tl, fr = trace_table(name, names, summ)
            for n, v in fr.items():
                f_all.setdefault(n, {})[name] = v
            g = summ.get("glibc")
            head = ["### %s" % name, "", "%s; %s operations%s." % (
                desc, fmt(g and g["ops"], "%d"),
                "" if name not in evolved else "; evolved: `%s`" % (
                    sims.get("evolved") or {}).get("title", "?"))]
            fails = sorted({n: s["failed"] for n, s in summ.items() if s["failed"]}.items())
            if fails:
                head.append("Failed allocations reported by the replay: " +
                            ", ".join("%s %d" % x for x in fails) + ".")
            md_traces += head + [""] + tl + [""]

            fl, fo, rho, rho_op = fidelity(name, dmms, sims, summ)
            rho_all[name] = rho
            rho_op_all[name] = rho_op
            for d, v in fo.items():
                if v["m_error_pct"] is not None:
                    merr_all.append((name, d, v["m_error_pct"]))
                # the same code as the simulator's only; traces of a few calls on huge
                # blocks (sort) measure the kernel, not the allocator
                if d != "evolved" and sims[d]["operations"] >= 1000:
                    fid_points.append((name, v["wall"], sims[d]))
            rep_rho = repeatability(runs, list(fo))
            rep_all[name] = rep_rho
            md_fid += ["### %s" % name, ""] + fl + ["", "Spearman ρ(T, replay time) over %d DMMs: %s%s; "
                       "ρ(T, time in calls): %s; the measurement against itself (rep vs rep): %s." % (
                len(fo), fmt(rho, "%.3f"), "" if rho is None else (" (goal ≥ 0.9: %s)" % (
                    "met" if rho >= 0.9 else "NOT met")), fmt(rho_op, "%.3f"), fmt(rep_rho, "%.3f"))]
            if rho is not None and (rho < 0.9 or (rho_op is not None and rho_op < 0.9)) and len(fo) >= 3:
                per = {d: v["ns_per_unit"] for d, v in fo.items() if v["ns_per_unit"]}
                medp = statistics.median(per.values())
                far = ["%s %.2f× the median" % (d, p / medp) for d, p in sorted(per.items())
                       if p > 1.5 * medp or p < medp / 1.5]
                md_fid.append("Replay time per cost unit, median %.2f ns: %s." % (
                    medp, ", ".join(far) if far else "no DMM beyond 1.5× of the median"))
            md_fid.append("")
            results["traces"][name] = dict(
                path=path, description=desc, allocators=names,
                runs={n: [r["json"] | ({"footprint_peak": r["footprint_peak"]} if "footprint_peak" in r else {})
                          for r in v] for n, v in runs.items()},
                errors=errors, summary=summ, f_real=fr,
                sim={d: {k: v for k, v in s.items() if k != "cost_histogram"} for d, s in sims.items()},
                fidelity=fo, spearman=rho, spearman_calls=rho_op, repeatability=rep_rho,
                series_dir=series, stats_json=stats_json,
                evolve=None if name not in evolved else dict(
                    best=evolved[name][0], lib=evolved[name][1], seconds=evolved[name][2],
                    log=os.path.join(os.path.dirname(evolved[name][0]), "log.csv")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # summary across traces
    order = [n for n, _ in peers] + ["dmm-" + p for p in presets] + ["evolved"]
    tnames = [t[0] for t in traces]
    summ_lines = ["| allocator | geomean F_real | geomean time / glibc | geomean RSS / glibc | traces |"
                  + "".join(" %s |" % t for t in tnames),
                  "|---|---:|---:|---:|---:|" + "---:|" * len(tnames)]
    summary = {}
    for n in order:
        v = f_all.get(n, {})
        if not v:
            continue
        gf = geomean([x["f_real"] for x in v.values()])
        gt = geomean([x["time_ratio"] for x in v.values()])
        gr = geomean([x["rss_ratio"] for x in v.values()])
        summary[n] = dict(f_real=gf, time_ratio=gt, rss_ratio=gr, traces=len(v))
        summ_lines.append("| %s | %s | %s | %s | %d |" % (n, fmt(gf), fmt(gt, "%.2f×"), fmt(gr, "%.2f×"), len(v))
                          + "".join(" %s |" % fmt((v.get(t) or {}).get("f_real"), "%.2f") for t in tnames))
    results["summary"] = summary

    fit = weight_fit(fid_points, cost_model) if cost_model else None
    results["weight_fit"] = fit
    results["spearman"] = rho_all
    results["spearman_calls"] = rho_op_all
    results["repeatability"] = rep_all
    elapsed = time.monotonic() - t_start
    results["elapsed_s"] = elapsed
    results["failures"] = failures

    rhos = [r for r in rho_all.values() if r is not None]
    rhos_op = [r for r in rho_op_all.values() if r is not None]
    merr_ok = [e for _, _, e in merr_all if abs(e) <= 1.0]
    worst = sorted(merr_all, key=lambda x: -abs(x[2]))[:3]
    lines = ["# dmm against its peers: replayed traces", "",
             "%s; %s; %d interleaved reps per allocator and trace; `dmm replay --json` under "
             "`LD_PRELOAD` (glibc: none); times are the replay's own wall time (no process start-up); "
             "peak RSS is the replay process's peak resident set (`peak_rss_bytes`, the trace's "
             "operation stream and the driver's tables included); 'in calls s': the time inside the allocator's "
             "calls alone (`op_s`); held: anonymous RSS over its level before the replay; wastage: peak held − "
             "peak requested. libdmm_evolved.so: `dmm evolve --time %d` per trace "
             "(seed 1), then `make EVOLVED_DMM=best.dmm`. F_real = ½·t/t_glibc + ½·rss/rss_glibc. "
             "Run took %.0f s." % (results["started"], results["machine"], reps, etime, elapsed), ""]
    if tskipped or askipped:
        lines += ["Skipped: " + "; ".join("%s (%s)" % x for x in tskipped + askipped) + ".", ""]
    lines += ["## Summary across traces (geometric means)", ""] + summ_lines + [""]
    lines += ["## Per trace", ""] + md_traces
    lines += ["## Simulator fidelity", "",
              "Simulated T and M (`dmm sim --json`) against the fastest measured replay time of the repetitions and the "
              "footprint peak that `DMM_STATS=1` prints (libdmm.so for the presets; the evolved row "
              "simulates best.dmm with counters and measures libdmm_evolved.so, which has none). "
              "M error = (footprint − M) / M.", "",
              "M error within 1 %%: %d of %d DMM×trace pairs%s. Spearman ρ ≥ 0.9: %d of %d traces "
              "(median ρ %s); against the time in calls: %d of %d (median %s)." % (
                  len(merr_ok), len(merr_all),
                  "" if not worst else " (largest: %s)" % ", ".join("%s on %s %+.2f %%" % (d, t, e) for t, d, e in worst),
                  sum(1 for r in rhos if r >= 0.9), len(rhos),
                  fmt(statistics.median(rhos) if rhos else None, "%.3f"),
                  sum(1 for r in rhos_op if r >= 0.9), len(rhos_op),
                  fmt(statistics.median(rhos_op) if rhos_op else None, "%.3f")), ""] + md_fid
    reliable = [t for t, r in rep_all.items() if r is not None and r >= 0.9 and rho_all.get(t) is not None]
    if rep_all:
        lines += ["Where the measurement ranks the DMMs the same way in every repetition (rep vs rep "
                  "ρ ≥ 0.9: %s), ρ(T, replay time) ≥ 0.9 on %d of %d traces%s. On the others the "
                  "DMMs' times differ by less than the machine's noise: there no model can be held "
                  "to ρ ≥ 0.9." % (", ".join(reliable) or "none",
                                    sum(1 for t in reliable if rho_all[t] >= 0.9), len(reliable),
                                    "" if not reliable else " (median %.3f)" % statistics.median(
                                        [rho_all[t] for t in reliable])), ""]
    if fit:
        lines += ["### Which cost weights look off", "",
                  "Least squares of the replay time (ns) on the counters of `dmm sim`, one intercept per "
                  "trace (the replay's own work and the per-call cost, equal for every DMM of a trace), "
                  "over %d (trace, preset) points from %d traces (traces under 1000 operations and "
                  "libdmm_evolved.so, which runs without counters, left out); within-trace R² %s. A unit "
                  "of T is meant to be about 1 ns, so 'ns per model unit' should be near 1; groups fitted "
                  "negative were dropped: %s. Collinear counters make single estimates unstable: read "
                  "large gaps, not decimals." % (
                      fit["points"], len(fit["traces"]), fmt(fit["r2_within"], "%.3f"),
                      ", ".join(fit["dropped"]) or "none"), "",
                  "| counter | model weight | fitted ns per count | ns per model unit |",
                  "|---|---:|---:|---:|"]
        for g in fit["groups"]:
            lines.append("| %s | %g | %.2f | %.2f |" % (
                g["label"], g["model_weight"], g["ns_per_count"], g["ns_per_model_unit"]))
        off = [g for g in fit["groups"] if g["ns_per_model_unit"] > 3 or g["ns_per_model_unit"] < 1 / 3.0]
        lines += ["", "Off by more than 3×: %s." % (
            ", ".join("%s (%.2f ns per unit)" % (g["label"], g["ns_per_model_unit"]) for g in off)
            if off else "none"), "",
                  "Per trace, Spearman ρ of the presets' T against their replay time, with the model's "
                  "weights and with the fitted ones (in-sample: an upper bound on what reweighting alone "
                  "can give):", "", "| trace | ρ model | ρ fitted |", "|---|---:|---:|"]
        for tr in fit["traces"]:
            v = fit["per_trace"][tr]
            lines.append("| %s | %s | %s |" % (tr, fmt(v["model"], "%.3f"), fmt(v["fitted"], "%.3f")))
        lines.append("")
    if failures:
        lines += ["## Failures", ""] + ["- " + f for f in failures] + [""]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(build, "bench", "peers.md"), "w") as f:
        f.write(text)
    with open(os.path.join(build, "bench", "peers.json"), "w") as f:
        json.dump(results, f, indent=1)
    log("%.0f s; wrote %s and .json" % (elapsed, os.path.join(build, "bench", "peers.md")))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
