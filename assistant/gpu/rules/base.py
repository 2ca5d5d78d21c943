"""The rule machinery: a rule reads `Facts` and returns (status, what it saw, the fix); it never probes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

from assistant.gpu.facts import Facts, GpuFacts

Status = Literal["pass", "warn", "fail", "skip"]
Check = Callable[[Facts], tuple[Status, str, str]]
GpuCheck = Callable[[Facts, list[GpuFacts]], tuple[Status, str, str]]
NO_GPU: tuple[Status, str, str] = ("skip", "no NVIDIA GPU", "")


@dataclass
class Finding:
    rule: str
    title: str
    status: Status
    saw: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    check: Check

    def __call__(self, facts: Facts) -> Finding:
        status, saw, fix = self.check(facts)
        return Finding(self.id, self.title, status, saw, fix)


RULES: list[Rule] = []


def rule(rule_id: str, title: str, *, on_visible_gpus: bool = False) -> Callable[[Callable], Rule]:
    """Register a check; `doctor` runs the rules in the order they were registered. A check `on_visible_gpus`
    is skipped (NO_GPU) where no GPU is visible, and is given the visible ones beside the facts."""

    def deco(fn: Callable) -> Rule:
        r = Rule(rule_id, title, _given_visible_gpus(fn) if on_visible_gpus else fn)
        RULES.append(r)
        return r

    return deco


def _given_visible_gpus(fn: GpuCheck) -> Check:
    def check(facts: Facts) -> tuple[Status, str, str]:
        gpus = visible(facts)
        return fn(facts, gpus) if gpus else NO_GPU

    return check


def run_rules(facts: Facts) -> list[Finding]:
    return [r(facts) for r in RULES]


def overall(findings: list[Finding]) -> Status:
    statuses = {f.status for f in findings}
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"


def visible(facts: Facts) -> list[GpuFacts]:
    """The GPUs a CUDA program started with this environment would see."""
    return facts.visible_gpus()[0]


def min_cc(gpus: list[GpuFacts]) -> tuple[int, int] | None:
    """The oldest compute capability among these GPUs: kernels must exist for it."""
    ccs = [g.compute_capability for g in gpus if g.compute_capability]
    return min(ccs) if ccs else None


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.10.2+cu126' -> (0, 10, 2)."""
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])
