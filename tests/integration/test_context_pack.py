"""POST /api/context/pack: validation, budgets, fit and truncation through every layer with data, per-layer
authorisation for every scope combination, failing providers, determinism and tenant isolation."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentmate.context import service as pack_service
from agentmate.context.schemas import PackRequest
from agentmate.core.db import get_database
from agentmate.core.principal import Principal
from agentmate.retrieval.embedders import EmbeddingError
from agentmate.retrieval.service import get_retrieval
from agentmate.todos import service as todos_service

PACK = "/api/context/pack"
FULL = ("memory:rw", "todos:rw", "notes:rw", "skills:r", "knowledge:r")
NO_SKILLS = "SKILL: no skill matched the query"
NO_KNOWLEDGE = "KNOWLEDGE: no indexed knowledge chunk matched the query"


def pack(client: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = client.post(PACK, json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def layer(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(item for item in result["layers"] if item["layer"] == name)


def remember(client: Any, h: dict[str, str], content: str, **over: Any) -> dict[str, Any]:
    body = {
        "memory_type": "semantic",
        "content": content,
        "evidence": [{"source_type": "test", "source_id": "t"}],
        **over,
    }
    r = client.post("/api/memory/entries", json=body, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def todo(client: Any, h: dict[str, str], title: str, **over: Any) -> dict[str, Any]:
    r = client.post("/api/todos", json={"title": title, **over}, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def note(client: Any, h: dict[str, str], title: str, content: str) -> dict[str, Any]:
    r = client.post("/api/notes", json={"title": title, "content": content}, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def working_session(client: Any, h: dict[str, str], contents: list[str]) -> str:
    r = client.post("/api/memory/working/sessions", json={"title": "t"}, headers=h)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    items = [
        {
            "item_type": "message",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": c,
            "idempotency_key": f"i-{i}",
        }
        for i, c in enumerate(contents)
    ]
    r = client.post(f"/api/memory/working/sessions/{sid}/items", json={"items": items}, headers=h)
    assert r.status_code == 201, r.text
    return str(sid)


def event(client: Any, h: dict[str, str], session: str, event_type: str, text: str) -> dict[str, Any]:
    r = client.post(
        "/api/memory/events",
        json={
            "event_type": event_type,
            "idempotency_key": uuid.uuid4().hex,
            "session_id": session,
            "payload": {"text": text},
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture
def populated(client: Any, account: Any) -> dict[str, Any]:
    """Data in every domain the pack reads: memories, todos, notes, a working session, a journal with a
    checkpoint."""
    h = account.headers(*FULL)
    memory = remember(
        client,
        h,
        "Deploy the billing service with blue/green and watch error rates.",
        title="Billing deploy rule",
        scope_type="project",
        scope_key="billing",
    )
    other_scope = remember(
        client, h, "Deploy docs by pushing to the docs branch.", scope_type="project", scope_key="docs"
    )
    t = todo(client, h, "deploy billing v2", description="after the migration", priority="high")
    n = note(client, h, "deploy billing checklist", "1. migrate\n2. switch traffic")
    session = str(uuid.uuid4())
    sid = working_session(client, h, ["first message", "second message", "third message"])
    event(client, h, session, "goal", "ship billing v2")
    event(client, h, session, "observation", "logs are noisy")
    r = client.post(
        "/api/memory/checkpoints",
        json={
            "session_id": session,
            "goal": "ship billing v2",
            "done": ["migration written"],
            "next": ["deploy billing"],
            "open": ["rollback plan?"],
            "notes": "staging is green",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    checkpoint = r.json()["checkpoint"]
    event(client, h, session, "decision", "deploy on Tuesday")
    event(client, h, session, "observation", "coffee machine broken")
    return {
        "h": h,
        "memory": memory,
        "other_scope": other_scope,
        "todo": t,
        "note": n,
        "session": session,
        "working": sid,
        "checkpoint": checkpoint,
    }


# -- validation ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "task"),
        ({"task": "   "}, "task"),
        ({"task": "x", "layers": ["MEMORY", "bogus"]}, "layers[1]"),
        ({"task": "x", "layers": "MEMORY"}, "layers"),
        ({"task": "x", "max_chars": 499}, "max_chars"),
        ({"task": "x", "max_chars": 200_001}, "max_chars"),
        ({"task": "x", "max_chars": -1}, "max_chars"),
        ({"task": "x", "top_k": 21}, "top_k"),
        ({"task": "x", "top_k": -1}, "top_k"),
        ({"task": "x", "memory_scope_type": "planet"}, "memory_scope_type"),
        ({"task": "x", "memory_scope_key": "billing"}, "memory_scope_key"),
        ({"task": "x", "knowledge_source_ids": ["not-a-uuid"]}, "knowledge_source_ids[0]"),
        ({"task": "x", "budget": 100}, "budget"),
        ({"task": "x" * 4001}, "task"),
    ],
)
def test_invalid_bodies_are_a_400_naming_the_field(client, account, body, field):
    r = client.post(PACK, json=body, headers=account.headers("memory:r"))
    assert r.status_code == 400, r.text
    assert field in [e["field"] for e in r.json()["errors"]]


PACK_FIELDS = [
    "knowledge_domain",
    "knowledge_source_ids",
    "layers",
    "max_chars",
    "memory_scope_key",
    "memory_scope_type",
    "query",
    "render",
    "session_id",
    "skill_name",
    "task",
    "top_k",
]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        # issue 23 item 7: one error per field that says the fix (was "unknown field", and for "big" two errors
        # named max_chars.literal[0] and max_chars.constrained-int with no range)
        (
            {"task": "x", "goal": "ship"},
            {
                "field": "goal",
                "message": "unknown field (use task: the task is the TASK layer's goal)",
                "allowed": PACK_FIELDS,
                "likely_meant": "task",
            },
        ),
        (  # issue 23 trial: a checkpoint sent on the pack; TASK resumes the session's latest checkpoint itself
            {"task": "x", "checkpoint": "cp-1"},
            {
                "field": "checkpoint",
                "message": "unknown field (send session_id: TASK resumes that journal session's latest "
                "checkpoint; record one with POST /api/memory/checkpoints or memory_checkpoint_save)",
                "allowed": PACK_FIELDS,
                "likely_meant": "session_id",
            },
        ),
        (
            {"task": "x", "max_chars": "big"},
            {
                "field": "max_chars",
                "message": "must be an integer 500..200000 (0 or omitted = 12000)",
                "allowed": [0, "500..200000"],
            },
        ),
        (
            {"task": "x", "max_chars": 12.5},
            {
                "field": "max_chars",
                "message": "must be an integer 500..200000 (0 or omitted = 12000)",
                "allowed": [0, "500..200000"],
            },
        ),
        (
            {"task": "x", "max_chars": True},
            {
                "field": "max_chars",
                "message": "must be an integer 500..200000 (0 or omitted = 12000)",
                "allowed": [0, "500..200000"],
            },
        ),
        (
            {"task": "x", "top_k": "big"},
            {
                "field": "top_k",
                "message": "must be an integer 1..20 (0 or omitted = 5)",
                "allowed": [0, "1..20"],
            },
        ),
        (
            {"task": "x", "top_k": 21},
            {
                "field": "top_k",
                "message": "must be an integer 1..20 (0 or omitted = 5)",
                "allowed": [0, "1..20"],
            },
        ),
    ],
)
def test_a_misnamed_field_or_a_wrong_budget_is_one_error_that_says_the_fix(client, account, body, error):
    r = client.post(PACK, json=body, headers=account.headers("memory:r"))
    assert r.status_code == 400, r.text
    assert r.json()["errors"] == [error]


def test_an_unknown_layer_names_the_allowed_values(client, account):
    r = client.post(PACK, json={"task": "x", "layers": ["SKILLS"]}, headers=account.headers("memory:r"))
    assert r.status_code == 400
    assert r.json()["errors"] == [
        {
            "field": "layers[0]",
            "message": "must be one of the allowed values",
            "allowed": ["SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "WORKING", "TASK"],
        }
    ]


def test_zero_means_the_default_for_max_chars_and_top_k(client, account):
    out = pack(client, account.headers("memory:r"), task="x", max_chars=0, top_k=0)
    assert out["max_chars"] == 12000
    assert sum(item["char_budget"] for item in out["layers"]) == 12000


def test_layers_are_case_insensitive_deduplicated_and_come_out_in_canonical_order(client, account):
    out = pack(client, account.headers("memory:r"), task="x", layers=["task", "Memory", "SKILL", "memory"])
    assert [item["layer"] for item in out["layers"]] == ["SKILL", "MEMORY", "TASK"]
    # SKILL + MEMORY + TASK of 12000: 30/20/25 of 75 (prior-art's 6547/4363/1090 had TASK at 5)
    assert [item["char_budget"] for item in out["layers"]] == [4800, 3200, 4000]


def test_the_route_needs_memory_r_and_the_response_is_private(client, account):
    r = client.post(PACK, json={"task": "x"}, headers=account.headers("todos:r", "notes:r", "skills:r"))
    assert r.status_code == 403
    assert "memory:r" in r.json()["detail"]
    r = client.post(PACK, json={"task": "x"}, headers=account.headers("memory:rw"))
    assert r.status_code == 200
    assert r.headers["cache-control"] == "private, no-store"
    assert client.post(PACK, json={"task": "x"}).status_code == 401


# -- budgets ------------------------------------------------------------------------------------------------------


def test_a_pack_without_a_session_splits_over_five_shares_and_leaves_out_working(client, account):
    out = pack(client, account.headers("memory:r"), task="x")
    assert {item["layer"]: item["char_budget"] for item in out["layers"]} == {
        "SKILL": 3000,
        "KNOWLEDGE": 3500,
        "MEMORY": 2000,
        "FACTS": 1000,
        "TASK": 2500,
    }


def test_a_pack_with_a_session_renormalises_over_the_six_shares(client, account):
    out = pack(client, account.headers("memory:r"), task="x", session_id=str(uuid.uuid4()))
    assert {item["layer"]: item["char_budget"] for item in out["layers"]} == {
        "SKILL": 2666,
        "KNOWLEDGE": 3114,
        "MEMORY": 1777,
        "FACTS": 888,
        "WORKING": 1333,
        "TASK": 2222,
    }
    assert sum(item["char_budget"] for item in out["layers"]) == 12000


def test_a_refused_layers_budget_stays_unused_and_is_not_lent(client, account):
    h = account.headers("memory:rw")
    for i in range(8):
        remember(client, h, f"budget probe {i}: " + "lorem ipsum dolor sit amet. " * 40)
    out = pack(client, h, task="budget probe", layers=["SKILL", "MEMORY"], max_chars=1000)
    skill, memory = layer(out, "SKILL"), layer(out, "MEMORY")
    assert (skill["char_budget"], skill["chars_used"], skill["items"]) == (600, 0, [])
    assert memory["char_budget"] == 400
    # Eight memories match, top_k (default 5) are candidates: the first is cut to the budget, the four others dropped
    assert len(memory["items"]) == 1 and memory["items"][0]["truncated"] is True
    assert memory["chars_used"] <= 400 and memory["dropped"] == 4
    assert out["chars_used"] == memory["chars_used"]


def test_every_layer_stays_within_its_budget_and_counts_what_it_kept(client, populated):
    out = pack(client, populated["h"], task="deploy billing", session_id=populated["working"], max_chars=500)
    for item in out["layers"]:
        assert item["chars_used"] <= item["char_budget"]
        assert item["chars_used"] == sum(len(i["content"]) for i in item["items"])
        assert item["truncated"] == any(i["truncated"] for i in item["items"])
    assert out["chars_used"] == sum(item["chars_used"] for item in out["layers"])


# -- layers with data ---------------------------------------------------------------------------------------------


def test_every_layer_provider_with_data(client, populated):
    # Given data in every domain, When packing with a session (the journal's) and a full-access key
    out = pack(client, populated["h"], task="deploy billing", session_id=populated["session"], render=True)
    # MEMORY: active memories by hybrid search with the derived title
    memory = layer(out, "MEMORY")
    refs = [i["ref"] for i in memory["items"]]
    assert f"memory_entry:{populated['memory']['id']}" == refs[0]
    first = memory["items"][0]
    assert first["title"] == "semantic · Billing deploy rule"
    assert first["source"] == "memory" and 0 < first["score"] <= 1
    # FACTS: the live todo and note, todos first
    facts = layer(out, "FACTS")
    assert [i["ref"] for i in facts["items"]] == [
        f"todo:{populated['todo']['id']}",
        f"note:{populated['note']['id']}",
    ]
    assert facts["items"][0]["content"] == "[pending/high] deploy billing v2\nafter the migration"
    assert facts["items"][1]["content"] == "1. migrate\n2. switch traffic"
    # TASK: goal, checkpoint in fixed section order (ahead before behind), then what happened after it (observations left out)
    task = layer(out, "TASK")
    assert [i["source"] for i in task["items"]] == ["task", "checkpoint", "journal"]
    assert task["items"][0]["content"] == "deploy billing"
    assert task["items"][1]["ref"] == f"memory_event:{populated['checkpoint']['event_id']}"
    assert task["items"][1]["title"] == "ship billing v2"  # the label, else the goal's first line
    assert task["items"][1]["content"] == (
        "Goal: ship billing v2\nNext:\n- deploy billing\nOpen:\n- rollback plan?\n"
        "Done:\n- migration written\nNotes: staging is green"
    )
    assert task["items"][2]["title"] == "since checkpoint"
    assert task["items"][2]["content"].endswith("decision: deploy on Tuesday")
    assert "coffee" not in task["items"][2]["content"]
    assert task["note"].startswith(f"resumed from checkpoint {populated['checkpoint']['event_id']}")
    # SKILL has no skill to offer (none published) and KNOWLEDGE nothing indexed: empty, notes, warnings
    assert layer(out, "SKILL")["items"] == [] and layer(out, "KNOWLEDGE")["items"] == []
    assert out["warnings"][0].startswith(NO_SKILLS)
    assert NO_KNOWLEDGE in out["warnings"]
    # The journal session id is not a working-memory session (no such UUID session): WORKING says so
    assert layer(out, "WORKING")["note"] == f"working-memory session {populated['session']} not found"
    # Rendered: [LAYER] blocks with source · title headers, only non-empty layers
    rendered = out["rendered"]
    assert rendered.startswith("[MEMORY]\n- memory · semantic · Billing deploy rule\n")
    assert "[SKILL]" not in rendered and "[FACTS]\n- todo · deploy billing v2\n" in rendered
    assert rendered.index("[MEMORY]") < rendered.index("[FACTS]") < rendered.index("[TASK]")


def test_memory_scope_filter_limits_the_memory_layer(client, populated):
    out = pack(
        client,
        populated["h"],
        task="deploy",
        memory_scope_type="project",
        memory_scope_key="docs",
        layers=["MEMORY"],
    )
    assert [i["ref"] for i in layer(out, "MEMORY")["items"]] == [
        f"memory_entry:{populated['other_scope']['id']}"
    ]


def test_an_empty_memory_scope_says_so_and_names_the_nearest_scopes(client, populated):
    out = pack(
        client,
        populated["h"],
        task="deploy",
        memory_scope_type="project",
        memory_scope_key="Docs/",
        layers=["MEMORY"],
    )
    memory = layer(out, "MEMORY")
    assert memory["items"] == []
    note = "no memories in scope project:Docs/ (scope keys are exact); nearest existing scopes: project:docs"
    assert memory["note"] == note and note in out["warnings"][0]


def test_superseded_memories_are_not_packed(client, populated):
    h = populated["h"]
    newer = remember(
        client, h, "Deploy the billing service with canaries now.", scope_type="project", scope_key="billing"
    )
    r = client.post(
        f"/api/memory/entries/{newer['id']}/supersede",
        json={"superseded_id": populated["memory"]["id"]},
        headers=h,
    )
    assert r.status_code in (200, 201), r.text
    out = pack(client, h, task="deploy billing", layers=["MEMORY"])
    refs = [i["ref"] for i in layer(out, "MEMORY")["items"]]
    assert f"memory_entry:{newer['id']}" in refs
    assert f"memory_entry:{populated['memory']['id']}" not in refs


def test_working_shows_the_latest_items_oldest_first_and_drops_the_oldest_under_a_tight_budget(
    client, account
):
    h = account.headers("memory:rw")
    sid = working_session(client, h, [f"{i:02d} " + "x" * 127 for i in range(10)])  # 130 characters each
    # WORKING alone gets all 500: items 10, 9, 8 fit (390), 110 ≥ 80 remain → item 7 is cut, 1..6 dropped
    out = pack(client, h, task="t", session_id=sid, layers=["WORKING"], max_chars=500)
    working = layer(out, "WORKING")
    assert [i["ref"] for i in working["items"]] == [f"working_item:{sid}/{seq}" for seq in (7, 8, 9, 10)]
    assert [i["truncated"] for i in working["items"]] == [True, False, False, False]
    # its only space keeps 3 of 110 (< half): a hard cut at 110
    assert working["items"][0]["content"] == "06 " + "x" * 107
    assert working["items"][-1]["content"].startswith("09 ")
    assert working["items"][1]["title"] == "#8 message/assistant"
    assert (working["dropped"], working["truncated"], working["chars_used"]) == (6, True, 500)


def test_working_reads_back_page_by_page_only_as_far_as_the_budget_reaches(client, account):
    h = account.headers("memory:rw")
    sid = working_session(client, h, [f"item-{i:05d}" for i in range(1, 81)])  # 80 items of 10 characters
    # 500 characters hold the newest 50 (pages of 32: the second page is read, the third is not needed)
    working = layer(pack(client, h, task="t", session_id=sid, layers=["WORKING"], max_chars=500), "WORKING")
    assert [i["content"] for i in working["items"]] == [f"item-{i:05d}" for i in range(31, 81)]
    assert (working["dropped"], working["truncated"], working["chars_used"]) == (30, False, 500)
    # 1000 characters hold all 80: every page is read, nothing is dropped
    working = layer(pack(client, h, task="t", session_id=sid, layers=["WORKING"], max_chars=1000), "WORKING")
    assert [i["ref"] for i in working["items"]] == [f"working_item:{sid}/{seq}" for seq in range(1, 81)]
    assert (working["dropped"], working["chars_used"]) == (0, 800)


def test_working_joins_the_default_layers_only_with_a_session_and_explicitly_without_one_is_empty(
    client, account
):
    h = account.headers("memory:r")
    assert "WORKING" not in [i["layer"] for i in pack(client, h, task="t")["layers"]]
    out = pack(client, h, task="t", layers=["WORKING", "TASK"])
    assert layer(out, "WORKING")["items"] == []
    assert layer(out, "WORKING")["note"].startswith("no session_id")
    assert out["warnings"] == ["WORKING: " + layer(out, "WORKING")["note"]]


def test_task_falls_back_to_a_journal_replay_without_a_checkpoint(client, account):
    h = account.headers("memory:rw")
    session = "replay-" + uuid.uuid4().hex[:6]
    event(client, h, session, "goal", "write the report")
    event(client, h, session, "observation", "weather is fine")
    event(client, h, session, "issue", "the data source is down")
    task = layer(pack(client, h, task="report", session_id=session, layers=["TASK"]), "TASK")
    assert [i["source"] for i in task["items"]] == ["task", "journal"]
    assert task["items"][1]["title"] == "recent session activity"
    lines = task["items"][1]["content"].splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "goal: write the report",
        "issue: the data source is down",
    ]
    assert task["note"] == f"no checkpoint in session {session!r}: journal replay of its last 3 entries"


def test_task_keeps_the_last_twelve_activity_lines(client, account):
    h = account.headers("memory:rw")
    session = "busy-" + uuid.uuid4().hex[:6]
    for i in range(15):
        event(client, h, session, "decision", f"decision {i:02d}")
    task = layer(pack(client, h, task="t", session_id=session, layers=["TASK"], max_chars=5000), "TASK")
    lines = task["items"][1]["content"].splitlines()
    assert [line.rsplit(" ", 1)[1] for line in lines] == [f"{i:02d}" for i in range(3, 15)]


def test_truncation_in_a_layer_cuts_at_a_cjk_full_stop_and_flags_the_item(client, account):
    h = account.headers("memory:r", "notes:rw")
    text = "合同审查需要注意付款条款。" * 60  # 13 characters per sentence, 780 in all
    note(client, h, "合同", text)
    facts = layer(pack(client, h, task="合同", layers=["FACTS"], max_chars=500), "FACTS")
    item = facts["items"][0]
    assert item["truncated"] is True and facts["truncated"] is True
    assert (
        item["content"] == "合同审查需要注意付款条款。" * 38
    )  # 494 of 500: the last full stop in the window
    assert facts["chars_used"] == 494


def test_truncation_at_a_paragraph_in_the_memory_layer(client, account):
    h = account.headers("memory:rw")
    content = "\n\n".join(["paragraph one " + "a" * 300, "paragraph two " + "b" * 300, "paragraph three"])
    remember(client, h, content)
    memory = layer(pack(client, h, task="paragraph", layers=["MEMORY"], max_chars=500), "MEMORY")
    assert memory["items"][0]["content"] == "paragraph one " + "a" * 300
    assert memory["items"][0]["truncated"] is True


# -- authorisation per layer --------------------------------------------------------------------------------------


def test_a_memory_and_notes_key_gets_memory_and_the_notes_half_only(client, populated, account):
    out = pack(client, account.headers("memory:r", "notes:r"), task="deploy billing")
    assert layer(out, "MEMORY")["items"]
    facts = layer(out, "FACTS")
    assert [i["source"] for i in facts["items"]] == ["note"]
    assert facts["note"] == "todos: insufficient scope: todos:r"
    for name, scope in (("SKILL", "skills:r"), ("KNOWLEDGE", "knowledge:r")):
        assert layer(out, name)["items"] == [] and layer(out, name)["note"] == f"insufficient scope: {scope}"
    assert out["warnings"] == [
        "SKILL: insufficient scope: skills:r",
        "KNOWLEDGE: insufficient scope: knowledge:r",
        "FACTS: todos: insufficient scope: todos:r",
    ]


@pytest.mark.parametrize(
    ("scopes", "sources", "facts_note"),
    [
        (("memory:r",), [], "todos: insufficient scope: todos:r; notes: insufficient scope: notes:r"),
        (("memory:r", "todos:r"), ["todo"], "notes: insufficient scope: notes:r"),
        (("memory:r", "notes:rw"), ["note"], "todos: insufficient scope: todos:r"),
        (("memory:r", "todos:r", "notes:r"), ["todo", "note"], None),
        ((), ["todo", "note"], None),  # an empty-scope key has full access
    ],
)
def test_facts_halves_are_authorised_independently(client, populated, account, scopes, sources, facts_note):
    facts = layer(pack(client, account.headers(*scopes), task="deploy billing"), "FACTS")
    assert [i["source"] for i in facts["items"]] == sources
    assert facts["note"] == facts_note


@pytest.mark.parametrize(
    ("scopes", "skill_note"),
    [
        (("memory:r", "skills:r"), "no skill matched the query"),
        (("memory:r", "knowledge:r"), "insufficient scope: skills:r"),
    ],
)
def test_skill_and_knowledge_are_authorised_before_they_are_searched(client, account, scopes, skill_note):
    out = pack(client, account.headers(*scopes), task="x")
    assert layer(out, "SKILL")["note"].startswith(skill_note)
    expected = (
        "no indexed knowledge chunk matched" if "knowledge:r" in scopes else "insufficient scope: knowledge:r"
    )
    assert layer(out, "KNOWLEDGE")["note"].startswith(expected)


def test_the_jwt_user_reads_every_layer(client, populated, account):
    out = pack(client, account.jwt_headers, task="deploy billing")
    assert [i["source"] for i in layer(out, "FACTS")["items"]] == ["todo", "note"]
    assert out["warnings"][0].startswith(NO_SKILLS) and out["warnings"][1] == NO_KNOWLEDGE


def test_without_memory_r_each_memory_layer_is_refused_and_task_keeps_only_its_goal(
    client, populated, account
):
    # The route refuses such a key (403); the service authorises each layer again, which this checks directly.
    caller = Principal(
        account_id=uuid.UUID(account.account_id),
        user_id=uuid.UUID(account.user_id),
        via="api_key",
        key_id=uuid.uuid4(),
        scopes=("todos:r",),
    )
    req = PackRequest(task="deploy billing", session_id=populated["working"])
    out = pack_service.pack(get_database(), get_retrieval(), caller, req)
    assert out.layer("MEMORY").note == "insufficient scope: memory:r" and out.layer("MEMORY").items == []
    assert out.layer("WORKING").note == "insufficient scope: memory:r"
    task = out.layer("TASK")
    assert [i.source for i in task.items] == ["task"]
    assert task.note == "session slice omitted: insufficient scope: memory:r"
    assert "TASK: session slice omitted: insufficient scope: memory:r" in out.warnings
    assert [i.source for i in out.layer("FACTS").items] == ["todo"]


# -- failures become notes ----------------------------------------------------------------------------------------


class BrokenEmbedder:
    name = "broken-embedder"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("embedding endpoint unreachable (test)")


@pytest.fixture
def vector_leg_down(make_retrieval, serve_retrieval) -> None:
    serve_retrieval(make_retrieval(embedder=BrokenEmbedder()))


def test_a_failing_retrieval_leg_is_a_note_and_a_warning_not_an_error(client, populated, vector_leg_down):
    out = pack(client, populated["h"], task="deploy billing", layers=["MEMORY"])
    memory = layer(out, "MEMORY")
    assert memory["items"]  # the lexical leg still answered
    assert (
        memory["note"]
        == "search degraded: vector leg: embedding failed: embedding endpoint unreachable (test)"
    )
    assert out["warnings"] == [f"MEMORY: {memory['note']}"]


def test_both_retrieval_legs_down_empties_memory_with_a_note(client, populated, vector_leg_down, monkeypatch):
    from agentmate.retrieval import repository as retrieval_repo

    def broken(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise RuntimeError("lexical down (test)")

    monkeypatch.setattr(retrieval_repo, "lexical_search", broken)
    out = pack(client, populated["h"], task="deploy billing", layers=["MEMORY", "TASK"])
    memory = layer(out, "MEMORY")
    assert memory["items"] == [] and memory["chars_used"] == 0
    assert memory["note"] == "failed: search is unavailable: both the lexical and the vector leg failed"
    assert out["warnings"] == [f"MEMORY: {memory['note']}"]
    assert layer(out, "TASK")["items"][0]["content"] == "deploy billing"


def test_a_failing_facts_half_is_a_note_while_the_other_half_answers(client, populated, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("connection reset (test) host=db.internal password=secret")

    monkeypatch.setattr(todos_service, "containing_any_of", broken)
    out = pack(client, populated["h"], task="deploy billing", layers=["FACTS"])
    facts = layer(out, "FACTS")
    assert [i["source"] for i in facts["items"]] == ["note"]
    assert facts["note"] == "todos: failed: internal error (logged)"
    assert "secret" not in str(out)


def test_a_failing_statement_rolls_back_its_layer_only_in_the_packs_one_transaction(
    client, populated, monkeypatch
):
    """A serial pack runs every layer in one transaction, each layer in a savepoint: a statement that fails in
    FACTS' todos half leaves the notes half, the later layers and the earlier MEMORY layer's write (its access
    count) intact."""
    from agentmate.todos import repository as todos_repo

    def failing(conn: Any, **kwargs: Any) -> Any:
        return conn.execute("SELECT no_such_column FROM todos").fetchall()

    monkeypatch.setattr(todos_repo, "containing_any_of", failing)
    entry = f"/api/memory/entries/{populated['memory']['id']}"
    before = client.get(entry, headers=populated["h"]).json()["access_count"]
    out = pack(client, populated["h"], task="deploy billing", session_id=populated["session"])
    facts = layer(out, "FACTS")
    assert [i["source"] for i in facts["items"]] == ["note"]
    assert facts["note"] == "todos: failed: internal error (logged)"
    assert [i["source"] for i in layer(out, "TASK")["items"]] == ["task", "checkpoint", "journal"]
    assert populated["memory"]["id"] in {i["ref"].split(":")[1] for i in layer(out, "MEMORY")["items"]}
    assert client.get(entry, headers=populated["h"]).json()["access_count"] == before + 1


def test_a_failing_provider_empties_its_layer_with_a_note_and_the_call_succeeds(
    client, populated, monkeypatch
):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setitem(pack_service.PROVIDERS, "WORKING", broken)
    out = pack(client, populated["h"], task="deploy", session_id=populated["working"])
    working = layer(out, "WORKING")
    assert (working["items"], working["note"]) == ([], "failed: internal error (logged)")
    assert "WORKING: failed: internal error (logged)" in out["warnings"]
    assert layer(out, "MEMORY")["items"]


# -- determinism, isolation, parallel -----------------------------------------------------------------------------


def test_the_same_state_packs_to_the_same_bytes_twice(client, populated):
    body = {"task": "deploy billing", "session_id": populated["session"], "render": True, "max_chars": 800}
    first = client.post(PACK, json=body, headers=populated["h"])
    second = client.post(PACK, json=body, headers=populated["h"])
    assert first.status_code == 200
    assert first.content == second.content


def test_running_the_providers_in_parallel_gives_the_same_pack(client, populated, account):
    caller = Principal(
        account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt"
    )
    req = PackRequest(task="deploy billing", session_id=populated["session"], render=True)
    serial = pack_service.pack(get_database(), get_retrieval(), caller, req, parallel=False)
    parallel = pack_service.pack(get_database(), get_retrieval(), caller, req, parallel=True)
    assert serial.model_dump_json() == parallel.model_dump_json()


def test_another_tenant_sees_none_of_it(client, populated, other_account):
    out = pack(client, other_account.headers(*FULL), task="deploy billing", session_id=populated["session"])
    assert layer(out, "MEMORY")["items"] == [] and layer(out, "FACTS")["items"] == []
    task = layer(out, "TASK")
    assert [i["source"] for i in task["items"]] == ["task"]
    assert "no checkpoint and no journal entries" in task["note"]
    foreign = pack(
        client, other_account.headers(*FULL), task="x", session_id=populated["working"], layers=["WORKING"]
    )
    assert layer(foreign, "WORKING")["items"] == []
    assert layer(foreign, "WORKING")["note"] == f"working-memory session {populated['working']} not found"


def test_a_misnamed_field_is_refused_with_the_models_hint(client, account):
    r = client.post(
        PACK,
        json={"task": "x", "max_tokens": 100, "scope_type": "project"},
        headers=account.headers("memory:r"),
    )
    assert r.status_code == 400
    messages = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert "use max_chars: budgets are in characters, not tokens" in messages["max_tokens"]
    assert "use memory_scope_type" in messages["scope_type"]


# -- SKILL (the skills registry) -----------------------------------------------------------------------------------

SKILL_MD = """---
name: domain-web
description: Build and review small web services with FastAPI
triggers: [build a web service, add an http route]
capabilities: [fastapi, http-api]
---

# Instructions

Keep every route handler thin and put the logic in a service; test every route against a real database.
"""


def publish_skill(client: Any, h: dict[str, str], *, activate: bool = True) -> dict[str, Any]:
    r = client.post(
        "/api/skills/sources",
        json={
            "name": f"src-{uuid.uuid4().hex[:8]}",
            "type": "local",
            "repository_url": "file:///skills",
            "package_path": "domain-web",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    r = client.post(
        f"/api/skills/sources/{r.json()['id']}/snapshots",
        headers=h,
        json={
            "files": [{"path": "SKILL.md", "content": SKILL_MD, "mime_type": "text/markdown"}],
            "activate": activate,
            "index": activate,
        },
    )
    assert r.status_code in (200, 201), r.text
    return r.json()["version"]


INSTRUCTIONS = (
    "# Instructions\n\nKeep every route handler thin and put the logic in a service; test every route "
    "against a real database."
)


def test_a_pinned_skill_name_brings_its_active_versions_instructions(client, account):
    h = account.headers("memory:r", "skills:rw")
    version = publish_skill(client, h)
    skill = layer(pack(client, h, task="add a route", skill_name="domain-web", layers=["SKILL"]), "SKILL")
    [item] = skill["items"]
    assert (item["source"], item["ref"]) == ("skill", f"skill_version:{version['id']}")
    assert item["content"].strip() == INSTRUCTIONS
    assert skill["note"].startswith("pinned skill_name")
    assert "K4 knowledge-contract discovery is not done here" in skill["note"]


def test_a_pinned_skill_without_an_active_version_is_empty_with_a_note(client, account):
    h = account.headers("memory:r", "skills:rw")
    out = pack(client, h, task="x", skill_name="no-such-skill", layers=["SKILL"])
    assert layer(out, "SKILL")["items"] == []
    assert out["warnings"][0].startswith("SKILL: skill 'no-such-skill' has no active version")


def test_without_a_pin_the_top_skill_search_hit_brings_its_instructions(client, account):
    h = account.headers("memory:r", "skills:rw")
    version = publish_skill(client, h)
    skill = layer(pack(client, h, task="build a web service", layers=["SKILL"]), "SKILL")
    [item] = skill["items"]
    assert item["ref"] == f"skill_version:{version['id']}" and item["content"].strip() == INSTRUCTIONS
    assert 0 < item["score"] <= 1
    assert skill["note"].startswith("top skill search hit with its instructions")


def test_a_top_hit_without_instructions_falls_back_to_its_card_in_fixed_section_order(
    client, account, monkeypatch
):
    from agentmate.skills.search import service as registry

    h = account.headers("memory:r", "skills:rw")
    publish_skill(client, h)
    real = registry.search

    def without_instructions(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        return found.model_copy(
            update={"items": [i.model_copy(update={"instructions": None}) for i in found.items]}
        )

    monkeypatch.setattr(registry, "search", without_instructions)
    skill = layer(pack(client, h, task="build a web service", layers=["SKILL"]), "SKILL")
    [item] = skill["items"]
    assert item["content"] == (
        "Build and review small web services with FastAPI\nTriggers:\n- build a web service\n"
        "- add an http route\nCapabilities:\n- fastapi\n- http-api"
    )
    assert "showing its L0 card" in skill["note"]


def test_another_tenants_skills_are_never_packed(client, account, other_account):
    publish_skill(client, other_account.headers("skills:rw"))
    h = account.headers("memory:r", "skills:r")
    searched = layer(pack(client, h, task="build a web service", layers=["SKILL"]), "SKILL")
    pinned = layer(pack(client, h, task="x", skill_name="domain-web", layers=["SKILL"]), "SKILL")
    assert searched["items"] == [] and searched["note"].startswith("no skill matched the query")
    assert pinned["items"] == [] and pinned["note"].startswith("skill 'domain-web' has no active version")


def test_facts_find_a_note_word_by_word(client, account):
    # Given notes sharing the task's important words in other forms and order, and one sharing only stop words
    h = account.headers("memory:r", "notes:rw", "todos:rw")
    runbook = note(client, h, "Payments runbook", "Payments runbook — rotate credentials monthly")
    note(client, h, "Lunch", "the a of to for with the database")
    unrelated = note(client, h, "Garden", "Water the tomatoes on Sunday")
    r = client.post("/api/todos", json={"title": "Rotating passwords for the payments DB"}, headers=h)
    assert r.status_code == 201, r.text
    # When the pack is asked for a task that is not a substring of either
    facts = layer(pack(client, h, task="rotate the payments database password", layers=["FACTS"]), "FACTS")
    refs = [i["ref"] for i in facts["items"]]
    # Then the todo and the runbook are found (stems: rotat, payment, password), the garden note is not
    assert refs[0] == f"todo:{r.json()['id']}"
    assert f"note:{runbook['id']}" in refs
    assert f"note:{unrelated['id']}" not in refs


# -- TASK at ordinary budgets (issue 23 item 3) ------------------------------------------------------------------

GOAL = "Roll out billing v2 to the EU shop without any downtime for buyers"  # 66 characters, as in the issue


def rollout_checkpoint(client: Any, h: dict[str, str], **sections: list[str]) -> tuple[str, Any]:
    """A new journal session and its checkpoint (goal, three next steps, and ``sections``)."""
    session = "rollout-" + uuid.uuid4().hex[:6]
    body = {
        "session_id": session,
        "goal": "billing v2 live in the EU shop",
        "next": ["switch 10% of EU traffic", "watch error rates for an hour", "switch the rest"],
        **sections,
    }
    r = client.post("/api/memory/checkpoints", json=body, headers=h)
    assert r.status_code == 201, r.text
    return session, r


@pytest.fixture
def resumable(client: Any, account: Any) -> dict[str, Any]:
    """A journal session with a checkpoint (goal, three next steps, two done) and a decision after it."""
    h = account.headers("memory:rw")
    session, r = rollout_checkpoint(
        client,
        h,
        done=["migration 0042 applied in staging", "blue/green stack deployed and green"],
        open=["who approves the rollback?"],
    )
    event(client, h, session, "decision", "deploy on Tuesday morning")
    return {"h": h, "session": session, "checkpoint": r.json()["checkpoint"]["event_id"]}


def task_warnings(out: dict[str, Any]) -> list[str]:
    return [w for w in out["warnings"] if w.startswith("TASK: ")]


def test_at_3000_task_keeps_the_goal_and_the_whole_checkpoint_without_a_warning(client, resumable):
    assert len(GOAL) == 66
    out = pack(client, resumable["h"], task=GOAL, session_id=resumable["session"], max_chars=3000)
    task = layer(out, "TASK")
    # 3000 * 25/135 = 555 (prior-art's share 5 gave 130: the checkpoint was dropped, silently)
    assert task["char_budget"] == 555
    assert [i["source"] for i in task["items"]] == ["task", "checkpoint", "journal"]
    assert task["items"][0]["content"] == GOAL
    # the forward-looking sections first, so a cut keeps the goal and next steps
    assert task["items"][1]["content"] == (
        "Goal: billing v2 live in the EU shop\nNext:\n- switch 10% of EU traffic\n"
        "- watch error rates for an hour\n- switch the rest\nOpen:\n- who approves the rollback?\n"
        "Done:\n- migration 0042 applied in staging\n- blue/green stack deployed and green"
    )
    assert (task["dropped"], task["truncated"]) == (0, False)
    assert task["note"].startswith(f"resumed from checkpoint {resumable['checkpoint']}")
    assert task_warnings(out) == []


def test_at_1200_task_keeps_the_goal_and_cuts_the_checkpoint_after_its_next_steps_and_warns(
    client, resumable
):
    out = pack(client, resumable["h"], task=GOAL, session_id=resumable["session"], max_chars=1200)
    task = layer(out, "TASK")
    assert task["char_budget"] == 222  # 1200 * 25/135 (prior-art's 52 dropped the 66-character goal)
    assert task["items"][0]["content"] == GOAL and task["items"][0]["truncated"] is False
    checkpoint = task["items"][1]
    # 156 characters remain: cut at the last line break (Done is what goes), at least half of them kept
    assert checkpoint["truncated"] is True
    assert checkpoint["content"] == (
        "Goal: billing v2 live in the EU shop\nNext:\n- switch 10% of EU traffic\n"
        "- watch error rates for an hour\n- switch the rest\nOpen:\n- who approves the rollback?"
    )
    assert (task["dropped"], task["truncated"]) == (1, True)  # the decision after the checkpoint
    # every dropped item is named, the journal since the checkpoint too: nothing is cut silently
    cut = (
        f"checkpoint {resumable['checkpoint']} truncated to 154 of 234 characters; journal (since checkpoint) "
        "dropped: TASK's budget is 222 characters (raise max_chars or request fewer layers)"
    )
    assert task["note"].startswith(f"{cut}; resumed from checkpoint {resumable['checkpoint']}")
    assert task_warnings(out) == [f"TASK: {task['note']}"]


def test_a_cut_checkpoint_never_ends_on_a_section_header_whose_first_line_was_cut(client, account):
    h = account.headers("memory:rw")
    session, r = rollout_checkpoint(
        client,
        h,
        open=["who approves the rollback of the EU shop when the error rates rise after the switch?"],
    )
    out = pack(client, h, task=GOAL, session_id=session, max_chars=1200)
    task = layer(out, "TASK")
    checkpoint = task["items"][1]
    # 156 characters remain: the last line break in them falls after "Open:", whose question is cut: the
    # header goes with it (fit alone kept "...\nOpen:")
    assert checkpoint["truncated"] is True and task["truncated"] is True
    assert checkpoint["content"] == (
        "Goal: billing v2 live in the EU shop\nNext:\n- switch 10% of EU traffic\n"
        "- watch error rates for an hour\n- switch the rest"
    )
    assert task["chars_used"] == len(GOAL) + len(checkpoint["content"])
    assert task["note"].startswith(
        f"checkpoint {r.json()['checkpoint']['event_id']} truncated to {len(checkpoint['content'])} of "
    )
    assert task_warnings(out) == [f"TASK: {task['note']}"]


def test_when_task_drops_the_checkpoint_it_warns_and_never_says_it_resumed_from_it(client, resumable):
    out = pack(client, resumable["h"], task=GOAL, session_id=resumable["session"], max_chars=500)
    task = layer(out, "TASK")
    # 500 * 25/135 = 92: the goal fits, 26 characters remain (< 80): the checkpoint and what follows are dropped
    assert task["char_budget"] == 92
    assert [i["source"] for i in task["items"]] == ["task"] and task["dropped"] == 2
    assert task["note"] == (
        f"checkpoint {resumable['checkpoint']} dropped, not resumed; journal (since checkpoint) dropped: "
        "TASK's budget is 92 characters (raise max_chars or request fewer layers)"
    )
    assert "resumed from" not in task["note"]
    assert task_warnings(out) == [f"TASK: {task['note']}"]


def test_a_goal_too_long_for_task_is_cut_at_a_boundary_never_dropped_and_warned(client, account):
    goal = "Migrate the billing database. " * 10  # 300 characters, sentences of 30
    out = pack(client, account.headers("memory:r"), task=goal, max_chars=500)
    task = layer(out, "TASK")
    assert task["char_budget"] == 104  # 500 * 25/120 (no session: five layers)
    # 104 characters: the last sentence end in them keeps 90, trimmed to 89
    assert (
        task["items"][0]["content"] == "Migrate the billing database. " * 2 + "Migrate the billing database."
    )
    assert task["items"][0]["truncated"] is True
    assert task["note"] == (
        "goal truncated to 89 of 299 characters: TASK's budget is 104 characters (raise max_chars or request "
        "fewer layers)"
    )
    assert task_warnings(out) == [f"TASK: {task['note']}"]


def test_at_a_large_budget_task_keeps_everything_and_warns_nothing(client, resumable):
    out = pack(client, resumable["h"], task=GOAL * 20, session_id=resumable["session"], max_chars=50_000)
    task = layer(out, "TASK")
    assert [(i["source"], i["truncated"]) for i in task["items"]] == [
        ("task", False),
        ("checkpoint", False),
        ("journal", False),
    ]
    assert task["items"][0]["content"] == (GOAL * 20).strip()
    assert task["items"][2]["content"].endswith("decision: deploy on Tuesday morning")
    assert (task["dropped"], task["truncated"]) == (0, False)
    assert task_warnings(out) == []
