#!/bin/sh
# run_tests.sh - run each Criterion test binary given, then print one
# closing line with the totals of all of them: "tests: N passed, N failed".
set -u
jobs=${JOBS:-2}
passed=0 failed=0 broken=""
for t in "$@"; do
    t0=$(date +%s)
    out=$("$t" --jobs "$jobs" 2>&1)
    rc=$?
    secs=$(($(date +%s) - t0))
    printf '%s\n' "$out" | grep -v '^\[----\]   $' | grep -E '^\[(FAIL|----)\]|Synthesis' |
        sed "s|^|$(basename "$t"): |; /Synthesis/s|\$| (${secs} s)|"
    syn=$(printf '%s\n' "$out" | grep 'Synthesis' | tail -1)
    p=$(printf '%s' "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
    f=$(printf '%s' "$syn" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
    c=$(printf '%s' "$syn" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0} + ${c:-0}))
    if [ $rc -ne 0 ] || [ -z "$syn" ]; then
        # say why: a crash, a sanitizer report at exit, ...
        printf '%s\n' "$out" | grep -v '^\[\(PASS\|----\)\]' | tail -n 25 | sed "s|^|$(basename "$t"): |"
        broken="$broken $(basename "$t")"
        [ -z "$syn" ] && failed=$((failed + 1))
    fi
done
[ -n "$broken" ] && echo "failing test binaries:$broken"
echo "tests: $passed passed, $failed failed"
[ -z "$broken" ]
