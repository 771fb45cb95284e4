"""`tinfer bench serve` end to end: against `tinfer serve` on stories260K its request and token counts equal
what the server's /metrics counted (completions with token-id prompts, chat with a prompt file and long-tail
lengths, open loop; --api-key-env against a server with a key); against small fake servers (500s, a stream cut mid-way, a server that never answers,
a close-delimited stream) it reports errors by kind with counts and exits within its deadline."""
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import Server, env_paths, report, run_named, skip_reason  # noqa: E402

TINFER, MODEL = env_paths()
FORTUNES = os.path.join(os.path.dirname(os.path.dirname(MODEL)), "corpus", "prompts-fortunes.txt")


def bench(url, *extra, timeout=120):
    """Runs bench serve --json; returns (exit status, the JSON report, seconds taken, stdout+stderr)."""
    t = time.time()
    p = subprocess.run([TINFER, "bench", "serve", "--url", url, "--json", *extra], capture_output=True, text=True,
                       timeout=timeout)
    lines = p.stdout.strip().splitlines()
    rep = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return p.returncode, rep, time.time() - t, p.stdout + p.stderr


def totals(rep):
    keys = ("requests", "completed", "failed", "output_tokens", "output_chunks", "prompt_tokens")
    return {k: sum(r[k] for r in rep["results"]) for k in keys}


def settled_metrics(srv, limit_s=5):
    """/metrics once the engine is idle and its counters have stopped moving: engine counters are published at
    the end of a step, after the step's events were delivered, so a client can finish a request and read
    /metrics before that step's tokens are counted."""
    deadline = time.time() + limit_s
    prev = srv.metrics()
    while True:
        time.sleep(0.05)
        cur = srv.metrics()
        idle = cur["tinfer:num_requests_running"] == 0 and cur["tinfer:num_requests_waiting"] == 0
        if idle and cur["tinfer:generation_tokens_total"] == prev["tinfer:generation_tokens_total"]:
            return cur
        assert time.time() < deadline, "server counters did not settle"
        prev = cur


def expect_match_metrics(srv, *extra):
    """Runs bench serve against srv; its counts must equal the deltas of the server's counters."""
    before = settled_metrics(srv)
    rc, rep, _, out = bench(srv.base_url, *extra)
    after = settled_metrics(srv)
    assert rc == 0 and rep, out
    t = totals(rep)
    delta = {k: after["tinfer:" + k] - before["tinfer:" + k]
             for k in ("request_success_total", "generation_tokens_total", "prompt_tokens_total")}
    assert t["completed"] == t["requests"] and t["failed"] == 0, (t, out)
    assert t["completed"] == delta["request_success_total"], (t, delta)
    assert t["output_tokens"] == delta["generation_tokens_total"], (t, delta)
    assert t["prompt_tokens"] == delta["prompt_tokens_total"], (t, delta)
    assert 0 < t["output_chunks"] <= t["output_tokens"], t
    assert all(r["usage_missing"] == 0 and r["short_outputs"] == 0 for r in rep["results"]), rep
    for r in rep["results"]:
        assert r["errors"] == {} and r["ttft_p50_s"] > 0 and r["e2e_p99_s"] >= r["e2e_p50_s"] > 0, r
        assert r["output_tok_s"] > 0 and r["request_throughput"] > 0, r
    return rep


def test_completions_counts(srv):
    rep = expect_match_metrics(srv, "--concurrency", "1,4", "--requests", "8", "--input-len", "16",
                               "--output-len", "12", "--slo-ttft", "10", "--slo-tpot", "10")
    assert rep["model"] == "stories260K", rep["model"]
    for r in rep["results"]:
        # token-id prompts give exact lengths; ignore_eos gives exact outputs
        assert r["output_tokens"] == 8 * 12 and r["prompt_tokens"] == 8 * 16, r
        assert r["good_requests"] == 8 and r["goodput_req_s"] > 0, r
    # an SLO nobody meets: goodput 0
    _, rep, _, _ = bench(srv.base_url, "--concurrency", "2", "--requests", "4", "--input-len", "8",
                         "--output-len", "8", "--slo-ttft", "0.000001")
    assert rep["results"][0]["good_requests"] == 0, rep


def test_chat_prompt_file_longtail(srv):
    expect_match_metrics(srv, "--endpoint", "chat", "--prompts", FORTUNES, "--concurrency", "3",
                         "--requests", "9", "--output-dist", "longtail", "--max-tokens", "40")


def test_open_loop(srv):
    rep = expect_match_metrics(srv, "--request-rate", "200", "--concurrency", "4", "--requests", "10",
                               "--input-len", "8", "--output-len", "6", "--seed", "7")
    assert rep["results"][0]["request_rate"] == 200, rep


def test_api_key():
    os.environ["TINFER_API_KEY"] = "bench-serve-secret"
    try:
        srv = Server(TINFER, MODEL, "-t", "1")
    finally:
        del os.environ["TINFER_API_KEY"]
    try:
        os.environ["BENCH_SERVE_KEY"] = "bench-serve-secret"
        rc, rep, _, out = bench(srv.base_url, "--api-key-env", "BENCH_SERVE_KEY", "--concurrency", "2",
                                "--requests", "4", "--input-len", "8", "--output-len", "4")
        assert rc == 0 and rep["results"][0]["completed"] == 4 and rep["model"] == "stories260K", out
        rc, rep, _, out = bench(srv.base_url, "--model", "stories260K", "--concurrency", "2", "--requests", "4",
                                "--input-len", "8", "--output-len", "4")
        assert rc == 1 and rep["results"][0]["errors"] == {"http 401": 4}, out
    finally:
        del os.environ["BENCH_SERVE_KEY"]
        srv.stop()


class Fake(socketserver.ThreadingTCPServer):
    """A one-behaviour HTTP server on 127.0.0.1: `answer(sock)` runs after the request has been read."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answer):
        self.answer = answer

        class Handler(socketserver.BaseRequestHandler):
            def handle(h):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = h.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, body = data.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += h.request.recv(65536)
                answer(h.request)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


def answer_500(s):
    body = b'{"error": {"message": "boom", "type": "server_error"}}'
    s.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
              b"Connection: close\r\n\r\n%s" % (len(body), body))


CUTS = [0]


def answer_cut(s):
    """Closes after one event: alternately inside a chunked body, and at an event boundary of a close-delimited
    body (a clean end of the bytes that only the missing `data: [DONE]` gives away)."""
    chunk = b'data: {"choices": [{"index": 0, "text": "hi"}]}\n\n'
    CUTS[0] += 1
    if CUTS[0] % 2:
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"%x\r\n%s\r\n" % (len(chunk), chunk))
    else:
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + chunk)
    time.sleep(0.05)
    s.close()


def answer_never(s):
    time.sleep(30)


def answer_close_delimited(s):
    out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    for t in ("a", "b", "c"):
        out += b'data: {"choices": [{"index": 0, "text": "%s"}]}\n\n' % t.encode()
    out += b": keep-alive\n\n"
    out += b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}\n\n'
    out += b"data: [DONE]\n\n"
    s.sendall(out)


def expect_errors(answer, kind, extra=(), max_s=20):
    fake = Fake(answer)
    try:
        rc, rep, took, out = bench(fake.url, "--model", "m", "--concurrency", "1,3", "--requests", "6",
                                   "--input-len", "4", "--output-len", "4", *extra)
    finally:
        fake.shutdown()
    assert rc == 1 and rep, (rc, out)
    for r in rep["results"]:
        assert r["completed"] == 0 and r["failed"] == 6 and r["errors"] == {kind: 6}, r
    assert took < max_s, took
    return out


def test_fake_500():
    out = expect_errors(answer_500, "http 500")
    assert "boom" in out, out


def test_fake_cut_mid_stream():
    expect_errors(answer_cut, "connection")


def test_fake_never_answers():
    # 12 requests, 1 s each at most, 1 or 3 at a time: 6 + 2 s; well under the 20 s allowed
    expect_errors(answer_never, "timeout", ("--timeout", "1"))


def test_fake_close_delimited_ok():
    fake = Fake(answer_close_delimited)
    try:
        rc, rep, _, out = bench(fake.url, "--model", "m", "--concurrency", "2", "--requests", "4")
    finally:
        fake.shutdown()
    assert rc == 0, out
    r = rep["results"][0]
    assert r["completed"] == 4 and r["output_tokens"] == 12 and r["output_chunks"] == 12, r
    assert r["prompt_tokens"] == 20 and r["usage_missing"] == 0, r
    assert r["short_outputs"] == 4, r  # 3 tokens each where 128 were asked for


def test_help_and_bad_flags():
    p = subprocess.run([TINFER, "bench", "serve", "--help"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and "--concurrency" in p.stdout, p
    p = subprocess.run([TINFER, "bench", "serve", "--url", "https://x"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 1 and "http://" in p.stderr, p
    # nothing listening: connection errors, reported
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc, rep, _, out = bench("http://127.0.0.1:%d" % port, "--model", "m", "--concurrency", "2", "--requests", "3")
    assert rc == 1 and rep["results"][0]["errors"] == {"connection": 3}, out


def main():
    reason = skip_reason(MODEL, need_openai=False)
    if not reason and not os.path.exists(FORTUNES):
        reason = "fixture absent: " + FORTUNES
    if reason:
        print("SKIP: " + reason)
        return 77
    t0 = time.time()
    srv = Server(TINFER, MODEL, "-t", "1")
    try:
        failures = run_named([
            ("completions_counts", lambda: test_completions_counts(srv)),
            ("chat_prompt_file_longtail", lambda: test_chat_prompt_file_longtail(srv)),
            ("open_loop", lambda: test_open_loop(srv)),
        ])
    finally:
        srv.stop()
    failures += run_named([
        ("fake_500", test_fake_500),
        ("fake_cut_mid_stream", test_fake_cut_mid_stream),
        ("fake_never_answers", test_fake_never_answers),
        ("fake_close_delimited_ok", test_fake_close_delimited_ok),
        ("help_and_bad_flags", test_help_and_bad_flags),
        ("api_key", test_api_key),
    ])
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
