"""Fetch URLs with the HTTP libraries robots are written with (tests/disguise.rs).

Usage: clients.py JOBS_JSON  where JOBS_JSON is a list of
{"client": "requests|httpx|httpx-h2|aiohttp|urllib|scrapy", "url": ..., "host": ..., "ua": ...,
 "headers": {...} (optional, sent besides)}.
Prints one line per job: "<status> <client> <url>" (status 0: the client failed, with why after).
Each library is used as its users use it: its own defaults, only the User-Agent (and Host) set.
Certificates are not checked (the test makes its own).
"""
import asyncio
import json
import ssl
import sys
import urllib.request


def insecure():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def run_requests(job, headers):
    import requests
    import urllib3

    urllib3.disable_warnings()
    return requests.get(job["url"], headers=headers, verify=False, timeout=10, allow_redirects=False).status_code


def run_httpx(job, headers, http2=False):
    import httpx

    with httpx.Client(verify=False, http2=http2, timeout=10) as c:
        r = c.get(job["url"], headers=headers)
        if http2 and job["url"].startswith("https") and r.http_version != "HTTP/2":
            raise RuntimeError(f"asked for HTTP/2, got {r.http_version}")
        return r.status_code


def run_aiohttp(job, headers):
    import aiohttp

    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.get(job["url"], headers=headers, ssl=False, allow_redirects=False) as r:
                await r.read()
                return r.status

    return asyncio.run(go())


def run_urllib(job, headers):
    req = urllib.request.Request(job["url"], headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=insecure()) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def run_scrapy(jobs):
    """All Scrapy jobs in one crawl (its reactor starts once per process)."""
    import scrapy
    from scrapy.crawler import CrawlerProcess

    results = {}

    class One(scrapy.Spider):
        name = "one"
        custom_settings = {
            "ROBOTSTXT_OBEY": False,
            "HTTPERROR_ALLOW_ALL": True,
            "LOG_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
            "RETRY_ENABLED": False,
            "DOWNLOAD_TIMEOUT": 10,
        }

        async def start(self):
            for i, job in enumerate(jobs):
                headers = {"User-Agent": job["ua"], **job.get("headers", {})}
                if job.get("host"):
                    headers["Host"] = job["host"]
                yield scrapy.Request(job["url"], headers=headers, cb_kwargs={"i": i}, dont_filter=True,
                                     errback=self.failed, meta={"i": i})

        def parse(self, response, i):
            results[i] = response.status

        def failed(self, failure):
            results[failure.request.meta["i"]] = 0

    process = CrawlerProcess(settings={"REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"})
    process.crawl(One)
    process.start()
    return results


def main():
    jobs = json.loads(sys.argv[1])
    scrapy_jobs = [j for j in jobs if j["client"] == "scrapy"]
    scrapy_results = run_scrapy(scrapy_jobs) if scrapy_jobs else {}
    si = 0
    for job in jobs:
        headers = {"User-Agent": job["ua"], **job.get("headers", {})}
        if job.get("host"):
            headers["Host"] = job["host"]
        try:
            if job["client"] == "scrapy":
                status = scrapy_results.get(si, 0)
                si += 1
            elif job["client"] == "requests":
                status = run_requests(job, headers)
            elif job["client"] == "httpx":
                status = run_httpx(job, headers)
            elif job["client"] == "httpx-h2":
                status = run_httpx(job, headers, http2=True)
            elif job["client"] == "aiohttp":
                status = run_aiohttp(job, headers)
            elif job["client"] == "urllib":
                status = run_urllib(job, headers)
            else:
                raise ValueError(job["client"])
            print(f"{status} {job['client']} {job['url']}", flush=True)
        except Exception as e:  # noqa: BLE001 - the test reads why
            print(f"0 {job['client']} {job['url']} {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
