"""The ``knowledge:`` contract of SKILL.md frontmatter: what knowledge a skill needs and how to look for it.

It names the *shape* of knowledge wanted (capabilities, languages, domains match groups), never a fixed base
(except in ``pinned`` mode, kept for strict reproduction). Validation refuses a contract that cannot run as written
(platform ceilings are refused, not clamped, so the author never reasons about a plan that will not run); lint
reports what a contract that does validate is worth a second look for. The knowledge registry's discovery reads
the normalised contract from the compiled artifact; its identity string takes part in the artifact.

Shape (every key optional except ``requirements[].id`` and one match criterion outside ``pinned`` mode)::

    knowledge:
      mode: discover | scoped_discover | pinned          # default discover
      scope: {workspaces: [..], tags: [..], approved_only: bool}   # scoped_discover only
      requirements:
        - id: product-docs
          purpose: "..."
          required: true
          match: {capabilities: [..], languages: [..], domains: [..]}
          retrieval: {max_knowledge_bases: 3, top_k_per_base: 8, freshness: active|any,
                      citations: required|optional}      # the budgets
          fallback: {on_no_match: ask_user|proceed_without_knowledge|fail,
                     on_ambiguous: search_multiple|ask_user|fail}
          pinned: [{source_name: .., source_id: .., build_id: ..}]   # pinned mode only
"""

from __future__ import annotations

from typing import Any

from agentmate.skills.compile import fields as F

# Values, defaults, ceilings and key sets come from the reference table (``fields.py``, rendered into the guide).
_R = "knowledge.requirements[]"
MODES = F.spec("knowledge.mode").values
FRESHNESS = F.spec(f"{_R}.retrieval.freshness").values
CITATIONS = F.spec(f"{_R}.retrieval.citations").values
ON_NO_MATCH = F.spec(f"{_R}.fallback.on_no_match").values
ON_AMBIGUOUS = F.spec(f"{_R}.fallback.on_ambiguous").values

MAX_REQUIREMENTS = F.max_items("knowledge.requirements")
DEFAULT_KNOWLEDGE_BASES, _, MAX_KNOWLEDGE_BASES = F.bounds(f"{_R}.retrieval.max_knowledge_bases")
DEFAULT_TOP_K_PER_BASE, _, MAX_TOP_K_PER_BASE = F.bounds(f"{_R}.retrieval.top_k_per_base")
MAX_REQUIREMENT_ID = F.max_length(f"{_R}.id")
MAX_PURPOSE = F.max_length(f"{_R}.purpose")
MAX_MATCH_ITEMS = F.max_items(f"{_R}.match.capabilities")
MAX_MATCH_VALUE = F.max_length(f"{_R}.match.capabilities")
MAX_SCOPE_ITEMS = F.max_items("knowledge.scope.tags")
MAX_SCOPE_VALUE = F.max_length("knowledge.scope.tags")
MAX_PINNED = F.max_items(f"{_R}.pinned")
MAX_PIN_VALUE = F.max_length(f"{_R}.pinned[].source_name")

CONTRACT_KEYS = F.children("knowledge")
REQUIREMENT_KEYS = F.children(_R)
MATCH_KEYS = F.children(f"{_R}.match")
RETRIEVAL_KEYS = F.children(f"{_R}.retrieval")
FALLBACK_KEYS = F.children(f"{_R}.fallback")
SCOPE_KEYS = F.children("knowledge.scope")
PIN_KEYS = F.children(f"{_R}.pinned[]")


def _default(key: str) -> str:
    value = F.spec(key).default
    assert isinstance(value, str), key
    return value


# Lint rule ids (also the quality check ids of the advisory contract checks; all warnings).
LINT_RULES = (
    "knowledge_contract_required_needs_citations",
    "knowledge_contract_prefers_active_builds",
    "knowledge_contract_budget_within_headroom",
    "knowledge_contract_match_discriminates",
    "knowledge_contract_pin_names_build",
    "knowledge_contract_purpose_documented",
)


class ContractError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _mapping(value: Any, where: str, keys: tuple[str, ...], problems: list[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{where}: must be a mapping")
        return {}
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        problems.append(f"{where}: unknown keys {', '.join(unknown)} (allowed: {', '.join(keys)})")
    return value


def _text(value: Any, where: str, limit: int, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        problems.append(f"{where}: must be a string")
        return ""
    text = str(value).strip()
    if len(text) > limit:
        problems.append(f"{where}: longer than {limit} characters")
    return text


def _choice(value: Any, where: str, allowed: tuple[str, ...], default: str, problems: list[str]) -> str:
    text = _text(value, where, 64, problems).lower() or default
    if text not in allowed:
        problems.append(f"{where}: {text!r} is not one of {', '.join(allowed)}")
    return text


def _int(value: Any, where: str, default: int, ceiling: int, problems: list[str]) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        problems.append(f"{where}: must be an integer")
        return default
    if not 1 <= value <= ceiling:
        problems.append(f"{where}: must be between 1 and {ceiling} (the platform ceiling), got {value}")
    return value


def _list(value: Any, where: str, max_items: int, max_len: int, problems: list[str]) -> list[str]:
    """Trimmed, case-insensitively de-duplicated, first spelling kept."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}: must be a list of strings")
        return []
    seen: set[str] = set()
    out: list[str] = []
    for v in value:
        t = v.strip()
        if t and t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    if len(out) > max_items:
        problems.append(f"{where}: more than {max_items} entries")
    if any(len(v) > max_len for v in out):
        problems.append(f"{where}: an entry is longer than {max_len} characters")
    return out


def _requirement(raw: Any, index: int, mode: str, problems: list[str]) -> dict[str, Any]:
    """One requirement, normalised; its problems are appended in the order a reader meets the fields."""
    where = f"requirements[{index}]"
    data = _mapping(raw, where, REQUIREMENT_KEYS, problems)
    rid = _text(data.get("id"), f"{where}.id", MAX_REQUIREMENT_ID, problems)
    if not rid:
        problems.append(f"{where}.id: required (a resolution run names the requirement it satisfied)")
    required = data.get("required", False)
    if not isinstance(required, bool):
        problems.append(f"{where}.required: must be true or false")
        required = False
    match = _mapping(data.get("match"), f"{where}.match", MATCH_KEYS, problems)
    retrieval = _mapping(data.get("retrieval"), f"{where}.retrieval", RETRIEVAL_KEYS, problems)
    fallback = _mapping(data.get("fallback"), f"{where}.fallback", FALLBACK_KEYS, problems)
    req: dict[str, Any] = {
        "id": rid,
        "purpose": _text(data.get("purpose"), f"{where}.purpose", MAX_PURPOSE, problems),
        "required": required,
        "match": _match(match, where, problems),
        "retrieval": _retrieval(retrieval, where, problems),
        "fallback": _fallback(fallback, where, required, problems),
        "pinned": [],
    }
    if required and req["fallback"]["on_no_match"] == "proceed_without_knowledge":
        problems.append(f"{where}: required but falls back to proceeding without knowledge")
    req["pinned"] = _pins(data.get("pinned"), where, problems)
    _check_mode(req, where, mode, problems)
    return req


def _match(match: dict[str, Any], where: str, problems: list[str]) -> dict[str, list[str]]:
    return {
        k: _list(match.get(k), f"{where}.match.{k}", MAX_MATCH_ITEMS, MAX_MATCH_VALUE, problems)
        for k in MATCH_KEYS
    }


def _retrieval(retrieval: dict[str, Any], where: str, problems: list[str]) -> dict[str, Any]:
    return {
        "max_knowledge_bases": _int(
            retrieval.get("max_knowledge_bases"),
            f"{where}.retrieval.max_knowledge_bases",
            DEFAULT_KNOWLEDGE_BASES,
            MAX_KNOWLEDGE_BASES,
            problems,
        ),
        "top_k_per_base": _int(
            retrieval.get("top_k_per_base"),
            f"{where}.retrieval.top_k_per_base",
            DEFAULT_TOP_K_PER_BASE,
            MAX_TOP_K_PER_BASE,
            problems,
        ),
        "freshness": _choice(
            retrieval.get("freshness"),
            f"{where}.retrieval.freshness",
            FRESHNESS,
            _default(f"{_R}.retrieval.freshness"),
            problems,
        ),
        "citations": _choice(
            retrieval.get("citations"),
            f"{where}.retrieval.citations",
            CITATIONS,
            _default(f"{_R}.retrieval.citations"),
            problems,
        ),
    }


def _fallback(fallback: dict[str, Any], where: str, required: bool, problems: list[str]) -> dict[str, str]:
    return {
        # A required need with nothing found stops and asks; an optional one carries on.
        "on_no_match": _choice(
            fallback.get("on_no_match"),
            f"{where}.fallback.on_no_match",
            ON_NO_MATCH,
            "ask_user" if required else "proceed_without_knowledge",
            problems,
        ),
        "on_ambiguous": _choice(
            fallback.get("on_ambiguous"),
            f"{where}.fallback.on_ambiguous",
            ON_AMBIGUOUS,
            _default(f"{_R}.fallback.on_ambiguous"),
            problems,
        ),
    }


def _pins(pins: Any, where: str, problems: list[str]) -> list[dict[str, str]]:
    if pins is not None and not isinstance(pins, list):
        problems.append(f"{where}.pinned: must be a list")
        pins = []
    out = []
    for p_index, pin in enumerate(pins or []):
        p = _mapping(pin, f"{where}.pinned[{p_index}]", PIN_KEYS, problems)
        entry = {
            k: _text(p.get(k), f"{where}.pinned[{p_index}].{k}", MAX_PIN_VALUE, problems) for k in PIN_KEYS
        }
        if not entry["source_name"] and not entry["source_id"]:
            problems.append(f"{where}.pinned[{p_index}]: names neither source_name nor source_id")
        out.append(entry)
    return out


def _check_mode(req: dict[str, Any], where: str, mode: str, problems: list[str]) -> None:
    """Mode pinned names its knowledge bases; the other modes discover them by match and pin nothing."""
    if mode == "pinned":
        if not req["pinned"]:
            problems.append(f"{where}: mode pinned requires at least one pinned knowledge base")
        if len(req["pinned"]) > MAX_PINNED:
            problems.append(f"{where}.pinned: more than {MAX_PINNED} entries")
    else:
        if req["pinned"]:
            problems.append(f"{where}.pinned: pinning belongs to mode pinned, not {mode}")
        if not any(req["match"].values()):
            problems.append(f"{where}.match: needs at least one of capabilities, languages, domains")


def parse(raw: Any) -> dict[str, Any]:
    """Validate and normalise a contract; raises ContractError listing every problem."""
    problems: list[str] = []
    if raw is None:
        raise ContractError(["is empty; remove the key or declare requirements"])
    data = _mapping(raw, "knowledge", CONTRACT_KEYS, problems)
    mode = _choice(data.get("mode"), "mode", MODES, _default("knowledge.mode"), problems)
    requirements = data.get("requirements")
    if not isinstance(requirements, list) or not requirements:
        problems.append(
            "requirements: at least one requirement is needed (a contract naming no need cannot be "
            "linted, authorised or budgeted)"
        )
        requirements = []
    if len(requirements) > MAX_REQUIREMENTS:
        problems.append(f"requirements: more than {MAX_REQUIREMENTS}")
    reqs = [_requirement(r, i, mode, problems) for i, r in enumerate(requirements)]
    ids = [r["id"].lower() for r in reqs if r["id"]]
    if len(ids) != len(set(ids)):
        problems.append("requirements: ids must be unique (case-insensitive)")
    scope = None
    if data.get("scope") is not None:
        s = _mapping(data.get("scope"), "scope", SCOPE_KEYS, problems)
        approved = s.get("approved_only", False)
        if not isinstance(approved, bool):
            problems.append("scope.approved_only: must be true or false")
            approved = False
        scope = {
            "workspaces": _list(
                s.get("workspaces"), "scope.workspaces", MAX_SCOPE_ITEMS, MAX_SCOPE_VALUE, problems
            ),
            "tags": _list(s.get("tags"), "scope.tags", MAX_SCOPE_ITEMS, MAX_SCOPE_VALUE, problems),
            "approved_only": approved,
        }
    if mode != "scoped_discover" and scope is not None:
        problems.append(f"scope: applies to mode scoped_discover, not {mode}")
    if mode == "scoped_discover" and (
        scope is None or not (scope["workspaces"] or scope["tags"] or scope["approved_only"])
    ):
        problems.append("scope: mode scoped_discover needs a scope that narrows something")
    purpose = _text(data.get("purpose"), "purpose", MAX_PURPOSE, problems)
    if problems:
        raise ContractError(problems)
    return {
        "mode": mode,
        "purpose": purpose,
        "scope": scope,
        "requirements": sorted(reqs, key=lambda r: r["id"].lower()),
    }


def identity(contract: dict[str, Any] | None) -> str:
    """The canonical string of what discovery would do; purposes (documentation) are left out."""
    if contract is None:
        return "knowledge=none"
    parts = [f"mode={contract['mode']}"]
    scope = contract.get("scope")
    if scope:
        parts.append(
            f"scope(workspaces={','.join(sorted(scope['workspaces']))},"
            f"tags={','.join(sorted(scope['tags']))},approved={str(scope['approved_only']).lower()})"
        )
    for r in sorted(contract["requirements"], key=lambda r: r["id"].lower()):
        m, ret, fb = r["match"], r["retrieval"], r["fallback"]
        pins = sorted(f"{p['source_id']}/{p['source_name']}@{p['build_id']}" for p in r["pinned"])
        parts.append(
            f"req({r['id'].lower()},required={str(r['required']).lower()},cap={','.join(sorted(m['capabilities']))},"
            f"lang={','.join(sorted(m['languages']))},dom={','.join(sorted(m['domains']))},"
            f"max={ret['max_knowledge_bases']},topk={ret['top_k_per_base']},fresh={ret['freshness']},"
            f"cite={ret['citations']},nomatch={fb['on_no_match']},ambig={fb['on_ambiguous']},pin={'|'.join(pins)})"
        )
    return ";".join(parts)


def lint(contract: dict[str, Any] | None) -> dict[str, list[dict[str, str]]]:
    """Advisory findings per rule (every rule present, possibly empty) for a contract that validates."""
    findings: dict[str, list[dict[str, str]]] = {rule: [] for rule in LINT_RULES}
    if contract is None:
        return findings

    def add(rule: str, rid: str, detail: str) -> None:
        findings[rule].append({"requirement_id": rid, "detail": detail})

    for r in contract["requirements"]:
        ret = r["retrieval"]
        if r["required"] and ret["citations"] == "optional":
            add(
                LINT_RULES[0],
                r["id"],
                "required but accepts uncited results: the skill would depend on "
                "knowledge it cannot attribute",
            )
        if ret["freshness"] == "any":
            add(
                LINT_RULES[1],
                r["id"],
                "freshness any includes superseded builds, whose pages serve nowhere else",
            )
        if ret["max_knowledge_bases"] >= MAX_KNOWLEDGE_BASES or ret["top_k_per_base"] >= MAX_TOP_K_PER_BASE:
            add(
                LINT_RULES[2],
                r["id"],
                f"retrieval sits at a platform ceiling (max_knowledge_bases "
                f"{ret['max_knowledge_bases']} of {MAX_KNOWLEDGE_BASES}, top_k_per_base "
                f"{ret['top_k_per_base']} of {MAX_TOP_K_PER_BASE})",
            )
        if not r["purpose"]:
            add(
                LINT_RULES[5],
                r["id"],
                "no purpose: a resolution cannot be judged for finding the right knowledge",
            )
        if contract["mode"] == "pinned":
            if any(not p["build_id"] for p in r["pinned"]):
                add(LINT_RULES[4], r["id"], "pins a source without a build_id, which reproduces nothing")
            continue
        m = r["match"]
        if m["languages"] and not m["capabilities"] and not m["domains"]:
            add(
                LINT_RULES[3],
                r["id"],
                "matches on language alone; add a capability or domain to discriminate",
            )
    return findings
