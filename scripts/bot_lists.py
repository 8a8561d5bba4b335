#!/usr/bin/env python3
"""Generate conf/bots-lists.yaml from the maintained robot lists (issue #43).

Inputs, pinned and kept in third_party/ with their licences:
  * crawler-user-agents (MIT), crawler-user-agents.json of the published
    package, version in CRAWLER_USER_AGENTS below;
  * ai.robots.txt (MIT), robots.json at the commit in AI_ROBOTS_TXT below.

From each entry only facts are taken: the robot's name, the literal tokens
its User-Agent announces (an alternation such as `Ahrefs(Bot|SiteAudit)`
gives two tokens; a pattern with any other regular-expression operator is
left out, and listed), and its kind from the list's tags. The lists' regular
expressions are not copied. Hand-written entries of conf/bots.yaml win: an
entry whose name or token conf/bots.yaml already knows is skipped.

A token that occurs, as a whole token, in a browser string of the public
corpus (SHARED/ua-corpus/ua-corpus.jsonl) or of tests/data/agent/people.txt
is dropped, with its reason, in conf/bots-lists.dropped.txt.

  python3 scripts/bot_lists.py            # write conf/bots-lists.yaml and .dropped.txt
  python3 scripts/bot_lists.py --check    # exit 1 if they are not current (CI)

A newer list: replace the file in third_party/, update the version below,
run the script, review the diff.
"""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRAWLER_USER_AGENTS = "1.67.0"
AI_ROBOTS_TXT = "738c80df2169027ce0e07c9976fd3f2f57dd8f7b (2026-08-22)"
OUT = os.path.join(ROOT, "conf", "bots-lists.yaml")
DROPPED = os.path.join(ROOT, "conf", "bots-lists.dropped.txt")

# The lists' tags, as robotgate's categories (the first tag that maps wins).
TAGS = [
    ("ai-crawler", "ai-crawler"),
    ("search-engine", "search"),
    ("social-preview", "social"),
    ("feed-reader", "feed"),
    ("archiver", "archiver"),
    ("monitoring", "monitor"),
    ("seo", "seo"),
    ("http-library", "tool"),
    ("browser-automation", "tool"),
    ("scanner", "tool"),
    ("advertising", "other-bot"),
    ("academic", "other-bot"),
]

TOKEN_BYTE = re.compile(r"[A-Za-z0-9_-]")

# The purposes a kind implies, as conf/bots.yaml writes them when no operator
# statement is cited.
PURPOSES = {
    "search": "{search: category}",
    "ai-crawler": "{train-ai: category}",
    "ai-search": "{search: category, ai-input: category}",
    "ai-user": "{user-fetch: category}",
}

# Words too common to name one robot: robotgate's rules for unknown robots
# already take them as a robot's mark and name the robot by its own token.
GENERIC = {
    "bot", "robot", "spider", "crawler", "crawl", "scraper", "fetcher", "agent", "client", "http", "https",
    "java", "python", "perl", "ruby", "php", "node", "go", "libwww", "search", "preview", "monitor", "checker",
    "scanner", "validator", "feed", "reader", "proxy", "browser", "mozilla", "compatible", "wordpress",
}


def why_not_a_name(token):
    """Why a literal is left out as a robot's token, or None."""
    if "/" in token or re.search(r"\.[A-Za-z]{2,}$", token) or token.lower().startswith(("http:", "https:", "www.")):
        return "a host name or URL, not the robot's name (robotgate names such robots by their own token)"
    if token.lower().strip(" -_.") in GENERIC:
        return "a generic word (robotgate's rules for unknown robots take it as a robot's mark)"
    return None


def literal_alternatives(pattern):
    """The literal strings a pattern matches, or None when it uses an
    operator beyond escapes, one level of `(a|b)` groups and top-level `|`."""
    out = []
    for top in split_top(pattern):
        expanded = [""]
        i = 0
        while i < len(top):
            c = top[i]
            if c == "\\":
                if i + 1 >= len(top) or top[i + 1].isalnum():
                    return None  # \d, \s, \b...: not a literal
                expanded = [e + top[i + 1] for e in expanded]
                i += 2
            elif c == "(":
                end = top.find(")", i)
                if end < 0:
                    return None
                inner = top[i + 1 : end]
                if inner.startswith("?") or any(ch in inner for ch in "()[]*+?{}^$.\\"):
                    return None
                expanded = [e + alt for e in expanded for alt in inner.split("|")]
                i = end + 1
            elif c in "[]*+?{}^$.|)":
                return None
            else:
                expanded = [e + c for e in expanded]
                i += 1
        out.extend(expanded)
    return out


def split_top(pattern):
    parts, depth, cur = [], 0, ""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            cur += pattern[i : i + 2]
            i += 2
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    parts.append(cur)
    return parts


def clean(token):
    """A literal as a robotgate `ua` token: a trailing `/` (the version's
    separator) and blanks go."""
    return token.strip().rstrip("/").strip()


def whole_token_in(token, text):
    """Whether `token` occurs in `text` case-insensitively, with no letter,
    digit, `_` or `-` on either side: how robotgate matches `ua` tokens."""
    t, s = token.lower(), text.lower()
    start = 0
    while True:
        i = s.find(t, start)
        if i < 0:
            return False
        before = s[i - 1] if i > 0 else ""
        after = s[i + len(t)] if i + len(t) < len(s) else ""
        if not (before and TOKEN_BYTE.match(before)) and not (after and TOKEN_BYTE.match(after)):
            return True
        start = i + 1


def hand_written():
    """Names and `ua` tokens of conf/bots.yaml (lowercase)."""
    names, tokens = set(), set()
    for line in open(os.path.join(ROOT, "conf", "bots.yaml"), encoding="utf-8"):
        m = re.search(r"\bname: ([^,}]+)", line)
        if m and line.lstrip().startswith("- {"):
            names.add(m.group(1).strip().strip('"').lower())
        m = re.search(r"\bua: \[([^\]]*)\]", line)
        if m:
            for t in m.group(1).split(","):
                tokens.add(t.strip().strip('"').lower())
    return names, tokens


def browsers():
    """Browser strings: the public corpus's and tests/data/agent/people.txt."""
    out = []
    shared = os.environ.get("SHARED", os.path.join(ROOT, "..", "shared"))
    corpus = os.path.join(shared, "ua-corpus", "ua-corpus.jsonl")
    if not os.path.exists(corpus):
        sys.exit(f"bot_lists.py: {corpus} not found (set SHARED to the folder holding ua-corpus/)")
    for line in open(corpus, encoding="utf-8"):
        case = json.loads(line)
        if not case.get("bot"):
            out.append(case["ua"])
    for line in open(os.path.join(ROOT, "tests", "data", "agent", "people.txt"), encoding="utf-8"):
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            out.append(line)
    return out


def yaml_str(s):
    return json.dumps(s, ensure_ascii=False)


def robots_token(name):
    """The robots.txt token a robot of this name would look for: the name's
    leading run of letters, digits, `_`, `-` and `.` (as a product token)."""
    m = re.match(r"[A-Za-z0-9_.-]+", name)
    return m.group(0) if m else None


def generate():
    names, known = hand_written()
    people = browsers()
    entries, dropped, taken = [], [], set()

    def admit(name, tokens, category, operator, source, extra=""):
        key = name.lower()
        if key in names or key in taken or robots_token(name) is None:
            return
        keep = []
        for t in tokens:
            if len(t) < 3:
                dropped.append(f"{source}: `{t}` ({name}): shorter than 3 characters")
                continue
            if t.lower() in known or t.lower() in {k.lower() for k in keep}:
                continue
            why = why_not_a_name(t)
            if why:
                dropped.append(f"{source}: `{t}` ({name}): {why}")
                continue
            hit = next((b for b in people if whole_token_in(t, b)), None)
            if hit is not None:
                dropped.append(f"{source}: `{t}` ({name}): in a browser string: {hit}")
                continue
            keep.append(t)
        if not keep or any(t.lower() in known for t in tokens):
            # A robot the hand-written database already recognises (by one of
            # its tokens) stays the hand-written entry's.
            return
        taken.add(key)
        for t in keep:
            known.add(t.lower())
        fields = [f"name: {yaml_str(name)}", f"operator: {yaml_str(operator)}", f"category: {category}"]
        fields.append(f"robots_tokens: [{yaml_str(robots_token(name))}]")
        fields.append("ua: [" + ", ".join(yaml_str(t) for t in keep) + "]")
        fields.append("obeys_robots: false" + extra)
        fields.append("listed: true")
        # What such a robot does with pages, read from its kind alone (no operator statement).
        purposes = PURPOSES.get(category)
        if purposes:
            fields.append(f"purposes: {purposes}")
        entries.append((source, "  - {" + ", ".join(fields) + "}"))

    cua = json.load(open(os.path.join(ROOT, "third_party", "crawler-user-agents", "crawler-user-agents.json")))
    for e in cua:
        lits = literal_alternatives(e["pattern"])
        if lits is None:
            dropped.append(f"crawler-user-agents: `{e['pattern']}`: a regular expression, not literal tokens")
            continue
        tokens = [clean(t) for t in lits]
        tokens = [t for t in tokens if t]
        if not tokens:
            continue
        tags = e.get("tags", [])
        category = next((c for tag, c in TAGS if tag in tags), "other-bot")
        admit(tokens[0], tokens, category, "unknown (crawler-user-agents)", "crawler-user-agents")

    robots = json.load(open(os.path.join(ROOT, "third_party", "ai.robots.txt", "robots.json")))
    for name, facts in robots.items():
        function = facts.get("function", "").lower()
        if "search" in function:
            category = "ai-search"
        elif "assistant" in function or "agent" in function:
            category = "ai-user"
        else:
            category = "ai-crawler"
        operator = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", facts.get("operator", "")).strip()
        if not operator or operator.lower().startswith("unclear"):
            operator = "unknown (ai.robots.txt)"
        admit(name, [name], category, operator[:80], "ai.robots.txt")

    head = f"""# GENERATED by scripts/bot_lists.py; do not edit: edit conf/bots.yaml (which wins) or the script.
#
# Robots from the maintained lists, for recognition by name:
#   crawler-user-agents {CRAWLER_USER_AGENTS} (https://github.com/monperrus/crawler-user-agents),
#     MIT License, Copyright (c) 2017 Martin Monperrus: third_party/crawler-user-agents/
#   ai.robots.txt {AI_ROBOTS_TXT} (https://github.com/ai-robots-txt/ai.robots.txt),
#     MIT License, Copyright (c) 2024 ai.robots.txt: third_party/ai.robots.txt/
# Facts only: names, the literal tokens User-Agents announce, kinds from the
# lists' tags. `obeys_robots: false`: the lists do not say. `listed: true`:
# recognised and named, never put into the managed robots.txt.
# Tokens left out, and why: conf/bots-lists.dropped.txt.
version: 1
bots:
"""
    body = "".join(line + "\n" for _, line in entries)
    drops = "# GENERATED by scripts/bot_lists.py: tokens of the lists left out, and why.\n" + "".join(
        d + "\n" for d in dropped
    )
    return head + body, drops


def main():
    yaml, drops = generate()
    if "--check" in sys.argv[1:]:
        stale = [p for p, text in ((OUT, yaml), (DROPPED, drops)) if not os.path.exists(p) or open(p, encoding="utf-8").read() != text]
        if stale:
            print("bot_lists.py: not current, run `python3 scripts/bot_lists.py`: " + ", ".join(stale), file=sys.stderr)
            return 1
        print("bot_lists.py: conf/bots-lists.yaml is current")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(yaml)
    with open(DROPPED, "w", encoding="utf-8") as f:
        f.write(drops)
    print(f"{OUT}: {yaml.count(chr(10) + '  - {')} entries; {DROPPED}: {drops.count(chr(10)) - 1} left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
