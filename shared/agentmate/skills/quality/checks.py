"""Offline deterministic quality checks of one skill version (checkset ``phase4-contracts/1.1.0``).

A pure function of what the service read in one repeatable-read snapshot: the version, its package file records,
its stored compiled artifact, an optional same-skill baseline (the same three) and the latest version-bound logs
before a fixed cutoff. It calls no model, provider or index and writes nothing; the service stores the report as the
run's audit row.

- **Lint** reads every file to its end: hashes and sizes are recomputed over the whole text snapshot (a check that
  stopped at a size limit could be bypassed by padding), and a file over a limit is itself a failing finding,
  never skipped.
- **Eval** recompiles the version twice and with the file order reversed, and checks the L0 card, the manifest and
  the selected-resource contract.
- **Comparison** against a baseline: package_hash_changed, resource_manifest_changed (static resource behaviour:
  kind, MIME type, indexability, text availability), files added/removed/modified, routing diffs, lint and eval
  regressions, and a status.
- **Telemetry**: at most the latest ``MAX_TELEMETRY_LOGS`` version-bound logs before the cutoff; suggestions only
  from ``MIN_TRIGGERED`` triggered samples; counts, rates, log ids and fingerprints, never log bodies.

Each check carries a deterministic severity (blocker, error or warning); there is no composite score.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from agentmate.skills.compile import compiler, frontmatter, knowledge_contract

ENGINE_VERSION = "agentmate-skill-quality/1.0.0"
CHECKSET_VERSION = "phase4-contracts/1.1.0"
REPORT_SCHEMA_VERSION = "1.0"
MAX_SELECTED_RESOURCE_BYTES = 8 * 1024 * 1024
MAX_TELEMETRY_LOGS = 200
MIN_TRIGGERED = 20
MIN_SUGGESTION_COUNT = 3
MIN_SUGGESTION_RATE = 0.10

Severity = Literal["blocker", "error", "warning"]
SEVERITIES: dict[str, Severity] = {
    "root_skill_content_exists": "blocker",
    "strict_account_version_files": "blocker",
    "canonical_package_hash_matches": "blocker",
    "text_snapshot_hash_size_matches": "blocker",
    "frontmatter_valid": "error",
    "knowledge_contract_valid": "error",
    **{rule: "warning" for rule in knowledge_contract.LINT_RULES},
    "frontmatter_name_matches": "error",
    "description_present": "warning",
    "routing_metadata_present": "warning",
    "routing_metadata_no_duplicates": "warning",
    "self_dependency_absent": "error",
    "compiled_artifact_current": "warning",
    "resource_manifest_consistent": "error",
    "compile_repeatability": "error",
    "file_order_invariance": "error",
    "l0_excludes_instruction_and_resource_body": "error",
    "resource_manifest_exact_and_stable": "error",
    "selected_resource_isolation_and_bounds": "error",
}
# The frontmatter fields ``routing_metadata_present`` looks for (either one passes it).
ROUTING_METADATA_FIELDS = ("triggers", "capabilities")
EVAL_CHECKS = (
    "compile_repeatability",
    "file_order_invariance",
    "l0_excludes_instruction_and_resource_body",
    "resource_manifest_exact_and_stable",
    "selected_resource_isolation_and_bounds",
)
LINT_CHECKS = tuple(c for c in SEVERITIES if c not in EVAL_CHECKS)


@dataclass(frozen=True)
class QFile(compiler.FileIn):
    account_id: str = ""
    revision_id: str | None = None


@dataclass(frozen=True)
class QVersion:
    id: str
    account_id: str
    skill_name: str
    version: str
    content: str
    content_hash: str
    package_hash: str | None
    source_revision_id: str | None
    expected_name: str
    """What the frontmatter ``name`` must equal: the skill's folder (last package_path segment), or the skill name
    of a direct publish."""


@dataclass(frozen=True)
class QArtifact:
    skill_version_id: str
    compiler_name: str
    compiler_version: str
    input_package_hash: str
    artifact_hash: str
    resource_manifest: list[dict[str, Any]]


@dataclass(frozen=True)
class QPackage:
    version: QVersion
    files: list[QFile] = field(default_factory=list)
    artifact: QArtifact | None = None


@dataclass(frozen=True)
class QLog:
    id: str
    skill_version_id: str | None
    created_at: datetime
    was_triggered: bool
    outcome: str


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def package_hash(files: list[QFile]) -> str:
    """prior-art §4.10: sorted ``path\\0sha256\\0size`` lines joined by ``\\n``, sha256 hex."""
    lines = sorted(f"{f.path}\x00{f.sha256}\x00{f.size_bytes}" for f in files)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


Check = dict[str, Any]


def _check(check_id: str, passed: bool, applicable: bool, evidence: dict[str, Any]) -> Check:
    return {
        "id": check_id,
        "severity": SEVERITIES[check_id],
        "passed": bool(passed),
        "applicable": bool(applicable),
        "evidence": evidence,
    }


def _compile(version: QVersion, files: list[QFile]) -> tuple[compiler.Artifact | None, str | None]:
    v = compiler.VersionIn(
        id=version.id,
        skill_name=version.skill_name,
        version=version.version,
        content=version.content,
        package_hash=version.package_hash or version.content_hash,
    )
    try:
        return compiler.compile_version(v, list(files)), None
    except compiler.CompileError as exc:
        return None, str(exc)[:2000]


def _duplicates(front: frontmatter.Frontmatter) -> list[str]:
    out: list[str] = []
    for key, values in front.routing().items():
        seen: set[str] = set()
        for value in values:
            k = value.strip().lower()
            if k in seen:
                out.append(f"{key}:{k}")
            seen.add(k)
    return sorted(out)


@dataclass(frozen=True)
class _Front:
    """SKILL.md's frontmatter as the lint rules read it, parsed once (leniently: problems are findings)."""

    source: str | None
    present: bool
    front: frontmatter.Frontmatter | None
    fm_problems: list[str]
    kc_problems: list[str]

    @property
    def usable(self) -> bool:
        """The routing rules apply only to a frontmatter that parsed without problems of its own."""
        return self.front is not None and self.front.present and not self.fm_problems

    @property
    def fields(self) -> frontmatter.Frontmatter:
        return self.front or frontmatter.Frontmatter(present=False)


def _parse_front(content: str) -> _Front:
    source: str | None = None
    present = False
    front: frontmatter.Frontmatter | None = None
    problems: list[str] = []
    try:
        source, _ = frontmatter.split(content)
        present = source is not None
        front = frontmatter.parse(content, strict=False)
        problems = front.problems
    except frontmatter.FrontmatterError as exc:
        present = True
        problems = exc.problems
    return _Front(
        source=source,
        present=present,
        front=front,
        fm_problems=[p[:500] for p in problems if not p.startswith("knowledge:")][:50],
        kc_problems=[p[:500] for p in problems if p.startswith("knowledge:")][:50],
    )


def _lint(pkg: QPackage) -> list[Check]:
    """The lint checks, one function per rule, in the report's order."""
    version = pkg.version
    files = sorted(pkg.files, key=lambda f: f.path)
    front = _parse_front(version.content)
    return [
        _root_skill_content_exists(version, files),
        _strict_account_version_files(version, files),
        _canonical_package_hash_matches(version, files),
        _text_snapshot_hash_size_matches(version, files),
        _frontmatter_valid(front),
        _knowledge_contract_valid(front),
        *_knowledge_contract_rules(front),
        _frontmatter_name_matches(version, front),
        _description_present(front),
        _routing_metadata_present(front),
        _routing_metadata_no_duplicates(front),
        _self_dependency_absent(version, front),
        _compiled_artifact_current(version, files, pkg.artifact),
        _resource_manifest_consistent(files, pkg.artifact),
    ]


def _root_skill_content_exists(version: QVersion, files: list[QFile]) -> Check:
    root = next((f for f in files if f.path == compiler.ROOT_FILE), None)
    # A package (or a version bound to a revision) must carry SKILL.md as a file; a direct publish has none.
    requires_file = version.source_revision_id is not None or bool(files)
    content_present = bool(version.content.strip())
    evidence: dict[str, Any] = {
        "content_present": content_present,
        "file_record_required": requires_file,
        "file_record_present": root is not None,
    }
    if root is not None:
        evidence.update(file_id=root.id, sha256=root.sha256)
    passed = content_present and (not requires_file or root is not None)
    return _check("root_skill_content_exists", passed, True, evidence)


def _strict_account_version_files(version: QVersion, files: list[QFile]) -> Check:
    foreign = [
        f.path
        for f in files
        if f.account_id != version.account_id
        or f.revision_id is None
        or f.revision_id != version.source_revision_id
    ]
    evidence = {"file_count": len(files), "foreign_paths": foreign[:50]}
    return _check("strict_account_version_files", not foreign, bool(files), evidence)


def _canonical_package_hash_matches(version: QVersion, files: list[QFile]) -> Check:
    evidence: dict[str, Any] = {
        "stored_hash": version.package_hash,
        "stored_content_hash": version.content_hash,
    }
    if files:
        computed = package_hash(files)
        ok = computed == version.package_hash
        evidence["identity_mode"] = "package_files"
    else:
        computed = sha256_text(version.content)
        ok = computed == version.content_hash == version.package_hash
        evidence["identity_mode"] = "direct_body"
    evidence["computed_hash"] = computed
    return _check("canonical_package_hash_matches", ok, True, evidence)


def _text_snapshot_hash_size_matches(version: QVersion, files: list[QFile]) -> Check:
    # Every text snapshot is hashed whole, whatever its size.
    mismatched: list[str] = []
    checked = 0
    for f in files:
        if f.content is None:
            continue
        checked += 1
        data = f.content.encode("utf-8")
        if hashlib.sha256(data).hexdigest() != f.sha256 or len(data) != f.size_bytes:
            mismatched.append(f.path)
        elif f.path == compiler.ROOT_FILE and f.content != version.content:
            mismatched.append(f.path)
    evidence = {"checked_snapshots": checked, "mismatched_paths": mismatched[:50]}
    return _check("text_snapshot_hash_size_matches", not mismatched, checked > 0, evidence)


def _frontmatter_valid(front: _Front) -> Check:
    problems = front.fm_problems
    evidence = {"frontmatter_present": front.present, **({"problems": problems} if problems else {})}
    return _check("frontmatter_valid", not problems, front.present, evidence)


def _contract_declared(front: _Front) -> bool:
    return front.present and "knowledge" in (_raw_keys(front.source) if front.source else set())


def _knowledge_contract_valid(front: _Front) -> Check:
    declared = _contract_declared(front)
    problems = front.kc_problems
    evidence = {"declared": declared, **({"problems": problems} if problems else {})}
    return _check("knowledge_contract_valid", not problems, declared, evidence)


def _knowledge_contract_rules(front: _Front) -> list[Check]:
    """The contract's own lint rules (``knowledge_contract.LINT_RULES``), over a contract that parsed."""
    contract = front.front.knowledge if front.front is not None and not front.kc_problems else None
    findings = knowledge_contract.lint(contract)
    return [
        _check(rule, not findings[rule], contract is not None, {"findings": findings[rule]})
        for rule in knowledge_contract.LINT_RULES
    ]


def _frontmatter_name_matches(version: QVersion, front: _Front) -> Check:
    name = front.fields.name
    evidence = {"frontmatter_name": name, "expected_name": version.expected_name}
    return _check(
        "frontmatter_name_matches", bool(name) and name == version.expected_name, front.usable, evidence
    )


def _description_present(front: _Front) -> Check:
    # Applies to every frontmatter that parsed: a missing description is also a frontmatter problem (required).
    present = bool(front.fields.description.strip())
    return _check(
        "description_present", present, front.front is not None and front.present, {"present": present}
    )


def _routing_metadata_present(front: _Front) -> Check:
    f0 = front.fields
    passed = bool(f0.triggers or f0.capabilities)
    evidence: dict[str, Any] = {
        "fields": list(ROUTING_METADATA_FIELDS),
        "trigger_count": len(f0.triggers),
        "capability_count": len(f0.capabilities),
    }
    if not passed:
        evidence["hint"] = (
            "add `triggers` (phrases of the tasks the skill is for) or `capabilities` (what it can do) to the "
            "SKILL.md frontmatter: lists of strings shown on the L0 card and indexed for skill search (the "
            "frontmatter reference in the agent guide, §4.5.1)"
        )
    return _check("routing_metadata_present", passed, front.usable, evidence)


def _routing_metadata_no_duplicates(front: _Front) -> Check:
    dups = _duplicates(front.fields)
    return _check("routing_metadata_no_duplicates", not dups, front.usable, {"duplicates": dups})


def _self_dependency_absent(version: QVersion, front: _Front) -> Check:
    f0 = front.fields
    own = {version.skill_name.strip().lower(), (f0.name or "").lower()} - {""}
    selfdeps = sorted(d for d in f0.dependencies if d.strip().lower() in own)
    return _check("self_dependency_absent", not selfdeps, front.usable, {"matches": selfdeps})


def _compiled_artifact_current(version: QVersion, files: list[QFile], art: QArtifact | None) -> Check:
    expected, _err = _compile(version, files)
    evidence: dict[str, Any] = {
        "artifact_present": art is not None,
        "expected_compiler": compiler.COMPILER_NAME,
        "expected_compiler_version": compiler.COMPILER_VERSION,
    }
    current = False
    if art is not None:
        evidence.update(
            actual_compiler=art.compiler_name,
            actual_compiler_version=art.compiler_version,
            input_package_hash=art.input_package_hash,
        )
        current = (
            expected is not None
            and art.skill_version_id == version.id
            and art.compiler_name == compiler.COMPILER_NAME
            and art.compiler_version == compiler.COMPILER_VERSION
            and art.input_package_hash == (version.package_hash or version.content_hash)
            and art.artifact_hash == expected.artifact_hash
        )
    return _check("compiled_artifact_current", current, True, evidence)


def _resource_manifest_consistent(files: list[QFile], art: QArtifact | None) -> Check:
    expected_manifest = compiler.manifest_of(files)
    evidence = {
        "expected_count": len(expected_manifest),
        "actual_count": None if art is None else len(art.resource_manifest),
    }
    passed = art is not None and art.resource_manifest == expected_manifest
    return _check("resource_manifest_consistent", passed, art is not None, evidence)


def _raw_keys(source: str) -> set[str]:
    """Top-level keys of a frontmatter block without interpreting it (for checks whose applicability depends on
    a key being declared even when the block does not validate)."""
    keys = set()
    for line in source.split("\n"):
        if line and not line[0].isspace() and ":" in line and not line.startswith("#"):
            keys.add(line.split(":", 1)[0].strip().strip("'\""))
    return keys


def _embedded(body: str, encoded: str) -> bool:
    """Whether a body (≥ 32 characters once trimmed, so a one-word body does not match by chance) appears in a
    JSON encoding, raw or JSON-escaped."""
    text = body.strip()
    if len(text) < 32:
        return False
    return text in encoded or json.dumps(text, ensure_ascii=False)[1:-1] in encoded


def _eval(pkg: QPackage) -> list[Check]:
    """The eval checks: the version compiled twice and with the file order reversed, then what the L0 card, the
    manifest and the selected resources must satisfy."""
    version = pkg.version
    files = sorted(pkg.files, key=lambda f: f.path)
    first, err1 = _compile(version, files)
    second, err2 = _compile(version, files)
    reordered, err3 = _compile(version, list(reversed(files)))
    expected_manifest = compiler.manifest_of(files)
    return [
        _compile_repeatability(first, err1, second, err2),
        _file_order_invariance(first, reordered, err3, len(files)),
        _l0_excludes_instruction_and_resource_body(first, files),
        _resource_manifest_exact_and_stable(first, reordered, expected_manifest),
        _selected_resource_isolation_and_bounds(files, expected_manifest),
    ]


def _same(a: compiler.Artifact | None, b: compiler.Artifact | None) -> bool:
    return (
        a is not None
        and b is not None
        and (compiler.canonical_json(a.as_dict()) == compiler.canonical_json(b.as_dict()))
    )


def _compile_repeatability(
    first: compiler.Artifact | None, err1: str | None, second: compiler.Artifact | None, err2: str | None
) -> Check:
    evidence: dict[str, Any] = {"first_succeeded": err1 is None, "second_succeeded": err2 is None}
    if err1:
        evidence["error"] = err1
    return _check("compile_repeatability", _same(first, second), True, evidence)


def _file_order_invariance(
    first: compiler.Artifact | None, reordered: compiler.Artifact | None, err: str | None, file_count: int
) -> Check:
    evidence: dict[str, Any] = {"file_count": file_count, "compile_succeeded": err is None}
    if err:
        evidence["error"] = err
    return _check("file_order_invariance", _same(first, reordered), True, evidence)


def _l0_excludes_instruction_and_resource_body(first: compiler.Artifact | None, files: list[QFile]) -> Check:
    l0_ok, l0_bytes = False, 0
    if first is not None:
        encoded = compiler.canonical_json(first.card)
        l0_bytes = len(encoded.encode())
        lower = encoded.lower()
        leaks = [
            f.path
            for f in files
            if f.path != compiler.ROOT_FILE and f.content and _embedded(f.content, encoded)
        ]
        l0_ok = (
            '"content"' not in lower
            and '"instructions"' not in lower
            and not _embedded(first.instructions, encoded)
            and not leaks
            and l0_bytes <= compiler.MAX_CARD_BYTES
        )
    evidence = {"encoded_bytes": l0_bytes, "max_bytes": compiler.MAX_CARD_BYTES}
    return _check("l0_excludes_instruction_and_resource_body", l0_ok, first is not None, evidence)


def _resource_manifest_exact_and_stable(
    first: compiler.Artifact | None,
    reordered: compiler.Artifact | None,
    expected_manifest: list[dict[str, Any]],
) -> Check:
    passed = (
        first is not None
        and first.resource_manifest == expected_manifest
        and reordered is not None
        and reordered.resource_manifest == expected_manifest
    )
    evidence = {"resource_count": len(expected_manifest)}
    return _check("resource_manifest_exact_and_stable", passed, first is not None, evidence)


def _selected_resource_isolation_and_bounds(
    files: list[QFile], expected_manifest: list[dict[str, Any]]
) -> Check:
    by_id = {f.id: f for f in files}
    seen: set[str] = set()
    problems: list[str] = []
    over_limit: list[str] = []
    text_count = 0
    for item in expected_manifest:
        f = by_id.get(item["file_id"])
        if (
            f is None
            or item["file_id"] in seen
            or item["path"] == compiler.ROOT_FILE
            or f.path != item["path"]
            or f.sha256 != item["sha256"]
            or f.size_bytes != item["size_bytes"]
        ):
            problems.append(item["path"])
        seen.add(item["file_id"])
        if item["text_available"] and f is not None:
            text_count += 1
            data = (f.content or "").encode("utf-8")
            if len(data) > MAX_SELECTED_RESOURCE_BYTES or f.size_bytes > MAX_SELECTED_RESOURCE_BYTES:
                over_limit.append(f.path)  # a finding, never skipped
            elif not data or hashlib.sha256(data).hexdigest() != f.sha256:
                problems.append(f.path)
    evidence = {
        "resource_count": len(expected_manifest),
        "text_available_count": text_count,
        "max_selected_resource_bytes": MAX_SELECTED_RESOURCE_BYTES,
        "failed_paths": problems[:50],
        "over_limit_paths": over_limit[:50],
    }
    return _check(
        "selected_resource_isolation_and_bounds",
        not problems and not over_limit,
        bool(expected_manifest),
        evidence,
    )


def _regressions(current: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> list[str]:
    before = {c["id"]: c for c in baseline}
    return sorted(
        c["id"]
        for c in current
        if c["id"] in before
        and before[c["id"]]["applicable"]
        and before[c["id"]]["passed"]
        and c["applicable"]
        and not c["passed"]
    )


def _blocked(checks: list[dict[str, Any]]) -> bool:
    return any(c["severity"] == "blocker" and c["applicable"] and not c["passed"] for c in checks)


def _behaviour(manifest: list[dict[str, Any]]) -> list[tuple[str, str, str, bool, bool]]:
    return sorted(
        (m["path"], m["kind"], m["mime_type"], m["indexable"], m["text_available"]) for m in manifest
    )


def _compare(
    current: QPackage, baseline: QPackage | None, lint: list[dict[str, Any]], evals: list[dict[str, Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": "not_available",
        "baseline_version_id": None,
        "package_hash_changed": False,
        "resource_manifest_changed": False,
        "files_added": [],
        "files_removed": [],
        "files_modified": [],
        "routing_diffs": [],
        "lint_regressions": [],
        "eval_regressions": [],
    }
    if baseline is None:
        return result
    result["baseline_version_id"] = baseline.version.id
    b_lint, b_eval = _lint(baseline), _eval(baseline)
    now = {f.path: f.sha256 for f in current.files}
    before = {f.path: f.sha256 for f in baseline.files}
    result["files_added"] = [{"path": p, "after_sha256": now[p]} for p in sorted(now.keys() - before.keys())]
    result["files_removed"] = [
        {"path": p, "before_sha256": before[p]} for p in sorted(before.keys() - now.keys())
    ]
    result["files_modified"] = [
        {"path": p, "before_sha256": before[p], "after_sha256": now[p]}
        for p in sorted(now.keys() & before.keys())
        if now[p] != before[p]
    ]
    result["package_hash_changed"] = current.version.package_hash != baseline.version.package_hash
    cur_art, _ = _compile(current.version, current.files)
    base_art, _ = _compile(baseline.version, baseline.files)
    cur_manifest = (
        cur_art.resource_manifest
        if cur_art
        else (current.artifact.resource_manifest if current.artifact else None)
    )
    base_manifest = (
        base_art.resource_manifest
        if base_art
        else (baseline.artifact.resource_manifest if baseline.artifact else None)
    )
    if cur_manifest is not None and base_manifest is not None:
        result["resource_manifest_changed"] = _behaviour(cur_manifest) != _behaviour(base_manifest)
    result["lint_regressions"] = _regressions(lint, b_lint)
    result["eval_regressions"] = _regressions(evals, b_eval)
    if _blocked(lint) or _blocked(b_lint):
        result["status"] = "blocked"
        return result
    if cur_art is not None and base_art is not None:
        for key in ("description", "triggers", "capabilities", "constraints", "dependencies"):
            a, b = cur_art.card[key], base_art.card[key]
            a_list = [a] if isinstance(a, str) else list(a)
            b_list = [b] if isinstance(b, str) else list(b)
            if a_list != b_list:
                result["routing_diffs"].append({"field": key, "before": b_list, "after": a_list})
    if result["lint_regressions"] or result["eval_regressions"]:
        result["status"] = "static_regression_detected"
    elif (
        result["package_hash_changed"]
        or result["resource_manifest_changed"]
        or result["files_added"]
        or result["files_removed"]
        or result["files_modified"]
        or result["routing_diffs"]
    ):
        result["status"] = "review_required"
    else:
        result["status"] = "no_static_regression_detected"
    return result


def fingerprint(version_id: str, category: str, log_ids: list[str]) -> str:
    return hashlib.sha256(f"{version_id}\x00{category}\x00{chr(0).join(log_ids)}".encode()).hexdigest()


def telemetry(version_id: str, cutoff: datetime, logs: list[QLog]) -> dict[str, Any]:
    bound = [lg for lg in logs if lg.skill_version_id == version_id and lg.created_at <= cutoff]
    bound.sort(key=lambda lg: (lg.created_at, lg.id), reverse=True)
    bound = bound[:MAX_TELEMETRY_LOGS]
    outcomes = {"success": 0, "failure": 0, "partial": 0, "user_corrected": 0, "other": 0}
    ids: dict[str, list[str]] = {"bypass": [], "correction": [], "failure": [], "partial": []}
    triggered = 0
    for lg in bound:
        if not lg.was_triggered:
            ids["bypass"].append(lg.id)
            continue
        triggered += 1
        key = lg.outcome if lg.outcome in outcomes else "other"
        outcomes[key] += 1
        category = {"failure": "failure", "partial": "partial", "user_corrected": "correction"}.get(
            lg.outcome
        )
        if category:
            ids[category].append(lg.id)
    out: dict[str, Any] = {
        "status": "insufficient",
        "cutoff": cutoff.isoformat(),
        "max_logs": MAX_TELEMETRY_LOGS,
        "min_triggered": MIN_TRIGGERED,
        "considered": len(bound),
        "triggered": triggered,
        "bypass": len(ids["bypass"]),
        "outcomes": outcomes,
        "outcome_denominator": triggered,
        "suggestions": [],
    }
    if triggered < MIN_TRIGGERED:
        return out
    out["status"] = "sufficient"
    for category in ("bypass", "correction", "failure", "partial"):
        found = ids[category]
        denominator = len(bound) if category == "bypass" else triggered
        if (
            not denominator
            or len(found) < MIN_SUGGESTION_COUNT
            or len(found) / denominator < MIN_SUGGESTION_RATE
        ):
            continue
        out["suggestions"].append(
            {
                "category": category,
                "count": len(found),
                "denominator": denominator,
                "rate": round(len(found) / denominator, 6),
                "fingerprint": fingerprint(version_id, category, found),
                "log_ids": found,
            }
        )
    return out


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """Counts of failing applicable checks per severity (no composite score)."""
    checks = report["lint"] + report["eval"]
    failed = [c for c in checks if c["applicable"] and not c["passed"]]
    return {
        "blockers": sum(1 for c in failed if c["severity"] == "blocker"),
        "errors": sum(1 for c in failed if c["severity"] == "error"),
        "warnings": sum(1 for c in failed if c["severity"] == "warning"),
        "checks": len(checks),
        "not_applicable": sum(1 for c in checks if not c["applicable"]),
        "failed_check_ids": sorted(c["id"] for c in failed),
        "comparison_status": report["comparison"]["status"],
        "telemetry_status": report["telemetry"]["status"],
    }


def evaluate(
    pkg: QPackage, *, baseline: QPackage | None, logs: list[QLog], cutoff: datetime
) -> dict[str, Any]:
    lint, evals = _lint(pkg), _eval(pkg)
    v = pkg.version
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "engine_version": ENGINE_VERSION,
        "checkset": CHECKSET_VERSION,
        "input": {
            "version_id": v.id,
            "skill_name": v.skill_name,
            "version": v.version,
            "package_hash": v.package_hash,
        },
        "lint": lint,
        "eval": evals,
        "comparison": _compare(pkg, baseline, lint, evals),
        "telemetry": telemetry(v.id, cutoff, logs),
    }
    report["summary"] = summary(report)
    return report
