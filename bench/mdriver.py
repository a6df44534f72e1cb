#!/usr/bin/env python3
"""mdriver.py - every allocator scored by mdriver's method (`dmm replay
--mdriver`) on every trace of the bench, converted to .rep.

    python3 bench/mdriver.py [--build DIR] [--quick]

Traces: the bundled workload recorded under libdmmtrace.so (work_media -f
60), the recorded programs of bench/record_traces.py (DIR/bench/traces/, when
there) and ../shared/traces (when there), each converted to mdriver's .rep
by `dmm convert` into DIR/bench/mdriver/reps/ (a .trc trace's failed calls
and frees of unknown blocks are left out, as the operation stream leaves
them out).  Allocators: glibc, jemalloc, mimalloc and tcmalloc (when
installed), libdmm.so with each of the paper's five presets and TLSF, and
libdmm_evolved.so as built (DIR/libdmm_evolved.so).  Each runs
`dmm replay --mdriver --json` over the whole directory (utilisation from
the library's footprint for dmm's libraries, from RSS for the others, as
the replay says); then dmm's way, a design per trace under libdmm.so: the
default evolved design with a pool of its simulated peak, and each trace's
own design from `dmm evolve --time S` (--evolve-time, 15) on the trace run
twice over one heap (as the timed runs reuse it), without and with that
pool, and with the pool whichever of that design and the one of least
peak footprint on the front of a Pareto search over time and memory as long
has the smaller simulated peak footprint (the Pareto search with a
population of 20); and last, the set of one design per trace, of those
rows' designs and every design on each trace's front (measured, with its
pool), of the highest mean utilisation whose total throughput, as mdriver
totals it, is 1.1 times the target (room for noise), each compiled into
its own libdmm_evolved.so (`dmm build`) and replayed under it.
Writes DIR/bench/mdriver.md
(per allocator: valid, mean utilisation, Kops, perf index; per trace:
utilisation and Kops) and DIR/bench/mdriver.json.  --quick: the bundled workload only.  Timing only:
the tests check behaviour."""
import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402

TARGET_KOPS = 54500
FRONT_POP = 20       # the Pareto searches' population
PICK_MARGIN = 1.1    # the measured set's throughput, over the target


def convert(dmm, src, dst):
    """src (any format dmm reads) as .rep at dst; True when written."""
    r = subprocess.run([dmm, "convert", "--force", "--to", "rep", src, dst],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("mdriver: %s: %s" % (src, r.stderr.strip()[-300:]), file=sys.stderr)
    return r.returncode == 0


def gather(build, reps, quick):
    """The bench's traces as .rep files in reps/; their names."""
    os.makedirs(reps, exist_ok=True)
    for f in glob.glob(os.path.join(reps, "*")):
        os.unlink(f)
    dmm = os.path.join(build, "dmm")
    names = []
    wm = os.path.join(reps, "work_media.trc")
    env = dict(benchlib.clean_env(), LD_PRELOAD=os.path.join(build, "libdmmtrace.so"),
               DMM_TRACE_FILE=wm)
    subprocess.run([os.path.join(build, "bench", "work_media"), "-f", "60"], env=env,
                   stdout=subprocess.DEVNULL, check=True)
    if convert(dmm, wm, os.path.join(reps, "work_media.rep")):
        names.append("work_media.rep")
    os.unlink(wm)
    if quick:
        return names
    for t in sorted(glob.glob(os.path.join(build, "bench", "traces", "*.trc"))):
        n = os.path.basename(t)[:-4] + ".rep"
        if convert(dmm, t, os.path.join(reps, n)):
            names.append(n)
    shared = peers.SHARED_TRACES
    for z in sorted(glob.glob(os.path.join(shared, "*", "*.zip"))):
        with zipfile.ZipFile(z) as zf:
            for member in zf.namelist()[:1]:
                tmp = os.path.join(reps, os.path.basename(member))
                with zf.open(member) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                n = os.path.basename(z)[:-4] + ".rep"
                if convert(dmm, tmp, os.path.join(reps, n)):
                    names.append(n)
                os.unlink(tmp)
    for t in sorted(glob.glob(os.path.join(shared, "*", "*.trace"))):
        n = os.path.basename(t).rsplit(".", 1)[0] + ".rep"
        if convert(dmm, t, os.path.join(reps, n)):
            names.append(n)
    return names


def allocators(build):
    out, skipped = peers.peer_allocators()
    lib = os.path.join(build, "libdmm.so")
    for p in ["kng", "lea", "fib", "s10", "exa", "tlsf"]:
        out.append(("libdmm.so " + p, lib))
    out.append(("libdmm_evolved.so", os.path.join(build, "libdmm_evolved.so")))
    return out, skipped


def replay_pinned(argv, **kw):
    """subprocess.run of a replay (single-threaded) on the fastest CPU now
    (scripts/cpupin.py: this machine's CPUs differ in speed by up to 1.4x)."""
    cpu, _ = benchlib.cpupin.fastest_cpu()
    with benchlib.cpupin.pinned(cpu):
        return subprocess.run(argv, **kw)


def score(build, reps, name, lib):
    env = benchlib.clean_env()
    if lib:
        env["LD_PRELOAD"] = lib
    if name.startswith("libdmm.so "):
        env["DMM_CONFIG"] = name.split()[1]
    r = replay_pinned([os.path.join(build, "dmm"), "replay", "--mdriver", "--json", reps],
                      env=env, capture_output=True, text=True, timeout=3600)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return dict(error="exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))


def per_trace(build, reps, names, design_of, pool, built=False):
    """libdmm.so running, on each trace, the design design_of(trace name)
    (a .dmm file), with the largest pool that keeps its simulated peak
    footprint when pool (`dmm sim --fit-pool`, what `make evolve POOL=auto`
    adds as the .dmm line `pool bytes=...`; none when not a page does): one
    `dmm replay --mdriver` per trace, the totals as mdriver takes them.
    built: each design compiled into its own libdmm_evolved.so (`dmm build`)
    and the trace replayed under that instead."""
    dmm = os.path.join(build, "dmm")
    traces = []
    for n in names:
        rep, design = os.path.join(reps, n), design_of(n)
        if not design:
            return dict(error="%s: no design" % n)
        cfg = design
        if pool:
            r = subprocess.run([dmm, "sim", "--json", "--fit-pool", "--dmm", design, rep],
                               capture_output=True, text=True)
            if r.returncode != 0:
                return dict(error="dmm sim of %s: %s" % (n, r.stderr.strip()[-200:]))
            m = json.loads(r.stdout)["dmms"][0]["pool_keeping_m"]   # as make evolve POOL=auto
            cfg = os.path.join(reps, "..", "%s.%s.pool.dmm" % (n, os.path.basename(design)))
            with open(design) as src, open(cfg, "w") as dst:
                dst.write(src.read() + ("pool          bytes=%d\n" % m if m else ""))
        env = dict(benchlib.clean_env(), LD_PRELOAD=os.path.join(build, "libdmm.so"),
                   DMM_CONFIG=cfg)
        if built:
            lib = os.path.join(reps, "..", "built", n + ".so")
            os.makedirs(os.path.dirname(lib), exist_ok=True)
            r = subprocess.run([dmm, "build", "-o", lib, cfg], capture_output=True, text=True)
            if r.returncode != 0:
                return dict(error="dmm build of %s: %s" % (cfg, r.stderr.strip()[-200:]))
            env = dict(benchlib.clean_env(), LD_PRELOAD=os.path.abspath(lib))
        r = replay_pinned([dmm, "replay", "--mdriver", "--json", rep], env=env,
                          capture_output=True, text=True, timeout=3600)
        try:
            ran = json.loads(r.stdout)["traces"]
            for t in ran:
                t["design"] = cfg
            traces += ran
        except (ValueError, KeyError):
            return dict(error="%s: exit %d: %s" % (n, r.returncode, r.stderr.strip()[-200:]))
    ok = [t for t in traces if t["read"]]
    util = sum(t["util"] for t in ok) / len(ok) if ok else 0
    ops, secs = sum(t["ops"] for t in ok), sum(t["secs"] for t in ok)
    kops = ops / secs / 1000 if secs else 0
    u, th = 40 * min(1, util), 60 * min(1, kops / TARGET_KOPS)
    return dict(traces=traces, total=dict(valid=all(t["valid"] for t in ok), util=util, ops=ops,
                                          secs=secs, kops=kops),
                perf=dict(util=u, thru=th, index=u + th))


def twice(src, dst):
    """The .rep trace src run twice over one heap, as mdriver's repeated runs
    do: its operations, a free of every block still live, its operations
    again (the same ids: each was freed).  Written to dst."""
    with open(src) as f:
        head = [next(f) for _ in range(4)]
        ops = [ln for ln in f if ln.strip()]
    live = set()
    for ln in ops:
        w = ln.split()
        if w[0] == "a":
            live.add(w[1])
        elif w[0] == "f":
            live.discard(w[1])
    frees = ["f %s\n" % i for i in sorted(live, key=int)]
    head[2] = "%d\n" % (2 * len(ops) + len(frees))
    with open(dst, "w") as f:
        f.writelines(head + ops + frees + ops)


def evolve_each(build, reps, names, seconds, memory_first=False):
    """Each trace's own design: `dmm evolve --time seconds` on it run twice
    over one heap (twice(): the simulator then counts what mdriver's timed
    runs see, chunks kept or faulted in again), its best.dmm (eq. 1);
    memory_first: a Pareto search over time and memory (`--objectives
    time,memory`), its front's design of the least peak footprint
    (mdriver's perf index asks for utilisation once throughput is met).  A
    function from trace name to the design (None when the search failed)."""
    out = {}
    for n in names:
        d = os.path.join(reps, "..", "evolved-memory" if memory_first else "evolved", n)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        two = os.path.join(reps, "..", "twice", n)
        os.makedirs(os.path.dirname(two), exist_ok=True)
        twice(os.path.join(reps, n), two)
        argv = [os.path.join(build, "dmm"), "evolve", "-q", "--time", str(seconds), "--out", d]
        if memory_first:
            # a small population: at the default 100, a 15 s search on a
            # 5 M-operation doubled trace ends in its fifth generation
            argv += ["--objectives", "time,memory", "--pop", str(FRONT_POP)]
        r = subprocess.run(argv + [two], capture_output=True, text=True)
        best = os.path.join(d, "best.dmm")
        if memory_first and r.returncode == 0:
            best = least_memory(d)
        out[n] = best if r.returncode == 0 and best and os.path.exists(best) else None
    return out.get


def front_rows(d):
    """The rows of a Pareto search's front (d/front.csv): [] without one."""
    try:
        with open(os.path.join(d, "front.csv")) as f:
            return [r for r in csv.DictReader(f) if r["kind"] in ("front", "knee")]
    except OSError:
        return []


def least_memory(d):
    """The design of a Pareto search's front with the least M, the faster of
    equals; None without one."""
    rows = front_rows(d)
    if not rows:
        return None
    best = min(rows, key=lambda r: (int(r["M"]), int(r["T"])))
    return os.path.join(d, best["name"])


def least_footprint(build, reps, *design_of):
    """Per trace, of the designs each function gives, the one of least
    simulated peak footprint (mdriver's heap), the faster of equals."""
    def sim(design, n):
        r = subprocess.run([os.path.join(build, "dmm"), "sim", "--json", "--dmm", design,
                            os.path.join(reps, n)], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        d = json.loads(r.stdout)["dmms"][0]
        return (d["m"], d["t"])

    def pick(n):
        scored = [(sim(d, n), d) for d in (f(n) for f in design_of) if d]
        scored = [x for x in scored if x[0]]
        return min(scored)[1] if scored else None
    return pick


def front_designs(d):
    """The designs of a Pareto search's front (front_rows), fastest first."""
    return [os.path.join(d, r["name"]) for r in sorted(front_rows(d), key=lambda r: int(r["T"]))]


def pick_under_target(cands, kops):
    """cands: trace name -> measured runs (dicts with secs, util, ops,
    design).  One run per trace such that the whole set runs at kops or
    faster as mdriver totals it (all operations over all best times) and
    the mean utilisation is the highest such a set has (exact: the sets
    that no other beats in both time and utilisation, trace by trace);
    where none runs that fast, the fastest of each.  Name -> design."""
    names = [n for n in cands if cands[n]]
    budget = sum(cands[n][0]["ops"] for n in names) / (kops * 1000.0)
    sets = [(0.0, 0.0, ())]
    for n in names:
        grown = sorted(((s + t["secs"], u + t["util"], ch + (t["design"],))
                        for s, u, ch in sets for t in cands[n] if s + t["secs"] <= budget),
                       key=lambda x: (x[0], -x[1]))
        sets, best = [], -1.0
        for x in grown:
            if x[1] > best:
                sets.append(x)
                best = x[1]
        if not sets:
            return {n: min(cands[n], key=lambda t: t["secs"])["design"] for n in names}
    return dict(zip(names, max(sets, key=lambda x: x[1])[2]))


def measured_set(build, reps, names, rows, fronts, margin):
    """mdriver's goal read as a choice: per trace, every design that rows
    (per_trace results) ran on it and every design on its Pareto front
    (fronts(name): .dmm files; replayed here with their pool), measured;
    then the set of highest mean utilisation whose total throughput, as
    mdriver totals it, is the target times margin (room for the noise of
    one more measurement): each of those designs compiled into its own
    libdmm_evolved.so (`dmm build`), the trace replayed under it, as a row
    of its own."""
    cands = {n: [] for n in names}
    for j in rows:
        for t in j.get("traces", []):
            if t["valid"] and t.get("design") and t["trace"] in cands:
                cands[t["trace"]].append(t)
    for n in names:
        for d in fronts(n):
            j = per_trace(build, reps, [n], lambda _, d=d: d, True)
            cands[n] += [t for t in j.get("traces", []) if t["valid"]]
    chosen = pick_under_target(cands, TARGET_KOPS * margin)
    return per_trace(build, reps, names, chosen.get, False, built=True)


def table(results, names):
    # the traces in the order the replay scored them (a directory: by name)
    for _, j in results:
        if "traces" in j and "error" not in j:
            names = [x["trace"] for x in j["traces"]]
            break
    w = []
    w.append("| allocator | valid | util (mean) | Kops | perf index | heap from |")
    w.append("|---|---|---:|---:|---:|---|")
    for name, j in results:
        if "error" in j:
            w.append("| %s | failed: %s | | | | |" % (name, j["error"]))
            continue
        t, p = j["total"], j["perf"]
        hf = sorted(set(x["heap_from"] for x in j["traces"] if x["read"]))
        w.append("| %s | %s | %.1f%% | %.0f | %.1f | %s |" % (
            name, "yes" if t["valid"] else "**no**", 100 * t["util"], t["kops"], p["index"],
            ", ".join(hf)))
    w.append("")
    w.append("Per trace, utilisation / Kops:")
    w.append("")
    w.append("| allocator | " + " | ".join(names) + " |")
    w.append("|---|" + "---:|" * len(names))
    for name, j in results:
        if "error" in j:
            continue
        by = {x["trace"]: x for x in j["traces"]}
        cells = []
        for n in names:
            x = by.get(n)
            cells.append("-" if not x or not x["read"] else
                         "%.0f%% / %.0f" % (100 * x["util"], x["kops"]) if x["valid"] else "invalid")
        w.append("| %s | %s |" % (name, " | ".join(cells)))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--evolve-time", type=int, default=15,
                    help="seconds of search for each trace's own design (15)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    reps = os.path.join(build, "bench", "mdriver", "reps")
    names = gather(build, reps, a.quick)
    allocs, skipped = allocators(build)
    results = []
    for name, lib in allocs:
        print("mdriver: %s on %d traces" % (name, len(names)), file=sys.stderr)
        results.append((name, score(build, reps, name, lib)))
    default = os.path.join(benchlib.ROOT, "codegen", "default.dmm")
    print("mdriver: the default evolved design with a pool, per trace", file=sys.stderr)
    results.append(("default design + pool (libdmm.so)",
                    per_trace(build, reps, names, lambda n: default, True)))
    print("mdriver: each trace's own design (dmm evolve --time %d)" % a.evolve_time,
          file=sys.stderr)
    own = evolve_each(build, reps, names, a.evolve_time)
    results.append(("own evolved design (libdmm.so)", per_trace(build, reps, names, own, False)))
    results.append(("own evolved design + pool (libdmm.so)",
                    per_trace(build, reps, names, own, True)))
    print("mdriver: each trace's memory-first design (dmm evolve --objectives time,memory "
          "--time %d)" % a.evolve_time, file=sys.stderr)
    lean = evolve_each(build, reps, names, a.evolve_time, memory_first=True)
    results.append(("own design of least footprint + pool (libdmm.so)",
                    per_trace(build, reps, names, least_footprint(build, reps, own, lean), True)))
    print("mdriver: every design of each trace's front measured; the leanest set at the target",
          file=sys.stderr)
    fronts = lambda n: front_designs(os.path.join(reps, "..", "evolved-memory", n))
    results.append(("leanest set measured at %d Kops, each built (libdmm_evolved.so)" % TARGET_KOPS,
                    measured_set(build, reps, names, [j for _, j in results[-3:]], fronts,
                                 PICK_MARGIN)))
    w = ["# mdriver's score for every allocator", "",
         "`dmm replay --mdriver` on %d traces (%s), as the CS:APP malloc lab's driver scores: "
         "correctness checked in a first run (payloads, 8-byte alignment as mdriver's, no overlap), "
         "utilisation = peak payload / peak heap (the library's footprint for dmm's libraries, "
         "else peak anonymous RSS over the level before the trace), throughput from the fastest "
         "of repeated runs over the warm heap (K-best, K=3, 1 %%, at most 20; each allocator's "
         "replay on the CPU that ran a busy loop fastest at its start); perf index = "
         "40 x mean util + 60 x min(1, Kops / %d).  The last five rows are dmm's way, an "
         "allocator per program, run by libdmm.so with DMM_CONFIG: the default evolved design "
         "(codegen/default.dmm) with the largest pool that keeps its simulated peak footprint "
         "on each trace (`make evolve POOL=auto`, `dmm sim --fit-pool`: the same peak, its "
         "pages held from the start, so that the repeated runs fault fewer pages), each trace's own design from a %d s `dmm evolve` "
         "(eq. 1) on the trace run twice over one heap (its operations, a free of every block "
         "still live, its operations again: what the timed runs see), without and with that pool, and with the pool whichever of that design and "
         "the one of least peak footprint on the front of a Pareto search over time and memory "
         "as long (`dmm evolve --objectives time,memory`) has the smaller simulated peak "
         "footprint (mdriver's index asks for utilisation once the throughput target is met; "
         "the Pareto search with a population of %d); last, one design per trace, of the designs "
         "those three rows ran and every design on each trace's front (each measured, with its "
         "pool), the set of highest mean utilisation whose total throughput, all operations over "
         "all best times as mdriver totals it, is %.1f x %d Kops or more (room for the noise of "
         "one more run), each design compiled into its own libdmm_evolved.so (`dmm build`) and the "
         "trace replayed under it." % (len(names), ", ".join(names), TARGET_KOPS,
                                             a.evolve_time, FRONT_POP, PICK_MARGIN, TARGET_KOPS),
         ""]
    w += table(results, names)
    if skipped:
        w += ["", "Not run: " + "; ".join("%s: %s" % s for s in skipped)]
    out = os.path.join(build, "bench")
    with open(os.path.join(out, "mdriver.md"), "w") as f:
        f.write("\n".join(w) + "\n")
    with open(os.path.join(out, "mdriver.json"), "w") as f:
        json.dump(dict(traces=names, results=[dict(allocator=n, result=j) for n, j in results]),
                  f, indent=1)
    print("\n".join(w))
    return 0


if __name__ == "__main__":
    sys.exit(main())
