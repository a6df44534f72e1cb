#!/usr/bin/env python3
"""fastpath.py - instructions per malloc + free pair, counted by callgrind
(deterministic, unlike timings on a shared machine).

    python3 bench/fastpath.py [--build DIR] [--traces a,b]

Hot small sizes: build/bench/work_pairs (-s 32 and -s 200: 64 blocks of
SIZE..SIZE+24 bytes allocated, then freed, per round) under each allocator,
run twice under callgrind (1000 and 2000 rounds); the difference divided by
the 64000 pairs between them is what one pair costs, start-up and exit
cancelled out (the loop's own few instructions included, the same for all).
Recorded traces (build/bench/traces/NAME.trc, when there): `dmm replay
--no-write` under each allocator, instructions per operation of the whole
replay (the driver's share is the same for every allocator).

Allocators: glibc, jemalloc, mimalloc, tcmalloc (when installed), libdmm.so
(lea) and libdmm_evolved.so; on each recorded trace also the library that
bench/programs.py evolved for that program (DIR/bench/programs/NAME/,
when there: `make bench` runs programs.py first).  Writes
DIR/bench/fastpath.md and .json."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402

OWN = "the program's own libdmm_evolved.so"
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def callgrind(argv, env):
    """Instructions of one run under callgrind, or None.  dmm replay reads
    the trace in a forked child, which callgrind follows and reports first:
    the process that replays is the one that exits last."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = REFS.findall(r.stderr)
    return int(m[-1].replace(",", "")) if r.returncode == 0 and m else None


def allocators(build):
    out, _ = peers.peer_allocators()
    out.append(("libdmm.so lea", os.path.join(build, "libdmm.so")))
    out.append(("libdmm_evolved.so", os.path.join(build, "libdmm_evolved.so")))
    return out


def env_for(name, lib):
    env = benchlib.clean_env()
    if lib:
        env["LD_PRELOAD"] = lib
    if name.startswith("libdmm.so"):
        env["DMM_CONFIG"] = name.split()[1]
    return env


def main():
    ap = benchlib.parser(__doc__, 1)
    ap.add_argument("--traces", default="sqlite3,python3,perl")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if not benchlib.installed("valgrind"):
        raise SystemExit("fastpath: valgrind is needed (apt-get install valgrind)")
    allocs = allocators(build)
    pairs = os.path.join(build, "bench", "work_pairs")
    data = {}
    for size in (32, 200):
        for name, lib in allocs:
            n = [callgrind([pairs, "-n", str(k), "-s", str(size)], env_for(name, lib))
                 for k in (1000, 2000)]
            per = (n[1] - n[0]) / 64000.0 if None not in n else None
            data.setdefault(name, {})["pair_%d" % size] = per
    traces = [t for t in a.traces.split(",")
              if os.path.exists(os.path.join(build, "bench", "traces", t + ".trc"))]
    for t in traces:
        path = os.path.join(build, "bench", "traces", t + ".trc")
        ops = None
        for name, lib in allocs:
            n = callgrind([os.path.join(build, "dmm"), "replay", "--no-write", "--json", path],
                          env_for(name, lib))
            if ops is None:
                r = subprocess.run([os.path.join(build, "dmm"), "replay", "--no-write", "--json",
                                    path], capture_output=True, text=True)
                try:
                    ops = json.loads(r.stdout)["ops"]
                except (ValueError, KeyError):
                    ops = None
            data[name]["replay_" + t] = n / ops if n and ops else None
        own = os.path.join(build, "bench", "programs", t, "libdmm_evolved.so")
        if os.path.exists(own) and ops:
            n = callgrind([os.path.join(build, "dmm"), "replay", "--no-write", "--json", path],
                          env_for(OWN, own))
            data.setdefault(OWN, {})["replay_" + t] = n / ops if n else None
    mi = data.get("mimalloc", {})
    head = ["allocator", "pair, 32–56 B", "pair, 200–224 B"] + ["%s replay, per op" % t
                                                             for t in traces]
    keys = ["pair_32", "pair_200"] + ["replay_" + t for t in traces]
    lines = ["# Fast paths: instructions (callgrind)", "", benchlib.machine_line(), "",
             "A malloc + free pair of `build/bench/work_pairs` (64 live blocks, four sizes "
             "8 bytes apart), and a whole `dmm replay --no-write` of each recorded trace per "
             "operation (the driver's instructions included, the same for all). In brackets: "
             "against mimalloc.", "",
             "| " + " | ".join(head) + " |", "|---|" + "---:|" * len(keys)]
    if OWN in data:
        allocs.append((OWN, None))
    for name, _ in allocs:
        cells = []
        for k in keys:
            v = data[name].get(k)
            ref = mi.get(k)
            cells.append("—" if v is None else "%.0f" % v +
                         (" (%.2f×)" % (v / ref) if ref else ""))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(build, "fastpath", text, dict(instructions=data))


if __name__ == "__main__":
    main()
