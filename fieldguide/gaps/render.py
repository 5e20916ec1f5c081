"""The gap report as Markdown, CSV, JSON or one self-contained HTML page."""
from __future__ import annotations

import csv
import html
import io
import json
from collections import Counter

from fieldguide.gaps.classify import KINDS, Cluster
from fieldguide.gaps.report import GapReport
from fieldguide.gaps.search import section_name

KIND_TITLES = {"missing": "Missing from the docs", "not_found": "In the docs but not found",
               "disliked": "Answered but disliked", "partial": "Only partly covered"}


def _nearest_text(cluster: Cluster) -> str:
    parts = []
    for n in cluster.nearest:
        name = section_name(n["source"], n["heading_path"])
        parts.append(f"{name} ({n['score']:.3f})" if n.get("score") is not None else name)
    return "; ".join(parts)


def render_json(report: GapReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


def render_csv(report: GapReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["kind", "count", "questions", "nearest", "action", "reason"])
    for c in report.clusters:
        writer.writerow([c.kind, c.count, " | ".join(c.wordings[:5]), _nearest_text(c), c.action, c.reason])
    return out.getvalue()


def _header(report: GapReport) -> str:
    s = report.summary
    line = (f"{s.turns} turns read, {len(s.problems)} needed attention, {len(report.clusters)} topics.")
    if s.unchecked:
        line += (f" {s.unchecked} answered turns carry no sentence checks (stored before answers had them), "
                 "so weak support could not be counted for them.")
    return line


def render_md(report: GapReport) -> str:
    lines = ["# What to write or fix", "", _header(report), ""]
    if not report.clusters:
        lines.append("Nothing to do: no turn abstained, lacked support or was voted down.")
    for number, c in enumerate(report.clusters, start=1):
        lines += [f"## {number}. {KIND_TITLES[c.kind]}: \"{c.wordings[0]}\" ({c.count} turns)", "",
                  f"- **What to do:** {c.action}", f"- **Why:** {c.reason}"]
        if c.nearest:
            lines.append("- **Nearest sections:** " + _nearest_text(c))
        lines.append("- **Wordings:**")
        lines += [f"  - {w}" for w in c.wordings[:5]]
        if len(c.wordings) > 5:
            lines.append(f"  - … and {len(c.wordings) - 5} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_html(report: GapReport, top: int = 10) -> str:
    """One self-contained page: counts, a bar chart of the top gaps (inline SVG), the task list."""
    e = html.escape
    colours = {"missing": "#c0392b", "not_found": "#d68910", "disliked": "#7d3c98", "partial": "#2e86c1"}
    kinds = Counter()
    for c in report.clusters:
        kinds[c.kind] += c.count
    shown = report.clusters[:top]
    widest = max((c.count for c in shown), default=1)
    bar_h, label_w, chart_w = 26, 360, 320
    bars = []
    for i, c in enumerate(shown):
        y = i * bar_h
        width = max(2, round(chart_w * c.count / widest))
        label = c.wordings[0] if len(c.wordings[0]) <= 55 else c.wordings[0][:54] + "…"
        bars.append(f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{e(label)}</text>'
                    f'<rect x="{label_w}" y="{y + 4}" width="{width}" height="{bar_h - 8}" fill="{colours[c.kind]}">'
                    f'<title>{e(KIND_TITLES[c.kind])}: {c.count}</title></rect>'
                    f'<text x="{label_w + width + 6}" y="{y + 17}">{c.count}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + chart_w + 60}" '
           f'height="{max(1, len(shown)) * bar_h}" role="img" aria-label="top gaps by turns">{"".join(bars)}</svg>')
    cards = "".join(f'<div class="card" style="border-color:{colours[k]}"><b>{kinds.get(k, 0)}</b> '
                    f'{e(KIND_TITLES[k].lower())}</div>' for k in KINDS)
    rows = []
    for number, c in enumerate(report.clusters, start=1):
        wordings = "".join(f"<li>{e(w)}</li>" for w in c.wordings[:5])
        nearest = e(_nearest_text(c)) or "—"
        rows.append(f'<section><h2><span class="tag" style="background:{colours[c.kind]}">'
                    f'{e(KIND_TITLES[c.kind])}</span> {number}. {e(c.wordings[0])} <small>({c.count} turns)</small></h2>'
                    f'<p><b>What to do:</b> {e(c.action)}</p><p><b>Why:</b> {e(c.reason)}</p>'
                    f'<p><b>Nearest sections:</b> {nearest}</p><ul>{wordings}</ul></section>')
    body = "".join(rows) or "<p>Nothing to do: no turn abstained, lacked support or was voted down.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Docs gaps</title>
<style>
body{{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}}
.cards{{display:flex;gap:1rem;margin:1rem 0}}.card{{border-left:6px solid;padding:.5rem 1rem;background:#f6f6f6}}
.card b{{font-size:1.4rem}}svg text{{font-size:12px;fill:#222}}section{{border-top:1px solid #ddd;padding:.5rem 0}}
.tag{{color:#fff;border-radius:4px;padding:0 .4rem;font-size:.8rem;vertical-align:middle}}h2{{font-size:1.05rem}}
</style></head><body>
<h1>What to write or fix</h1><p>{e(_header(report))}</p>
<div class="cards">{cards}</div>
<h2>Top gaps</h2>{svg}
{body}
</body></html>
"""


RENDERERS = {"md": render_md, "csv": render_csv, "json": render_json, "html": render_html}
