"""Generated sites for the many-sites benchmarks (issue #55), shared by
benches/many_sites.sh (the proxy) and benches/nginx_many_sites.sh (the
module).

    python3 benches/sites.py WORK SITES [--upstream HOST:PORT --listen HOST:PORT] [--sites-dir] [--big-hosts N]

Writes SITES sites, two hosts each (sN.example, www.sN.example), each with a
robots.txt of 5 to 40 lines in a directory of its own
(WORK/www-sites/sN.example/robots.txt, as hosting panels lay them out), and
WORK/robotgate.yaml naming them all (or, with --sites-dir, a `sites_dir` of
one file per 100 sites). With --big-hosts N, one more site (`big`) of N hosts
(hN.big.example) in a site file of its own, WORK/sites.d/zz-big.yaml, with
a robots.txt in WORK/www-sites/big/ (issue 66: one customer's big file must
not delay another's edit). Without --upstream and --listen the file is for
the nginx module, which needs neither. The same seed gives the same sites.
"""
import argparse
import os
import random

AGENTS = ["*", "GPTBot", "CCBot", "Bingbot", "Googlebot", "ExampleBot"]
WORDS = ["private", "cart", "search", "tmp", "admin"]


def robots(rng, i):
    lines = [f"# site {i}"]
    want = rng.randint(5, 40)
    while len(lines) < want:
        lines.append(f"User-agent: {rng.choice(AGENTS)}")
        for _ in range(rng.randint(1, 6)):
            if len(lines) >= want:
                break
            rule = rng.choice(["Disallow", "Allow"])
            lines.append(f"{rule}: /{rng.choice(WORDS)}{rng.randint(0, 99)}/")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("sites", type=int)
    ap.add_argument("--upstream")
    ap.add_argument("--listen")
    ap.add_argument("--sites-dir", action="store_true")
    ap.add_argument("--big-hosts", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(55)
    for i in range(a.sites):
        d = f"{a.work}/www-sites/s{i}.example"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/robots.txt", "w") as f:
            f.write(robots(rng, i))
    head = ""
    if a.listen:
        head += f'listen: ["{a.listen}"]\nthreads: 2\ngrace_period: 0\n'
    head += f"""state_dir: {a.work}/state
verify:
  refresh: off
log:
  violations: {a.work}/violations.jsonl
  level: info
"""
    os.makedirs(f"{a.work}/state", exist_ok=True)

    def site(i):
        s = f'  - hosts: ["s{i}.example", "www.s{i}.example"]\n'
        if a.upstream:
            s += f'    upstream: "{a.upstream}"\n'
        return s + f"    robots: {a.work}/www-sites/s{i}.example/robots.txt\n"

    if a.sites_dir or a.big_hosts:
        head += f"sites_dir: {a.work}/sites.d\n"
        os.makedirs(f"{a.work}/sites.d", exist_ok=True)
    if a.big_hosts:
        os.makedirs(f"{a.work}/www-sites/big", exist_ok=True)
        with open(f"{a.work}/www-sites/big/robots.txt", "w") as f:
            f.write("User-agent: *\nDisallow: /big/\n")
        with open(f"{a.work}/sites.d/zz-big.yaml", "w") as g:
            g.write("name: big\nhosts:\n" + "".join(f"  - h{i}.big.example\n" for i in range(a.big_hosts)))
            if a.upstream:
                g.write(f'upstream: "{a.upstream}"\n')
            g.write(f"robots: {a.work}/www-sites/big/robots.txt\n")
    with open(f"{a.work}/robotgate.yaml", "w") as f:
        if a.sites_dir:
            f.write(head)
            for k in range(0, a.sites, 100):
                with open(f"{a.work}/sites.d/{k // 100:04}.yaml", "w") as g:
                    # A site file is one site, or a list of them at its top level.
                    g.write("".join(site(i)[2:].replace("\n    ", "\n  ") for i in range(k, min(a.sites, k + 100))))
        else:
            f.write(head + "sites:\n" + "".join(site(i) for i in range(a.sites)))


if __name__ == "__main__":
    main()
