#!/usr/bin/env bash
# Whether requests to nginx with the module wait while a changed bot
# database is built again (issue 54: the target is no request over 50 ms;
# the classifier alone takes about 0.6 s to build).
#
#   bash benches/nginx_reload_stall.sh [SECONDS] [CONNECTIONS]
#
# nginx with one worker and the module (robotgate.yaml naming a bot
# database of its own, merged with robotgate's) serves a 1 KiB page to
# CONNECTIONS (default 64) keep-alive connections of a browser (wrk, one
# thread) for SECONDS (default 10), twice: quiet, then with the bot
# database rewritten (a comment changed; `sed -i`: renamed into place) every 3 s,
# each a reload that builds the classifier again. Prints, for each run,
# the requests, the slowest, the 99th and 99.9th percentiles and the
# count over 50 ms, the reloads the error log says the worker made, and
# the machine's load.
#
# Builds the module (nginx/build.sh); loopback only; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
SECS=${1:-10}
CONNS=${2:-64}
install_missing wrk:wrk
MODULE=$(bash nginx/build.sh 2>/dev/null | tail -n 1)
start_work
chmod 755 "$WORK"; mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
robotgate_conf "$WORK" 1 1 1
cat > "$WORK/bots.yaml" <<YML
# edit 0
version: 1
bots:
  - {name: BenchBot, operator: Bench, category: other-bot, robots_tokens: [BenchBot], ua: [BenchBot], obeys_robots: true}
YML
printf 'bots: %s/bots.yaml\n' "$WORK" >> "$WORK/robotgate.yaml"
PORT=18562
nginx_page_conf "$WORK/module.conf" $PORT "robotgate_config $WORK/robotgate.yaml;" "robotgate on;" \
  "load_module $MODULE;"
sed -i 's/error_log \(.*\) warn;/error_log \1 notice;/' "$WORK/module.conf"
nginx -c "$WORK/module.conf"
sleep 1
cat > "$WORK/count.lua" <<'LUA'
done = function(summary, latency, requests)
  local over = 0
  for i = 1, #latency do
    local v, c = latency(i)
    if v > 50000 then over = over + c end
  end
  io.write(string.format("%d requests, slowest %.1f ms, p99 %.2f ms, p99.9 %.2f ms, over 50 ms: %d, errors: %d\n",
    summary.requests, latency.max / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    over, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
UA="Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
run() {
  wrk -t1 -c"$CONNS" -d"${SECS}s" -s "$WORK/count.lua" -H "User-Agent: $UA" "http://127.0.0.1:$PORT/page.html" \
    | tail -n 1
}
reloads() { grep -c "robotgate: reloaded" "$WORK/module.conf.err" || true; }
echo "quiet:   $(run)"
before=$(reloads)
(
  i=0
  sleep 1
  while sleep 3; do
    i=$((i + 1))
    sed -i "1s/.*/# edit $i/" "$WORK/bots.yaml"
  done
) &
EDITOR=$!
PIDS+=("$EDITOR")
echo "edited:  $(run)"
kill "$EDITOR" 2>/dev/null || true
sleep 1
echo "reloads during the edited run: $(( $(reloads) - before ))"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
