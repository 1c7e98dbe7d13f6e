"""`make chaos`: run each scenario against real processes and print one row each, then the summary line."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from .rig import rig
from .scenario import FULL, SHORT, Row
from .scenarios import NUMBERS, SCENARIOS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--short", action="store_true", help="the seconds-long versions that `make test` runs")
    parser.add_argument("--only", help="run the scenarios with this number, or whose name contains this text")
    args = parser.parse_args(argv)
    sizes = SHORT if args.short else FULL
    rows: list[Row] = []
    print(f"{'scenario':<30} | {'how much':<70} | verified", flush=True)
    with rig() as r:
        for scenario in SCENARIOS:
            if args.only and not _chosen(args.only, scenario):
                continue
            began = time.monotonic()
            row = scenario(r, sizes)
            rows.append(row)
            mark = "ok" if row.ok else "FAIL"
            print(
                f"{row.scenario:<30} | {row.amount:<70} | {mark}: {row.verified} ({time.monotonic() - began:.0f} s)",
                flush=True,
            )
    print(summary(rows))
    return 0 if all(row.ok for row in rows) else 1


def _chosen(only: str, scenario: Callable[..., Row]) -> bool:
    """`--only 9` is scenario 9 (not kill9, whose name holds a 9); other text matches names."""
    if only.isdigit():
        return only == str(NUMBERS.get(scenario))
    return only in scenario.__name__


def summary(rows: list[Row]) -> str:
    lost = sum(r.lost for r in rows)
    duplicated = sum(r.duplicated for r in rows)
    forged = sum(r.forged_accepted for r in rows)
    scenarios = len({r.scenario.split()[0] for r in rows})  # "4 database restart" and "4 …, PgBouncer" are one
    return f"chaos: {scenarios} scenarios, {lost} lost, {duplicated} duplicated, {forged} forged accepted"


if __name__ == "__main__":
    sys.exit(main())
