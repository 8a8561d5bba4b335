#!/usr/bin/env python3
"""What the default lets through: robots flagged and robots refused by default.

Runs `robotgate classify` once over a labelled corpus (the format of
shared/ua-corpus: one JSON object a line with `ua` and `bot`) and counts, for
robots and for people, how many are flagged (`is_bot`) and how many are
flagged on strong evidence (`evidence.strength == "strong"`), which is what
`policy.weak_evidence: log` (the default) refuses and paces; a robot named
only by weak evidence is recorded, not refused (issue #68).

  python3 scripts/evidence_figures.py [--corpus FILE] [--show N] -- target/release/robotgate classify

With --show N, prints up to N robots only weakly flagged or not flagged, and
every person flagged, so a change's effect can be read string by string.
"""

import argparse
import json
import os
import subprocess
import sys



def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="/work/shared/ua-corpus/ua-corpus.jsonl")
    ap.add_argument("--show", type=int, default=0, metavar="N")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("give the classify command after --")
    cases = [json.loads(l) for l in open(a.corpus, encoding="utf-8") if l.strip()]
    # One UA a line: a UA holding a line break cannot be sent so.
    cases = [c for c in cases if "\n" not in c["ua"] and "\r" not in c["ua"]]
    data = "".join(c["ua"] + "\n" for c in cases).encode("utf-8", "surrogateescape")
    out = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True).stdout.decode("utf-8", "replace")
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    if len(lines) != len(cases):
        sys.exit(f"{len(cases)} cases but {len(lines)} answers")
    count = {}
    shown = {"weak robot": 0, "missed robot": 0, "person": 0}
    for c, l in zip(cases, lines):
        side = "robots" if c["bot"] else "people"
        flagged = l.get("is_bot") is True
        strong = flagged and (l.get("evidence") or {}).get("strength") == "strong"
        n = count.setdefault(side, [0, 0, 0])
        n[0] += 1
        n[1] += flagged
        n[2] += strong
        if a.show:
            what = None
            if c["bot"] and not flagged:
                what = "missed robot"
            elif c["bot"] and not strong:
                what = "weak robot"
            elif not c["bot"] and flagged:
                what = "person"
            if what and shown[what] < a.show:
                shown[what] += 1
                print(f"{what}: {c['ua']} -> {l.get('name')} {json.dumps(l.get('evidence'))}")
    for side in ("robots", "people"):
        total, flagged, strong = count.get(side, [0, 0, 0])
        pct = lambda k: 100.0 * k / total if total else 0.0
        print(f"{side}: {total}; flagged {flagged} ({pct(flagged):.2f}%); refused by default {strong} ({pct(strong):.2f}%)")


if __name__ == "__main__":
    main()
