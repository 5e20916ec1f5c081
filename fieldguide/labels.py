"""Doc set labels: names for the versions and products one collection holds (`v1`, `v2`,
`admin-guide`), and the small config file that lists folders with their labels.

A label is 1 to 64 characters: letters, digits, `.`, `_` and `-`, starting with a letter or a
digit (it appears in URLs, command lines and a comma-separated setting, `FIELDGUIDE_LABELS`).

The config file (`fieldguide ingest --config docsets.toml`) is TOML:

    [[docset]]
    label = "v1"
    folder = "docs/v1"

    [[docset]]
    label = "v2"
    folder = "docs/v2"

Folders are relative to the file. A docset without a label is the unnamed set.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fieldguide.errors import FieldguideError

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class InvalidLabel(FieldguideError, ValueError):
    """A label that is not a valid name, or that names no doc set of the index."""


def check_label(name: str) -> str:
    """`name` stripped, or InvalidLabel saying what a label may be."""
    label = str(name or "").strip()
    if not _LABEL.match(label):
        raise InvalidLabel(f"invalid label {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit")
    return label


def parse_labels(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """Labels from a comma-separated string or a list (each checked, duplicates dropped, order
    kept); None for none at all (every doc set)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    labels = tuple(dict.fromkeys(check_label(item) for item in items if str(item).strip()))
    return labels or None


def unknown_labels(labels: Iterable[str] | None, known: Iterable[str]) -> list[str]:
    """The labels of `labels` that are not among `known`."""
    known = set(known)
    return [label for label in labels or () if label not in known]


def check_known(labels: Iterable[str] | None, known: Iterable[str]) -> None:
    """InvalidLabel naming the first of `labels` the index has no doc set for, and those it has."""
    known = sorted(known)
    unknown = unknown_labels(labels, known)
    if unknown:
        raise InvalidLabel(f"unknown label {unknown[0]!r}: " + (
            f"this index has the doc sets {', '.join(known)}" if known else "this index has no labelled doc sets"))


def add_label_argument(parser, what: str) -> None:
    """`--label NAME` (repeatable) on a command that reads the index."""
    parser.add_argument("--label", action="append", default=[], metavar="NAME",
                        help=f"limit {what} to this doc set (repeatable; default FIELDGUIDE_LABELS, else every set)")


def with_cli_labels(settings, names: list[str]):
    """`settings` with the default doc sets the command line named (`--label`), checked."""
    if not names:
        return settings
    return settings.model_copy(update={"labels": ",".join(parse_labels(names) or ())})


@dataclass(frozen=True)
class DocSet:
    folder: Path
    label: str | None


def read_docsets(path: Path) -> list[DocSet]:
    """The doc sets a config file lists (see the module doc); FieldguideError naming the problem."""
    import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FieldguideError(f"cannot read {path}: {exc}") from None
    entries = data.get("docset")
    if not isinstance(entries, list) or not entries:
        raise FieldguideError(f"{path}: expected one or more [[docset]] tables with a folder and a label")
    docsets, seen = [], set()
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("folder"), str):
            raise FieldguideError(f"{path}: docset {number} needs a folder (a string)")
        label = check_label(entry["label"]) if entry.get("label") not in (None, "") else None
        if label in seen:
            raise FieldguideError(f"{path}: label {label or '(unnamed)'} is listed twice")
        seen.add(label)
        folder = (path.parent / entry["folder"]).resolve()
        docsets.append(DocSet(folder, label))
    return docsets
