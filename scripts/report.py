#!/usr/bin/env python3
"""report.py - `dmm report DIR`: one Markdown report, with pictures, of what
`make bench` or `make evolve` measured.

    python3 scripts/report.py [--dmm PATH] DIR   (what `dmm report DIR` runs)

DIR is either
  - a bench directory (build/bench: peers.json and peers.md from
    bench/peers.py, tracer_overhead.md, sim_speed.md, evolved_speed.md), for
    which it writes DIR/report.md and DIR/plots/: for every trace the memory
    held over the run by each allocator against the bytes requested, the
    latency histograms, the time-memory plane, the request sizes and the
    search's convergence; across traces the time-memory plane of the
    geometric means; then the tables of every benchmark, the real-time view
    (best and worst call, calls over 100x the best, wastage) and the
    simulator's fidelity; or
  - an evolve directory (build/evolve/NAME, with best.dmm and
    references.csv): the report of that search (scripts/evolve_report.py)
    is written again, with its pictures; for the directory of a plain
    `dmm evolve --out DIR`, written for the first time, the dmm at --dmm
    PATH (the one that runs this script) reading the trace again.

Exit status: 0 when the report and every picture were written; 1 when a
picture could not be drawn (the report says which and why); 2 for a DIR
with neither kind of results.  Standard library only; gnuplot draws."""
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plots  # noqa: E402

# further benchmarks of make bench, included as they are when present
EXTRA = [("fastpath.md", "Fast paths: instructions per malloc + free pair"),
         ("programs.md", "Real programs on their own evolved allocator"),
         ("bounds.md", "What bounds each real program"),
         ("evolve_speed.md", "How long the search takes: dmm evolve on real programs' traces"),
         ("tune_glibc.md", "Tuning glibc's malloc instead: dmm tune-glibc"),
         ("offload.md", "Frees offloaded to a helper thread: DMM_OFFLOAD"),
         ("mdriver.md", "mdriver's score for every allocator: dmm replay --mdriver"),
         ("latency.md", "The costliest single call: dmm replay --runs")]


def die(msg):
    print("dmm report: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def sections(md, level):
    """{heading: [lines]} of the headings of `level` (## or ###) in md, in
    order, each with the lines up to the next heading of that level or
    above."""
    out, cur = {}, None
    for line in md.splitlines():
        m = re.match(r"^(#+) (.*)$", line)
        if m and len(m.group(1)) <= len(level):
            cur = None
            if m.group(1) == level:
                cur = m.group(2).strip()
                out[cur] = []
                continue
        if cur is not None:
            out[cur].append(line)
    return out


def demote(lines, by=1):
    """Headings one (or `by`) level deeper, so an included file nests."""
    return [("#" * by + l) if l.startswith("#") else l for l in lines]


def body(md):
    """md without its first-level title."""
    lines = md.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return lines


def cmd_out(args):
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=20)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def machine_lines(peers):
    cpu = None
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = None
    for line in (read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
            break
    glibc = (cmd_out(["ldd", "--version"]) or "").splitlines()
    pk = cmd_out(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "libjemalloc2",
                  "libmimalloc2.0", "libtcmalloc-minimal4", "gnuplot-nox", "heaptrack"])
    rev = cmd_out(["git", "-C", os.path.dirname(HERE), "describe", "--always", "--dirty"])
    w = ["- CPU: %s, %d online; memory %.1f GiB" % (cpu or "?", os.cpu_count() or 0,
                                                     (mem or 0) / 2 ** 30),
         "- kernel: %s %s" % (platform.system(), platform.release()),
         "- C library: %s" % (glibc[0] if glibc else "?"),
         "- compiler: %s" % ((cmd_out(["cc", "--version"]) or "?").splitlines()[0]),
         "- Python %s; %s" % (platform.python_version(),
                              (cmd_out(["gnuplot", "--version"]) or "no gnuplot"))]
    if pk:
        w.append("- packages: " + "; ".join(pk.splitlines()))
    if rev:
        w.append("- dmm: git %s" % rev)
    if peers and peers.get("machine"):
        w.append("- as bench/peers.py saw it: %s, started %s" % (peers["machine"], peers.get("started")))
    return w


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def realtime_table(t):
    """The real-time view (realtime-smartphone-allocator paper): best and
    worst call, calls over 100x the best, peak requested, peak held and
    wastage, medians over the repetitions (best: the minimum); the allocators
    in bench/peers.py's order."""
    lines = ["| allocator | best call ns | worst call ns | calls > 100× best | p99.9 ns | "
             "peak requested | peak held | wastage (held − requested) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    order = t.get("allocators", [])
    for a in [x for x in order if x in t["runs"]] + [x for x in t["runs"] if x not in order]:
        rs = t["runs"][a]
        if not rs:
            continue
        best = min(r["best_ns"] for r in rs)
        lines.append("| %s | %.1f | %.0f | %d | %.0f | %s | %s | %s |" % (
            a, best, med([r["worst_ns"] for r in rs]), med([r["over_100x_best"] for r in rs]),
            med([r["latency"]["all"]["p999_ns"] for r in rs]),
            plots.human(rs[0]["peak_requested_bytes"]),
            plots.human(med([r["peak_held_bytes"] for r in rs])),
            plots.human(med([r["wastage_bytes"] for r in rs]))))
    return lines


class Report:
    def __init__(self, d):
        self.dir = d
        self.plotdir = os.path.join(d, "plots")
        self.failed = []
        self.drawn = 0

    def picture(self, fn, name, *args):
        """Draw one picture; the Markdown that shows it (or says why not)."""
        lines, err = plots.picture(self.plotdir, fn, name, *args)
        if err:
            self.failed.append("%s: %s" % (name, err))
        elif lines:
            self.drawn += 1
        return lines


def programs_plane(d):
    """[(allocator, time / glibc, peak RSS / glibc)], geometric means over
    the programs of programs.json (bench/programs.py); [] without it."""
    path = os.path.join(d, "programs.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = json.load(f).get("rows", [])
    ratios = {}
    for r in rows:
        base = r["median"].get("glibc")
        if not base or not base.get("wall") or not base.get("rss"):
            continue
        for a, m in r["median"].items():
            ratios.setdefault(a, []).append((m["wall"] / base["wall"], m["rss"] / base["rss"]))

    def gm(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs))
    return [(a, gm([t for t, _ in v]), gm([m for _, m in v])) for a, v in ratios.items() if v]


def bench_report(d):
    peers_md = read(os.path.join(d, "peers.md"))
    peers = None
    if os.path.exists(os.path.join(d, "peers.json")):
        with open(os.path.join(d, "peers.json")) as f:
            peers = json.load(f)
    tracer = read(os.path.join(d, "tracer_overhead.md"))
    simspeed = read(os.path.join(d, "sim_speed.md"))
    evspeed = read(os.path.join(d, "evolved_speed.md"))
    extra = [(title, read(os.path.join(d, f))) for f, title in EXTRA]
    extra = [(t, md) for t, md in extra if md]
    if not (peers or tracer or simspeed or evspeed or extra):
        die("%s holds no results of make bench (peers.json, tracer_overhead.md, sim_speed.md, "
            "evolved_speed.md) and no make evolve result (best.dmm)" % d)
    os.makedirs(os.path.join(d, "plots"), exist_ok=True)
    R = Report(d)
    out = []
    w = out.extend
    w(["# dmm: measured against the world", "",
       "Generated %s by `dmm report %s` from what `make bench` wrote there. Every table is a "
       "measurement of this machine, in one run, with interleaved repetitions; every picture has "
       "its data and gnuplot script beside it in `plots/`." % (
           datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), d), ""])
    w(["## What was run, and on what", ""] + machine_lines(peers) + [""])
    w(["`make bench` runs, in order: `bench/tracer_overhead.py` (the tracer against plain runs, "
       "heaptrack and glibc's mtrace), `bench/sim_speed.py` (operations per second of `dmm sim`), "
       "`bench/evolved_speed.py` (the bundled workload on glibc, libdmm.so and "
       "libdmm_evolved.so), `bench/peers.py` (every trace replayed by `dmm replay` under every "
       "allocator%s), `bench/fastpath.py` (instructions per malloc + free pair, callgrind), "
       "`bench/programs.py` (real programs on their own evolved library against glibc, "
       "jemalloc, mimalloc and tcmalloc), `bench/bounds.py` (what bounds each of them), "
       "`bench/tune_glibc.py` (glibc's tunables searched per program, then the "
       "real programs run with them) and `bench/offload.py` (DMM_OFFLOAD on and off), then this "
       "report. Ratios are to glibc; F_real = ½·t/t_glibc + "
       "½·rss/rss_glibc, the paper's equation 1 on measured time and peak RSS." % (
           "" if not peers else ", %d repetitions, a `dmm evolve --time %s` search per trace" % (
               peers.get("reps", 0), peers.get("evolve_time_s"))), ""])
    toc = ["## Contents", ""]
    if peers:
        toc += ["- [Side by side across traces](#side-by-side-across-traces)",
                "- [Per trace](#per-trace): " + ", ".join(
                    "[%s](#trace-%s)" % (n, n.lower()) for n in peers["traces"]),
                "- [Simulator fidelity](#simulator-fidelity)"]
    if tracer:
        toc.append("- [Tracer overhead](#tracer-overhead)")
    if simspeed:
        toc.append("- [Simulator speed](#simulator-speed)")
    if evspeed:
        toc.append("- [libdmm_evolved.so on the bundled workload](#libdmm_evolvedso-on-the-bundled-workload)")
    for title, _ in extra:
        toc.append("- " + title)
    w(toc + [""])

    if peers:
        psec = sections(peers_md or "", "##")
        w(["## Side by side across traces", ""])
        w(psec.get("Summary across traces (geometric means)", []))
        pts = [(a, v["time_ratio"], v["rss_ratio"]) for a, v in peers.get("summary", {}).items()]
        w(R.picture(plots.time_memory_plane, "plane_all",
                    "every allocator, geometric mean over %d traces" % len(peers["traces"]), pts))
        w(["## Per trace", ""])
        per = sections("\n".join(["## x"] + psec.get("Per trace", [])), "###")
        for name, t in peers["traces"].items():
            w(['<a id="trace-%s"></a>' % name.lower(), "", "### %s" % name, ""])
            w(per.get(name, ["(no table: peers.md is missing)"]))
            series = [(a, os.path.join(t["series_dir"], a + ".csv")) for a in t["allocators"]] \
                if t.get("series_dir") else []
            w(R.picture(plots.memory_over_time, "mem_" + plots._fname(name),
                        "%s: memory held over the run, each allocator, and the bytes requested" % name,
                        series))
            hists = [(a, t["runs"][a][0].get("latency_histogram", {}).get("all"))
                     for a in t["allocators"] if t["runs"].get(a)]
            w(R.picture(plots.latency_histograms, "lat_" + plots._fname(name),
                        "%s: latency of every call (first repetition)" % name, hists))
            fr = t.get("f_real", {})
            w(R.picture(plots.time_memory_plane, "plane_" + plots._fname(name),
                        "%s: time and peak RSS against glibc" % name,
                        [(a, v["time_ratio"], v["rss_ratio"]) for a, v in fr.items()]))
            if t.get("stats_json") and os.path.exists(t["stats_json"]):
                with open(t["stats_json"]) as f:
                    st = json.load(f)
                w(R.picture(plots.size_distribution, "sizes_" + plots._fname(name),
                            "%s: requested sizes (%d distinct)" % (
                                name, st.get("sizes", {}).get("distinct", 0)),
                            st.get("histogram", [])))
            ev = t.get("evolve") or {}
            if ev.get("log") and os.path.exists(ev["log"]):
                w(R.picture(plots.convergence, "ge_" + plots._fname(name),
                            "%s: the search for libdmm_evolved.so (dmm evolve)" % name, ev["log"]))
            w(["#### Real-time view", "",
               "After the real-time allocator paper: the fastest and slowest single call, how many "
               "calls took over 100× the fastest, and memory wastage = peak held − peak requested "
               "(held: the replay's anonymous resident memory above its level before the replay; the "
               "picture above shows both over the run).", ""] + realtime_table(t) + [""])
        w(["## Simulator fidelity", ""])
        fid_lines = psec.get("Simulator fidelity", [])
        w(demote(fid_lines, 1))
        if peers.get("failures"):
            w(["## Failures", ""] + ["- " + f for f in peers["failures"]] + [""])
    if tracer:
        w(["## Tracer overhead", ""] + demote(body(tracer), 1) + [""])
    if simspeed:
        w(["## Simulator speed", ""] + demote(body(simspeed), 1) + [""])
    if evspeed:
        w(["## libdmm_evolved.so on the bundled workload", ""] + demote(body(evspeed), 1) + [""])
    for title, md in extra:
        w(["## " + title, ""] + demote(body(md), 1) + [""])
        if title.startswith("Real programs"):
            w(R.picture(plots.time_memory_plane, "plane_programs",
                        "real programs: each allocator, geometric mean over the programs",
                        programs_plane(d)))
    if R.failed:
        w(["## Pictures not drawn", ""] + ["- " + f for f in R.failed] + [""])
    path = os.path.join(d, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("dmm report: wrote %s (%d pictures in %s%s)" % (
        path, R.drawn, R.plotdir, "; %d not drawn" % len(R.failed) if R.failed else ""))
    return 1 if R.failed else 0


def main():
    args = sys.argv[1:]
    dmm = "dmm"
    if len(args) == 3 and args[0] == "--dmm":
        dmm, args = args[1], args[2:]
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: dmm report DIR\n\n"
              "  DIR  build/bench (after make bench) or build/evolve/NAME (after make evolve):\n"
              "       writes DIR/report.md and its pictures in DIR/plots/", file=sys.stderr)
        sys.exit(2 if args and args[0] not in ("-h", "--help") else 0)
    d = os.path.abspath(args[0])
    if not os.path.isdir(d):
        die("%s is not a directory" % args[0])
    if os.path.exists(os.path.join(d, "best.dmm")) and os.path.exists(os.path.join(d, "references.csv")):
        import evolve_report
        sys.exit(evolve_report.regenerate(d, dmm))
    sys.exit(bench_report(d))


if __name__ == "__main__":
    main()
