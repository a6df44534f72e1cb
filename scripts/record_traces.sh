#!/bin/sh
# record_traces.sh - record allocation traces of real programs for make bench.
#
#   scripts/record_traces.sh [BUILD] [OUTDIR]
#
# Runs each program below once under BUILD/libdmmtrace.so (default build/)
# and leaves its trace as OUTDIR/NAME.trc (default BUILD/bench/traces/):
#
#   sqlite3   20k rows inserted into an indexed table (:memory:)
#   python3   a dict of 4k entries to JSON and back (/usr/bin/python3 -s,
#             PYTHONMALLOC=malloc)
#   perl      a hash of 30k keys, half of them deleted
#   sort      50k generated lines (LC_ALL=C, one thread): GNU sort reads
#             into one big buffer, so its trace has a dozen blocks
#
# Each is sized so that `dmm replay` of its trace takes well under 0.5 s.
# A program that is not installed is skipped with a message; the exit status
# is 1 only when a program that is there fails or leaves no trace.
# An existing trace is replaced (the tracer itself never overwrites).
set -u

build=${1:-build}
out=${2:-$build/bench/traces}
tracer=$(cd "$build" 2>/dev/null && pwd)/libdmmtrace.so
if [ ! -f "$tracer" ]; then
    echo "record_traces: $tracer not built (run make)" >&2
    exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

status=0

# record NAME PROGRAM ARGS...: the trace of one run of PROGRAM as OUT/NAME.trc
record() {
    name=$1; shift
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "record_traces: $name skipped: $1 not installed" >&2
        return 0
    fi
    rm -f "$tmp/$name.trc"
    if ! DMM_TRACE_FILE="$tmp/$name.trc" DMM_TRACE_STACK=0 LD_PRELOAD="$tracer" \
            "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null; then
        echo "record_traces: $name failed:" >&2
        tail -5 "$tmp/$name.err" >&2
        status=1
        return 0
    fi
    if [ ! -s "$tmp/$name.trc" ]; then
        echo "record_traces: $name left no trace" >&2
        status=1
        return 0
    fi
    mv -f "$tmp/$name.trc" "$out/$name.trc"
    echo "record_traces: $out/$name.trc ($(wc -c <"$out/$name.trc") bytes)"
}

record sqlite3 sqlite3 :memory: \
    "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
     CREATE INDEX t_k ON t(k);
     WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<20000)
       INSERT INTO t(k,v) SELECT printf('key%08d',(x*7919)%100003), x FROM c;
     SELECT count(*), sum(v), min(k), max(k) FROM t;"

# PYTHONMALLOC=malloc: every object through malloc (pymalloc would serve the
# small ones from its own 256 KiB arenas, leaving a few thousand calls).
PYTHONMALLOC=malloc; export PYTHONMALLOC
record python3 /usr/bin/python3 -s -c '
import json
d = {}
for i in range(4000):
    d["k%d" % i] = {"id": i, "name": "item%d" % i,
                   "tags": [i % 7, i % 11, "t%d" % (i % 13)], "v": i * 0.5}
s = json.dumps(d, sort_keys=True)
e = json.loads(s)
del d
print(len(s), sum(v["id"] for v in e.values()), len(e))'
unset PYTHONMALLOC

record perl perl -e '
my %h; my $n = 30000;
for my $i (1..$n) { $h{"key$i"} = [$i, "v" x ($i % 17)] }
my $t = 0; $t += $h{$_}[0] for keys %h;
delete $h{"key$_"} for grep { $_ % 2 } 1..$n;
print scalar(keys %h), " $t\n"'

# The sort input: 50k lines, the same every time (awk's fixed seed).
awk 'BEGIN { srand(20240601);
             split("alpha bravo charlie delta echo foxtrot golf hotel india juliet", w, " ");
             for (i = 0; i < 50000; i++)
                 printf "%s %08d %s %d\n", w[int(rand()*10)+1], int(rand()*100000000),
                        w[int(rand()*10)+1], i }' >"$tmp/sort_input.txt"
LC_ALL=C; export LC_ALL
record sort sort --parallel=1 "$tmp/sort_input.txt"

exit $status
