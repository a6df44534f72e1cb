#!/usr/bin/env python3
"""evolved_speed.py - how fast the bundled workload runs on libdmm_evolved.so.

Runs build/bench/work_media (-f FRAMES) plainly on glibc, on libdmm.so with
DMM_CONFIG set to the .dmm that libdmm_evolved.so was generated from (the
same chain, generic dispatch, cost counters on), and on libdmm_evolved.so
(constant chain, direct calls, no counters), interleaved REPS times so that
drift hits all three alike.  Reports the median wall time of each and the
ratios; writes build/bench/evolved_speed.md and .json.  Timing only: the
tests check correctness, never speed."""
import argparse
import json
import os
import statistics
import subprocess
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "7")))
    ap.add_argument("--frames", type=int, default=3000)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    prog = [os.path.join(b, "bench", "work_media"), "-f", str(a.frames)]
    src = os.path.join(b, "evolved", "source.dmm")
    title = open(src).readline().lstrip("# ").strip()
    base = {k: v for k, v in os.environ.items() if not k.startswith("DMM_") and k != "LD_PRELOAD"}
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
            t0 = time.perf_counter()
            p = subprocess.Popen(prog, env=env, stdout=subprocess.PIPE, text=True)
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
            times[n].append(time.perf_counter() - t0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                raise SystemExit("%s: %s exited %d" % (n, prog[0], p.returncode))
            user[n].append(ru.ru_utime)
            sys_[n].append(ru.ru_stime)
            outputs.setdefault(n, out)
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
    os.makedirs(os.path.join(b, "bench"), exist_ok=True)
    with open(os.path.join(b, "bench", "evolved_speed.md"), "w") as f:
        f.write(text)
    with open(os.path.join(b, "bench", "evolved_speed.json"), "w") as f:
        json.dump(dict(frames=a.frames, reps=a.reps, chain=title, wall=times, user=user,
                       sys=sys_, median_wall=med, same_output=same), f, indent=1)


if __name__ == "__main__":
    main()
