#!/usr/bin/env python3
"""record_traces.py - record allocation traces of real programs for make bench.

    python3 bench/record_traces.py [BUILD] [OUTDIR]

Runs each program below once under BUILD/libdmmtrace.so (default build/)
and leaves its trace as OUTDIR/NAME.trc (default BUILD/bench/traces/):

  sqlite3   20k rows inserted into an indexed table (:memory:)
  python3   a dict of 4k entries to JSON and back (/usr/bin/python3 -s,
            PYTHONMALLOC=malloc)
  perl      a hash of 30k keys, half of them deleted
  sort      50k generated lines (LC_ALL=C, one thread): GNU sort reads
            into one big buffer, so its trace has a dozen blocks

The workloads and their command lines are benchlib's (benchlib.command at
benchlib.RECORDED's sizes); each is sized so that `dmm replay` of its trace
takes well under 0.5 s.  A program that is not installed is skipped with a
message; the exit status is 1 only when a program that is there fails or
leaves no trace.  An existing trace is replaced (the tracer itself never
overwrites)."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def record_all(build, out, names=benchlib.PROGRAMS):
    """Records each program of names into out/NAME.trc.  Returns a dict per
    program: name, trace (its path, or None), failed (a program that is
    there failed or left no trace) and message ('OUT/NAME.trc (N bytes)',
    'NAME skipped: ...', 'NAME failed:' and its last lines of standard
    error, or 'NAME left no trace')."""
    os.makedirs(out, exist_ok=True)
    res = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = dict(name=name, trace=None, failed=True)
            argv, extra = benchlib.command(name, benchlib.RECORDED[name], tmp)
            trc = os.path.join(tmp, name + ".trc")
            if not benchlib.installed(argv[0]):
                r.update(failed=False, message="%s skipped: %s not installed" % (name, argv[0]))
                res.append(r)
                continue
            ran = benchlib.record(build, trc, argv, extra)
            if ran["exit"] != 0:
                r["message"] = "\n".join(["%s failed:" % name] + benchlib.tail(ran["err"], 5))
            elif not os.path.exists(trc) or os.path.getsize(trc) == 0:
                r["message"] = "%s left no trace" % name
            else:
                dst = os.path.join(out, name + ".trc")
                shutil.move(trc, dst)
                r.update(trace=dst, failed=False,
                         message="%s (%d bytes)" % (dst, os.path.getsize(dst)))
            res.append(r)
    return res


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    build = os.path.abspath(args[0] if args else "build")
    out = os.path.abspath(args[1] if len(args) > 1 else os.path.join(build, "bench", "traces"))
    tracer = os.path.join(build, "libdmmtrace.so")
    if not os.path.isfile(tracer):
        print("record_traces: %s not built (run make)" % tracer, file=sys.stderr)
        return 1
    status = 0
    for r in record_all(build, out):
        print("record_traces: " + r["message"], file=sys.stdout if r["trace"] else sys.stderr,
              flush=True)
        if r["failed"]:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
