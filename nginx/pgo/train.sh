#!/usr/bin/env bash
# Train the module's profile-guided optimisation: build it instrumented
# (`-Cprofile-generate`, in target/pgo-gen), run it in a real nginx under a
# mix of browsers and robots on loopback (train.lua: passes, refusals,
# robots.txt, a trap not yet armed, indexing rules, a paced robot, odd
# targets), and merge what it counted
# into nginx/pgo/module.profdata, which nginx/build.sh then builds with
# (`-Cprofile-use`). Run it again after changing the code the module runs:
# a function whose code changed is built without its profile until then.
#
#   bash nginx/pgo/train.sh [SECONDS]   (default 20)
#
# Needs wrk and the toolchain's llvm-profdata (`rustup component add
# llvm-tools`; both are installed if missing). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-20}
. benches/common.sh
install_missing wrk:wrk curl:curl
bash nginx/build.sh >/dev/null # the configured nginx source, as build.sh keeps it
sysroot=$(rustc --print sysroot)
profdata="$sysroot/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
[ -x "$profdata" ] || rustup component add llvm-tools >&2

# (The same directory every time: another would change the flags, and so
# rebuild everything.)
raw="$PWD/target/pgo-gen/raw"
CARGO_TARGET_DIR=target/pgo-gen RUSTFLAGS="-Cprofile-generate=$raw" \
  NGINX_SOURCE_DIR="$PWD/target/nginx-src" NGINX_BUILD_DIR="$PWD/target/nginx-src/objs" \
  cargo build --profile nginx -p robotgate-nginx >&2
rm -rf "$raw"
start_work
chmod 755 "$WORK"
module="$WORK/ngx_http_robotgate_module.so"
cp target/pgo-gen/nginx/libngx_http_robotgate_module.so "$module"

mkdir -p "$WORK/www/private/a" "$WORK/www/café" "$WORK/www/drafts"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
cp "$WORK/www/page.html" "$WORK/www/private/page.html"
cp "$WORK/www/page.html" "$WORK/www/private/a/b.html"
cp "$WORK/www/page.html" "$WORK/www/café/menu"
cp "$WORK/www/page.html" "$WORK/www/drafts/x.html"
cp "$WORK/www/page.html" "$WORK/www/doc.pdf"
PORT=18539
cat > "$WORK/robots.txt" <<'TXT'
User-agent: *
Disallow: /private/

User-agent: GPTBot
User-agent: PerplexityBot
Disallow: /

User-agent: AhrefsBot
Crawl-delay: 5
Disallow: /private/

User-agent: Googlebot
Allow: /
TXT
printf 'Site: robotgate training\n' > "$WORK/humans.txt"
mkdir -p "$WORK/feeds"
printf '{"creationTime": "2026-11-23T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}\n' \
  > "$WORK/feeds/openai-gptbot.json"
cat > "$WORK/robotgate.yaml" <<YML
listen: ["127.0.0.1:9"] # not used inside nginx
grace_period: 0
sites:
  - hosts: ["127.0.0.1"]
    default: true
    upstream: "127.0.0.1:9" # not used inside nginx
    robots: $WORK/robots.txt
    humans: $WORK/humans.txt
    # Not armed within the run (arm_after): hits are recorded, not banned,
    # so the run's one client address stays unbanned.
    traps: {}
    indexing:
      rules:
        - {path: "/drafts/", set: "noindex, nofollow"}
        - {path: "/*.pdf$", bots: [Googlebot], set: "noarchive"}
log:
  violations: $WORK/violations.jsonl
  level: error
verify:
  feeds: $WORK/feeds
YML
nginx_page_conf "$WORK/nginx.conf" "$PORT" "robotgate_config $WORK/robotgate.yaml;" "robotgate on;" \
  "load_module $module;
daemon off;
master_process off;"
LLVM_PROFILE_FILE="$raw/module-%p.profraw" nginx -c "$WORK/nginx.conf" >/dev/null 2>&1 &
pid=$!
PIDS+=($pid)
for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$PORT/page.html" && break; sleep 0.25; done
wrk -t1 -c64 -d"${SECS}s" -s nginx/pgo/train.lua "http://127.0.0.1:$PORT" >&2
# A graceful stop: the worker's exit writes its counts.
kill -QUIT "$pid"
wait "$pid" 2>/dev/null || true
"$profdata" merge --sparse -o nginx/pgo/module.profdata "$raw"/*.profraw
# The LLVM that wrote it: an older one cannot read it (build.sh checks).
rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p' > nginx/pgo/module.llvm
ls -l nginx/pgo/module.profdata >&2
