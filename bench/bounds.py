#!/usr/bin/env python3
"""bounds.py - how far any allocator could take each real program of
bench/programs.py: the best F_real an allocator that cost nothing and wasted
nothing would reach.

    python3 bench/bounds.py [--build DIR] [--reps N] [--only a,b]

For each program (the same workloads as programs.py):

  share    the allocator's share of the program's instructions under glibc:
           callgrind's inclusive count of malloc, free, calloc, realloc and
           the aligned calls, over the program's total (deterministic; page
           faults and cache misses are not instructions, so this is a
           proxy for the share of time)
  live     the peak of live requested bytes (the trace's Max in use), and
           the peak with each block rounded up to 16 bytes (at least 16):
           what a heap of 16-byte aligned blocks, glibc's and dmm's (and
           any allocator's for blocks above 8 bytes), holds at least
  RSS      peak RSS under glibc (GNU time, median of --reps runs)
  rest     the peak RSS that is not the heap: peak RSS under libdmm.so
           (preset lea) minus the peak footprint its allocator reports
           (DMM_STATS), i.e. code, stacks, libraries, mappings of their own

An allocator that took no instructions and held exactly the live blocks,
16-byte aligned, with the program's page faults and TLB misses as they are
under glibc, would reach
  F_min = 0.5 (1 - share) + 0.5 min(1, (rest + live16) / RSS)
The time part counts instructions (a bound in those terms only: an
allocator that causes fewer page faults or TLB misses than glibc, as huge
pages do, takes time off the program that no instruction count shows, and
the report says on which programs the evolved library came in below F_min).
The memory part is an estimate: it assumes the peaks coincide and every
live byte is resident; where rest + live16 reaches glibc's own peak RSS, glibc
holds next to nothing beyond the live heap and the part is taken as 1.

Where programs.py has run (DIR/bench/programs.json, each program's library in
DIR/bench/programs/NAME/), also what is left to the evolved library itself:

  evolved share   its share of the program's instructions under it
                  (callgrind: every instruction of its code, inlined or not)
  F_free          0.5 t (1 - evolved share) + 0.5 m, with t and m its
                  measured time and peak RSS against glibc's (programs.json):
                  its F_real had its calls cost nothing, page faults and RSS
                  as they are (instructions again: at best that)
  F_floor         0.5 t (1 - evolved share) + 0.5 min(1, (rest + live16) / RSS):
                  F_free with the heap at the floor above as well, the live
                  blocks in 16-byte blocks and nothing else (a guide: it
                  keeps the library's page faults, which come with the memory
                  it holds, and so may lie below what any design reaches)

Writes DIR/bench/bounds.md and .json."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import cgcount  # noqa: E402
import programs  # noqa: E402
from benchlib import geomean  # noqa: E402


def callgrind(argv, extra, output, work):
    """Runs the program under callgrind: the path of its output file."""
    out = os.path.join(work, "callgrind.out")
    env = dict(benchlib.clean_env(), **extra)
    r = benchlib.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv,
                     env, stdout=os.devnull, timeout=3600)
    if output:
        output(b"")
    if r["exit"] != 0:
        raise RuntimeError("callgrind: exit %s: %s" % (r["exit"], "\n".join(benchlib.tail(r["err"], 5))))
    return out


def callgrind_share(argv, extra, output, work):
    """(allocator instructions, total instructions) of one run under glibc."""
    out = callgrind(argv, extra, output, work)
    try:
        return cgcount.entry_instructions(out)
    finally:
        os.unlink(out)


def heap_rest(build, argv, extra, output, gnu_time):
    """(peak RSS KiB, allocator peak footprint KiB) under libdmm.so (lea)."""
    env = dict(benchlib.clean_env(), **extra)
    env.update(LD_PRELOAD=os.path.join(build, "libdmm.so"), DMM_CONFIG="lea", DMM_STATS="1")
    r = benchlib.run(argv, env, gnu_time=gnu_time, timeout=600)
    if output:
        output(b"")
    m = re.search(rb"bytes now, ([0-9]+) at peak", r["err"] or b"")
    if r["exit"] != 0 or not m or not r["maxrss_kib"]:
        raise RuntimeError("libdmm.so run: exit %s, %s" % (r["exit"], "\n".join(benchlib.tail(r["err"], 3))))
    return r["maxrss_kib"], int(m.group(1)) / 1024


def live_peak(build, argv, extra, output, work):
    trc = os.path.join(work, "bounds.trc")
    r = benchlib.record(build, trc, argv, extra)
    if output:
        output(b"")
    if r["exit"] != 0:
        raise RuntimeError("recording failed: %s" % "\n".join(benchlib.tail(r["err"], 3)))
    st = subprocess.run([os.path.join(build, "dmm"), "stats", "--json", trc],
                        capture_output=True, text=True, check=True)
    for f in os.listdir(work):
        if f.startswith("bounds.trc"):
            os.unlink(os.path.join(work, f))
    doc = json.loads(st.stdout)
    return doc["table2"]["max_in_use"] / 1024, doc["sizes"]["max_in_use_16"] / 1024


def callgrind_object_share(argv, extra, output, work, obj):
    """(instructions executed in obj's own code, total instructions) of one
    run (cgcount.object_instructions)."""
    out = callgrind(argv, extra, output, work)
    try:
        return cgcount.object_instructions(out, obj)
    finally:
        os.unlink(out)


def evolved_headroom(build, name, argv, extra, output, work):
    """The evolved library's row (evolved_share, its measured t and m, F_free)
    or None where programs.py has not run for the program."""
    lib = os.path.join(build, "bench", "programs", name, "libdmm_evolved.so")
    try:
        with open(os.path.join(build, "bench", "programs.json")) as f:
            med = {r["name"]: r["median"] for r in json.load(f)["rows"]}[name]
        t = med["evolved"]["wall"] / med["glibc"]["wall"]
        m = med["evolved"]["rss"] / med["glibc"]["rss"]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    if not os.path.exists(lib):
        return None
    alloc, total = callgrind_object_share(argv, dict(extra, LD_PRELOAD=lib), output, work,
                                          os.path.realpath(lib))
    share = alloc / total
    return dict(evolved_share=share, evolved_t=t, evolved_m=m,
                evolved_f=0.5 * t + 0.5 * m, f_free=0.5 * t * (1 - share) + 0.5 * m,
                t_free=0.5 * t * (1 - share))


def main():
    ap = benchlib.parser(__doc__, 3)
    ap.add_argument("--only", default=",".join(programs.PROGRAMS))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    gnu_time = benchlib.find_gnu_time()
    if not gnu_time or not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        raise SystemExit("bounds: GNU time and valgrind are needed")
    rows, notes = [], []
    for name in a.only.split(","):
        work = tempfile.mkdtemp(prefix="dmm-bounds-")
        try:
            w = programs.workload(name, work)
            if not w:
                notes.append("%s skipped: not installed" % name)
                continue
            argv, extra, output = w
            print("bounds: %s" % name, file=sys.stderr, flush=True)
            rss = []
            for _ in range(a.reps):
                r = benchlib.run(argv, dict(benchlib.clean_env(), **extra), gnu_time=gnu_time,
                                 timeout=600)
                if output:
                    output(b"")
                rss.append(r["maxrss_kib"])
            rss = benchlib.median(rss)
            alloc, total = callgrind_share(argv, extra, output, work)
            dmm_rss, held = heap_rest(build, argv, extra, output, gnu_time)
            live, live16 = live_peak(build, argv, extra, output, work)
            rest = max(dmm_rss - held, 0)
            share = alloc / total
            m_min = min(1.0, (rest + live16) / rss)
            row = dict(name=name, share=share, alloc_ir=alloc, total_ir=total,
                       rss_kib=rss, rest_kib=rest, live_kib=live, live16_kib=live16,
                       t_min=1 - share, m_min=m_min, f_min=0.5 * (1 - share) + 0.5 * m_min)
            row.update(evolved_headroom(build, name, argv, extra, output, work) or {})
            if "t_free" in row:
                row["f_floor"] = row.pop("t_free") + 0.5 * m_min
            rows.append(row)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    text = report(rows, notes)
    print(text)
    benchlib.write_results(build, "bounds", text, dict(rows=rows, notes=notes))


def report(rows, notes):
    """bounds.md's text for the rows main() measured."""
    lines = ["# What bounds F_real on each real program", "", benchlib.machine_line(), "",
             "F_min = ½·(1 − share) + ½·min(1, (rest + live16)/RSS): about the F_real of an "
             "allocator that took no instructions and held exactly the live blocks, 16-byte aligned "
             "(glibc = 1). share: the "
             "allocator's share of the program's instructions under glibc (callgrind, "
             "inclusive); live: peak live requested bytes (the trace), and live16 the same with "
             "each block rounded up to 16 bytes (at least 16), what any heap of 16-byte aligned "
             "blocks holds at least; rest: peak RSS under "
             "libdmm.so minus its allocator's peak footprint.", "",
             "| program | allocator share of instructions | peak RSS MiB (glibc) | not heap MiB | "
             "live peak MiB | in 16-byte blocks | time part ≥ | memory part ≥ | F_min |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append("| %s | %.1f %% | %.1f | %.1f | %.1f | %s | %.3f | %.3f | **%.3f** |" % (
            r["name"], 100 * r["share"], r["rss_kib"] / 1024, r["rest_kib"] / 1024,
            r["live_kib"] / 1024, "%.1f" % (r["live16_kib"] / 1024) if "live16_kib" in r else "-",
            r["t_min"], r["m_min"], r["f_min"]))
    if rows:
        lines.append("| geometric mean | | | | | | | | **%.3f** |" % geomean([r["f_min"] for r in rows]))
    ev = [r for r in rows if "f_free" in r]
    if ev:
        lines += ["", "What is left to each program's evolved library (programs.py's): its share of "
                  "the program's instructions under it (callgrind: every instruction of its "
                  "code), its measured time "
                  "and peak RSS against glibc's (programs.json), its F_real, and F_free = "
                  "½·time·(1 − share) + ½·RSS: its F_real had its calls cost nothing, page faults "
                  "and RSS as they are; F_floor = ½·time·(1 − share) + ½·(memory part ≥): the same "
                  "with the heap at the floor of the table above as well (its page faults kept: a "
                  "guide, not a design any search could reach).", "",
                  "| program | evolved share of instructions | time vs glibc | RSS vs glibc | "
                  "F_real | F_free | F_floor |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in ev:
            lines.append("| %s | %.1f %% | %.3f | %.3f | %.3f | **%.3f** | %.3f |" % (
                r["name"], 100 * r["evolved_share"], r["evolved_t"], r["evolved_m"],
                r["evolved_f"], r["f_free"], r["f_floor"]))
        lines.append("| geometric mean | | | | %.3f | **%.3f** | %.3f |" % (
            geomean([r["evolved_f"] for r in ev]), geomean([r["f_free"] for r in ev]),
            geomean([r["f_floor"] for r in ev])))
        below = [r["name"] for r in ev if r["evolved_f"] < r["f_min"]]
        if below:
            lines += ["", "The evolved library's F_real is below F_min on %d of %d programs (%s): "
                      "F_min counts the allocator's instructions, and an allocator also changes "
                      "the time the program spends in page faults and TLB misses (huge pages, "
                      "glibc's trimming), which no instruction count shows. F_min is a guide to "
                      "the allocator's share, not a bound." % (len(below), len(ev),
                                                              ", ".join(below))]
    lines += [""] + ["- " + n for n in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
