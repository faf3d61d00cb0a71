"""template.yaml's SnapStart and arm64 settings, read as data (`sam validate --lint` accepts a template that forgets
them): every zip function snapshots its published versions behind an alias that its events invoke, every
function and the layer are arm64, the MCP image (no SnapStart for images) is built for arm64, and every function's
module hands its runtime hooks to Lambda."""

from __future__ import annotations

import ast
import re

from tests.contract.test_worker_template import RESOURCES, ROOT, TEMPLATE

FUNCTIONS = {k: v for k, v in RESOURCES.items() if v["Type"] == "AWS::Serverless::Function"}
ZIP = {k: v["Properties"] for k, v in FUNCTIONS.items() if v["Properties"].get("PackageType") != "Image"}
GLOBALS = TEMPLATE["Globals"]["Function"]


def test_every_zip_function_snapshots_its_published_versions_on_a_runtime_with_snapstart():
    assert len(ZIP) >= 13
    for name, props in ZIP.items():
        assert props.get("SnapStart") == {"ApplyOn": "PublishedVersions"}, name
        # SnapStart for Python: managed runtimes 3.12 and later
        major, minor = map(int, re.fullmatch(r"python(\d+)\.(\d+)", props["Runtime"]).groups())  # type: ignore[union-attr]
        assert (major, minor) >= (3, 12), name
        # SnapStart is refused with EFS and with more than 512 MB of ephemeral storage
        assert "FileSystemConfigs" not in props, name
        assert props.get("EphemeralStorage", {"Size": 512})["Size"] <= 512, name


def test_every_function_publishes_versions_behind_an_alias_that_its_events_invoke():
    # AutoPublishAlias makes SAM point every event (HTTP API route, SQS mapping, schedule) at the alias: SnapStart
    # applies to published versions only, never to $LATEST
    assert re.fullmatch(r"[A-Za-z0-9_-]+", GLOBALS["AutoPublishAlias"])
    for name, resource in FUNCTIONS.items():
        props = resource["Properties"]
        assert "AutoPublishAlias" not in props or props["AutoPublishAlias"] == GLOBALS["AutoPublishAlias"], (
            name
        )
        # a new layer version or environment must publish a new version (and so a new snapshot) too
        assert props.get("AutoPublishAliasAllProperties") is True, name


def test_every_function_and_the_layer_are_arm64():
    assert GLOBALS["Architectures"] == ["arm64"]
    for name, resource in FUNCTIONS.items():
        assert resource["Properties"].get("Architectures", ["arm64"]) == ["arm64"], name
    layer = RESOURCES["SharedLayer"]["Properties"]
    assert layer["CompatibleArchitectures"] == ["arm64"]


def test_the_mcp_image_has_no_snapstart_and_is_built_for_arm64():
    mcp = RESOURCES["McpFunction"]
    assert "SnapStart" not in mcp["Properties"] and "SnapStart" not in GLOBALS
    dockerfile = (ROOT / mcp["Metadata"]["Dockerfile"]).read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile, re.MULTILINE))
    stages = re.findall(r"^FROM (.+)$", dockerfile, re.MULTILINE)
    assert stages and all(stage.startswith("--platform=${PLATFORM} ") for stage in stages), stages
    assert args["PLATFORM"] == "linux/arm64"


def _calls_install(path: str) -> bool:
    tree = ast.parse((ROOT / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"install", "make_handler"} or (
                isinstance(node.func.value, ast.Name) and node.func.value.id == "snapstart"
            ):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "make_handler":
            return True
    return False


def test_every_zip_function_s_module_hands_the_hooks_to_lambda():
    # make_handler calls core.snapstart.install(); the worker, which has no Mangum handler, calls it itself
    for name, props in ZIP.items():
        module = f"{props['CodeUri'].rstrip('/')}/{props['Handler'].split('.')[0]}.py"
        assert _calls_install(module), f"{name}: {module} registers no SnapStart hooks"
