#!/usr/bin/env python3
"""evolve_speed.py - how long `dmm evolve` takes on real programs' traces,
with and without cutting hopeless candidates short.

    python3 bench/evolve_speed.py [--build B] [--big-entries N] [--budget S] [--quick]

Records, under libdmmtrace.so, the workloads of bench/record_traces.py
(sqlite3, python3, perl) and a big one: python3 with --big-entries (100000)
dict entries, about 11 M allocator operations.  For each trace:

  generation 0 of the paper's search (population 100, 2 jobs), with the
  default --hopeless 1 and with --hopeless 0 (every candidate simulated to
  the end, as the paper did, under a budget of 10x the first run's time
  within [60 s, --nocut-max 1200 s]): seconds, seconds per million
  operations, evaluations per second, hopeless and cut simulations, the
  time the cuts saved by their own estimate, and the best F.  The time to
  load the trace, parsed and from TRACE.ops, is reported too.

Then the paper's full search (population 100, 250 generations, 2 jobs) on
every trace but the big one, with cuts and without (--hopeless 0, under
the same budget as generation 0's): seconds and best F, which the cuts must
not make worse; and on the big trace under a time budget (--budget, 900 s):
whether it finished, the generations it ran, the best F, evaluations per
second, cuts.

--quick: the big trace at 20000 entries and 120 s budgets.  Writes
build/bench/evolve_speed.md and .json."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def load_time(dmm, trc, cache):
    """Seconds for dmm sim to load trc and simulate kng (with or without
    the cache), and the simulation's own seconds from --json."""
    argv = [dmm, "sim", "--dmm", "kng", "--json", "--time", trc]
    if not cache:
        argv.insert(2, "--no-cache")
    r = benchlib.run(argv, benchlib.clean_env())
    wall = r["wall_s"]
    if r["exit"] != 0:
        raise SystemExit("evolve_speed.py: dmm sim failed on %s: %s"
                         % (trc, r["err"][-400:].decode(errors="replace")))
    d = json.loads(r["out"])["dmms"][0]
    sim = d["operations"] / d["simulated_ops_per_s"] if d.get("simulated_ops_per_s") else 0
    return wall - sim


def evolve(dmm, trc, out, extra):
    """dmm evolve -q on trc into out with extra options: search.json's
    numbers and the wall time."""
    argv = [dmm, "evolve", "-q", "--jobs", "2", "--out", out] + extra + [trc]
    r = benchlib.run(argv, benchlib.clean_env())
    wall = r["wall_s"]
    if r["exit"] != 0:
        raise SystemExit("evolve_speed.py: %s failed: %s"
                         % (" ".join(argv), r["err"][-400:].decode(errors="replace")))
    with open(os.path.join(out, "search.json")) as f:
        js = json.load(f)
    js["wall"] = wall
    return js


def gen0_row(name, ops, res):
    h = res["hopeless"]
    more = "> " if res["stopped"] != "completed" else ""
    return "| %s | %.2f | %s%.1f | %s%.1f | %.1f | %d / %d | %d | %.0f | %s |" % (
        name, ops / 1e6, more, res["wall"], more, res["wall"] / (ops / 1e6),
        res["evaluations"] / res["seconds"] if res["seconds"] else 0,
        h["simulations"], res["simulations"], h["cut"], h["seconds_saved"],
        "%.6f" % res["best"]["F"] if res.get("best") else "-")


def main():
    ap = benchlib.parser(__doc__, 1)
    ap.add_argument("--big-entries", type=int, default=100000)
    ap.add_argument("--budget", type=float, default=900)
    ap.add_argument("--nocut-max", type=float, default=1200)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.big_entries, a.budget, a.nocut_max = 20000, 120, 120
    b = os.path.abspath(a.build)
    dmm = os.path.join(b, "dmm")
    work = os.path.join(b, "bench", "evolve_speed")
    os.makedirs(work, exist_ok=True)
    traces = []
    with tempfile.TemporaryDirectory() as tmp:
        wanted = [(n, benchlib.RECORDED[n]) for n in ("sqlite3", "python3", "perl")]
        wanted.append(("python3-big", a.big_entries))
        for name, size in wanted:
            prog = name.split("-")[0]
            argv, extra = benchlib.command(prog, size, tmp)
            if not benchlib.installed(argv[0]):
                print("evolve_speed.py: %s skipped: %s not installed" % (name, argv[0]))
                continue
            trc = os.path.join(work, name + ".trc")
            for old in (trc, trc + ".ops"):
                if os.path.exists(old):
                    os.unlink(old)
            r = benchlib.record(b, trc, argv, extra)
            if r["exit"] != 0:
                raise SystemExit("evolve_speed.py: recording %s failed" % name)
            traces.append((name, trc))

    rows, data = [], {}
    for name, trc in traces:
        parse = load_time(dmm, trc, False)
        first = load_time(dmm, trc, True)     # parses and writes TRACE.ops
        cached = load_time(dmm, trc, True)
        bounded = evolve(dmm, trc, os.path.join(work, name + ".g0"), ["--gens", "0"])
        # without cuts a big trace can take hours: a budget of 10x the cut
        # run's time (at least 60 s, at most --nocut-max), then it is "> budget"
        budget = min(max(10 * bounded["wall"], 60), a.nocut_max)
        full = evolve(dmm, trc, os.path.join(work, name + ".g0-nocut"),
                      ["--gens", "0", "--hopeless", "0", "--time", "%.0f" % budget])
        ops = bounded["operations"]
        data[name] = dict(operations=ops, load_parse_s=parse, load_first_s=first,
                          load_cached_s=cached, gen0=bounded, gen0_no_cut=full)
        rows.append((name, ops, bounded, full, parse, cached))
        print("%s: %d ops, gen 0 %.1f s (no cut %.1f s)" % (name, ops, bounded["wall"],
                                                            full["wall"]))

    full_rows = []
    for name, trc in traces:
        if name == "python3-big":
            continue
        cut = evolve(dmm, trc, os.path.join(work, name + ".full"), [])
        budget = min(max(10 * cut["wall"], 60), a.nocut_max)
        nocut = evolve(dmm, trc, os.path.join(work, name + ".full-nocut"),
                       ["--hopeless", "0", "--time", "%.0f" % budget])
        data[name]["full"] = cut
        data[name]["full_no_cut"] = nocut
        full_rows.append((name, data[name]["operations"], cut, nocut))

    big = [t for t in traces if t[0] == "python3-big"]
    search = None
    if big:
        search = evolve(dmm, big[0][1], os.path.join(work, "python3-big.search"),
                        ["--time", "%g" % a.budget])
        data["full_search"] = search

    L = ["# dmm evolve speed", "",
         benchlib.machine_line(), "",
         "Generation 0 of the paper's search (population 100, `--jobs 2`) on traces of real "
         "programs recorded here, with hopeless candidates cut short (`--hopeless 1`, the "
         "default) and without (`--hopeless 0`: every candidate simulated to the end, under a "
         "budget of 10 times the first's time, at least 60 s, at most %g s: `>` marks a run "
         "the budget stopped). `saved` is the cuts' own estimate of the simulation time they "
         "avoided." % a.nocut_max, "",
         "| trace | M ops | gen 0 s | s per M ops | eval/s | hopeless / simulated | cut | "
         "saved s | best F |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, ops, bounded, full, _, _ in rows:
        L.append(gen0_row(name, ops, bounded))
        L.append(gen0_row(name + " (no cut)", ops, full))
    L += ["", "Loading the operation stream (dmm sim's wall time less its simulation):", "",
          "| trace | M ops | parsing the trace s | from TRACE.ops s |", "|---|---:|---:|---:|"]
    for name, ops, _, _, parse, cached in rows:
        L.append("| %s | %.2f | %.2f | %.2f |" % (name, ops / 1e6, parse, cached))
    if full_rows:
        L += ["", "The paper's full search (population 100, 250 generations, `--jobs 2`), with "
              "cuts and without (`--hopeless 0`; `>`: stopped by its budget):", "",
              "| trace | M ops | s | best F | s without cuts | best F without cuts |",
              "|---|---:|---:|---:|---:|---:|"]
        for name, ops, cut, nocut in full_rows:
            more = "> " if nocut["stopped"] != "completed" else ""
            L.append("| %s | %.2f | %.1f | %s | %s%.1f | %s |" % (
                name, ops / 1e6, cut["wall"],
                "%.6f" % cut["best"]["F"] if cut.get("best") else "-", more, nocut["wall"],
                "%.6f" % nocut["best"]["F"] if nocut.get("best") else "-"))
    if search:
        h = search["hopeless"]
        L += ["", "The paper's full search (population 100, 250 generations, `--jobs 2`) on "
              "python3-big (%.2f M operations) with a budget of %g s: stopped: %s after %d "
              "generations in %.0f s; %d evaluations (%.1f/s), %d simulations, %d hopeless, "
              "%d cut (saving about %.0f s); best F %s." % (
                  search["operations"] / 1e6, a.budget, search["stopped"],
                  search["generations_run"], search["wall"], search["evaluations"],
                  search["evaluations"] / search["seconds"], search["simulations"],
                  h["simulations"], h["cut"], h["seconds_saved"],
                  "%.6f" % search["best"]["F"] if search.get("best") else "-")]
    text = "\n".join(L) + "\n"
    print(text)
    benchlib.write_results(b, "evolve_speed", text, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
