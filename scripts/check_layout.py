#!/usr/bin/env python3
"""check_layout.py - the layout rules of dmm's C code, checked.

    scripts/check_layout.py [--root DIR] [--max-lines N]

For every .c and .h file below DIR (default: the repository this script is
in; build/ and test data are skipped):

  - it lies in a layer of scripts/layers.txt (the longest folder that
    names it);
  - every #include "X" names X from the root, X exists, and X's layer is
    the file's own or one listed before it: no include points upward;
  - outside test/, no function body is longer than --max-lines (120).

Prints one line per violation (FILE:LINE: what) and exits 1, or one line
saying what was checked and exits 0."""
import argparse
import os
import re
import sys

SKIP = {"build", "test/corpus", "test/data"}   # built files, and test inputs
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# A function definition: a line at column 0 that names something followed
# by "(", is not a declaration (";"), a macro, a comment or an initialiser
# ("="), and whose body opens with "{" at column 0 or at the end of a line.
FUNC_START = re.compile(r"^[A-Za-z_][^;=]*\(")


def read_layers(root):
    layers = []
    with open(os.path.join(root, "scripts", "layers.txt")) as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if name:
                layers.append(name.rstrip("/"))
    return layers


def layer_of(path, layers):
    """Index of the layer holding path (relative, '/'-separated), or None."""
    best, best_len = None, -1
    for i, name in enumerate(layers):
        if (path == name or path.startswith(name + "/")) and len(name) > best_len:
            best, best_len = i, len(name)
    return best


def sources(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root).replace(os.sep, "/")
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and
                         (x if rel == "." else rel + "/" + x) not in SKIP)
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def long_functions(lines, limit):
    """(line number, name, length) of every function body over limit lines."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if FUNC_START.match(line) and not line.startswith(("#", "typedef", "struct ")):
            j = i
            while j < len(lines) and not (lines[j].startswith("{") or lines[j].rstrip().endswith("{")):
                if lines[j].rstrip().endswith(";") or (j > i and lines[j].strip() == ""):
                    break
                j += 1
            if j < len(lines) and (lines[j].startswith("{") or lines[j].rstrip().endswith("{")):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                n = k - i + 1
                if n > limit:
                    name = re.findall(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", line)
                    out.append((i + 1, name[0] if name else "?", n))
                i = k
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--max-lines", type=int, default=120)
    a = ap.parse_args()
    layers = read_layers(a.root)
    bad = []
    files = list(sources(a.root))
    for path in files:
        mine = layer_of(path, layers)
        if mine is None:
            bad.append("%s: in no layer of scripts/layers.txt" % path)
            continue
        with open(os.path.join(a.root, path), errors="replace") as f:
            lines = f.read().split("\n")
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if not os.path.isfile(os.path.join(a.root, inc)):
                bad.append('%s:%d: #include "%s" does not name a file from the root' % (path, n, inc))
                continue
            theirs = layer_of(inc, layers)
            if theirs is None:
                bad.append('%s:%d: #include "%s" is in no layer' % (path, n, inc))
            elif theirs > mine:
                bad.append('%s:%d: #include "%s" points upward: %s is above %s'
                           % (path, n, inc, layers[theirs], layers[mine]))
        if path.endswith(".c") and not path.startswith("test/"):
            for line_no, name, length in long_functions(lines, a.max_lines):
                bad.append("%s:%d: %s() is %d lines long (at most %d)"
                           % (path, line_no, name, length, a.max_lines))
    for b in bad:
        print("layout: " + b)
    if bad:
        print("layout: %d problem%s" % (len(bad), "" if len(bad) == 1 else "s"))
        return 1
    print("layout: %d files in %d layers; every include points down; no function over %d lines"
          % (len(files), len(layers), a.max_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
