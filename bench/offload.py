#!/usr/bin/env python3
"""offload.py - DMM_OFFLOAD=1 against DMM_OFFLOAD=0, on replays and on real
programs.

Replays: `dmm replay --json TRACE` under each library with DMM_OFFLOAD=0 and
=1: the application thread's time inside the allocator calls (op_s) and its
cycles per call of each kind (malloc family, free, realloc), the replay's
wall time, the process's CPU time (user + sys, the helper thread
included), its peak RSS, and how many frees went to the helper (DMM_STATS).
Traces: the real-program traces of make bench (build/bench/traces/:
python3, perl, sqlite3; sort's has a dozen blocks and is left out) and one
of work_media -t 2 (two threads, cross-thread frees), recorded here once.

Real programs: python3 (PYTHONMALLOC=malloc), sqlite3, perl, sort and
work_media -t 2 as processes: wall time, CPU time (user + sys) and peak
RSS; their output must be the same with offload on and off.

Libraries: libdmm.so with DMM_CONFIG=lea and libdmm_evolved.so (--libs
adds kng, or any preset).
Every (workload, library) pair runs off and on REPS times, interleaved, the
order swapped every repetition so that drift hits both alike.  Tables give
medians (and the best of the repetitions for the cycles per call, which
noise from other processes only increases), and on/off ratios.  Writes
build/bench/offload.md and offload.json.  Timing only: the tests check
correctness."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

OFFLOAD_RE = re.compile(r"DMM_OFFLOAD on: (\d+) frees offloaded, (\d+) synchronous "
                        r"\((\d+) with no helper, (\d+) with the queue full\)")

# benchlib's real-program workloads, at sizes of their own (a whole process's
# run, not a replay), with more frees: a third of sqlite3's rows deleted,
# python3's values sorted
PROGRAMS = [("python3", 15000, dict(sort=True)), ("sqlite3", 40000, dict(delete_thirds=True)),
            ("perl", 50000, {}), ("sort", 100000, {})]


def run_measured(argv, env):
    """benchlib.run, and the end of the benchmark when the program fails."""
    r = benchlib.run(argv, env)
    if r["exit"] != 0:
        raise SystemExit("offload.py: %s exited %d: %s" % (
            " ".join(argv[:3]), r["exit"], r["err"].decode(errors="replace")[-500:]))
    return r


def offload_counts(err):
    m = OFFLOAD_RE.search(err.decode(errors="replace"))
    if not m:
        return None
    return dict(offloaded=int(m.group(1)), synchronous=int(m.group(2)),
                no_helper=int(m.group(3)), queue_full=int(m.group(4)))


def main():
    ap = benchlib.parser(__doc__, 5)
    ap.add_argument("--libs", default="lea,evolved",
                    help="comma-separated: presets of libdmm.so and/or 'evolved'")
    ap.add_argument("--only", choices=["replay", "programs"], help="one half only")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    dmm = os.path.join(b, "dmm")
    media = os.path.join(b, "bench", "work_media")
    outdir = os.path.join(b, "bench")
    work = os.path.join(outdir, "offload")
    os.makedirs(work, exist_ok=True)
    base = dict(benchlib.clean_env(), LC_ALL="C")
    libs = []
    for l in a.libs.split(","):
        if l == "evolved":
            libs.append(("libdmm_evolved.so",
                         dict(LD_PRELOAD=os.path.join(b, "libdmm_evolved.so"))))
        else:
            libs.append(("libdmm.so " + l,
                         dict(LD_PRELOAD=os.path.join(b, "libdmm.so"), DMM_CONFIG=l)))
    for need in (dmm, media, os.path.join(b, "libdmm.so"), os.path.join(b, "libdmm_evolved.so")):
        if not os.path.exists(need):
            raise SystemExit("offload.py: %s missing (make)" % need)

    # ---- workloads ---------------------------------------------------
    traces = []
    for name in ("python3", "perl", "sqlite3"):
        p = os.path.join(outdir, "traces", name + ".trc")
        if os.path.exists(p):
            traces.append((name, p))
        else:
            print("offload.py: %s missing (bench/record_traces.py); skipped" % p,
                  file=sys.stderr)
    wm_trc = os.path.join(work, "work_media_t2.trc")
    if not os.path.exists(wm_trc):
        r = benchlib.record(b, wm_trc, [media, "-t", "2", "-f", "500"], dict(LC_ALL="C"))
        if r["exit"] != 0:
            raise SystemExit("offload.py: recording %s exited %d" % (wm_trc, r["exit"]))
    traces.append(("work_media -t 2", wm_trc))

    progs = [(name,) + benchlib.command(name, size, work, **opts)
             for name, size, opts in PROGRAMS]
    progs.append(("work_media -t 2", [media, "-t", "2", "-f", "1000"], {}))
    progs = [p for p in progs if benchlib.installed(p[1][0])]

    # ---- runs ----------------------------------------------------------
    res = {"replay": {}, "programs": {}}
    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    for rep in range(a.reps):
        order = (0, 1) if rep % 2 == 0 else (1, 0)
        if a.only != "programs":
            for tname, tpath in traces:
                for lname, lenv in libs:
                    for of in order:
                        env = dict(base, **lenv, DMM_OFFLOAD=str(of), DMM_STATS="1")
                        r = run_measured([dmm, "replay", "--json", tpath], env)
                        j = json.loads(r["out"])
                        lat = j["latency"]
                        e = res["replay"].setdefault(tname, {}).setdefault(lname, {}).setdefault(
                            str(of), [])
                        e.append(dict(op_s=j["op_s"], wall_s=j["wall_s"],
                                      cycles_per_op=j["cycles_per_op"],
                                      alloc=lat["alloc"]["mean_cycles"],
                                      free=lat["free"]["mean_cycles"],
                                      realloc=lat["realloc"]["mean_cycles"],
                                      p50_free=lat["free"]["p50_cycles"],
                                      p50_alloc=lat["alloc"]["p50_cycles"],
                                      ops=j["ops"], cpu=r["cpu_s"], proc_wall=r["wall_s"],
                                      rss_kib=r["maxrss_kib"],
                                      counts=offload_counts(r["err"])))
        if a.only != "replay":
            for pname, argv, extra in progs:
                for lname, lenv in libs:
                    for of in order:
                        env = dict(base, **extra, **lenv, DMM_OFFLOAD=str(of))
                        r = run_measured(argv, env)
                        e = res["programs"].setdefault(pname, {}).setdefault(
                            lname, {}).setdefault(str(of), [])
                        e.append(dict(wall=r["wall_s"], cpu=r["cpu_s"], user=r["user_s"],
                                      sys=r["sys_s"], rss_kib=r["maxrss_kib"],
                                      out=r["out"].decode(errors="replace")))
    elapsed = time.perf_counter() - t_start

    # ---- report --------------------------------------------------------
    def ratio(on, off):
        return "%.2f×" % (on / off) if off else "–"

    L = ["# DMM_OFFLOAD: frees on a helper thread, on and off", "",
         "%d interleaved repetitions of every (workload, library, DMM_OFFLOAD) triple; "
         "medians unless said otherwise; on/off is the ratio of medians (below 1: offload "
         "helps).  Machine: %d CPUs, shared (load average %.1f at the start, %.1f at the "
         "end).  %.0f s in all." % (a.reps, os.cpu_count(), load0, os.getloadavg()[0],
                                   elapsed), ""]
    summary = {}
    if res["replay"]:
        L += ["## Replays (`dmm replay --json`): the application thread in the allocator", "",
              "cycles per call: mean over the calls of one run (median of runs; best run in "
              "brackets), timer included (about 50 cycles); p50: the median call (the "
              "histogram's bucket).  op s: time inside allocator calls.  CPU: user+sys of "
              "the process, helper included.  offloaded: share of frees handed to the "
              "helper (in brackets: freed by the caller because the queue was full; the "
              "rest: before the helper started).", "",
              "| trace | library | offload | all cyc/call | malloc | free | realloc | "
              "p50 malloc / free | op s | wall s | CPU s | peak RSS MiB | "
              "offloaded (queue full) |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for tname, byl in res["replay"].items():
            for lname, byo in byl.items():
                row = {}
                for of in ("0", "1"):
                    rs = byo[of]
                    m = {k: benchlib.median([x[k] for x in rs]) for k in
                         ("cycles_per_op", "alloc", "free", "realloc", "op_s", "wall_s", "cpu",
                          "rss_kib", "p50_alloc", "p50_free")}
                    best = {k: min(x[k] for x in rs) for k in ("cycles_per_op", "alloc", "free",
                                                               "realloc")}
                    row[of] = (m, best)
                    cnt = [x["counts"] for x in rs if x["counts"]]
                    if cnt:
                        tot = sum(c["offloaded"] + c["synchronous"] for c in cnt)
                        offl = "%.0f%% (%.0f%%)" % (
                            100.0 * sum(c["offloaded"] for c in cnt) / tot if tot else 0,
                            100.0 * sum(c["queue_full"] for c in cnt) / tot if tot else 0)
                    else:
                        offl = "–"
                    L.append("| %s | %s | %s | %.0f [%.0f] | %.0f [%.0f] | %.0f [%.0f] | "
                             "%.0f [%.0f] | %.0f / %.0f | %.4f | %.4f | %.3f | %.1f | %s |" % (
                                 tname, lname, "on" if of == "1" else "off",
                                 m["cycles_per_op"], best["cycles_per_op"], m["alloc"],
                                 best["alloc"], m["free"], best["free"], m["realloc"],
                                 best["realloc"], m["p50_alloc"], m["p50_free"], m["op_s"],
                                 m["wall_s"], m["cpu"], m["rss_kib"] / 1024, offl))
                m0, b0 = row["0"]
                m1, b1 = row["1"]
                L.append("| | | **on/off** | %s [%s] | %s | %s | %s | %s / %s | %s | %s | %s | %s "
                         "| |" % (
                    ratio(m1["cycles_per_op"], m0["cycles_per_op"]),
                    ratio(b1["cycles_per_op"], b0["cycles_per_op"]),
                    ratio(m1["alloc"], m0["alloc"]), ratio(m1["free"], m0["free"]),
                    ratio(m1["realloc"], m0["realloc"]),
                    ratio(m1["p50_alloc"], m0["p50_alloc"]), ratio(m1["p50_free"], m0["p50_free"]),
                    ratio(m1["op_s"], m0["op_s"]),
                    ratio(m1["wall_s"], m0["wall_s"]), ratio(m1["cpu"], m0["cpu"]),
                    ratio(m1["rss_kib"], m0["rss_kib"])))
                summary.setdefault("replay_op_s_ratio", []).append(m1["op_s"] / m0["op_s"])
                summary.setdefault("replay_free_ratio", []).append(m1["free"] / m0["free"])
                summary.setdefault("replay_alloc_ratio", []).append(m1["alloc"] / m0["alloc"])
                summary.setdefault("replay_cpu_ratio", []).append(m1["cpu"] / m0["cpu"])
        L.append("")
    same = True
    if res["programs"]:
        L += ["## Real programs", "",
              "| program | library | offload | wall s | CPU s (user+sys) | user s | sys s | "
              "peak RSS MiB |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for pname, byl in res["programs"].items():
            for lname, byo in byl.items():
                row = {}
                outs = set()
                for of in ("0", "1"):
                    rs = byo[of]
                    outs |= {x["out"] for x in rs}
                    m = {k: benchlib.median([x[k] for x in rs])
                         for k in ("wall", "cpu", "user", "sys", "rss_kib")}
                    row[of] = m
                    L.append("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.1f |" % (
                        pname, lname, "on" if of == "1" else "off", m["wall"], m["cpu"],
                        m["user"], m["sys"], m["rss_kib"] / 1024))
                if len(outs) != 1:
                    same = False
                L.append("| | | **on/off** | %s | %s | %s | %s | %s |" % (
                    ratio(row["1"]["wall"], row["0"]["wall"]),
                    ratio(row["1"]["cpu"], row["0"]["cpu"]),
                    ratio(row["1"]["user"], row["0"]["user"]),
                    ratio(row["1"]["sys"], row["0"]["sys"]),
                    ratio(row["1"]["rss_kib"], row["0"]["rss_kib"])))
                summary.setdefault("program_wall_ratio", []).append(
                    row["1"]["wall"] / row["0"]["wall"])
                summary.setdefault("program_cpu_ratio", []).append(
                    row["1"]["cpu"] / row["0"]["cpu"])
                summary.setdefault("program_rss_ratio", []).append(
                    row["1"]["rss_kib"] / row["0"]["rss_kib"])
        L += ["", "Output the same with offload on and off, every program and library: %s." % (
            "yes" if same else "NO"), ""]
    if summary:
        L += ["## Summary (geometric means of the on/off ratios above)", ""]
        for k, v in summary.items():
            g = summary[k] = benchlib.geomean(v)
            L.append("- %s: %.2f× (%d pairs)" % (k.replace("_", " "), g, len(v)))
        L.append("")
    text = "\n".join(L)
    print(text)
    for kind in res["programs"].values():
        for byo in kind.values():
            for rs in byo.values():
                for x in rs:
                    x.pop("out", None)
    benchlib.write_results(b, "offload", text, dict(
        reps=a.reps, cpus=os.cpu_count(), elapsed_s=elapsed, results=res, summary=summary,
        same_output=same))
    if not same:
        raise SystemExit("offload.py: a program's output changed with DMM_OFFLOAD=1")


if __name__ == "__main__":
    main()
