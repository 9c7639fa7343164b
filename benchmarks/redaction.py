"""What redaction costs (issue 24): the first use in a fresh interpreter, and each text after.

Every round starts a fresh interpreter (as a cold Lambda does) and measures, in order:

* ``import``: importing ``domain.redaction`` (``regex``, our tokens module);
* ``first use``: the first ``redact()`` of a short task title, which loads the rule set
  (our rules.toml parsed, house and detect-secrets rules compiled; the file's patterns compile
  later, each the first time one of its keywords occurs);
* ``first description``: the first 2,000-character description after that (the patterns its
  keywords wake up compile now);
* ``per description``: the median of 200 redactions of 2,000-character descriptions (ordinary
  task prose with the words that wake the common rules: key, token, secret, password, auth);
* ``per title``: the median of 200 redactions of a 40-character title.

Run: .venv/bin/python -m benchmarks.redaction [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, random, statistics, time
t0 = time.perf_counter()
from domain import redaction
t1 = time.perf_counter()
redaction.redact("Fix the login redirect on the sign-in page")
t2 = time.perf_counter()
rng = random.Random(7)
words = ("the a board task moves to review when its checklist is done and the owner agrees with the plan for "
         "next week deploy the API key rotation token secret password access auth login bug fix release notes "
         "staging production database migration").split()
def description():
    text = ""
    while len(text) < 2000:
        text += " ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize() + ". "
    return text[:2000]
first = description()
t3 = time.perf_counter()
redaction.redact(first)
t4 = time.perf_counter()
texts = [description() for _ in range(200)]
per = []
for text in texts:
    a = time.perf_counter(); redaction.redact(text); per.append(time.perf_counter() - a)
titles = [" ".join(rng.choice(words) for _ in range(6)).capitalize()[:40] for _ in range(200)]
per_title = []
for text in titles:
    a = time.perf_counter(); redaction.redact(text); per_title.append(time.perf_counter() - a)
print(json.dumps({"import": t1 - t0, "first use": t2 - t1, "first description": t4 - t3,
                  "per description": statistics.median(per), "per title": statistics.median(per_title)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    rounds = []
    for _ in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", CHILD], cwd=root, capture_output=True, text=True, check=True)
        rounds.append(json.loads(out.stdout))
    print(f"{args.rounds} fresh interpreters; median (min-max) in ms")
    for name in rounds[0]:
        values = [r[name] * 1000 for r in rounds]
        print(f"  {name:18} {statistics.median(values):8.2f}  ({min(values):.2f}-{max(values):.2f})")


if __name__ == "__main__":
    main()
