#!/usr/bin/env bash
# `robotgate report` on a 1-million-line violation log (issue #18): records a
# second and peak RSS for the text and the HTML report, plain and gzip, and
# how long headless Chromium takes to start, load the HTML page and print
# its DOM (an upper bound of the page's load time).
#
#   bash benches/report.sh [LINES]   (default 1000000)
#
# The log is generated here: 40 robots (a few of them unknown, with hostile
# User-Agents), 5,000 clients, 2,000 paths, 3 sites, 30 days, 1 in 10 lines
# an aggregate (`count` > 1). Installs chromium from Debian if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-1000000}
cargo build --release --bin robotgate >/dev/null 2>&1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 - "$LINES" > "$WORK/v.jsonl" <<'PY'
import json, random, sys
random.seed(7)
n = int(sys.argv[1])
bots = [("GPTBot", "ai-crawler"), ("ClaudeBot", "ai-crawler"), ("Bytespider", "ai-crawler"),
        ("AhrefsBot", "seo"), ("SemrushBot", "seo"), ("Googlebot", "search-engine")]
bots += [("Bot%d" % i, "other-bot") for i in range(30)]
bots += [(None, "other-bot")] * 4
w = sys.stdout.write
for i in range(n):
    bot, cat = random.choice(bots)
    ua = "Mozilla/5.0 (compatible; %s/1.0)" % bot if bot else "x<script>alert(%d)</script>" % (i % 97)
    day, sec = i * 30 // n, random.randrange(86400)
    t = "2026-10-%02dT%02d:%02d:%02d.000Z" % (day + 1, sec // 3600, sec // 60 % 60, sec % 60)
    r = {"time": t, "site": random.choice(["shop", "blog", "docs"]), "client": "198.51.%d.%d" % (i % 20, i % 250),
         "method": "GET", "path": "/private/%d" % random.randrange(2000), "host": "example.org",
         "user_agent": ua, "bot": bot, "category": cat, "group": "*", "directive": "disallow",
         "pattern": "/private/", "line": 2 + i % 5, "robots_hash": "0123456789ab", "action": "block",
         "status": 403, "count": 1 if i % 10 else 1 + i % 50}
    w(json.dumps(r, separators=(",", ":")) + "\n")
PY
gzip -k "$WORK/v.jsonl"
echo "log: $LINES lines, $(du -h "$WORK/v.jsonl" | cut -f1) plain, $(du -h "$WORK/v.jsonl.gz" | cut -f1) gzip"
run() { # label args...
  local label=$1 out
  shift
  out=$( { /usr/bin/time -f '%e %M' target/release/robotgate report "$@" >/dev/null; } 2>&1 | tail -1)
  read -r secs kb <<<"$out"
  awk -v l="$label" -v s="$secs" -v kb="$kb" -v n="$LINES" \
    'BEGIN { printf "  %-22s %6.2f s  %9.0f records/s  peak RSS %5.1f MB\n", l, s, n / s, kb / 1024 }'
}
run "text, plain" "$WORK/v.jsonl"
run "text, gzip" "$WORK/v.jsonl.gz"
run "json, plain" --format json "$WORK/v.jsonl"
run "html, plain" --format html --out "$WORK/r.html" "$WORK/v.jsonl"
echo "  html page: $(du -h "$WORK/r.html" | cut -f1)"
if ! [ -x /usr/bin/chromium ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
for i in 1 2 3; do
  start=$(date +%s.%N)
  /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/profile$i" --dump-dom "file://$WORK/r.html" 2>/dev/null | grep -q 'chart-over-time'
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v i="$i" 'BEGIN { printf "  chromium start + load + DOM, run %d: %.2f s\n", i, e - s }'
done
