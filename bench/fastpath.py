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
replay (the driver's share is the same for every allocator), and of the
allocator alone (bench/cgcount.py: glibc's entry points inclusive; a
preloaded library's own code and what it calls in other libraries, such as
realloc's memcpy), which shows the difference between allocators without
the driver's instructions diluting it.  And for each recorded trace, the
pair again at that trace's most requested size (work_pairs -s SIZE: SIZE..
SIZE+24, as the trace's hot sizes come), the program's own library among
the allocators: the fast path each program's design gives its hot sizes.

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
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import cgcount  # noqa: E402
import peers  # noqa: E402

OWN = "the program's own libdmm_evolved.so"
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def callgrind(argv, env, out="/dev/null"):
    """Instructions of one run under callgrind, or None; its counts in the
    file out.  dmm replay reads the trace in a forked child, which callgrind
    follows and reports first: the process that replays is the one that
    exits last, whose counts are those left in out."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = REFS.findall(r.stderr)
    return int(m[-1].replace(",", "")) if r.returncode == 0 and m else None


def replay_counts(argv, env, lib):
    """(instructions of the whole run, of the allocator's calls) of one run
    under callgrind, None for either it did not give: lib is the preloaded
    library, None for glibc."""
    fd, out = tempfile.mkstemp(prefix="dmm-fastpath.")
    os.close(fd)
    n = None
    try:
        n = callgrind(argv, env, out)
        if n is None:
            return None, None
        if lib:
            alloc, _ = cgcount.object_instructions(out, os.path.realpath(lib), calls=True)
        else:
            alloc, _ = cgcount.entry_instructions(out)
        return n, alloc
    except (OSError, RuntimeError, subprocess.CalledProcessError):
        return n, None
    finally:
        os.unlink(out)


def pair(pairs, size, env):
    """Instructions of one malloc + free pair of work_pairs -s size (the
    difference of 1000 and 2000 rounds over the 64000 pairs between), or
    None."""
    n = [callgrind([pairs, "-n", str(k), "-s", str(size)], env) for k in (1000, 2000)]
    return (n[1] - n[0]) / 64000.0 if None not in n else None


def hottest_size(build, trace):
    """The size trace requests most often (dmm stats), or None."""
    r = subprocess.run([os.path.join(build, "dmm"), "stats", "--json", trace],
                       capture_output=True, text=True)
    try:
        return int(json.loads(r.stdout)["top_sizes"][0]["size"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


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


def table(data, names, head, keys):
    """A markdown table: a row per allocator of names, a column per key of
    data[name], each against mimalloc's in brackets."""
    mi = data.get("mimalloc", {})
    lines = ["| allocator | " + " | ".join(head) + " |", "|---|" + "---:|" * len(keys)]
    for name in names:
        cells = []
        for k in keys:
            v = data.get(name, {}).get(k)
            ref = mi.get(k)
            cells.append("—" if v is None else "%.0f" % v +
                         (" (%.2f×)" % (v / ref) if ref else ""))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return lines


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
            data.setdefault(name, {})["pair_%d" % size] = pair(pairs, size, env_for(name, lib))
    traces = [t for t in a.traces.split(",")
              if os.path.exists(os.path.join(build, "bench", "traces", t + ".trc"))]
    hot = {}
    for t in traces:
        path = os.path.join(build, "bench", "traces", t + ".trc")
        ops = None
        replay = [os.path.join(build, "dmm"), "replay", "--no-write", "--json", path]
        for name, lib in allocs:
            n, alloc = replay_counts(replay, env_for(name, lib), lib)
            if ops is None:
                r = subprocess.run([os.path.join(build, "dmm"), "replay", "--no-write", "--json",
                                    path], capture_output=True, text=True)
                try:
                    ops = json.loads(r.stdout)["ops"]
                except (ValueError, KeyError):
                    ops = None
            data[name]["replay_" + t] = n / ops if n and ops else None
            data[name]["alloc_" + t] = alloc / ops if alloc is not None and ops else None
        own = os.path.join(build, "bench", "programs", t, "libdmm_evolved.so")
        if os.path.exists(own) and ops:
            n, alloc = replay_counts(replay, env_for(OWN, own), own)
            data.setdefault(OWN, {})["replay_" + t] = n / ops if n else None
            data[OWN]["alloc_" + t] = alloc / ops if alloc is not None else None
        hot[t] = hottest_size(build, path)
        if hot[t] is None:
            continue
        for name, lib in allocs + ([(OWN, own)] if os.path.exists(own) else []):
            data.setdefault(name, {})["hot_" + t] = pair(pairs, hot[t], env_for(name, lib))
    if OWN in data:
        allocs.append((OWN, None))
    names = [name for name, _ in allocs]
    lines = ["# Fast paths: instructions (callgrind)", "", benchlib.machine_line(), "",
             "A malloc + free pair of `build/bench/work_pairs` (64 live blocks, four sizes "
             "8 bytes apart), and a whole `dmm replay --no-write` of each recorded trace per "
             "operation (the driver's instructions included, the same for all). In brackets: "
             "against mimalloc.", ""]
    lines += table(data, names, ["pair, 32–56 B", "pair, 200–224 B"] +
                   ["%s replay, per op" % t for t in traces],
                   ["pair_32", "pair_200"] + ["replay_" + t for t in traces])
    if traces:
        lines += ["", "The allocator's calls alone, per operation of each replay: a preloaded "
                  "library's own code and what it calls in other libraries (realloc's memcpy, "
                  "calloc's memset, system calls); glibc's allocation entry points, what they "
                  "call included (callgrind's inclusive counts). The driver's own "
                  "instructions, the same under every allocator, are left out, so the "
                  "allocators differ here by as much as their calls do.", ""]
        lines += table(data, names, ["%s, per op" % t for t in traces],
                       ["alloc_" + t for t in traces])
        shown = [t for t in traces if hot.get(t) is not None]
        lines += ["", "A malloc + free pair again at each trace's most requested size "
                  "(`work_pairs -s SIZE`: SIZE to SIZE+24 bytes), where the program's own "
                  "library serves it from its hot path.", ""]
        lines += table(data, names, ["pair, %s's %d–%d B" % (t, hot[t], hot[t] + 24)
                                     for t in shown], ["hot_" + t for t in shown])
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(build, "fastpath", text, dict(instructions=data))


if __name__ == "__main__":
    main()
