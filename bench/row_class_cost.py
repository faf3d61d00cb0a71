"""CPU time of defining one six-field row class: a frozen slots dataclass, a ``typing.NamedTuple`` and a
``TypedDict`` (docs/benchmarks.md, "Issues 22 and 23: cold start"). A repository's row classes are defined when
the module is imported, so on a Lambda's cold start.

    .venv/bin/python bench/row_class_cost.py [--classes 200]

Prints microseconds per class and each kind's ratio to the TypedDict measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple, TypedDict

FIELDS: list[tuple[str, Any]] = [
    ("a", uuid.UUID),
    ("b", uuid.UUID),
    ("c", str),
    ("d", int),
    ("e", bool),
    ("f", bool),
]


def dataclass_row(i: int) -> type:
    return dataclasses.make_dataclass(f"Row{i}", FIELDS, frozen=True, slots=True)


def namedtuple_row(i: int) -> type:
    return NamedTuple(f"Row{i}", FIELDS)  # type: ignore[misc]


def typeddict_row(i: int) -> type:
    return TypedDict(f"Row{i}", dict(FIELDS))  # type: ignore[operator]


def per_class_us(make: Callable[[int], type], n: int) -> float:
    started = time.process_time()
    for i in range(n):
        make(i)
    return (time.process_time() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", type=int, default=200)
    args = parser.parse_args()
    kinds = {
        "frozen slots dataclass": dataclass_row,
        "NamedTuple": namedtuple_row,
        "TypedDict": typeddict_row,
    }
    figures = {name: per_class_us(make, args.classes) for name, make in kinds.items()}
    base = figures["TypedDict"]
    for name, us in figures.items():
        print(f"{name:24} {us:8.0f} µs per class  {us / base:5.1f}x TypedDict")


if __name__ == "__main__":
    main()
