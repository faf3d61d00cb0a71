"""A self-contained deployment: GET /api/guide serves the agent guide, GET /api/docs/<name> every doc it links,
GET /api/llms.txt indexes them, the OpenAPI and the MCP endpoints; /api/schema gives the item shape of array fields,
says which scopes grant nothing yet and describes every write model the guide's flows fill in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin

from agentmate.core.mcp_modules import MCP_MODULES
from agentmate.system.service import DOCS_DIR, GUIDE_FILE, SCHEMA_MODELS, SERVED_DOCS

ROOT = Path(__file__).resolve().parents[2]


def test_the_served_guide_is_the_repository_guide():
    # The copy is package data (it ships in the Lambda layer); `make guide` refreshes it.
    assert GUIDE_FILE.read_bytes() == (ROOT / "docs" / "agent-integration.md").read_bytes(), (
        "run `make guide`"
    )


def test_the_served_docs_are_the_repository_docs():
    for name in SERVED_DOCS:
        assert (DOCS_DIR / name).read_bytes() == (ROOT / "docs" / name).read_bytes(), (
            f"{name}: run `make guide`"
        )
    # the copies are exactly the served ones (nothing else ships in the layer)
    assert sorted(p.name for p in DOCS_DIR.iterdir()) == sorted(SERVED_DOCS)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert all(f"docs/{name}" in makefile for name in SERVED_DOCS), "add the doc to `make guide`"


MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links(markdown: str) -> list[str]:
    """Every Markdown link target outside fenced code blocks."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return MD_LINK.findall(prose)


def test_every_link_in_the_served_guide_resolves_on_the_deployment(client):
    # An agent reads the guide at /api/guide: a relative link resolves against that URL, an absolute path against
    # the deployment; both must answer 200 (issue 23 item 1: context-pack.md and knowledge-wiki.md were 404).
    guide = client.get("/api/guide").text
    checked = []
    for target in _links(guide):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path = target.split("#", 1)[0]
        if not path:  # an anchor inside the guide: a heading must make it
            continue
        url = path if path.startswith("/") else "/api/" + path
        assert client.get(url).status_code == 200, f"the guide links {target} → GET {url}"
        checked.append(url)
    assert {f"/api/docs/{name}" for name in SERVED_DOCS} <= set(checked)
    # and the guide names no repository doc it does not link to a served path
    prose = re.sub(r"^```.*?^```", "", guide, flags=re.M | re.S)
    repository_docs = {p.name for p in (ROOT / "docs").glob("*.md")} - {"agent-integration.md"}
    for mention in set(re.findall(r"docs/([a-z-]+\.md)", prose)) & repository_docs:
        assert mention in SERVED_DOCS, (
            f"the guide mentions docs/{mention}, which the deployment does not serve"
        )


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, flags=re.MULTILINE)}


def test_every_link_in_every_served_doc_resolves_on_the_deployment(client):
    # A served doc is read at /api/docs/<name>: a relative link resolves against that URL (so `benchmarks.md` from
    # context-pack.md meant /api/docs/benchmarks.md, a 404: issue 23's first-time-agent trial), an absolute path
    # against the deployment, an anchor against the doc's own headings.
    broken = []
    for name in SERVED_DOCS:
        here = f"/api/docs/{name}"
        text = client.get(here).text
        for target in _links(text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = target.partition("#")
            if not path:
                if fragment not in _anchors(text):
                    broken.append(f"{name}: #{fragment} names no heading")
                continue
            url = urljoin(f"http://deployment{here}", path).removeprefix("http://deployment")
            if client.get(url).status_code != 200:
                broken.append(f"{name} links {target} → GET {url}")
    assert not broken, broken


def test_the_readme_names_exactly_the_served_docs():
    # The README tells a reader which docs a deployment serves (agent-bootstrap.md and deploy.md were tried at
    # /api/docs/ and were 404); the list is SERVED_DOCS, and the others are named as repository docs.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    served = readme.split("A deployment serves the docs an agent needs", 1)[1].split("plus the guide", 1)[0]
    assert sorted(re.findall(r"`([a-z-]+\.md)`", served)) == sorted(SERVED_DOCS)
    repository = readme.split("plus the guide", 1)[1].split("read them in this repository", 1)[0]
    unserved = {p.name for p in (ROOT / "docs").glob("*.md")} - set(SERVED_DOCS) - {"agent-integration.md"}
    assert set(re.findall(r"`([a-z-]+\.md)`", repository)) == unserved


def test_the_readme_says_what_each_202_returns(client):
    # "answers 202 with a job" was not what POST /api/knowledge/compile returns ({build: {job_id…}, queued: true}):
    # every route with a 202 in the OpenAPI has a row naming each top-level field of its 202 body.
    doc = client.get("/api/openapi.json").json()
    schemas = doc["components"]["schemas"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("### What a 202 returns", 1)[1].split("\n\n", 3)[2]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(POST [^`]+)`[^|]*\|([^|]+)\|", table, re.M)}
    routes = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            response = op.get("responses", {}).get("202") if isinstance(op, dict) else None
            if not response:
                continue
            route = f"{method.upper()} {path}".replace("{build_id}", "{id}").replace("{source_id}", "{id}")
            routes.append(route)
            assert route in rows, f"the README's 202 table has no row for {route}"
            ref = response["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            named = set(re.findall(r'"?([a-z_]+)"?(?=[:,}\]]|$)', rows[route].replace(" ", "")))
            missing = set(schemas[ref]["properties"]) - named
            if ref == "Review":  # the review itself: its key fields, the rest as "…"
                missing &= {"id", "status", "job_id", "build_id"}
            assert not missing, f"{route}: the README's 202 body does not name {sorted(missing)}"
    assert len(routes) == len(rows), sorted(set(rows) - set(routes))


def test_every_public_address_in_the_bootstrap_prompt_answers_without_a_key(client):
    block = (ROOT / "docs" / "agent-bootstrap.md").read_text(encoding="utf-8").split("```text", 1)[1]
    paths = set(re.findall(r"GET \{base\}(/api/[a-z./]+[a-z])", block))
    assert {"/api/health", "/api/guide", "/api/schema", "/api/llms.txt"} <= paths
    for path in paths:
        assert client.get(path).status_code == 200, path


def test_a_served_doc_is_markdown_without_a_key_and_an_unknown_one_names_the_served(client):
    for name in SERVED_DOCS:
        r = client.get(f"/api/docs/{name}")
        assert r.status_code == 200 and r.headers["content-type"] == "text/markdown; charset=utf-8"
        assert r.text == (ROOT / "docs" / name).read_text(encoding="utf-8")
    for name in ("deploy.md", "context-pack", "agent-integration.md"):
        r = client.get(f"/api/docs/{name}")
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", name
        assert r.json()["errors"] == [
            {"field": "name", "message": "not a served document", "allowed": sorted(SERVED_DOCS)}
        ]
    # a path out of the served directory is no document either (no file is read by a client-given path)
    for path in ("/api/docs/..%2Fagent-integration.md", "/api/docs/%2e%2e", "/api/docs/.."):
        assert client.get(path).status_code == 404, path


def test_the_knowledge_wiki_doc_no_longer_calls_review_and_lint_unbuilt():
    text = (DOCS_DIR / "knowledge-wiki.md").read_text(encoding="utf-8")
    assert "issue 15" not in text and "not done yet" not in text.split("## Not done yet", 1)[-1].lower()
    not_done = text.split("## Not done yet", 1)[-1]
    assert "Review" not in not_done and "lint" not in not_done
    assert "POST /api/knowledge/wiki/lint" in text and "POST /api/knowledge/builds/{id}/review" in text


def test_the_knowledge_wiki_doc_spells_out_rollback_and_the_review_read(client):
    # issue 23 trial: rollback (activate an older build) had no exact request, and the review read during a
    # re-review was undocumented; the documented request and fields are the OpenAPI's.
    text = (DOCS_DIR / "knowledge-wiki.md").read_text(encoding="utf-8")
    block = text.split("**Activate and roll back.**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert (
        'curl -s -X POST "$BASE/api/knowledge/builds/$PREVIOUS_BUILD_ID/activate" -H "X-Api-Key: $KEY"'
        in block
    )
    doc = client.get("/api/openapi.json").json()
    activate = doc["paths"]["/api/knowledge/builds/{build_id}/activate"]["post"]
    assert "requestBody" not in activate  # "no body", as the doc says
    result = doc["components"]["schemas"]["ActivateResult"]["properties"]
    assert set(re.findall(r'"([a-z_]+)":', block)) == set(result)
    review = doc["components"]["schemas"]["BuildReview"]["properties"]
    read = text.split("`GET /api/knowledge/builds/{id}/review` returns `{", 1)[1].split("}`", 1)[0]
    assert {f.strip() for f in read.split(",")} == set(review)
    assert "the read shows the\nprevious verdict and its findings" in text


def test_the_guide_is_served_as_markdown_without_a_key(client):
    r = client.get("/api/guide")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/markdown; charset=utf-8"
    assert r.text == (ROOT / "docs" / "agent-integration.md").read_text(encoding="utf-8")
    assert "### 3.7.1 After a crash: find your session again" in r.text


def test_llms_txt_lists_the_guide_the_openapi_and_every_mcp_endpoint(client):
    r = client.get("/api/llms.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    # llms.txt: an H1 title, a blockquote summary, then H2 sections of "- [name](url): notes" links
    assert text.startswith("# Agentmate\n\n> ")
    links = dict(re.findall(r"^- \[([^\]]+)\]\(([^)]+)\)", text, flags=re.MULTILINE))
    base = "http://127.0.0.1:26001"
    assert links["Agent integration guide"] == f"{base}/api/guide"
    for name in SERVED_DOCS:
        assert links[name] == f"{base}/api/docs/{name}"
    assert links["OpenAPI document"] == f"{base}/api/openapi.json"
    assert links["/mcp"] == f"{base}/mcp"
    for module in MCP_MODULES:
        assert links[f"/mcp/{module}"] == f"{base}/mcp/{module}"
    assert re.findall(r"^## (.+)$", text, flags=re.MULTILINE) == ["Docs", "MCP"]
    # every linked path answers
    for url in links.values():
        path = url.removeprefix(base)
        if path.startswith("/api/"):
            assert client.get(path).status_code == 200, path


def test_the_schema_gives_the_evidence_item_shape_and_calls_no_scope_unused(client):
    body = client.get("/api/schema").json()
    evidence = body["models"]["memory_entry"]["fields"]["evidence"]
    assert evidence["type"] == "array" and evidence["maxItems"] == 50
    assert evidence["items"]["required"] == ["source_type", "source_id"]
    assert set(evidence["items"]["fields"]) == {"source_type", "source_id", "excerpt", "metadata"}
    notes = {s["scope"]: s.get("note") for s in body["scopes"]}
    assert notes["knowledge:r"] is None and notes["knowledge:rw"] is None  # the knowledge registry uses them
    assert notes["memory:r"] is None


def _body_models(doc: dict) -> set[tuple[str, str]]:
    """(route, schema name) of every JSON request body an API key can send (auth and admin take a JWT; OAuth's
    bodies are the protocol's: a client's registration metadata, the device approval with a user's JWT)."""
    out = set()
    for path, item in doc["paths"].items():
        if path.startswith(("/api/auth", "/api/admin", "/api/oauth")):
            continue
        for method, op in item.items():
            body = (
                op.get("requestBody", {}).get("content", {}).get("application/json")
                if isinstance(op, dict)
                else None
            )
            if body:
                for ref in re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(body["schema"])):
                    out.add((f"{method.upper()} {path}", ref))
    return out


def test_the_schema_describes_every_write_model_an_api_key_sends(client):
    # The bootstrap says /api/schema lists every allowed value: every request body of a key's routes is there
    # (issue 23 item 9: skill sources, snapshots, compile, signals and lint were missing).
    described = {target.split(":")[1] for target in SCHEMA_MODELS.values()}
    missing = sorted(
        f"{route} {name}"
        for route, name in _body_models(client.get("/api/openapi.json").json())
        if name not in described
    )
    assert not missing, missing
    models = client.get("/api/schema").json()["models"]
    assert set(SCHEMA_MODELS) <= set(models)
    snapshot = models["skill_snapshot"]["fields"]["files"]
    assert snapshot["type"] == "array" and set(snapshot["items"]["fields"]) >= {"path", "content"}
    assert models["knowledge_signal"]["required"] and "enum" in models["knowledge_signal"]["fields"]["signal"]
    assert models["knowledge_compile"]["fields"]["mode"]["enum"] == ["full", "incremental"]


def test_the_guide_lists_every_schema_model():
    guide = (ROOT / "docs" / "agent-integration.md").read_text(encoding="utf-8")
    listing = guide.split("\nModels: ", 1)[1].split("Each says", 1)[0]
    assert re.findall(r"`([a-z_]+)`", listing) == list(SCHEMA_MODELS)
