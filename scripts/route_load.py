#!/usr/bin/env python3
"""Concurrent load on both models of a routed tinfer server (BENCHMARKS section 1n, the driver comparison): C clients
pinned to each model by name, each sending chat prompts from a prompt file in turn (greedy, 32 tokens, ignore_eos),
N requests per client; prints the output tokens per second of the whole run.

usage: scripts/route_load.py PORT C N PROMPTS_FILE"""
import http.client
import json
import sys
import threading
import time


def main():
    port, clients, n, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    prompts = [p.strip() for p in open(path).read().split("\n%\n")]
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("GET", "/v1/models")
    models = [m["id"] for m in json.loads(c.getresponse().read())["data"]]
    tokens = [0]
    lock = threading.Lock()

    def client(model, k):
        for i in range(n):
            body = {"model": model, "messages": [{"role": "user", "content": prompts[(k * 7 + i) % len(prompts)]}],
                    "max_tokens": 32, "temperature": 0, "ignore_eos": True}
            h = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            h.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = json.loads(h.getresponse().read())
            with lock:
                tokens[0] += r["usage"]["completion_tokens"]

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(m, k)) for m in models for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("%.1f" % (tokens[0] / (time.time() - t0)))


if __name__ == "__main__":
    main()
