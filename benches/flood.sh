#!/usr/bin/env bash
# Violation-log flood (issue #19): one bot (GPTBot) breaking one rule as fast
# as wrk can send, against the real binary on loopback, once with the default
# aggregation (log.aggregate_window 10) and once with it off (0). Prints
# requests refused, log lines and bytes written, the sum of `count` over the
# log, and the log's backpressure counters.
#
#   bash benches/flood.sh [SECONDS] [CONNECTIONS] [THREADS]
#
# Needs wrk and jq. Loopback only; stops everything it started; about
# 2 x SECONDS + a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
CONNS=${2:-64}
THREADS=${3:-1}

. benches/common.sh
install_missing wrk:wrk jq:jq nginx:nginx-light
cargo build --release --bin robotgate >/dev/null 2>&1

WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  [ -f "$WORK/origin.pid" ] && kill "$(cat "$WORK/origin.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ORIGIN=18110 GATE=18111 METRICS=18112
mkdir -p "$WORK/www"
echo ok > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"

printf '%-22s %10s %10s %12s %12s %8s %8s\n' case refused lines bytes sum_count folded overflow
for window in 10 0; do
  robotgate_conf "$WORK" "$GATE" "$ORIGIN" "$THREADS"
  rm -f "$WORK/violations.jsonl"
  printf '  aggregate_window: %s\nmetrics:\n  listen: "127.0.0.1:%s"\n' "$window" "$METRICS" >> "$WORK/robotgate.yaml"
  target/release/robotgate serve --config "$WORK/robotgate.yaml" --pid-file "$WORK/rg.pid" \
    --upgrade-sock "$WORK/rg.sock" >/dev/null 2>"$WORK/rg.err" &
  PID=$!
  sleep 1
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -H "User-Agent: $GPTBOT" "http://127.0.0.1:$GATE/private/page.html" 2>&1)
  metrics=$(curl -s "http://127.0.0.1:$METRICS/metrics")
  refused=$(sed -n 's/.*robotgate_violations_total{.*action="block".*} \([0-9]*\)/\1/p' <<<"$metrics")
  folded=$(awk '/^robotgate_violation_records_folded_total/ {print $2}' <<<"$metrics")
  overflow=$(awk '/^robotgate_violation_records_overflow_total/ {print $2}' <<<"$metrics")
  total=$(awk '/requests in/ {print $1}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  kill -TERM "$PID"
  wait "$PID" || true
  PID=
  lines=$(wc -l < "$WORK/violations.jsonl")
  bytes=$(wc -c < "$WORK/violations.jsonl")
  sum=$(jq -s 'map(.count) | add' "$WORK/violations.jsonl")
  printf '%-22s %10s %10s %12s %12s %8s %8s\n' "aggregate_window=$window" "$refused" "$lines" "$bytes" "$sum" "$folded" "$overflow"
  echo "  wrk: $total requests completed, $non2xx non-2xx (403); $(awk '/Requests\/sec/ {print $2}' <<<"$out") req/s"
done
