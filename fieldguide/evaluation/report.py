"""Tables and charts of evaluation scores."""
from __future__ import annotations

from pathlib import Path

from fieldguide.evaluation.metrics import METRICS

SLICE_TITLES = {
    "all": "all questions",
    "screen": "screen questions",
    "conceptual": "conceptual questions",
    "long_section": "long-section questions (gold section > 400 words)",
}


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    return str(value)


def format_table(columns: dict[str, dict], rows=METRICS, markdown: bool = False) -> str:
    """Systems as columns, metrics as rows; plain text, or a Markdown table."""
    names = list(columns)
    if markdown:
        lines = ["| metric | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
        lines += ["| " + row + " | " + " | ".join(_cell(columns[n].get(row)) for n in names) + " |" for row in rows]
        return "\n".join(lines)
    width = max(9, *(len(n) for n in names)) + 2
    lines = ["metric".ljust(14) + "".join(n.rjust(width) for n in names)]
    lines += [row.ljust(14) + "".join(_cell(columns[n].get(row)).rjust(width) for n in names) for row in rows]
    return "\n".join(lines)


def slice_tables(scores: dict[str, dict[str, dict]], systems: list[str], markdown: bool = False) -> str:
    """One table per slice (all, screen, conceptual, long sections), each with its question count."""
    parts = []
    for name, title in SLICE_TITLES.items():
        columns = {s: scores[s][name] for s in systems if name in scores.get(s, {})}
        if not columns:
            continue
        counted = next(iter(columns.values()))["questions"]
        heading = f"{title} ({counted})"
        parts.append((f"#### {heading}\n\n" if markdown else f"== {heading}\n") + format_table(columns, markdown=markdown))
    return "\n\n".join(parts)


MEAN_METRICS = ("facts_all", "facts_soft", "file_hit", "section_mrr", "false_abstain", "abstain_ok", "intent_acc",
                "ctx_words")


def mean_table(scores_by_corpus: dict[str, dict[str, dict[str, dict]]],
               systems_by_corpus: dict[str, list[str]]) -> tuple[str, dict]:
    """The mean over corpora of each system's scores (all questions, and long sections), every
    corpus weighted alike; systems that every corpus ran only. Returns (table, figures)."""
    shared = [s for s in next(iter(systems_by_corpus.values()))
              if all(s in systems for systems in systems_by_corpus.values())]
    mean: dict[str, dict] = {}
    for system in shared:
        row = {}
        for metric in MEAN_METRICS:
            values = [scores[system]["all"].get(metric) for scores in scores_by_corpus.values()]
            row[metric] = round(sum(values) / len(values), 3) if all(v is not None for v in values) else None
        long = [scores[system].get("long_section", {}).get("facts_all") for scores in scores_by_corpus.values()]
        row["long_facts_all"] = round(sum(long) / len(long), 3) if all(v is not None for v in long) else None
        mean[system] = row
    return format_table(mean, rows=(*MEAN_METRICS, "long_facts_all")), mean


def save_chart(scores: dict[str, dict[str, dict]], systems: list[str], path: Path) -> None:
    """Left: facts_all against context words, one point per system. Right: facts_all per slice."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    points: dict[tuple[float, float], list[str]] = {}  # systems that land on the same spot share a label
    for system in systems:
        overall = scores[system]["all"]
        points.setdefault((overall["ctx_words"], overall["facts_all"]), []).append(system)
    for (words, facts), names in points.items():
        left.scatter(words, facts, s=40, color=f"C{systems.index(names[0]) % 10}")
        left.annotate("\n".join(names), (words, facts), textcoords="offset points", xytext=(5, 4), fontsize=8)
    left.set_xlabel("mean context words per question (less is cheaper)")
    left.set_ylabel("facts_all (all key facts in context)")
    left.set_title("Completeness against context size")
    left.grid(alpha=0.3)

    slices = [s for s in SLICE_TITLES if all(s in scores[system] for system in systems)]
    width = 0.8 / max(1, len(systems))
    for n, system in enumerate(systems):
        xs = [i + n * width for i in range(len(slices))]
        right.bar(xs, [scores[system][s]["facts_all"] for s in slices], width, label=system, color=f"C{n % 10}")
    right.set_xticks([i + width * (len(systems) - 1) / 2 for i in range(len(slices))])
    right.set_xticklabels(slices)
    right.set_ylabel("facts_all")
    right.set_ylim(0, 1.3)  # headroom for the legend
    right.set_title("facts_all per question slice")
    right.legend(fontsize=7, ncol=3, loc="upper center")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
