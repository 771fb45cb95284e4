"""Memory amplification through valid-size requests (issue 26 §2.1), on SmolLM2-135M (8192-token context).

A body within the 1 MiB limit -- 36,150 empty chat messages, or one 1 MiB word as a completions prompt -- used to
cost ~60 MB while it was parsed, templated and tokenized before its context-length 400, with nothing bounding how
many did so at once, and glibc kept what they freed: 64 at once took the server from ~370 MB to ~3.5 GB for good.
Now such a prompt is refused from its message count or byte length before it is built ("at least N tokens"),
preprocessing runs on --max-preprocessing threads (the rest wait --preprocess-wait s, then 429), and the heap is
trimmed after a burst. Each check prints its figures (RSS before / peak / after, MB).
Run by CTest; exit 77 = skipped (model absent). 64 concurrent clients at most; every wait is bounded."""
import http.client
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import run_named, report, Server, env_paths  # noqa: E402

TINFER, _ = env_paths()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.environ.get("TINFER_DEFAULT_MODEL") or os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
MAX_LEN = 8192  # SmolLM2's context, the serve default
PEAK_LIMIT_MB = 200  # a 64-request burst above the idle RSS (old code: ~3,000)
SETTLE_MB = 20  # RSS after a burst above the RSS before it (old code: ~3,000)
TOOL_SETTLE_MB = 40  # one 10 MB tool description (old code: +690)
# After 80 one at a time (measured +1 to +8 MB, +24 once on a loaded 2-core machine; old code: ~+1,000).
SEQUENTIAL_MB = 40
# Chat: 36,150 empty user messages, 1,048,379 bytes (the report's body); completions: one word of 1 MiB - 40 bytes.
CHAT = json.dumps({"messages": [{"role": "user", "content": ""}] * 36150, "max_tokens": 1}, separators=(",", ":"))
WORD = json.dumps({"prompt": "a" * ((1 << 20) - 40), "max_tokens": 1})
CHAT_PATH, COMP_PATH = "/v1/chat/completions", "/v1/completions"


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def mb(pid, key="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) >> 10
    return 0


def reset_peak(pid):
    """Resets VmHWM to the current RSS (Linux clear_refs 5); False where that is not allowed."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def post(port, path, body, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def settle(pid, before, limit_s=6):
    """Waits (bounded) for the RSS to come back within SETTLE_MB of `before`; returns the last reading."""
    deadline = time.time() + limit_s
    while True:
        now = mb(pid)
        if now <= before + SETTLE_MB or time.time() > deadline:
            return now
        time.sleep(0.1)


def burst(srv, path, body, n=64):
    """n clients at once; returns their statuses and the (before, peak, after) RSS in MB."""
    pid = srv.proc.pid
    before = mb(pid)
    reset_peak(pid)
    codes = []
    lock = threading.Lock()

    def one():
        try:
            st = post(srv.port, path, body)[0]
        except OSError as e:
            st = repr(e)
        with lock:
            codes.append(st)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=150)
    peak = mb(pid, "VmHWM")
    return codes, before, peak, settle(pid, before)


def floor_refusal(status, body):
    """True for the context-length 400 given from the prompt's size, before it was built."""
    if status != 400:
        return False
    e = json.loads(body)["error"]
    return e["code"] == "context_length_exceeded" and "at least" in e["message"] and str(MAX_LEN) in e["message"]


def test_one_chat(srv):
    t = time.time()
    st, _, body = post(srv.port, CHAT_PATH, CHAT)
    dt = time.time() - t
    print("     36,150 messages: %d in %.2f s: %s" % (st, dt, body[:150].decode()))
    check(floor_refusal(st, body), "not refused from its message count: %s %s" % (st, body[:300]))
    check(json.loads(body)["error"]["param"] == "messages", "param: %s" % body[:300])


def test_one_word(srv):
    t = time.time()
    st, _, body = post(srv.port, COMP_PATH, WORD)
    print("     1 MiB word: %d in %.2f s: %s" % (st, time.time() - t, body[:150].decode()))
    check(floor_refusal(st, body), "not refused from its length: %s %s" % (st, body[:300]))
    check(json.loads(body)["error"]["param"] == "prompt", "param: %s" % body[:300])


def test_fitting_prompts_not_refused(srv):
    # The floor is a lower bound: prompts that fit are served, and one that does not fit but whose floor is below the
    # context gets the engine's exact count, not a floor.
    st, _, body = post(srv.port, CHAT_PATH, json.dumps({"messages": [{"role": "user", "content": ""}] * 200,
                                                         "max_tokens": 1}))
    check(st == 200, "200 empty messages (~1,000 tokens) must be served: %s %s" % (st, body[:300]))
    st, _, body = post(srv.port, COMP_PATH, json.dumps({"prompt": "The quick brown fox jumps. " * 100,
                                                         "max_tokens": 1}))
    check(st == 200, "a 2,700-byte prose prompt must be served: %s %s" % (st, body[:300]))
    st, _, body = post(srv.port, CHAT_PATH, json.dumps({"messages": [{"role": "user", "content": ""}] * 2000,
                                                         "max_tokens": 1}))
    e = json.loads(body).get("error", {})
    check(st == 400 and e.get("code") == "context_length_exceeded" and "at least" not in e.get("message", ""),
          "2,000 empty messages (~10,000 tokens): the engine's exact count: %s %s" % (st, body[:300]))


def burst_check(srv, path, body, what):
    codes, before, peak, after = burst(srv, path, body)
    print("     64 x %s: RSS before %d MB, peak %d MB (+%d), after %d MB (%+d); statuses %s" %
          (what, before, peak, peak - before, after, after - before, sorted(set(map(str, codes)))))
    check(all(c == 400 for c in codes), "every one refused with 400: %s" % sorted(set(map(str, codes))))
    check(peak - before < PEAK_LIMIT_MB, "peak %d MB above %d MB (limit %d)" % (peak - before, before, PEAK_LIMIT_MB))
    check(after - before <= SETTLE_MB, "RSS %d MB after the burst, %d MB before (limit +%d)" % (after, before, SETTLE_MB))


def test_burst_chat(srv):
    burst_check(srv, CHAT_PATH, CHAT, "36,150 messages")


def test_burst_word(srv):
    burst_check(srv, COMP_PATH, WORD, "1 MiB word")


def test_sequential_no_climb(srv):
    pid = srv.proc.pid
    before = mb(pid)
    t = time.time()
    for i in range(80):
        st, _, body = post(srv.port, CHAT_PATH if i % 2 else COMP_PATH, CHAT if i % 2 else WORD)
        check(st == 400, "request %d: %s %s" % (i, st, body[:200]))
    after = settle(pid, before)
    print("     80 sequential in %.1f s: RSS before %d MB, after %d MB (%+d)" % (time.time() - t, before, after,
                                                                             after - before))
    check(after - before <= SEQUENTIAL_MB, "RSS climbed from %d to %d MB (limit +%d)" % (before, after, SEQUENTIAL_MB))


def test_huge_tool_description(srv):
    # SmolLM2's template does not print tools, so a 10 MB description cannot be refused from its size: it is parsed
    # on a preprocessing thread and served; what it cost comes back afterwards.
    pid = srv.proc.pid
    before = mb(pid)
    reset_peak(pid)
    tools = [{"type": "function", "function": {"name": "f", "description": "x" * (10 << 20),
                                               "parameters": {"type": "object", "properties": {}}}}]
    t = time.time()
    st, _, body = post(srv.port, CHAT_PATH, json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                                         "tools": tools, "max_tokens": 1}))
    dt, peak = time.time() - t, mb(pid, "VmHWM")
    after = settle(pid, before)
    print("     10 MB tool description: %d in %.2f s; RSS before %d MB, peak %d MB (+%d), after %d MB (%+d)" %
          (st, dt, before, peak, peak - before, after, after - before))
    check(st in (200, 400), "status %s %s" % (st, body[:300]))
    # Alone this returns to +0 MB; beside another test on 2 cores it has kept +21-22 MB (not given back by a
    # second malloc_trim either; not found). The bound is for the 690 MB the old code kept, not for that.
    check(after - before <= TOOL_SETTLE_MB, "RSS %d MB after, %d MB before" % (after, before))


def test_metrics(srv):
    _, _, page = post(srv.port, "/tokenize", json.dumps({"prompt": "hello"}))
    m = srv.metrics()
    for name in ("tinfer:num_requests_preprocessing", "tinfer:num_requests_preprocess_waiting",
                 "tinfer:request_rejected_preprocess_busy_total", "tinfer:memory_trims_total"):
        check(name in m, "/metrics lacks %s" % name)
    check(m["tinfer:request_rejected_prompt_floor_total"] >= 1, "floor refusals not counted")
    check(m["tinfer:memory_trims_total"] >= 1, "no heap trim after the bursts")
    check(m["tinfer:num_requests_preprocessing"] == 0 and m["tinfer:num_requests_preprocess_waiting"] == 0,
          "preprocessing gauges not back to 0")


def test_legit_after(srv):
    st, _, body = post(srv.port, COMP_PATH, json.dumps({"prompt": "Once upon a time", "max_tokens": 4}))
    check(st == 200 and json.loads(body)["usage"]["completion_tokens"] == 4, "legit request: %s %s" % (st, body[:300]))
    st, _, body = post(srv.port, CHAT_PATH, json.dumps({"messages": [{"role": "user", "content": "Hi"}],
                                                         "max_tokens": 4, "stream": False}))
    check(st == 200 and json.loads(body)["choices"][0]["message"]["role"] == "assistant", "legit chat: %s" % st)


def test_busy_429():
    # One preprocessing thread and no wait: of 16 chats of 36,150 messages at once some find it busy and get 429 with
    # Retry-After, in the queue-full shape; the rest get their 400. The server serves normally afterwards.
    srv = Server(TINFER, MODEL, "--kv-memory", "64M", "--ctx", "1024", "--max-preprocessing", "1",
                 "--preprocess-wait", "0")
    try:
        got = []
        lock = threading.Lock()

        def one():
            r = post(srv.port, CHAT_PATH, CHAT)
            with lock:
                got.append(r)

        threads = [threading.Thread(target=one) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        codes = sorted(st for st, _, _ in got)
        print("     16 at once on 1 thread, no wait: %s" % codes)
        check(len(got) == 16 and set(codes) <= {400, 429} and 429 in codes, "statuses %s" % codes)
        for st, h, body in got:
            if st == 429:
                e = json.loads(body)["error"]
                check(h.get("retry-after") == "1" and e["type"] == "rate_limit_error" and e["code"] == "queue_full",
                      "429 shape: %s %s" % (h, body[:300]))
        check(srv.metrics()["tinfer:request_rejected_preprocess_busy_total"] == codes.count(429), "429s not counted")
        st, _, body = post(srv.port, COMP_PATH, json.dumps({"prompt": "Once", "max_tokens": 2}))
        check(st == 200, "served afterwards: %s %s" % (st, body[:200]))
    finally:
        srv.proc.kill()
        srv.proc.wait()


def serve_flags():
    """--max-preprocessing pins the threads whatever the machine's cores (absent from builds before it existed)."""
    out = subprocess.run([TINFER, "serve", "--help"], capture_output=True, text=True, timeout=30)
    known = "--max-preprocessing" in out.stdout + out.stderr
    return ["--max-preprocessing", "2"] if known else []


def main():
    if not os.path.exists(MODEL):
        print("SKIP: model absent: " + MODEL)
        return 77
    t0 = time.time()
    srv = Server(TINFER, MODEL, "--max-body-bytes", str(16 << 20), *serve_flags())
    failures = 0
    try:
        failures += run_named([("one_chat_36150_messages", lambda: test_one_chat(srv)),
                               ("one_1mib_word", lambda: test_one_word(srv)),
                               ("fitting_prompts_served", lambda: test_fitting_prompts_not_refused(srv)),
                               ("burst_64_chat", lambda: test_burst_chat(srv)),
                               ("burst_64_word", lambda: test_burst_word(srv)),
                               ("sequential_80_no_climb", lambda: test_sequential_no_climb(srv)),
                               ("huge_tool_description", lambda: test_huge_tool_description(srv)),
                               ("legit_after", lambda: test_legit_after(srv)),
                               ("metrics", lambda: test_metrics(srv))])
        if srv.proc.poll() is not None:
            failures += 1
            print("FAIL server died (status %s):\n%s" % (srv.proc.returncode, "".join(srv.log[-10:])))
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
    failures += run_named([("busy_429", test_busy_429)])
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
