"""Nightly fuzzing: thousands of mutated real files through the importers, the interpreter,
explore and codegen; every case must end imported or refused with an InputError naming the file.

Run:  .venv/bin/python benchmarks/fuzz.py --cases 10000 [--seed N] [--jobs 1] [--write]
      .venv/bin/python benchmarks/fuzz.py --seed N --case I      (re-run one case, here)

The cases and the property are tests/compiler/fuzzing.py's (test_fuzz.py draws a few hundred
of them with hypothesis); case I of seed N is `make_case(RandomChoices(f"{N}:{I}"), seeds)`
with the seeds of format FORMATS[I % 4], so the formats share the cases evenly and any case
can be made again from its two numbers.

Each case runs in a worker process (`--jobs` of them), so that a case that hangs (past
`--timeout` seconds) or kills its process (a crash in a parser's C++ code, the memory cap of
`--memory-gib`) is recorded as a bug instead of stopping the run. A bug case's bytes are saved
in --bugs-dir (default var/fuzz-bugs/seed-N/) with a .txt beside them saying what happened;
the exit status is 1 when there is any. The report gives, per format, the cases imported,
refused and buggy, what each stage after import did with the cases that imported (ok, or
refused with an InputError), each bug once with its count, and the wall time; --write stores
it in benchmarks/results/fuzz.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import resource
import sys
import time
from datetime import date
from multiprocessing.connection import wait
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: `tests` and `compiler` are here

from tests.compiler.fuzzing import (  # noqa: E402  (needs the sys.path entry above)
    FORMATS, Case, Outcome, RandomChoices, load_seeds, make_case, run_case)


def case_number(seed: int, index: int, seeds) -> Case:
    """Case `index` of run `seed`: the same bytes on every machine and every run."""
    fmt = FORMATS[index % len(FORMATS)]
    return make_case(RandomChoices(f"{seed}:{index}"), seeds[fmt])


# -- the worker processes -------------------------------------------------------------------------


def _worker(connection, seed: int, memory_gib: int) -> None:
    """Runs in a child process: receives case numbers, sends back what became of each."""
    if memory_gib:
        cap = memory_gib << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    seeds = load_seeds()
    while True:
        index = connection.recv()
        if index is None:
            return
        case = case_number(seed, index, seeds)
        start = time.perf_counter()
        outcome = run_case(case)
        connection.send((index, vars(outcome), time.perf_counter() - start))


class Worker:
    def __init__(self, context, seed: int, memory_gib: int):
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, seed, memory_gib),
                                       daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None      # the case it is running
        self.deadline = 0.0

    def start(self, index: int, timeout: float) -> None:
        self.index, self.deadline = index, time.monotonic() + timeout
        self.connection.send(index)

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()


def run_all(indices: list[int], seed: int, jobs: int, timeout: float, memory_gib: int):
    """Yields (index, Outcome, seconds) for every case, in the order they finish."""
    context = multiprocessing.get_context("spawn")
    workers = [Worker(context, seed, memory_gib) for _ in range(jobs)]
    pending = list(reversed(indices))
    try:
        for worker in workers:
            if pending:
                worker.start(pending.pop(), timeout)
        while any(worker.index is not None for worker in workers):
            busy = [worker for worker in workers if worker.index is not None]
            # The first case may wait for the worker's imports (seconds): its deadline counts
            # from when the worker took it, which is the same for all of them.
            left = min(worker.deadline for worker in busy) - time.monotonic()
            ready = wait([worker.connection for worker in busy], timeout=max(left, 0))
            for i, worker in enumerate(workers):
                if worker.index is None:
                    continue
                if worker.connection in ready:
                    try:
                        index, fields, seconds = worker.connection.recv()
                        yield index, Outcome(**fields), seconds
                    except EOFError:   # the process died: a crash or the memory cap
                        worker.process.join()
                        yield worker.index, _died(worker.process.exitcode), timeout
                        worker = workers[i] = Worker(context, seed, memory_gib)
                elif time.monotonic() >= worker.deadline:
                    worker.kill()
                    yield worker.index, Outcome("bug", "hang", f"no answer in {timeout:g} s",
                                                "hang: past the time limit"), timeout
                    worker = workers[i] = Worker(context, seed, memory_gib)
                else:
                    continue
                worker.index = None
                if pending:
                    worker.start(pending.pop(), timeout)
    finally:
        for worker in workers:
            worker.kill()


def _died(exitcode: int | None) -> Outcome:
    how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit {exitcode}"
    return Outcome("bug", "crash", f"the worker process died ({how})",
                   f"crash: worker process died ({how})")


# -- the report -----------------------------------------------------------------------------------


def save_bug(folder: Path, seed: int, index: int, case: Case, outcome: Outcome) -> Path:
    """The case's bytes and what happened to them, for reproduction."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{index:06d}-{case.filename}"
    path.write_bytes(case.data)
    path.with_name(path.name + ".txt").write_text(
        f"case {index} of seed {seed}: {case.seed} through {', '.join(case.steps)}, "
        f"uploaded as {case.filename}\n"
        f"stage: {outcome.stage}\n{outcome.signature}\n\n{outcome.error}\n\n"
        f"{outcome.trace}\n"
        f"re-run: .venv/bin/python benchmarks/fuzz.py --seed {seed} --case {index}\n")
    return path


def summarize(results: list[tuple[int, Outcome, float]], seeds) -> dict:
    per_format = {fmt: collections.Counter() for fmt in FORMATS}
    bugs: dict[str, dict] = {}
    for index, outcome, _ in results:
        counts = per_format[FORMATS[index % len(FORMATS)]]
        counts["cases"] += 1
        counts[outcome.status] += 1
        counts.update(outcome.stage_results())
        if outcome.status == "bug":
            entry = bugs.setdefault(outcome.signature, {"count": 0, "example_case": index,
                                                        "error": outcome.error[:300]})
            entry["count"] += 1
    slowest = sorted(results, key=lambda r: -r[2])[:5]
    return {"per_format": {fmt: dict(counts) for fmt, counts in per_format.items()},
            "bugs": bugs,
            "seed_files": {fmt: len(files) for fmt, files in seeds.items()},
            "slowest_cases": [{"case": index, "seconds": round(seconds, 2)}
                              for index, _, seconds in slowest]}


def print_report(summary: dict, wall: float) -> None:
    columns = ("cases", "imported", "refused", "bug", "interpret ok", "interpret refused",
               "explore ok", "explore refused", "codegen ok")
    print(f"{'format':10s}" + "".join(f"{c:>18s}" for c in columns))
    total = collections.Counter()
    for fmt, counts in summary["per_format"].items():
        total.update(counts)
        print(f"{fmt:10s}" + "".join(f"{counts.get(c, 0):18d}" for c in columns))
    print(f"{'all':10s}" + "".join(f"{total.get(c, 0):18d}" for c in columns))
    print(f"wall time {wall:.1f} s ({total['cases'] / wall:.1f} cases/s)")
    for signature, entry in summary["bugs"].items():
        print(f"BUG x{entry['count']}: {signature} (e.g. case {entry['example_case']}): "
              f"{entry['error'][:160]}")


# -- the command ----------------------------------------------------------------------------------


def replay(seed: int, index: int) -> int:
    """Run one case in this process and print everything about it."""
    case = case_number(seed, index, load_seeds())
    print(f"case {index} of seed {seed}: {case.seed} through {', '.join(case.steps)}, "
          f"uploaded as {case.filename} ({len(case.data)} bytes)")
    outcome = run_case(case)
    print(f"{outcome.status}; after import: {', '.join(outcome.stage_results()) or 'nothing'}")
    if outcome.status == "bug":
        print(f"{outcome.signature}\n{outcome.error}\n{outcome.trace}")
    return 1 if outcome.status == "bug" else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--memory-gib", type=int, default=8,
                        help="address-space cap of each worker (0: none)")
    parser.add_argument("--bugs-dir", type=Path, help="default: var/fuzz-bugs/seed-N/")
    parser.add_argument("--case", type=int, help="re-run this one case here, and stop")
    parser.add_argument("--write", action="store_true", help="save benchmarks/results/fuzz.json")
    args = parser.parse_args()
    if args.case is not None:
        return replay(args.seed, args.case)

    bugs_dir = args.bugs_dir or ROOT / "var" / "fuzz-bugs" / f"seed-{args.seed}"
    seeds = load_seeds()
    start = time.perf_counter()
    results = []
    for index, outcome, seconds in run_all(list(range(args.cases)), args.seed, args.jobs,
                                           args.timeout, args.memory_gib):
        results.append((index, outcome, seconds))
        if outcome.status == "bug":
            path = save_bug(bugs_dir, args.seed, index, case_number(args.seed, index, seeds),
                            outcome)
            print(f"case {index}: {outcome.signature}; saved {path}", flush=True)
        if len(results) % 1000 == 0:
            print(f"{len(results)} cases, {time.perf_counter() - start:.0f} s", flush=True)
    wall = time.perf_counter() - start
    summary = summarize(results, seeds)
    print_report(summary, wall)
    if args.write:
        result = {
            "date": date.today().isoformat(),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "command": f".venv/bin/python benchmarks/fuzz.py --cases {args.cases} "
                       f"--seed {args.seed} --jobs {args.jobs} --write",
            "cases": args.cases, "seed": args.seed, "jobs": args.jobs,
            "timeout_s": args.timeout, "wall_s": round(wall, 1), **summary,
        }
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "fuzz.json").write_text(json.dumps(result, indent=2) + "\n")
    return 1 if summary["bugs"] else 0


if __name__ == "__main__":
    sys.exit(main())
