"""cgcount.py - what an allocator's calls cost in instructions, read from a
callgrind output file (bench/bounds.py, bench/fastpath.py).

Two ways, one per kind of allocator:

  entry_instructions   glibc, whose malloc is one object with the rest of
                       libc: callgrind_annotate's inclusive counts of the
                       entry points (ENTRY), what they call included
  object_instructions  a preloaded library: every instruction of its own
                       code (self costs, inlined code included: its entry
                       points' inclusive counts miss what their fast paths
                       reach by a jump), and with calls=True also what its
                       code calls in other objects (libc's memcpy in a
                       realloc, memset in a calloc, system call wrappers),
                       as glibc's inclusive counts include them

Each returns (the allocator's instructions, the run's total)."""
import re
import subprocess

# reallocarray is left out: it calls realloc, whose count includes it
ENTRY = ("malloc", "free", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign",
         "valloc", "pvalloc")


def entry_instructions(out):
    """(inclusive instructions of glibc's allocation entry points, total)."""
    a = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                       capture_output=True, text=True, check=True).stdout
    total = None
    alloc = 0
    for line in a.splitlines():
        m = re.match(r"^\s*([0-9,]+)\s.*PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        # "N (p%)  file:function [object]": the entry points themselves (code
        # inlined from other files is listed apart, without the object, and
        # is counted in its caller's inclusive count)
        m = re.match(r"^\s*([0-9,]+)\s+(?:\([ 0-9.%]+\)\s+)?\S*?:(\w+)(?:'\d+)?\s+\[", line)
        if m and m.group(2) in ENTRY:
            alloc += int(m.group(1).replace(",", ""))
    if not total:
        raise RuntimeError("callgrind_annotate gave no total")
    return alloc, total


def object_instructions(out, obj, calls=False):
    """(instructions of obj's own code, total), and with calls what obj's
    code called in other objects, inclusive."""
    names, cur, callee, inside, after_calls, total = {}, None, None, 0, False, None
    with open(out) as f:
        for line in f:
            if line[0].isdigit() or line[0] in "+-*":
                # a cost line: the current function's own, or (after calls=)
                # what a call cost, inclusive, counted at the caller's line
                if cur == obj and (not after_calls or (calls and callee != obj)):
                    inside += int(line.split()[1])
                after_calls, callee = False, cur
                continue
            if line.startswith("calls="):
                after_calls = True
                continue
            # "ob=(id) name" or "cob=(id) name" names an object the first
            # time, "ob=(id)" after; ob= is the current function's, cob= the
            # callee's of the next calls= (the current object without one)
            m = re.match(r"(c?)ob=(\(\d+\))?\s*(.*)", line.rstrip("\n"))
            if m:
                if m.group(2) and m.group(3):
                    names[m.group(2)] = m.group(3)
                name = names.get(m.group(2)) if m.group(2) else m.group(3)
                if m.group(1):
                    callee = name
                else:
                    cur = callee = name
            elif line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
    if not total:
        raise RuntimeError("callgrind gave no total")
    return inside, total
