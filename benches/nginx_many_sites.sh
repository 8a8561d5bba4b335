#!/usr/bin/env bash
# Many sites inside nginx with the module (issue #55): start, memory, and
# what one customer's robots.txt edit costs, as benches/many_sites.sh
# measures them for `robotgate serve`.
#
#   bash benches/nginx_many_sites.sh [SITES] [EDITS] [WORKERS]
#
# Generates SITES sites (default 10,000) with benches/sites.py (the same
# sites as many_sites.sh), one robotgate.yaml without listen or upstream,
# and an nginx of WORKERS workers (default 2) with the module serving a 1 KiB
# page for every host. Prints:
#
# - start: seconds from starting nginx to the last site's robots.txt
#   answered by the module, and each process's resident memory (VmRSS) and
#   proportional share (Pss, which splits the pages a worker shares with the
#   master);
# - edits: EDITS (default 10) robots.txt edits of random sites, each written
#   beside the file and renamed over it with a new `Disallow: /edit-K/`; the
#   time from the rename until five requests in a row (a new connection each,
#   so any worker) refuse a crawler /edit-K/: median and slowest; memory
#   after the last edit.
#
# Builds the module (nginx/build.sh); loopback only; stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
SITES=${1:-10000}
EDITS=${2:-10}
WORKERS=${3:-2}
PORT=${PORT:-18581}
MODULE=$(bash nginx/build.sh 2>/dev/null | tail -n 1)
start_work
chmod 755 "$WORK"; mkdir -p "$WORK/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
python3 benches/sites.py "$WORK" "$SITES"
nginx_page_conf "$WORK/module.conf" "$PORT" "robotgate_config $WORK/robotgate.yaml;" \
  "robotgate on;" "load_module $MODULE;"
sed -i "s/^worker_processes 1;/worker_processes $WORKERS;/" "$WORK/module.conf"
nginx -t -q -c "$WORK/module.conf"
T0=$(date +%s.%N)
nginx -c "$WORK/module.conf"
python3 - "$PORT" "$WORK" "$SITES" "$EDITS" "$T0" <<'PY'
import os, random, socket, statistics, subprocess, sys, time
port, work, n, edits, t0 = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
CRAWLER = "FooCrawler/1.0 (+https://crawler.example/bot)"

def get(host, path, ua=CRAWLER):
    # A new loopback address each, so no rate limit answers in the rule's place.
    src = (f"127.{random.randrange(1, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}", 0)
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=src)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n".encode())
    out = b""
    while (d := s.recv(65536)):
        out += d
    s.close()
    return int(out.split(b" ", 2)[1]), out

def processes():
    master = int(open(f"{work}/module.conf.pid").read())
    kids = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
    return [("master", master)] + [("worker", int(k)) for k in kids]

def memory():
    parts = []
    for name, pid in processes():
        f = {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{pid}/smaps_rollup") if l.split()[-1] == "kB"}
        parts.append(f"{name} {f['Rss'] / 1024:.0f} MB RSS, {f['Pss'] / 1024:.0f} MB Pss")
    return "; ".join(parts)

last = f"s{n - 1}.example"
want = open(f"{work}/www-sites/{last}/robots.txt", "rb").read()
while True:
    try:
        status, out = get(last, "/robots.txt")
        if status == 200 and out.endswith(want):
            break
    except OSError:
        pass
    if time.time() - t0 > 600:
        sys.exit("nginx did not answer within 600 s")
    time.sleep(0.01)
print(f"sites {n}: start {time.time() - t0:.2f} s", flush=True)
time.sleep(1)
print(f"  memory: {memory()}", flush=True)

rng = random.Random(7)
times = []
for k in range(1, edits + 1):
    i = rng.randrange(n)
    d = f"{work}/www-sites/s{i}.example"
    host = f"www.s{i}.example"
    assert get(host, f"/edit-{k}/x")[0] != 403
    body = open(f"{d}/robots.txt").read() + f"\nUser-agent: *\nDisallow: /edit-{k}/\n"
    with open(f"{d}/.robots.txt.tmp", "w") as f:
        f.write(body)
    os.rename(f"{d}/.robots.txt.tmp", f"{d}/robots.txt")
    t = time.monotonic()
    row = 0
    while row < 5:
        row = row + 1 if get(host, f"/edit-{k}/x")[0] == 403 else 0
        if row == 1:
            first = time.monotonic() - t
        if time.monotonic() - t > 120:
            sys.exit(f"edit {k} not in force within 120 s")
        time.sleep(0.005)
    times.append(first)
ms = sorted(t * 1000 for t in times)
if ms:
    print(f"edits: {len(ms)}, in force (five in a row from then) median {statistics.median(ms):.0f} ms, "
          f"slowest {ms[-1]:.0f} ms", flush=True)
    print(f"  memory after: {memory()}", flush=True)
PY
stop_work
