"""Quick commands: the wall time of the commands a docs team runs often, and their start-up share.

Each command is a whole process, run `--repeat` times in turn with the others (and with the same
commands of `--baseline CHECKOUT`, an earlier checkout, when given):

* chunks      - `fieldguide chunks` of a folder holding one file of the corpus;
* ingest one  - `fieldguide ingest DOCS` after one file of an ingested copy of the corpus changed
                (a line appended): hash every file, chunk and embed that one, replace its chunks;
* unchanged   - `fieldguide ingest DOCS` with nothing changed;
* retrieve    - `fieldguide retrieve --batch` of one question;
* ask         - `fieldguide ask` of one question (answers of at most 16 tokens).

Then each command once more under `python -X importtime`: the imports' share is the sum of the
top-level imports' cumulative time over the command's wall time in that run (importtime itself
slows imports a little, so the share is an upper bound). Target: one changed file ingested in
<= 3 s wall on a quiet machine. The load average is printed beside every round.

Bytecode: an installed package has its modules compiled to `.pyc` (pip does it at install
time), so a command only loads them. Where `PYTHONDONTWRITEBYTECODE` is set and no `.pyc` exist
(a development environment can be like that), every start compiles each module it imports
again, about a second for this import graph. `--bytecode-cache DIR` gives the children a
bytecode cache of their own there (`PYTHONPYCACHEPREFIX`), filled by one untimed run of each
command, which is what an installed package has; the figures say which way they were taken.

    python benchmarks/bench_startup.py DOCS_DIR [--question TEXT] [--repeat N] [--baseline CHECKOUT] [--bytecode-cache DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ONE_FILE_TARGET_SECONDS = 3.0


def run(command: list[str], env: dict, cwd: Path) -> tuple[float, float, str, str]:
    """(wall seconds, CPU seconds, stderr, stdout) of one child process; exits on failure."""
    with tempfile.TemporaryFile("w+") as stdout:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True)
        # read stderr while the child runs: `-X importtime` writes more than a pipe holds, and a
        # child blocked on a full pipe never exits
        captured: list[str] = []
        reader = threading.Thread(target=lambda: captured.append(process.stderr.read()), daemon=True)
        reader.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        reader.join()
        stdout.seek(0)
        output = stdout.read()
    stderr = captured[0] if captured else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(command)}\n{stderr[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, stderr, output


def ingest_seconds(stdout: str) -> float | None:
    """The `seconds` of an ingest's JSON summary: the time spent inside the ingest itself."""
    try:
        return float(json.loads(stdout.strip().splitlines()[-1])["seconds"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def import_seconds(stderr: str) -> tuple[float, list[tuple[str, float]]]:
    """Total and largest top-level imports from `-X importtime` output (microseconds in column 2)."""
    top = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if cumulative.strip().isdigit() and not name.startswith("  "):  # no indent: imported by the command
            top.append((name.strip(), int(cumulative) / 1e6))
    top.sort(key=lambda item: -item[1])
    return sum(seconds for _, seconds in top), top[:6]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs_dir", type=Path)
    parser.add_argument("--question", default="How do I change the currency?")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--collection", default="BenchStartup")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="an earlier checkout whose same commands are timed alongside")
    parser.add_argument("--bytecode-cache", type=Path, metavar="DIR",
                        help="compiled modules kept here for the children, as an installed package has them")
    args = parser.parse_args()

    from ingest.chunker import iter_markdown_files

    checkouts = {"current": REPO_ROOT}
    if args.baseline:
        checkouts["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = iter_markdown_files(args.docs_dir)
        # the changing file: a middling one, so the figure is neither best nor worst case
        changing = sorted(files, key=lambda p: p.stat().st_size)[len(files) // 2].relative_to(args.docs_dir)
        one = tmp / "one"
        one.mkdir()
        shutil.copy(args.docs_dir / changing, one / changing.name)
        (tmp / "question.jsonl").write_text(json.dumps({"id": "q", "question": args.question}) + "\n")
        commands, envs = {}, {}
        for name, checkout in checkouts.items():
            docs = tmp / f"docs-{name}"
            shutil.copytree(args.docs_dir, docs)
            envs[name] = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                              DISABLE_TELEMETRY="true", TOKENIZERS_PARALLELISM="false",
                              FIELDGUIDE_COLLECTION=f"{args.collection}{name.capitalize()}",
                              FIELDGUIDE_MAX_ANSWER_TOKENS="16")
            if args.bytecode_cache:
                envs[name].pop("PYTHONDONTWRITEBYTECODE", None)
                envs[name]["PYTHONPYCACHEPREFIX"] = str(args.bytecode_cache.resolve())
            cli = [sys.executable, "-m", "fieldguide.cli"]
            print(f"{name}: ingesting {docs.name} once (not timed)", file=sys.stderr)
            run(cli + ["ingest", str(docs), "--json"], envs[name], checkout)
            commands[name] = {
                "chunks": cli + ["chunks", str(one)],
                "ingest_one_changed": cli + ["ingest", str(docs), "--json"],
                "ingest_unchanged": cli + ["ingest", str(docs), "--json"],
                "retrieve_one": cli + ["retrieve", "--batch", str(tmp / "question.jsonl")],
                "ask_one": cli + ["ask", args.question],
            }

        def touch(name: str) -> None:
            with (tmp / f"docs-{name}" / changing).open("a", encoding="utf-8") as fh:
                fh.write(f"\nEdited at {time.time()}.\n")

        if args.bytecode_cache:  # compile every module the commands import, once, untimed
            for name in checkouts:
                for step, command in commands[name].items():
                    run(command, envs[name], checkouts[name])

        walls: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
        cpus: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
        inside: dict[str, dict[str, list[float | None]]] = {name: {} for name in checkouts}
        loads = []
        for round_index in range(args.repeat):
            names = list(checkouts) if round_index % 2 == 0 else list(checkouts)[::-1]
            for name in names:
                for step, command in commands[name].items():
                    if step == "ingest_one_changed":
                        touch(name)
                    wall, cpu, _, stdout = run(command, envs[name], checkouts[name])
                    walls[name].setdefault(step, []).append(wall)
                    if step.startswith("ingest"):
                        inside[name].setdefault(step, []).append(ingest_seconds(stdout))
                    cpus[name].setdefault(step, []).append(cpu)
            loads.append(round(os.getloadavg()[0], 2))
            print(f"round {round_index + 1} (load {loads[-1]}): " + "; ".join(
                f"{name} " + ", ".join(f"{step} {values[-1]:.2f}s" for step, values in walls[name].items())
                for name in names), file=sys.stderr)

        startup: dict[str, dict] = {name: {} for name in checkouts}
        for name in checkouts:
            for step, command in commands[name].items():
                if step == "ingest_one_changed":
                    touch(name)
                wall, _, stderr, _ = run([command[0], "-X", "importtime", *command[1:]], envs[name], checkouts[name])
                total, largest = import_seconds(stderr)
                startup[name][step] = {"wall_seconds": round(wall, 3), "import_seconds": round(total, 3),
                                       "import_share": round(total / wall, 3),
                                       "largest_imports": {module: round(s, 3) for module, s in largest}}

    env = envs["current"]
    bytecode = (f"cached ({env['PYTHONPYCACHEPREFIX']})" if env.get("PYTHONPYCACHEPREFIX")
                else "compiled at every start (PYTHONDONTWRITEBYTECODE)" if env.get("PYTHONDONTWRITEBYTECODE")
                else "cached next to the sources")
    figures: dict = {"corpus": str(args.docs_dir), "changed_file": changing.as_posix(), "repeat": args.repeat,
                     "bytecode": bytecode,
                     "cpus": os.cpu_count(), "load_average_per_round": loads, "commands": {}}
    for name in checkouts:
        figures["commands"][name] = {
            step: {"wall_best": round(min(values), 3), "wall_median": round(statistics.median(values), 3),
                   "cpu_median": round(statistics.median(cpus[name][step]), 3), **startup[name][step]}
            for step, values in walls[name].items()}
        for step, seconds in inside[name].items():  # the rest of the wall time is start-up and exit
            known = [x for x in seconds if x is not None]
            if known:
                figures["commands"][name][step]["inside_ingest_median"] = round(statistics.median(known), 3)
                figures["commands"][name][step]["outside_ingest_median"] = round(
                    statistics.median(w - x for w, x in zip(walls[name][step], seconds) if x is not None), 3)
    one_file = figures["commands"]["current"]["ingest_one_changed"]
    figures["one_changed_file_target_seconds"] = ONE_FILE_TARGET_SECONDS
    figures["one_changed_file_ok"] = one_file["wall_best"] <= ONE_FILE_TARGET_SECONDS
    if args.baseline:
        figures["speedup_over_baseline"] = {
            step: round(figures["commands"]["baseline"][step]["wall_median"] / values["wall_median"], 2)
            for step, values in figures["commands"]["current"].items()}
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
