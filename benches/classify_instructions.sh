#!/usr/bin/env bash
# Instructions per classification of each User-Agent of a file (default: the
# browser shapes of benches/classify.rs, benches/data/browser-shapes.txt),
# counted by callgrind inside `Classifier::classify` only: a figure that does
# not depend on the machine's load, for comparing builds.
#
#   bash benches/classify_instructions.sh [FILE]
#
# Needs valgrind. Prints one line per User-Agent and the sum.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-benches/data/browser-shapes.txt}
N=20000
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --no-default-features --example classify_each >/dev/null 2>&1
BIN=${CARGO_TARGET_DIR:-target}/release/examples/classify_each
total=0
for line in $(seq 1 "$(wc -l < "$FILE")"); do
  collected=$(N=$N valgrind --tool=callgrind --toggle-collect='*Classifier::classify*' \
    --callgrind-out-file=/dev/null "$BIN" "$FILE" "$line" 2>&1 | awk '/Collected/ {print $4}')
  per=$((collected / N))
  total=$((total + per))
  printf '%7d  %s\n' "$per" "$(sed -n "${line}p" "$FILE" | cut -c1-100)"
done
printf '%7d  total\n' "$total"
