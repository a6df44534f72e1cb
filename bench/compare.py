#!/usr/bin/env python3
"""compare.py - your program under glibc, jemalloc, mimalloc, tcmalloc and
the library `make evolve` built for it, side by side: what it gains, in
time and memory, on the program itself rather than on a replay of its
trace.

    python3 bench/compare.py [--build DIR] [--reps N] [--evolved LIB|DIR]
                             [--presets] [--huge-peers] [--pin] [--no-peers]
                             -- PROGRAM [ARGS...]
    make compare CMD='PROGRAM ARGS' [EVOLVED=LIB|DIR] [REPS=N] [PRESETS=1] [HUGE=1]

The evolved library: --evolved names it (a .so, or a directory of
`make evolve`'s, DIR/evolve/NAME/, that holds one); without it, the newest
DIR/evolve/*/libdmm_evolved.so whose trace was recorded from a program of
PROGRAM's name (its stats.json), and none is an error: a library evolved
for another program says nothing about this one.  jemalloc, mimalloc and
tcmalloc are run where installed (--no-peers: glibc and the evolved
library only); --huge-peers adds glibc, jemalloc and mimalloc with
transparent huge pages turned on by their own settings (glibc+thp,
jemalloc+thp, mimalloc+thp: peers.py's huge_page_peers), to see whether an
evolved library that chose huge pages still wins against peers that use
them too; --presets adds the paper's five reference managers, KNG, LEA,
FIB, S10 and EXA (DIR/libdmm.so with DMM_CONFIG set to each).

One untimed run of PROGRAM first (page cache, dynamic loader); then --reps
rounds (default 5), each running PROGRAM once under every allocator, in an
order shuffled anew each round, spawned by GNU time: wall time, CPU time
(user + system, of it and what it waited for), peak RSS, minor page
faults and the huge pages the kernel handed out during the run, and its exit
status and standard output compared with glibc's first run.  Standard input
is /dev/null and standard error is discarded.  Before each run, huge pages
are faulted and freed (scripts/hugewarm.py; DMM_BENCH_WARM=no: not), so
that a run in huge pages does not pay for the host to back them again by
what ran before it.  --pin runs each round on one
CPU, the fastest at the round's start: steadier on a machine whose CPUs
differ in speed, but only for a program of one thread.

Prints, and writes to DIR/bench/compare.md and .json, the medians, the
ratios to glibc, F_real = 0.5 time/time_glibc + 0.5 peak RSS/peak RSS_glibc
(lower is better) and whether the output was the same.  Exit status: 0; 2
bad usage, PROGRAM not found, no evolved library, or a run that could not
start; 3 when an allocator's output or exit status differed from glibc's
(while glibc's own runs agreed: a program whose output varies from run to
run is not compared, and the report says so); 130 when interrupted.  No
run is timed out."""
import argparse
import glob
import json
import os
import shlex
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
import programs  # noqa: E402


PRESETS = ("kng", "lea", "fib", "s10", "exa")


def die(msg):
    print("compare: " + msg, file=sys.stderr)
    sys.exit(2)


def traced_program(evolve_dir):
    """The name of the program whose trace evolve_dir's library was evolved
    from (its stats.json), or None."""
    try:
        with open(os.path.join(evolve_dir, "stats.json")) as f:
            cmd = json.load(f)["trace"]["command"]
        words = shlex.split(cmd)   # shell words (dmm stats)
        return os.path.basename(words[0]) if words else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def find_evolved(build, given, program):
    """(libdmm_evolved.so, how it was chosen); SystemExit(2) naming what is
    missing."""
    if given:
        lib = os.path.join(given, "libdmm_evolved.so") if os.path.isdir(given) else given
        if not os.path.isfile(lib):
            die("%s: no such library" % lib)
        return os.path.abspath(lib), "given"
    name = os.path.basename(program)
    found = [d for d in glob.glob(os.path.join(build, "evolve", "*", ""))
             if os.path.isfile(os.path.join(d, "libdmm_evolved.so")) and traced_program(d) == name]
    if not found:
        die("no library evolved for %s in %s/evolve/: `make evolve TRACE=` its trace first "
            "(dmm record -- %s ...), or name one with --evolved LIB" % (name, build, program))
    d = max(found, key=lambda d: os.path.getmtime(os.path.join(d, "libdmm_evolved.so")))
    return os.path.abspath(os.path.join(d, "libdmm_evolved.so")), \
        "the newest library evolved for %s" % name


def main():
    ap = benchlib.parser(__doc__, 5)
    ap.set_defaults(build=os.path.join(benchlib.ROOT, "build"))
    ap.add_argument("--evolved", help="the library to compare (a .so or a make evolve directory)")
    ap.add_argument("--pin", action="store_true", help="each round on the fastest CPU")
    ap.add_argument("--no-peers", action="store_true", help="glibc and the evolved library only")
    ap.add_argument("--presets", action="store_true",
                    help="also the five presets (kng, lea, fib, s10, exa) in libdmm.so")
    ap.add_argument("--huge-peers", action="store_true",
                    help="also glibc, jemalloc and mimalloc with huge pages turned on")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    a = ap.parse_args()
    argv = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not argv:
        die("no program to run: compare.py [options] -- PROGRAM [ARGS...]")
    if a.reps < 1:
        die("--reps must be at least 1")
    exe = argv[0] if "/" in argv[0] else shutil.which(argv[0])
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        die("%s: no such program%s" % (argv[0], "" if "/" in argv[0] else " on PATH"))
    build = os.path.abspath(a.build)
    lib, how = find_evolved(build, a.evolved, argv[0])
    gnu_time = benchlib.find_gnu_time()
    if not gnu_time:
        die("GNU time is needed for peak RSS (apt-get install time)")
    allocs, skipped = peers.peer_allocators()
    if a.no_peers:
        allocs, skipped = allocs[:1], []
    if a.huge_peers:
        huge, hskipped = peers.huge_page_peers(allocs)
        allocs, skipped = allocs + huge, skipped + hskipped
    if a.presets:
        libdmm = os.path.join(build, "libdmm.so")
        if not os.path.isfile(libdmm):
            die("%s: no such library (make builds it)" % libdmm)
        allocs += [(p, libdmm, {"DMM_CONFIG": p}) for p in PRESETS]
    allocs.append(("evolved", lib))
    print("compare: %s under %s, %d round%s" % (shlex.join(argv), ", ".join(x[0] for x in allocs),
                                                a.reps, "" if a.reps == 1 else "s"),
          file=sys.stderr, flush=True)
    try:
        benchlib.measure_program(argv, {}, None, allocs[:1], 1, gnu_time, [], pin=False,
                                 strict=False, timeout=None)   # the warm-up
        pins = []
        runs = benchlib.measure_program(argv, {}, None, allocs, a.reps, gnu_time, pins,
                                        pin=a.pin, strict=False, timeout=None)
    except OSError as e:
        die("%s: %s" % (argv[0], e.strerror or e))
    except KeyboardInterrupt:
        print("compare: interrupted", file=sys.stderr)
        sys.exit(130)
    g = runs["glibc"]
    varies = len(set(g["exit"])) > 1 or not g["same"]
    med = {k: {x: benchlib.median(v[x]) for x in ("wall", "cpu", "rss")} for k, v in runs.items()}
    if any(m["rss"] is None for m in med.values()):
        die("GNU time reported no peak RSS")
    row = dict(name=os.path.basename(argv[0]), runs=runs, median=med)
    rounds = "%d round%s" % (a.reps, "" if a.reps == 1 else "s")
    lines = ["# %s on its evolved allocator, side by side" % shlex.join(argv), "",
             benchlib.machine_line(), "",
             "`%s` (%s), %s, each under every allocator in an order shuffled each round "
             "(medians; %s). F_real = ½·time/time_glibc + ½·peak RSS/peak RSS_glibc, lower is "
             "better." % (lib, how, rounds,
                          "each round on the fastest CPU" if a.pin else "not pinned to a CPU"),
             ""]
    if varies:
        for r in runs.values():
            r["same"] = None
    lines += programs.table([row]) + [""]
    if varies:
        lines.append("- The output or exit status varies from run to run under glibc itself: "
                     "outputs are not compared.")
    base = med["glibc"]
    f = {k: programs.f_real(m, base) for k, m in med.items()}
    others = [k for k in f if k != "evolved"]
    best = min(others, key=lambda k: f[k])
    lines.append("- evolved: time %.3f, peak RSS %.3f of glibc's, F_real %.3f; the best of the "
                 "others: %s, %.3f." % (med["evolved"]["wall"] / base["wall"],
                                       med["evolved"]["rss"] / base["rss"], f["evolved"],
                                       best, f[best]))
    lines += ["- %s skipped: %s" % s for s in skipped]
    differ = [k for k, r in runs.items() if r["same"] is False]
    if differ:
        lines.append("- DIFFERENT output or exit status from glibc's (exit %s) under: %s." % (
            g["exit"][0], ", ".join("%s (exit %s)" % (k, "/".join(
                str(x) for x in sorted(set(runs[k]["exit"])))) for k in differ)))
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(build, "compare", text, dict(argv=argv, library=lib, chosen=how,
                                                        reps=a.reps, pinned=pins, runs=runs,
                                                        median=med, F_real=f))
    sys.exit(3 if differ else 0)


if __name__ == "__main__":
    main()
