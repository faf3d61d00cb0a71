from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agentmate.skills.quality import checks as quality
from tests.unit.skills import pkg

CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)


def run(p: quality.QPackage, baseline: quality.QPackage | None = None, logs=()) -> dict:
    return quality.evaluate(p, baseline=baseline, logs=list(logs), cutoff=CUTOFF)


def checks(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["lint"] + report["eval"]}


def test_every_check_of_the_checkset_is_reported_with_its_severity() -> None:
    report = run(pkg.package())
    got = checks(report)
    assert list(got) == list(quality.SEVERITIES)
    assert {k: v["severity"] for k, v in got.items()} == quality.SEVERITIES
    assert report["checkset"] == "phase4-contracts/1.1.0"


def test_purpose_built_package_passes_every_check() -> None:
    got = checks(run(pkg.package()))
    failing = {k: v["evidence"] for k, v in got.items() if not (v["applicable"] and v["passed"])}
    # the two pinned-mode / language-only advisory checks are applicable (a contract exists) and pass
    assert failing == {}


def with_skill(skill: str) -> quality.QPackage:
    return pkg.package(skill)


def replace_front(old: str, new: str) -> quality.QPackage:
    return with_skill(pkg.SKILL.replace(old, new))


CONTRACT_OLD = "      match: {capabilities: [api-reference], languages: [en]}\n"


@pytest.mark.parametrize(
    ("check_id", "make"),
    [
        (
            "root_skill_content_exists",
            lambda: (lambda p: replace(p, files=[f for f in p.files if f.path != "SKILL.md"]))(pkg.package()),
        ),
        (
            "strict_account_version_files",
            lambda: (
                lambda p: replace(
                    p,
                    files=[
                        replace(f, account_id="other") if f.path == "scripts/check.py" else f for f in p.files
                    ],
                )
            )(pkg.package()),
        ),
        (
            "canonical_package_hash_matches",
            lambda: (lambda p: replace(p, version=replace(p.version, package_hash="0" * 64)))(pkg.package()),
        ),
        (
            "text_snapshot_hash_size_matches",
            lambda: (
                lambda p: replace(
                    p,
                    files=[
                        replace(f, content=f.content + " ") if f.path.startswith("refer") else f
                        for f in p.files
                    ],
                )
            )(pkg.package()),
        ),
        ("frontmatter_valid", lambda: replace_front("name: domain-web", "name: Domain_Web")),
        (
            "knowledge_contract_valid",
            lambda: replace_front("      required: true\n", "      required: maybe\n"),
        ),
        (
            "knowledge_contract_required_needs_citations",
            lambda: replace_front(CONTRACT_OLD, CONTRACT_OLD + "      retrieval: {citations: optional}\n"),
        ),
        (
            "knowledge_contract_prefers_active_builds",
            lambda: replace_front(CONTRACT_OLD, CONTRACT_OLD + "      retrieval: {freshness: any}\n"),
        ),
        (
            "knowledge_contract_budget_within_headroom",
            lambda: replace_front(
                CONTRACT_OLD, CONTRACT_OLD + "      retrieval: {max_knowledge_bases: 10}\n"
            ),
        ),
        (
            "knowledge_contract_match_discriminates",
            lambda: replace_front(CONTRACT_OLD, "      match: {languages: [en]}\n"),
        ),
        (
            "knowledge_contract_pin_names_build",
            lambda: with_skill(
                pkg.SKILL.replace("knowledge:\n", "knowledge:\n  mode: pinned\n").replace(
                    CONTRACT_OLD, "      pinned: [{source_name: product-docs}]\n"
                )
            ),
        ),
        (
            "knowledge_contract_purpose_documented",
            lambda: replace_front("      purpose: Reference for the framework's routing API\n", ""),
        ),
        ("frontmatter_name_matches", lambda: replace_front("name: domain-web", "name: other-name")),
        (
            "description_present",
            lambda: replace_front("description: Build and review small web services\n", ""),
        ),
        (
            "routing_metadata_present",
            lambda: replace_front(
                "triggers: [build a web service, add an http route]\ncapabilities: [fastapi, http-api]\n", ""
            ),
        ),
        (
            "routing_metadata_no_duplicates",
            lambda: replace_front("[fastapi, http-api]", "[fastapi, FastAPI]"),
        ),
        ("self_dependency_absent", lambda: replace_front("[python-basics]", "[Domain-Web]")),
        ("compiled_artifact_current", lambda: replace(pkg.package(), artifact=None)),
        (
            "resource_manifest_consistent",
            lambda: (
                lambda p: replace(
                    p, artifact=replace(p.artifact, resource_manifest=p.artifact.resource_manifest[:1])
                )
            )(pkg.package()),
        ),
        (
            "l0_excludes_instruction_and_resource_body",
            lambda: replace_front(
                "description: Build and review small web services",
                'description: "# Routing\\n\\nRoutes are declared on a router object."',
            ),
        ),
        (
            "selected_resource_isolation_and_bounds",
            lambda: (
                lambda p: replace(
                    p,
                    files=[
                        replace(f, sha256="0" * 64) if f.path.startswith("scripts") else f for f in p.files
                    ],
                )
            )(pkg.package()),
        ),
    ],
)
def test_each_check_fails_on_a_package_built_to_break_it(check_id: str, make) -> None:
    got = checks(run(make()))
    assert got[check_id]["applicable"] is True
    assert got[check_id]["passed"] is False, got[check_id]


def test_over_limit_text_resource_is_a_finding_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a resource bigger than the selected-resource bound, with a correct hash
    big = "x" * 5000
    p = pkg.package()
    fs = [f for f in p.files if f.path != "references/routing.md"] + [
        pkg.text_file("f-big", "references/big.md", big)
    ]
    v = pkg.version(fs)
    monkeypatch.setattr(quality, "MAX_SELECTED_RESOURCE_BYTES", 4096)
    got = checks(run(quality.QPackage(v, fs, pkg.compiled(v, fs))))
    check = got["selected_resource_isolation_and_bounds"]
    assert check["passed"] is False and check["evidence"]["over_limit_paths"] == ["references/big.md"]
    # and the snapshot was still hashed whole (the lint check passes because every byte matched)
    assert got["text_snapshot_hash_size_matches"]["passed"] is True


def test_padding_after_a_size_limit_does_not_hide_a_hash_mismatch() -> None:
    p = pkg.package()
    padded = "y" * 200_000
    fs = [replace(f, content=f.content + padded) if f.path == "references/routing.md" else f for f in p.files]
    got = checks(run(replace(p, files=fs)))
    assert got["text_snapshot_hash_size_matches"]["evidence"]["mismatched_paths"] == ["references/routing.md"]


def test_direct_body_version_needs_sha256_of_content_equal_to_content_and_package_hash() -> None:
    body = "---\nname: direct\ndescription: d\ntriggers: [t]\n---\nDo.\n"
    v = quality.QVersion(
        id="d",
        account_id=pkg.ACCOUNT,
        skill_name="direct",
        version="1",
        content=body,
        content_hash=pkg.sha(body),
        package_hash=pkg.sha(body),
        source_revision_id=None,
        expected_name="direct",
    )
    assert checks(run(quality.QPackage(v, [], None)))["canonical_package_hash_matches"]["passed"] is True
    bad = replace(v, package_hash="1" * 64)
    assert checks(run(quality.QPackage(bad, [], None)))["canonical_package_hash_matches"]["passed"] is False


def test_baseline_comparison_reports_identity_and_manifest_behaviour_changes() -> None:
    base = pkg.package()
    # current: one modified reference, one added file, the script's MIME type changed
    fs = [replace(f, mime_type="text/plain") if f.path == "scripts/check.py" else f for f in base.files]
    fs.append(pkg.text_file("f-new", "references/new.md", "new\n"))
    v = replace(pkg.version(fs), id="ver-2")
    cur = quality.QPackage(v, fs, pkg.compiled(v, fs))
    cmp = run(cur, baseline=base)["comparison"]
    assert cmp["baseline_version_id"] == "ver-1"
    assert cmp["package_hash_changed"] is True
    assert cmp["resource_manifest_changed"] is True
    assert [f["path"] for f in cmp["files_added"]] == ["references/new.md"]
    assert [f["path"] for f in cmp["files_modified"]] == ["scripts/check.py"] or cmp["files_modified"] == []
    assert cmp["status"] == "review_required"


def test_baseline_identical_package_has_no_static_regression() -> None:
    cmp = run(pkg.package(), baseline=pkg.package())["comparison"]
    assert (cmp["status"], cmp["package_hash_changed"], cmp["resource_manifest_changed"]) == (
        "no_static_regression_detected",
        False,
        False,
    )


def test_a_check_that_passed_on_the_baseline_and_fails_now_is_a_regression() -> None:
    # (a missing description is a compile blocker now, so the regression is the routing metadata)
    cur = replace_front(
        "triggers: [build a web service, add an http route]\ncapabilities: [fastapi, http-api]\n", ""
    )
    v2 = replace(cur.version, id="ver-2")
    cur = quality.QPackage(v2, cur.files, pkg.compiled(v2, cur.files))
    cmp = run(cur, baseline=pkg.package())["comparison"]
    assert cmp["lint_regressions"] == ["routing_metadata_present"]
    assert cmp["status"] == "static_regression_detected"


def test_comparison_is_blocked_when_a_blocker_fails() -> None:
    p = pkg.package()
    cur = replace(p, version=replace(p.version, id="ver-2", package_hash="0" * 64))
    assert run(cur, baseline=pkg.package())["comparison"]["status"] == "blocked"


def logs(n: int, *, outcome: str = "success", triggered: bool = True, version: str = "ver-1", start: int = 0):
    return [
        quality.QLog(
            id=f"log-{start + i:04d}",
            skill_version_id=version,
            created_at=CUTOFF - timedelta(minutes=start + i),
            was_triggered=triggered,
            outcome=outcome,
        )
        for i in range(n)
    ]


def test_telemetry_needs_twenty_triggered_samples_before_suggesting() -> None:
    few = run(pkg.package(), logs=logs(15) + logs(4, outcome="failure", start=100))["telemetry"]
    assert few["status"] == "insufficient" and few["suggestions"] == [] and few["triggered"] == 19


def test_telemetry_suggests_a_category_with_three_or_more_and_ten_percent() -> None:
    sample = logs(17) + logs(3, outcome="failure", start=100) + logs(2, outcome="partial", start=200)
    t = run(pkg.package(), logs=sample)["telemetry"]
    assert t["status"] == "sufficient" and t["triggered"] == 22
    assert [s["category"] for s in t["suggestions"]] == ["failure"]
    s = t["suggestions"][0]
    assert (s["count"], s["denominator"]) == (3, 22)
    assert s["log_ids"] == ["log-0100", "log-0101", "log-0102"]  # newest first
    assert s["fingerprint"] == quality.fingerprint("ver-1", "failure", s["log_ids"])


def test_telemetry_ignores_other_versions_unbound_logs_and_logs_after_the_cutoff() -> None:
    later = [quality.QLog("late", "ver-1", CUTOFF + timedelta(seconds=1), True, "failure")]
    sample = [*logs(25, version="ver-2"), quality.QLog("unbound", None, CUTOFF, True, "failure"), *later]
    t = run(pkg.package(), logs=sample)["telemetry"]
    assert t["considered"] == 0


def test_telemetry_uses_only_the_latest_two_hundred_logs() -> None:
    t = run(pkg.package(), logs=logs(250))["telemetry"]
    assert t["considered"] == 200


def test_bypass_rate_uses_all_considered_logs_as_denominator() -> None:
    sample = logs(20) + logs(5, triggered=False, start=100)
    t = run(pkg.package(), logs=sample)["telemetry"]
    bypass = next(s for s in t["suggestions"] if s["category"] == "bypass")
    assert (bypass["count"], bypass["denominator"]) == (5, 25)


def test_report_holds_no_instruction_resource_or_log_bodies() -> None:
    text = str(run(pkg.package(), logs=logs(20)))
    assert "Write each route handler thin" not in text
    assert "Routes are declared" not in text
