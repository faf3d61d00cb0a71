"""Expenses through the HTTP API: decimals, currencies, filters, per-currency summary, validation, tenancy."""

from __future__ import annotations

import uuid

from agentmate.expenses.currencies import CURRENCY_CODES


def test_expense_crud_round_trip_with_decimal_strings(client, account):
    # Given a key with expenses:rw
    h = account.headers("expenses:rw")
    # When an expense is created with a number amount, a lowercase currency and messy tags
    r = client.post(
        "/api/expenses",
        json={
            "amount": 12.5,
            "currency": "eur",
            "description": "Lunch",
            "tags": ["Food", " food"],
            "happened_at": "2026-03-01T12:30:00+01:00",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    exp = r.json()
    # Then the amount is a two-place decimal string and the currency is uppercased
    assert exp["amount"] == "12.50" and exp["currency"] == "EUR" and exp["tags"] == ["food"]
    assert exp["happened_at"] == "2026-03-01T11:30:00Z" and exp["source"] is None
    assert client.get(f"/api/expenses/{exp['id']}", headers=h).json() == exp
    # And PATCH can change amount, currency, description, tags, source and happened_at
    change = {
        "amount": "7",
        "currency": "usd",
        "description": "Dinner",
        "tags": ["Travel"],
        "source": "receipts",
        "happened_at": "2026-03-02T20:00:00Z",
    }
    r = client.patch(f"/api/expenses/{exp['id']}", json=change, headers=h)
    assert r.status_code == 200, r.text
    assert {k: r.json()[k] for k in change} == {
        **change,
        "amount": "7.00",
        "currency": "USD",
        "tags": ["travel"],
    }
    assert client.delete(f"/api/expenses/{exp['id']}", headers=h).status_code == 204
    assert client.get(f"/api/expenses/{exp['id']}", headers=h).status_code == 404
    assert client.delete(f"/api/expenses/{exp['id']}", headers=h).status_code == 404


def test_happened_at_defaults_to_now(client, account):
    h = account.headers("expenses:rw")
    exp = client.post("/api/expenses", json={"amount": "1", "currency": "GBP"}, headers=h).json()
    assert exp["happened_at"] == exp["created_at"]


def test_amounts_are_never_rounded(client, account):
    h = account.headers("expenses:rw")
    for good, stored in (
        ("0.01", "0.01"),
        ("12.500", "12.50"),
        (3, "3.00"),
        ("9999999999.99", "9999999999.99"),
    ):
        r = client.post("/api/expenses", json={"amount": good, "currency": "USD"}, headers=h)
        assert r.status_code == 201 and r.json()["amount"] == stored, (good, r.text)
    for bad in (
        "12.345",
        0.125,
        0.30000000000000004,
        "0",
        -5,
        "0.001",
        "NaN",
        "Infinity",
        "1,000",
        "ten",
        True,
        "10000000000",
        None,
    ):
        r = client.post("/api/expenses", json={"amount": bad, "currency": "USD"}, headers=h)
        assert r.status_code == 400, bad
        assert [e["field"] for e in r.json()["errors"]] == ["amount"], bad
    r = client.post("/api/expenses", json={"amount": "1.234", "currency": "USD"}, headers=h)
    assert "2 decimal places" in r.json()["errors"][0]["message"]
    exp = client.post("/api/expenses", json={"amount": "5", "currency": "USD"}, headers=h).json()
    r = client.patch(f"/api/expenses/{exp['id']}", json={"amount": "5.555"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["amount"]
    assert client.get(f"/api/expenses/{exp['id']}", headers=h).json()["amount"] == "5.00"


def test_currency_must_be_an_active_iso_4217_code(client, account):
    h = account.headers("expenses:rw")
    for bad in ("XYZ", "usdollar", "XXX", "XAU", "HRK", "", 840):
        r = client.post("/api/expenses", json={"amount": "1", "currency": bad}, headers=h)
        assert r.status_code == 400, bad
        (error,) = r.json()["errors"]
        assert error["field"] == "currency" and error["allowed"] == list(CURRENCY_CODES), bad
    assert "EUR" in CURRENCY_CODES and "CNY" in CURRENCY_CODES and len(CURRENCY_CODES) > 150
    r = client.post("/api/expenses", json={"amount": "1"}, headers=h)
    # A missing enum field lists its allowed values like a wrong one (README, step 4).
    assert r.json()["errors"] == [
        {"field": "currency", "message": "field required", "allowed": list(CURRENCY_CODES)}
    ]


def test_validation_lists_every_bad_field(client, account):
    h = account.headers("expenses:rw")
    r = client.post(
        "/api/expenses",
        json={
            "amount": "1.001",
            "currency": "ABC",
            "happened_at": "2026-01-01T10:00",
            "description": "d" * 2001,
            "category": "food",
        },
        headers=h,
    )
    assert r.status_code == 400
    assert {e["field"] for e in r.json()["errors"]} == {
        "amount",
        "currency",
        "happened_at",
        "description",
        "category",
    }
    exp = client.post("/api/expenses", json={"amount": "1", "currency": "USD"}, headers=h).json()
    r = client.patch(
        f"/api/expenses/{exp['id']}", json={"amount": None, "currency": None, "happened_at": None}, headers=h
    )
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["amount", "currency", "happened_at"]


def _seed(client, h):
    rows = [
        ("10.00", "EUR", "Train ticket", ["Travel"], "2026-01-05T09:00:00Z", "agent-a"),
        ("2.50", "EUR", "Coffee", ["food", "travel"], "2026-01-20T08:00:00Z", None),
        ("100.10", "USD", "Hotel", ["travel"], "2026-02-01T00:00:00Z", "agent-a"),
        ("0.90", "USD", "Snack 100%", ["food"], "2026-02-10T15:00:00Z", None),
        ("3000", "JPY", "Ramen", [], "2026-02-11T12:00:00Z", None),
    ]
    for amount, currency, description, tags, happened_at, source in rows:
        r = client.post(
            "/api/expenses",
            json={
                "amount": amount,
                "currency": currency,
                "description": description,
                "tags": tags,
                "happened_at": happened_at,
                "source": source,
            },
            headers=h,
        )
        assert r.status_code == 201, r.text


def test_list_filters_by_tags_text_source_currency_and_time_range(client, account):
    h = account.headers("expenses:rw")
    _seed(client, h)

    def names(**params):
        r = client.get("/api/expenses", params=params, headers=h)
        assert r.status_code == 200, r.text
        return [e["description"] for e in r.json()["items"]]

    assert names() == ["Ramen", "Snack 100%", "Hotel", "Coffee", "Train ticket"]
    assert names(tag=" TRAVEL ") == ["Hotel", "Coffee", "Train ticket"]
    assert names(tags="Travel,FOOD") == ["Coffee"]
    assert names(q="TRAIN") == ["Train ticket"]
    assert names(q="100%") == ["Snack 100%"]
    assert names(source="agent-a") == ["Hotel", "Train ticket"]
    assert names(currency="usd") == ["Snack 100%", "Hotel"]
    # start is inclusive, end exclusive; an unencoded "+" offset (a space) is understood
    assert names(start="2026-02-01T00:00:00Z") == ["Ramen", "Snack 100%", "Hotel"]
    assert names(end="2026-02-01T00:00:00Z") == ["Coffee", "Train ticket"]
    assert names(start="2026-01-20T09:00:00 01:00", end="2026-02-10T15:00:00+00:00") == ["Hotel", "Coffee"]
    assert names(tag="", tags=" ", q="", source="", currency="", start="", end="") == names()


def test_bad_filters_are_400s_naming_the_field(client, account):
    h = account.headers("expenses:r")
    r = client.get(
        "/api/expenses", params={"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, headers=h
    )
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [
        "start",
        "end",
    ]  # a cross-field rule names both
    r = client.get(
        "/api/expenses/summary",
        params={"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"},
        headers=h,
    )
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [
        "start",
        "end",
    ]  # a cross-field rule names both
    r = client.get("/api/expenses", params={"start": "yesterday", "end": "2026-01-01T00:00:00"}, headers=h)
    assert r.status_code == 400 and {e["field"] for e in r.json()["errors"]} == {"start", "end"}
    r = client.get("/api/expenses", params={"currency": "euro"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["currency"]


def test_summary_groups_per_currency_and_never_mixes_them(client, account):
    h = account.headers("expenses:rw")
    _seed(client, h)
    r = client.get("/api/expenses/summary", headers=h)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "count": 5,
        "currencies": [
            {
                "currency": "EUR",
                "total": "12.50",
                "count": 2,
                "by_tag": [
                    {"tag": "travel", "total": "12.50", "count": 2},
                    {"tag": "food", "total": "2.50", "count": 1},
                ],
            },
            {"currency": "JPY", "total": "3000.00", "count": 1, "by_tag": []},
            {
                "currency": "USD",
                "total": "101.00",
                "count": 2,
                "by_tag": [
                    {"tag": "travel", "total": "100.10", "count": 1},
                    {"tag": "food", "total": "0.90", "count": 1},
                ],
            },
        ],
    }
    # Filters narrow it: tags (all must match, normalised) and a time range
    r = client.get(
        "/api/expenses/summary",
        params={"tags": "TRAVEL", "start": "2026-01-10T00:00:00Z", "end": "2026-03-01T00:00:00Z"},
        headers=h,
    )
    assert [(c["currency"], c["total"], c["count"]) for c in r.json()["currencies"]] == [
        ("EUR", "2.50", 1),
        ("USD", "100.10", 1),
    ]
    assert r.json()["count"] == 2
    # Nothing matching is an empty summary, not an error
    r = client.get("/api/expenses/summary", params={"tag": "nope"}, headers=h)
    assert r.json() == {"currencies": [], "count": 0}


def test_ids_scopes_and_tenancy(client, account, other_account):
    h = account.headers("expenses:rw")
    exp = client.post("/api/expenses", json={"amount": "4", "currency": "CHF"}, headers=h).json()
    assert client.get("/api/expenses/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/expenses/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.patch(f"/api/expenses/{uuid.uuid4()}", json={"amount": "1"}, headers=h).status_code == 404
    ro = account.headers("expenses:r")
    assert client.get("/api/expenses/summary", headers=ro).status_code == 200
    assert (
        client.post("/api/expenses", json={"amount": "1", "currency": "CHF"}, headers=ro).status_code == 403
    )
    oh = other_account.headers("expenses:rw")
    assert client.get(f"/api/expenses/{exp['id']}", headers=oh).status_code == 404
    assert client.delete(f"/api/expenses/{exp['id']}", headers=oh).status_code == 404
    assert client.get("/api/expenses/summary", headers=oh).json() == {"currencies": [], "count": 0}


def test_idempotency_key_replays_and_conflicts(client, account):
    h = {**account.headers("expenses:rw"), "Idempotency-Key": "exp-1"}
    first = client.post("/api/expenses", json={"amount": "9.90", "currency": "usd"}, headers=h)
    # The same amount written differently is the same request
    again = client.post("/api/expenses", json={"amount": 9.9, "currency": "USD"}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and again.json() == first.json()
    assert (
        client.post("/api/expenses", json={"amount": "9.91", "currency": "USD"}, headers=h).status_code == 409
    )
    assert client.get("/api/expenses", headers=h).json()["total"] == 1
