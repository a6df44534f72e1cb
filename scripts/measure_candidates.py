#!/usr/bin/env python3
"""measure_candidates.py - `make evolve`'s last step: the simulator ranks
thousands of designs, a measurement decides which one is built.

    measure_candidates.py --dir DIR --trace TRACE [--build BUILD] [--reps N]
                          [--margin X] [--presets kng,lea,fib,s10,exa]
                          [--run 'NAME=value ... PROGRAM ARGS']
    measure_candidates.py --check-run --run 'PROGRAM ARGS'

Reads DIR/search.json (dmm evolve's: the K best distinct designs, "top", the
lean ones, "lean", that minimise a sum weighing memory more than eq. 1 does,
and the five presets, "references", each with its predicted F), adds top-1's
twin in the other kind of pages (huge_twin: "top-1-huge" or
"top-1-nohuge", unless a candidate is that design already), compiles each
into a library of its own (BUILD/candidates/TAG/NAME.so, TAG make evolve's
NAME by --tag, the same code as
libdmm_evolved.so), and replays TRACE under glibc and under each with
`dmm replay --json`, interleaved, N rounds (default 5), each round on one
CPU, the fastest at its start (cpupin.py: a replay is single-threaded, and
this machine's CPUs need not run at one speed; a trace of several threads
is replayed on as many, `dmm replay --threads`, which take turns, so one
CPU serves them as well: glibc gives each thread an arena of its own, and
git pack-objects' heap under glibc was 42 MB replayed on one thread, 52 MB
on its three), in an order shuffled anew
each round (seeded by the round: the replay that runs just after glibc's
took up to 2x its usual time on git log's trace, so a fixed order would
charge that to one candidate every round); before each replay, huge pages
are faulted and freed (hugewarm.py: on this machine's VM, a huge page
that was free for a few seconds costs 3 ms to fault instead of 0.12 ms, so
a design in huge pages ran slow or fast by what ran before it).  Each
candidate is scored as
the recorded program would see it (medians):

    F_meas = 0.5 * (1 + (t - t_glibc) / D) + 0.5 * (R + heap) / (R + heap_glibc)

t the replay's own time (`wall_s`, less `handoff_s` on threads: the
allocator's calls and the payload writes after them, which take the
first-touch page faults of whatever fresh memory a call handed out; the
calls alone, `op_s`, leave those faults out and so rank a design that
hands out fresh pages lazily ahead of one that faults them in the call,
the opposite of what the program sees), heap its
peak RSS above the RSS at the start of glibc's replay window (the driver's
own memory, the same under any library: measured from each library's own
start, a design in huge pages hid the 2 MiB extent that the driver's first
calls had opened, 12 % of git log's heap, which the program pays); D the
recorded run's duration and R the program's memory outside the heap, its
peak RSS less glibc's heap (DIR/stats.json: the trace's duration_s and
peak_rss_bytes).  A trace of several threads is replayed one call at a
time, so what a design saves there is CPU time, which the program, its
threads running side by side, saves from its wall time in the ratio of
its CPU time to its duration: D is then the program's CPU time (cpu_s)
where that is longer (git pack-objects --threads=2: 4.0 s of CPU in
2.4 s, and the replay's 0.2 s between its fastest and leanest designs
came to a few hundredths of a second in the program).  A replay that saves 10 ms in a program
that runs 5 s, or 1 MB of heap in a program of 150 MB, moves the program's
F_real that little, and so moves F_meas that little.  Where the trace does
not say (no clock; recorded before traces sampled the peak RSS), D is
t_glibc and R is 0: F_meas = 0.5 * t / t_glibc + 0.5 * heap / heap_glibc,
the replay's own F_real (F_replay, also reported).  The candidate with the
lowest F_meas wins if it beats the search's best (top-1) by more than
--margin (0.02: 2 %, this machine's noise between rounds, in the replay's
measures; scaled to the share they have of F_meas); else top-1 stays.
With --run (make evolve RUN=), the program itself is run under glibc and
each candidate instead of the replay (scripts/progrun.py's measure_program:
interleaved rounds, an order shuffled each round, a single-threaded
program's rounds on the fastest CPU, stdin /dev/null), and F_meas is its
F_real = 0.5 * time / time_glibc + 0.5 * peak RSS / peak RSS_glibc
(medians), the margin applied to the time's half, and a candidate replaces
top-1 only if its F_real beat top-1's in enough rounds for a one-sided sign
test at 5 % (every round of 5 or 7, 8 of 9); a candidate that changes
its stdout or exit status is left out (nothing is compared when glibc's own
runs differ).  Leading NAME=value words of the command line set the
program's environment.  --check-run only checks that the command names a
program that can run: exit 2 and one line when not.  (measured.json says
"run" and "run_env"; its heap_bytes and heap_vs_glibc, and measured.csv's,
are then the program's peak RSS.)
DIR/chosen.dmm is the winner's .dmm (its title says what was measured).
Writes DIR/measured.json (each round's order too) and DIR/measured.csv
(predicted and measured rank of each); prints one line per candidate,
then how the winner stands against glibc, whose F_meas is 1 by definition
(against_glibc: "ahead" below 1 less the margin, "behind" above 1 plus
it, else "level"): a design that is behind is still built, and the line
says that the program can expect no gain from it (groff's grotty, 0.5 MB
of live heap: the best design measured F_meas 1.035, the library's own
text and data, 0.1-0.15 MB a process, included).
Exit status 1 when no candidate could be measured (a build or replay that
fails is reported and left out)."""
import argparse
import csv
import hashlib
import json
import math
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys

import cpupin
import hugewarm
import progrun

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def candidates(search, presets):
    """[(name, .dmm text, predicted F)] from dmm evolve's search.json: its
    top designs, its lean ones, and the presets named in presets."""
    out = [("top-%d" % t["rank"], t["dmm"], t["F"]) for t in search.get("top", []) if t["dmm"]]
    out += [("lean-%d" % t["rank"], t["dmm"], t["F"]) for t in search.get("lean", [])
            if t["dmm"]]
    out += [(r["name"], r["dmm"], r["F"]) for r in search.get("references", [])
            if r.get("dmm") and r["name"] in presets]
    top = next((c for c in out if c[0] == "top-1"), None)
    if top:
        twin = huge_twin(top[1])
        if all(sorted(design_lines(twin)) != sorted(design_lines(c[1])) for c in out):
            # predicted F: top-1's (the simulator counts the twin's extents
            # otherwise, but not the pages a program leaves unwritten)
            out.append(("top-1-huge" if is_huge(twin) else "top-1-nohuge", twin, top[2]))
    return out


def design_lines(text):
    """A .dmm's lines less comments and blanks, its fields' spacing
    normalised: two texts of one design compare equal."""
    return [" ".join(line.split("#", 1)[0].split()) for line in text.splitlines()
            if line.split("#", 1)[0].strip()]


def is_huge(text):
    return any(line.split()[:2] == ["pages", "huge=yes"] for line in design_lines(text))


def huge_twin(text):
    """text with its memory in huge pages when it was not, and in 4 KiB
    pages when it was (`pages huge=yes`): the measurement decides between
    the two, since the simulator cannot.  With huge pages an extent is
    faulted in whole at its first write, so a program that leaves most of
    a large buffer unwritten pays for all of it; without them each page
    costs a fault of its own.  Which of the two the program sees depends on
    what it writes, which the trace says (its resident bytes of large
    blocks, that the replay writes) and the simulator does not model."""
    lines = text.splitlines()
    if is_huge(text):
        return "\n".join(l for l in lines if design_lines(l)[:1] != ["pages huge=yes"]) + "\n"
    at = 1 if lines and lines[0].startswith("#") else 0
    return "\n".join(lines[:at] + ["pages         huge=yes"] + lines[at:]) + "\n"


def own_make_env():
    """This process's environment for a make of its own: without the
    MAKEFLAGS, MFLAGS and MAKELEVEL of a make that ran this script (under
    make evolve or make bench the parent's jobserver is not passed on, and a
    make that finds it named warns and builds one file at a time); the
    Makefile picks its -j."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def build_all(build, dmm, names, texts, tag):
    """BUILD/candidates/TAG/NAME.so for each; {name: path or None}, errors.
    A folder per tag (make evolve's NAME): two measured steps at once, of
    two programs, each build and load their own libraries."""
    cdir = os.path.join(build, "candidates", tag)
    os.makedirs(cdir, exist_ok=True)
    targets, errors = {}, []
    for name, text in zip(names, texts):
        src = os.path.join(cdir, name + ".dmm")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([dmm, "codegen", "-o", os.path.join(cdir, name + ".c"), src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errors.append("%s: dmm codegen: %s" % (name, r.stderr.strip()))
            continue
        targets[name] = os.path.join(cdir, name + ".so")
    rel = os.path.relpath(build, TOP)
    want = [os.path.join(rel, "candidates", tag, n + ".so") for n in targets]
    if want:
        r = subprocess.run(["make", "-s", "-C", TOP, "BUILD=" + rel] + want,
                           capture_output=True, text=True, env=own_make_env())
        if r.returncode != 0:
            errors.append("make: %s" % r.stderr.strip()[-800:])
    return {n: (p if os.path.exists(p) else None) for n, p in targets.items()}, errors


def replay(dmm, trace, lib, threads):
    """(window seconds, peak RSS, seconds in the calls, RSS at the window's
    start, threads it ran on) of one replay, or an error string.  threads:
    on the trace's threads, the time their hand-overs took left out."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "GLIBC_TUNABLES") and not k.startswith("DMM_")
           and not k.startswith("MALLOC_")}
    if lib:
        env["LD_PRELOAD"] = lib
    r = subprocess.run([dmm, "replay", "--json"] + (["--threads"] if threads else []) + [trace],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    try:
        j = json.loads(r.stdout)
        return (j["wall_s"] - j["handoff_s"], j["peak_rss_bytes"], j["op_s"],
                j["baseline_rss_bytes"], j["threads"])
    except (ValueError, KeyError) as e:
        return "no result (%s)" % e


def trace_threads(d):
    """The threads that made calls in the trace, from DIR/stats.json (1
    where it does not say)."""
    try:
        with open(os.path.join(d, "stats.json")) as f:
            n = json.load(f).get("trace", {}).get("threads")
        return n if isinstance(n, int) and n > 1 else 1
    except (OSError, ValueError, AttributeError):
        return 1


def program_scale(d, base_t, base_m, threads):
    """(D, R, what was read) from DIR/stats.json: the recorded run's
    duration D (at least t_glibc; with several threads, its CPU time where
    that is longer) and the program's memory outside glibc's heap R;
    (t_glibc, 0) where the trace does not say."""
    dur = peak = cpu = None
    try:
        with open(os.path.join(d, "stats.json")) as f:
            tr = json.load(f).get("trace", {})
        dur, peak, cpu = tr.get("duration_s"), tr.get("peak_rss_bytes"), tr.get("cpu_s")
    except (OSError, ValueError, AttributeError):
        pass
    D = dur if isinstance(dur, (int, float)) and dur > base_t else base_t
    # the replay runs the threads' calls one at a time: what it saves is CPU
    # time, which a program whose threads ran side by side saves from its
    # wall time in the ratio of the two
    by_cpu = threads > 1 and isinstance(cpu, (int, float)) and cpu > D
    if by_cpu:
        D = cpu
    R = max(0, peak - base_m) if isinstance(peak, int) and peak > 0 else 0
    return D, R, dict(duration_s=dur, cpu_s=cpu, D_s=D, D_is_cpu=by_cpu, peak_rss_bytes=peak,
                      outside_heap_bytes=R)


def rank(values):
    """1-based ranks of values (lower first; ties share the lower rank)."""
    order = sorted(values)
    return [order.index(v) + 1 for v in values]


def beats_by_rounds(a, b):
    """Whether F_real per round a beats b in enough rounds that chance
    would do so less than 5 % of the time (a one-sided sign test: 5 of 5
    rounds, 7 of 7, 8 of 9...).  A program's runs move more than a
    replay's: git pack-objects' peak RSS follows its threads' timing, and
    a design that beat the search's best by 3 % at the median of 5 rounds
    (F 0.945 against 0.973) ran 7 fresh rounds at 0.979, where the design
    the replay had chosen ran 0.945."""
    n = len(a)
    wins = sum(1 for x, y in zip(a, b) if x < y)
    tail = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1
    return tail <= 0.05


def parse_run(run):
    """RUN's command line as (argv, environment): shell words (shlex), the
    leading NAME=value ones set in the program's environment, as `env`
    would.  Exits 2 with a message for an empty command or a program not
    found."""
    try:
        words = shlex.split(run)
    except ValueError as e:
        sys.stderr.write("measure: RUN=%s: %s\n" % (run, e))
        sys.exit(2)
    env = {}
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if not words:
        sys.stderr.write("measure: RUN=%s: no program to run\n" % run)
        sys.exit(2)
    prog = words[0]
    if not (shutil.which(prog) if "/" not in prog else os.access(prog, os.X_OK)):
        sys.stderr.write("measure: RUN=%s: %s: %s\n" % (
            run, prog, "not found on PATH" if "/" not in prog else "not an executable file"))
        sys.exit(2)
    return words, env


def measure_replays(a, dmm, names, libs, errors):
    """Each candidate's trace replayed, a.reps interleaved rounds: (rows
    without the designs' own fields, what measured.json says besides)."""
    runs = {n: [] for n in ["glibc"] + names}
    pins, orders = [], []
    threads = trace_threads(a.dir)
    for k in range(a.reps):
        cpu, speeds = cpupin.fastest_cpu()
        pins.append(cpupin.describe(cpu, speeds))
        order = list(runs)
        random.Random(k).shuffle(order)
        orders.append(order)
        with cpupin.pinned(cpu):
            for n in order:
                if n != "glibc" and not libs.get(n):
                    continue
                hugewarm.before_run(max((x[1] // 1024 for v in runs.values() for x in v),
                                        default=None))
                r = replay(dmm, a.trace, None if n == "glibc" else libs[n], threads > 1)
                if isinstance(r, str):
                    errors.append("%s: dmm replay: %s" % (n, r))
                    libs[n] = None
                    runs[n] = []
                else:
                    runs[n].append(r)
    if not runs["glibc"]:
        sys.exit("measure: the replay under glibc failed: %s" % "; ".join(errors))
    # heap: the peak above glibc's baseline, which is the driver's own
    # memory under any library; a library's own baseline would hide what it
    # held before the window opened (a huge extent that the driver's first
    # calls opened: up to 2 MiB, which the program pays as well)
    floor = statistics.median(x[3] for x in runs["glibc"])
    ran_on = max(x[4] for v in runs.values() for x in v)
    runs = {n: [(x[0], max(1, x[1] - floor), x[2]) for x in v] for n, v in runs.items()}
    base_t = statistics.median(x[0] for x in runs["glibc"])
    base_m = statistics.median(x[1] for x in runs["glibc"])
    D, R, prog = program_scale(a.dir, base_t, base_m, threads)
    share = 0.5 * base_t / D + 0.5 * base_m / (R + base_m)   # of F_meas, the replay's measures
    rows = {}
    for name in names:
        if not runs[name]:
            continue
        t = statistics.median(x[0] for x in runs[name])
        m = statistics.median(x[1] for x in runs[name])
        rows[name] = dict(seconds=t, seconds_min=min(x[0] for x in runs[name]),
                          seconds_max=max(x[0] for x in runs[name]),
                          call_seconds=statistics.median(x[2] for x in runs[name]),
                          heap_bytes=m, time_vs_glibc=t / base_t, heap_vs_glibc=m / base_m,
                          F_replay=0.5 * t / base_t + 0.5 * m / base_m,
                          F_meas=0.5 * (1 + (t - base_t) / D) + 0.5 * (R + m) / (R + base_m))
    out = dict(threads=ran_on,
               glibc=dict(seconds=base_t, heap_bytes=base_m, baseline_rss_bytes=floor,
                          call_seconds=statistics.median(x[2] for x in runs["glibc"])),
               program=prog, replay_share=share, pinned=pins, orders=orders)
    print("measure: as the program sees it: its run %.3f s%s, %.1f MB outside the heap "
          "(the replay's measures weigh %.3f of F_meas)" % (
              D, " of CPU (its threads' calls replayed one at a time)" if prog["D_is_cpu"] else "",
              R / 1e6, share))
    return rows, share, out


def measure_runs(a, names, libs, errors):
    """RUN=: the program itself run under glibc and each candidate, a.reps
    interleaved rounds (progrun.measure_program: an order shuffled each
    round; a single-threaded program's rounds each on the fastest CPU),
    F_meas = F_real = ½·time/time_glibc + ½·peak RSS/peak RSS_glibc
    (medians).  A candidate that changes the program's output or exit
    status is left out, unless glibc's own runs differ (then nothing is
    compared).  The margin's share is the time's half: peak RSS hardly
    moves from run to run."""
    argv, env = parse_run(a.run)
    gnu_time = progrun.find_gnu_time()
    if not gnu_time:
        sys.exit("measure: RUN= needs GNU time (/usr/bin/time) for the program's peak RSS")
    threads = trace_threads(a.dir)
    pins = []
    allocs = [("glibc", None)] + [(n, libs[n]) for n in names if libs.get(n)]
    res = progrun.measure_program(argv, env, None, allocs, a.reps, gnu_time, pins,
                                  pin=threads <= 1, strict=False, timeout=None)
    g = res["glibc"]
    if any(e != 0 for e in g["exit"]):
        sys.exit("measure: RUN=%s exited %s under glibc" % (
            a.run, ", ".join(str(e) for e in g["exit"] if e != 0)))
    if any(not x for x in g["rss"]):
        sys.exit("measure: GNU time gave no peak RSS for RUN=%s" % a.run)
    compared = g["same"]
    base_t = statistics.median(g["wall"])
    base_m = statistics.median(g["rss"]) * 1024
    rows = {}
    for name, _ in allocs[1:]:
        r = res[name]
        if compared and not r["same"]:
            errors.append("%s: the program's output or exit status was not glibc's (%s)" % (
                name, ", ".join(str(e) for e in r["exit"])))
            continue
        t = statistics.median(r["wall"])
        m = statistics.median(r["rss"]) * 1024
        # each round's own F_real, against that round's glibc run (the
        # rounds are in order in every list)
        per = [0.5 * w / gw + 0.5 * x / gx
               for w, x, gw, gx in zip(r["wall"], r["rss"], g["wall"], g["rss"])]
        rows[name] = dict(seconds=t, seconds_min=min(r["wall"]), seconds_max=max(r["wall"]),
                          heap_bytes=m, time_vs_glibc=t / base_t, heap_vs_glibc=m / base_m,
                          F_replay=0.5 * t / base_t + 0.5 * m / base_m,
                          F_meas=0.5 * t / base_t + 0.5 * m / base_m, F_rounds=per)
    out = dict(threads=threads, run=argv, run_env=env, outputs_compared=compared,
               glibc=dict(seconds=base_t, heap_bytes=base_m), pinned=pins)
    print("measure: the program itself, %d rounds: %s%s" % (
        a.reps, a.run, "" if compared else
        " (its output varies under glibc itself: not compared)"))
    return rows, 0.5, out


def against_glibc(f_meas, margin):
    """How a design that measured f_meas stands against glibc (F_meas 1):
    "ahead", "level" (within margin) or "behind"."""
    if f_meas < 1 - margin:
        return "ahead"
    return "behind" if f_meas > 1 + margin else "level"


def verdict_line(win, best, standing, margin, run):
    """One line for the user: how the chosen design, win, measured against
    glibc; best, the candidate that measured best (win, or one that did not
    beat it by the margin)."""
    what = "%s; time %.3fx, %s %.3fx of glibc's" % (
        "F_real %.4f" % win["F_meas"] if run else "F_meas %.4f" % win["F_meas"],
        win["time_vs_glibc"], "peak RSS" if run else "heap", win["heap_vs_glibc"])
    if standing == "ahead":
        return "the chosen design (%s) measured ahead of glibc: %s" % (win["name"], what)
    if standing == "level":
        return ("the chosen design (%s) measured level with glibc (within %.1f %%): %s; expect "
                "little or no gain from libdmm_evolved.so over glibc" % (
                    win["name"], 100 * margin, what))
    if against_glibc(best["F_meas"], margin) == "behind":
        who = "every design: the chosen one (%s): %s" % (win["name"], what)
    else:   # the best measured did not beat the chosen one by the margin
        who = "the chosen design (%s): %s; %s measured %.4f, within the noise of it" % (
            win["name"], what, best["name"], best["F_meas"])
    return ("glibc measured better than %s; expect no gain from libdmm_evolved.so over glibc on "
            "this program%s" % (who, "" if run else
                                " (make compare runs the program itself side by side)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir")
    ap.add_argument("--trace")
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--margin", type=float, default=0.02)
    ap.add_argument("--presets", default="kng,lea,fib,s10,exa",
                    help="the presets measured beside the search's designs")
    ap.add_argument("--run", help="measure on this program (a command line) instead of the "
                    "trace's replay")
    ap.add_argument("--tag", help="the candidates' folder in BUILD/candidates/ (default: the "
                    "name of --dir and a hash of its path)")
    ap.add_argument("--check-run", action="store_true",
                    help="only check that --run names a program that can run, exit 2 if not")
    a = ap.parse_args()
    if a.check_run:
        parse_run(a.run or "")
        return
    if not a.dir or not (a.trace or a.run):
        ap.error("--dir and --trace (or --run) are required")
    build = os.path.abspath(a.build)
    dmm = os.path.join(build, "dmm")
    with open(os.path.join(a.dir, "search.json")) as f:
        search = json.load(f)
    cands = candidates(search, a.presets.split(","))
    if not cands:
        sys.exit("measure: %s/search.json lists no candidate" % a.dir)
    names = [c[0] for c in cands]
    tag = a.tag or "%s-%s" % (os.path.basename(os.path.abspath(a.dir)).lstrip(".") or "dir",
                              hashlib.sha1(os.path.abspath(a.dir).encode()).hexdigest()[:8])
    tag = re.sub(r"[^A-Za-z0-9_.+-]", "_", tag)   # a make target's folder
    libs, errors = build_all(build, dmm, names, [c[1] for c in cands], tag)
    if a.run:
        measured, share, out = measure_runs(a, names, libs, errors)
    else:
        measured, share, out = measure_replays(a, dmm, names, libs, errors)
    rows = [dict(name=name, predicted_F=pred, dmm=text, **measured[name])
            for name, text, pred in cands if name in measured]
    if not rows:
        sys.exit("measure: no candidate could be measured: %s" % "; ".join(errors))
    for r, p, q in zip(rows, rank([r["predicted_F"] for r in rows]),
                       rank([r["F_meas"] for r in rows])):
        r["predicted_rank"], r["measured_rank"] = p, q
    win = min(rows, key=lambda r: (r["F_meas"], r["predicted_F"]))
    best = next((r for r in rows if r["name"] == "top-1"), None)
    if best and win is not best and (
            win["F_meas"] > best["F_meas"] * (1 - a.margin * share) or
            ("F_rounds" in win and not beats_by_rounds(win["F_rounds"], best["F_rounds"]))):
        win = best   # within the noise: the model's choice stands
    text = win["dmm"]
    first, rest = (text.split("\n", 1) + [""])[:2]
    if not first.startswith("#"):
        first, rest = "# dmm 1", text
    first = re.sub(r"\s+chosen=\S+", "", first)
    with open(os.path.join(a.dir, "chosen.dmm"), "w") as f:
        f.write("%s chosen=%s F_meas=%.4f\n%s" % (first, win["name"], win["F_meas"], rest))
    margin = a.margin * share
    standing = against_glibc(win["F_meas"], margin)
    verdict = verdict_line(win, min(rows, key=lambda r: r["F_meas"]), standing, margin,
                           bool(a.run))
    out.update(trace=a.trace, reps=a.reps, chosen=win["name"], candidates=rows, errors=errors,
               against_glibc=standing, glibc_margin=margin, verdict=verdict)
    with open(os.path.join(a.dir, "measured.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(a.dir, "measured.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "predicted_F", "predicted_rank", "seconds", "heap_bytes",
                    "time_vs_glibc", "heap_vs_glibc", "F_replay", "F_meas", "measured_rank"])
        for r in rows:
            w.writerow([r["name"], "%.6f" % r["predicted_F"], r["predicted_rank"],
                        "%.6f" % r["seconds"], r["heap_bytes"], "%.4f" % r["time_vs_glibc"],
                        "%.4f" % r["heap_vs_glibc"], "%.4f" % r["F_replay"], "%.4f" % r["F_meas"],
                        r["measured_rank"]])
    for r in sorted(rows, key=lambda r: r["measured_rank"]):
        print("measure: %-6s predicted #%-2d F %.4f   measured #%-2d time %.3fx %s %.3fx "
              "F_meas %.4f%s" % (r["name"], r["predicted_rank"], r["predicted_F"],
                                 r["measured_rank"], r["time_vs_glibc"],
                                 "RSS" if a.run else "heap", r["heap_vs_glibc"],
                                 r["F_meas"], "   <- chosen" if r is win else ""))
    print("measure: " + verdict)
    for e in errors:
        print("measure: left out: " + e, file=sys.stderr)


if __name__ == "__main__":
    main()
