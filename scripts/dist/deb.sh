#!/bin/sh
# deb.sh - make deb: dmm's Debian package, built by Debian's own tools.
#
#   VERSION=X [GIT_REV=R] scripts/dist/deb.sh OUT
#
# Copies the tree (the files git knows, or every file outside build/ when
# there is no git) to OUT/dmm-VERSION/, adds scripts/dist/debian/ as its
# debian/ with a changelog for VERSION, and runs `dpkg-buildpackage -b`
# there: OUT/dmm_VERSION_ARCH.deb (and its .buildinfo and .changes).  The
# source package format is 3.0 (native): dmm is its own upstream.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: deb.sh OUT}
version=${VERSION:?VERSION is not set}
case $out in /*) ;; *) out=$top/$out ;; esac
src=$out/dmm-$version

rm -rf "$out"
mkdir -p "$src"
cd "$top"
if [ -e .git ] && command -v git >/dev/null; then
    # tracked and new files alike, nothing git ignores (build/, caches)
    git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf - | tar -xf - -C "$src"
else
    tar --exclude=./build -cf - . | tar -xf - -C "$src"
fi
cp -r scripts/dist/debian "$src/debian"

# The changelog says which tree this is; its date is the last commit's, so
# that the same tree gives the same package.
when=$(git log -1 --format=%aD 2>/dev/null || date -R)
{
    echo "dmm ($version) unstable; urgency=medium"
    echo
    echo "  * Built from the dmm tree${GIT_REV:+ at git $GIT_REV} by make deb."
    echo
    echo " -- dmm developers <dmm@example.org>  $when"
} >"$src/debian/changelog"

echo "deb: dpkg-buildpackage -b -us -uc in $src (log: $out/build.log)"
cd "$src"
if ! dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log" >&2
    echo "deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
    exit 1
fi
deb=$(ls "$out"/dmm_"$version"_*.deb)
echo "deb: $deb"
