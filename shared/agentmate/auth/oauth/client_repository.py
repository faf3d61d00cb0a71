"""SQL for dynamically registered OAuth clients (``oauth_clients``, migrations/0091): global rows, no tenant."""

from __future__ import annotations

from typing import Any, NamedTuple

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

# The client id and secret hash are minted by the server; the metadata is bounded before it is stored.
CONSTRAINTS = constraints(
    {
        "oauth_clients_client_id_check": ("client_id", "must be an ocl_ client id"),
        "oauth_clients_client_secret_hash_check": ("client_secret", "must be stored as its SHA-256"),
        "oauth_clients_metadata_check": ("client_metadata", "must be a JSON object of at most 64 KiB"),
    }
)


class ClientRow(NamedTuple):
    client_id: str
    client_secret_hash: str | None
    metadata: dict[str, Any]


def get_client(conn: Conn, *, client_id: str) -> ClientRow | None:
    return (
        conn.cursor(row_factory=class_row(ClientRow))
        .execute(
            """SELECT client_id, client_secret_hash, metadata FROM oauth_clients
               WHERE client_id = %(client_id)s""",
            {"client_id": client_id},
        )
        .fetchone()
    )


def insert_client(
    conn: Conn, *, client_id: str, client_secret_hash: str | None, metadata: dict[str, Any]
) -> None:
    conn.execute(
        """INSERT INTO oauth_clients (client_id, client_secret_hash, metadata)
           VALUES (%(client_id)s, %(client_secret_hash)s, %(metadata)s)""",
        {"client_id": client_id, "client_secret_hash": client_secret_hash, "metadata": Jsonb(metadata)},
    )
