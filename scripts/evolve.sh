#!/bin/sh
# evolve.sh - the `make evolve` pipeline: a trace in, a memory allocator made
# for it out.
#
#   make evolve [TRACE=file] [POP=N GENS=N SEED=S JOBS=J TIME=SECONDS MPI=N MEASURE=N RUN=CMD]
#               [OBJECTIVES=time,memory[,worst] [PICK=N]] [HOLDOUT=file...]
#               [POOL=auto|BYTES]
#
# Without TRACE it records the bundled workload (build/bench/work_media) under
# libdmmtrace.so; with TRACE it uses that trace (any format dmm reads), named
# after its file name without the extension; TRACE=DIR (dmm record's) the
# trace of DIR's process that allocated most.  TRACE="a.trc b.trc ...":
# every design is scored on each (dmm evolve with several traces), NAME and
# the measured candidates from the first; HOLDOUT="c.trc ...": traces the
# search never sees, the best scored on them afterwards (traces.csv).
# (Several traces are split at spaces: their paths must have none.)
# Then, into build/evolve/NAME/:
#
#   stats.txt, stats.json      dmm stats: what the program asks for (Table 2)
#   grammar.bnf, best.dmm,     dmm evolve: the grammar of the trace and the
#   log.csv, references.csv,   search over it (POP, GENS, SEED, JOBS, TIME
#   search.json, top-N.dmm     passed through; MPI=N: under mpirun -np N)
#   chosen.dmm, measured.json, the five best designs and the five presets
#   measured.csv               compiled and the trace replayed under each for
#                              real (MEASURE=N rounds, 5; MEASURE=0: none,
#                              best.dmm is chosen): the best measured F is
#                              the one built (scripts/measure_candidates.py);
#                              RUN='[VAR=value ...] PROGRAM ARGS': the program
#                              itself run under each instead, F_real decides
#   front-N.dmm, front.csv,    OBJECTIVES: dmm evolve --objectives, a Pareto
#   front.gp, picked.txt       search; chosen.dmm is front-PICK.dmm (default:
#                              the knee), not measured
#                              POOL: chosen.dmm gains a pool line (auto: its
#                              simulated peak footprint less the page map's
#                              pages, which the footprint counts beside it)
#   record.json                TRACE=DIR: the command dmm record ran, which
#                              report.md's lines run when the process picked
#                              is one it started
#   sim.json                   dmm sim of chosen.dmm: each allocator's share
#   dmm_evolved.c              dmm codegen of chosen.dmm
#   libdmm_evolved.so          built from it (also copied to build/)
#   report.md, plots/          scripts/evolve_report.py: Tables 2, 3/4 and 1,
#                              the search's convergence and the request sizes
#                              (gnuplot), the line that runs the program on its
#                              allocator, a link to make bench's report;
#                              `dmm report build/evolve/NAME` writes it again
#
# Everything is written into a scratch directory that replaces
# build/evolve/NAME only when every step has succeeded; a failure leaves the
# previous result, if any, as it was.  Exit status 2 for a bad TRACE.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${BUILD:-build}
dmm="$top/$build/dmm"
# The bundled workload's size: the whole pipeline stays within a few minutes
# on two cores (see the README, "Evolving: make evolve").
frames=${MEDIA_FRAMES:-600}

say() { printf 'evolve: %s\n' "$*"; }
die() { printf 'evolve: %s\n' "$*" >&2; exit 2; }

# One trace of TRACE or HOLDOUT as a readable file's absolute path (dmm
# record's directory: the process that allocated most, said so).
resolve_trace() {
    t=$1
    if [ -d "$t" ]; then
        errf=$(mktemp)
        if picked=$("$dmm" record --pick "$t" 2>"$errf"); then
            sed 's/^dmm record: /evolve: /' "$errf" >&2
            rm -f "$errf"
            t=$picked
        else
            msg=$(sed 's/^dmm record: //' "$errf")
            rm -f "$errf"
            die "TRACE '$t': $msg"
        fi
    fi
    [ -e "$t" ] || die "TRACE '$t' does not exist"
    [ -f "$t" ] && [ -r "$t" ] || die "TRACE '$t' is not a readable file"
    case $t in /*) ;; *) t="$PWD/$t" ;; esac
    printf '%s\n' "$t"
}

trace=${TRACE:-}
more=
holdout=
recdir=
case $trace in
*" "*)
    # several traces: the first names the run; the rest are seen too
    set -f
    set -- $trace
    set +f
    trace=$(resolve_trace "$1") || exit 2
    shift
    for t in "$@"; do
        t=$(resolve_trace "$t") || exit 2
        more="$more $t"
    done
    ;;
*)
    # dmm record's directory: the command it ran, for report.md's lines
    # that run the program (the process picked may be one it started)
    [ -d "$trace" ] && recdir=$trace
    [ -n "$trace" ] && { trace=$(resolve_trace "$trace") || exit 2; }
    ;;
esac
if [ -n "${RUN:-}" ]; then
    # the measured step runs RUN: a program that cannot run is said now,
    # not after the search
    [ "${MEASURE:-5}" != 0 ] && [ -z "${OBJECTIVES:-}" ] ||
        die "RUN= measures the candidates: not with MEASURE=0 or OBJECTIVES="
    python3 "$top/scripts/measure_candidates.py" --check-run --run "$RUN" || exit 2
fi
if [ -n "${HOLDOUT:-}" ]; then
    set -f
    for t in $HOLDOUT; do
        t=$(resolve_trace "$t") || exit 2
        holdout="$holdout $t"
    done
    set +f
fi
if [ -n "$trace" ]; then
    name=$(basename "$trace")
    name=${name%.*}
    [ -n "$name" ] || name=trace
else
    name=work_media
fi

out="$top/$build/evolve/$name"
mkdir -p "$top/$build/evolve"
tmp=$(mktemp -d "$top/$build/evolve/.$name.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

if [ -n "$recdir" ]; then
    "$dmm" record --root "$recdir" 2>/dev/null |
        python3 "$top/scripts/evolve_report.py" --recorded "$recdir" >"$tmp/record.json" ||
        rm -f "$tmp/record.json"
fi

start=$(date +%s.%N)
step() {
    now=$(date +%s.%N)
    printf 'evolve: [%6.1fs] %s\n' "$(awk "BEGIN { print $now - $start }")" "$*"
}

if [ -z "$trace" ]; then
    step "recording the bundled workload: LD_PRELOAD=$build/libdmmtrace.so $build/bench/work_media -f $frames"
    DMM_TRACE_FILE="$tmp/work_media.trc" LD_PRELOAD="$top/$build/libdmmtrace.so" \
        "$top/$build/bench/work_media" -f "$frames" >/dev/null
    trace="$tmp/work_media.trc"
    final_trace="$out/work_media.trc"
else
    final_trace="$trace"
fi

step "dmm stats"
"$dmm" stats "$trace" >"$tmp/stats.txt" || die "dmm stats could not read '$final_trace'"
"$dmm" stats --json "$trace" >"$tmp/stats.json"

set --
[ -n "${POP:-}" ] && set -- "$@" --pop "$POP"
[ -n "${GENS:-}" ] && set -- "$@" --gens "$GENS"
[ -n "${SEED:-}" ] && set -- "$@" --seed "$SEED"
[ -n "${JOBS:-}" ] && set -- "$@" --jobs "$JOBS"
[ -n "${TIME:-}" ] && set -- "$@" --time "$TIME"
[ -n "${OBJECTIVES:-}" ] && set -- "$@" --objectives "$OBJECTIVES"
for t in $holdout; do set -- "$@" --holdout "$t"; done
if [ -n "${PICK:-}" ]; then
    [ -n "${OBJECTIVES:-}" ] || die "PICK=$PICK picks a design of a Pareto front: set OBJECTIVES too (e.g. OBJECTIVES=time,memory)"
    case $PICK in ''|*[!0-9]*|0*) die "PICK=$PICK: a number from 1 (front-1.dmm) up" ;; esac
fi
if [ -n "${MPI:-}" ] && [ -n "$more$holdout" ]; then
    die "MPI=$MPI takes one trace (no more in TRACE, no HOLDOUT)"
fi
if [ -n "${MPI:-}" ]; then
    # MPI=N: N ranks under mpirun on this host (rank 0 searches, the others
    # evaluate); root needs Open MPI's explicit consent
    command -v mpirun >/dev/null || die "MPI=$MPI needs mpirun (Debian: openmpi-bin)"
    [ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # when a rank dies, mpirun leaves the others 1 s (by default) between
    # its SIGTERM and its SIGKILL: give rank 0 time to write the best so far
    export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-5}
    step "mpirun -np $MPI dmm evolve --mpi $* --out $tmp/search $trace"
    mpirun --oversubscribe -np "$MPI" "$dmm" evolve --mpi "$@" --out "$tmp/search" "$trace"
else
    step "dmm evolve $* --out $tmp/search $trace$more"
    # shellcheck disable=SC2086 # $more: the other traces, one word each
    "$dmm" evolve "$@" --out "$tmp/search" "$trace" $more
fi
for f in "$tmp/search"/*; do mv "$f" "$tmp/"; done
rmdir "$tmp/search"

if [ -n "${OBJECTIVES:-}" ]; then
    # the user picks from the front (PICK=N), else its knee; measuring would
    # choose by eq. 1 again
    n=$(find "$tmp" -maxdepth 1 -name 'front-*.dmm' | wc -l)
    [ "$n" -gt 0 ] || die "the search found no valid design: no front"
    if [ -n "${PICK:-}" ]; then
        [ "$PICK" -le "$n" ] || die "PICK=$PICK: the front has $n designs (front-1.dmm .. front-$n.dmm)"
        pick=$PICK
    else
        pick=$(awk -F, '$1 == "knee" { sub(/^front-/, "", $2); sub(/\.dmm$/, "", $2); print $2 }' "$tmp/front.csv")
    fi
    cp "$tmp/front-$pick.dmm" "$tmp/chosen.dmm"
    echo "front-$pick.dmm" >"$tmp/picked.txt"
    step "building front-$pick.dmm of $n on the front ($( [ -n "${PICK:-}" ] && echo "PICK=$PICK" || echo "the knee; PICK=N for another"))"
elif [ -n "${RUN:-}" ]; then
    step "measuring the search's best designs and the five presets on the program itself (${MEASURE:-5} rounds): $RUN"
    python3 "$top/scripts/measure_candidates.py" --dir "$tmp" --trace "$trace" \
        --build "$top/$build" --tag "$name" --reps "${MEASURE:-5}" --run "$RUN" ||
        die "measuring the candidates failed"
elif [ "${MEASURE:-5}" != 0 ]; then
    step "measuring the search's best designs and the five presets on the trace (${MEASURE:-5} rounds)"
    python3 "$top/scripts/measure_candidates.py" --dir "$tmp" --trace "$trace" \
        --build "$top/$build" --tag "$name" --reps "${MEASURE:-5}" ||
        die "measuring the candidates failed"
else
    cp "$tmp/best.dmm" "$tmp/chosen.dmm"
fi

if [ -n "${POOL:-}" ]; then
    # memory held and populated from the start: the calls that take it make
    # no system call and no page fault (the .dmm line `pool bytes=N`)
    case $POOL in
    auto)
        # the largest pool that leaves the simulated peak footprint where
        # it is (dmm sim --fit-pool): the peak's chunks, M less the page
        # map's pages, when no chunk of the peak lies above a hole; less
        # for a design that gives chunks back below its top
        bytes=$("$dmm" sim --json --fit-pool --dmm "$tmp/chosen.dmm" "$trace" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["dmms"][0]["pool_keeping_m"])') ||
            die "dmm sim of chosen.dmm failed" ;;
    ''|*[!0-9]*) die "POOL=$POOL: auto, or a number of bytes" ;;
    *) bytes=$POOL ;;
    esac
    sed -i '/^pool[[:space:]]/d' "$tmp/chosen.dmm"
    if [ "$bytes" = 0 ]; then
        step "chosen.dmm holds no pool: not a page of one keeps its peak footprint (POOL=auto)"
    else
        printf 'pool          bytes=%s\n' "$bytes" >>"$tmp/chosen.dmm"
        step "chosen.dmm holds a pool of $bytes bytes (POOL=$POOL)"
    fi
fi

step "dmm codegen chosen.dmm -> dmm_evolved.c"
(cd "$tmp" && "$dmm" codegen -o dmm_evolved.c chosen.dmm)

# A make of its own: make evolve's recipe is not marked as one that runs
# make, so the parent's jobserver is not this one's (a make that finds its
# MAKEFLAGS warns "jobserver unavailable"); the Makefile picks its -j.
submake() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} --no-print-directory "$@"
}

step "building libdmm_evolved.so from chosen.dmm"
submake BUILD="$build" EVOLVED_DMM="$tmp/chosen.dmm" "$build/libdmm_evolved.so" \
    >"$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log" >&2; die "building libdmm_evolved.so failed"; }
rm -f "$tmp/build.log"
cp "$build/libdmm_evolved.so" "$tmp/libdmm_evolved.so"

step "dmm sim chosen.dmm (each allocator's share)"
"$dmm" sim --json --dmm "$tmp/chosen.dmm" "$trace" >"$tmp/sim.json"

elapsed=$(awk "BEGIN { print $(date +%s.%N) - $start }")
set --
if [ "$name" = work_media ] && [ -z "${TRACE:-}" ]; then
    step "running the workload on the new library (DMM_STATS=1)"
    DMM_STATS=1 LD_PRELOAD="$tmp/libdmm_evolved.so" "$top/$build/bench/work_media" -f "$frames" \
        >/dev/null 2>"$tmp/run.err" || { cat "$tmp/run.err" >&2; die "the workload failed on libdmm_evolved.so"; }
    peak=$(sed -n 's/.*bytes now, \([0-9]*\) at peak.*/\1/p' "$tmp/run.err")
    rm -f "$tmp/run.err"
    [ -n "$peak" ] && set -- --real-peak "$peak"
fi
step "report.md"
python3 "$top/scripts/evolve_report.py" --dir "$tmp" --final-dir "$out" --trace "$final_trace" \
    --name "$name" --seconds "$elapsed" --build "$build" \
    --bench-report "$top/$build/bench/report.md" "$@" >/dev/null

rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
# build/libdmm_evolved.so (and the make rules' record of its source) from
# the result's final place; the same .dmm, so the same library
submake BUILD="$build" EVOLVED_DMM="$out/chosen.dmm" "$build/libdmm_evolved.so" \
    >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; die "building $build/libdmm_evolved.so failed"; }
rm -f "$out/build.log"
step "done: $out"
say "report:  $out/report.md"
say "run it:  $(grep -m1 '^LD_PRELOAD=' "$out/report.md" | head -n 1)"
say "compare: $(grep -m1 '^make compare ' "$out/report.md" | head -n 1)"
# a design that measured level with glibc or behind it: said again last,
# where the user reads (measure_candidates.py's verdict)
if [ -f "$out/measured.json" ]; then
    python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
if m.get("against_glibc") in ("level", "behind"):
    print("evolve: note: " + m["verdict"])' "$out/measured.json" || true
fi
