#!/usr/bin/env bash
# `robotgate replay` on a generated combined-format access log (issue #21):
# lines a second and peak RSS, with 1 thread and with all cores, plain and
# gzip.
#
#   bash benches/replay.sh [LINES]   (default 5000000)
#
# The log: 30 days, 50,000 client addresses, 300 browser User-Agents (about
# 85% of lines), 40 robots of the database (from conf/bots.yaml's samples)
# and a few unknown ones, 5,000 paths of which some are disallowed, a
# robots.txt with a Crawl-delay group. Robots' addresses are random, so
# Googlebot and friends are mostly "unverifiable" or "spoofed", as in a log
# full of impostors.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-5000000}
source benches/common.sh
cargo build --release --bin robotgate >/dev/null 2>&1
start_work

cat >"$WORK/robots.txt" <<'EOF'
User-agent: *
Disallow: /private/
Disallow: /search

User-agent: AhrefsBot
User-agent: SemrushBot
Crawl-delay: 5
Disallow: /private/

User-agent: GPTBot
User-agent: ClaudeBot
User-agent: CCBot
Disallow: /

Sitemap: https://example.org/sitemap.xml
EOF
cat >"$WORK/robotgate.yaml" <<EOF
listen: ["127.0.0.1:1"]
sites:
  - name: example
    hosts: ["example.org"]
    default: true
    upstream: "127.0.0.1:1"
    robots: $WORK/robots.txt
EOF

python3 - "$LINES" conf/bots.yaml >"$WORK/access.log" <<'PY'
import datetime, random, re, sys
random.seed(21)
n = int(sys.argv[1])
samples = re.findall(r'samples: \["([^"]+)"', open(sys.argv[2]).read())[:40]
bots = samples + ["Mozilla/5.0 (compatible; ShadyCrawler/0.%d)" % i for i in range(5)]
browsers = []
for v in range(100, 200):
    browsers.append("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.0.0 Safari/537.36" % v)
    browsers.append("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.%d Safari/605.1.15" % (v % 10))
    browsers.append("Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0" % (v, v))
paths = ["/", "/search?q=%d" % 1] + ["/p/%d.html" % i for i in range(4000)] + ["/private/%d" % i for i in range(500)] + ["/static/%d.js" % i for i in range(500)]
days = {}
w = sys.stdout.write
t0 = 1_793_000_000
for i in range(n):
    t = t0 + i * 30 * 86400 // n
    d, s = divmod(t, 86400)
    if d not in days:
        days[d] = datetime.datetime.fromtimestamp(d * 86400, datetime.timezone.utc).strftime("%d/%b/%Y")
    stamp = "%s:%02d:%02d:%02d +0000" % (days[d], s // 3600, s // 60 % 60, s % 60)
    client = "%d.%d.%d.%d" % (10 + i % 7, (i * 7) % 250, (i * 13) % 250, i % 50000 % 250)
    ua = random.choice(bots) if random.random() < 0.15 else random.choice(browsers)
    w('%s - - [%s] "GET %s HTTP/1.1" 200 %d "-" "%s"\n' % (client, stamp, random.choice(paths), 512 + i % 4096, ua))
PY
gzip -k "$WORK/access.log"
echo "log: $LINES lines, $(du -h "$WORK/access.log" | cut -f1) plain, $(du -h "$WORK/access.log.gz" | cut -f1) gzip"
run() { # label args...
  local label=$1 out
  shift
  out=$( { /usr/bin/time -f '%e %M' target/release/robotgate replay --config "$WORK/robotgate.yaml" --format combined "$@" >/dev/null; } 2>&1 | tail -1)
  read -r secs kb <<<"$out"
  awk -v l="$label" -v s="$secs" -v kb="$kb" -v n="$LINES" \
    'BEGIN { printf "  %-24s %6.2f s  %9.0f lines/s  peak RSS %5.1f MB\n", l, s, n / s, kb / 1024 }'
}
CORES=$(nproc)
run "1 thread, plain" --threads 1 "$WORK/access.log"
run "$CORES threads, plain" --threads "$CORES" "$WORK/access.log"
run "$CORES threads, gzip" --threads "$CORES" "$WORK/access.log.gz"
run "$CORES threads, --emit" --threads "$CORES" --emit violations "$WORK/access.log"
