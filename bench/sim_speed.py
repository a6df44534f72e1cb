#!/usr/bin/env python3
"""sim_speed.py - how fast dmm sim replays a 1 M-operation trace, per preset.

Records the bundled workload (build/bench/work_media -f 1300, about 1 M
allocator operations) with libdmmtrace.so, then runs `dmm sim --all --time
--json` REPS times and reports the median and the range of simulated
operations per second for each of the five presets, with T and M (which do
not vary).  Writes build/bench/sim_speed.md and .json."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    ap = benchlib.parser(__doc__, 5)
    ap.add_argument("--frames", type=int, default=1300)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    with tempfile.TemporaryDirectory() as tmp:
        trc = os.path.join(tmp, "media.trc")
        r = benchlib.record(b, trc, [os.path.join(b, "bench", "work_media"), "-f", str(a.frames)],
                            stack=None)
        if r["exit"] != 0:
            raise SystemExit("sim_speed.py: recording work_media exited %d" % r["exit"])
        runs = []
        for _ in range(a.reps):
            out = subprocess.run([os.path.join(b, "dmm"), "sim", "--all", "--time", "--json", trc],
                                 check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out))
    names = [d["name"] for d in runs[0]["dmms"]]
    ops = runs[0]["dmms"][0]["operations"]
    lines = ["# dmm sim speed", "",
             "Trace: build/bench/work_media -f %d recorded by libdmmtrace.so, %d operations; %d runs."
             % (a.frames, ops, a.reps), "",
             "| preset | median M ops/s | min–max | T (cost units) | M (bytes) |",
             "|---|---:|---:|---:|---:|"]
    result = {}
    for i, n in enumerate(names):
        speeds = [r["dmms"][i]["simulated_ops_per_s"] / 1e6 for r in runs]
        d = runs[0]["dmms"][i]
        result[n] = dict(speeds=speeds, t=d["t"], m=d["m"])
        lines.append("| %s | %.2f | %.2f–%.2f | %d | %d |" % (n, statistics.median(speeds),
                     min(speeds), max(speeds), d["t"], d["m"]))
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(b, "sim_speed", text, dict(operations=ops, presets=result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
