"""The MCP container's shape: template.yaml's McpFunction and functions/mcp/Dockerfile agree (the image, the port
the Lambda Web Adapter forwards to, the adapter installed as an extension, the ASGI app uvicorn serves, the
Python version), read as data; `sam validate` cannot see across the two files."""

from __future__ import annotations

import importlib
import json
import re
import shlex

from fastapi.testclient import TestClient
from packaging.specifiers import SpecifierSet

from tests.contract.test_worker_template import RESOURCES, ROOT

MCP = RESOURCES["McpFunction"]
PROPS = MCP["Properties"]


def _dockerfile() -> str:
    return (ROOT / MCP["Metadata"]["Dockerfile"]).read_text()


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per line, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in instructions:
        if word == "ENV":
            env |= dict(pair.split("=", 1) for pair in shlex.split(rest))
    return env


def _args(instructions: list[tuple[str, str]]) -> dict[str, str]:
    return dict(rest.split("=", 1) for word, rest in instructions if word == "ARG" and "=" in rest)


def _cmd(instructions: list[tuple[str, str]]) -> list[str]:
    (cmd,) = [rest for word, rest in instructions if word == "CMD"]
    return json.loads(cmd)


def test_the_mcp_function_is_the_image_built_from_the_dockerfile_with_the_repository_as_context():
    assert PROPS["PackageType"] == "Image"
    # an image function carries no zip settings
    assert not {"Runtime", "Handler", "CodeUri", "Layers"} & set(PROPS)
    dockerfile = ROOT / MCP["Metadata"]["Dockerfile"]
    assert MCP["Metadata"]["Dockerfile"] == "functions/mcp/Dockerfile" and dockerfile.is_file()
    context = ROOT / MCP["Metadata"]["DockerContext"]
    assert context.resolve() == ROOT
    # every COPY from the build context names something that exists in it
    for word, rest in _instructions(_dockerfile()):
        if word == "COPY" and not rest.startswith("--from"):
            source = shlex.split(rest)[0]
            assert (context / source).exists(), f"COPY {source}: not in the build context"


def test_the_adapter_forwards_to_the_port_uvicorn_serves():
    steps = _instructions(_dockerfile())
    env, cmd = _env(steps), _cmd(steps)
    port = PROPS["Environment"]["Variables"]["AWS_LWA_PORT"]
    assert port == env["AWS_LWA_PORT"] == env["PORT"] == cmd[cmd.index("--port") + 1]
    assert [rest for word, rest in steps if word == "EXPOSE"] == [port]
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"


def test_the_lambda_web_adapter_is_installed_as_an_extension_of_the_pinned_version():
    steps = _instructions(_dockerfile())
    version = _args(steps)["LWA_VERSION"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "a pinned adapter version, never latest"
    stages = [re.sub(r"^--platform=\S+ ", "", rest) for word, rest in steps if word == "FROM"]
    assert "public.ecr.aws/awsguru/aws-lambda-adapter:${LWA_VERSION} AS lambda-adapter" in stages
    # Lambda starts what is in /opt/extensions; the adapter's binary goes there
    assert ("COPY", "--from=lambda-adapter /lambda-adapter /opt/extensions/lambda-adapter") in steps


def test_uvicorn_serves_the_mcp_app_with_its_lifespan_and_the_adapter_s_readiness_probe_passes():
    cmd = _cmd(_instructions(_dockerfile()))
    assert cmd[:3] == ["python", "-m", "uvicorn"]
    module, _, attribute = cmd[3].partition(":")
    assert (module, attribute) == ("functions.mcp.app", "app")
    # the session managers run in the ASGI lifespan: uvicorn must send it
    assert cmd[cmd.index("--lifespan") + 1] == "on"
    app = getattr(importlib.import_module(module), attribute)
    # The adapter's readiness check (GET /, healthy below 500) gets an answer from the app itself
    response = TestClient(app).get("/")
    assert response.status_code < 500


def test_the_image_runs_the_python_of_the_zip_functions_and_the_mcp_sdk_pyproject_allows():
    steps = _instructions(_dockerfile())
    python = _args(steps)["PYTHON_VERSION"]
    assert MCP["Metadata"]["DockerTag"] == f"python{python}"
    runtimes = {
        r["Properties"]["Runtime"]
        for r in RESOURCES.values()
        if r.get("Type") == "AWS::Serverless::Function" and "Runtime" in r.get("Properties", {})
    }
    assert runtimes == {f"python{python}"}
    (pin,) = re.findall(r"\bmcp==([\d.]+)", _dockerfile())
    pyproject = (ROOT / "pyproject.toml").read_text()
    (allowed,) = re.findall(r'"mcp(>=[^"]+)"', pyproject)
    assert pin in SpecifierSet(allowed)
