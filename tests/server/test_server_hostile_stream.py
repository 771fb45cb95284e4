"""Issue 26 §1: streams every client parses. A request that waits in the queue longer than the server's
disconnect-probe period must still begin its stream with `data: {` (the server used to send `: keep-alive`
after 500 ms of quiet, which vLLM's `bench serve` reader mis-parses), vanished clients are still noticed and
their requests cancelled (without anything written to them), and `--sse-keepalive` sends a comment only after
the first data event. Run by CTest (`server_hostile_stream`); exit 77 = skipped (fixture or venv absent).

Tests (stories260K with a small batch so that requests queue, and SmolLM2 where a request must outlast a
detection):
  vllm_bench_reader_16/64   vLLM's `bench serve` stream reader, 64 requests at 16 and at 64 concurrent: 0 failed
  openai_sdk_include_usage  the openai SDK streaming with stream_options.include_usage, queued: every chunk
                            parses, the last carries the usage and only it
  raw_first_bytes           every stream body begins with `data: {` (completions and chat, queued > 500 ms),
                            no SSE comment anywhere, and a whole JSON body begins with `{` (no leading space)
  disconnect_frees_blocks   a stream and a non-stream request whose clients close while queued and while
                            generating: the engine drops them within a probe period and a step, blocks return
  sse_keepalive             --sse-keepalive under 15 s is refused; with 15 s no comment precedes the first data
                            event and comments are spaced by at least the period"""
import codecs
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import Server, env_paths, report, run_named, skip_reason  # noqa: E402

TINFER, MODEL = env_paths()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLOW_MODEL = os.environ.get("TINFER_DEFAULT_MODEL") or os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
QUEUE_MODEL = SLOW_MODEL if os.path.exists(SLOW_MODEL) else MODEL
PROBE_S = 0.5       # the server's disconnect probe period (ServerConfig::peer_probe_ms) and the old heartbeat
QUEUED_S = 0.6      # a request whose first data came later than this waited past a probe period
# One running at a time and 48-token requests on SmolLM2: at 12-24 concurrent most wait well over QUEUED_S.
# On SmolLM2 (stories260K makes 300 tokens in ~30 ms on a quiet machine, so nothing waited there).
FAST_ARGS = ["--served-model-name", "m", "--max-seqs", "1", "--kv-memory", "64M", "--ctx", "512", "--http-threads", "96",
             "--max-queued-requests", "256"]
TOKENS = 48
# vLLM's reader loses a stream to a leading comment only when later events come one per network read (a
# read holding several keeps a blank line, and the reader recovers): tokens must be spaced like a real model's.
# So the bench runs on SmolLM2 (tens of ms a step here), two at once, 32 tokens each: 64 requests queue for seconds.
BENCH_ARGS = ["--served-model-name", "m", "--max-seqs", "2", "--kv-memory", "64M", "--ctx", "512",
              "--http-threads", "96", "--max-queued-requests", "256"]
BENCH_TOKENS = 32


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


class ChunkedReads:
    """A streaming POST on a raw socket. reads() yields, per network read (recv), the body bytes it carried
    once the chunked framing is taken off: what aiohttp's `response.content.iter_any()` hands vLLM's reader.
    Also records the whole body, and when its first byte arrived."""

    def __init__(self, port, path, body, timeout=60):
        self.sent_at = time.time()
        self.first_body_at = None
        self.body = b""
        self.reads_at = []  # (time, payload) of every read that carried body bytes
        data = json.dumps(body).encode()
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                       % (path.encode(), len(data)) + data)
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            check(d, "closed before the response head")
            self.buf += d
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        self.chunked = b"transfer-encoding: chunked" in head.lower()
        self.left = 0      # bytes left in the current chunk
        self.state = "size"
        self.done = False

    def _decode(self):
        """Takes the chunk framing off what is buffered; returns the payload bytes it held."""
        out = b""
        while True:
            if self.state == "size":
                if b"\r\n" not in self.buf:
                    return out
                line, _, self.buf = self.buf.partition(b"\r\n")
                self.left = int(line.split(b";")[0], 16)
                self.state = "data" if self.left else "trailer"
            elif self.state == "data":
                take = self.buf[:self.left]
                out += take
                self.buf, self.left = self.buf[len(take):], self.left - len(take)
                if self.left:
                    return out
                self.state = "crlf"
            elif self.state == "crlf":
                if len(self.buf) < 2:
                    return out
                self.buf, self.state = self.buf[2:], "size"
            else:  # trailer: the body is complete
                self.done = True
                return out

    def reads(self):
        pending = [self.buf] if self.buf else []
        self.buf = b""
        while not self.done:
            d = pending.pop() if pending else self.s.recv(65536)
            if not d:
                break
            if not self.chunked:
                payload = d
            else:
                self.buf += d
                payload = self._decode()
            if payload:
                now = time.time()
                if self.first_body_at is None:
                    self.first_body_at = now
                self.body += payload
                self.reads_at.append((now, payload))
                yield payload

    def read_all(self):
        for _ in self.reads():
            pass
        self.s.close()
        return self.body

    def waited(self):
        return (self.first_body_at or time.time()) - self.sent_at


class VllmSseHandler:
    """vLLM `bench serve`'s stream parser (vllm/benchmarks/lib/endpoint_request_func.py, StreamedResponseHandler),
    reproduced in behaviour: every network read is stripped of surrounding whitespace by the caller (empty reads
    dropped) and appended, UTF-8 decoded, to a buffer; the buffer is cut at every blank line ("\\n\\n"), each piece
    stripped and kept if non-empty. Fallback: what is left with no blank line after it is taken as a whole message
    too when it starts with "data: " and the rest is "[DONE]" or parses as JSON (a read whose trailing separator
    the strip removed); otherwise it waits for more. So a read holding only ": keep-alive\\n\\n" is left as
    ": keep-alive" without its separator, later reads are glued onto it, and those events are lost."""

    def __init__(self):
        self.buffer = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def add_chunk(self, chunk):
        self.buffer += self.decoder.decode(chunk)
        pieces = self.buffer.split("\n\n")
        self.buffer = pieces.pop()
        messages = [p.strip() for p in pieces if p.strip()]
        if self.buffer.startswith("data: "):
            rest = self.buffer[len("data: "):].strip()
            whole = rest == "[DONE]"
            if not whole and rest:
                try:
                    json.loads(rest)
                    whole = True
                except json.JSONDecodeError:
                    pass
            if whole:
                messages.append(self.buffer.strip())
                self.buffer = ""
        return messages


def vllm_completion_request(port, prompt, max_tokens):
    """vLLM `bench serve`'s async_request_openai_completions in behaviour: streams with include_usage; messages
    starting with ":" are skipped, the rest lose a "data: " prefix and, unless "[DONE]", must parse as JSON
    (an exception fails the request); a chunk with choices is a token (the first sets TTFT), one with only usage
    gives the output token count. The request succeeds only if at least one token chunk arrived."""
    out = {"success": False, "ttft": None, "error": "", "tokens": 0, "text": ""}
    st = time.time()
    try:
        r = ChunkedReads(port, "/v1/completions",
                         {"model": "m", "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
                          "repetition_penalty": 1.0, "logprobs": None, "stream": True,
                          "stream_options": {"include_usage": True}})
        if r.status != 200:
            out["error"] = "status %d" % r.status
            return out
        handler = VllmSseHandler()
        for chunk in r.reads():
            chunk = chunk.strip()
            if not chunk:
                continue
            for message in handler.add_chunk(chunk):
                if message.startswith(":"):
                    continue
                payload = message[len("data: "):] if message.startswith("data: ") else message
                if payload == "[DONE]":
                    continue
                data = json.loads(payload)
                if data.get("choices"):
                    if out["ttft"] is None:
                        out["ttft"] = time.time() - st
                    out["text"] += data["choices"][0].get("text") or ""
                elif data.get("usage"):
                    out["tokens"] = data["usage"].get("completion_tokens")
        r.s.close()
        out["success"] = out["ttft"] is not None
        if not out["success"]:
            out["error"] = "Never received a valid chunk to calculate TTFT."
    except Exception as e:  # as vLLM: any exception fails the request
        out["error"] = "%s: %s" % (type(e).__name__, e)
    return out


def vllm_bench(port, concurrency, n=64):
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda i: vllm_completion_request(port, "Once upon a time %d" % i, BENCH_TOKENS),
                                range(n)))
    failed = [r for r in results if not r["success"]]
    queued = sum(1 for r in results if r["ttft"] is not None and r["ttft"] > QUEUED_S)
    check(not failed, "%d of %d failed at %d concurrent (first error: %s)" % (len(failed), n, concurrency,
                                                                            failed[0]["error"] if failed else ""))
    check(all(r["tokens"] == BENCH_TOKENS for r in results), "usage counts: %s" % sorted({r["tokens"] for r in results}))
    # The case the test exists for: requests that waited past the probe period for their first token.
    check(queued >= 3, "only %d requests waited > %.1f s for their first token; the queue was not exercised"
          % (queued, QUEUED_S))


def test_vllm_bench_reader(srv, concurrency):
    vllm_bench(srv.port, concurrency)


def test_openai_sdk_include_usage(srv):
    import openai
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0)

    def one(i):
        t0 = time.time()
        if i % 2:
            chunks = list(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Tell a story %d" % i}], max_tokens=TOKENS,
                stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True}))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            chunks = list(client.completions.create(
                model="m", prompt="Once %d" % i, max_tokens=TOKENS, stream=True,
                stream_options={"include_usage": True}, extra_body={"ignore_eos": True}))
            text = "".join(c.choices[0].text for c in chunks if c.choices)
        return time.time() - t0, chunks, text

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(one, range(12)))
    for took, chunks, text in results:
        check(chunks and chunks[-1].usage is not None, "last chunk carries no usage: %s" % (chunks[-1:],))
        check(chunks[-1].usage.completion_tokens == TOKENS and not chunks[-1].choices,
              "usage chunk: %s" % chunks[-1])
        check(all(c.usage is None for c in chunks[:-1]), "usage before the last chunk")
        check(text, "no text streamed")
    check(max(r[0] for r in results) > QUEUED_S, "no request waited; the queue was not exercised")


def test_raw_first_bytes(srv):
    def one(i):
        path, body = ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi %d" % i}]}) if i % 3 == 1 \
            else ("/v1/completions", {"prompt": "Once %d" % i})
        body.update({"max_tokens": TOKENS, "ignore_eos": True, "stream": i % 3 != 2})
        r = ChunkedReads(srv.port, path, body)
        body_bytes = r.read_all()
        return i, r.waited(), body_bytes

    with ThreadPoolExecutor(max_workers=24) as pool:
        results = list(pool.map(one, range(24)))
    waited = 0
    for i, w, b in results:
        if i % 3 == 2:  # a whole JSON response: no leading space (nor any filler) before it
            check(b[:1] == b"{", "whole response %d begins %r" % (i, b[:16]))
            continue
        check(b.startswith(b"data: {"), "stream %d (waited %.2f s) begins %r" % (i, w, b[:24]))
        check(b"\n:" not in b and not b.startswith(b":"), "stream %d carries an SSE comment" % i)
        check(b.endswith(b"data: [DONE]\n\n"), "stream %d ends %r" % (i, b[-24:]))
        waited += w > QUEUED_S
    check(waited >= 3, "only %d streams waited > %.1f s; the queue was not exercised" % (waited, QUEUED_S))


# ---- disconnects (SmolLM2: a request runs for seconds) ----

def wait_for(srv, pred, limit_s, what):
    """Polls /metrics until pred(metrics); returns (metrics, seconds taken)."""
    t0 = time.time()
    while True:
        m = srv.metrics()
        if pred(m):
            return m, time.time() - t0
        check(time.time() - t0 < limit_s, "%s not within %.0f s: %s" % (
            what, limit_s, {k: v for k, v in m.items() if "requests_" in k or "kv_blocks_used" in k}))
        time.sleep(0.02)


def idle(m):
    return m["tinfer:num_requests_running"] == 0 and m["tinfer:num_requests_waiting"] == 0


def open_request(port, stream, chat=False):
    """A raw request that generates for a long time; returns its socket (the response is not read)."""
    body = {"max_tokens": 4096, "ignore_eos": True, "stream": stream}
    body.update({"messages": [{"role": "user", "content": "x"}]} if chat else {"prompt": "Once"})
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % (b"chat/completions" if chat else b"completions", len(data)) + data)
    return s


# A client's close reaches the engine within a probe period; its request is then dropped at the next step.
GONE_S = PROBE_S + 1.0


def test_disconnect_frees_blocks(srv):
    base, _ = wait_for(srv, idle, 10, "idle")
    check(base["tinfer:kv_blocks_used"] == 0, "blocks used while idle: %s" % base["tinfer:kv_blocks_used"])
    aborts = base["tinfer:engine_aborts_total"]
    # A generating stream holds the only seat (--max-seqs 1); requests behind it wait.
    running = open_request(srv.port, stream=True, chat=True)
    wait_for(srv, lambda m: m["tinfer:num_requests_running"] == 1 and m["tinfer:kv_blocks_used"] > 0, 10, "running")
    for stream in (False, True):  # queued, then the client leaves: dropped from the queue
        s = open_request(srv.port, stream=stream)
        wait_for(srv, lambda m: m["tinfer:num_requests_waiting"] == 1, 10, "queued")
        time.sleep(PROBE_S + 0.2)  # longer than a probe period queued: the old heartbeat would have written
        s.close()
        m, took = wait_for(srv, lambda m: m["tinfer:num_requests_waiting"] == 0, 5, "queued request dropped")
        check(took < GONE_S, "queued %s request dropped %.2f s after its client left" % (
            "stream" if stream else "whole", took))
        check(m["tinfer:num_requests_running"] == 1, "the running stream stopped too")
    # The generating stream's client leaves: its blocks come back.
    gen0 = srv.metrics()["tinfer:generation_tokens_total"]
    running.close()
    m, took = wait_for(srv, lambda m: idle(m) and m["tinfer:kv_blocks_used"] == 0, 5, "stream's blocks freed")
    check(took < GONE_S, "generating stream's blocks freed %.2f s after its client left" % took)
    # A generating whole (non-stream) response whose client leaves: nothing was written to it, yet it is seen.
    s = open_request(srv.port, stream=False)
    wait_for(srv, lambda m: m["tinfer:num_requests_running"] == 1, 10, "running")
    time.sleep(PROBE_S + 0.2)
    s.close()
    m, took = wait_for(srv, lambda m: idle(m) and m["tinfer:kv_blocks_used"] == 0, 5, "whole response's blocks freed")
    check(took < GONE_S, "generating whole response's blocks freed %.2f s after its client left" % took)
    check(m["tinfer:engine_aborts_total"] - aborts == 4, "aborts: %d, want 4" % (m["tinfer:engine_aborts_total"] - aborts))
    check(m["tinfer:generation_tokens_total"] - gen0 < 1000, "requests ran on after their clients left")


def slow_model():
    return SLOW_MODEL if os.path.exists(SLOW_MODEL) else MODEL


def with_slow_server(test):
    def run():
        slow = Server(TINFER, slow_model(), "--max-seqs", "1", "--kv-memory", "128M", "--ctx", "2048", "--http-threads", "8")
        try:
            test(slow)
        finally:
            slow.stop()
    return run


# ---- --sse-keepalive ----

def test_sse_keepalive():
    for bad in ("5", "14.9"):
        p = subprocess.run([TINFER, "serve", "-m", MODEL, "--port", "0", "--sse-keepalive", bad],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and "--sse-keepalive must be 0 (off) or in [15, 86400]" in p.stderr,
              "--sse-keepalive %s: status %d, %s" % (bad, p.returncode, p.stderr[-300:]))
    srv = Server(TINFER, QUEUE_MODEL, "--sse-keepalive", "15", *FAST_ARGS)
    try:
        def one(i):
            r = ChunkedReads(srv.port, "/v1/completions", {"prompt": "Once %d" % i, "max_tokens": TOKENS,
                                                           "ignore_eos": True, "stream": True})
            r.read_all()
            return r
        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(one, range(16)))
        for r in results:
            check(r.body.startswith(b"data: {"), "stream (waited %.2f s) begins %r" % (r.waited(), r.body[:24]))
            last = None
            for t, payload in r.reads_at:  # any comment comes >= 15 s after the write before it
                if payload.startswith(b":") and last is not None:
                    check(t - last >= 15, "comment %.1f s after the previous write" % (t - last))
                last = t
        check(sum(r.waited() > QUEUED_S for r in results) >= 3, "the queue was not exercised")
    finally:
        srv.stop()


def main():
    why = skip_reason(MODEL)
    if why:
        print("SKIP: " + why)
        return 77
    t0 = time.time()
    failures = 0
    bench = Server(TINFER, slow_model(), *BENCH_ARGS)
    try:
        failures += run_named([("vllm_bench_reader_16", lambda: test_vllm_bench_reader(bench, 16)),
                               ("vllm_bench_reader_64", lambda: test_vllm_bench_reader(bench, 64))])
    finally:
        bench.stop()
    srv = Server(TINFER, QUEUE_MODEL, *FAST_ARGS)
    try:
        failures += run_named([("openai_sdk_include_usage", lambda: test_openai_sdk_include_usage(srv)),
                               ("raw_first_bytes", lambda: test_raw_first_bytes(srv))])
    finally:
        srv.stop()
    failures += run_named([("disconnect_frees_blocks", with_slow_server(test_disconnect_frees_blocks))])
    failures += run_named([("sse_keepalive", test_sse_keepalive)])
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
