#!/usr/bin/env python3
"""Table lines from `prism-gpu tune` logs (for runs cut short before they wrote their table; the tuner
now rewrites its table after every shape): one `precision layout batch m n k -> kernel` line for each
outcome whose best candidate beat the default by more than 3% as the log rounds it (best / default
printed as 1.04x or more; the tuner itself compares unrounded times).
Usage: entries-from-log.py LOG... > lines.txt"""
import re
import sys

LINE = re.compile(r"(\w+)\s+(\d+)x(\d+)x(\d+):(\w\w)(\*\d+)?: default .*? TFLOP/s; "
                  r"best (.*?) [\d.]+ TFLOP/s \(([\d.]+)x\)")
for path in sys.argv[1:]:
    for text in open(path):
        m = LINE.match(text)
        if not m:
            continue
        precision, mm, n, k, layout, batch, best, ratio = m.groups()
        if float(ratio) > 1.03:
            print(f"{precision} {layout} {'many' if batch else '1'} {mm} {n} {k} -> {best}")
