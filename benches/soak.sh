#!/usr/bin/env bash
# Soak: robotgate under high load for MINUTES (default 10), with a mix of
# browser, allowed-bot and blocked-bot traffic from many distinct client
# User-Agents; prints RSS after a one-minute warm-up and at the end.
#
#   bash benches/soak.sh [MINUTES] [CONNECTIONS]
#
# Loopback only; installs wrk and nginx from Debian if missing; stops
# everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-10}
CONNS=${2:-64}
. benches/common.sh
install_missing wrk:wrk nginx:nginx-light
cargo build --release --bin robotgate >/dev/null 2>&1

start_work
chmod 755 "$WORK" # nginx's workers run as nobody: a 0700 WORK would serve 403s.
ORIGIN=18200 GATE=18201
mkdir -p "$WORK/www/private"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
cp "$WORK/www/page.html" "$WORK/www/private/page.html"
cat > "$WORK/nginx.conf" <<NGX
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 4096; }
http { access_log off; server { listen 127.0.0.1:$ORIGIN; root $WORK/www; } }
NGX
nginx -c "$WORK/nginx.conf"
robotgate_conf "$WORK" "$GATE" "$ORIGIN" 1
target/release/robotgate serve --config "$WORK/robotgate.yaml" --pid-file "$WORK/rg.pid" --upgrade-sock "$WORK/rg.sock" >/dev/null 2>&1 &
RG=$!
PIDS+=($RG)
sleep 1

# A wrk script that varies the User-Agent and path per request.
cat > "$WORK/mix.lua" <<'LUA'
local n = 0
local uas = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
}
request = function()
  n = n + 1
  local ua = uas[(n % 3) + 1]
  if n % 5 == 0 then ua = "Mozilla/5.0 (compatible; SoakBot" .. n .. "/1.0; +http://soak.example/bot)" end
  local path = (n % 4 == 0) and "/private/page.html" or "/page.html"
  return wrk.format("GET", path, { ["User-Agent"] = ua })
end
LUA
rss() { awk '/VmRSS/ {print $2}' "/proc/$RG/status"; }
wrk -t1 -c"$CONNS" -d60s -s "$WORK/mix.lua" "http://127.0.0.1:$GATE/" >/dev/null
WARM=$(rss)
echo "RSS after 1 min warm-up: ${WARM} KiB"
TOTAL=0
for i in $(seq 2 "$MINUTES"); do
  R=$(wrk -t1 -c"$CONNS" -d60s -s "$WORK/mix.lua" "http://127.0.0.1:$GATE/" | awk '/Requests\/sec/ {print $2}')
  echo "minute $i: ${R} req/s, RSS $(rss) KiB"
done
END=$(rss)
echo "RSS at end: ${END} KiB"
awk -v a="$WARM" -v b="$END" 'BEGIN { printf "end/warm-up: %.3f (%+.1f%%)\n", b/a, (b-a)*100/a }'
echo "violation records: $(wc -l < "$WORK/violations.jsonl")"
