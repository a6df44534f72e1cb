#!/usr/bin/env python3
"""programs.py - real programs on their own evolved allocator, side by side
with the allocators a user could install instead.

    python3 bench/programs.py [--build DIR] [--reps N] [--only a,b] [--time S] [--again]
                              [--no-huge-peers]

For each program below that is installed: record one run under
libdmmtrace.so, `make evolve TRACE=it TIME=--time` (the search with its
defaults, at most --time seconds, then its best designs and the presets
measured on the trace, the winner built: build/evolve/prog-NAME/), then run the
program itself under glibc, jemalloc, mimalloc, tcmalloc and that library,
interleaved, --reps rounds (default 5), spawned by GNU time: wall time, CPU
time, peak RSS, minor page faults and the huge pages the kernel handed out
during the run (machine-wide), and its output compared with glibc's.  Each
round of a single-threaded program runs on one CPU, the fastest at its start
(scripts/cpupin.py; DMM_BENCH_CPU=N or =no to choose).

The same rounds run glibc, jemalloc and mimalloc once more with transparent
huge pages turned on by their own settings (peers.huge_page_peers:
glibc+thp, jemalloc+thp, mimalloc+thp), since the evolved libraries may
choose huge pages (`pages huge=yes`) and a user can turn them on for those
too; --no-huge-peers leaves them out.  The goal (issue 13) is stated against
the peers as installed; the table says where the evolved library stands
against both.

--again measures the libraries that the last run left (DIR/bench/programs/
NAME/libdmm_evolved.so, and its design in DIR/evolve/prog-NAME/chosen.dmm)
once more, without recording or searching: on this machine one run's
figures move by a few per cent with the host, and a second set of rounds
says how much.

F_real = 0.5 time / time_glibc + 0.5 peak RSS / peak RSS_glibc (medians; lower
is better), per program and allocator, the best peer of each program, and
the geometric means, against the peers as installed and against them with
huge pages.  Writes DIR/bench/programs.md and .json; each library
stays in DIR/bench/programs/NAME/.  build/libdmm_evolved.so is
rebuilt from the Makefile's default .dmm at the end.

  python3   PYTHONMALLOC=malloc, a dict of 60k entries to JSON and back
  perl      a hash of 200k keys, half of them deleted
  sqlite3   500k rows into an indexed table (:memory:)
  jq        a filter over 100k generated JSON records (about 18 MB)
  git-log   `git log -p` of this repository (its last 300 commits)
  git-pack  `git pack-objects` of this repository, 2 threads, every delta
            searched again (window 200); its output is the set of objects
            in the pack (the bytes vary with the threads' timing)
  cc1plus   the C++ compiler proper, -O2, on a generated translation unit
            that uses the standard containers and algorithms
Timing only: the tests check correctness, never speed."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from benchlib import fmt, geomean  # noqa: E402

PROGRAMS = ("python3", "perl", "sqlite3", "jq", "git-log", "git-pack", "cc1plus")
THREADED = {"git-pack"}   # more than one thread: its runs are not pinned to a CPU


def jq_input(path, records):
    """records JSON objects in one array, the same every time."""
    with open(path, "w") as f:
        f.write("[")
        for i in range(records):
            f.write('%s{"id":%d,"name":"item%d","tags":["t%d","u%d"],"v":%d,'
                    '"nested":{"a":%d,"b":"%s"}}' % ("," if i else "", i, i, i % 13, i % 7,
                                                     i * 7 % 1000, i % 97, "x" * (i % 50)))
        f.write("]\n")


CXX_UNIT = r"""
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
template <int N> struct Node {
    std::map<std::string, std::vector<int>> m;
    std::unordered_map<int, std::set<std::string>> u;
    int work(int k) {
        std::ostringstream o; o << k << N;
        m[o.str()].push_back(k);
        u[k].insert(o.str());
        std::vector<int> v(m.size());
        std::sort(v.begin(), v.end());
        return (int)v.size() + Node<N - 1>().work(k + 1);
    }
};
template <> struct Node<0> { int work(int k) { return k; } };
"""


def cxx_input(path, funcs):
    """A translation unit with funcs instantiations of Node<60>."""
    with open(path, "w") as f:
        f.write(CXX_UNIT)
        for i in range(funcs):
            f.write("template <int N> struct Tag%d : Node<N> {};\n"
                    "int f%d(int k) { return Tag%d<60>().work(k); }\n" % (i, i, i))


def find_cc1plus():
    try:
        r = subprocess.run(["g++", "-print-prog-name=cc1plus"], capture_output=True, text=True,
                           timeout=20)
        p = r.stdout.strip()
        return p if os.path.isabs(p) and os.access(p, os.X_OK) else None
    except (OSError, subprocess.SubprocessError):
        return None


def pack_objects(work):
    """The object names of the pack(s) that `git pack-objects` wrote into
    work, sorted, as bytes; the pack files removed."""
    names = []
    for f in sorted(os.listdir(work)):
        path = os.path.join(work, f)
        if f.startswith("pack-") and f.endswith(".idx"):
            with open(path, "rb") as idx:
                r = subprocess.run(["git", "show-index"], stdin=idx, capture_output=True,
                                   check=True)
            names += [line.split()[1] for line in r.stdout.splitlines() if line.strip()]
        if f.startswith("pack-"):
            os.unlink(path)
    return b"\n".join(sorted(names))


def workload(name, work):
    """(argv, extra env, output) of a program, its input written into work;
    output(stdout bytes) gives what is compared between runs (None: stdout
    itself).  None when the program is not here."""
    if name in ("python3", "perl", "sqlite3"):
        size = dict(python3=60000, perl=200000, sqlite3=500000)[name]
        argv, env = benchlib.command(name, size, work)
        return (argv, env, None) if benchlib.installed(argv[0]) else None
    if name == "jq":
        if not benchlib.installed("jq"):
            return None
        path = os.path.join(work, "records.json")
        jq_input(path, 100000)
        return ["jq", "-c", "[.[] | select(.v % 3 == 0) | {id, name, t: .tags[0]}] | length",
                path], {}, None
    if name == "git-log":
        if not benchlib.installed("git") or not os.path.isdir(os.path.join(benchlib.ROOT, ".git")):
            return None
        return ["git", "-C", benchlib.ROOT, "--no-pager", "log", "-p", "-n", "300",
                "--no-color"], {}, None
    if name == "git-pack":
        if not benchlib.installed("git") or not os.path.isdir(os.path.join(benchlib.ROOT, ".git")):
            return None
        return ["git", "-C", benchlib.ROOT, "pack-objects", "--all", "--revs", "--threads=2",
                "--no-reuse-delta", "--window=200", "-q", os.path.join(work, "pack")], {}, \
            lambda out: pack_objects(work)
    if name == "cc1plus":
        cc1 = find_cc1plus()
        if not cc1:
            return None
        src, ii = os.path.join(work, "unit.cc"), os.path.join(work, "unit.ii")
        cxx_input(src, 40)
        subprocess.run(["g++", "-E", "-o", ii, src], check=True)
        return [cc1, "-quiet", "-O2", "-fpreprocessed", ii, "-o", os.devnull], {}, None
    raise ValueError(name)


def f_real(m, base):
    return 0.5 * m["wall"] / base["wall"] + 0.5 * m["rss"] / base["rss"]


def evolve_for(build, name, argv, extra, output, out, seconds):
    """Record, then `make evolve TRACE=... TIME=seconds` (search, the best
    designs and the presets measured on the trace, the winner built):
    (libdmm_evolved.so, chosen.dmm text, trace ops, pipeline seconds)."""
    trc = os.path.join(out, "prog-%s.trc" % name)
    r = benchlib.record(build, trc, argv, extra)
    if output:
        output(b"")
    if r["exit"] != 0 or not os.path.exists(trc):
        raise RuntimeError("recording %s failed: %s" % (name, "\n".join(benchlib.tail(r["err"]))))
    st = subprocess.run([os.path.join(build, "dmm"), "stats", "--json", trc],
                        capture_output=True, text=True)
    ops = None
    try:
        o = json.loads(st.stdout)["op_stream"]
        ops = o["allocs"] + o["reallocs"] + o["frees"]
    except (ValueError, KeyError):
        pass
    t0 = time.monotonic()
    rel = os.path.relpath(build, benchlib.ROOT)
    r = subprocess.run(["make", "-s", "-C", benchlib.ROOT, "BUILD=" + rel, "evolve",
                        "TRACE=" + trc, "TIME=%d" % seconds], capture_output=True, text=True,
                       env=benchlib.own_make_env())
    secs = time.monotonic() - t0
    res = os.path.join(build, "evolve", "prog-" + name)
    if r.returncode != 0 or not os.path.exists(os.path.join(res, "libdmm_evolved.so")):
        raise RuntimeError("make evolve for %s failed: %s" % (name, (r.stdout + r.stderr)[-800:]))
    keep = os.path.join(out, "libdmm_evolved.so")
    shutil.copyfile(os.path.join(res, "libdmm_evolved.so"), keep)
    dmm_text = open(os.path.join(res, "chosen.dmm")).read()
    for f in os.listdir(out):
        if f.endswith(".trc") or f.endswith(".ops"):
            os.unlink(os.path.join(out, f))
    return keep, dmm_text, ops, secs


def last_run(build, name, out):
    """--again: (libdmm_evolved.so, chosen.dmm text, trace ops, pipeline
    seconds) of the last run for name (ops and seconds from its
    programs.json, None when it has none); SystemExit naming what is
    missing."""
    lib = os.path.join(out, "libdmm_evolved.so")
    dmm = os.path.join(build, "evolve", "prog-" + name, "chosen.dmm")
    for f in (lib, dmm):
        if not os.path.exists(f):
            raise SystemExit("programs: --again: %s is missing (run bench/programs.py without "
                             "--again first)" % f)
    ops = secs = None
    try:
        with open(os.path.join(build, "bench", "programs.json")) as f:
            for row in json.load(f).get("rows", []):
                if row.get("name") == name:
                    ops, secs = row.get("ops"), row.get("search_s")
    except (OSError, ValueError):
        pass
    with open(dmm) as f:
        return lib, f.read(), ops, secs


def table(rows):
    lines = ["| program | allocator | wall s (min–max) | CPU s | peak RSS MiB | faults k | "
             "huge pages | time vs glibc | RSS vs glibc | F_real | output |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in rows:
        base = p["median"]["glibc"]
        for a, m in p["median"].items():
            raw = p["runs"][a]
            same = {True: "same", False: "DIFFERENT"}.get(raw["same"], "not compared")
            lines.append("| %s | %s | %.3f (%.3f–%.3f) | %.3f | %.1f | %s | %s | %.3f | %.3f | "
                         "**%.3f** | %s |" % (
                             p["name"], a, m["wall"], min(raw["wall"]), max(raw["wall"]),
                             m["cpu"], m["rss"] / 1024, counted(raw.get("faults"), 1000.0, "%.1f"),
                             counted(raw.get("huge"), 1, "%.0f"), m["wall"] / base["wall"],
                             m["rss"] / base["rss"], f_real(m, base), same))
    return lines


def counted(xs, unit, f):
    """The median of a run's counts (faults, huge pages) in unit, or - where
    a run did not count them (a programs.json from before they were)."""
    xs = [x for x in xs or [] if x is not None]
    return f % (benchlib.median(xs) / unit) if xs else "-"


def huge_peer(a):
    return a.endswith("+thp")


def summary(rows):
    """The evolved library against the best peer as installed and the best
    with huge pages turned on (where measured), per program and in
    geometric means."""
    tuned = any(huge_peer(a) for p in rows for a in p["median"])
    lines = ["| program | F_real evolved | best peer | its F_real | evolved ahead | " +
             ("best peer with huge pages | its F_real | evolved ahead | " if tuned else "") +
             "evolved DMM |", "|---|---:|---|---:|---|" + ("---|---:|---|" if tuned else "") +
             "---|"]
    ev, best, best_h = [], [], []
    for p in rows:
        base = p["median"]["glibc"]
        f = {a: f_real(m, base) for a, m in p["median"].items()}
        peer = min((a for a in f if a != "evolved" and not huge_peer(a)), key=lambda a: f[a])
        ev.append(f["evolved"])
        best.append(f[peer])
        cols = "| %s | %.3f | %s | %.3f | %s | " % (
            p["name"], f["evolved"], peer, f[peer], "yes" if f["evolved"] < f[peer] else "no")
        if tuned:
            hp = [a for a in f if huge_peer(a)]
            if hp:
                h = min(hp, key=lambda a: f[a])
                best_h.append(f[h])
                cols += "%s | %.3f | %s | " % (h, f[h], "yes" if f["evolved"] < f[h] else "no")
            else:
                cols += "- | - | - | "
        lines.append(cols + "`%s` |" % " / ".join(
            l.split()[0] + (" " + l.split()[1] if l.startswith("cache") else "")
            for l in p["dmm"].splitlines() if l and not l.startswith("#")))
    lines.append("| geometric mean | %s | | %s | | " % (fmt(geomean(ev)), fmt(geomean(best))) +
                 ("| %s | | " % (fmt(geomean(best_h)) if len(best_h) == len(rows) else "-")
                  if tuned else "") + "|")
    return lines


def main():
    ap = benchlib.parser(__doc__, 5)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    ap.add_argument("--time", type=int, default=180, help="search budget per program (s)")
    ap.add_argument("--again", action="store_true",
                    help="measure the last run's libraries again: no recording, no search")
    ap.add_argument("--no-huge-peers", action="store_true",
                    help="leave out the peers with huge pages turned on")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    gnu_time = benchlib.find_gnu_time()
    if not gnu_time:
        raise SystemExit("programs: GNU time is needed for peak RSS (apt-get install time)")
    allocs, skipped = peers.peer_allocators()
    if not a.no_huge_peers:
        huge, hskipped = peers.huge_page_peers(allocs)
        allocs, skipped = allocs + huge, skipped + hskipped
    rows, notes = [], ["%s skipped: %s" % s for s in skipped]
    root = os.path.join(build, "bench", "programs")
    try:
        for name in a.only.split(","):
            out = os.path.join(root, name)
            os.makedirs(out, exist_ok=True)
            w = workload(name, out)
            if not w:
                notes.append("%s skipped: not installed" % name)
                continue
            argv, extra, output = w
            if a.again:
                lib, dmm_text, ops, secs = last_run(build, name, out)
                print("programs: %s: the last run's library; measuring" % name, file=sys.stderr,
                      flush=True)
            else:
                print("programs: %s: recording and evolving" % name, file=sys.stderr, flush=True)
                lib, dmm_text, ops, secs = evolve_for(build, name, argv, extra, output, out,
                                                      a.time)
                print("programs: %s: %s operations, make evolve %.0f s; measuring"
                      % (name, ops, secs), file=sys.stderr, flush=True)
            pins = []
            runs = benchlib.measure_program(argv, extra, output, allocs + [("evolved", lib)],
                                            a.reps, gnu_time, pins, pin=name not in THREADED)
            med = {k: {x: benchlib.median(v[x]) for x in ("wall", "cpu", "rss")}
                   for k, v in runs.items()}
            rows.append(dict(name=name, argv=argv, ops=ops, search_s=secs, dmm=dmm_text,
                             runs=runs, median=med, pinned=pins))
    finally:
        if not a.again:   # make evolve built its library there; the default again
            peers.make_evolved(build, None)
    if a.again:
        how = ("The libraries of the last run (each program recorded once, `make evolve` on its "
               "trace), measured again:")
    else:
        how = ("Each program recorded once, `make evolve` on its trace (search at most %d s), "
               "then" % a.time)
    if os.environ.get("DMM_BENCH_CPU") == "no":
        pin = "No run is pinned to a CPU (DMM_BENCH_CPU=no)."
    else:
        pin = ("Each round of a single-threaded program runs on one CPU, the one that ran a busy "
               "loop fastest at the round's start (this machine's CPUs differ in speed by up to "
               "1.4x from minute to minute; unpinned, a run's time said more about its CPU than "
               "its allocator); %s, threaded, runs unpinned." % ", ".join(sorted(THREADED)))
    lines = ["# Real programs on their own evolved allocator", "",
             benchlib.machine_line(), "",
             "%s run %d interleaved rounds under each allocator, in an order shuffled each round "
             "(medians). F_real = ½·time/time_glibc + ½·peak RSS/peak RSS_glibc.  %s"
             % (how, a.reps, pin), ""]
    lines += summary(rows) + [""] + table(rows) + [""]
    lines += ["Faults: minor page faults of the run, thousands (medians).  Huge pages: the "
              "transparent huge pages the kernel handed out during the run (/proc/vmstat's "
              "thp_fault_alloc, machine-wide: the program's own on a machine doing nothing "
              "else), medians.  +thp: the peer with huge pages turned on by its own setting "
              "(glibc.malloc.hugetlb=1; jemalloc thp:always,metadata_thp:always; "
              "MIMALLOC_LARGE_OS_PAGES=1).  %s" % (
                  "No huge pages were faulted before the runs (DMM_BENCH_WARM=no)."
                  if os.environ.get("DMM_BENCH_WARM") == "no" else
                  "Before each run the measuring process faulted and freed huge pages "
                  "(scripts/hugewarm.py), so that a run in huge pages did not wait for the "
                  "host to back them again by what ran before it."), ""]
    lines += ["- %s: %s operations recorded, make evolve %s" % (
        p["name"], p["ops"] if p["ops"] is not None else "?",
        "%.0f s" % p["search_s"] if p["search_s"] is not None else "(time not known)")
        for p in rows]
    lines += ["- " + n for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(build, "programs", text, dict(rows=rows, notes=notes, reps=a.reps,
                                                         again=a.again))


if __name__ == "__main__":
    main()
