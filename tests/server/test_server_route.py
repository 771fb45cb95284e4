"""Routing between models (`tinfer serve --model-small S --model-large L --route explicit|entropy`) on stories260K
and a 2-layer model derived from it: routing by `model` name is exact (each model answers as itself, == `tinfer
run` with that model), unknown names are 404, both models are in /v1/models; the automatic policy's decision is in
the response (tinfer_route) and logged per request; a threshold that sends everything to the large model, and an
escalation forced at the first / third token, continue the answer on the large model (usage stays right); /metrics
counts routed and escalated requests; bad flags are refused with a message. Exit 77 = skipped (fixture absent)."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import run_named, report, skip_reason, Server, env_paths  # noqa: E402

TINFER, MODEL = env_paths()
LARGE = "stories260K"
SMALL = "stories-small"
PROMPTS = ["Once upon a time", "The little dog"]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def tinfer_run(model, prompt, n):
    out = subprocess.run([TINFER, "run", "-m", model, "-p", prompt, "--temp", "0", "-n", str(n)],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "tinfer run failed: " + out.stderr)
    return out.stdout


def complete(srv, body):
    st, _, data = srv.request("POST", "/v1/completions", dict({"temperature": 0, "ignore_eos": True}, **body))
    check(st == 200, "status %d: %s" % (st, data[:300]))
    return json.loads(data)


def route_server(small, *flags):
    return Server(TINFER, None, "--model-large", MODEL, "--model-small", small, "-t", "2", "--kv-memory", "16M", *flags)


def log_lines(srv, want):
    deadline = time.time() + 5
    while time.time() < deadline:  # a request's line is written when its handler ends
        lines = [x for x in srv.log if x.startswith("tinfer route:")]
        if len(lines) >= want:
            return lines
        time.sleep(0.05)
    return [x for x in srv.log if x.startswith("tinfer route:")]


def test_explicit(small):
    srv = route_server(small, "--route", "explicit")
    try:
        st, _, data = srv.request("GET", "/v1/models")
        ids = [m["id"] for m in json.loads(data)["data"]]
        check(st == 200 and ids == [LARGE, SMALL], "models: %s" % ids)
        differ = False
        for p in PROMPTS:
            for model_path, name in ((MODEL, LARGE), (small, SMALL)):
                r = complete(srv, {"prompt": p, "max_tokens": 20, "model": name})
                check(r["model"] == name, "answered by %s, asked %s" % (r["model"], name))
                want = tinfer_run(model_path, p, 20)
                check(r["choices"][0]["text"] == want, "%s on %r: %r != tinfer run %r" % (name, p, r["choices"][0]["text"], want))
                check(r["tinfer_route"][0]["policy"] == "explicit" and not r["tinfer_route"][0]["automatic"], str(r))
            differ = differ or tinfer_run(MODEL, p, 20) != tinfer_run(small, p, 20)
        check(differ, "the two models answer alike: the test could not tell them apart")
        r = complete(srv, {"prompt": PROMPTS[0], "max_tokens": 5})  # no model: the large one
        check(r["model"] == LARGE, "default model: %s" % r["model"])
        for bad in ("gpt-4", "auto"):  # "auto" is the entropy policy's name only
            st, _, data = srv.request("POST", "/v1/completions", {"prompt": "x", "model": bad})
            err = json.loads(data)["error"]
            check(st == 404 and err["code"] == "model_not_found" and err["param"] == "model", "%s: %d %s" % (bad, st, data))
        m = srv.metrics()
        check(m['tinfer:route_requests_total{model="%s"}' % LARGE] == 3, "large count: %s" % m)
        check(m['tinfer:route_requests_total{model="%s"}' % SMALL] == 2, "small count: %s" % m)
        check(m["tinfer:route_automatic_total"] == 0, "automatic count")
        lines = log_lines(srv, 5)
        check(len(lines) == 5 and all("policy=explicit" in x and "escalated=no" in x for x in lines), "log: %s" % lines)
    finally:
        srv.stop()


def test_entropy_decisions(small):
    # Threshold 100 nats: every prompt stays on the small model; the same prompts pinned to it report the same entropy.
    srv = route_server(small, "--route", "entropy", "--route-threshold", "100")
    try:
        for p in PROMPTS:
            r = complete(srv, {"prompt": p, "max_tokens": 12})
            info = r["tinfer_route"][0]
            check(r["model"] == SMALL and info["automatic"] and not info["escalated"], str(r))
            check(r["choices"][0]["text"] == tinfer_run(small, p, 12), "automatic on small != tinfer run small")
            pinned = complete(srv, {"prompt": p, "max_tokens": 12, "model": SMALL})["tinfer_route"][0]
            check(info["prompt_entropy"] > 0 and abs(pinned["prompt_entropy"] - info["prompt_entropy"]) < 1e-6,
                  "entropy %s vs pinned %s" % (info, pinned))
            pinned_large = complete(srv, {"prompt": p, "max_tokens": 12, "model": LARGE})["tinfer_route"][0]
            check(pinned_large["model"] == LARGE and not pinned_large["automatic"], str(pinned_large))
        lines = log_lines(srv, 6)
        auto = [x for x in lines if "automatic=yes" in x]
        check(len(auto) == 2 and all("model=%s" % SMALL in x and "prompt_entropy=" in x and "prompt_entropy=-" not in x
                                     and "request=cmpl-" in x for x in auto), "log: %s" % lines)
        m = srv.metrics()
        check(m["tinfer:route_automatic_total"] == 2 and m['tinfer:route_requests_total{model="%s"}' % SMALL] == 4,
              "metrics: %s" % {k: v for k, v in m.items() if "route" in k})
    finally:
        srv.stop()
    # Threshold 0: every measured prompt is above it and the large model answers, from the prompt alone.
    srv = route_server(small, "--route", "entropy", "--route-threshold", "0")
    try:
        for p in PROMPTS:
            r = complete(srv, {"prompt": p, "max_tokens": 12})
            info = r["tinfer_route"][0]
            check(r["model"] == LARGE and info["automatic"] and info["prompt_entropy"] > 0 and not info["escalated"], str(r))
            check(r["choices"][0]["text"] == tinfer_run(MODEL, p, 12), "routed to large != tinfer run large")
            check(r["usage"]["completion_tokens"] == 12, "usage: %s" % r["usage"])
        lines = log_lines(srv, 2)
        check(len(lines) == 2 and all("model=%s" % LARGE in x and "automatic=yes" in x for x in lines), "log: %s" % lines)
    finally:
        srv.stop()


def test_escalation(small):
    # Window 1, a threshold every token crosses: the small model's first token already escalates, so the answer is
    # the large model's own.
    srv = route_server(small, "--route", "entropy", "--route-threshold", "100", "--escalate-threshold", "1e-9",
                       "--escalate-window", "1")
    try:
        r = complete(srv, {"prompt": PROMPTS[0], "max_tokens": 16})
        info = r["tinfer_route"][0]
        check(r["model"] == LARGE and info["escalated"] and info["escalated_after"] == 0, str(info))
        check(r["choices"][0]["text"] == tinfer_run(MODEL, PROMPTS[0], 16), "escalated at once != large")
        check(r["usage"]["completion_tokens"] == 16 and r["usage"]["prompt_tokens"] == 5, "usage: %s" % r["usage"])
    finally:
        srv.stop()
    # Window 3: two small-model tokens reach the client, then the large model continues after them.
    srv = route_server(small, "--route", "entropy", "--route-threshold", "100", "--escalate-threshold", "1e-9",
                       "--escalate-window", "3")
    try:
        p = PROMPTS[0]
        small2 = complete(srv, {"prompt": p, "max_tokens": 2, "model": SMALL})["choices"][0]["text"]
        r = complete(srv, {"prompt": p, "max_tokens": 16})
        info = r["tinfer_route"][0]
        check(r["model"] == LARGE and info["escalated"] and info["escalated_after"] == 2, str(info))
        text = r["choices"][0]["text"]
        check(text.startswith(small2), "answer %r does not start with the small model's %r" % (text, small2))
        check(r["usage"]["completion_tokens"] == 16 and r["usage"]["prompt_tokens"] == 5, "usage: %s" % r["usage"])
        # The large model's own continuation of prompt + those two tokens (ids via /tokenize; checked to be the
        # prompt's ids plus two).
        _, _, a = srv.request("POST", "/tokenize", {"prompt": p})
        _, _, b = srv.request("POST", "/tokenize", {"prompt": p + small2})
        ids_p, ids_b = json.loads(a)["tokens"], json.loads(b)["tokens"]
        check(ids_b[:len(ids_p)] == ids_p and len(ids_b) == len(ids_p) + 2, "re-tokenized: %s vs %s" % (ids_p, ids_b))
        cont = complete(srv, {"prompt": ids_b, "max_tokens": 14, "model": LARGE})["choices"][0]["text"]
        check(text == small2 + cont, "escalated answer %r != small %r + large continuation %r" % (text, small2, cont))
        # Streamed: the same text, chunks name the model that produced them (small first, then large).
        st, _, data = srv.request("POST", "/v1/completions", {"prompt": p, "max_tokens": 16, "temperature": 0,
                                                              "ignore_eos": True, "stream": True,
                                                              "stream_options": {"include_usage": True}})
        chunks = [json.loads(x[6:]) for x in data.decode().split("\n\n") if x.startswith("data: {")]
        stext = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        models = [c["model"] for c in chunks if c["choices"] and c["choices"][0]["text"]]
        check(stext == text, "stream %r != %r" % (stext, text))
        check(models[0] == SMALL and models[-1] == LARGE, "chunk models: %s" % models)
        check(chunks[-1]["usage"]["completion_tokens"] == 16 and chunks[-1]["tinfer_route"][0]["escalated"], str(chunks[-1]))
        m = srv.metrics()
        check(m["tinfer:route_escalations_total"] == 2 and m['tinfer:route_requests_total{model="%s"}' % LARGE] == 3,
              "metrics: %s" % {k: v for k, v in m.items() if "route" in k})
        lines = log_lines(srv, 4)
        check(sum("escalated=yes escalated_after=2" in x for x in lines) == 2, "log: %s" % lines)
    finally:
        srv.stop()


def test_calibrate_and_bench(small, d):
    # calibrate-route reads each prompt's entropy from the pinned small model and scores it against the large one;
    # bench route with threshold 0 (all large) must agree exactly, with 100 (all small) must serve all on small.
    prompts = os.path.join(d, "prompts.txt")
    with open(prompts, "w") as f:
        f.write("\n%\n".join(PROMPTS + ["Lily and Ben went to the park", "One day, a bird"]) + "\n")
    for threshold, share in (("0", 0.0), ("100", 1.0)):
        srv = route_server(small, "--route", "entropy", "--route-threshold", threshold)
        try:
            url = srv.base_url
            out = subprocess.run([TINFER, "calibrate-route", "--url", url, "--prompts", prompts, "-n", "8", "--json"],
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "calibrate-route: " + out.stderr)
            cal = json.loads(out.stdout)
            check(len(cal["prompts"]) == 4 and all(p["prompt_entropy"] > 0 for p in cal["prompts"]), str(cal))
            check(cal["curve"][0]["share_small"] == 0 and cal["curve"][-1]["share_small"] == 1, str(cal["curve"]))
            check(cal["agreement"] >= 0.95 and {"threshold": cal["route_threshold"], "share_small": cal["share_small"],
                                                "agreement": cal["agreement"]} in cal["curve"], str(cal))
            out = subprocess.run([TINFER, "bench", "route", "--url", url, "--prompts", prompts, "-n", "8", "--repeat",
                                  "1", "--json"], capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "bench route: " + out.stderr)
            b = json.loads(out.stdout)
            check(b["share_small"] == share and b["share_escalated"] == 0, str(b))
            if share == 0.0:
                check(b["agreement"] == 1.0, "all on the large model must agree exactly: %s" % b)
        finally:
            srv.stop()


def test_bad_flags(small):
    cases = [(["--route", "entropy", "--model-large", MODEL, "--route-threshold", "1"], "--model-small"),
             (["--route", "bogus", "--model-large", MODEL, "--model-small", small], "unknown policy"),
             (["--route", "entropy", "--model-large", MODEL, "--model-small", small], "--route-threshold"),
             (["--route", "entropy", "--model-large", MODEL, "--model-small", small, "--route-threshold", "-1"], ">= 0"),
             (["--route", "entropy", "--model-large", MODEL, "--model-small", small, "--route-threshold", "1",
               "--escalate-threshold", "-2"], "--escalate-threshold"),
             (["--route", "explicit", "--model-large", MODEL, "--model-small", small, "--route-threshold", "1"],
              "need --route entropy"),
             (["-m", MODEL, "--route", "explicit", "--model-large", MODEL, "--model-small", small], "--model-large only"),
             (["--route", "explicit", "--model-large", MODEL, "--model-small", MODEL], "same name")]
    for args, msg in cases:
        out = subprocess.run([TINFER, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=60)
        check(out.returncode != 0 and msg in out.stderr, "%s: exit %d, stderr %r" % (args, out.returncode, out.stderr[-300:]))


def main():
    t0 = time.time()
    reason = skip_reason(MODEL, need_openai=False)
    if reason:
        print("SKIP: " + reason)
        return 77
    with tempfile.TemporaryDirectory() as d:
        small = os.path.join(d, SMALL + ".gguf")
        out = subprocess.run([TINFER, "derive", "-m", MODEL, "--keep-layers", "0-1", "-o", small],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            print("FAIL derive: " + out.stderr)
            return 1
        failures = run_named([("explicit_by_name", lambda: test_explicit(small)),
                              ("entropy_decisions", lambda: test_entropy_decisions(small)),
                              ("escalation", lambda: test_escalation(small)),
                              ("calibrate_and_bench", lambda: test_calibrate_and_bench(small, d)),
                              ("bad_flags", lambda: test_bad_flags(small))], 20)
    return report(failures, t0)


if __name__ == "__main__":
    sys.exit(main())
