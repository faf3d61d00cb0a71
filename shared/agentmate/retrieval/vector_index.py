"""The vector index protocol, its value types and the validation every implementation shares.

Why every method takes `account_id`: the vector store is shared by all tenants (one Qdrant
collection), and it has no row-level security. Making the tenant a required argument of every call —
and AND-ing `account_id` into every filter, delete and conditional upsert, in the implementations, through the
checks here — means a caller cannot forget it. Filters may narrow a search, never widen it: a filter can not name
`account_id`, and keys are plain dotted payload paths. Filter values are strings and booleans (exact match) or
numbers (numeric equality, so 1 matches 1.0 as in jsonb containment).

Payload indexes: besides `account_id` (the tenant index) and `namespace`, an implementation indexes the keys it
is constructed with and, on first use, every key a caller filters on. So this package knows no domain's field
names: the caller's filters name them.

Implementations, each in its own module so importing this one stays cheap:
- `qdrant_index.QdrantServerIndex`: production, a Qdrant server / Qdrant Cloud over qdrant-client.
- `embedded_index.EmbeddedIndex`: local runtime and tests, on qdrant-edge (Qdrant's in-process engine).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_INDEXED_FIELDS",
    "VECTOR_NAME",
    "FilterValue",
    "VectorHit",
    "VectorIndex",
    "VectorIndexError",
    "VectorPoint",
]

DEFAULT_COLLECTION = "agentmate_retrieval"
VECTOR_NAME = "semantic"
TENANT_KEY = "account_id"
NAMESPACE_KEY = "namespace"
# Keyword payload indexes created up front (besides account_id and namespace): the retrieval payload's own keys.
# A key a caller filters on is indexed on first use (see the module docstring).
DEFAULT_INDEXED_FIELDS: tuple[str, ...] = ("source_type", "source_id", "document_id")
MAX_LIMIT = 1000
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

FilterValue = str | int | float | bool


class VectorIndexError(Exception):
    """The vector store failed or is misconfigured (e.g. dimension mismatch). Safe to log."""


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One vector to store. `payload` must carry `namespace` (and should carry source_type,
    source_id, document_id plus filterable metadata); `account_id` is added by the index."""

    id: str  # a UUID string
    vector: Sequence[float]
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorHit:
    id: str  # canonical lowercase UUID string
    score: float  # cosine similarity
    payload: dict[str, Any]


@runtime_checkable
class VectorIndex(Protocol):
    """Tenant-scoped vector store. Every read and write is confined to `account_id`."""

    collection: str  # recorded with each indexed document ("embedded" for the in-process engine)

    def ensure_collection(self, dimensions: int) -> None:
        """Create the collection/indexes if missing; raise VectorIndexError on a dimension mismatch."""
        ...

    def upsert(self, account_id: str, points: Sequence[VectorPoint]) -> None: ...

    def search(
        self,
        account_id: str,
        namespace: str,
        vector: Sequence[float],
        limit: int,
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[VectorHit]: ...

    def delete(self, account_id: str, ids: Iterable[str]) -> None: ...

    def delete_by_filter(
        self, account_id: str, namespace: str, filters: Mapping[str, FilterValue] | None = None
    ) -> None: ...

    def delete_account(self, account_id: str) -> None:
        """Every point of the account, in every namespace (account deletion)."""
        ...

    def count(self, account_id: str, namespace: str | None = None) -> int: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------------------------------
# Validation shared by both implementations
# --------------------------------------------------------------------------------------------------


def check_tenant(account_id: str) -> str:
    if not isinstance(account_id, str) or not account_id:
        raise ValueError("account_id must be a non-empty string")
    return account_id


def check_namespace(namespace: str) -> str:
    if not isinstance(namespace, str) or not namespace:
        raise ValueError("namespace must be a non-empty string")
    return namespace


def check_filters(filters: Mapping[str, FilterValue] | None) -> list[tuple[str, FilterValue]]:
    if not filters:
        return []
    out = []
    for key, value in filters.items():
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(f"invalid filter key {key!r}: use a dotted payload path like metadata.status")
        if key in (TENANT_KEY, NAMESPACE_KEY):
            raise ValueError(f"{key} is not a filter: it is an explicit argument")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"filter {key!r} must be a finite number")
        if not isinstance(value, str | int | float | bool):
            raise ValueError(f"filter {key!r} must be a string, number or boolean")
        out.append((key, value))
    return out


_MISSING = object()


def split_bool_filters(
    filters: list[tuple[str, FilterValue]],
) -> tuple[list[tuple[str, FilterValue]], list[tuple[str, bool]]]:
    """(filters the engine can apply, boolean filters) — see EmbeddedIndex on why booleans differ."""
    engine = [(k, v) for k, v in filters if not isinstance(v, bool)]
    booleans = [(k, v) for k, v in filters if isinstance(v, bool)]
    return engine, booleans


def payload_matches_bool(payload: Mapping[str, Any], key: str, value: bool) -> bool:
    """Exact boolean match on a dotted payload path, with Qdrant's rule that an array matches when
    any element does."""
    node: Any = payload
    for part in key.split("."):
        if not isinstance(node, Mapping):
            return False
        node = node.get(part, _MISSING)
    if isinstance(node, list):
        return any(type(item) is bool and item is value for item in node)
    return type(node) is bool and node is value


def keyword_keys(filters: list[tuple[str, FilterValue]]) -> list[str]:
    """The filter keys a keyword payload index serves (string values; numbers filter by range)."""
    return [key for key, value in filters if isinstance(value, str)]


def is_number(value: FilterValue) -> bool:
    # Numbers match numerically (1 == 1.0, as jsonb containment does), hence a closed range rather
    # than an exact keyword/integer match; bool is an int subclass but must match as a boolean.
    return isinstance(value, int | float) and not isinstance(value, bool)


def canonical_id(point_id: str) -> str:
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        raise ValueError(f"point id must be a UUID, got {point_id!r}") from None


def check_vector(vector: Sequence[float], dimensions: int | None) -> list[float]:
    vec = [float(v) for v in vector]
    if dimensions is not None and len(vec) != dimensions:
        raise VectorIndexError(f"vector has {len(vec)} dimensions, the collection has {dimensions}")
    norm = math.fsum(v * v for v in vec)
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError("vector must be finite and non-zero")
    return vec


def stored_payload(account_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    if TENANT_KEY in payload and payload[TENANT_KEY] != account_id:
        raise ValueError("payload account_id differs from the account_id argument")
    check_namespace(payload.get(NAMESPACE_KEY))  # type: ignore[arg-type]
    return {**payload, TENANT_KEY: account_id}


def check_limit(limit: int) -> int:
    if limit < 0:
        raise ValueError("limit must be >= 0")
    return min(int(limit), MAX_LIMIT)
