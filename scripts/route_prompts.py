#!/usr/bin/env python3
"""Writes the prompt mixes of BENCHMARKS section 1n (routing between models) from the shared corpora: a chat mix of
easy prompts (repeat a short passage word for word; one-line factual questions) and hard ones (free-form writing,
explanations of a saying, code edits), shuffled with a fixed seed and split alternately into a calibration half
(tinfer calibrate-route) and a held-out half (tinfer bench route), so the threshold is never scored on the prompts
that chose it.

usage: scripts/route_prompts.py OUT_DIR [--shared ../shared]
  calib.txt, heldout.txt  chat prompts (send with --chat), entries separated by lines holding only '%'"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_prompts import CHAT, CODE, prompt_args, write  # noqa: E402

FACTS = ["What is the capital of France?", "How many days are in a week?", "What colour is the sky on a clear day?",
         "What is 2 + 2?", "Which animal says moo?", "What is the opposite of hot?",
         "How many legs does a spider have?", "What is the largest planet in our solar system?",
         "What do bees make?", "What is the freezing point of water in Celsius?",
         "Which season comes after winter?", "What is the first letter of the English alphabet?"]
HARD = ["Write a short story about a robot who learns to paint.", "Compare the economies of two imaginary islands.",
        "Invent a new board game and explain its rules.", "Write a letter from a cat to its owner.",
        "Describe a city on the bottom of the ocean.", "Argue for and against homework in three sentences each."]


def main():
    a, stories, wiki = prompt_args()
    corpus = os.path.join(a.shared, "corpus")
    wiki = [p for p in wiki if 150 < len(p) < 400][20:26]
    fortunes = [f.strip() for f in open(os.path.join(corpus, "prompts-fortunes.txt")).read().split("\n%\n")]
    fortunes = [f for f in fortunes if 40 < len(f) < 160 and "\n" not in f][:8]
    easy = (["Repeat the following passage word for word.\n\n" + p for p in wiki]
            + ["Repeat the following story word for word.\n\n" + s for s in [s for s in stories if 150 < len(s) < 400][:6]]
            + FACTS)
    hard = (CHAT + CODE + HARD + ["Explain what this saying means: \"%s\"" % f for f in fortunes])
    mix = easy + hard
    random.Random(14).shuffle(mix)
    write(os.path.join(a.out, "calib.txt"), mix[0::2])
    write(os.path.join(a.out, "heldout.txt"), mix[1::2])
    print("%d easy + %d hard prompts -> %d calibration, %d held-out" % (len(easy), len(hard), len(mix[0::2]),
                                                                       len(mix[1::2])))


if __name__ == "__main__":
    main()
