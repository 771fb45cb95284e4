#!/usr/bin/env python3
"""Writes the prompt files of BENCHMARKS sections 1k-1m (speculative decoding, beam search) from the shared
corpora, so the figures can be reproduced without copying corpus text into the repository.

usage: scripts/spec_prompts.py OUT_DIR [--shared ../shared]
  copy.txt         completion mode: a WikiText paragraph, then "The same text, copied exactly:" and its first
                   6 words (4 prompts)
  repeat_chat.txt  chat (use --chat): "Repeat the following passage word for word." + a WikiText paragraph
  rewrite_chat.txt chat: "Repeat the following story word for word." (TinyStories) and four code edits
  chat.txt         chat: eight free-form questions
Entries are separated by lines holding only '%' (tinfer's prompt-file format)."""
import argparse
import os

CHAT = ["What are three good habits for staying healthy?", "Write a short poem about the sea.",
        "Explain why the sky is blue to a child.", "Give me ideas for a birthday party.",
        "What is the capital of Australia and what is it known for?", "Tell me a story about a brave mouse.",
        "How do I make a cup of tea?", "Describe your favourite season and why."]

CODE = [
    "Rename the variable `x` to `total` in this function and return the whole function.\n\n```python\n"
    "def add_all(values):\n    x = 0\n    for v in values:\n        x = x + v\n    return x\n```",
    "Add type hints to this Python function and return the whole function.\n\n```python\n"
    "def find_max(numbers):\n    best = numbers[0]\n    for n in numbers:\n        if n > best:\n"
    "            best = n\n    return best\n```",
    "Fix the bug in this function (it should count the vowels) and return the corrected function.\n\n```python\n"
    "def count_vowels(text):\n    count = 0\n    for ch in text:\n        if ch in \"aeiou\":\n"
    "            count = count + 2\n    return count\n```",
    "Convert this loop into a list comprehension and return the whole function.\n\n```python\n"
    "def squares(n):\n    result = []\n    for i in range(n):\n        result.append(i * i)\n    return result\n```",
]


def write(path, entries):
    with open(path, "w") as f:
        f.write("\n%\n".join(entries) + "\n")


def prompt_args():
    """(the parsed OUT and --shared arguments, OUT created, TinyStories stories, WikiText paragraphs without headings)
    for the prompt-file scripts."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shared", default=os.environ.get("TINFER_SHARED", "../shared"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    corpus = os.path.join(a.shared, "corpus")
    stories = [s.strip() for s in open(os.path.join(corpus, "tinystories-valid-head.txt")).read().split("\n\n")]
    wiki = [p.strip() for p in open(os.path.join(corpus, "wikitext-2-test.raw")).read().split("\n")]
    return a, stories, [p for p in wiki if not p.startswith("=")]


def main():
    a, stories, wiki = prompt_args()
    copy_src = [p for p in wiki if 600 < len(p) < 1200][10:14]
    write(os.path.join(a.out, "copy.txt"),
          ["Text: %s\n\nThe same text, copied exactly:\n%s" % (p, " ".join(p.split()[:6])) for p in copy_src])
    write(os.path.join(a.out, "repeat_chat.txt"),
          ["Repeat the following passage word for word.\n\n" + p[:700] for p in [p for p in wiki if len(p) > 500][3:11]])
    write(os.path.join(a.out, "rewrite_chat.txt"),
          ["Repeat the following story word for word.\n\n" + s for s in [s for s in stories if 400 < len(s) < 900][:4]]
          + CODE)
    write(os.path.join(a.out, "chat.txt"), CHAT)


if __name__ == "__main__":
    main()
