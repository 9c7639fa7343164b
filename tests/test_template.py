"""template.yaml: cfn-lint accepts it, and its tables match what the code expects.

The application table's keys and GSIs are compared with ``domain.store.models.Row`` (the
schema PynamoDB would create), and the idempotency table with what ``db.create_tables`` builds
locally, so a key change in one place and not the other fails here instead of in production.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from domain.store.models import Row

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return cfn_yaml.load(str(TEMPLATE))


def _by_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in template["Resources"].items() if res["Type"] == type_}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _function(template: dict[str, Any]) -> dict[str, Any]:
    """The MCP function (the others are the authorizer, the search stream consumer and the web function)."""
    functions = _by_type(template, "AWS::Serverless::Function")
    assert set(functions) == {"McpFunction", "AuthorizerFunction", "SearchStreamFunction", "WebFunction"}, (
        functions.keys()
    )
    return functions["McpFunction"]["Properties"]


def _tables(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    env = _function(template)["Environment"]["Variables"]
    resources = template["Resources"]
    # !If [UseLocalDynamoDb, <local name>, !Ref <table>]: the deployed branch names the resource.
    app = resources[env["JENTRIX_TABLE"]["Fn::If"][2]["Ref"]]
    idem = resources[env["JENTRIX_IDEMPOTENCY_TABLE"]["Fn::If"][2]["Ref"]]
    assert app["Type"] == idem["Type"] == "AWS::DynamoDB::Table"
    return app["Properties"], idem["Properties"]


def _keys(key_schema: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(k["AttributeName"], k["KeyType"]) for k in key_schema]


def test_cfn_lint_accepts_the_template() -> None:
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    cmd = [str(cfn_lint)] if cfn_lint.exists() else [sys.executable, "-m", "cfnlint"]
    done = subprocess.run([*cmd, str(TEMPLATE)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr  # no errors, no warnings


def test_app_table_matches_the_row_model(template: dict[str, Any]) -> None:
    app, _ = _tables(template)
    schema = Row._get_schema()

    assert _keys(app["KeySchema"]) == _keys(schema["key_schema"])
    assert {(a["AttributeName"], a["AttributeType"]) for a in app["AttributeDefinitions"]} == {
        (a["AttributeName"], a["AttributeType"]) for a in schema["attribute_definitions"]
    }
    declared = {g["IndexName"]: g for g in app.get("GlobalSecondaryIndexes", [])}
    expected = {g["index_name"]: g for g in schema["global_secondary_indexes"]}
    assert declared.keys() == expected.keys()
    for name, index in expected.items():
        assert _keys(declared[name]["KeySchema"]) == _keys(index["key_schema"]), name
        assert declared[name]["Projection"]["ProjectionType"] == index["projection"]["ProjectionType"], name
    assert not schema["local_secondary_indexes"] and "LocalSecondaryIndexes" not in app
    assert app["BillingMode"] == "PAY_PER_REQUEST"
    ttl_attr = Row.ttl.attr_name
    assert app["TimeToLiveSpecification"] == {"AttributeName": ttl_attr, "Enabled": True}


def test_idempotency_table_matches_local_creation(template: dict[str, Any], stack: dict[str, str]) -> None:
    """Compare with the table ``db.create_tables`` made on DynamoDB Local for this session."""
    from domain.store import db

    _, idem = _tables(template)
    client = db.dynamodb_client()
    live = client.describe_table(TableName=stack["JENTRIX_IDEMPOTENCY_TABLE"])["Table"]
    ttl = client.describe_time_to_live(TableName=stack["JENTRIX_IDEMPOTENCY_TABLE"])["TimeToLiveDescription"]

    assert _keys(idem["KeySchema"]) == _keys(live["KeySchema"])
    assert {(a["AttributeName"], a["AttributeType"]) for a in idem["AttributeDefinitions"]} == {
        (a["AttributeName"], a["AttributeType"]) for a in live["AttributeDefinitions"]
    }
    assert idem["TimeToLiveSpecification"] == {"AttributeName": ttl["AttributeName"], "Enabled": True}
    assert idem["BillingMode"] == "PAY_PER_REQUEST"


def test_function_handler_runtime_and_routes(template: dict[str, Any]) -> None:
    fn = _function(template)
    runtime = fn.get("Runtime") or template["Globals"]["Function"]["Runtime"]
    assert runtime in ("python3.11", "python3.12", "python3.13")

    module, _, attr = fn["Handler"].rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))

    routes = {
        (e["Properties"]["Path"], e["Properties"]["Method"].lower())
        for e in fn["Events"].values()
        if e["Type"] == "Api"
    }
    assert routes == {
        ("/api/mcp", "post"),
        ("/api/mcp", "any"),  # the app itself answers 405 to other methods
        ("/api/mcp/{selection+}", "post"),  # /readonly, /x/<toolsets>[/readonly] (docs/tools.md, toolsets)
        ("/api/artifacts/upload-grant", "post"),
        ("/api/tasks/{taskId}/attachments", "post"),
    }
    apis = _by_type(template, "AWS::Serverless::Api")
    assert apis, "a REST API (AWS::Serverless::Api) fronts the function"


def test_search_stream_consumer_is_wired(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    table = resources["AppTable"]["Properties"]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    fn = resources["SearchStreamFunction"]["Properties"]
    module, _, attr = fn["Handler"].rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))
    (event,) = fn["Events"].values()
    assert (
        event["Type"] == "DynamoDB"
        and "SearchPending" in event["Properties"]["FilterCriteria"]["Filters"][0]["Pattern"]
    )
    role = resources[fn["Role"]["Fn::GetAtt"][0]]["Properties"]
    actions = {a for p in role["Policies"] for s in p["PolicyDocument"]["Statement"] for a in _list(s["Action"])}
    assert "dynamodb:Scan" not in actions and all("*" not in a for a in actions)
    # a total consumer: partial-batch answers, bisection, bounded retries, a failure queue it
    # may write to, and an alarm on that queue
    props = event["Properties"]
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"] and props["BisectBatchOnFunctionError"] is True
    assert 0 < props["MaximumRetryAttempts"] <= 10
    queue = props["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert (
        resources[queue]["Type"] == "AWS::SQS::Queue"
        and "sqs:SendMessage" in actions
        and "dynamodb:DeleteItem" in actions
    )
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert any(
        d["Value"] == {"Fn::GetAtt": [queue, "QueueName"]}
        for a in alarms
        for d in a.get("Dimensions", [])
        if a["Namespace"] == "AWS/SQS"
    )
