#!/usr/bin/env python3
"""The scenarios of bindings/CONTRACT.md, and the one check every language's test script
runs: that each scenario ran and passed under its name.

    contract-scenarios.py names [--style snake|camel|go] [--lang LANG]
        print the scenario names, one a line (snake: fifo_in_group; camel:
        fifoInGroup, Java's test methods; go: TestContract/fifo_in_group); with
        --lang, only those LANG must run
    contract-scenarios.py check LANG RESULTS
        read the test runner's results and fail, naming them, unless every scenario
        passed under its name in LANG:
          go      RESULTS is `go test -v` output: "--- PASS: TestContract/<name> "
          rust    RESULTS is `cargo test` output: "test test_<name> ... ok"
          python  RESULTS is a JUnit XML file (pytest --junitxml): a testcase
                  test_<name> without failure, error or skipped
          ruby    RESULTS is a JUnit-style XML file or `ruby -v` (minitest --verbose)
                  output: "#test_<name> = ... = ."
          java    RESULTS is surefire's report directory (TEST-*.xml): a testcase
                  <camelName> without failure, error or skipped

A test that exists but did not run, was skipped or failed does not count: the contract
says a scenario that cannot run is a defect, not one to skip. A section of scenarios
whose heading is followed by a line "Languages: a, b, c." applies to those languages
only (the async surfaces, which Go and Ruby do without); the others apply to all.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTRACT = os.path.join(ROOT, "bindings", "CONTRACT.md")
ROW = re.compile(r"^\| `([a-z0-9_]+)` \|")
LANGUAGES = re.compile(r"^Languages: ([a-z, ]+)\.$")


def names(lang=None):
    """The scenarios; with lang, those that apply to it."""
    out, on, only = [], False, None
    with open(CONTRACT, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## The scenarios"):
                on = True
            elif on:
                if line.startswith("### "):
                    only = None
                m = LANGUAGES.match(line)
                if m:
                    only = {x.strip() for x in m.group(1).split(",")}
                m = ROW.match(line)
                if m and (lang is None or only is None or lang in only):
                    out.append(m.group(1))
    if not out:
        sys.exit("contract-scenarios: no scenarios found in bindings/CONTRACT.md")
    return out


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def junit_passed(paths):
    """The names of the testcases that passed (no failure, error or skipped child)."""
    passed = set()
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            if any(child.tag in ("failure", "error", "skipped") for child in case):
                continue
            passed.add(case.get("name", ""))
    return passed


def passed_in(lang, results):
    if lang == "java":
        files = glob.glob(os.path.join(results, "TEST-*.xml"))
        if not files:
            sys.exit(f"contract-scenarios: no TEST-*.xml in {results}")
        got = junit_passed(files)
        return lambda name: camel(name) in got
    if lang == "python" or (lang == "ruby" and results.endswith(".xml")):
        got = junit_passed([results])
        return lambda name: f"test_{name}" in got
    with open(results, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if lang == "go":
        return lambda name: f"--- PASS: TestContract/{name} " in text
    if lang == "rust":
        return lambda name: re.search(rf"^test test_{name} \.\.\. ok$", text, re.M) is not None
    if lang == "ruby":
        return lambda name: re.search(rf"#test_{name} = [0-9.]+ s = \.$", text, re.M) is not None
    sys.exit(f"contract-scenarios: unknown language {lang!r}")


def main(argv):
    if len(argv) >= 1 and argv[0] == "names":
        opts = dict(zip(argv[1::2], argv[2::2]))
        style = opts.get("--style", "snake")
        fmt = {"snake": lambda n: n, "camel": camel, "go": lambda n: f"TestContract/{n}"}.get(style)
        if fmt is None:
            sys.exit(f"contract-scenarios: unknown style {style!r}")
        for n in names(opts.get("--lang")):
            print(fmt(n))
        return 0
    if len(argv) == 3 and argv[0] == "check":
        lang, results = argv[1], argv[2]
        ok = passed_in(lang, results)
        all_names = names(lang)
        missing = [n for n in all_names if not ok(n)]
        for n in missing:
            print(f"contract-scenarios: {lang}: the scenario {n} did not pass under its name", file=sys.stderr)
        if missing:
            return 1
        print(f"contract-scenarios: {lang}: all {len(all_names)} scenarios of bindings/CONTRACT.md passed under their names")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
