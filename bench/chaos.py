"""cronduit's own crash loop: a daemon under mixed load, SIGKILLed again and again, then
drained and checked (the harness is ``tests/chaos/``, shared with the test suite's short form).

    .venv/bin/python bench/chaos.py --kills 1000 --seed 1
    .venv/bin/python bench/chaos.py --kills 50 --targets daemon=1,supervisor=0,both=0

Prints ``K kills, A accepted, 0 lost, 0 doubled, 0 relaunched, 0 misrecorded``, then the other
checks and examples of each finding; exits 1 if anything was found.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.chaos.harness import Chaos, Plan


def _range(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    return float(low), float(high or low)


def _targets(text: str) -> tuple[tuple[str, float], ...]:
    pairs = [item.split("=") for item in text.split(",")]
    return tuple((name, float(weight)) for name, weight in pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--kills", type=int, default=100, help="kills to make (default 100)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--seconds-between", type=_range, default=(0.5, 3.0),
                        metavar="LOW-HIGH", help="seconds of load before each kill (0.5-3)")
    parser.add_argument("--targets", type=_targets,
                        default=(("daemon", 0.8), ("supervisor", 0.1), ("both", 0.1)),
                        metavar="daemon=W,supervisor=W,both=W",
                        help="what each round kills, with weights (0.8, 0.1, 0.1)")
    parser.add_argument("--crash-points", type=float, default=0.15, metavar="SHARE",
                        help="share of daemon starts told to SIGKILL themselves at one of "
                             "their crash points: fired, routed, launching, ended (0.15)")
    parser.add_argument("--long-outages", type=float, default=0.005, metavar="SHARE",
                        help="share of outages lasting 61-190 s, so that minutely cron slots "
                             "are missed and caught up (0.005)")
    parser.add_argument("--folder", type=Path, default=None,
                        help="where to run (kept afterwards); default a temporary folder")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    plan = Plan(kills=args.kills, seed=seed, between=args.seconds_between, targets=args.targets,
                crash_point=args.crash_points, long_outage=args.long_outages)
    print(f"seed {seed}", flush=True)
    if args.folder is not None:
        args.folder.mkdir(parents=True, exist_ok=True)
        report = Chaos(args.folder, plan, say=lambda line: print(line, flush=True)).run()
    else:
        with tempfile.TemporaryDirectory(prefix="cronduit-chaos-") as folder:
            report = Chaos(Path(folder), plan, say=lambda line: print(line, flush=True)).run()
    print(report.text())
    return 0 if report.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
