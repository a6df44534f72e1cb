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
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

OFFLOAD_RE = re.compile(r"DMM_OFFLOAD on: (\d+) frees offloaded, (\d+) synchronous "
                        r"\((\d+) with no helper, (\d+) with the queue full\)")

PY_SCRIPT = r"""
import json
d = {}
for i in range(15000):
    d["k%d" % i] = {"id": i, "name": "item%d" % i,
                   "tags": [i % 7, i % 11, "t%d" % (i % 13)], "v": i * 0.5}
s = json.dumps(d, sort_keys=True)
e = json.loads(s)
del d
l = sorted(e.values(), key=lambda v: (v["tags"][2], -v["id"]))
print(len(s), sum(v["id"] for v in e.values()), l[0]["name"], l[-1]["name"])
"""

SQL = """CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
CREATE INDEX t_k ON t(k);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<40000)
  INSERT INTO t(k,v) SELECT printf('key%08d',(x*7919)%100003), x FROM c;
DELETE FROM t WHERE v % 3 = 0;
SELECT count(*), sum(v), min(k), max(k) FROM t;"""

PERL = r"""
my %h; my $n = 50000;
for my $i (1..$n) { $h{"key$i"} = [$i, "v" x ($i % 17)] }
my $t = 0; $t += $h{$_}[0] for keys %h;
delete $h{"key$_"} for grep { $_ % 2 } 1..$n;
print scalar(keys %h), " $t\n"
"""


def run_measured(argv, env, infile=None):
    """Run argv and take its rusage with wait4 (communicate() would reap it)."""
    fin = open(infile, "rb") if infile else subprocess.DEVNULL
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, stdin=fin, stdout=fo, stderr=fe)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read().decode(errors="replace")
    if infile:
        fin.close()
    if p.returncode != 0:
        raise SystemExit("offload.py: %s exited %d: %s" % (" ".join(argv[:3]), p.returncode,
                                                           err[-500:]))
    return dict(out=out, err=err, wall=wall, cpu=ru.ru_utime + ru.ru_stime,
                user=ru.ru_utime, sys=ru.ru_stime, rss_kib=ru.ru_maxrss)


def offload_counts(err):
    m = OFFLOAD_RE.search(err)
    if not m:
        return None
    return dict(offloaded=int(m.group(1)), synchronous=int(m.group(2)),
                no_helper=int(m.group(3)), queue_full=int(m.group(4)))


def med(v):
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "5")))
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
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("DMM_") and k not in ("LD_PRELOAD", "PYTHONMALLOC")}
    base["LC_ALL"] = "C"
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
            print("offload.py: %s missing (scripts/record_traces.sh); skipped" % p,
                  file=sys.stderr)
    wm_trc = os.path.join(work, "work_media_t2.trc")
    if not os.path.exists(wm_trc):
        env = dict(base, LD_PRELOAD=os.path.join(b, "libdmmtrace.so"), DMM_TRACE_FILE=wm_trc,
                   DMM_TRACE_STACK="0")
        subprocess.run([media, "-t", "2", "-f", "500"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    traces.append(("work_media -t 2", wm_trc))

    sort_in = os.path.join(work, "sort_input.txt")
    if not os.path.exists(sort_in):
        with open(sort_in, "w") as f:
            x = 12345
            for i in range(100000):
                x = (x * 1103515245 + 12345) % 2 ** 32
                f.write("%u line %d %x\n" % (x % 100000, i, x))
    progs = [("python3", ["/usr/bin/python3", "-s", "-c", PY_SCRIPT], {"PYTHONMALLOC": "malloc"},
              None),
             ("sqlite3", ["/usr/bin/sqlite3", ":memory:", SQL], {}, None),
             ("perl", ["/usr/bin/perl", "-e", PERL], {}, None),
             ("sort", ["/usr/bin/sort", "--parallel=1", sort_in], {}, None),
             ("work_media -t 2", [media, "-t", "2", "-f", "1000"], {}, None)]
    progs = [p for p in progs if os.path.exists(p[1][0])]

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
                                      ops=j["ops"], cpu=r["cpu"], proc_wall=r["wall"],
                                      rss_kib=r["rss_kib"],
                                      counts=offload_counts(r["err"])))
        if a.only != "replay":
            for pname, argv, extra, infile in progs:
                for lname, lenv in libs:
                    for of in order:
                        env = dict(base, **extra, **lenv, DMM_OFFLOAD=str(of))
                        r = run_measured(argv, env, infile)
                        e = res["programs"].setdefault(pname, {}).setdefault(
                            lname, {}).setdefault(str(of), [])
                        e.append(dict(wall=r["wall"], cpu=r["cpu"], user=r["user"],
                                      sys=r["sys"], rss_kib=r["rss_kib"],
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
                    m = {k: med([x[k] for x in rs]) for k in
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
                    m = {k: med([x[k] for x in rs]) for k in ("wall", "cpu", "user", "sys",
                                                              "rss_kib")}
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
            g = 1.0
            for x in v:
                g *= x
            g **= 1.0 / len(v)
            summary[k] = g
            L.append("- %s: %.2f× (%d pairs)" % (k.replace("_", " "), g, len(v)))
        L.append("")
    text = "\n".join(L)
    print(text)
    with open(os.path.join(outdir, "offload.md"), "w") as f:
        f.write(text)
    for kind in res["programs"].values():
        for byo in kind.values():
            for rs in byo.values():
                for x in rs:
                    x.pop("out", None)
    with open(os.path.join(outdir, "offload.json"), "w") as f:
        json.dump(dict(reps=a.reps, cpus=os.cpu_count(), elapsed_s=elapsed, results=res,
                       summary=summary, same_output=same), f, indent=1)
    if not same:
        raise SystemExit("offload.py: a program's output changed with DMM_OFFLOAD=1")


if __name__ == "__main__":
    main()
