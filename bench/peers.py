#!/usr/bin/env python3
"""peers.py - the allocators side by side on real traces, and the simulator's fidelity.

For each trace (the bundled workload recorded by libdmmtrace.so, the traces
of real programs that scripts/record_traces.sh records, and ../shared/traces
when present) this replays the trace with `dmm replay --json` under every
allocator: glibc, jemalloc (the baseline), mimalloc and tcmalloc when
installed, libdmm.so with each preset (kng lea fib s10 exa), and
libdmm_evolved.so evolved for that trace (`dmm evolve --time S`, then built
with `make EVOLVED_DMM=...`).  Repetitions are interleaved (rep 1: every
allocator, in an order rotated per rep; rep 2: ...) so that a slow spell of
the machine hits all alike.  Per run: the replay's own wall time (not the
process start-up), peak RSS, wastage, latency percentiles, and for the dmm
libraries the footprint peak that DMM_STATS=1 prints at exit.

Simulator fidelity: every DMM is also simulated (`dmm sim --json`); its T and
M stand next to the measured time and footprint, with M's error (goal <= 1 %)
and per trace the Spearman rank correlation of T against measured time across
the DMMs (goal >= 0.9).  A least-squares fit of the measured times on the cost
counters (one intercept per trace) says which cost weights look off.

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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_TRACES = os.path.join(os.path.dirname(ROOT), "shared", "traces")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
PRESETS = ["kng", "lea", "fib", "s10", "exa"]
RUN_TIMEOUT_S = 120
WM_FRAMES = 300
WEE = ["dogfood", "gcc-hello", "ffmpeg", "source-map"]
ANDROID = ["systemui"]
REAL = ["sqlite3", "python3", "perl", "sort"]
FOOTPRINT_RE = re.compile(r"footprint (\d+) bytes now, (\d+) at peak")
# The cost model's weights (allocators/cost.c, README "Cost model"), per counter
# of dmm sim --json; bytes copied by realloc count one per 64 bytes.
COST_WEIGHTS = [("operations", "call", 1.0), ("free_list_nodes_visited", "node visited", 1.0),
                ("header_reads", "header read", 1.0), ("header_writes", "header write", 1.0),
                ("splits", "split", 4.0), ("coalesces", "coalesce", 4.0),
                ("page_source_calls", "page-source call", 50.0),
                ("bytes_copied_by_realloc", "64 bytes copied", 1.0 / 64)]


def log(msg):
    print("peers: " + msg, file=sys.stderr, flush=True)


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("DMM_") and k not in ("LD_PRELOAD", "MALLOC_CONF")}


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
        if os.path.exists(path):
            os.unlink(path)
        r = subprocess.run([wm] + args, env=dict(clean_env(), LD_PRELOAD=tracer,
                                                 DMM_TRACE_FILE=path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            skipped.append((name, "recording failed: " + r.stderr.strip()[-200:]))
            continue
        traces.append((name, path, "build/bench/work_media %s under libdmmtrace.so" % " ".join(args)))

    real = [n for n in REAL if want(n)]
    if real:
        tdir = os.path.join(build, "bench", "traces")
        for n in real:
            p = os.path.join(tdir, n + ".trc")
            if os.path.exists(p):
                os.unlink(p)
        r = subprocess.run([os.path.join(ROOT, "scripts", "record_traces.sh"), build, tdir],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        msgs = r.stderr.strip()
        for n in real:
            p = os.path.join(tdir, n + ".trc")
            if os.path.exists(p):
                traces.append((n, p, "%s, recorded by scripts/record_traces.sh" % n))
            else:
                why = [l for l in msgs.splitlines() if (" %s " % n) in l or l.endswith(" " + n)]
                skipped.append((n, (why[0] if why else "scripts/record_traces.sh left no trace")
                                .replace("record_traces: ", "")))

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


def make_evolved(build, dmmfile, quiet=True):
    """build/libdmm_evolved.so from dmmfile (None: the Makefile's default)."""
    rel = os.path.relpath(build, ROOT)
    cmd = ["make", "-s", "-C", ROOT, "BUILD=" + rel, os.path.join(rel, "libdmm_evolved.so")]
    if dmmfile:
        cmd.append("EVOLVED_DMM=" + dmmfile)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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

def replay(build, trace, lib, extra_env, stats):
    env = clean_env()
    if lib:
        env["LD_PRELOAD"] = lib
    env.update(extra_env)
    if stats:
        env["DMM_STATS"] = "1"
    cmd = [os.path.join(build, "dmm"), "replay", "--json", trace]
    res = dict(ok=False, error=None)
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


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


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

def fmt(x, f="%.3f"):
    return "–" if x is None else f % x


def mib(b):
    return None if b is None else b / 1048576.0


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
    allocator's calls alone (op_s: no payload writes, no RSS sampling)."""
    lines = ["| DMM | sim T | sim M bytes | replay s | in calls s | ns per T unit (calls) | "
             "footprint peak bytes | M error % |",
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
        op = s["op_med"]
        per = op * 1e9 / sim["t"] if sim["t"] and op is not None else None
        out[d] = dict(t=sim["t"], m=sim["m"], wall=s["wall_med"], op_s=op, op_net=s["op_net_med"],
                      footprint=fp,
                      m_error_pct=err, ns_per_unit=per)
        xs.append(sim["t"])
        ys.append(s["wall_med"])
        zs.append(op if op is not None else 0.0)
        fpr = fmt(fp, "%d")
        if s["footprint_min"] != s["footprint_max"]:
            fpr += " (%d–%d)" % (s["footprint_min"], s["footprint_max"])
        lines.append("| %s | %d | %d | %.4f | %s | %s | %s | %s |" % (
            d, sim["t"], sim["m"], s["wall_med"], fmt(op, "%.4f"), fmt(per, "%.2f"), fpr,
            fmt(err, "%+.2f")))
    return lines, out, spearman(xs, ys), spearman(xs, zs)


def weight_fit(points):
    """The time in the allocator's calls (less the timer's overhead) against
    the cost counters over every (trace, preset), by least squares without
    intercept: what one unit of each counter costs in ns, and the weights that
    would make T proportional to time, with the per-call weight kept at 1.
    points: [(trace, seconds in calls, sim dict)]"""
    rows, ys = [], []
    for tr, secs, sim in points:
        ys.append(secs * 1e9)
        rows.append([float(sim.get(k, 0) or 0) for k, _, _ in COST_WEIGHTS])
    if len(rows) < len(COST_WEIGHTS) + 2:
        return None
    # splits and coalesces, header reads and writes, move together: fit them as pairs.
    groups = [[0], [1], [2, 3], [4, 5], [6], [7]]
    grows = [[sum(r[k] * COST_WEIGHTS[k][2] for k in ks) for ks in groups] for r in rows]
    keep = [i for i in range(len(groups)) if any(r[i] for r in grows)]
    groups = [groups[i] for i in keep]
    grows = [[r[i] for i in keep] for r in grows]
    w = lstsq(grows, ys)
    if w is None:
        return None
    res = []
    for ks, ns in zip(groups, w):
        label = " + ".join(COST_WEIGHTS[k][1] for k in ks)
        res.append(dict(counters=[COST_WEIGHTS[k][0] for k in ks], label=label,
                        model_weight=COST_WEIGHTS[ks[0]][2], ns_per_model_unit=ns))
    ref = res[0]["ns_per_model_unit"] if res and res[0]["counters"] == ["operations"] else None
    if not ref or ref <= 0:
        ref = statistics.median([r["ns_per_model_unit"] for r in res if r["ns_per_model_unit"] > 0] or [1.0])
    for r in res:
        r["implied_weight"] = r["model_weight"] * r["ns_per_model_unit"] / ref
        r["ratio_to_model"] = r["ns_per_model_unit"] / ref
    pred = [sum(g * x for g, x in zip(w, r)) for r in grows]
    my = statistics.fmean(ys)
    ss_res = sum((y - p) ** 2 for y, p in zip(ys, pred))
    ss_tot = sum((y - my) ** 2 for y in ys)
    # how well T itself (the model's weights) ranks and fits the same points
    tm = [sum(r[k] * COST_WEIGHTS[k][2] for k in range(len(COST_WEIGHTS))) for r in rows]
    per_trace = {}
    for (tr, _, _), y, t, p in zip(points, ys, tm, pred):
        per_trace.setdefault(tr, ([], [], []))
        for lst, v in zip(per_trace[tr], (y, t, p)):
            lst.append(v)
    per_trace = {tr: dict(model=spearman(v[1], v[0]), fitted=spearman(v[2], v[0]))
                 for tr, v in per_trace.items()}
    return dict(groups=res, r2=1 - ss_res / ss_tot if ss_tot else None, points=len(ys),
                traces=sorted({p[0] for p in points}), ns_reference=ref, per_trace=per_trace,
                spearman_model=spearman(tm, ys), spearman_fit=spearman(pred, ys))


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    cpu = l.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d CPUs, %s %s" % (cpu, os.cpu_count() or 0, platform.system(), platform.release())


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
    reps = a.reps if a.reps else (1 if a.quick else int(os.environ.get("BENCH_REPS", "3")))
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
                       machine=machine(), reps=reps, evolve_time_s=etime, traces={},
                       skipped_traces=tskipped, skipped_allocators=askipped)
        md_traces, md_fid, f_all, fid_points = [], [], {}, []
        rho_all, rho_op_all, merr_all = {}, {}, []
        for name, path, desc in traces:
            allocs = [(n, lib, {}, False) for n, lib in peers]
            allocs += [("dmm-" + p, os.path.join(build, "libdmm.so"), {"DMM_CONFIG": p}, True)
                       for p in PRESETS]
            dmms = ["dmm-" + p for p in PRESETS]
            simspecs = list(PRESETS)
            if name in evolved:
                best, lib, _ = evolved[name]
                allocs.append(("evolved", lib, {}, True))
                dmms.append("evolved")
                simspecs.append(best)

            # 2. simulate
            sims = {}
            rs = subprocess.run([dmm, "sim", "--json"] + sum([["--dmm", s] for s in simspecs], [])
                                + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if rs.returncode == 0:
                for d, sj in zip(dmms, json.loads(rs.stdout)["dmms"]):
                    sims[d] = sj
            else:
                failures.append("%s: dmm sim failed: %s" % (name, rs.stderr.strip()[-200:]))

            # 3. replay, interleaved
            log("replaying %s: %d allocators x %d reps" % (name, len(allocs), reps))
            runs = {n: [] for n, _, _, _ in allocs}
            errors = {}
            for rep in range(reps):
                k = rep % len(allocs)
                for n, lib, env, stats in allocs[k:] + allocs[:k]:
                    res = replay(build, path, lib, env, stats)
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
                "" if name not in evolved else "; evolved: `%s`" % open(evolved[name][0])
                .readline().lstrip("# ").strip())]
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
                if v["op_net"] is not None and d != "evolved" and sims[d]["operations"] >= 1000:
                    fid_points.append((name, v["op_net"], sims[d]))
            md_fid += ["### %s" % name, ""] + fl + ["", "Spearman ρ(T, replay time) over %d DMMs: %s%s; "
                       "ρ(T, time in calls): %s." % (
                len(fo), fmt(rho, "%.3f"), "" if rho is None else (" (goal ≥ 0.9: %s)" % (
                    "met" if rho >= 0.9 else "NOT met")), fmt(rho_op, "%.3f"))]
            if rho is not None and (rho < 0.9 or (rho_op is not None and rho_op < 0.9)) and len(fo) >= 3:
                per = {d: v["ns_per_unit"] for d, v in fo.items() if v["ns_per_unit"]}
                medp = statistics.median(per.values())
                far = ["%s %.2f× the median" % (d, p / medp) for d, p in sorted(per.items())
                       if p > 1.5 * medp or p < medp / 1.5]
                md_fid.append("Time in calls per cost unit, median %.2f ns: %s." % (
                    medp, ", ".join(far) if far else "no DMM beyond 1.5× of the median"))
            md_fid.append("")
            results["traces"][name] = dict(
                path=path, description=desc, allocators=names,
                runs={n: [r["json"] | ({"footprint_peak": r["footprint_peak"]} if "footprint_peak" in r else {})
                          for r in v] for n, v in runs.items()},
                errors=errors, summary=summ, f_real=fr,
                sim={d: {k: v for k, v in s.items() if k != "cost_histogram"} for d, s in sims.items()},
                fidelity=fo, spearman=rho, spearman_calls=rho_op,
                evolve=None if name not in evolved else dict(
                    best=evolved[name][0], lib=evolved[name][1], seconds=evolved[name][2]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # summary across traces
    order = [n for n, _ in peers] + ["dmm-" + p for p in PRESETS] + ["evolved"]
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

    fit = weight_fit(fid_points)
    results["weight_fit"] = fit
    results["spearman"] = rho_all
    results["spearman_calls"] = rho_op_all
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
              "Simulated T and M (`dmm sim --json`) against the measured median replay time and the "
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
    if fit:
        lines += ["### Which cost weights look off", "",
                  "Least squares, without intercept, of the time in the allocator's calls (replay's "
                  "`op_s` less the timer's own cycles per call, ns) on the counters of `dmm sim`, over "
                  "%d (trace, preset) points from %d traces (traces under 1000 operations left out; "
                  "libdmm_evolved.so left out: it runs without counters); R² %s. 'ns per model unit': "
                  "what one unit of T from that counter costs; 'implied weight': the weight that would "
                  "make T proportional to the time, one call = 1 (= %.2f ns). Collinear counters make "
                  "single estimates unstable: read large gaps, not decimals. Over all these points "
                  "Spearman ρ(T, time in calls) = %s with the model's weights, %s with the fitted ones." % (
                      fit["points"], len(fit["traces"]), fmt(fit["r2"], "%.3f"), fit["ns_reference"],
                      fmt(fit["spearman_model"], "%.3f"), fmt(fit["spearman_fit"], "%.3f")), "",
                  "| counter | model weight | ns per model unit | implied weight | implied / model |",
                  "|---|---:|---:|---:|---:|"]
        for g in fit["groups"]:
            lines.append("| %s | %s | %.3f | %.3g | %.2f× |" % (
                g["label"], ("%g" % g["model_weight"]) if g["model_weight"] >= 1 else "1/64 B",
                g["ns_per_model_unit"], g["implied_weight"], g["ratio_to_model"]))
        off = [g for g in fit["groups"] if g["ratio_to_model"] > 3 or g["ratio_to_model"] < 1 / 3.0]
        lines += ["", "Off by more than 3× relative to the per-call weight: %s." % (
            ", ".join("%s (%.2f×)" % (g["label"], g["ratio_to_model"]) for g in off) if off else "none"), "",
                  "Per trace, Spearman ρ of the presets' T against their time in calls, with the model's "
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
