"""Token cost in micro-units of the operator's currency. Prices default to zero, which means "unknown", not free:
an invented rate would put an authoritative-looking wrong number in the accounting (spec/001), so a zero price
is reported as ``cost_priced: false``."""

from __future__ import annotations

from dataclasses import dataclass

# One cost figure never exceeds this (10^9 currency units): token counts are clamped (llm.client), prices are the
# operator's, and the stored totals are bigint (max ~9.2e18), so even thousands of maximal figures add up safely.
MAX_COST_MICROS = 10**15


@dataclass(frozen=True, slots=True)
class Prices:
    input_micros_per_1k: int = 0
    output_micros_per_1k: int = 0

    @property
    def priced(self) -> bool:
        return self.input_micros_per_1k > 0 or self.output_micros_per_1k > 0


def cost_micros(prompt_tokens: int, completion_tokens: int, prices: Prices) -> int:
    """(prompt * input price + completion * output price) / 1000, rounded half up, within 0..MAX_COST_MICROS."""
    total = (
        max(prompt_tokens, 0) * prices.input_micros_per_1k
        + max(completion_tokens, 0) * prices.output_micros_per_1k
    )
    return min(max((total + 500) // 1000, 0), MAX_COST_MICROS)
