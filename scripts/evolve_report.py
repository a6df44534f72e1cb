#!/usr/bin/env python3
"""evolve_report.py - the report of one `make evolve` run (build/evolve/NAME/report.md).

Reads, from --dir, what dmm wrote: stats.json (dmm stats --json), search.json
(dmm evolve: the search, and F, T and M of the best DMM), references.csv (F, T
and M of the presets), sim.json (dmm sim --json of best.dmm: T, M, its title,
each allocator's fields and share), best.dmm (shown as it is) and, when
present, log.csv.  Every number is dmm's; none is computed again here.
Writes report.md there with

  - the paper's Table 2 row for the trace;
  - the Table 3/4-style comparison: GEA (best.dmm) against KNG, LEA, FIB,
    S10 and EXA in F, T and M, with the paper's improvement
    100 * (X* - X_GEA) / X*;
  - the DMM map in the paper's Table 1 layout, with each allocator's share
    of the requests;
  - the line that runs the traced program on libdmm_evolved.so;
  - two pictures in plots/: the search's convergence (best and mean F per
    generation) and the request-size distribution; and a link to the
    side-by-side measurements of `make bench` (BUILD/bench/report.md).

The arguments are saved in meta.json, so `dmm report DIR` (scripts/report.py)
writes the same report again later.  The directory of a plain `dmm evolve
--out DIR` (no make evolve, as after make install) has no meta.json: its
report is written from search.json's trace, read again by dmm stats and dmm
sim of best.dmm, and says how to run the program on best.dmm with libdmm.so.

Paths in the report name --final-dir, where the directory will live.  When
the trace came from a directory of `dmm record` (record.json beside the
rest: the directory and the command dmm record ran, which
`evolve_report.py --recorded DIR` writes from `dmm record --root DIR` on its
standard input), the lines that run the program run that command, whose
processes all get the library, where the process picked is one it
started."""
import argparse
import csv
import json
import os
import re
import shlex
import subprocess
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plots  # noqa: E402

def read_refs(path):
    """references.csv: {name: dict(T, M, F)}, in dmm's order."""
    refs = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            row = {k.strip().lower(): v.strip() for k, v in row.items() if k}
            refs[row["name"].lower()] = dict(T=float(row["t"]), M=float(row["m"]),
                                             F=float(row["f"]))
    return refs


def pct(ref, gea):
    return "%.2f%%" % (100.0 * (ref - gea) / ref) if ref else "n/a"


def last_log_row(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        return rows[-1] if rows else None
    except OSError:
        return None


def regenerate(d, dmm="dmm"):
    """The report of d again, from the arguments saved in d/meta.json, or
    for a plain dmm evolve directory, from its search.json."""
    try:
        with open(os.path.join(d, "meta.json")) as f:
            m = json.load(f)
    except FileNotFoundError:
        return bare_report(d, dmm)
    except (OSError, ValueError) as e:
        print("dmm report: %s: no usable meta.json (%s); run make evolve again" % (d, e),
              file=sys.stderr)
        return 2
    return write_report(d, d, m["trace"], m["name"], m.get("seconds"), m.get("build", "build"),
                        m.get("real_peak"), m.get("bench_report"), quiet=True,
                        bare=m.get("bare", False))


def bare_report(d, dmm):
    """The report of `dmm evolve --out d TRACE`: stats.json and sim.json made
    with dmm from the trace search.json names (as given to dmm evolve: from
    the working directory, else beside d)."""
    try:
        with open(os.path.join(d, "search.json")) as f:
            trace = json.load(f)["trace"]
    except (OSError, ValueError, KeyError) as e:
        print("dmm report: %s: neither meta.json (make evolve) nor a usable search.json "
              "(dmm evolve): %s" % (d, e), file=sys.stderr)
        return 2
    tries = [trace] if os.path.isabs(trace) else [trace, os.path.join(os.path.dirname(d), trace)]
    found = next((t for t in tries if os.path.isfile(t)), None)
    if not found:
        print("dmm report: %s: the trace of this search, %s, is not there any more" % (
            d, " or ".join(tries)), file=sys.stderr)
        return 2
    found = os.path.abspath(found)
    for out, args in (("stats.json", ["stats", "--json", found]),
                      ("sim.json", ["sim", "--json", "--dmm", os.path.join(d, "best.dmm"), found])):
        try:
            p = subprocess.run([dmm] + args, capture_output=True, text=True)
        except OSError as e:
            print("dmm report: cannot run %s: %s" % (dmm, e.strerror), file=sys.stderr)
            return 2
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            print("dmm report: dmm %s failed" % " ".join(args), file=sys.stderr)
            return 2
        with open(os.path.join(d, out), "w") as f:
            f.write(p.stdout)
    name = os.path.splitext(os.path.basename(found))[0] or "trace"
    return write_report(d, d, found, name, None, None, None, None, quiet=True, bare=True)


def measured_section(d, w):
    """Predicted against measured rank of each candidate (measured.json of
    scripts/measure_candidates.py), when make evolve measured them."""
    path = os.path.join(d, "measured.json")
    if not os.path.exists(path):
        return
    m = json.load(open(path))
    w("## Chosen by measurement")
    w("")
    if m.get("run"):
        run_section(m, w)
        return
    prog = m.get("program") or {}
    if prog.get("D_s") and "F_replay" in m["candidates"][0]:
        scale = ("; F_meas weighs them as the recorded program would see them, "
                 "½·(1 + (time − time_glibc)/D) + ½·(R + heap)/(R + heap_glibc), with D = %.3f s "
                 "%s and R = %.1f MB its memory outside glibc's heap%s" % (
                     prog["D_s"], "its CPU time (its threads' calls replayed one at a time: the "
                     "CPU time they take)" if prog.get("D_is_cpu") else "its run",
                     prog["outside_heap_bytes"] / 1e6,
                     "" if prog.get("peak_rss_bytes") else
                     " (the trace does not say its peak RSS: R = 0, and F_meas is F_replay "
                     "where it has no clock either)"))
    else:   # a measured.json of before the program's scale
        scale = ""
    nlean = sum(1 for c in m["candidates"] if c["name"].startswith("lean-"))
    lean = (", %d lean design%s (the least weighted sum of time and memory for a weight of "
            "memory above eq. 1's: lean-N.dmm)" % (nlean, "" if nlean == 1 else "s")) if nlean else ""
    w("The search's %d best distinct designs%s and the five presets, each compiled and the trace "
      "replayed under it for real (`dmm replay`, %d interleaved rounds, medians), against glibc: "
      "F_replay = ½·time/time_glibc + ½·heap/heap_glibc (time: the replay's window, its calls and "
      "payload writes with the page faults they take; heap: the replay's peak RSS above the RSS "
      "at the start of glibc's replay window)%s. Built: **%s**." % (
          sum(1 for c in m["candidates"] if re.match(r"top-[0-9]+$", c["name"])), lean, m["reps"], scale,
          m["chosen"]))
    candidates_table(m, w, ["heap vs glibc", "F_replay", "F_meas"],
                     lambda c: "%.3f | %.4f | %.4f" % (c["heap_vs_glibc"],
                                                       c.get("F_replay", c["F_meas"]), c["F_meas"]))
    standing(m, w)


def candidates_table(m, w, cols, values):
    """Each measured candidate, best measured first: its predicted F and
    rank, time against glibc's, the columns cols (values(c) gives them),
    its measured rank; then what was left out."""
    w("")
    w("| candidate | predicted F | predicted rank | time vs glibc | %s | measured rank |" %
      " | ".join(cols))
    w("|---|---:|---:|---:|%s---:|" % ("---:|" * len(cols)))
    for c in sorted(m["candidates"], key=lambda c: c["measured_rank"]):
        w("| %s%s | %.4f | %d | %.3f | %s | %d |" % (
            c["name"], " (built)" if c["name"] == m["chosen"] else "", c["predicted_F"],
            c["predicted_rank"], c["time_vs_glibc"], values(c), c["measured_rank"]))
    if m.get("errors"):
        w("")
        w("Left out: " + "; ".join(m["errors"]))
    w("")


def run_section(m, w):
    """measured_section's table when make evolve measured the candidates on
    the program itself (RUN=)."""
    nlean = sum(1 for c in m["candidates"] if c["name"].startswith("lean-"))
    cmd = " ".join(shlex.quote(x) for x in
                   ["%s=%s" % kv for kv in sorted((m.get("run_env") or {}).items())] + m["run"])
    w("The search's %d best distinct designs%s and the five presets, each compiled, and the "
      "program itself run under glibc and under each (`RUN=%s`, %d interleaved rounds, medians%s): "
      "F_real = ½·time/time_glibc + ½·peak RSS/peak RSS_glibc. Built: **%s**." % (
          sum(1 for c in m["candidates"] if re.match(r"top-[0-9]+$", c["name"])),
          " and %d lean one%s" % (nlean, "" if nlean == 1 else "s") if nlean else "", cmd,
          m["reps"], "" if m.get("outputs_compared", True) else
          "; its output varies under glibc itself, so outputs were not compared", m["chosen"]))
    candidates_table(m, w, ["peak RSS vs glibc", "F_real"],
                     lambda c: "%.3f | %.4f" % (c["heap_vs_glibc"], c["F_meas"]))
    standing(m, w)


def standing(m, w):
    """How the built design stands against glibc (measured.json's
    against_glibc and verdict, measure_candidates.py's), when it says."""
    if m.get("verdict"):
        v = m["verdict"]
        w("**Against glibc: %s.** %s." % (
            m["against_glibc"], v if v.startswith("glibc") else v[:1].upper() + v[1:]))
        w("")


def traces_section(d, w):
    """Several traces, or held-out ones (traces.csv of dmm evolve): the best
    design on each, seen against unseen."""
    path = os.path.join(d, "traces.csv")
    if not os.path.exists(path):
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    search = json.load(open(os.path.join(d, "search.json")))
    best = search.get("best") or {}
    seen = [r for r in rows if r["role"] == "seen"]
    w("## Seen against unseen traces")
    w("")
    w("The search scored every design on the %d trace%s it saw, each against that trace's own "
      "KNG and LEA (eq. 1), and ranked by the %s (mean F %.4f, worst %.4f for the best); a "
      "held-out trace it never saw tests whether the design is fitted to its inputs or "
      "robust. Each row: the search's best on that trace, and the best of the five presets "
      "there." % (len(seen), "" if len(seen) == 1 else "s",
                  search.get("parameters", {}).get("aggregate", "mean"),
                  best.get("F_mean", float("nan")), best.get("F_worst", float("nan"))))
    w("")
    w("| trace | role | operations | F | T | M | best preset | its F |")
    w("|---|---|---:|---:|---:|---:|---|---:|")
    for r in rows:
        w("| %s | %s | %s | %.4f | %s | %s | %s | %.4f |" % (
            r["trace"], "**held out**" if r["role"] == "holdout" else "seen", r["operations"],
            float(r["F"]), r["T"], r["M"], r["best_preset"].upper(), float(r["F_best_preset"])))
    w("")


def front_section(d, w, out, errors):
    """dmm evolve --objectives: the front (front.csv), its picture, and which
    design was built (picked.txt of scripts/evolve.sh: PICK, or the knee)."""
    path = os.path.join(d, "front.csv")
    if not os.path.exists(path):
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    picked = None
    try:
        picked = open(os.path.join(d, "picked.txt")).read().strip() or None
    except OSError:
        pass
    front = [r for r in rows if r["kind"] in ("front", "knee")]
    w("## The Pareto front")
    w("")
    w("A search over several objectives (`--objectives`, NSGA-II): the %d designs that no other "
      "design of the run beats in every objective, by time; T/T_KNG, M/M_LEA and W/W_KNG as the "
      "search compared them (W: the costliest single operation, P: the 99.9th percentile of "
      "single operations, both in cost units), eq. 1's F beside. The knee is the design nearest the ideal point; `make evolve OBJECTIVES=... "
      "PICK=N` builds front-N.dmm instead.%s" % (
          len(front), " Built: **%s**." % picked if picked else ""))
    w("")
    w("| design | time | memory | worst | p99.9 | F (eq. 1) | T | M | W | P |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        label = r["name"]
        if r["kind"] == "knee":
            label += " (knee)"
        elif r["kind"] == "preset":
            label = r["name"].upper()
        elif r["kind"] == "weighted-sum":
            label = "eq. 1's winner (best.dmm)"
        if picked and r["name"] == picked:
            label = "**%s, built**" % label
        w("| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %s | %s | %s |" % (
            label, float(r["time"]), float(r["memory"]), float(r["worst"]), float(r["p999"]),
            float(r["F"]), r["T"], r["M"], r["W"], r["P"]))
    md, err = plots.picture(os.path.join(d, "plots"), plots.pareto_front, "front",
                            "Pareto front: time against memory (%d designs)" % len(front), path,
                            picked)
    w("")
    out.extend(md)
    errors += [str(err)] if err else []
    w("")


def main():
    if sys.argv[1:2] == ["--recorded"] and len(sys.argv) == 3:
        root = sys.stdin.read().strip()
        if not root or "\n" in root:
            sys.exit(1)
        print(json.dumps(dict(dir=sys.argv[2], command=root)))
        return
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--final-dir")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--build", default="build", help="the build directory, as the user names it")
    ap.add_argument("--real-peak", type=int,
                    help="peak footprint of the traced program run on the library (DMM_STATS=1)")
    ap.add_argument("--bench-report", help="where make bench writes its report")
    a = ap.parse_args()
    return write_report(a.dir, os.path.abspath(a.final_dir or a.dir), a.trace, a.name, a.seconds,
                        a.build, a.real_peak, a.bench_report)


def write_report(d, final, trace, name, seconds, build, real_peak, bench_report, quiet=False,
                 bare=False):
    """bare: d is a plain dmm evolve's (no library built, no make)."""
    a = types.SimpleNamespace(trace=trace, name=name, seconds=seconds, build=build,
                              real_peak=real_peak)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(dict(trace=trace, name=name, seconds=seconds, build=build, real_peak=real_peak,
                       bench_report=bench_report, bare=bare), f, indent=1)

    stats = json.load(open(os.path.join(d, "stats.json")))
    refs = read_refs(os.path.join(d, "references.csv"))
    sim = json.load(open(os.path.join(d, "sim.json")))["dmms"][0]
    search = json.load(open(os.path.join(d, "search.json")))
    log = last_log_row(os.path.join(d, "log.csv"))

    title = sim.get("title", "")
    T, M, F = float(sim["t"]), float(sim["m"]), float(search["best"]["F"])
    got = re.search(r"\bfitness=([0-9.eE+-]+)", title)
    if got:   # the built design's own F (chosen by measurement or from the front)
        F = float(got.group(1))
    out = []
    w = out.append
    w("# dmm evolve: %s" % a.name)
    w("")
    w("Trace: `%s`" % a.trace)
    cmd = stats.get("trace", {}).get("command", "")
    run_cmd = cmd
    rec = os.path.join(d, "record.json")
    rec = json.load(open(rec)) if os.path.exists(rec) else {}
    if cmd and rec.get("command") and rec["command"] != cmd:
        # a process that the recorded command started: that command runs
        # it, on the library (LD_PRELOAD reaches every process it starts)
        run_cmd = rec["command"]
        w("Program: `%s`, a process of `%s` (recorded by `dmm record` into `%s`)" % (
            cmd, run_cmd, rec["dir"]))
    elif cmd:
        w("Program: `%s`" % cmd)
    chosen = os.path.join(d, "chosen.dmm")
    built = "chosen.dmm" if os.path.exists(chosen) else "best.dmm"
    if title:
        w("Built DMM: `%s` — `%s`" % (os.path.join(final, built), title))
    if built == "chosen.dmm":
        w("The search's best: `%s` — `%s`" % (os.path.join(final, "best.dmm"),
                                               open(os.path.join(d, "best.dmm")).readline()
                                               .lstrip("# ").strip()))
    facts = []
    par = search.get("parameters", {})
    for label, v in (("population", par.get("population")),
                     ("generations", search.get("generations_run", par.get("generations"))),
                     ("seed", search.get("seed")), ("evaluations", search.get("evaluations")),
                     ("cache hits", search.get("cache_hits")),
                     ("simulations", search.get("simulations")),
                     ("seconds", search.get("seconds")), ("stopped", search.get("stopped"))):
        if isinstance(v, (int, float, str)):
            facts.append("%s %s" % (label, v))
    if not facts and log:
        facts = ["%s %s" % (k, log[k]) for k in ("generation", "evaluations", "cache_hits",
                                                 "seconds") if k in log]
    if facts:
        w("Search: " + ", ".join(facts))
    cl = search.get("climb")
    if isinstance(cl, dict):
        w("Climb (`dmm evolve --climb`): F %.6f → %.6f in %d steps from %d start%s, %d "
          "neighbours (%d simulated), %.1f s" % (
              cl.get("F_start", 0), cl.get("F", 0), cl.get("steps", 0), cl.get("starts", 0),
              "" if cl.get("starts") == 1 else "s", cl.get("neighbours", 0),
              cl.get("simulations", 0), cl.get("seconds", 0)))
    if a.seconds is not None:
        w("Pipeline time (record, stats, grammar, search, codegen, build): %.1f s" % a.seconds)
    w("")

    t2 = stats["table2"]
    w("## What the program asks for (the paper's Table 2)")
    w("")
    w("| benchmark | objects | total memory (bytes) | max in use (bytes) | average size (bytes) | memory ops |")
    w("|---|---:|---:|---:|---:|---:|")
    w("| %s | %d | %d | %d | %.2f | %d |" % (a.name, t2["objects"], t2["total_memory"],
                                            t2["max_in_use"], t2["average_size"],
                                            t2["memory_ops"]))
    w("")
    errors = []
    md, err = plots.picture(os.path.join(d, "plots"), plots.size_distribution, "sizes",
                            "%s: requested sizes (%d distinct)" % (
                                a.name, stats.get("sizes", {}).get("distinct", 0)),
                            stats.get("histogram", []))
    out.extend(md)
    errors += [str(err)] if err else []

    w("## GEA against the general-purpose DMMs (the paper's Tables 3 and 4)")
    w("")
    w("F = 0.5·T/T_KNG + 0.5·M/M_LEA (eq. 1); T counted cost, M peak footprint, both from "
      "`dmm sim`. Improvement = 100·(X* − X_GEA)/X*: positive means GEA is better.")
    w("")
    w("| DMM | F | T (cost units) | M (bytes) | F impr. | T impr. | M impr. |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    w("| **GEA** | **%.4f** | **%d** | **%d** (%s) | | | |" % (F, T, M, plots.human(M)))
    gains = {"F": [], "T": [], "M": []}
    for r, x in refs.items():
        for k, g in (("F", F), ("T", T), ("M", M)):
            if x[k]:
                gains[k].append(100.0 * (x[k] - g) / x[k])
        w("| %s | %.4f | %d | %d (%s) | %s | %s | %s |" % (
            r.upper(), x["F"], x["T"], x["M"], plots.human(x["M"]), pct(x["F"], F),
            pct(x["T"], T), pct(x["M"], M)))
    if gains["F"]:
        w("| average | | | | %.2f%% | %.2f%% | %.2f%% |" % tuple(
            sum(gains[k]) / len(gains[k]) for k in "FTM"))
    w("")

    md, err = plots.picture(os.path.join(d, "plots"), plots.convergence, "convergence",
                            "%s: best and mean F per generation" % a.name,
                            os.path.join(d, "log.csv"))
    out.extend(md)
    errors += [str(err)] if err else []

    fallback = sim.get("fallback_served", 0)
    total = sum(al["served"] for al in sim["allocators"]) + fallback
    w("## The DMM map (the paper's Table 1 layout)")
    w("")
    w("```")
    for al in sim["allocators"]:
        extra = ", lists=%s" % al["lists"] if "lists" in al else ""
        w("%s, split=%s, coalesce=%s%s    serves %d requests (%.2f%%)" % (
            al["paper_class"], "true" if al["split"] else "false",
            "true" if al["coalesce"] else "false", extra, al["served"],
            100.0 * al["served"] / total if total else 0.0))
        w("  %-16s%-20s%s" % ("Data Structure", "Mechanism(Policy)", "Range (bytes)"))
        w("  %-16s%-20s(%s, %s]" % (al["list"].upper(),
                                     "%s(%s)" % (al["fit"].upper(), al["order"].upper()),
                                     al["lo"], "inf" if al["hi"] is None else al["hi"]))
    w("fallback path (outside every range, aligned > 16)    serves %d requests (%.2f%%)" % (
        fallback, 100.0 * fallback / total if total else 0.0))
    w("```")
    w("")
    w("As `.dmm` text (`%s`):" % os.path.join(final, built))
    w("")
    w("```")
    w(open(os.path.join(d, built)).read().rstrip("\n"))
    w("```")
    w("")
    measured_section(d, w)
    traces_section(d, w)
    front_section(d, w, out, errors)

    w("## Running the program on it")
    w("")
    if bare:
        run_bare(w, final, built, run_cmd)
    else:
        run_built(w, a, final, run_cmd, M, bench_report)
    if errors:
        w("")
        w("Pictures not drawn: " + "; ".join(errors))
    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write(text)
    if quiet:
        print("dmm report: wrote %s" % os.path.join(d, "report.md"))
    else:
        sys.stdout.write(text)
    return 1 if errors else 0


def run_bare(w, final, built, cmd):
    """How to run the program on the design of a plain dmm evolve."""
    w("libdmm.so runs any design as it is, read at start-up:")
    w("")
    w("```")
    w("DMM_CONFIG=%s LD_PRELOAD=libdmm.so %s" % (shlex.quote(os.path.join(final, built)),
                                                cmd if cmd else "./your-program"))
    w("```")
    w("")
    w("`DMM_STATS=1` prints its footprint and each allocator's share at exit. "
      "Compiled into its own library, with the fast paths that libdmm.so's general chain "
      "cannot have:")
    w("")
    w("```")
    w("dmm build %s" % shlex.quote(os.path.join(final, built)))
    w("LD_PRELOAD=%s %s" % (shlex.quote(os.path.join(final, "libdmm_evolved.so")),
                            cmd if cmd else "./your-program"))
    w("```")


def run_built(w, a, final, cmd, M, bench_report):
    """How to run the program on the library make evolve built."""
    lib = os.path.join(final, "libdmm_evolved.so")
    w("The library (`%s`, also `%s/libdmm_evolved.so` until the next `make` rebuilds that "
      "from `codegen/default.dmm`) was compiled from `%s`:" % (lib, a.build, os.path.join(
          final, "dmm_evolved.c")))
    w("")
    w("```")
    run = cmd if cmd else "./your-program"
    w("LD_PRELOAD=%s %s" % (shlex.quote(lib), run))
    w("```")
    w("")
    w("`DMM_STATS=1` prints its footprint and each allocator's share at exit.")
    if a.real_peak:
        w("")
        w("Checked: that command, run on the library with `DMM_STATS=1`, peaked at %d bytes "
          "held from the OS; `dmm sim` predicted M = %d (%+.2f%%)." % (
              a.real_peak, M, 100.0 * (a.real_peak - M) / M if M else 0.0))
    w("")
    w("## Measured side by side")
    w("")
    w("The program itself, on this library and on glibc, jemalloc, mimalloc and tcmalloc, in "
      "interleaved rounds (time, peak RSS, F_real, output compared with glibc's; "
      "`bench/compare.py`):")
    w("")
    w("```")
    w("make compare EVOLVED=%s CMD=%s" % (shlex.quote(final), shlex.quote(run)))
    w("```")
    w("")
    if bench_report and os.path.exists(bench_report):
        w("`make bench` measured the allocators side by side (glibc, jemalloc, mimalloc, tcmalloc, "
          "the five presets, a library evolved per trace) on real traces: [%s](%s)." % (
              bench_report, os.path.relpath(bench_report, final)))
    else:
        w("`make bench` measures this library against glibc, jemalloc, mimalloc, tcmalloc and the "
          "five presets on real traces, with pictures, and writes `%s/bench/report.md`; "
          "`dmm report %s/bench` writes it again." % (a.build, a.build))


if __name__ == "__main__":
    sys.exit(main())
