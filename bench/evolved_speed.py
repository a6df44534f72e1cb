#!/usr/bin/env python3
"""evolved_speed.py - how fast the bundled workload runs on libdmm_evolved.so.

Runs build/bench/work_media (-f FRAMES) plainly on glibc, on libdmm.so with
DMM_CONFIG set to the .dmm that libdmm_evolved.so was generated from (the
same chain, generic dispatch, cost counters on), and on libdmm_evolved.so
(constant chain, direct calls, no counters), interleaved REPS times so that
drift hits all three alike.  Reports the median wall time of each and the
ratios; writes build/bench/evolved_speed.md and .json.  Timing only: the
tests check correctness, never speed."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    ap = benchlib.parser(__doc__, 7)
    ap.add_argument("--frames", type=int, default=3000)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    prog = [os.path.join(b, "bench", "work_media"), "-f", str(a.frames)]
    src = os.path.join(b, "evolved", "source.dmm")
    title = open(src).readline().lstrip("# ").strip()
    base = benchlib.clean_env()
    setups = [
        ("glibc", dict(base)),
        ("libdmm.so", dict(base, LD_PRELOAD=os.path.join(b, "libdmm.so"), DMM_CONFIG=src)),
        ("libdmm_evolved.so", dict(base, LD_PRELOAD=os.path.join(b, "libdmm_evolved.so"))),
    ]
    times = {n: [] for n, _ in setups}
    user = {n: [] for n, _ in setups}
    sys_ = {n: [] for n, _ in setups}
    outputs = {}
    for _ in range(a.reps):
        for n, env in setups:
            r = benchlib.run(prog, env)
            times[n].append(r["wall_s"])
            if r["exit"] != 0:
                raise SystemExit("%s: %s exited %d: %s" % (n, prog[0], r["exit"],
                                                          "\n".join(benchlib.tail(r["err"], 5))))
            user[n].append(r["user_s"])
            sys_[n].append(r["sys_s"])
            outputs.setdefault(n, r["out"])
    same = len(set(outputs.values())) == 1
    med = {n: statistics.median(v) for n, v in times.items()}
    lines = ["# libdmm_evolved.so speed", "",
             "Workload: `%s`, %d interleaved runs each. Chain: `%s` (%s)." % (
                 " ".join(["build/bench/work_media"] + prog[1:]), a.reps, title, src), "",
             "| allocator | median wall s | min–max s | user s | sys s | wall vs glibc | "
             "wall vs libdmm.so | user vs libdmm.so |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    mu = {n: statistics.median(v) for n, v in user.items()}
    ms = {n: statistics.median(v) for n, v in sys_.items()}
    for n, _ in setups:
        lines.append("| %s | %.3f | %.3f–%.3f | %.3f | %.3f | %.2f× | %.2f× | %.2f× |" % (
            n, med[n], min(times[n]), max(times[n]), mu[n], ms[n], med[n] / med["glibc"],
            med[n] / med["libdmm.so"], mu[n] / mu["libdmm.so"] if mu["libdmm.so"] else 0))
    lines += ["", "Output identical on all three: %s." % ("yes" if same else "NO")]
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_results(b, "evolved_speed", text, dict(
        frames=a.frames, reps=a.reps, chain=title, wall=times, user=user, sys=sys_,
        median_wall=med, same_output=same))


if __name__ == "__main__":
    main()
