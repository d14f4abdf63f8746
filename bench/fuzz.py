"""cronduit's fuzzer at scale: the suite's fuzz targets (``tests/fuzzing/``), 100,000 cases.

    .venv/bin/python bench/fuzz.py             # 100,000 cases: 40% config, 30% http, 30% cron
    .venv/bin/python bench/fuzz.py --cases 20000 --only http --seed 7

Targets: ``config`` (any text or document shape loads as a config whose engine view
computes, or fails with located one-line errors), ``http`` (webhook, GitHub and API requests
through the ASGI app: never a 5xx, never an exception out of the app), ``cron`` (an
expression parses with a next slot from any start, zone and DST policy, or is refused).

A failing case does not stop a target: every case runs, each failure is counted under its
signature (the rule it broke, or the exception and the line of cronduit it came from), and
each signature is then shrunk by Hypothesis to a minimal example (``--shrink-seconds``,
30 s each by default; past it, the smallest failing case seen). Prints, per target, the
cases run, the failures and the seconds; then each failure with its minimal example. Exits
1 if anything failed.

Needs the test tools: ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import find, given, seed, settings
from tests.fuzzing.findings import SUITE, Finding, shown
from tests.fuzzing.targets import BY_NAME, TARGETS, Check, Target

import cronduit

ROOT = Path(__file__).resolve().parent.parent
SOURCE = str(Path(cronduit.__file__).resolve().parent)


def signature(error: BaseException) -> str:
    """What names a failure among others: a finding's rule, or an exception's type and the
    innermost line of cronduit's own code it passed through (else its innermost line)."""
    if isinstance(error, Finding):
        return f"Finding: {error.rule}"
    frames = traceback.extract_tb(error.__traceback__)
    ours = [frame for frame in frames if frame.filename.startswith(SOURCE)]
    where = (ours or frames)[-1] if frames else None
    if where is None:
        return type(error).__name__
    path = Path(where.filename)
    for root in (Path(SOURCE).parent, ROOT):
        if path.is_relative_to(root):
            path = path.relative_to(root)
            break
    return f"{type(error).__name__} at {path}:{where.lineno} ({where.name})"


@dataclass
class Failure:
    """Every case that failed one way: how many, the smallest, and what it raised."""

    count: int = 0
    smallest: Any = None
    size: int = 0
    error: str = ""
    minimal: bool = False

    def add(self, case: Any, error: BaseException) -> None:
        self.count += 1
        size = len(repr(case))
        if self.smallest is None or size < self.size:
            self.smallest, self.size = case, size
            self.error = "".join(traceback.format_exception_only(error)).strip()


@dataclass
class Report:
    target: Target
    cases: int = 0
    seconds: float = 0.0
    failures: dict[str, Failure] = field(default_factory=dict)


def run_target(target: Target, cases: int, seed_value: int, folder: Path | None,
               shrink_seconds: float) -> Report:
    report = Report(target)
    started = time.perf_counter()
    with target.session(folder) as check:

        @settings(SUITE, max_examples=cases, database=None, report_multiple_bugs=False)
        @seed(seed_value)
        @given(target.cases())
        def fuzz(case: Any) -> None:
            report.cases += 1
            try:
                check(case)
            except Exception as error:  # every failure is recorded; none stops the run
                report.failures.setdefault(signature(error), Failure()).add(case, error)

        fuzz()
        report.seconds = time.perf_counter() - started
        for name, failure in report.failures.items():
            _shrink(target, check, name, failure, shrink_seconds)
    return report


class _OutOfTime(Exception):
    """The shrinking of one failure ran out of its seconds."""


def _shrink(target: Target, check: Check, name: str, failure: Failure, seconds: float) -> None:
    """Let Hypothesis find the minimal case failing as ``name`` does, for up to ``seconds``;
    the smallest failing case seen stays the answer when it runs out of time."""
    if seconds <= 0:
        return
    deadline = time.perf_counter() + seconds

    def fails_so(case: Any) -> bool:
        if time.perf_counter() > deadline:
            raise _OutOfTime
        try:
            check(case)
        except Exception as error:  # its signature decides
            if signature(error) == name:
                failure.add(case, error)
                failure.count -= 1  # counted in the run already, not here
                return True
        return False

    try:
        failure.smallest = find(target.cases(), fails_so,
                                settings=settings(SUITE, max_examples=100_000, database=None))
        failure.minimal = True
    except Exception:  # out of time (Hypothesis may wrap it), or not found again: keep the best
        pass


def _print_failures(report: Report) -> None:
    for name, failure in sorted(report.failures.items(), key=lambda item: -item[1].count):
        kind = "minimal example" if failure.minimal else "smallest case seen"
        print(f"FAIL {report.target.name}: {name}  ({failure.count:,} cases)")
        print(f"  {kind}: {shown(failure.smallest)}")
        print(f"  raised: {_indented(failure.error)}", flush=True)


def _print(reports: list[Report], total_seconds: float) -> int:
    """The summary table; the number of distinct failures."""
    for report in reports:
        print(f"{report.target.name:7} {report.cases:>8,} cases  {len(report.failures):>3} "
              f"failures  {report.seconds:8.1f} s   {report.target.about}")
    cases = sum(report.cases for report in reports)
    failures = sum(len(report.failures) for report in reports)
    print(f"{'total':7} {cases:>8,} cases  {failures:>3} failures  {total_seconds:8.1f} s")
    return failures


def _indented(text: str) -> str:
    return text.replace("\n", "\n          ")


def _split(total: int, targets: list[Target]) -> dict[str, int]:
    shares = sum(target.share for target in targets)
    counts = {target.name: int(total * target.share / shares) for target in targets}
    counts[targets[0].name] += total - sum(counts.values())
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--cases", type=int, default=100_000,
                        help="cases in all, split across the targets by their shares (40%% "
                             "config, 30%% http, 30%% cron; default 100,000)")
    parser.add_argument("--only", default=",".join(BY_NAME), metavar="TARGET,...",
                        help="targets to run (config, http, cron; default all)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--shrink-seconds", type=float, default=30.0,
                        help="seconds to shrink each failure to a minimal example (30; 0: none)")
    parser.add_argument("--folder", type=Path, default=None,
                        help="where the http target keeps its stores (default: a temporary "
                             "folder)")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}; the targets are {', '.join(BY_NAME)}")
    targets = [target for target in TARGETS if target.name in names]
    seed_value = args.seed if args.seed is not None else random.randrange(2**32)
    counts = _split(args.cases, targets)
    print(f"seed {seed_value}; " + ", ".join(f"{name} {count:,}" for name, count in
                                             counts.items()), flush=True)
    started = time.perf_counter()
    reports: list[Report] = []
    for target in targets:
        reports.append(run_target(target, counts[target.name], seed_value, args.folder,
                                  args.shrink_seconds))
        report = reports[-1]
        print(f"  {target.name}: {report.cases:,} cases in {report.seconds:.1f} s, "
              f"{len(report.failures)} failures", flush=True)
        _print_failures(report)
    print()
    return 1 if _print(reports, time.perf_counter() - started) else 0


if __name__ == "__main__":
    sys.exit(main())
