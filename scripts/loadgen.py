#!/usr/bin/env python3
"""Bounded loopback load generator for `tinfer serve`: C concurrent streaming clients send R requests in
total to /v1/completions and report throughput plus TTFT / TPOT / end-to-end P50 and P99.

Workload (mirrors `tinfer bench throughput` so the two can be compared): each prompt is --input-len
random token ids (BOS first), each output exactly --output-len tokens (ignore_eos), greedy unless --temp.
Uses only the standard library (asyncio + raw HTTP/1.1), so the client costs little CPU.

  scripts/loadgen.py --port 8080 --concurrency 16 --requests 64 --input-len 128 --output-len 128 [--json]
  scripts/loadgen.py --spawn "build/tools/tinfer/tinfer serve -m MODEL --kv-memory 256M" --sweep 1,4,16,64
"""
import argparse
import asyncio
import json
import random
import re
import statistics
import subprocess
import sys
import time
import urllib.request


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def one_request(host, port, body):
    """Streams one completion; returns (ttft_s, e2e_s, output_tokens, token_times)."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    data = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        rest = await reader.read()
        writer.close()
        raise RuntimeError(status.decode().strip() + " " + rest[-300:].decode(errors="replace"))
    times, usage = [], None
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        payload = line[6:].strip()
        if payload == b"[DONE]":
            break
        j = json.loads(payload)
        if j.get("usage"):
            usage = j["usage"]
        for ch in j.get("choices", []):
            if ch.get("text") or ch.get("logprobs"):
                times.append(time.perf_counter())
    writer.close()
    t1 = time.perf_counter()
    n = usage["completion_tokens"] if usage else len(times)
    return (times[0] - t0 if times else t1 - t0), t1 - t0, n, times


async def run_load(host, port, concurrency, requests, input_len, output_len, temp, n_vocab, seed):
    rng = random.Random(seed)
    bodies = []
    for _ in range(requests):
        prompt = [1] + [rng.randrange(3, n_vocab) for _ in range(input_len - 1)]
        bodies.append({"prompt": prompt, "max_tokens": output_len, "ignore_eos": True, "temperature": temp,
                       "seed": rng.randrange(1 << 30), "stream": True, "stream_options": {"include_usage": True}})
    queue = list(reversed(bodies))
    results, errors = [], []

    async def worker():
        while queue:
            b = queue.pop()
            try:
                results.append(await one_request(host, port, b))
            except Exception as e:  # counted, not fatal: the report says how many failed
                errors.append(str(e))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    ttft = [r[0] for r in results]
    e2e = [r[1] for r in results]
    tpot = [(r[3][-1] - r[3][0]) / (r[2] - 1) for r in results if r[2] > 1 and len(r[3]) > 1]
    out_tokens = sum(r[2] for r in results)
    return {"concurrency": concurrency, "requests": len(results), "errors": len(errors),
            "first_error": errors[0] if errors else None, "wall_s": round(wall, 3),
            "output_tok_s": round(out_tokens / wall, 1), "req_s": round(len(results) / wall, 2),
            "ttft_p50_ms": round(1e3 * pct(ttft, 50), 1), "ttft_p99_ms": round(1e3 * pct(ttft, 99), 1),
            "tpot_p50_ms": round(1e3 * pct(tpot, 50), 2), "tpot_p99_ms": round(1e3 * pct(tpot, 99), 2),
            "e2e_p50_ms": round(1e3 * pct(e2e, 50), 1), "e2e_p99_ms": round(1e3 * pct(e2e, 99), 1)}


def n_vocab_of(host, port):
    # /tokenize has no vocabulary size; probe /detokenize with a binary search on the largest valid id.
    lo, hi = 0, 1 << 20
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        req = urllib.request.Request(f"http://{host}:{port}/detokenize", json.dumps({"tokens": [mid]}).encode(),
                                     {"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10).read()
            lo = mid
        except urllib.error.HTTPError:
            hi = mid
    return hi


def spawn(cmd):
    p = subprocess.Popen(cmd.split() + ["--port", "0"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready on" in line:
            break
    if port is None:
        raise SystemExit("server failed to start")
    return p, port


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--spawn", help="start this `tinfer serve ...` command (--port 0 is appended) and stop it after")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--sweep", help="comma-separated concurrencies, e.g. 1,4,16,64 (overrides --concurrency)")
    ap.add_argument("--requests", type=int, default=64, help="requests per concurrency level")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2, help="requests sent (and not measured) first")
    ap.add_argument("--json", action="store_true", help="one JSON object per level")
    a = ap.parse_args()
    proc = None
    if a.spawn:
        proc, a.port = spawn(a.spawn)
    try:
        n_vocab = n_vocab_of(a.host, a.port)
        levels = [int(x) for x in a.sweep.split(",")] if a.sweep else [a.concurrency]
        if a.warmup:
            asyncio.run(run_load(a.host, a.port, 1, a.warmup, a.input_len, 8, a.temp, n_vocab, a.seed + 99))
        if not a.json:
            print("%5s %5s %4s %9s %8s %10s %10s %10s %10s %10s" % ("conc", "reqs", "err", "out tok/s", "req/s",
                  "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50"))
        for c in levels:
            r = asyncio.run(run_load(a.host, a.port, c, max(a.requests, c), a.input_len, a.output_len, a.temp, n_vocab, a.seed))
            if a.json:
                print(json.dumps(r), flush=True)
            else:
                print("%5d %5d %4d %9.1f %8.2f %8.1fms %8.1fms %8.2fms %8.2fms %8.1fms" % (
                    c, r["requests"], r["errors"], r["output_tok_s"], r["req_s"], r["ttft_p50_ms"], r["ttft_p99_ms"],
                    r["tpot_p50_ms"], r["tpot_p99_ms"], r["e2e_p50_ms"]), flush=True)
            if r["errors"]:
                print("  first error:", r["first_error"], file=sys.stderr)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
