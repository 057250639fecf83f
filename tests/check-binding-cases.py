#!/usr/bin/env python3
# check-binding-cases.py: the four binding suites register exactly the cases
# of binding-cases.txt, each as <lang>/<case>.  Reads the suites' sources (it
# needs neither the library nor the interpreters); prints TAP.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A suite registers a case with test(), todo() or skip() (TestCase, .todo and
# .skip in Vala); registering one name twice makes one case of two parts.

import os
import re
import sys

srcdir = os.environ.get("G_TEST_SRCDIR") or os.path.dirname(os.path.abspath(__file__))

SUITES = [
    # lang, file, pattern of a registration (group 1: the case name)
    ("python", "test-bindings-python.py", r'(?:@test|\btodo|\bskip)\(\s*"([^"]+)"'),
    ("gjs", "test-bindings-gjs.js", r"^\s*(?:test|todo|skip)\(\s*'([^']+)'"),
    ("lua", "test-bindings-lua.lua", r"^\s*(?:test|todo|skip)\(\s*'([^']+)'"),
    ("vala", "test-bindings.vala", r'(?:new TestCase|TestCase\.todo|TestCase\.skip)\s*\(\s*"vala/([^"]+)"'),
]
WRITTEN = {
    "python": r'@test\(\s*"([^"]+)"',
    "gjs": r"^\s*test\(\s*'([^']+)'",
    "lua": r"^\s*test\(\s*'([^']+)'",
    "vala": r'new TestCase\s*\(\s*"vala/([^"]+)"',
}
PENDING = {
    "python": r'\btodo\(\s*"([^"]+)"',
    "gjs": r"^\s*todo\(\s*'([^']+)'",
    "lua": r"^\s*todo\(\s*'([^']+)'",
    "vala": r'TestCase\.todo\s*\(\s*"vala/([^"]+)"',
}
CASE = re.compile(r"^[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)+$")


def read_list(path):
    cases, problems = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, comment = text.partition("#")
            name = name.strip()
            if not CASE.match(name):
                problems.append("line %d: %r is not a case name" % (lineno, name))
            elif not sep or not comment.strip():
                problems.append("line %d: %s has no comment saying what it covers" % (lineno, name))
            elif name in cases:
                problems.append("line %d: %s is listed twice" % (lineno, name))
            cases.append(name)
    return cases, problems


def main():
    results = []
    cases, problems = read_list(os.path.join(srcdir, "binding-cases.txt"))
    results.append(("binding-cases.txt lists %d cases, one per line, each with a comment" % len(cases), problems, []))
    listed = set(cases)
    for lang, filename, pattern in SUITES:
        path = os.path.join(srcdir, filename)
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
        except OSError as e:
            results.append(("%s registers the listed cases" % lang, ["cannot read %s: %s" % (path, e)], []))
            continue
        found = set(re.findall(pattern, source, re.M))
        pending = sorted(set(re.findall(PENDING[lang], source, re.M)))
        bad = ["%s lacks %s/%s" % (filename, lang, c) for c in cases if c not in found]
        bad += ["%s has %s/%s, which binding-cases.txt does not list" % (filename, lang, c)
                for c in sorted(found - listed)]
        # a TODO registered beside a written case would turn the written one into an expected failure
        written = set(re.findall(WRITTEN[lang], source, re.M))
        bad += ["%s marks %s/%s TODO, but also runs it" % (filename, lang, c) for c in pending if c in written]
        # Vala's suite has no merging of parts: a name added twice is two TAP lines
        if lang == "vala":
            names = re.findall(pattern, source, re.M)
            bad += ["%s registers %s/%s %d times" % (filename, lang, c, names.count(c))
                    for c in sorted(set(names)) if names.count(c) > 1]
        notes = ["%d of %d cases not yet written in %s (TODO):" % (len(pending), len(cases), lang)] + \
                ["  %s/%s" % (lang, c) for c in pending] if pending else []
        results.append(("%s registers exactly the %d listed cases" % (lang, len(cases)), bad, notes))
    print("1..%d" % len(results))
    failed = 0
    for i, (name, bad, notes) in enumerate(results, 1):
        print("%s %d - %s" % ("not ok" if bad else "ok", i, name))
        for line in bad + notes:
            print("# " + line)
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
