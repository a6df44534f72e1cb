#!/usr/bin/env python3
"""check_docs.py - the manual and the completion kept level with the code.

    scripts/dist/check_docs.py --dmm BUILD/dmm [--man DIR] [--completion FILE] [--src DIR]

Checks, and prints one line per fault (exit 1) or one line of what was
checked (exit 0):

  - every subcommand `dmm --help` lists has its own `.SS dmm NAME` section
    in dmm.1, and every option its `dmm NAME --help` shows appears in that
    section; --help and --version appear in dmm.1;
  - every DMM_* name the preload libraries' code uses is in their table of
    known options (preload/common/options.c: any other is reported to the
    user as unknown), and every name of that table appears in the
    ENVIRONMENT section of libdmm.7 or libdmmtrace.7;
  - the bash completion offers every subcommand, and for each subcommand
    every option of its --help;
  - every page renders with no warning (groff -man -ww).
"""
import argparse
import os
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w/.-])(--?[A-Za-z][A-Za-z0-9-]*)")


def help_text(dmm, *args):
    p = subprocess.run([dmm, *args, "--help"], capture_output=True, text=True)
    return p.stdout


def subcommands(dmm):
    text = help_text(dmm)
    cmds, inside = [], False
    for line in text.splitlines():
        if line.startswith("commands:"):
            inside = True
        elif inside and line.startswith("  "):
            cmds.append(line.split()[0])
        elif inside and line.strip() == "":
            if cmds:
                break
    return cmds


def options_of(dmm, cmd):
    """Every option `dmm CMD --help` names, but those it names as another
    command's (`... dmm evolve --out DIR`)."""
    opts = set()
    for line in help_text(dmm, cmd).splitlines():
        for m in OPTION.finditer(line):
            other = re.search(r"\bdmm ([a-z-]+)(?: [^ -]\S*)* $", line[:m.start()])
            if not other or other.group(1) == cmd:
                opts.add(m.group(1))
    return sorted(opts)


def plain(troff):
    """troff source as the words a reader sees: fonts and escapes gone."""
    t = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", troff)
    t = t.replace("\\-", "-").replace("\\&", "").replace("\\(em", "--").replace("\\ ", " ")
    t = re.sub(r'^\.(B|I|BR|BI|IB|RB|RI|IR)\s+', "", t, flags=re.M)
    return t.replace('"', "")


def sections(troff, macro):
    """{title: body} of the .SH or .SS sections of a page."""
    out, title, body = {}, None, []
    for line in troff.splitlines():
        m = re.match(r"^\.%s\s+(.*)$" % macro, line)
        if m or (macro == "SS" and line.startswith(".SH")):
            if title is not None:
                out[title] = "\n".join(body)
            title = plain(m.group(1)).strip() if m else None
            body = []
        elif title is not None:
            body.append(line)
    if title is not None:
        out[title] = "\n".join(body)
    return out


def completions(completion, words):
    """What bash completion offers for `words` (the last one being typed)."""
    script = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              'COMPREPLY=(); _dmm; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", completion, *words],
                       capture_output=True, text=True)
    return set(p.stdout.split())


def known_options(src):
    with open(os.path.join(src, "preload/common/options.c")) as f:
        text = f.read()
    table = re.search(r"known\[\]\s*=\s*\{(.*?)\};", text, re.S).group(1)
    return set(re.findall(r'"(DMM_[A-Z0-9_]+)"', table))


def used_options(src):
    used = {}
    for d, _, files in os.walk(os.path.join(src, "preload")):
        for name in files:
            if name.endswith((".c", ".h")):
                path = os.path.join(d, name)
                with open(path) as f:
                    for n in re.findall(r'"(DMM_[A-Z0-9_]+)"', f.read()):
                        used.setdefault(n, os.path.relpath(path, src))
    return used


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--dmm", required=True)
    ap.add_argument("--man", default=os.path.join(here, "man"))
    ap.add_argument("--completion", default=os.path.join(here, "completion", "dmm"))
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(here)))
    a = ap.parse_args()
    faults = []
    pages = {}
    for name in ("dmm.1", "libdmm.7", "libdmmtrace.7", "dmm-format.5"):
        path = os.path.join(a.man, name)
        try:
            with open(path) as f:
                pages[name] = f.read()
        except OSError as e:
            faults.append("%s: cannot read: %s" % (path, e.strerror))
            continue
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                           capture_output=True, text=True)
        for w in (p.stderr.strip().splitlines() if p.returncode == 0 or p.stderr else
                  ["groff failed (%d)" % p.returncode]):
            faults.append("%s: groff: %s" % (name, w))

    cmds = subcommands(a.dmm)
    if not cmds:
        faults.append("%s --help lists no subcommand" % a.dmm)
    dmm1 = pages.get("dmm.1", "")
    ss = sections(dmm1, "SS")
    nopts = 0
    offered = completions(a.completion, ["dmm", ""])
    for cmd in cmds:
        if cmd not in offered:
            faults.append("completion: `dmm <Tab>` does not offer %s" % cmd)
        body = next((b for t, b in ss.items() if re.fullmatch(r"dmm %s\b.*" % re.escape(cmd), t)), None)
        if body is None:
            faults.append("dmm.1: no section `.SS dmm %s`" % cmd)
        opts = options_of(a.dmm, cmd)
        offered_opts = completions(a.completion, ["dmm", cmd, "-"])
        for o in opts:
            nopts += 1
            if body is not None and not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), plain(body)):
                faults.append("dmm.1: section `dmm %s` does not describe %s" % (cmd, o))
            if not any(w == o or w.startswith(o + "=") for w in offered_opts):
                faults.append("completion: `dmm %s -<Tab>` does not offer %s" % (cmd, o))
    for o in ("--help", "--version"):
        if o not in plain(dmm1):
            faults.append("dmm.1 does not describe dmm %s" % o)

    known = known_options(a.src)
    for n, path in sorted(used_options(a.src).items()):
        if n not in known:
            faults.append("%s uses %s, which preload/common/options.c does not know "
                          "(it would be reported as unknown)" % (path, n))
    env = ""
    for name in ("libdmm.7", "libdmmtrace.7"):
        env += plain(sections(pages.get(name, ""), "SH").get("ENVIRONMENT", ""))
    for n in sorted(known):
        if not re.search(r"\b%s\b" % n, env):
            faults.append("no ENVIRONMENT section of libdmm.7 or libdmmtrace.7 describes %s" % n)

    for f in faults:
        print(f)
    if faults:
        return 1
    print("check_docs: %d subcommands, %d options, %d DMM_* variables: in the manual and the "
          "completion; %d pages render cleanly" % (len(cmds), nopts, len(known), len(pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
