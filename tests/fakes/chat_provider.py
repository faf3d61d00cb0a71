"""A fake OpenAI-compatible chat provider: a real HTTP server on loopback (``POST /v1/chat/completions``).

It compiles deterministically from the documents in the prompt (the format of ``agentmate.knowledge.wiki.prompt``):
one ``summary`` page per document at ``wiki/<path with / as ->.md`` citing it and linking (``references``) to the
pages of the documents it links to, plus ``wiki/overview.md`` citing the first document and linking to every page.
An incremental prompt gets only its REWRITE PAGES back (a page whose document is gone is listed in ``deleted``)
plus pages for documents that are new. Usage counts ~4 characters per token, so output tokens track output size.

Behaviours are queued one per request (``provider.push(...)``, or ``POST /_control`` from another process) and
fall back to ``compile``: ``slow`` (seconds), ``status`` (code, retry_after), ``drop`` (close the connection
without an answer), ``garbage`` (a 200 whose body is cut JSON), ``truncate`` (finish_reason=length mid-page), ``invalid_json``, ``add_pages`` (pages and deleted
entries appended as given), ``reserved_path``,
``missing_citation``, ``outside_link``, ``collide`` (two titles slugged onto one path), ``bad_kind``,
``bad_link_type``, ``empty_page``, ``uncited``, ``oversize`` (chars), ``few_pages`` (keep n), ``no_pages``,
``delete_existing`` (incremental: delete every existing page), ``skip_rewrite`` / ``rewrite_extra``
(incremental: omit a scheduled page / rewrite one outside the plan), ``hold`` (keep the reply back: ``held`` is set
when the request arrives; the reply, a compile, goes out once ``release`` is set; if the client closes the
connection first, ``hung_up`` is set and nothing is sent).

Hostile replies (issue 20): ``status`` takes any ``retry_after`` header text and an optional raw ``body``; any
compiling behaviour takes ``usage`` (fields replacing the counted usage, any JSON value); ``huge`` streams a 200
of ``bytes`` bytes (``chunked``: without Content-Length) and records in ``huge_sent`` how many bytes it managed
to write before the client hung up.

Run standalone for the local runtime: ``python -m tests.fakes.chat_provider --port 26035`` and set
``COMPILER_BASE_URL=http://127.0.0.1:26035/v1`` (and ``REVIEWER_BASE_URL``, ``REVIEWER_MODEL``: the command line
serves ``tests.fakes.reviewer.FakeReviewer``, which answers a review request as the reviewer and every other
request as this compiler; ``python -m tests.fakes.reviewer`` is the same server).
"""

from __future__ import annotations

import argparse
import json
import re
import select
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_DOC = re.compile(r'<<<DOCUMENT path="(.*?)">>>\n(.*?)\n?<<<END DOCUMENT>>>', re.DOTALL)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s#?]+)[^)]*\)")
_HEADING = re.compile(r"^#\s+(.+)$", re.MULTILINE)
OVERVIEW = "wiki/overview.md"
# The one sentence of the generated overview (the reviewer fake counts it as supported: it describes the wiki).
OVERVIEW_SENTENCE = re.compile(r"This wiki has \d+ topic pages\.")


def page_path(doc_path: str) -> str:
    stem = doc_path.rsplit(".", 1)[0] if "." in doc_path.rsplit("/", 1)[-1] else doc_path
    return "wiki/" + re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") + ".md"


def _section(prompt: str, title: str) -> list[str]:
    m = re.search(rf"^{re.escape(title)}.*?\n((?:- .*\n?)*)", prompt, re.MULTILINE)
    if not m:
        return []
    return [line[2:].strip() for line in m.group(1).splitlines() if line.startswith("- ")]


def _resolve(base: str, target: str) -> str:
    parts = base.split("/")[:-1]
    for seg in target.split("/"):
        if seg == "..":
            if parts:
                parts.pop()
        elif seg not in ("", "."):
            parts.append(seg)
    return "/".join(parts)


def _summary(doc_path: str, text: str, known_pages: set[str]) -> dict[str, Any]:
    heading = _HEADING.search(text)
    title = heading.group(1).strip() if heading else doc_path.rsplit("/", 1)[-1]
    prose = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    body = " ".join(prose)[:400] or title
    links = []
    for target in dict.fromkeys(_LINK.findall(text)):
        if "://" in target:
            continue
        linked = page_path(_resolve(doc_path, target))
        if linked in known_pages and linked != page_path(doc_path):
            links.append({"target": linked, "type": "references"})
    return {
        "path": page_path(doc_path),
        "kind": "summary",
        "title": title,
        "content": f"# {title}\n\n{body}\n\nSource: {doc_path}\n",
        "citations": [{"path": doc_path, "heading_path": title, "claim": body[:120], "excerpt": body[:80]}],
        "links": links,
    }


def _overview(first_doc: str, pages: list[str]) -> dict[str, Any]:
    listing = "\n".join(f"- [{p}]({p.removeprefix('wiki/')})" for p in pages)
    return {
        "path": OVERVIEW,
        "kind": "overview",
        "title": "Overview",
        "content": f"# Overview\n\nThis wiki has {len(pages)} topic pages.\n\n{listing}\n",
        "citations": [{"path": first_doc, "claim": "overview of the knowledge base"}],
        "links": [{"target": p, "type": "references"} for p in pages],
    }


def compile_prompt(prompt: str) -> dict[str, Any]:
    """The deterministic wiki for one prompt (the ``compile`` behaviour)."""
    docs = {m.group(1): m.group(2) for m in _DOC.finditer(prompt)}
    if "mode: incremental" not in prompt:
        known = {page_path(p) for p in docs}
        pages = [_summary(p, t, known) for p, t in sorted(docs.items())]
        if docs:
            pages.append(_overview(sorted(docs)[0], [p["path"] for p in pages]))
        return {"pages": pages}
    existing = _section(prompt, "EXISTING PAGES")
    rewrite = _section(prompt, "REWRITE PAGES")
    changed = {
        line.rsplit(" (", 1)[0]: line.rsplit(" (", 1)[1].rstrip(")")
        for line in _section(prompt, "CHANGED DOCUMENTS")
    }
    removed = {p for p, how in changed.items() if how == "removed"}
    by_page = {page_path(p): p for p in docs}
    deleted = [p for p in rewrite if p != OVERVIEW and p not in by_page]
    deleted += [page_path(p) for p in removed if page_path(p) in existing and page_path(p) not in deleted]
    known = (set(existing) | set(by_page)) - set(deleted)
    pages = [_summary(by_page[p], docs[by_page[p]], known) for p in rewrite if p in by_page]
    pages += [
        _summary(d, docs[d], known)
        for d, how in sorted(changed.items())
        if how == "added" and page_path(d) not in rewrite
    ]
    if OVERVIEW in rewrite:
        topics = sorted(p for p in known if p != OVERVIEW)
        first = sorted(docs)[0] if docs else ""
        pages.append(_overview(first, topics))
    return {"pages": pages, "deleted": sorted(set(deleted))}


def _mutate(kind: str, spec: dict[str, Any], out: dict[str, Any], prompt: str) -> dict[str, Any]:
    pages: list[dict[str, Any]] = out["pages"]
    first = pages[0] if pages else None
    if kind == "add_pages":  # a hostile provider's own pages, appended as given
        pages.extend(spec.get("pages", []))
        out["deleted"] = [*out.get("deleted", []), *spec.get("deleted", [])]
    elif kind == "reserved_path":
        pages.append(
            {
                "path": "wiki/index.md",
                "kind": "index",
                "title": "My index",
                "content": "# Index\n",
                "citations": [],
                "links": [],
            }
        )
    elif kind == "missing_citation" and first:
        first["citations"].append({"path": "docs/does-not-exist.md", "claim": "invented"})
    elif kind == "outside_link" and first:
        first["links"].append({"target": "wiki/outside.md", "type": "references"})
    elif kind == "collide" and first:
        pages.append({**first, "title": first["title"] + "!", "citations": list(first["citations"])})
    elif kind == "bad_kind" and first:
        first["kind"] = "essay"
    elif kind == "bad_link_type" and first:
        first["links"].append({"target": first["path"], "type": "likes"})
    elif kind == "empty_page" and first:
        first["content"] = "   "
    elif kind == "uncited" and first:
        first["citations"] = []
    elif kind == "oversize" and first:
        first["content"] = "x" * int(spec.get("chars", 25_000))
    elif kind == "few_pages":
        out["pages"] = pages[: int(spec.get("keep", 1))]
    elif kind == "no_pages":
        out["pages"] = []
    elif kind == "delete_existing":
        out["deleted"] = _section(prompt, "EXISTING PAGES")
        out["pages"] = [p for p in pages if p["path"] not in out["deleted"]][:1]
    elif kind == "skip_rewrite":
        out["pages"] = pages[1:]
    elif kind == "rewrite_extra":
        extra = [p for p in _section(prompt, "EXISTING PAGES") if p not in _section(prompt, "REWRITE PAGES")]
        if extra:
            pages.append(
                {
                    "path": extra[0],
                    "kind": "summary",
                    "title": "Rewritten anyway",
                    "content": "# Rewritten anyway\n",
                    "citations": first["citations"] if first else [],
                    "links": [],
                }
            )
    return out


class FakeChatProvider:
    """``with FakeChatProvider() as fake:`` serves on ``fake.base_url`` until the block ends."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.behaviours: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.usage: list[dict[str, Any]] = []
        self.huge_sent: list[int] = []
        self.held = threading.Event()
        self.release = threading.Event()
        self.hung_up = threading.Event()
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = (
                True  # headers and body are two writes: no delayed-ACK stall between them
            )

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/_control":
                    provider.push(*json.loads(raw or b"{}").get("behaviours", []))
                    self._send(200, {"queued": len(provider.behaviours)})
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "no such endpoint"}})
                    return
                provider.answer(self, json.loads(raw))

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *behaviours: str | dict[str, Any]) -> None:
        with self._lock:
            for b in behaviours:
                self.behaviours.append({"kind": b} if isinstance(b, str) else dict(b))

    def _next(self) -> dict[str, Any]:
        with self._lock:
            return self.behaviours.popleft() if self.behaviours else {"kind": "compile"}

    def answer(self, handler: Any, body: dict[str, Any]) -> None:
        spec = self._next()
        kind = spec["kind"]
        prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
        with self._lock:
            self.requests.append(
                {"body": body, "behaviour": kind, "authorization": handler.headers.get("Authorization")}
            )
        if kind == "slow":
            time.sleep(float(spec.get("seconds", 1.0)))
        if kind == "hold" and not self._hold(handler.connection):
            return
        if kind == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "status":
            code = int(spec.get("code", 500))
            headers = {"Retry-After": str(spec["retry_after"])} if "retry_after" in spec else None
            body_out = (
                spec["body"].encode()
                if "body" in spec
                else {"error": {"message": f"fake provider says {code}"}}
            )
            handler._send(code, body_out, headers)
            return
        if kind == "huge":
            self._huge(handler, int(spec["bytes"]), bool(spec.get("chunked")))
            return
        if kind == "garbage":
            handler._send(200, b'{"choices": [{"message": ')
            return
        text = json.dumps(_mutate(kind, spec, compile_prompt(prompt), prompt), ensure_ascii=False)
        finish = "stop"
        if kind == "truncate":
            text, finish = text[: max(1, len(text) // 2)], "length"
        elif kind == "invalid_json":
            text = text[: max(1, len(text) // 2)]
        usage = {"prompt_tokens": (len(prompt) + 3) // 4, "completion_tokens": (len(text) + 3) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage.update(spec.get("usage", {}))
        with self._lock:
            self.usage.append(usage)
        handler._send(
            200,
            {
                "id": "fake-1",
                "object": "chat.completion",
                "model": body.get("model", "fake"),
                "choices": [
                    {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}
                ],
                "usage": usage,
            },
        )

    def _hold(self, conn: socket.socket) -> bool:
        """Keep the reply back until ``release`` (True) or until the client hangs up (False, ``hung_up`` set)."""
        self.held.set()
        while not self.release.is_set():
            readable, _, _ = select.select([conn], [], [], 0.05)
            try:
                gone = bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
            except OSError:  # reset by the client
                gone = True
            if gone:
                self.hung_up.set()
                return False
        return True

    def _huge(self, handler: Any, size: int, chunked: bool) -> None:
        """A 200 whose body (the start of a chat completion, then padding) is ``size`` bytes, written 64 KiB at a
        time until done or until the client hangs up."""
        head = b'{"choices": [{"finish_reason": "stop", "message": {"content": "'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(size))
        handler.end_headers()
        sent, block = 0, b"x" * 65536
        handler.close_connection = True
        try:
            while sent < size:
                piece = head if sent == 0 else block[: min(len(block), size - sent)]
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            if chunked:
                handler.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client stopped reading and closed the connection
            pass
        with self._lock:
            self.huge_sent.append(sent)

    def __enter__(self) -> FakeChatProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def serve(provider_class: type[FakeChatProvider], description: str) -> None:
    """Run ``provider_class`` on ``--port`` until interrupted (the command line of both fakes)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=26035)
    args = parser.parse_args()
    with provider_class(port=args.port) as fake:
        print(
            f"fake chat provider (compiler and reviewer) on {fake.base_url} "
            f"(COMPILER_BASE_URL={fake.base_url}, REVIEWER_BASE_URL={fake.base_url})",
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


def main() -> None:
    """The command line answers both roles: the reviewer fake compiles like this one and also reviews."""
    from tests.fakes.reviewer import FakeReviewer

    serve(FakeReviewer, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
