#!/bin/sh
# install.sh - make install and make uninstall.
#
#   scripts/dist/install.sh install   [--build DIR] [--prefix P] [--destdir D] [--no-manifest]
#   scripts/dist/install.sh uninstall [--prefix P] [--destdir D]
#
# install puts, under DESTDIR/PREFIX (default /usr/local):
#   bin/dmm                                        the tool
#   lib/libdmmtrace.so lib/libdmm.so               the preload libraries (a bare
#   lib/libdmm_evolved.so                          LD_PRELOAD=libdmm.so finds them
#                                                  where ld.so looks: /usr/lib, or
#                                                  /usr/local/lib after ldconfig)
#   lib/dmm/libdmm_mpi.so                          dmm evolve --mpi's plugin, when built
#   share/dmm/report.py evolve_report.py plots.py  what dmm report runs
#   share/dmm/src/                                 what dmm build compiles: the sources of
#                                                  libdmm_evolved.so, dmm-build.txt
#   share/man/man1/dmm.1 man5/dmm-format.5         the manual
#   share/man/man7/libdmm.7 libdmmtrace.7 libdmm_evolved.7
#   share/bash-completion/completions/dmm          Tab completion
# and writes share/dmm/installed.txt: every file it wrote and every folder
# it had to make (paths without DESTDIR).  Installing again adds to the
# list.  uninstall removes exactly those files and the list, then those
# folders where they are empty, deepest first; it refuses without a list.
# --no-manifest (a package build, where dpkg keeps the list) writes none.
# Without DESTDIR, as root, it runs ldconfig.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
action=${1:-}
[ $# -gt 0 ] && shift
build=$top/build prefix=/usr/local destdir='' manifest=yes
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --no-manifest) manifest=no; shift ;;
    *) echo "install.sh: unknown option $1" >&2; exit 1 ;;
    esac
done
case $prefix in
/*) prefix=${prefix%/} ;;
*) echo "install.sh: PREFIX must be an absolute path, not '$prefix'" >&2; exit 1 ;;
esac
destdir=${destdir%/}
list=$prefix/share/dmm/installed.txt

if [ "$action" = uninstall ]; then
    if [ ! -f "$destdir$list" ]; then
        echo "uninstall: no dmm is installed in $destdir$prefix (no $destdir$list)" >&2
        exit 1
    fi
    sed -n 's/^file //p' "$destdir$list" | while IFS= read -r f; do
        if [ -e "$destdir$f" ] || [ -L "$destdir$f" ]; then
            rm -f "$destdir$f"
            echo "removed $destdir$f"
        fi
    done
    dirs=$(sed -n 's/^dir //p' "$destdir$list" | LC_ALL=C sort -r)   # children first
    rm -f "$destdir$list"
    echo "removed $destdir$list"
    printf '%s\n' "$dirs" | while IFS= read -r d; do
        if [ -n "$d" ] && rmdir "$destdir$d" 2>/dev/null; then
            echo "removed $destdir$d/"
        fi
    done
    if [ -z "$destdir" ] && [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then
        ldconfig
    fi
    exit 0
fi
if [ "$action" != install ]; then
    echo "usage: install.sh install|uninstall [--build DIR] [--prefix P] [--destdir D]" >&2
    exit 1
fi

for f in dmm libdmmtrace.so libdmm.so libdmm_evolved.so; do
    [ -f "$build/$f" ] || { echo "install: $build/$f is not built (run make first)" >&2; exit 1; }
done

[ -z "$destdir" ] || mkdir -p "$destdir"   # the staging root is the caller's
new=$(mktemp)
trap 'rm -f "$new"' EXIT
# a previous install's list is kept: what it installed stays listed
[ -f "$destdir$list" ] && grep -E '^(dir|file) ' "$destdir$list" >"$new" || true

# folder $1 (without DESTDIR) and every missing one above it, each listed
mkd() {
    missing='' d=$1
    while [ -n "$d" ] && [ "$d" != / ] && [ ! -d "$destdir$d" ]; do
        missing="$d
$missing"
        d=$(dirname "$d")
    done
    printf '%s' "$missing" | while IFS= read -r m; do
        [ -n "$m" ] || continue
        mkdir -m 755 "$destdir$m"
        grep -qxF "dir $m" "$new" || echo "dir $m" >>"$new"
    done
}

# put MODE SOURCE DEST (DEST without DESTDIR)
put() {
    mkd "$(dirname "$3")"
    install -m "$1" "$2" "$destdir$3"
    grep -qxF "file $3" "$new" || echo "file $3" >>"$new"
    echo "installed $destdir$3"
}

put 755 "$build/dmm" "$prefix/bin/dmm"
for f in libdmmtrace.so libdmm.so libdmm_evolved.so; do
    put 644 "$build/$f" "$prefix/lib/$f"
done
[ -f "$build/libdmm_mpi.so" ] && put 644 "$build/libdmm_mpi.so" "$prefix/lib/dmm/libdmm_mpi.so"
for f in report.py evolve_report.py plots.py; do
    put 644 "$top/scripts/$f" "$prefix/share/dmm/$f"
done
# dmm build's kit: the sources of libdmm_evolved.so, the headers they and
# the emitted source include (as the compiler lists them), and the kit file
# with its root made the folder it is in
kit=$build/dmm-build.txt
[ -f "$kit" ] || { echo "install: $kit is not built (run make first)" >&2; exit 1; }
srcroot=$(sed -n 's/^root //p' "$kit")
srcs=$(sed -n 's/^src //p' "$kit")
# shellcheck disable=SC2086 # $srcs: one path a word
hdrs=$(cd "$srcroot" && ${CC:-cc} -MM -I. -D_GNU_SOURCE $srcs "$build/evolved/dmm_evolved.c" |
       tr ' \\' '\n\n' | grep '\.h$' | grep -v '^/' | sort -u)
for f in $srcs $hdrs; do
    put 644 "$srcroot/$f" "$prefix/share/dmm/src/$f"
done
kitcopy=$(mktemp)
sed 's/^root .*/root ./' "$kit" >"$kitcopy"
put 644 "$kitcopy" "$prefix/share/dmm/src/dmm-build.txt"
rm -f "$kitcopy"
put 644 "$top/scripts/dist/man/dmm.1" "$prefix/share/man/man1/dmm.1"
put 644 "$top/scripts/dist/man/dmm-format.5" "$prefix/share/man/man5/dmm-format.5"
put 644 "$top/scripts/dist/man/libdmm.7" "$prefix/share/man/man7/libdmm.7"
put 644 "$top/scripts/dist/man/libdmmtrace.7" "$prefix/share/man/man7/libdmmtrace.7"
# man libdmm_evolved: the page of libdmm.so, which describes both
alias=$(mktemp)
echo '.so man7/libdmm.7' >"$alias"
put 644 "$alias" "$prefix/share/man/man7/libdmm_evolved.7"
rm -f "$alias"
put 644 "$top/scripts/dist/completion/dmm" "$prefix/share/bash-completion/completions/dmm"

# a real install by root: ld.so's cache learns the libraries, so that a
# bare LD_PRELOAD=libdmm.so finds them where PREFIX/lib is searched
# (/usr/local/lib is, on Debian)
if [ -z "$destdir" ] && [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then
    ldconfig && echo "ran ldconfig"
fi

if [ "$manifest" = yes ]; then
    mkd "$(dirname "$list")"
    { echo "# dmm: what make install wrote under $prefix (make uninstall removes it)"
      cat "$new"; } >"$destdir$list"
    chmod 644 "$destdir$list"
fi
