"""The quality gate: a fixed set of dev questions whose scores must not fall below floors.

Floors are set from measured figures (see docs/BENCHMARKS.md, "Quality gate") a little
below them, so that a real regression fails and noise does not. `check_floors` raises
`QualityGateFailure` with the whole table in its message, so a failing CI run shows what moved.
"""
from __future__ import annotations

from fieldguide.evaluation.report import format_table


class QualityGateFailure(AssertionError):
    pass


def check_floors(scores: dict, floors: dict[str, float], system: str = "fieldguide") -> None:
    """Raise QualityGateFailure when any floored metric of `scores` is under its floor."""
    broken = [f"{name} = {scores.get(name)} < floor {floor}" for name, floor in floors.items()
              if scores.get(name) is None or scores[name] < floor]
    if broken:
        table = format_table({system: scores, "floor": dict(floors)})
        raise QualityGateFailure("quality gate failed: " + "; ".join(broken) + "\n" + table)
