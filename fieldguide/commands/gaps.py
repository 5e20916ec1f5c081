"""`fieldguide gaps [--since DATE] [--stale] [--label NAME] [--format md|csv|json|html] [--out FILE]`.

With `--label`, the report is one doc set's: the turns limited to that set (or whose answer cites
it), their nearest sections searched in that set alone and judged by its own calibration."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = ("What the docs team should write or fix, from the stored turns: questions abstained on or answered "
        "only partly (the coverage verdict), answers weakly supported or voted down, clustered and classified; "
        "--stale lists stored answers whose cited sections changed or disappeared since.")

FORMATS = ("md", "csv", "json", "html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", metavar="DATE", help="only turns from this date or date-time on (ISO, UTC)")
    parser.add_argument("--format", choices=FORMATS, default="md", help="output format (default md)")
    parser.add_argument("--stale", action="store_true",
                        help="list stored answers whose cited sections changed or disappeared instead")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--collection", help="Weaviate collection (default FIELDGUIDE_COLLECTION)")
    parser.add_argument("--label", metavar="NAME", help="one doc set's report (a label given at ingest)")
    parser.add_argument("--cluster-threshold", type=float, metavar="COSINE",
                        help="cosine a wording needs to a cluster's centroid to join it (default: the highest "
                             "cosine between two of the calibration's off-topic probes)")


def run(args) -> int:
    from fieldguide.gaps import parse_since

    try:
        since = parse_since(args.since)
    except ValueError as exc:
        print(f"fieldguide gaps: {exc}", file=sys.stderr)
        return 2
    threshold = args.cluster_threshold
    if threshold is not None and not 0.0 < threshold < 1.0:
        print("fieldguide gaps: --cluster-threshold must be between 0 and 1", file=sys.stderr)
        return 2

    from fieldguide.errors import FieldguideError
    from fieldguide.settings import get_settings

    settings = get_settings()
    if args.collection:
        settings = settings.model_copy(update={"collection": args.collection})
    try:
        from fieldguide.labels import check_label

        label = check_label(args.label) if args.label else None
        text = stale_report(settings, since, args.format, label) if args.stale else gap_report(
            settings, since, args.format, threshold, label=label)
    except FieldguideError as exc:
        print(f"fieldguide gaps: {exc}", file=sys.stderr)
        return 1
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def of_label(records, label: str | None):
    """The turn records of one doc set: limited to it, or citing it (all of them without a label)."""
    from fieldguide.gaps import _get

    for record in records:
        if label is None or label in (_get(record, "labels") or []) or any(
                isinstance(c, dict) and c.get("label") == label for c in _get(record, "citations") or []):
            yield record


def gap_report(settings, since: float, fmt: str, threshold: float | None, resources=None,
               label: str | None = None) -> str:
    from fieldguide.gaps import RENDERERS, problem_turns, report_for
    from fieldguide.service.state import open_turns

    turns = open_turns(settings)
    try:
        feedback = [f for f in turns.feedback_since(0.0) if label is None or next(of_label([f.record], label), None)]
        summary = problem_turns(of_label(turns.turns_since(since), label), feedback, since)
    finally:
        close = getattr(turns, "close", None)
        if close:
            close()
    report = report_for(summary, settings, threshold, resources, label)
    return RENDERERS[fmt](report)


def stale_report(settings, since: float, fmt: str, label: str | None = None) -> str:
    from fieldguide.freshness import index_version, render_stale, stale_answers
    from fieldguide.service.state import open_turns
    from fieldguide.store import open_store

    turns = open_turns(settings)
    try:
        records = list(of_label(turns.turns_since(since), label))
    finally:
        close = getattr(turns, "close", None)
        if close:
            close()
    with open_store(settings) as store:
        if store.manifest() is None:
            from fieldguide.errors import FieldguideError

            raise FieldguideError(f"collection {settings.collection} holds no index: run `fieldguide ingest DOCS_DIR` "
                                  "first")
        current = index_version(store.index_files())
        stale = stale_answers(records, current, store.texts, since)
    return render_stale(stale, fmt, current)
