#!/usr/bin/env bash
# One robotgate in front of many sites (issue 55): start time, memory, and
# what one customer's robots.txt edit costs.
#
#   bash benches/many_sites.sh [SITES] [QUIET_EDITS] [LOADED_EDITS]
#
# Generates SITES sites (default 10,000): two hosts each (sN.example,
# www.sN.example), a robots.txt of 5 to 40 lines each in a directory of its
# own (WORK/www-sites/sN.example/robots.txt, as hosting panels lay them out),
# all in one config file. Starts `robotgate serve` (BIN, default
# target/release/robotgate) in front of an nginx origin and prints:
#
# - start: seconds from exec to the last site's robots.txt answered, and
#   resident memory (VmRSS) then;
# - edit: QUIET_EDITS (default 10) edits with no traffic, each a robots.txt of
#   a random site written beside it and renamed over it with a new
#   `Disallow: /edit-K/`; the time from the rename until a crawler's request
#   for /edit-K/ is refused (polled every 5 ms): the median and the slowest;
# - loaded: LOADED_EDITS (default 100) edits the same way while four clients
#   load random pages of random sites at about 100 requests a second in
#   all (keep-alive, loopback); before them the same load for 15 s with no
#   edits, from a process of their own. Requests failed (not 200), p50 and
#   p99 quiet and during the edits,
#   the median in-force time under load, and RSS after the first and after
#   the last edit;
# - the longest reload log line, in bytes.
#
# With SITES_DIR=1 the sites come from a `sites_dir` of one file per 100
# sites instead (the edits are the same). With BIG_HOSTS=N (issue 66: try
# 100000) one more site file beside them holds a site of N hosts; the start
# waits for its last host too, and every edit is another site's, so the
# edit times say what the big file costs each reload. The sites are
# benches/sites.py's. With SITES_DIR=1 and EDIT=site-file, each edit is of
# a site file instead: a new site (host eK.example, its robots.txt written
# before the edits) appended to a random one of the files, written beside it and
# renamed over it; timed until a crawler is refused on the new host.
#
# Loopback only; stops what it started. Each edit waits for the one before.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
SITES=${1:-10000}
QUIET_EDITS=${2:-10}
LOADED_EDITS=${3:-100}
BIN=${BIN:-target/release/robotgate}
PORT=${PORT:-18571}
ORIGIN=${ORIGIN:-18572}
start_work
mkdir -p "$WORK/www" "$WORK/state"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/page.html"
start_origin "$WORK" "$ORIGIN"

python3 benches/sites.py "$WORK" "$SITES" --listen "127.0.0.1:$PORT" --upstream "127.0.0.1:$ORIGIN" ${SITES_DIR:+--sites-dir} --big-hosts "${BIG_HOSTS:-0}"

"$BIN" serve --config "$WORK/robotgate.yaml" > "$WORK/serve.log" 2>&1 &
PID=$!
PIDS+=("$PID")
python3 - "$WORK" "$SITES" "$PORT" "$PID" "$QUIET_EDITS" "$LOADED_EDITS" "${BIG_HOSTS:-0}" "${EDIT:-robots}" "$ORIGIN" <<'PY'
import http.client, os, random, statistics, sys, threading, time
work, n, port, pid, quiet_edits, loaded_edits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
big_hosts = int(sys.argv[7])
edit_what, origin = sys.argv[8], sys.argv[9]
t0 = time.monotonic()
CRAWLER = "FooCrawler/1.0 (+https://crawler.example/bot)"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"

def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

def split():
    """Resident memory by kind (smaps_rollup): anonymous and file-backed, MB."""
    kb = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Rss", "Anonymous", "Rss_File", "Shared_Clean", "Private_Clean"):
                kb[k] = int(v.split()[0])
    file = kb.get("Rss", 0) - kb.get("Anonymous", 0)
    return f"anonymous {kb.get('Anonymous', 0) / 1024:.0f} MB, file-backed {file / 1024:.0f} MB"

def get(host, path, ua, conn=None):
    # A crawler's polls come from a new loopback address each, so robotgate's
    # rate limit (per client address) never answers them in place of the rule.
    src = (f"127.{random.randrange(1, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}", 0)
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=src)
    c.request("GET", path, headers={"Host": host, "User-Agent": ua})
    r = c.getresponse()
    r.read()
    if conn is None:
        c.close()
    return r.status

last = f"s{n - 1}.example"
big_last = f"h{big_hosts - 1}.big.example"
while True:
    try:
        if get(last, "/robots.txt", BROWSER) == 200 and (not big_hosts or get(big_last, "/big/x", CRAWLER) == 403):
            break
    except OSError:
        pass
    if time.monotonic() - t0 > 600:
        sys.exit("robotgate did not answer within 600 s")
    time.sleep(0.01)
start = time.monotonic() - t0
if edit_what == "site-file":
    # The new sites' robots.txt, written now: older than robotgate's settle
    # time (250 ms) when their site is added, so each edit times the site
    # file alone.
    for k in range(1, quiet_edits + loaded_edits + 1):
        os.makedirs(f"{work}/www-sites/e{k}.example", exist_ok=True)
        with open(f"{work}/www-sites/e{k}.example/robots.txt", "w") as f:
            f.write(f"User-agent: *\nDisallow: /edit-{k}/\n")
time.sleep(1)
print(f"sites {n}{f' + one of {big_hosts} hosts' if big_hosts else ''}: start {start:.2f} s, RSS {rss_mb():.0f} MB ({split()}), load average {os.getloadavg()[0]:.1f}", flush=True)

rng = random.Random(7)
edit_no = [0]
def edit():
    """Edit a random site's robots.txt, or with EDIT=site-file a random site
    file (write + rename); seconds until in force."""
    edit_no[0] += 1
    k = edit_no[0]
    i = rng.randrange(n)
    if edit_what == "site-file":
        robots = f"{work}/www-sites/e{k}.example/robots.txt"
        path, host = f"{work}/sites.d/{i // 100:04}.yaml", f"e{k}.example"
        added = f'- hosts: ["{host}"]\n  upstream: "127.0.0.1:{origin}"\n  robots: {robots}\n'
    else:
        path, host = f"{work}/www-sites/s{i}.example/robots.txt", f"www.s{i}.example"
        added = f"\nUser-agent: *\nDisallow: /edit-{k}/\n"
    with open(path) as f:
        body = f.read() + added
    before = get(host, f"/edit-{k}/x", CRAWLER)
    assert before != 403, before
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(body)
    os.rename(tmp, path)
    t = time.monotonic()
    while (status := get(host, f"/edit-{k}/x", CRAWLER)) != 403:
        if status != before:
            print(f"edit {k}: {status}", file=sys.stderr)
        if time.monotonic() - t > 120:
            return float("inf")
        time.sleep(0.005)
    return time.monotonic() - t

times = [edit() for _ in range(quiet_edits)]
if times:
    print(f"quiet edits: {len(times)}, in force median {statistics.median(times) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms, RSS {rss_mb():.0f} MB", flush=True)

# Bounded load: four clients, each a request every 40 ms (about 100/s in all),
# in a process of their own: in this one, the edits' 5 ms polls would hold
# the interpreter's lock while a client waits to read its answer (Python
# switches threads every 5 ms), which counted as robotgate's latency.
import multiprocessing as mp
def load(phase, stop, out):
    lat = {"quiet": [], "edits": []}
    failed = {"quiet": 0, "edits": 0}
    names = ("quiet", "edits")
    def client(seed):
        r = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while not stop.is_set():
            p = phase.value
            t = time.monotonic()
            try:
                s = get(f"s{r.randrange(n)}.example", "/page.html", BROWSER, conn)
            except (OSError, http.client.HTTPException):
                s = 0
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            dt = time.monotonic() - t
            if p == phase.value:
                lat[names[p]].append(dt)
                if s != 200:
                    failed[names[p]] += 1
            time.sleep(max(0, 0.04 - dt))
    threads = [threading.Thread(target=client, args=(s,), daemon=True) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((lat, failed))
if loaded_edits:
    ctx = mp.get_context("fork")
    phase, stop, out = ctx.Value("i", 0), ctx.Event(), ctx.Queue()
    loader = ctx.Process(target=load, args=(phase, stop, out))
    loader.start()
    time.sleep(15)
    phase.value = 1
    loaded = [edit()]
    first = rss_mb()
    loaded += [edit() for _ in range(loaded_edits - 1)]
    after = rss_mb()
    stop.set()
    lat, failed = out.get(timeout=60)
    loader.join()
    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
    print(f"loaded edits: {len(loaded)}, in force median {statistics.median(loaded) * 1000:.0f} ms, slowest {max(loaded) * 1000:.0f} ms", flush=True)
    print(f"RSS after the first {first:.0f} MB, after the last {after:.0f} MB ({(after / first - 1) * 100:+.1f}%)")
    for p in ("quiet", "edits"):
        print(f"requests {p}: {len(lat[p])}, failed {failed[p]}, p50 {pct(lat[p], 0.5):.1f} ms, p99 {pct(lat[p], 0.99):.1f} ms")
longest = 0
with open(f"{work}/serve.log", "rb") as f:
    for line in f:
        if b"reload" in line:
            longest = max(longest, len(line))
print(f"longest reload log line: {longest} bytes")
PY
