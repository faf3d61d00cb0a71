"""The production vector index: a Qdrant server / Qdrant Cloud over qdrant-client.

One collection (`agentmate_retrieval`), named vector `semantic` (cosine), a keyword payload index on `account_id`
with `is_tenant=True` plus `namespace`, the constructor's keys and every string-valued key a caller filters on
(created on first use, once per process), and Qdrant's multitenancy HNSW layout (`m=0, payload_m=16`: per-tenant
graphs only, since every search is tenant-filtered).

qdrant-client is imported when an index is built, never at module import (cold start matters).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from agentmate.retrieval.vector_index import (
    DEFAULT_COLLECTION,
    DEFAULT_INDEXED_FIELDS,
    NAMESPACE_KEY,
    TENANT_KEY,
    VECTOR_NAME,
    FilterValue,
    VectorHit,
    VectorIndexError,
    VectorPoint,
    canonical_id,
    check_filters,
    check_limit,
    check_namespace,
    check_tenant,
    check_vector,
    keyword_keys,
    stored_payload,
)

if TYPE_CHECKING:  # pragma: no cover
    from qdrant_client import QdrantClient
    from qdrant_client.http import models

__all__ = ["QdrantServerIndex"]


class QdrantServerIndex:
    """Qdrant server / Qdrant Cloud over qdrant-client (REST). Inject `client` for tests
    (e.g. `QdrantClient(":memory:")`, whose payload indexes are no-ops but whose filters are exact).

    Writes use a conditional upsert (`update_filter` on account_id), so a point id that already
    belongs to another tenant is never overwritten (needs Qdrant >= 1.16; pass
    `guard_cross_tenant_overwrite=False` for an older server).
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        *,
        client: QdrantClient | None = None,
        timeout_s: int = 10,
        indexed_fields: Sequence[str] = DEFAULT_INDEXED_FIELDS,
        guard_cross_tenant_overwrite: bool = True,
    ) -> None:
        from qdrant_client import QdrantClient

        if client is None:
            if not url:
                raise ValueError("url is required when no client is given")
            client = QdrantClient(url=url, api_key=api_key or None, timeout=timeout_s)
        self._client = client
        self.collection = collection
        self.indexed_fields = tuple(indexed_fields)
        self.guard = guard_cross_tenant_overwrite
        self._dimensions: int | None = None
        self._indexed: set[str] = set()  # keyword payload indexes known to exist
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"QdrantServerIndex(collection={self.collection!r})"

    def close(self) -> None:
        self._client.close()

    # -- helpers -----------------------------------------------------------------------------------

    def _match(self, key: str, value: FilterValue) -> models.FieldCondition:
        from qdrant_client.http import models as m

        if isinstance(value, str | bool):
            return m.FieldCondition(key=key, match=m.MatchValue(value=value))
        return m.FieldCondition(key=key, range=m.Range(gte=float(value), lte=float(value)))

    def _filter(
        self,
        account_id: str,
        namespace: str | None,
        filters: list[tuple[str, FilterValue]],
        ids: list[str] | None = None,
    ) -> models.Filter:
        from qdrant_client.http import models as m

        must: list[models.Condition] = [self._match(TENANT_KEY, account_id)]
        if namespace is not None:
            must.append(self._match(NAMESPACE_KEY, namespace))
        must.extend(self._match(k, v) for k, v in filters)
        if ids is not None:
            point_ids: list[models.ExtendedPointId] = list(ids)
            must.append(m.HasIdCondition(has_id=point_ids))
        return m.Filter(must=must)

    def _wrap(self, action: str, exc: Exception) -> VectorIndexError:
        return VectorIndexError(f"qdrant {action} failed on {self.collection!r}: {type(exc).__name__}: {exc}")

    def _create_payload_index(
        self, key: str, schema: models.PayloadSchemaType | models.KeywordIndexParams
    ) -> None:
        with warnings.catch_warnings():
            # qdrant-client's local mode (tests) warns that payload indexes are no-ops there.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            self._client.create_payload_index(self.collection, key, schema)
        self._indexed.add(key)

    def _ensure_indexed(self, keys: Iterable[str]) -> None:
        """A keyword payload index for each key a caller filters on, created once per process."""
        from qdrant_client.http import models

        for key in keys:
            if key in self._indexed:
                continue
            try:
                self._create_payload_index(key, models.PayloadSchemaType.KEYWORD)
            except Exception as exc:
                raise self._wrap("payload index creation", exc) from exc

    def _exists(self) -> bool:
        if self._dimensions is not None:
            return True
        try:
            return bool(self._client.collection_exists(self.collection))
        except Exception as exc:
            raise self._wrap("collection lookup", exc) from exc

    # -- protocol ----------------------------------------------------------------------------------

    def ensure_collection(self, dimensions: int) -> None:
        if dimensions <= 0:
            raise ValueError("dimensions must be positive")
        with self._lock:
            if self._dimensions == dimensions:
                return
            from qdrant_client.http import models as m

            try:
                if not self._client.collection_exists(self.collection):
                    try:
                        self._client.create_collection(
                            self.collection,
                            vectors_config={
                                VECTOR_NAME: m.VectorParams(size=dimensions, distance=m.Distance.COSINE)
                            },
                            hnsw_config=m.HnswConfigDiff(m=0, payload_m=16),
                        )
                    except Exception:
                        # Another process may have created it meanwhile; only then is this fine.
                        if not self._client.collection_exists(self.collection):
                            raise
                info = self._client.get_collection(self.collection)
                vectors = info.config.params.vectors
                params = vectors.get(VECTOR_NAME) if isinstance(vectors, dict) else None
                if params is None:
                    raise VectorIndexError(f"collection {self.collection!r} has no {VECTOR_NAME!r} vector")
                if params.size != dimensions:
                    raise VectorIndexError(
                        f"collection {self.collection!r} stores {params.size}-dim vectors but the embedder "
                        f"makes {dimensions}: reindex into a new collection"
                    )
                self._create_payload_index(
                    TENANT_KEY, m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True)
                )
                for key in (NAMESPACE_KEY, *self.indexed_fields):
                    self._create_payload_index(key, m.PayloadSchemaType.KEYWORD)
            except VectorIndexError:
                raise
            except Exception as exc:
                raise self._wrap("ensure_collection", exc) from exc
            self._dimensions = dimensions

    def upsert(self, account_id: str, points: Sequence[VectorPoint]) -> None:
        check_tenant(account_id)
        if not points:
            return
        from qdrant_client.http import models as m

        structs = [
            m.PointStruct(
                id=canonical_id(p.id),
                vector={VECTOR_NAME: check_vector(p.vector, self._dimensions)},
                payload=stored_payload(account_id, p.payload),
            )
            for p in points
        ]
        guard = self._filter(account_id, None, []) if self.guard else None
        try:
            self._client.upsert(self.collection, points=structs, wait=True, update_filter=guard)
        except Exception as exc:
            raise self._wrap("upsert", exc) from exc

    def search(
        self,
        account_id: str,
        namespace: str,
        vector: Sequence[float],
        limit: int,
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[VectorHit]:
        checked = check_filters(filters)
        query_filter = self._filter(check_tenant(account_id), check_namespace(namespace), checked)
        limit = check_limit(limit)
        vec = check_vector(vector, self._dimensions)
        if limit == 0 or not self._exists():
            return []
        self._ensure_indexed(keyword_keys(checked))
        try:
            res = self._client.query_points(
                self.collection,
                query=vec,
                using=VECTOR_NAME,
                query_filter=query_filter,
                limit=limit,
                with_payload=True,
            )
        except Exception as exc:
            raise self._wrap("search", exc) from exc
        return [
            VectorHit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in res.points
        ]

    def delete(self, account_id: str, ids: Iterable[str]) -> None:
        check_tenant(account_id)
        id_list = [canonical_id(i) for i in ids]
        if not id_list or not self._exists():
            return
        self._delete(self._filter(account_id, None, [], id_list))

    def delete_by_filter(
        self, account_id: str, namespace: str, filters: Mapping[str, FilterValue] | None = None
    ) -> None:
        selector = self._filter(check_tenant(account_id), check_namespace(namespace), check_filters(filters))
        if self._exists():
            self._delete(selector)

    def delete_account(self, account_id: str) -> None:
        selector = self._filter(check_tenant(account_id), None, [])
        if self._exists():
            self._delete(selector)

    def _delete(self, selector: models.Filter) -> None:
        from qdrant_client.http import models

        try:
            self._client.delete(
                self.collection, points_selector=models.FilterSelector(filter=selector), wait=True
            )
        except Exception as exc:
            raise self._wrap("delete", exc) from exc

    def count(self, account_id: str, namespace: str | None = None) -> int:
        count_filter = self._filter(
            check_tenant(account_id), check_namespace(namespace) if namespace is not None else None, []
        )
        if not self._exists():
            return 0
        try:
            return int(self._client.count(self.collection, count_filter=count_filter, exact=True).count)
        except Exception as exc:
            raise self._wrap("count", exc) from exc
