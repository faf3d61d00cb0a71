"""Token cost in micro-units of the operator's currency. Prices default to zero, which means "unknown", not free:
an invented rate would put an authoritative-looking wrong number in the accounting (spec/001), so a zero price
is reported as ``cost_priced: false``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prices:
    input_micros_per_1k: int = 0
    output_micros_per_1k: int = 0

    @property
    def priced(self) -> bool:
        return self.input_micros_per_1k > 0 or self.output_micros_per_1k > 0


def cost_micros(prompt_tokens: int, completion_tokens: int, prices: Prices) -> int:
    """(prompt * input price + completion * output price) / 1000, rounded half up."""
    total = prompt_tokens * prices.input_micros_per_1k + completion_tokens * prices.output_micros_per_1k
    return (total + 500) // 1000
