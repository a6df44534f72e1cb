#!/bin/sh
# deb_check.sh - make deb-check: the package make deb built, checked.
#
#   scripts/dist/deb_check.sh OUT VERSION
#
# 1. dpkg's own checks: dpkg-deb reads the package (control fields, every
#    path it installs), and lintian, Debian's package checker, finds no
#    error (its warnings are printed).
# 2. As root with debootstrap (Debian's package; the network reaching a
#    Debian mirror): a fresh Debian 12 (bookworm, minbase) in
#    OUT/../deb-chroot (debootstrap's result kept in OUT/../deb-chroot.tar
#    for the next run), `apt-get install ./dmm_VERSION_ARCH.deb` there
#    pulling the package's dependencies, then the installed dmm used on
#    real programs as test_install uses a staged install
#    (scripts/dist/try_installed.sh: record, stats, sim, evolve, codegen,
#    build, report; sort and perl on the libraries by their bare names);
#    then `apt-get purge dmm` leaves none of its files.  Without root or
#    debootstrap, or without a Debian mirror in reach, the package's files
#    are unpacked and run in place instead, and it says why.
# Exit status 0 when every check passed, 1 otherwise.
set -eu

out=${1:?usage: deb_check.sh OUT VERSION}
version=${2:?usage: deb_check.sh OUT VERSION}
top=$(cd "$(dirname "$0")/../.." && pwd)
case $out in /*) ;; *) out=$top/$out ;; esac
deb=$(ls "$out"/dmm_"$version"_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "deb-check: no $out/dmm_${version}_*.deb (make deb)" >&2; exit 1; }
say() { printf 'deb-check: %s\n' "$*"; }
fail() { printf 'deb-check: FAILED: %s\n' "$*" >&2; exit 1; }

# -- 1. dpkg-deb and lintian -------------------------------------------------
say "dpkg-deb --info / --contents $(basename "$deb")"
dpkg-deb --info "$deb" >"$out/info.txt" || fail "dpkg-deb cannot read $deb"
dpkg-deb --contents "$deb" >"$out/contents.txt" || fail "dpkg-deb cannot list $deb"
for f in ./usr/bin/dmm ./usr/lib/libdmmtrace.so ./usr/lib/libdmm.so ./usr/lib/libdmm_evolved.so \
         ./usr/share/dmm/report.py ./usr/share/dmm/evolve_report.py ./usr/share/dmm/plots.py \
         ./usr/share/man/man1/dmm.1.gz ./usr/share/man/man5/dmm-format.5.gz \
         ./usr/share/man/man7/libdmm.7.gz ./usr/share/man/man7/libdmmtrace.7.gz \
         ./usr/share/man/man7/libdmm_evolved.7.gz \
         ./usr/share/bash-completion/completions/dmm ./usr/share/doc/dmm/copyright; do
    awk '{ print $6 }' "$out/contents.txt" | grep -qxF "$f" || fail "the package lacks $f"
done
depends=$(dpkg-deb --field "$deb" Depends)
for p in libc6 libzstd1 libunwind8; do
    printf '%s\n' "$depends" | grep -q "$p" || fail "Depends ($depends) lacks $p"
done
say "Depends: $depends"
if command -v lintian >/dev/null; then
    changes=$(ls "$out"/dmm_"$version"_*.changes | head -1)
    lintian --fail-on error --suppress-tags-from-file "$top/scripts/dist/lintian-accepted" \
        "$changes" >"$out/lintian.txt" 2>&1 || { cat "$out/lintian.txt" >&2; fail "lintian found errors"; }
    say "lintian: no error ($(grep -c '^W:' "$out/lintian.txt" || true) warnings, $out/lintian.txt)"
else
    say "lintian is not installed: skipped (scripts/deps.sh --deb installs it)"
fi

# -- 2. installed on a fresh Debian 12 ----------------------------------------
# The same use of the installed dmm as test_install's
# (scripts/dist/try_installed.sh), in the chroot or in an unpacked copy:
# $run prefixes a command with the chroot, $try is the script's path there.
checks() {
    $run "$usr/bin/dmm" --version | grep "^dmm $version" || return 1
    $run sh "$try" "$usr" "$lib" "$($run mktemp -d)"
}

# Debian 12 in root (debootstrap's result is kept as a tarball, cache, and
# unpacked anew each time), /proc mounted, apt's lists fetched: 0, or 1
# after saying why (the mirror out of reach: no network here).
fresh_debian() {
    umount "$root/proc" 2>/dev/null || true
    ! mountpoint -q "$root/proc" 2>/dev/null || fail "$root/proc is still mounted"
    rm -rf "$root"
    if [ -s "$cache" ]; then
        mkdir -p "$root" && tar -C "$root" -xf "$cache" || fail "cannot unpack $cache"
    else
        say "debootstrap --variant=minbase bookworm $root $mirror"
        if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$out/debootstrap.log" 2>&1; then
            tail -5 "$out/debootstrap.log" >&2
            say "debootstrap failed ($out/debootstrap.log): is $mirror out of reach?"
            return 1
        fi
        tar -C "$root" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
    fi
    mount -t proc proc "$root/proc" || fail "cannot mount /proc in $root"
    trap 'umount "$root/proc" 2>/dev/null || true' EXIT
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    if ! $run sh -c "apt-get update -qq" >"$out/apt.log" 2>&1; then
        tail -5 "$out/apt.log" >&2
        say "apt-get update failed in the chroot ($out/apt.log): is $mirror out of reach?"
        return 1
    fi
}

root=$(dirname "$out")/deb-chroot
cache=$root.tar
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}
run="chroot $root env PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8"
if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null || ! command -v chroot >/dev/null; then
    why="needs root and debootstrap"
elif ! fresh_debian; then
    why="no Debian mirror"
else
    why=
fi

if [ -z "$why" ]; then
    cp "$deb" "$root/tmp/"
    cp "$top/scripts/dist/try_installed.sh" "$root/tmp/"
    try=/tmp/try_installed.sh
    say "apt-get install ./$(basename "$deb") in the chroot (its dependencies from $mirror)"
    $run sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/$(basename "$deb")" \
        >>"$out/apt.log" 2>&1 || { tail -30 "$out/apt.log" >&2; fail "apt-get install of the package failed"; }
    usr=/usr lib=''
    say "running the installed dmm and libraries on sort in the chroot"
    checks >"$out/run.log" 2>&1 || { cat "$out/run.log" >&2; fail "the installed package did not work"; }
    $run sh -c "dpkg -L dmm" >"$out/installed.txt"
    $run sh -c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q dmm" >>"$out/apt.log" 2>&1 ||
        fail "apt-get purge dmm failed"
    while IFS= read -r f; do
        [ -f "$root$f" ] && fail "$f is still there after apt-get purge dmm"
    done <"$out/installed.txt"
    say "installed, ran and purged on a fresh Debian 12: ok"
else
    say "no chroot ($why): the package's files unpacked and run in place instead"
    ex=$out/unpacked
    rm -rf "$ex"
    dpkg-deb -x "$deb" "$ex"
    usr=$ex/usr lib=$ex/usr/lib/ try=$top/scripts/dist/try_installed.sh
    run="env PATH=$ex/usr/bin:$PATH"
    checks >"$out/run.log" 2>&1 || { cat "$out/run.log" >&2; fail "the unpacked package did not work"; }
    say "unpacked and ran: ok"
fi
