"""The Lambda artifact (`jentrix package`, infra/package.py).

* arm64 (what deploys): every wheel is for manylinux aarch64 + CPython 3.12 or pure Python, every
  shared object is an aarch64 ELF, no dev-only package is inside, the size stays bounded.
* host: the same recipe for this machine, imported by a clean interpreter (``-I -S``: no
  site-packages, no PYTHONPATH, only the artifact on ``sys.path``) that plays Lambda: the
  authorizer checks a token, the MCP function serves canned API Gateway events carrying the
  authorizer context, with tracing and metrics on as they are on Lambda.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra import package

ROOT = Path(__file__).resolve().parent.parent
DEV_ONLY = {
    "uvicorn",
    "httpx2",
    "httpx",
    "h11",
    "click",
    "mcp",
    "pytest",
    "setuptools",
    "moto",
    "cfn_lint",
    "hypothesis",
    "pip",
    "wheel",
}
ELF_AARCH64 = 0xB7


@pytest.fixture(scope="module")
def arm64(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pkg") / "lambda"
    return out, package.build(out, platform="arm64")


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pkg") / "lambda-host"
    return out, package.build(out, platform="host")


def _top_level_names(root: Path) -> set[str]:
    return {p.name.split("-")[0].split(".")[0].lower() for p in root.iterdir()}


def test_arm64_artifact_has_lambda_wheels_only(arm64):
    out, manifest = arm64
    dists = manifest["distributions"]
    assert {
        "pydantic_core",
        "pynamodb",
        "fastapi",
        "mangum",
        "aws_lambda_powertools",
        "aws_xray_sdk",
        "boto3",
        "botocore",
    } <= {d.lower() for d in dists}
    for name, tags in dists.items():
        assert tags, name
        for tag in tags:
            py, abi, plat = tag.split("-")
            if plat == "any":
                continue
            assert "aarch64" in plat and plat.startswith("manylinux"), (name, tag)
            assert py == "cp312" or abi == "abi3", (name, tag)
    for so in out.rglob("*.so"):
        head = so.read_bytes()[:20]
        assert head[:4] == b"\x7fELF" and head[18] == ELF_AARCH64, so
    assert not list(out.rglob("*x86_64*.so"))


def test_arm64_artifact_leaves_the_dev_stack_out(arm64):
    out, manifest = arm64
    names = _top_level_names(out) | {d.lower() for d in manifest["distributions"]}
    assert not names & DEV_ONLY, names & DEV_ONLY
    assert not (out / "bin").exists()
    functions = {p.name for p in (out / "functions").iterdir()}
    assert {"lambda_handler.py", "http_app.py", "authorizer.py", "search_stream.py"} <= functions
    assert not {"cli.py", "stdio_adapter.py", "stdio"} & functions
    # botocore keeps only the models of the clients the functions create
    assert {p.name for p in (out / "botocore" / "data").iterdir() if p.is_dir()} == set(package.SDK_SERVICES)
    if manifest["bytecode"].startswith("cpython 3.12"):
        assert list((out / "functions" / "__pycache__").glob("lambda_handler.cpython-312.pyc"))


RESOLVE = r"""
import json, sys
import boto3
session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b")
seen = {}
for service in sys.argv[1].split(","):
    for region in ("us-east-1", "eu-central-1", "us-gov-west-1", "cn-north-1", "ap-southeast-7"):
        client = session.client(service, region_name=region)
        seen[f"{service}@{region}"] = [client.meta.endpoint_url, client.meta.region_name, client.meta.partition]
print(json.dumps(seen))
"""


def test_slim_botocore_keeps_every_endpoint_the_functions_resolve(tmp_path):
    """The trimmed data (5 model directories, endpoints.json cut to their prefixes) resolves
    exactly what the full botocore resolves for the kept clients, in all partitions; any
    other client is refused."""
    import botocore

    full = Path(botocore.__file__).parent
    slim = tmp_path / "botocore"
    import shutil

    shutil.copytree(full, slim, ignore=shutil.ignore_patterns("__pycache__"))
    facts = package.slim_botocore(tmp_path)
    assert facts["services"] == len(package.SDK_SERVICES)
    assert facts["endpointsBytes"] < (full / "data" / "endpoints.json").stat().st_size / 20
    services = ",".join(package.SDK_SERVICES)
    env = {**os.environ, "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    env.pop("AWS_ENDPOINT_URL", None)

    def resolve(pythonpath: str | None) -> dict:
        run_env = (
            {**env, "PYTHONPATH": pythonpath} if pythonpath else {k: v for k, v in env.items() if k != "PYTHONPATH"}
        )
        done = subprocess.run(
            [sys.executable, "-c", RESOLVE, services], capture_output=True, text=True, env=run_env, check=True
        )
        return json.loads(done.stdout)

    slim_seen = resolve(str(tmp_path))
    assert slim_seen == resolve(None)
    assert slim_seen["dynamodb@cn-north-1"][0] == "https://dynamodb.cn-north-1.amazonaws.com.cn"
    refused = subprocess.run(
        [sys.executable, "-c", "import boto3; boto3.client('sqs', region_name='us-east-1')"],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(tmp_path)},
    )
    assert "UnknownServiceError" in refused.stderr


def _documented_mb(row_start: str) -> list[float]:
    """The MB figures of docs/deploy.md's artifact-size row that starts with ``row_start``."""
    import re

    for line in (ROOT / "docs" / "deploy.md").read_text().splitlines():
        if line.startswith(f"| {row_start}"):
            return [float(x) for x in re.findall(r"~?([0-9]+\.[0-9]+) MB", line)]
    raise AssertionError(f"docs/deploy.md has no size row starting {row_start!r}")


def test_arm64_artifact_size(arm64):
    """At most the size docs/deploy.md states, plus 10 %."""
    _, manifest = arm64
    print(
        f"\narm64 artifact: {manifest['unzippedBytes'] / 1e6:.1f} MB unzipped, {manifest['zippedBytes'] / 1e6:.1f} MB zipped"
    )
    if manifest["bytecode"].startswith("cpython"):
        unzipped, zipped = _documented_mb("default: SDK bundled (slim), Python 3.12 bytecode")
        assert manifest["zippedBytes"] <= zipped * 1.1 * 1e6
    else:
        (unzipped,) = _documented_mb("default, built where no Python 3.12 exists")
    assert manifest["unzippedBytes"] <= unzipped * 1.1 * 1e6


def test_arm64_artifact_bundles_the_versions_the_tests_ran(arm64):
    """Every distribution in the artifact is the lock's release and the one this test process
    imports (installed from requirements/dev.txt), and the catalog manifest inside was rendered
    with the bundled pydantic, so the function lists tools from it instead of importing them."""
    from importlib.metadata import version

    from domain.catalog import source_hash

    out, manifest = arm64
    bundled = manifest["versions"]
    assert bundled == package.versions(out)
    lock = package.pinned()
    assert bundled == {name: v for name, v in lock.items() if name not in {package.canonical(n) for n in package.NEVER}}
    assert {name: version(name) for name in bundled} == bundled
    catalog = json.loads((out / "domain" / "catalog_manifest.json").read_text())
    assert catalog["sourceHash"] == source_hash()


def test_the_locks_agree_with_each_other_and_with_this_environment():
    """runtime.txt is dev.txt's releases for the runtime's distributions, and this environment
    (what the tests run on) holds exactly dev.txt's releases."""
    from importlib.metadata import PackageNotFoundError, version

    dev = package.pinned(ROOT / "requirements" / "dev.txt")
    runtime = package.pinned()
    assert runtime and {name: dev.get(name) for name in runtime} == runtime
    installed = {}
    never = {package.canonical(n) for n in package.NEVER}  # setuptools: venv and pip manage it; never bundled
    for name in dev:
        if name in never:
            continue
        try:
            installed[name] = version(name)
        except PackageNotFoundError:
            continue  # a platform-marked entry (pywin32 on Windows, ...)
    assert {name: dev[name] for name in installed} == installed
    assert set(runtime) - never <= set(installed)


def test_the_build_refuses_a_host_whose_pydantic_is_not_the_locks(monkeypatch, tmp_path):
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1" if name == "pydantic" else real(name))
    with pytest.raises(SystemExit, match=r"pydantic 0\.0\.1 is installed here but the lock bundles"):
        package.build(tmp_path / "lambda", platform="host")
    assert not list((tmp_path / "lambda").iterdir())  # refused before pip ran


DRIVER = r"""
import json, os, sys
sys.path.insert(0, os.environ["ARTIFACT"])
for dev in ("uvicorn", "httpx2", "mcp", "pytest", "moto"):
    try:
        __import__(dev)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{dev} is importable in the clean interpreter")
events = json.loads(sys.stdin.read())
from functions import authorizer, lambda_handler, search_stream  # noqa: F401 - the three handlers

class Ctx:
    function_name = "jentrix-mcp"; function_version = "$LATEST"; memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:jentrix-mcp"; aws_request_id = "req"
    log_group_name = "/aws/lambda/jentrix-mcp"; log_stream_name = "s"
    def get_remaining_time_in_millis(self): return 25000

allowed = authorizer.handler(events["authorizer"], Ctx())
answers = []
for event in events["calls"]:
    event["requestContext"]["authorizer"] = {**allowed["context"], "principalId": allowed["principalId"]}
    out = lambda_handler.handler(event, Ctx())
    answers.append({"status": out["statusCode"], "body": json.loads(out["body"])})
loaded = sorted(m for m in ("aws_xray_sdk", "uvicorn", "httpx2", "mcp") if m in sys.modules)
print("RESULT " + json.dumps({"usageKey": allowed["usageIdentifierKey"], "answers": answers, "loaded": loaded, "path": [p for p in sys.path if "site-packages" in p]}))
"""


def test_host_artifact_serves_canned_api_gateway_events_in_a_clean_interpreter(host, stack, tmp_path):
    from tests.aws_events import authorizer_event, mcp_headers, rest_event, tools_call
    from tests.conftest import make_actor

    out, _ = host
    actor = make_actor("Packed", usage_key=("k", "usage-key-value-0123456789abcdef", "plan"))
    events = {
        "authorizer": authorizer_event(actor.token),
        "calls": [
            rest_event("POST", "/api/mcp", mcp_headers(actor.token), tools_call("get_token_context", {})),
            rest_event(
                "POST",
                "/api/mcp",
                mcp_headers(actor.token),
                tools_call("create_board", {"workspaceId": actor.workspace_id, "name": "Packed"}),
            ),
        ],
    }
    env = {
        "ARTIFACT": str(out),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        **{k: stack[k] for k in ("JENTRIX_DYNAMODB_ENDPOINT", "JENTRIX_TABLE", "JENTRIX_IDEMPOTENCY_TABLE")},
        # as on Lambda: tracing and metrics on (the X-Ray daemon address is a UDP port nobody reads)
        "LAMBDA_TASK_ROOT": str(out),
        "AWS_LAMBDA_FUNCTION_NAME": "jentrix-mcp",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "POWERTOOLS_SERVICE_NAME": "jentrix-mcp",
        "POWERTOOLS_METRICS_NAMESPACE": "jentrix",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "JENTRIX_TOKEN_CACHE_SECONDS": "0",
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", DRIVER],
        input=json.dumps(events),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["usageKey"] == "usage-key-value-0123456789abcdef"
    assert result["path"] == []  # nothing but the artifact and the standard library
    statuses = [a["status"] for a in result["answers"]]
    assert statuses == [200, 200], result
    context, board = (a["body"]["result"] for a in result["answers"])
    assert not context["isError"] and not board["isError"], result
    assert board["structuredContent"]["board"]["name"] == "Packed"
    assert result["loaded"] == ["aws_xray_sdk"]  # the tracer, on "Lambda"; no dev module
    emf = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{") and "_aws" in x]
    names = {
        metric["Name"] for m in emf for directive in m["_aws"]["CloudWatchMetrics"] for metric in directive["Metrics"]
    }
    assert names >= {"ColdStart", "ToolCalls", "ToolLatency"}


# -- `sam build` (template.yaml: BuildMethod makefile, CodeUri infra/sam) ------------------------

MAKEFILE = ROOT / "infra" / "sam" / "Makefile"


def _tree(root: Path) -> dict[str, str]:
    import hashlib

    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _make_as_sam_does(target: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """What aws-lambda-builders' CustomMake workflow runs: a scratch copy of the CodeUri folder as
    the working directory, ``make --makefile <the original Makefile> build-<LogicalId>``, and
    ARTIFACTS_DIR in the environment."""
    import shutil

    scratch = tmp_path / "scratch"
    shutil.copytree(MAKEFILE.parent, scratch, dirs_exist_ok=True)
    return subprocess.run(
        ["make", "--makefile", str(MAKEFILE), target],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHON": sys.executable, **env},
    )


def test_every_function_is_built_by_the_makefile():
    from cfnlint.decode import cfn_yaml

    raw = cfn_yaml.load(str(ROOT / "template.yaml"))
    functions = {k: v for k, v in raw["Resources"].items() if v["Type"] == "AWS::Serverless::Function"}
    assert set(functions) == {"McpFunction", "AuthorizerFunction", "WebFunction", "SearchStreamFunction"}
    for name, fn in functions.items():
        assert fn["Metadata"]["BuildMethod"] == "makefile", name
        code_uri = fn["Properties"].get("CodeUri", raw["Globals"]["Function"]["CodeUri"])
        assert (ROOT / code_uri / "Makefile").resolve() == MAKEFILE, name
        dry = subprocess.run(
            ["make", "-n", "--makefile", str(MAKEFILE), f"build-{name}", "ARTIFACTS_DIR=/x"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert dry.returncode == 0 and "-m infra.package --cache" in dry.stdout and '--out "/x"' in dry.stdout, (
            dry.stdout + dry.stderr
        )
    # make refuses to run outside sam build (nowhere to put the artifact)
    lost = subprocess.run(
        ["make", "--makefile", str(MAKEFILE), "build-McpFunction"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ARTIFACTS_DIR": ""},
    )
    assert lost.returncode != 0 and "ARTIFACTS_DIR" in lost.stderr


def test_sam_build_through_the_makefile_yields_the_package_tree(host, tmp_path):
    """The cache holds this exact build (same source key), so make copies it: the function's
    build folder is byte for byte the tree `jentrix package` made, .so files and bytecode
    included (SAM's own Python builder drops both)."""
    import shutil

    out, manifest = host
    assert manifest["sourceKey"] == package.source_key(platform="host")
    assert (
        package.source_key(platform="arm64") != manifest["sourceKey"] != package.source_key(platform="host", sdk=False)
    )
    cache = tmp_path / "cache"
    shutil.copytree(out, cache)
    artifacts = tmp_path / "artifacts" / "AuthorizerFunction"
    done = _make_as_sam_does(
        "build-AuthorizerFunction",
        tmp_path,
        ARTIFACTS_DIR=str(artifacts),
        JENTRIX_BUILD_CACHE=str(cache),
        JENTRIX_PACKAGE_ARGS="--platform host",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _tree(artifacts) == _tree(out)
    assert list(artifacts.rglob("*.so"))


def test_a_kept_zip_redeploys_through_sam_build(host, tmp_path):
    out, manifest = host
    artifacts = tmp_path / "artifacts" / "McpFunction"
    done = _make_as_sam_does(
        "build-McpFunction", tmp_path, ARTIFACTS_DIR=str(artifacts), JENTRIX_ARTIFACT=manifest["zip"]
    )
    assert done.returncode == 0, done.stdout + done.stderr
    mine, kept = _tree(artifacts), _tree(out)
    assert mine.keys() == kept.keys() and {k: v for k, v in mine.items() if k != "manifest.json"} == {
        k: v for k, v in kept.items() if k != "manifest.json"
    }
    unpacked = json.loads((artifacts / "manifest.json").read_text())
    assert {k: unpacked[k] for k in ("versions", "distributions", "sourceKey")} == {
        k: manifest[k] for k in ("versions", "distributions", "sourceKey")
    }
    # a zip that is not ours is refused
    bogus = tmp_path / "other.zip"
    import zipfile

    with zipfile.ZipFile(bogus, "w") as zf:
        zf.writestr("app.py", "")
    done = _make_as_sam_does("build-McpFunction", tmp_path, ARTIFACTS_DIR=str(artifacts), JENTRIX_ARTIFACT=str(bogus))
    assert done.returncode != 0 and "manifest.json" in done.stderr


def test_aws_sam_build_folder_is_ignored():
    done = subprocess.run(["git", "check-ignore", "-q", ".aws-sam/build/template.yaml"], cwd=ROOT)
    assert done.returncode == 0


def _sam() -> str | None:
    import shutil

    return os.environ.get("SAM_CLI") or shutil.which("sam")


@pytest.mark.slow
@pytest.mark.skipif(
    _sam() is None, reason="SAM CLI not installed (pip install aws-sam-cli, or set SAM_CLI); needs no Docker"
)
def test_sam_cli_build_equals_jentrix_package(tmp_path):
    """The real `sam build` (SAM CLI, makefile builder, no container): one arm64 build, and all
    three functions' folders are that tree."""
    cache = tmp_path / "cache"
    done = subprocess.run(
        [_sam(), "build", "--template-file", str(ROOT / "template.yaml"), "--build-dir", str(tmp_path / "sam")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0", "JENTRIX_BUILD_CACHE": str(cache), "PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = _tree(cache)
    never = {package.canonical(n) for n in package.NEVER}
    assert json.loads((cache / "manifest.json").read_text())["versions"] == {
        n: v for n, v in package.pinned().items() if n not in never
    }
    for name in ("McpFunction", "AuthorizerFunction", "SearchStreamFunction"):
        assert _tree(tmp_path / "sam" / name) == built, name
    assert list((tmp_path / "sam" / "McpFunction").rglob("*.so"))
