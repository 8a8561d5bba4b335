#!/usr/bin/env bash
# Memory per nginx worker, with the module and without it: nginx with its
# master and one worker serving a 1 KiB page, 3 s of a browser then 3 s of
# GPTBot (refused) at 8 connections, then the worker's VmRSS
# (/proc/PID/status) and PSS, shared and private dirty memory
# (/proc/PID/smaps_rollup), and the master's VmRSS.
#
#   bash benches/nginx_module_memory.sh
#
# Builds the module (nginx/build.sh); loopback only; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
install_missing wrk:wrk
MODULE=$(bash nginx/build.sh 2>/dev/null | tail -n 1)
start_work
chmod 755 "$WORK"; mkdir -p "$WORK/www"; head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
robotgate_conf "$WORK" 1 1 1; robotgate_verified_conf "$WORK"
conf() { nginx_page_conf "$@"; }
conf "$WORK/plain.conf" 18551
conf "$WORK/module.conf" 18552 "robotgate_config $WORK/robotgate-verified.yaml;" "robotgate on;" "load_module $MODULE;"
for c in plain:18551 module:18552; do
  nginx -c "$WORK/${c%%:*}.conf"; sleep 1
  port=${c#*:}
  wrk -t1 -c8 -d3s -H "User-Agent: $CHROME" http://127.0.0.1:$port/page.html >/dev/null
  wrk -t1 -c8 -d3s -H "User-Agent: $GPTBOT" http://127.0.0.1:$port/page.html >/dev/null
  master=$(cat "$WORK/${c%%:*}.conf.pid"); worker=$(pgrep -P "$master" | head -1)
  rss=$(awk '/VmRSS/ {print $2}' /proc/$worker/status)
  pss=$(awk '/^Pss:/ {print $2}' /proc/$worker/smaps_rollup)
  sd=$(awk '/^Shared_Dirty:/ {print $2}' /proc/$worker/smaps_rollup)
  pd=$(awk '/^Private_Dirty:/ {print $2}' /proc/$worker/smaps_rollup)
  mrss=$(awk '/VmRSS/ {print $2}' /proc/$master/status)
  echo "${c%%:*} worker VmRSS $rss kB PSS $pss kB shared_dirty $sd kB private_dirty $pd kB master VmRSS $mrss kB"
  nginx -c "$WORK/${c%%:*}.conf" -s quit; sleep 0.5
done
stop_work
