"""Next-slot computation: cronduit against cronsim and croniter, same expressions, same run.

Two measures per row:
  stream  - next() on one iterator, again and again (a scheduler walking a job's slots);
  cold    - a fresh iterator at a new instant, then one next() (a scheduler asked "when next?"
            for many jobs); each library builds its object the way its users do.
Each figure is the best of three timed passes of about 0.2 s. Ratios are cronduit / peer;
"n/a" means the library refuses the expression (cronduit refuses L and #, by design).

Run:  python bench/cron_next.py          (needs: pip install -e '.[bench]')
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim

from cronduit import Cron

ROWS: list[tuple[str, str, str, datetime]] = [
    ("every minute", "* * * * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("daily 09:00 London", "0 9 * * *", "Europe/London", datetime(2026, 1, 1, tzinfo=UTC)),
    ("stepped */15 New York", "*/15 * * * *", "America/New_York", datetime(2026, 1, 1, tzinfo=UTC)),
    ("ranges 9-17 Mon-Fri", "0 9-17 * * 1-5", "Europe/Berlin", datetime(2026, 1, 1, tzinfo=UTC)),
    ("lists 0,30 9,13,18 1,15", "0,30 9,13,18 1,15 * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("third Friday 5#3", "0 12 * * 5#3", "UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("last day L", "0 0 L * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("Feb 29", "0 0 29 2 *", "UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("fixed 01:30 London DST", "30 1 * * *", "Europe/London", datetime(2026, 3, 20, tzinfo=UTC)),
    ("fixed 02:30 New York DST", "30 2 * * *", "America/New_York",
     datetime(2026, 3, 1, tzinfo=UTC)),
    ("wildcard */30 London fall", "*/30 * * * *", "Europe/London",
     datetime(2026, 10, 24, tzinfo=UTC)),
    ("weekdays 22:00 Sydney", "0 22 * * 1-5", "Australia/Sydney",
     datetime(2026, 3, 30, tzinfo=UTC)),
]

PASS_SECONDS = 0.2
Factory = Callable[[str, str, datetime], Iterator[datetime]]


def cronduit_iter(expr: str, tz: str, start: datetime) -> Iterator[datetime]:
    return Cron(expr, tz).after(start)


def cronsim_iter(expr: str, tz: str, start: datetime) -> Iterator[datetime]:
    return CronSim(expr, start.astimezone(ZoneInfo(tz)))


def croniter_iter(expr: str, tz: str, start: datetime) -> Iterator[datetime]:
    it = croniter(expr, start.astimezone(ZoneInfo(tz)))
    return iter(lambda: it.get_next(datetime), None)


PEERS: dict[str, Factory] = {
    "cronduit": cronduit_iter,
    "cronsim": cronsim_iter,
    "croniter": croniter_iter,
}


def supported(factory: Factory, expr: str, tz: str, start: datetime) -> bool:
    try:
        next(factory(expr, tz, start))
    except Exception:
        return False
    return True


def stream_rate(factory: Factory, expr: str, tz: str, start: datetime) -> float:
    best = 0.0
    for _ in range(3):
        iterator = factory(expr, tz, start)
        count = 0
        began = time.perf_counter()
        deadline = began + PASS_SECONDS
        while True:
            for _ in range(50):
                try:
                    next(iterator)
                except (StopIteration, OverflowError, ValueError):
                    iterator = factory(expr, tz, start)  # ran past year 9999: start over
                count += 1
            if time.perf_counter() >= deadline:
                break
        best = max(best, count / (time.perf_counter() - began))
    return best


def cold_rate(factory: Factory, expr: str, tz: str, start: datetime) -> float:
    starts = [start + timedelta(minutes=37 * i) for i in range(500)]
    best = 0.0
    for _ in range(3):
        count = 0
        began = time.perf_counter()
        deadline = began + PASS_SECONDS
        while time.perf_counter() < deadline:
            for moment in starts[:100]:
                next(factory(expr, tz, moment))
                count += 1
        best = max(best, count / (time.perf_counter() - began))
    return best


def fmt_rate(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:,.0f}"


def fmt_ratio(mine: float | None, theirs: float | None) -> str:
    return "n/a" if mine is None or theirs is None else f"{mine / theirs:.2f}"


def main() -> int:
    print(f"python {sys.version.split()[0]}; ops/s, best of 3 passes of {PASS_SECONDS}s\n")
    header = (f"{'row':28} {'mode':6} {'cronduit':>10} {'cronsim':>10} {'croniter':>10} "
              f"{'x cronsim':>9} {'x croniter':>10}")
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {"stream": [], "cold": []}
    for label, expr, tz, start in ROWS:
        for mode, measure in (("stream", stream_rate), ("cold", cold_rate)):
            rates: dict[str, float | None] = {}
            for name, factory in PEERS.items():
                ok = supported(factory, expr, tz, start)
                rates[name] = measure(factory, expr, tz, start) if ok else None
            mine, sim = rates["cronduit"], rates["cronsim"]
            if mine is not None and sim is not None:
                ratios[mode].append(mine / sim)
            print(f"{label:28} {mode:6} {fmt_rate(mine):>10} {fmt_rate(sim):>10} "
                  f"{fmt_rate(rates['croniter']):>10} {fmt_ratio(mine, sim):>9} "
                  f"{fmt_ratio(mine, rates['croniter']):>10}")
    print()
    for mode, values in ratios.items():
        print(f"{mode}: median ratio to cronsim {statistics.median(values):.2f}, "
              f"lowest {min(values):.2f} over {len(values)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
