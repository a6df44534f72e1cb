#!/usr/bin/env python3
"""tune_glibc.py - dmm tune-glibc shown on real programs, run for real.

For each program (sqlite3 and python3 with the workloads of
bench/record_traces.py; python3-batches, a plain python3 that fills a list
with 4 KB objects and drops it, 100 times; perl's workload with --all):

 1. record its allocation trace under libdmmtrace.so;
 2. `dmm tune-glibc --json` on that trace: the search over glibc's malloc
    tunables, scored by replays, and its own final run (defaults vs tuned,
    replayed);
 3. `dmm tune-glibc --verify --json`: the real program, with the same
    command line and environment as recorded, under glibc's defaults and
    under the tuned GLIBC_TUNABLES, alternating, --reps times each: wall
    time, CPU time (user + system) and peak RSS (ru_maxrss from wait4) of
    each run; every run's output must equal the warm-up's (the settings may
    not change what a program does).

Writes BUILD/bench/tune_glibc.md (tables, the Mann-Whitney p-value of every
change, and a verdict in words) and BUILD/bench/tune_glibc.json (every raw
number).  Every number and verdict comes from dmm's JSON: this script
computes none of them.  When the search keeps glibc's defaults, the real runs compare the
search's best candidate anyway, marked as not recommended, so that the
report still says what tuning would have done; so does it for settings that
dmm tune-glibc found but does not recommend (its final run measured no gain
without a cost).

    python3 bench/tune_glibc.py [--build build] [--reps 15] [--pop 10]
                                [--gens 6] [--only sqlite3,python3] [--all] [--quick]
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# The programs: name, (argv, extra environment).  sqlite3, python3 and perl
# run the workloads make bench records (benchlib, at its recorded sizes); the
# command line is both the one recorded and the one run for real.
#
# Batches: a list of 600 objects of 4000 bytes built and dropped, 100 times.
# Objects over 512 bytes go past pymalloc to malloc, so this is python3 as
# it comes (no PYTHONMALLOC); each drop frees ~2.3 MiB at the top of the
# heap, which glibc trims (trim_threshold 128 KiB) and faults in again.
BATCHES = '''
for r in range(100):
    batch = [bytes(4000) for _ in range(600)]
    del batch
print("done")'''


def programs(tmp):
    cmd = lambda n: benchlib.command(n, benchlib.RECORDED[n], tmp)
    return [("sqlite3", cmd("sqlite3")), ("python3", cmd("python3")),
            ("python3-batches", ([benchlib.PYTHON, "-s", "-c", BATCHES], {})),
            ("perl", cmd("perl"))]


DEFAULT = ("sqlite3", "python3", "python3-batches")


def record(build, outdir, name, argv, extra):
    trace = os.path.join(outdir, name + ".trc")
    r = benchlib.record(build, trace, argv, extra)
    if r["exit"] != 0 or not os.path.exists(trace):
        raise RuntimeError("%s: recording failed (status %d): %s"
                           % (name, r["exit"], "".join(benchlib.tail(r["err"], 5))[-300:]))
    return trace


def tune(build, trace, args):
    cmd = [os.path.join(build, "dmm"), "tune-glibc", "--json", "-q", "--seed", str(args.seed),
           "--pop", str(args.pop), "--gens", str(args.gens), "--final-reps",
           str(args.final_reps), trace]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("dmm tune-glibc %s: status %d: %s"
                           % (trace, r.returncode, r.stderr.decode(errors="replace")))
    return json.loads(r.stdout)


def real_runs(build, argv, extra, tunables, reps):
    """dmm tune-glibc --verify: defaults and tuned alternating (ABBA), reps
    each, after one warm-up; its JSON."""
    env = dict(benchlib.clean_env(), **extra)
    cmd = [os.path.join(build, "dmm"), "tune-glibc", "--verify", tunables, "--reps", str(reps),
           "--json", "-q", "--"] + argv
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("dmm tune-glibc --verify: status %d: %s"
                           % (r.returncode, r.stderr.decode(errors="replace").strip()))
    d = json.loads(r.stdout)
    if d["exit_status"] != 0:
        raise RuntimeError("%s exits %d" % (argv[0], d["exit_status"]))
    return d


def fmt(v, key):
    if key.endswith("bytes"):
        return "%.2f MiB" % (v / 1048576.0)
    return "%.2f ms" % (v * 1e3)


def cell(s, key):
    return "%s (%s–%s)" % (fmt(s["median"], key), fmt(s["min"], key), fmt(s["max"], key))


def replay_comp(final, key):
    """A measure of dmm tune-glibc's final run in the shape of --verify's
    "compare": its medians, ranges, change and p-value as dmm wrote them."""
    def side(s):
        return {k: final[s][k + "_" + key] for k in ("median", "min", "max")}
    return {"defaults": side("defaults"), "tuned": side("tuned"),
            "change_pct": final["change_pct"][key], "p": final["p_value"][key]}


def write_report(path, res, meta):
    L = []
    L.append("# glibc malloc tunables on real programs (dmm tune-glibc)\n")
    L.append("Each program's trace was recorded under libdmmtrace.so; `dmm tune-glibc` searched "
             "glibc's top_pad, trim_threshold, mmap_threshold and arena_max on it (population "
             "%d, %d generations, seed %d, min of 3 replays per candidate; F = ½·t/t_default + "
             "½·M/M_default, t the replay's wall time, M its peak held memory plus the "
             "defaults' baseline RSS) and replayed defaults vs the winner %d times each. "
             "Then the real program ran, with the command line and environment it was "
             "recorded with, under the defaults and under the winner's `GLIBC_TUNABLES`, "
             "alternating, %d times each (one warm-up first): wall and CPU time and peak RSS "
             "(%s). Medians with min–max; p: two-sided Mann-Whitney U; a change "
             "counts as measurable when p < 0.05 and the medians differ by 0.5 %% or more. "
             "glibc %s, %d CPUs, load average %.2f at the start; %.0f s in all.\n"
             % (meta["pop"], meta["gens"], meta["seed"], meta["final_reps"], meta["reps"],
                meta["rss_source"],
                meta["glibc"], meta["cpus"], meta["load"], meta["seconds"]))
    L.append("| program | ops | settings | search F | replay time | replay peak RSS | "
             "real wall | real CPU | real peak RSS |")
    L.append("|---|---:|---|---:|---|---|---|---|---|")
    for r in res:
        if "error" in r:
            L.append("| %s | | %s | | | | | | |" % (r["name"], r["error"]))
            continue
        if r.get("compared") is None:
            L.append("| %s | %d | defaults (the search found nothing else) | %.3f | | | | | |"
                     % (r["name"], r["ops"], r["search_F"]))
            continue
        rp, rc = r.get("replay"), r["real"]
        L.append("| %s | %d | `%s`%s | %.3f | %s | %s | %s | %s | %s |" % (
            r["name"], r["ops"], r["compared"],
            "" if r["recommended"] else " (not recommended)", r["search_F"],
            "%+.1f %% (p=%.2f)" % (rp["wall_s"]["change_pct"], rp["wall_s"]["p"]) if rp else "",
            "%+.1f %% (p=%.2f)" % (rp["peak_rss_bytes"]["change_pct"],
                                   rp["peak_rss_bytes"]["p"]) if rp else "",
            "%+.1f %% (p=%.2f)" % (rc["wall_s"]["change_pct"], rc["wall_s"]["p"]),
            "%+.1f %% (p=%.2f)" % (rc["cpu_s"]["change_pct"], rc["cpu_s"]["p"]),
            "%+.1f %% (p=%.2f)" % (rc["maxrss_bytes"]["change_pct"], rc["maxrss_bytes"]["p"])))
    L.append("")
    for r in res:
        if "error" in r or r.get("compared") is None:
            continue
        L.append("## %s\n" % r["name"])
        pruned = r["tune"].get("pruned", [])
        L.append("`%s` — %d operations; search: %d candidates measured, %.1f s, best `%s` "
                 "(F %.3f)%s; dmm tune-glibc %s.\n"
                 % (r["command"], r["ops"], r["candidates"], r["search_seconds"],
                    r["tune"]["search_best_glibc"], r["search_F"],
                    "; put back to default as not paying for itself: " + ", ".join(pruned)
                    if pruned else "",
                    "recommends `%s`" % r["compared"] if r["recommended"]
                    else "found `%s` but does not recommend it (its final run measured no "
                         "gain without a cost)" % r["compared"] if r["tuned"]
                    else "keeps glibc's defaults (the rows show its search's best anyway)"))
        L.append("| measure | defaults | tuned | change | p |")
        L.append("|---|---|---|---:|---:|")
        rows = []
        if r.get("replay"):
            rows += [("replay wall time", r["replay"]["wall_s"], "wall_s"),
                     ("replay peak RSS", r["replay"]["peak_rss_bytes"], "peak_rss_bytes"),
                     ("replay peak held", r["replay"]["peak_held_bytes"], "peak_held_bytes")]
        rows += [("real wall time", r["real"]["wall_s"], "wall_s"),
                 ("real CPU time", r["real"]["cpu_s"], "cpu_s"),
                 ("real peak RSS", r["real"]["maxrss_bytes"], "maxrss_bytes")]
        for label, c, key in rows:
            L.append("| %s | %s | %s | %+.1f %% | %.3f |"
                     % (label, cell(c["defaults"], key), cell(c["tuned"], key),
                        c["change_pct"], c["p"]))
        L.append("")
        rc = r["real"]
        L.append("Real runs: wall time %s; CPU time %s; peak RSS %s.\n"
                 % (rc["wall_s"]["verdict"], rc["cpu_s"]["verdict"],
                    rc["maxrss_bytes"]["verdict"]))
    L.append("## Verdict\n")
    for r in res:
        if "error" in r:
            L.append("- %s: not measured (%s)." % (r["name"], r["error"]))
        elif r.get("compared") is None:
            L.append("- %s: the search kept glibc's defaults; nothing to compare." % r["name"])
        else:
            L.append("- %s, `%s`: %s (real runs, %d each)."
                     % (r["name"], r["compared"], r["real_verdict"], meta["reps"]))
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def main():
    ap = benchlib.parser(__doc__.split("\n")[0], 15)
    ap.add_argument("--pop", type=int, default=10)
    ap.add_argument("--gens", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--final-reps", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated names (also perl)")
    ap.add_argument("--all", action="store_true", help="perl too")
    ap.add_argument("--quick", action="store_true", help="sqlite3 only, small search, 5 runs")
    args = ap.parse_args()
    if args.quick:
        args.only, args.pop, args.gens, args.reps = "sqlite3", 6, 2, 5
    build = os.path.abspath(args.build)
    outdir = os.path.join(build, "bench", "tune_glibc")
    os.makedirs(outdir, exist_ok=True)
    for f in ("dmm", "libdmmtrace.so"):
        if not os.path.exists(os.path.join(build, f)):
            sys.exit("tune_glibc.py: %s/%s not built (run make)" % (build, f))
    only = (set(args.only.split(",")) if args.only else
            None if args.all else set(DEFAULT))
    t0 = time.time()
    meta = {"pop": args.pop, "gens": args.gens, "seed": args.seed, "reps": args.reps,
            "final_reps": args.final_reps, "glibc": benchlib.machine()["glibc"],
            "cpus": os.cpu_count(), "load": os.getloadavg()[0],
            "rss_source": "ru_maxrss from wait4 in `dmm tune-glibc --verify`"}
    res = []
    for name, (argv, extra) in programs(outdir):
        if only and name not in only:
            continue
        if not benchlib.installed(argv[0]):
            print("tune_glibc: %s skipped: not installed" % name, file=sys.stderr)
            continue
        r = {"name": name, "command": " ".join(
            ["%s=%s" % kv for kv in extra.items()] +
            [a if " " not in a and "\n" not in a else "'…'" for a in argv])}
        try:
            ts = time.time()
            trace = record(build, outdir, name, argv, extra)
            print("tune_glibc: %s: recorded %s; searching" % (name, trace), file=sys.stderr)
            d = tune(build, trace, args)
            r.update(ops=d["ops"], search_F=d["search_F"], tuned=d["tuned"],
                     recommended=d["recommended"],
                     candidates=d["search"]["candidates_measured"],
                     search_seconds=d["search"]["seconds"], tune=d)
            compared = d["GLIBC_TUNABLES"] if d["tuned"] else d["search_best_glibc"]
            if not compared:
                r["compared"] = None
                res.append(r)
                continue
            r["compared"] = compared
            if d["final"]:
                r["replay"] = {k: replay_comp(d["final"], k)
                               for k in ("wall_s", "peak_rss_bytes", "peak_held_bytes")}
            print("tune_glibc: %s: GLIBC_TUNABLES=%s; %d real runs each"
                  % (name, compared, args.reps), file=sys.stderr)
            v = real_runs(build, argv, extra, compared, args.reps)
            r["real"], r["real_runs"], r["real_verdict"] = v["compare"], v["runs"], v["verdict"]
            r["seconds"] = time.time() - ts
        except (RuntimeError, OSError, ValueError) as e:
            print("tune_glibc: %s: %s" % (name, e), file=sys.stderr)
            r["error"] = str(e)
        res.append(r)
    meta["seconds"] = time.time() - t0
    bench = os.path.join(build, "bench")
    with open(os.path.join(bench, "tune_glibc.json"), "w") as f:
        json.dump({"meta": meta, "programs": res}, f, indent=1)
    write_report(os.path.join(bench, "tune_glibc.md"), res, meta)
    print("tune_glibc: %s/tune_glibc.md (%.0f s)" % (bench, meta["seconds"]), file=sys.stderr)
    return 1 if any("error" in r for r in res) else 0


if __name__ == "__main__":
    sys.exit(main())
