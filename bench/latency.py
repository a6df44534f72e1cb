#!/usr/bin/env python3
"""latency.py - the costliest single call: a design of bounded latency
against glibc and the peers (issue 15's goal, a benchmark, not a test).

    python3 bench/latency.py [--build DIR] [--reps N] [--runs N]
                             [--evolve-time S] [--quick]

Traces: the bundled workload recorded under libdmmtrace.so (work_media -f
300) and the recorded programs in BUILD/bench/traces/ (bench/record_traces.py,
when there).  Allocators: glibc, jemalloc, mimalloc and tcmalloc (when
installed), and under libdmm.so three designs per trace, each with a pool
of its simulated peak footprint or its address span where larger (as `make
evolve POOL=BYTES`: every page held and populated from the start, so that
no call makes a system call or touches a fresh page): the TLSF preset (O(1) malloc and free), the same in
huge pages (`pages huge=yes`: a realloc's copy of a large block walks
fewer page-table levels and misses the TLB less: 10-25 % of the copy's
time under this VM's shadow page tables), and the design of the least
costliest operation on the front of a Pareto search over time and the
worst operation, each design scored with its own pool (`dmm evolve
--objectives time,worst --pooled`, --evolve-time seconds, population 20).

Each allocator replays each trace with `dmm replay --json --runs N` (N: 5):
N runs from the same start, each operation timed by its fastest run, so
that what an allocator does inside a call (a system call, a page fault, a
long walk), which recurs in every run, counts and an interrupt of this
shared VM, which does not recur, does not.  Rounds are interleaved (--reps,
3), on the CPU that ran a busy loop fastest at the round's start; medians
over rounds.  Goal per trace: a dmm design whose costliest call is at most
1/20 of glibc's while its mean time per call stays within 10 % of glibc's.
Writes BUILD/bench/latency.md (per trace: mean, p99.9 and max per
allocator, the ratios to glibc, and the latency histograms side by side)
and BUILD/bench/latency.json.  Timing only: the tests check behaviour."""
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402

GOAL_WORST = 20.0    # the costliest call at most glibc's / 20
GOAL_MEAN = 1.10     # the mean within 10 % of glibc's
TLSF = "tlsf          range=(0,inf]          split=yes coalesce=yes list=dll   fit=first order=lifo\n"


def log(msg):
    print("latency: " + msg, file=sys.stderr, flush=True)


def traces(build, work, quick):
    out, skipped = [], []
    path = os.path.join(work, "work_media.trc")
    if os.path.exists(path):
        os.unlink(path)
    r = benchlib.record(build, path, [os.path.join(build, "bench", "work_media"), "-f", "300"],
                        stack=None)
    if r["exit"] == 0 and os.path.exists(path):
        out.append(("work_media", path))
    else:
        skipped.append(("work_media", "recording failed"))
    if quick:
        return out, skipped
    for n in benchlib.PROGRAMS:
        p = os.path.join(build, "bench", "traces", n + ".trc")
        if os.path.exists(p):
            out.append((n, p))
        else:
            skipped.append((n, "%s not there (bench/record_traces.py records it)" % p))
    return out, skipped


def with_pool(build, text, trace, dst):
    """text (a .dmm) with a pool of its simulated peak footprint on trace
    (less the page map, which the footprint counts beside the pool: the
    heap's every page held and populated from the start, whatever its
    holes), or of its address span where that is larger (chunks placed
    above a hole or a growing block's room: none beyond the pool), written
    to dst; dst."""
    src = dst + ".nopool"
    with open(src, "w") as f:
        f.write(text)
    r = subprocess.run([os.path.join(build, "dmm"), "sim", "--json", "--dmm", src, trace],
                       capture_output=True, text=True, check=True)
    d = json.loads(r.stdout)["dmms"][0]
    m = max(d["m"] - d["page_map_bytes"], d["address_span"])
    with open(dst, "w") as f:
        f.write(text + ("pool          bytes=%d\n" % m if m else ""))
    return dst


def least_worst(build, name, trace, work, seconds):
    """The .dmm text of the front's design of least W (then least T), or
    None when the search failed."""
    d = os.path.join(work, "front-" + name)
    r = subprocess.run([os.path.join(build, "dmm"), "evolve", "-q", "--objectives", "time,worst",
                        "--pooled", "--pop", "20", "--time", str(seconds), "--out", d, trace],
                       capture_output=True, text=True)
    if r.returncode != 0:
        log("%s: dmm evolve failed: %s" % (name, r.stderr.strip()[-200:]))
        return None
    with open(os.path.join(d, "front.csv")) as f:
        rows = [x for x in csv.DictReader(f) if x["kind"] in ("front", "knee")]
    if not rows:
        return None
    best = min(rows, key=lambda x: (int(x["W"]), int(x["T"])))
    with open(os.path.join(d, best["name"])) as f:
        return "".join(ln for ln in f if not ln.startswith("#"))


def replay(build, trace, lib, cfg, runs):
    env = benchlib.clean_env()
    if lib:
        env["LD_PRELOAD"] = lib
    if cfg:
        env["DMM_CONFIG"] = cfg
    cpu, _ = benchlib.cpupin.fastest_cpu()
    with benchlib.cpupin.pinned(cpu):
        r = subprocess.run([os.path.join(build, "dmm"), "replay", "--json", "--runs", str(runs),
                            trace], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return dict(error="exit %d: %s" % (r.returncode, r.stderr.strip()[-200:]))
    j = json.loads(r.stdout)
    a = j["latency"]["all"]
    return dict(mean=a["mean_ns"], p999=a["p999_ns"], max=a["max_ns"], worst_op=j["worst_op"],
                worst_kind=j["worst_kind"], hist=j["latency_histogram"]["all"])


def buckets(hist):
    """[low ns, count] buckets folded into powers of 4 ns: {power: count}."""
    out = {}
    for low, n in hist:
        k = 0
        while 4 ** (k + 1) <= low:
            k += 1
        out[k] = out.get(k, 0) + n
    return out


def main():
    ap = benchlib.parser(__doc__, 3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--evolve-time", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    work = os.path.join(build, "bench", "latency")
    os.makedirs(work, exist_ok=True)
    tr, skipped = traces(build, work, a.quick)
    allocs, skip2 = peers.peer_allocators()
    skipped += skip2
    libdmm = os.path.join(build, "libdmm.so")
    designs = {}
    for name, path in tr:
        log("%s: designs (TLSF + pool, and in huge pages; the front's least worst + pool, "
            "%d s search)" % (name, a.evolve_time))
        ds = [("TLSF + pool", with_pool(build, TLSF, path, os.path.join(work, name + ".tlsf.dmm"))),
              ("TLSF + pool, huge pages", with_pool(build, "pages         huge=yes\n" + TLSF, path,
                                                    os.path.join(work, name + ".tlsf-huge.dmm")))]
        text = least_worst(build, name, path, work, a.evolve_time)
        if text:
            ds.append(("least worst + pool",
                       with_pool(build, text, path, os.path.join(work, name + ".worst.dmm"))))
        designs[name] = ds
    results = {}
    for rnd in range(a.reps):
        for name, path in tr:
            runs = [(n, lib, None) for n, lib in allocs] + \
                   [(n, libdmm, cfg) for n, cfg in designs[name]]
            k = rnd % len(runs)
            for n, lib, cfg in runs[k:] + runs[:k]:
                log("round %d/%d: %s under %s" % (rnd + 1, a.reps, name, n))
                results.setdefault(name, {}).setdefault(n, []).append(
                    replay(build, path, lib, cfg, a.runs))
    w = ["# The costliest single call", "",
         "`dmm replay --runs %d` (each operation timed by its fastest of %d runs from the same "
         "start: what the allocator does in a call recurs in every run, an interrupt of this VM "
         "does not), %d interleaved rounds on the fastest CPU, medians; dmm's designs under "
         "libdmm.so with a pool of their simulated peak footprint (its pages populated from the start). Goal: a dmm design "
         "whose costliest call is at most 1/%d of glibc's with a mean within %d %% of glibc's. "
         "%s" % (a.runs, a.runs, a.reps, GOAL_WORST, round(100 * (GOAL_MEAN - 1)),
                 benchlib.machine_line()), ""]
    summary = {}
    for name, _ in tr:
        res = results.get(name, {})
        med = {}
        for n, rs in res.items():
            ok = [x for x in rs if "error" not in x]
            if not ok:
                med[n] = dict(error=rs[0]["error"])
                continue
            med[n] = dict((k, statistics.median(x[k] for x in ok)) for k in ("mean", "p999", "max"))
            med[n]["max_min"], med[n]["max_max"] = min(x["max"] for x in ok), max(x["max"] for x in ok)
            last = ok[-1]
            med[n].update(worst_op=last["worst_op"], worst_kind=last["worst_kind"],
                          hist=buckets(last["hist"]))
        summary[name] = med
        g = med.get("glibc", {})
        w += ["## %s" % name, "",
              "| allocator | mean ns | p99.9 ns | max ns (min-max) | max / glibc's | mean / glibc's | goal |",
              "|---|---:|---:|---:|---:|---:|---|"]
        for n, m in med.items():
            if "error" in m:
                w.append("| %s | failed: %s | | | | | |" % (n, m["error"]))
                continue
            rw = m["max"] / g["max"] if g.get("max") else float("nan")
            rm = m["mean"] / g["mean"] if g.get("mean") else float("nan")
            dmm = any(n == d for d, _ in designs[name])
            goal = ("**met**" if rw <= 1 / GOAL_WORST and rm <= GOAL_MEAN else "not met") if dmm else ""
            m.update(worst_ratio=rw, mean_ratio=rm, goal=goal)
            w.append("| %s | %.1f | %.1f | %.1f (%.1f-%.1f) | 1/%.1f | %.2f | %s |" % (
                n, m["mean"], m["p999"], m["max"], m["max_min"], m["max_max"],
                1 / rw if rw else float("inf"), rm, goal))
        ks = sorted({k for m in med.values() if "hist" in m for k in m["hist"]})
        names = [n for n, m in med.items() if "hist" in m]
        w += ["", "Latency histogram (calls per bucket of ns, the last round):", "",
              "| ns | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for k in ks:
            w.append("| %s-%s | %s |" % (4 ** k if k else 0, 4 ** (k + 1),
                                         " | ".join(str(med[n]["hist"].get(k, 0)) for n in names)))
        w += ["", "Designs: " + "; ".join("%s `%s`" % (d, " / ".join(
            ln.split()[0] + ("(" + ln.split()[1] + ")" if ln.split()[0] == "pool" else "")
            for ln in open(p) if ln.strip() and not ln.startswith("#")))
            for d, p in designs[name]), ""]
    if skipped:
        w += ["Not run: " + "; ".join("%s: %s" % s for s in skipped), ""]
    text = "\n".join(w) + "\n"
    benchlib.write_results(build, "latency", text, dict(
        runs=a.runs, reps=a.reps, traces=[n for n, _ in tr],
        designs={n: [dict(name=d, dmm=open(p).read()) for d, p in ds] for n, ds in designs.items()},
        summary={n: {k: {x: y for x, y in v.items() if x != "hist"} for k, v in m.items()}
                 for n, m in summary.items()}, rounds=results))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
