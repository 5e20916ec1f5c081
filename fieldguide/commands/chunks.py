"""`fieldguide chunks DOCS_DIR`: the chunks of a docs folder as JSON Lines; no store, no network."""
from __future__ import annotations

import argparse
from pathlib import Path

# Files tokenized together: one batch, bounded memory.
FILES_PER_BATCH = 128
# Below this much Markdown a second process costs more than it saves.
FORK_MIN_BYTES = 256 * 1024
# Markdown shared out per round of the two processes (their output is held until printed).
ROUND_BYTES = 16 * 1024 * 1024

HELP = "Print the chunks of a docs folder as JSON Lines (no store, no network)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("docs_dir", type=Path, metavar="DOCS_DIR")
    parser.add_argument("--debug", action="store_true",
                        help="also print content_kind_reason (why a chunk is screen or prose)")


def run(args: argparse.Namespace) -> int:
    import sys

    from ingest.chunker import Chunker, iter_markdown_files

    docs_dir: Path = args.docs_dir
    if not docs_dir.is_dir():
        print(f"fieldguide chunks: {docs_dir} is not a folder", file=sys.stderr)
        return 2
    from ingest.dialects import folder_dialect_of

    paths = iter_markdown_files(docs_dir)
    try:
        chunker = Chunker()
        chunker.dialect = folder_dialect_of(docs_dir, paths, chunker.settings.docs_dialect)
    except ValueError as exc:  # a setting of the wrong type, a dialect it does not know
        print(f"fieldguide chunks: {exc}", file=sys.stderr)
        return 2
    files = []
    for path in paths:
        try:
            files.append((path.read_bytes(), path.relative_to(docs_dir).as_posix()))
        except OSError as exc:
            print(f"warning: {path}: cannot read ({exc.strerror}); skipped", file=sys.stderr)
    if _can_fork() and sum(len(raw) for raw, _ in files) >= FORK_MIN_BYTES:
        return _run_in_two_processes(chunker, files, args.debug)
    _emit(chunker, files, args.debug)
    return 0


def _can_fork() -> bool:
    import os

    if not hasattr(os, "fork"):
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores >= 2


def _rounds(files: list[tuple[bytes, str]]) -> list[list[int]]:
    """Consecutive runs of file indexes of at most ROUND_BYTES each (a bigger file is alone)."""
    rounds, current, size = [], [], 0
    for index, (raw, _) in enumerate(files):
        if current and size + len(raw) > ROUND_BYTES:
            rounds.append(current)
            current, size = [], 0
        current.append(index)
        size += len(raw)
    if current:
        rounds.append(current)
    return rounds


def _balance(files: list[tuple[bytes, str]], indexes: list[int]) -> tuple[list[int], list[int]]:
    """Two sets of about equal bytes, biggest files placed first (chunking time follows size)."""
    sets: tuple[list[int], list[int]] = ([], [])
    loads = [0, 0]
    for index in sorted(indexes, key=lambda i: -len(files[i][0])):
        lighter = 0 if loads[0] <= loads[1] else 1
        sets[lighter].append(index)
        loads[lighter] += len(files[index][0])
    return sorted(sets[0]), sorted(sets[1])


def _run_in_two_processes(chunker, files: list[tuple[bytes, str]], debug: bool) -> int:
    """Chunking is per file, so a folder is shared between two processes on two cores.
    Round by round (bounded memory), a forked child chunks one set of files into a
    temporary file while the parent chunks the other; the parent then prints both in
    file order."""
    import marshal
    import os
    import sys
    import tempfile
    import traceback

    # Each process tokenizes on its own core; a tokenizer thread pool would only compete.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for round_indexes in _rounds(files):
        mine, childs = _balance(files, round_indexes)
        sys.stdout.flush()
        sys.stderr.flush()
        with tempfile.TemporaryFile() as handoff:
            child = os.fork()
            if child == 0:
                code = 0
                try:
                    marshal.dump(_render(chunker, files, childs, debug), handoff)
                    handoff.flush()
                except BaseException:  # noqa: BLE001 - the parent reports the failure
                    traceback.print_exc()
                    code = 1
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            try:
                rendered = _render(chunker, files, mine, debug)
            finally:
                _, status = os.waitpid(child, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                print("fieldguide chunks: the second chunking process failed (see above)", file=sys.stderr)
                return 1
            handoff.seek(0)
            rendered.update(marshal.load(handoff))
        for index in round_indexes:
            _write(*rendered[index])
    sys.stdout.flush()
    return 0


def _rendered(chunker, files: list[tuple[bytes, str]], indexes: list[int], debug: bool):
    """(file index, warnings, JSON lines) for the given files, in their order, batch by batch."""
    for first in range(0, len(indexes), FILES_PER_BATCH):
        batch = indexes[first:first + FILES_PER_BATCH]
        for index, chunked in zip(batch, chunker.chunk_many([files[i] for i in batch])):
            yield index, chunked.warnings, _json_lines(chunked.chunks, debug)


def _render(chunker, files: list[tuple[bytes, str]], indexes: list[int], debug: bool) -> dict:
    """{file index: (warnings, JSON lines)} for the given files."""
    return {index: (warnings, lines) for index, warnings, lines in _rendered(chunker, files, indexes, debug)}


def _json_lines(chunks, debug: bool) -> list[str]:
    import json

    dumps = json.JSONEncoder(ensure_ascii=False).encode
    lines = []
    for chunk in chunks:
        record = chunk.to_record()
        if debug:
            record["content_kind_reason"] = chunk.content_kind_reason
        lines.append(dumps(record))
    return lines


def _emit(chunker, files: list[tuple[bytes, str]], debug: bool) -> None:
    """Chunks and prints `files`, batch by batch, in one process."""
    for _, warnings, lines in _rendered(chunker, files, list(range(len(files))), debug):
        _write(warnings, lines)


def _write(warnings: list[str], lines: list[str]) -> None:
    import sys

    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
