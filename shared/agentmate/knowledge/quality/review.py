"""Faithfulness review (spec/001 K3.8, prior-art §4.8): the pure parts, no I/O.

One question per page: are its claims faithful to the raw documents it cites. The reviewer judges against the
source text, never the excerpts the compiler recorded on its citations (judging a selectively quoting page against
its own selection would validate exactly what makes it wrong). A reviewer that is the compiling model is refused
rather than run: a model cannot find the mistakes its own priors produced. Review never gates, and its status
never claims more coverage than it read: ``clean`` only when every eligible page was examined.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

PROMPT_VERSION = "review-v1"
FindingKind = Literal["unsupported", "overstated", "fabricated_causality", "conflated"]
FINDING_KINDS: tuple[FindingKind, ...] = ("unsupported", "overstated", "fabricated_causality", "conflated")
# queued/running while the job waits or runs; then one verdict. skipped: nothing was reviewed (refused, no reviewer,
# no reviewable page); failed: not one page could be reviewed.
ReviewStatus = Literal["queued", "running", "clean", "partial", "flagged", "failed", "skipped"]
REVIEW_STATUSES: tuple[ReviewStatus, ...] = (
    "queued",
    "running",
    "clean",
    "partial",
    "flagged",
    "failed",
    "skipped",
)
PER_DOCUMENT_CHARS = 8000
MAX_CLAIM_CHARS = 2000
_GENERATED_KINDS = frozenset({"index", "log"})

SYSTEM_PROMPT = """You verify whether a wiki page is faithful to the source documents it cites.

You are given one wiki page and the full text of the source documents it cites. A long document may be cut short;
a document that was cut is marked as such. Your only job is to find claims on the page that the sources do not
support.

Report a finding only when you can point at a specific claim. Use these kinds:
- "unsupported": the sources do not state this.
- "overstated": the sources hedge ("usually", "may", "in most cases") and the page asserts it absolutely, or the
  page strengthens a quantity or a guarantee.
- "fabricated_causality": the page says one thing causes or requires another and the sources never draw that
  link, even if both facts appear separately.
- "conflated": the page merges the conclusions of two sources into a statement neither makes.

Rules:
1. Judge only against the source text given. A claim you believe true from your own knowledge that the sources do
   not support is "unsupported". If a document is marked truncated, do not report a claim as unsupported merely
   because the visible part does not mention it; report it only if the visible text contradicts it.
2. Do not report style, structure, wording, ordering or completeness. A terse accurate page has no findings.
3. Do not report missing citations; that is checked elsewhere.
4. Quote the claim as it appears on the page. Keep "detail" to one or two sentences saying what the sources state.
5. If every claim is supported, return an empty findings array. That is a normal outcome: never invent findings.

Reply with JSON only:
{"findings":[{"kind":"overstated","claim":"exact text from the page","detail":"what the sources actually say"}]}"""


@dataclass(frozen=True, slots=True)
class PageCitation:
    document_path: str
    claim: str = ""


@dataclass(frozen=True, slots=True)
class ReviewPage:
    path: str
    kind: str
    title: str
    content: str
    citations: tuple[PageCitation, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    page_path: str
    kind: FindingKind
    claim: str
    detail: str


class ReplyRejected(Exception):
    """The reviewer's reply does not answer the question; the page counts as not reviewed."""


def select_pages(pages: Sequence[ReviewPage], limit: int) -> tuple[list[ReviewPage], list[ReviewPage]]:
    """(eligible, examined): content pages by citation count (most claims first), path breaking ties so the
    selection is reproducible; the examined ones are the first ``limit``."""
    eligible = sorted(
        (p for p in pages if p.kind not in _GENERATED_KINDS), key=lambda p: (-len(p.citations), p.path)
    )
    return eligible, eligible[: max(0, limit)]


def cited_documents(page: ReviewPage, documents: Mapping[str, str]) -> list[tuple[str, str]]:
    """(path, text) of each distinct document the page cites that the build's revision holds, by path."""
    paths = sorted({c.document_path for c in page.citations})
    return [(p, documents[p]) for p in paths if p in documents]


def user_prompt(
    page: ReviewPage, sources: Sequence[tuple[str, str]], per_document_chars: int = PER_DOCUMENT_CHARS
) -> str:
    parts = [f"# Wiki page under review\n\npath: {page.path}\n"]
    if page.title:
        parts.append(f"title: {page.title}\n")
    parts.append(f"\n---\n{page.content}\n---\n\n# Source documents this page cites (full text)\n\n")
    if not sources:
        parts.append("(none: the page cites no document of this revision)\n")
    for path, text in sources:
        shown = text[:per_document_chars]
        parts.append(f"## {path}\n\n{shown}")
        if len(text) > len(shown):
            # An unmarked cut makes a supported claim look unsupported: the sentence backing it was simply not sent.
            parts.append("\n\n[document truncated here: the rest was not provided]")
        parts.append("\n\n")
    claims = [f"- {c.claim.strip()} [{c.document_path}]" for c in page.citations if c.claim.strip()]
    if claims:
        parts.append(
            "# Claims the compiler recorded (its own account, not evidence)\n\n" + "\n".join(claims) + "\n"
        )
    return "".join(parts)


def parse_reply(page_path: str, text: str) -> list[Finding]:
    """Validated findings of one reply. A reply without a findings array, or whose findings are all unusable,
    is rejected: counting it as a clean page would report the opposite of (or more than) what the reviewer said."""
    body = text.strip()
    if body.startswith("```"):
        body = body.removeprefix("```json").removeprefix("```")
        body = body[: body.rfind("```")] if "```" in body else body
    try:
        data: Any = json.loads(body)
    except ValueError as exc:
        raise ReplyRejected("the reviewer's reply is not JSON") from exc
    raw = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ReplyRejected('the reviewer\'s reply has no "findings" array')
    out: list[Finding] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        kind = str(item.get("kind", "")).strip().lower()
        claim = str(item.get("claim", "")).strip()
        # An unknown kind is dropped, not coerced into a neighbour; a claim that cannot be found is not actionable.
        if kind not in FINDING_KINDS or not claim:
            continue
        out.append(
            Finding(
                page_path,
                kind,
                claim[:MAX_CLAIM_CHARS],
                str(item.get("detail", "")).strip()[:MAX_CLAIM_CHARS],
            )
        )
    if raw and not out:
        raise ReplyRejected(f"the reviewer returned {len(raw)} finding(s), none of them usable")
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    status: ReviewStatus
    note: str


def outcome(
    *, eligible: int, attempted: int, succeeded: int, findings: int, first_failure: str | None
) -> Outcome:
    """failed > flagged > partial > clean: a status never claims more coverage than the review achieved."""
    failures = attempted - succeeded
    failed_note = f"; {failures} page(s) could not be reviewed ({first_failure})" if failures else ""
    if eligible == 0:
        return Outcome("skipped", "this build has no reviewable page (only generated pages)")
    if succeeded == 0:
        return Outcome("failed", f"none of the {attempted} reviewer call(s) gave a verdict ({first_failure})")
    if findings:
        return Outcome(
            "flagged", f"{findings} finding(s) across {succeeded} of {eligible} pages examined{failed_note}"
        )
    if succeeded < eligible:
        capped = f"; capped at {attempted} pages per review" if attempted < eligible else ""
        return Outcome(
            "partial",
            f"examined {succeeded} of {eligible} pages, no findings among them{capped}"
            f"{failed_note}; the unexamined pages carry no verdict",
        )
    return Outcome("clean", f"all {eligible} pages examined, no findings")


def standing_warning(review: Mapping[str, Any] | None) -> str:
    """The unconditional warning every compile and build carries, worded for what this build received.

    It never goes silent, whatever the configuration: better configuration must not reduce what the caller is
    told about what was verified. check is the only gate; review is advisory and model-judged.
    """
    head = "check is the only gate a build passes before serving; review is advisory, model-judged and never blocks"
    if review is None:
        return (
            f"{head}. This build has not been reviewed: a review is queued when it is activated and a reviewer "
            "other than its compiling model is configured (GET /api/knowledge/builds/{id}/review says what it "
            "covered)."
        )
    status = review.get("status")
    examined, total = review.get("pages_examined", 0), review.get("pages_total", 0)
    independence = review.get("reviewer_independence") or "unavailable"
    if status in ("queued", "running"):
        return f"{head}. Review is {status}: nothing has been reviewed yet."
    if status == "skipped":
        return f"{head}. Nothing was reviewed: {review.get('note') or 'review was skipped'}."
    if status == "failed":
        return (
            f"{head}. Review failed; no page received a verdict: {review.get('note') or ''}".rstrip(": ")
            + "."
        )
    unread = total - examined
    return (
        f"{head}. Review ({status}, reviewer independence {independence}) examined {examined} of {total} "
        f"content pages against their cited source text"
        + (f"; {unread} page(s) were not reviewed and carry no verdict" if unread else "")
        + "; links, index and pages outside the review carry no model verdict, and a clean review is one "
        "model's opinion, not proof."
    )
