#!/bin/sh
# try_installed.sh - an installed dmm used as a user would, on a real
# program (sort; perl where DMM_STATS must be seen): what test_install runs
# against a staged make install and make deb-check inside its chroot.
#
#   scripts/dist/try_installed.sh USR LIB WORK
#
# USR: where the install's bin/ and share/ are (PREFIX, or DESTDIR/PREFIX);
# LIB: what goes before a library's name in LD_PRELOAD ("" when ld.so finds
# the installed libraries by name, else their folder and a slash); WORK: an
# empty folder to work in.  Every step must succeed; the last line printed
# is "used".  dmm build and dmm report run only where a C compiler and
# python3 are (the Debian package recommends them).
set -eu
usr=$1 lib=$2 work=$3
dmm=$usr/bin/dmm
cd "$work"

seq 1 30000 | sed 's/$/ line/' | sort -R --random-source=/dev/zero >in.txt
sort in.txt >plain.txt
"$dmm" --version | grep -q '^dmm '
"$dmm" record -o rec -- sort in.txt >recorded.txt 2>record.err
cmp plain.txt recorded.txt
"$dmm" stats rec >stats.txt
"$dmm" sim --all rec >sim.txt
"$dmm" evolve --pop 8 --elite 2 --gens 2 --time 5 -q --out ev rec
"$dmm" codegen -o ev.c ev/best.dmm
grep -q dmm_evolved ev.c

# the libraries on sort: a plain run's output
LD_PRELOAD=${lib}libdmm.so sort in.txt | cmp plain.txt -
LD_PRELOAD=${lib}libdmm_evolved.so sort in.txt | cmp plain.txt -
DMM_CONFIG=$PWD/ev/best.dmm LD_PRELOAD=${lib}libdmm.so sort in.txt | cmp plain.txt -
# and loaded indeed: ld.so ignores a library it cannot find, but then there
# is no DMM_STATS line (sort closes its stderr before: perl does not)
for l in libdmm.so libdmm_evolved.so; do
    DMM_STATS=1 LD_PRELOAD=$lib$l perl -e 'print 6*7, qq(\n)' >perl.out 2>perl.err
    test "$(cat perl.out)" = 42
    grep -q '^dmm: .*footprint' perl.err
done

if command -v cc >/dev/null; then
    "$dmm" build ev/best.dmm >built.txt 2>build.err
    test "$(cat built.txt)" = ev/libdmm_evolved.so
    LD_PRELOAD=$PWD/ev/libdmm_evolved.so sort in.txt | cmp plain.txt -
    DMM_STATS=1 LD_PRELOAD=$PWD/ev/libdmm_evolved.so perl -e 1 2>&1 | grep -q 'trace=sort'
fi
if command -v python3 >/dev/null; then
    "$dmm" report ev >/dev/null
    grep -q 'DMM_CONFIG=' ev/report.md
fi

# the manual and the completion
man=$usr/share/man
test -s "$man/man1/dmm.1" || test -s "$man/man1/dmm.1.gz"
test -s "$man/man7/libdmm.7" || test -s "$man/man7/libdmm.7.gz"
if command -v man >/dev/null; then
    MANPATH=$man man -w libdmm_evolved >/dev/null
fi
bash -c ". '$usr/share/bash-completion/completions/dmm'; COMP_WORDS=(dmm rep); COMP_CWORD=1;
         _dmm; test \"\${COMPREPLY[*]}\" = 'replay report'"
echo used
