#!/bin/sh
# demo.sh - trace the bundled workload (bench/work_media, a multimedia-like
# allocation pattern) under libdmmtrace.so and print what it asked of the
# allocator.  Until `make evolve` exists this is the README's first command.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/demo"
mkdir -p "$out"
rm -f "$out"/work_media.*.trc
echo "== tracing: LD_PRELOAD=build/libdmmtrace.so build/bench/work_media -f 600"
DMM_TRACE_FILE="$out/work_media.%p.trc" LD_PRELOAD="$top/build/libdmmtrace.so" \
    "$top/build/bench/work_media" -f 600
trace=$(ls "$out"/work_media.*.trc | head -n 1)
echo "== trace: $trace ($(wc -c < "$trace") bytes)"
echo "== dmm stats $trace"
"$top/build/dmm" stats --top 5 "$trace"
echo "== the same trace as an mdriver .rep: $out/work_media.rep"
"$top/build/dmm" convert --force "$trace" "$out/work_media.rep"
