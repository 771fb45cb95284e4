"""End-to-end tests of `tinfer serve` on stories260K: the official openai client (completions, chat,
streaming, n>1, stop, seeds, logprobs, usage), greedy == `tinfer run`, beam search == `tinfer run --beams`, raw-HTTP bad input, 64 concurrent
streams, a vanished client freeing KV, 429 under overload, API keys, and SIGTERM during load (exit 0).
Run by CTest; exit 77 = skipped (fixture or venv package absent)."""
import concurrent.futures as cf
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import run_named, report, skip_reason, Server, env_paths, stream_raw, stream_text  # noqa: E402

TINFER, MODEL = env_paths()
PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park", "One day, a bird"]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def tinfer_run(prompt, n):
    out = subprocess.run([TINFER, "run", "-m", MODEL, "-p", prompt, "--temp", "0", "-n", str(n)],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "tinfer run failed: " + out.stderr)
    return out.stdout


def test_openai_client(srv, client):
    # Greedy completions equal `tinfer run` (same prompt rules: BOS + encoded text).
    for p in PROMPTS[:2]:
        r = client.completions.create(model="stories260K", prompt=p, max_tokens=40, temperature=0)
        check(r.choices[0].text == tinfer_run(p, 40), "greedy completion != tinfer run for %r: %r" % (p, r.choices[0].text))
        check(r.usage.completion_tokens == 40 or r.choices[0].finish_reason == "stop", "usage: %s" % r.usage)
        check(r.usage.prompt_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens,
              "usage totals: %s" % r.usage)
    full = client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=40, temperature=0)
    # The engine's time by operator category is exported (issue 10: profile always on).
    m = srv.metrics()
    for op in ("attention", "matmul_qkv", "lm_head", "sample", "schedule", "http_request", "http_respond", "http_write"):
        check(m.get('tinfer_op_seconds_total{op="%s"}' % op, 0) > 0, "op seconds missing for %s" % op)
    # Streaming == non-streaming, with usage at the end.
    chunks = list(client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=40, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    check(text == full.choices[0].text, "stream != non-stream: %r vs %r" % (text, full.choices[0].text))
    check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == full.usage.completion_tokens,
          "stream usage chunk: %s" % chunks[-1])
    # Chat, both ways.
    msgs = [{"role": "user", "content": "Tell me a story."}]
    chat = client.chat.completions.create(model="stories260K", messages=msgs, max_tokens=30, temperature=0)
    check(chat.choices[0].message.role == "assistant" and chat.usage.completion_tokens > 0, "chat: %s" % chat)
    sc = list(client.chat.completions.create(model="stories260K", messages=msgs, max_tokens=30, temperature=0,
                                             stream=True, stream_options={"include_usage": True}))
    stext = "".join((c.choices[0].delta.content or "") for c in sc if c.choices)
    check(stext == chat.choices[0].message.content, "chat stream != non-stream: %r vs %r" % (stext, chat.choices[0].message.content))
    check(sc[-1].usage is not None, "chat stream usage missing")
    # n > 1 with a seed: three choices, and the same seed gives the same texts again.
    a = client.completions.create(model="stories260K", prompt=PROMPTS[1], max_tokens=24, temperature=1.0, n=3, seed=1234)
    b = client.completions.create(model="stories260K", prompt=PROMPTS[1], max_tokens=24, temperature=1.0, n=3, seed=1234)
    check(len(a.choices) == 3 and sorted(c.index for c in a.choices) == [0, 1, 2], "n=3 choices: %s" % a)
    check([c.text for c in a.choices] == [c.text for c in b.choices], "seeded n=3 not deterministic")
    check(a.usage.completion_tokens == sum(1 for _ in range(0)) or a.usage.completion_tokens >= 3, "n=3 usage")
    # Stop strings: the greedy text cut before the stop, finish_reason "stop", streaming too.
    base = full.choices[0].text
    cut = base.find("girl")
    check(cut > 0, "fixture text lacks 'girl': %r" % base)
    s = client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=40, temperature=0, stop=["girl", "zzz"])
    check(s.choices[0].text == base[:cut] and s.choices[0].finish_reason == "stop", "stop: %r" % s.choices[0].text)
    st = list(client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=40, temperature=0,
                                        stop="girl", stream=True))
    check("".join(c.choices[0].text for c in st if c.choices) == base[:cut], "stream stop text")
    check(st[-1].choices[0].finish_reason == "stop", "stream stop finish_reason")
    # Logprobs, completions format.
    lp = client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=8, temperature=0, logprobs=2)
    L = lp.choices[0].logprobs
    check(len(L.tokens) == 8 and len(L.token_logprobs) == 8 and len(L.text_offset) == 8, "completion logprobs: %s" % L)
    check(all(len(t) <= 2 for t in L.top_logprobs) and all(x <= 0 for x in L.token_logprobs), "top logprobs")
    check("".join(L.tokens) == lp.choices[0].text, "logprob tokens join to the text")
    # Logprobs, chat format.
    cl = client.chat.completions.create(model="stories260K", messages=msgs, max_tokens=6, temperature=0,
                                        logprobs=True, top_logprobs=3)
    content = cl.choices[0].logprobs.content
    check(len(content) == 6 and all(len(e.top_logprobs) == 3 for e in content), "chat logprobs: %s" % content)
    check(all(bytes(e.bytes).decode("utf-8", "replace") == e.token for e in content), "chat logprob bytes")
    # Models, tokenize/detokenize.
    check([m.id for m in client.models.list().data] == ["stories260K"], "models list")
    st_, _, body = srv.request("POST", "/tokenize", {"prompt": "Once upon a time"})
    toks = json.loads(body)["tokens"]
    check(st_ == 200 and toks == [1, 403, 407, 261, 378], "tokenize: %s" % body)
    st_, _, body = srv.request("POST", "/detokenize", {"tokens": toks[1:]})
    check(st_ == 200 and json.loads(body)["prompt"] == "Once upon a time", "detokenize: %s" % body)


def tinfer_run_beams(prompt, n, beams):
    out = subprocess.run([TINFER, "run", "-m", MODEL, "-p", prompt, "-n", str(n), "--beams", str(beams)],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "tinfer run --beams failed: " + out.stderr)
    return out.stdout


def test_beam_search(srv, client):
    # use_beam_search (vLLM's field): n beams -> n choices, best first; the best equals `tinfer run --beams`,
    # width 1 equals greedy; chat too; temperature > 0 and streaming are refused with a 400.
    r = client.completions.create(model="stories260K", prompt=PROMPTS[2], max_tokens=20, n=3,
                                  extra_body={"use_beam_search": True, "length_penalty": 1.0})
    check(sorted(c.index for c in r.choices) == [0, 1, 2], "beam choices: %s" % r)
    texts = [c.text for c in sorted(r.choices, key=lambda c: c.index)]
    check(len(set(texts)) == 3, "beam results are not distinct: %r" % texts)
    check(texts[0] == tinfer_run_beams(PROMPTS[2], 20, 3), "beam best != tinfer run --beams 3: %r" % texts[0])
    one = client.completions.create(model="stories260K", prompt=PROMPTS[0], max_tokens=20, n=1,
                                    extra_body={"use_beam_search": True})
    check(one.choices[0].text == tinfer_run(PROMPTS[0], 20), "width-1 beam != greedy: %r" % one.choices[0].text)
    chat = client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Tell me a story."}],
                                          max_tokens=12, n=2, temperature=0,
                                          extra_body={"use_beam_search": True, "early_stopping": True})
    check(len(chat.choices) == 2 and all(c.message.content for c in chat.choices), "beam chat: %s" % chat)
    C = "/v1/completions"
    expect_error(srv, "POST", C, {"prompt": "x", "use_beam_search": True, "n": 2, "temperature": 0.7}, 400, "temperature")
    expect_error(srv, "POST", C, {"prompt": "x", "use_beam_search": True, "n": 2, "stream": True}, 400, "stream")
    expect_error(srv, "POST", C, {"prompt": "x", "use_beam_search": "yes"}, 400, "use_beam_search")
    deadline = time.time() + 5  # (stats are published at the end of the step that finished the request)
    while srv.metrics()["tinfer:kv_blocks_used"] != 0 and time.time() < deadline:
        time.sleep(0.05)
    check(srv.metrics()["tinfer:kv_blocks_used"] == 0, "beam search left KV blocks in use")


def expect_error(srv, method, path, body, status, param=None, headers=None):
    st, h, data = srv.request(method, path, body, headers=headers)
    check(st == status, "%s %s %r: status %d, want %d: %s" % (method, path, str(body)[:60], st, status, data[:200]))
    err = json.loads(data)["error"]
    check(set(err) >= {"message", "type", "param", "code"} and err["message"], "error shape: %s" % data)
    if param:
        check(err["param"] == param, "error param %r, want %r: %s" % (err["param"], param, data))
    return h


def test_bad_input(srv):
    C = "/v1/completions"
    expect_error(srv, "POST", C, b'{"prompt": "x", ', 400)
    expect_error(srv, "POST", C, b'[1, 2]', 400)
    expect_error(srv, "POST", C, {"prompt": "x", "max_tokens": "ten"}, 400, "max_tokens")
    expect_error(srv, "POST", C, {"prompt": "x", "max_tokens": -5}, 400, "max_tokens")
    expect_error(srv, "POST", C, {"prompt": "x", "max_tokens": 1e300}, 400, "max_tokens")
    expect_error(srv, "POST", C, {"prompt": "x", "temperature": -1}, 400, "temperature")
    expect_error(srv, "POST", C, {"prompt": "x", "top_p": 7}, 400, "top_p")
    expect_error(srv, "POST", C, {"prompt": "x", "n": 10**12}, 400, "n")
    expect_error(srv, "POST", C, {"prompt": 42}, 400, "prompt")
    expect_error(srv, "POST", C, {"prompt": "x", "stop": [1]}, 400, "stop[0]")
    expect_error(srv, "POST", C, {"prompt": "x", "logprobs": 99}, 400, "logprobs")
    expect_error(srv, "POST", C, {"prompt": [5, 99999]}, 400, "prompt")
    expect_error(srv, "POST", C, {"prompt": "x", "model": "gpt-4"}, 404, "model")  # OpenAI: model_not_found is a 404
    expect_error(srv, "POST", C, b'{"prompt": "\xff\xfe bad utf8"}', 400)
    expect_error(srv, "POST", C, {"prompt": [1] * 3000}, 400, "prompt")  # longer than the context
    expect_error(srv, "POST", C, {"prompt": "x", "stop_token_ids": [10**6]}, 400, "stop_token_ids")  # not in vocab
    expect_error(srv, "POST", "/v1/chat/completions", {"messages": "hi"}, 400, "messages")
    expect_error(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "robot", "content": "x"}]}, 400,
                 "messages[0].role")
    expect_error(srv, "POST", C, b"{" + b" " * (2 << 20) + b"}", 413)
    expect_error(srv, "GET", "/v1/nothing", None, 404)
    h = expect_error(srv, "GET", C, None, 405)
    check(h.get("allow") == "POST", "405 Allow header")
    expect_error(srv, "DELETE", "/v1/models", None, 405)
    # A clamped max_tokens is served and says so.
    st, h, data = srv.request("POST", C, {"prompt": "x", "max_tokens": 10**6, "temperature": 0})
    check(st == 200 and "warnings" in json.loads(data) and "warning" in h, "clamp warning: %s %s" % (h, data[:200]))
    # A second server cannot take the same port (no SO_REUSEPORT sharing).
    dup = subprocess.run([TINFER, "serve", "-m", MODEL, "--port", str(srv.port)], capture_output=True, text=True, timeout=30)
    check(dup.returncode == 1 and "cannot bind" in dup.stderr, "second bind: %s %s" % (dup.returncode, dup.stderr[-200:]))
    # Still serving.
    st, _, data = srv.request("POST", C, {"prompt": "Once", "max_tokens": 4})
    check(st == 200 and json.loads(data)["usage"]["completion_tokens"] == 4, "serving after bad input: %s" % data)


def test_concurrent_streams(srv, nclients=64):
    want = {}
    for p in PROMPTS:
        st, ev = stream_raw(srv.port, "/v1/completions", {"prompt": p, "max_tokens": 48, "temperature": 0, "stream": True})
        want[p] = stream_text(ev)[0]

    def one(i):
        p = PROMPTS[i % len(PROMPTS)]
        st, ev = stream_raw(srv.port, "/v1/completions", {"prompt": p, "max_tokens": 48, "temperature": 0, "stream": True})
        return p, st, ev

    with cf.ThreadPoolExecutor(nclients) as ex:
        results = list(ex.map(one, range(nclients)))
    for p, st, ev in results:
        check(st == 200 and ev[-1] == "[DONE]", "concurrent stream failed: %s %s" % (st, ev[-1:]))
        check(stream_text(ev)[0] == want[p], "concurrent greedy != single for %r" % p)


def test_256_open_streams(srv):
    # 256 streams open at once (each holds an HTTP thread while it runs); all must complete.
    def one(i):
        return stream_raw(srv.port, "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": PROMPTS[i % 4]}], "max_tokens": 24, "stream": True,
                           "ignore_eos": True, "seed": i})

    with cf.ThreadPoolExecutor(256) as ex:
        results = list(ex.map(one, range(256)))
    bad = [(st, ev[-1:]) for st, ev in results if st != 200 or ev[-1] != "[DONE]"]
    check(not bad, "%d of 256 streams failed: %s" % (len(bad), bad[:3]))
    m = srv.metrics()
    check(m["tinfer:time_to_first_token_seconds_count"] > 256 and m["tinfer:kv_blocks_total"] > 0, "metrics: %s" % m)


def test_vanishing_client(srv):
    s = socket.create_connection(("127.0.0.1", srv.port))
    body = json.dumps({"prompt": "Once", "max_tokens": 1500, "stream": True, "ignore_eos": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    got = b""
    while got.count(b"data: ") < 5:
        got += s.recv(65536)
    check(srv.metrics()["tinfer:kv_blocks_used"] > 0, "KV in use while streaming")
    s.close()  # the client vanishes mid-stream
    deadline = time.time() + 10
    while time.time() < deadline:
        m = srv.metrics()
        if m["tinfer:kv_blocks_used"] == 0 and m["tinfer:num_requests_running"] == 0:
            break
        time.sleep(0.05)
    m = srv.metrics()
    check(m["tinfer:kv_blocks_used"] == 0, "KV blocks not freed after disconnect: %s" % m["tinfer:kv_blocks_used"])
    check(m["tinfer:client_disconnects_total"] >= 1, "disconnect not counted")


def test_overload_auth_shutdown():
    srv = Server(TINFER, MODEL, "--kv-memory", "32M", "--max-seqs", "2", "--max-queued-requests", "4",
                 "--api-key", "sekrit", "--shutdown-grace", "1", "--served-model-name", "tiny",
                 "--long-request-tokens", "50")
    try:
        auth = {"Authorization": "Bearer sekrit"}
        expect_error(srv, "GET", "/v1/models", None, 401)
        expect_error(srv, "GET", "/v1/models", None, 401, headers={"Authorization": "Bearer sekriT"})
        st, _, data = srv.request("GET", "/v1/models", headers=auth)
        check(st == 200 and json.loads(data)["data"][0]["id"] == "tiny", "served model name: %s" % data)
        check(srv.request("GET", "/health")[0] == 200, "health needs no key")
        # n above --max-seqs: the same 400 naming n for a short request and a long (background-class) one
        # (the long lane used to answer 200 with every choice aborted).
        for mt in (5, 400):
            expect_error(srv, "POST", "/v1/completions", {"prompt": "x", "n": 3, "max_tokens": mt}, 400, "n",
                         headers=auth)

        def one(i):
            return srv.request("POST", "/v1/completions", {"prompt": PROMPTS[i % 4], "max_tokens": 100, "ignore_eos": True},
                               headers=auth, timeout=60)

        with cf.ThreadPoolExecutor(64) as ex:
            res = list(ex.map(one, range(64)))
        codes = [r[0] for r in res]
        check(set(codes) <= {200, 429} and codes.count(429) > 0 and codes.count(200) >= 4, "overload codes: %s" % codes)
        check(all("retry-after" in r[1] for r in res if r[0] == 429), "429 without Retry-After")
        check(all(json.loads(r[2])["usage"]["completion_tokens"] == 100 for r in res if r[0] == 200), "200s complete")
        # SIGTERM during load: every in-flight stream ends properly (abort/length + [DONE]) and exit status 0.
        with cf.ThreadPoolExecutor(8) as ex:
            futs = [ex.submit(stream_raw, srv.port, "/v1/completions",
                              {"prompt": "Once", "max_tokens": 1800, "ignore_eos": True, "stream": True}, auth)
                    for _ in range(4)]
            time.sleep(0.5)
            code = srv.stop()
            outs = [f.result(timeout=30) for f in futs]
        check(code == 0, "exit status after SIGTERM: %s\n%s" % (code, "".join(srv.log[-5:])))
        for st, ev in outs:
            check(st in (200, 429) and ev and (st == 429 or ev[-1] == "[DONE]"), "stream at shutdown: %s %s" % (st, ev[-2:]))
            if st == 200:
                check(stream_text(ev)[1] in ("abort", "length"), "finish at shutdown: %s" % stream_text(ev)[1])
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()


def test_packed_cache():
    # --packed-cache: the first start writes the packed weights, the second reads them back; both answer greedy
    # prompts exactly as `tinfer run` does (without a cache).
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        cache = os.path.join(d, "packed")
        logs = []
        for _ in range(2):
            srv = Server(TINFER, MODEL, "--packed-cache", cache, "--kv-memory", "16M", "--ctx", "256")
            try:
                status, _, body = srv.request("POST", "/v1/completions", {
                    "model": "stories260K", "prompt": PROMPTS[2], "max_tokens": 30, "temperature": 0})
                check(status == 200, "completion: %s %s" % (status, body[:200]))
                text = json.loads(body)["choices"][0]["text"]
                check(text == tinfer_run(PROMPTS[2], 30), "greedy completion with a packed cache != tinfer run: %r" % text)
            finally:
                check(srv.stop() == 0, "exit status")
            logs.append("".join(srv.log))
        check("wrote" in logs[0] and "packed weights to" in logs[0], "first start did not write the cache:\n" + logs[0])
        check("read" in logs[1] and "packed weights from" in logs[1] and "rewriting" not in logs[1],
              "second start did not read the cache:\n" + logs[1])
        files = os.listdir(cache)
        check(len(files) == 1 and files[0].endswith(".tpack"), "cache directory: %s" % files)


def main():
    why = skip_reason(MODEL)
    if why:
        print("SKIP: " + why)
        return 77
    import openai
    t0 = time.time()
    srv = Server(TINFER, MODEL, "--kv-memory", "64M", "--max-seqs", "64", "--ctx", "512")
    failures = 0
    try:
        client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="none", max_retries=0, timeout=60)
        tests = [("openai_client", lambda: test_openai_client(srv, client)),
                 ("bad_input", lambda: test_bad_input(srv)),
                 ("beam_search", lambda: test_beam_search(srv, client)),
                 ("concurrent_streams_64", lambda: test_concurrent_streams(srv)),
                 ("open_streams_256", lambda: test_256_open_streams(srv)),
                 ("vanishing_client", lambda: test_vanishing_client(srv)),
                 ("overload_auth_shutdown", test_overload_auth_shutdown),
                 ("packed_cache", test_packed_cache)]
        failures += run_named(tests, 24)
        code = srv.stop()
        if code != 0:
            failures += 1
            print("FAIL shutdown exit status %s" % code)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
