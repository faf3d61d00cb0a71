"""The loopback fake chat provider (``tests.fakes.chat_provider``) acting as a reviewer.

A request whose system message is the review prompt (``agentmate.knowledge.quality.review.SYSTEM_PROMPT``) is
judged deterministically against the source text in the prompt, sentence by sentence:

- a sentence found (whitespace- and case-insensitively) in a cited source's text is supported, and so is the
  fake compiler's generated overview sentence ("This wiki has 2 topic pages."), so the fake compiler's own wiki
  reviews ``clean``;
- one with "always"/"never" whose hedged form ("usually"/"rarely") is in a source is ``overstated``;
- one with "because" that no source states is ``fabricated_causality``;
- one joined by " and " whose halves come from two different sources is ``conflated``;
- anything else is ``unsupported``.

So a finding appears only when the reviewer really received the raw document text (not the compiler's excerpt).
Other requests fall through to the compiler behaviours; ``push({"kind": "review_reply", "text": ...})`` answers
the next call with that text verbatim, and the provider's ``status``/``drop``/``truncate`` behaviours apply too.

Run standalone (one server plays both roles, so review can be tried locally):
``python -m tests.fakes.reviewer --port 26035`` (or ``python -m tests.fakes.chat_provider``, the same server), then
``COMPILER_BASE_URL=http://127.0.0.1:26035/v1 REVIEWER_BASE_URL=http://127.0.0.1:26035/v1 REVIEWER_MODEL=fake-reviewer``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.chat_provider import OVERVIEW_SENTENCE, FakeChatProvider, serve

REVIEW_MARKER = "You verify whether a wiki page is faithful"
_PAGE = re.compile(r"# Wiki page under review\n.*?\n---\n(.*?)\n---\n", re.DOTALL)
# A source is "## <path>" then its text, up to the next source or the claims. A path has a "/" or a "." and no space,
# so a document's own "## Card payments" sub-heading stays inside its text (it used to cut the text short).
_SOURCE_PATH = r"[^\s/]*[/.]\S*"
_SOURCE = re.compile(
    rf"^## ({_SOURCE_PATH})\n\n(.*?)(?=\n\n## {_SOURCE_PATH}\n\n|\n\n# Claims|\Z)", re.DOTALL | re.MULTILINE
)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("\n", " ").split()).rstrip(".")


def _sentences(body: str) -> list[str]:
    out = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "Source:", "---")) or line.startswith("- ["):
            continue
        out += [s.strip() for s in re.split(r"(?<=\.)\s+", line) if s.strip()]
    return out


def judge(prompt: str) -> dict[str, Any]:
    page = _PAGE.search(prompt)
    sources = {
        m.group(1): _norm(m.group(2)) for m in _SOURCE.finditer(prompt.split("# Source documents", 1)[-1])
    }
    findings = []
    for sentence in _sentences(page.group(1) if page else ""):
        s = _norm(sentence)
        if any(s in text for text in sources.values()) or OVERVIEW_SENTENCE.fullmatch(sentence):
            continue
        hedged = s.replace("always", "usually").replace("never", "rarely")
        if hedged != s and any(hedged in text for text in sources.values()):
            findings.append({"kind": "overstated", "claim": sentence, "detail": "the source hedges this"})
        elif " because " in s:
            findings.append(
                {
                    "kind": "fabricated_causality",
                    "claim": sentence,
                    "detail": "no source draws this causal link",
                }
            )
        elif " and " in s and _halves_from_two_sources(s, sources):
            findings.append(
                {
                    "kind": "conflated",
                    "claim": sentence,
                    "detail": "two sources' statements merged into one neither makes",
                }
            )
        else:
            findings.append({"kind": "unsupported", "claim": sentence, "detail": "no cited source says this"})
    return {"findings": findings}


def _halves_from_two_sources(s: str, sources: dict[str, str]) -> bool:
    left, right = s.split(" and ", 1)
    homes = [{p for p, t in sources.items() if part.strip() in t} for part in (left, right)]
    return bool(homes[0]) and bool(homes[1]) and homes[0] != homes[1]


class FakeReviewer(FakeChatProvider):
    """``with FakeReviewer() as fake:`` a loopback provider that compiles and reviews."""

    def answer(self, handler: Any, body: dict[str, Any]) -> None:
        messages = body.get("messages", [])
        system = messages[0].get("content", "") if messages else ""
        if REVIEW_MARKER not in system:
            super().answer(handler, body)
            return
        with self._lock:
            spec = self.behaviours[0] if self.behaviours else {"kind": "review"}
            if spec["kind"] == "review_reply":
                self.behaviours.popleft()
        if spec["kind"] not in ("review", "review_reply"):
            super().answer(handler, body)  # status / drop / slow / truncate ... from the base provider
            return
        prompt = messages[-1].get("content", "")
        text = spec["text"] if spec["kind"] == "review_reply" else json.dumps(judge(prompt))
        with self._lock:
            self.requests.append(
                {
                    "body": body,
                    "behaviour": spec["kind"],
                    "authorization": handler.headers.get("Authorization"),
                }
            )
        usage = {"prompt_tokens": (len(prompt) + 3) // 4, "completion_tokens": (len(text) + 3) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        handler._send(
            200,
            {
                "id": "fake-review",
                "object": "chat.completion",
                "model": body.get("model", "fake"),
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                ],
                "usage": usage,
            },
        )


def main() -> None:
    serve(FakeReviewer, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
