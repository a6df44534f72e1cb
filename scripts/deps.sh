#!/bin/sh
# deps.sh - install the Debian packages dmm builds and tests with.
#
#   scripts/deps.sh          install what is missing (apt-get as root,
#                            otherwise print the exact command and fail)
#   scripts/deps.sh --check  only say whether anything is missing (exit 1 if so)
#   scripts/deps.sh --build  only what make and make install need
#   scripts/deps.sh --deb    the same for make deb and make deb-check instead
#
# Build: gcc make pkg-config libunwind-dev libzstd-dev
# Tests: libcriterion-dev, clang and libclang-rt-dev (libFuzzer, and the
#        ThreadSanitizer runtime of make check-tsan), and the real programs
#        the integration tests run: python3 perl sqlite3 git; groff-base
#        (the manual pages are checked to render without a warning)
# Search across hosts: openmpi-bin libopenmpi-dev (dmm evolve --mpi, and its
#        tests)
# Bench: libjemalloc-dev (the baseline) heaptrack hyperfine, the peers
#        libmimalloc2.0 libtcmalloc-minimal4, gnuplot-nox for the plots, and
#        GNU time (peak RSS: bench/programs.py, and bench/compare.py, which
#        make compare and its test run) and the real programs programs.py
#        runs besides the tests' own: jq, g++ (cc1plus)
# Package (--deb): dpkg-dev debhelper fakeroot lintian, debootstrap for the
#        chroot the package is installed into, and the build set above
set -u

PKGS="gcc make pkg-config libunwind-dev libzstd-dev libcriterion-dev groff-base \
libjemalloc-dev clang libclang-rt-dev python3 perl sqlite3 git heaptrack hyperfine libmimalloc2.0 libtcmalloc-minimal4 gnuplot-nox \
time jq g++ openmpi-bin libopenmpi-dev"

case ${1:-} in
--build) PKGS="gcc make pkg-config libunwind-dev libzstd-dev"; shift ;;
--deb) PKGS="gcc make pkg-config libunwind-dev libzstd-dev dpkg-dev debhelper fakeroot lintian debootstrap"; shift ;;
esac

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    exit 0
fi
if [ "${1:-}" = "--check" ]; then
    echo "dmm: missing Debian packages:$missing" >&2
    exit 1
fi

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "dmm: these Debian packages are missing:$missing" >&2
    echo "dmm: install them with:" >&2
    echo "    sudo apt-get update && sudo $cmd" >&2
    exit 1
fi
echo "dmm: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && $cmd
