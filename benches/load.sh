#!/usr/bin/env bash
# Side-by-side load benchmark on loopback: direct to origin, nginx as reverse
# proxy (sending X-Forwarded-For/-Proto, as robotgate does), the bare Pingora
# passthrough (examples/passthrough.rs), the passthrough doing robotgate's
# forwarding work (`forward`: its upstream timeouts and X-Forwarded-*
# headers), and robotgate (browser traffic, bot traffic allowed, bot traffic
# blocked), alternating for
# several rounds with the same worker count. Prints requests/s and p50/p99
# latency, and the ratios robotgate/passthrough and robotgate/nginx.
#
#   bash benches/load.sh [ROUNDS] [SECONDS] [CONNECTIONS] [THREADS]
#
# Installs wrk and nginx from Debian if missing. Loopback only; stops
# everything it started; bounded by ROUNDS x 10 x SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-10}
CONNS=${3:-64}
THREADS=${4:-1}
BODY_BYTES=${BODY_BYTES:-1024}

. benches/common.sh
install_missing wrk:wrk nginx:nginx-light curl:curl
cargo build --release --bin robotgate --example passthrough >/dev/null 2>&1

start_work

ORIGIN=18100 NGINX=18101 PASS=18102 GATE=18103 PASSF=18104
mkdir -p "$WORK/www"
head -c "$BODY_BYTES" /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"

# Two nginx processes: the origin on $ORIGIN (one worker, shared by every
# case) and the reverse proxy on $NGINX ($THREADS workers), so that every
# proxied case runs the same three processes (wrk, a proxy, the origin).
start_origin "$WORK" "$ORIGIN"
nginx_proxy_conf "$WORK/nginx.conf" "$NGINX" "$ORIGIN" "$THREADS"
nginx -c "$WORK/nginx.conf"

target/release/examples/passthrough "127.0.0.1:$PASS" "127.0.0.1:$ORIGIN" "$THREADS" >/dev/null 2>&1 &
PIDS+=($!)
target/release/examples/passthrough "127.0.0.1:$PASSF" "127.0.0.1:$ORIGIN" "$THREADS" forward >/dev/null 2>&1 &
PIDS+=($!)

robotgate_conf "$WORK" "$GATE" "$ORIGIN" "$THREADS"
target/release/robotgate serve --config "$WORK/robotgate.yaml" --pid-file "$WORK/rg.pid" --upgrade-sock "$WORK/rg.sock" >/dev/null 2>&1 &
PIDS+=($!)
sleep 1


# name|port|user-agent
CASES=(
  "direct|$ORIGIN|$CHROME"
  "nginx|$NGINX|$CHROME"
  "passthrough|$PASS|$CHROME"
  "passthrough-forward|$PASSF|$CHROME"
  "robotgate-browser|$GATE|$CHROME"
  "robotgate-bot-allowed|$GATE|$GOOGLEBOT"
  "robotgate-bot-blocked|$GATE|$GPTBOT"
)

declare -A RPS P50 P99
run() { # name port ua [connections] -> "rps p50_us p99_us"
  local out
  out=$(wrk -t1 -c"${4:-$CONNS}" -d"${SECS}s" --latency -H "User-Agent: $3" "http://127.0.0.1:$2/page.html" 2>&1)
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  echo "$rps $(to_us "$p50") $(to_us "$p99")"
}
to_us() { # wrk prints 1.23ms / 456.78us / 1.2s
  awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1000000; else print n }'
}

for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name port ua <<<"$c"
    read -r rps p50 p99 < <(run "$name" "$port" "$ua")
    RPS[$name]="${RPS[$name]:-} $rps"; P50[$name]="${P50[$name]:-} $p50"; P99[$name]="${P99[$name]:-} $p99"
    printf 'round %d %-22s %10.0f req/s  p50 %7.0f us  p99 %7.0f us\n' "$round" "$name" "$rps" "$p50" "$p99"
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "medians over $ROUNDS rounds ($SECS s each, $CONNS connections, $THREADS worker thread(s), ${BODY_BYTES}-byte page):"
for c in "${CASES[@]}"; do
  IFS='|' read -r name _ _ <<<"$c"
  printf '  %-22s %10.0f req/s  p50 %7.0f us  p99 %7.0f us\n' "$name" \
    "$(median <<<"${RPS[$name]}")" "$(median <<<"${P50[$name]}")" "$(median <<<"${P99[$name]}")"
done
rg=$(median <<<"${RPS[robotgate-browser]}"); pt=$(median <<<"${RPS[passthrough]}"); ng=$(median <<<"${RPS[nginx]}")
pf=$(median <<<"${RPS[passthrough-forward]}")
awk -v a="$rg" -v b="$pt" -v c="$ng" -v d="$pf" \
  'BEGIN { printf "  robotgate/passthrough %.3f   robotgate/passthrough-forward %.3f   robotgate/nginx %.3f\n", a/b, a/d, a/c }'

# Latency at one connection: what one request costs, without queueing.
# The blocked-bot floods above left hundreds of MB of violation log in the
# page cache; flush it first, or the kernel's writeback lands in the middle of
# this phase and shows up as tail latency of whichever case runs then.
sync
sleep 1
LAT_CASES=("nginx|$NGINX|$CHROME" "passthrough|$PASS|$CHROME" "robotgate-browser|$GATE|$CHROME")
declare -A L50 L99
for round in $(seq 1 "$ROUNDS"); do
  for c in "${LAT_CASES[@]}"; do
    IFS='|' read -r name port ua <<<"$c"
    read -r _ p50 p99 < <(run "$name" "$port" "$ua" 1)
    L50[$name]="${L50[$name]:-} $p50"; L99[$name]="${L99[$name]:-} $p99"
  done
done
echo
echo "one connection, medians over $ROUNDS rounds:"
for c in "${LAT_CASES[@]}"; do
  IFS='|' read -r name _ _ <<<"$c"
  printf '  %-22s p50 %7.0f us  p99 %7.0f us\n' "$name" "$(median <<<"${L50[$name]}")" "$(median <<<"${L99[$name]}")"
done
awk -v a="$(median <<<"${L99[robotgate-browser]}")" -v b="$(median <<<"${L99[passthrough]}")" \
  'BEGIN { printf "  p99 robotgate - passthrough: %+.0f us\n", a-b }'
