"""The answer check's agreement with hand-labelled claim/source pairs: `python -m evals.support_agreement [LABELS]` prints
it at the chosen threshold (in all and per split: `dev` the scorer was built on, `held_out` labelled after)
and at other thresholds."""

from __future__ import annotations

import json
import sys

from assistant.answers.support import SUPPORT_THRESHOLD, support

def load_labels(path: str) -> list[dict]:
    """The labelled pairs: one JSON object a line with `claim`, `source`, `supported` (bool), and the
    source's `place` where the claim is about it."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def agreement(labels: list[dict], threshold: float = SUPPORT_THRESHOLD) -> float:
    """The share of labelled pairs where `score >= threshold` agrees with the hand label."""
    hits = sum((support(r["claim"], r["source"], r.get("place", "")).score >= threshold) == bool(r["supported"])
               for r in labels)
    return hits / len(labels) if labels else 0.0


def main(argv: list[str]) -> None:
    """Print, as JSON, the agreement at the chosen threshold (in all and per `split` of the pairs: `dev`
    the scorer was built on, `held_out` labelled after) and at other thresholds."""
    labels = load_labels(argv[0] if argv else "tests/fixtures/eval/support-labels.jsonl")
    splits = sorted({str(r.get("split", "")) for r in labels})
    by_split = {name: round(agreement([r for r in labels if str(r.get("split", "")) == name]), 4) for name in splits}
    sweep = {f"{t / 20:.2f}": round(agreement(labels, t / 20), 4) for t in range(4, 19)}
    print(json.dumps({"pairs": len(labels), "threshold": SUPPORT_THRESHOLD, "agreement": round(agreement(labels), 4),
                      "by_split": by_split, "by_threshold": sweep}))


if __name__ == "__main__":
    main(sys.argv[1:])
