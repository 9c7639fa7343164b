"""template.yaml watches itself: access logs, alarms, a dashboard, gradual deploys with rollback,
log retention, stage throttling, the authorizer's reserved concurrency, optional WAF, and the
checkov findings it accepts (each with its reason, each listed in docs/deploy.md).

Asserted on the template as the SAM translator expands it (tests/test_template_sam.py's
``expand``), i.e. what CloudFormation would create; the access-log format and WAF's response
body are rendered and parsed as JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from domain import auth
from domain.errors import ErrorCode
from tests.test_template_sam import _list, _of_type, expand

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def out() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "eu-west-1")
        return expand()


def _alarms(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in _of_type(out, "AWS::CloudWatch::Alarm").items()}


def _watched(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric, {dimension: value}) of every metric an alarm reads."""
    if "MetricName" in alarm:
        return [(alarm["Namespace"], alarm["MetricName"], {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])})]
    found = []
    for q in alarm["Metrics"]:
        if "MetricStat" in q:
            m = q["MetricStat"]["Metric"]
            found.append((m["Namespace"], m["MetricName"], {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}))
    return found


def _sub_text(value: Any) -> str:
    """The text of a Fn::Sub (string form or [string, vars] form), or a plain string."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        return sub if isinstance(sub, str) else sub[0]
    return value


def test_access_log_is_one_json_line_with_the_request_and_token_ids(out):
    """Rendered as API Gateway renders it, for an allowed call and for one the gateway refused
    before any authorizer context existed (empty values): both parse."""
    import airspeed

    (stage,) = _of_type(out, "AWS::ApiGateway::Stage").values()
    setting = stage["Properties"]["AccessLogSetting"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    fmt = setting["Format"]
    assert "\n" not in fmt
    # the token id key is the one the authorizer really puts in its context
    principal = auth.Principal(user_id="u1", token_id="tok123", kind="pat", stored_scopes=(), workspace_pin=None)
    context = auth.authorizer_context(principal)
    (token_key,) = [k for k, v in context.items() if v == "tok123"]
    assert f"$context.authorizer.{token_key}" in fmt

    def render(ctx: dict[str, Any]) -> dict[str, Any]:
        return json.loads(airspeed.Template(fmt).merge({"context": ctx}))

    full = {
        "requestId": "r-1",
        "extendedRequestId": "e-1",
        "requestTimeEpoch": 1,
        "httpMethod": "POST",
        "path": "/prod/api/mcp",
        "status": 200,
        "responseLatency": 12,
        "responseLength": 40,
        "identity": {"sourceIp": "203.0.113.9", "apiKeyId": "k1"},
        "error": {"responseType": ""},
        "integration": {"latency": 10, "status": 200},
        "waf": {"status": ""},
        "authorizer": {token_key: "tok123", "principalId": "u1", "latency": 3, "status": 200},
    }
    line = render(full)
    assert (
        line["requestId"] == "r-1"
        and line["tokenId"] == "tok123"
        and line["status"] == "200"
        and line["apiKeyId"] == "k1"
    )
    refused = {
        **full,
        "status": 401,
        "error": {"responseType": "UNAUTHORIZED"},
        "authorizer": {token_key: "", "principalId": "", "latency": 3, "status": 401},
        "identity": {"sourceIp": "203.0.113.9", "apiKeyId": ""},
        "integration": {"latency": "", "status": ""},
    }
    line = render(refused)
    assert line["responseType"] == "UNAUTHORIZED" and line["tokenId"] == "" and line["status"] == "401"
    # the metric filters read a field the line has
    for mf in _of_type(out, "AWS::Logs::MetricFilter").values():
        assert mf["Properties"]["LogGroupName"] == {"Ref": "ApiAccessLogGroup"}
        assert set(re.findall(r"\$\.(\w+)", mf["Properties"]["FilterPattern"])) <= set(line), mf


def test_the_access_log_needs_and_gets_the_regions_gateway_logging_role(out):
    res = out["Resources"]
    (api,) = _of_type(out, "AWS::ApiGateway::RestApi").values()
    assert "ApiGatewayAccount" in _list(api["DependsOn"])  # the stage comes after the API, the API after the setting
    account = res["ApiGatewayAccount"]
    assert account["Type"] == "AWS::ApiGateway::Account" and account["Properties"]["CloudWatchRoleArn"] == {
        "Fn::GetAtt": ["ApiGatewayLogsRole", "Arn"]
    }
    role = res["ApiGatewayLogsRole"]
    # kept on teardown: other APIs of the region log through the same setting
    assert role["DeletionPolicy"] == "Retain"
    (statement,) = role["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert all(a.startswith("logs:") for a in statement["Action"]) and "logs:PutLogEvents" in statement["Action"]


def test_stage_throttling_applies_to_every_method(out):
    (stage,) = _of_type(out, "AWS::ApiGateway::Stage").values()
    (setting,) = stage["Properties"]["MethodSettings"]
    assert setting["ResourcePath"] == "/*" and setting["HttpMethod"] == "*"
    assert setting["ThrottlingRateLimit"] == {"Ref": "StageRateLimit"} and setting["ThrottlingBurstLimit"] == {
        "Ref": "StageBurstLimit"
    }
    params = out["Parameters"]
    # the stage bound sits above one token's usage-plan bound, or one token could take the whole stage
    assert params["StageRateLimit"]["Default"] > params["UsagePlanRateLimit"]["Default"]
    assert params["StageBurstLimit"]["Default"] > params["UsagePlanBurstLimit"]["Default"]


def test_every_log_group_follows_the_retention_parameter(out):
    groups = _of_type(out, "AWS::Logs::LogGroup")
    assert {
        "McpFunctionLogGroup",
        "AuthorizerFunctionLogGroup",
        "SearchStreamFunctionLogGroup",
        "ApiAccessLogGroup",
    } <= set(groups)
    for name, group in groups.items():
        assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name
    assert out["Parameters"]["LogRetentionDays"]["Default"] in out["Parameters"]["LogRetentionDays"]["AllowedValues"]


def test_authorizer_has_reserved_concurrency_unless_set_to_zero(out):
    fn = out["Resources"]["AuthorizerFunction"]["Properties"]
    assert fn["ReservedConcurrentExecutions"] == {
        "Fn::If": ["ReserveAuthorizerConcurrency", {"Ref": "AuthorizerReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert out["Conditions"]["ReserveAuthorizerConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AuthorizerReservedConcurrency"}, "0"]}]
    }
    assert out["Parameters"]["AuthorizerReservedConcurrency"]["Default"] > 0
    assert "ReservedConcurrentExecutions" not in out["Resources"]["McpFunction"]["Properties"]


# What issue 26 asks the stack to watch: (namespace, metric, the resource its dimensions name).
WATCHED = {
    ("AWS/ApiGateway", "5XXError", None),
    ("jentrix/${AWS::StackName}", "AuthorizerFailures", None),
    ("AWS/Lambda", "Throttles", "McpFunction"),
    ("AWS/Lambda", "Throttles", "AuthorizerFunction"),
    ("AWS/Lambda", "Errors", "McpFunction"),
    ("AWS/Lambda", "Errors", "WebFunction"),
    ("AWS/Lambda", "Duration", "McpFunction"),
    ("AWS/DynamoDB", "ReadThrottleEvents", "AppTable"),
    ("AWS/DynamoDB", "WriteThrottleEvents", "AppTable"),
    ("AWS/DynamoDB", "SystemErrors", "AppTable"),
    ("AWS/Lambda", "IteratorAge", "SearchStreamFunction"),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible", None),
}


def _names(dimensions: dict[str, Any]) -> set[str]:
    found = set()
    for value in dimensions.values():
        if isinstance(value, dict) and "Ref" in value:
            found.add(value["Ref"])
        elif isinstance(value, dict) and "Fn::Sub" in value:
            found |= set(re.findall(r"\$\{(\w+)\}", _sub_text(value)))
    return found


def test_alarms_watch_what_the_stack_needs_and_notify_the_topic(out):
    alarms = _alarms(out)
    seen = set()
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert alarm["TreatMissingData"] == "notBreaching", name  # no traffic is not an incident
        for namespace, metric, dims in _watched(alarm):
            ns = namespace if isinstance(namespace, str) else _sub_text(namespace)
            seen.add((ns, metric, None))
            seen |= {(ns, metric, r) for r in _names(dims)}
    assert WATCHED <= seen, WATCHED - seen
    assert out["Resources"]["AlarmTopic"]["Type"] == "AWS::SNS::Topic"
    assert out["Resources"]["AlarmEmailSubscription"]["Condition"] == "HasAlarmEmail"
    p99 = alarms["McpFunctionDurationAlarm"]
    timeout = out["Resources"]["McpFunction"]["Properties"]["Timeout"]
    assert p99["ExtendedStatistic"] == "p99" and p99["Threshold"] < timeout * 1000


def test_system_errors_alarm_covers_every_table_operation_the_function_may_send(out):
    """The alarm must name each operation (SystemErrors has an Operation dimension): every
    item action the MCP function's role allows on the table, plus TransactWriteItems (authorized
    through the per-item actions)."""
    role = out["Resources"]["McpFunctionRole"]["Properties"]
    allowed = {
        a.split(":", 1)[1]
        for p in role["Policies"]
        for s in p["PolicyDocument"]["Statement"]
        if s["Resource"] == {"Fn::GetAtt": ["AppTable", "Arn"]}
        for a in _list(s["Action"])
        if a.startswith("dynamodb:")
    }
    expected = (allowed - {"ConditionCheckItem"}) | {"TransactWriteItems"}
    alarm = _alarms(out)["TableSystemErrorsAlarm"]
    operations = {dims["Operation"] for ns, metric, dims in _watched(alarm) if metric == "SystemErrors"}
    assert operations == expected
    (expression,) = [q["Expression"] for q in alarm["Metrics"] if "Expression" in q]
    assert {q["Id"] for q in alarm["Metrics"] if "MetricStat" in q} == set(re.findall(r"FILL\((\w+), 0\)", expression))


@pytest.mark.parametrize("strategy", ["Canary10Percent5Minutes", "AllAtOnce"])
def test_deploys_shift_gradually_and_roll_back_on_alarms(strategy):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "eu-west-1")
        out = expand({"DeploymentStrategy": strategy})
    res = out["Resources"]
    assert out["Parameters"]["DeploymentStrategy"]["Default"].startswith("Canary")
    alarms = _alarms(out)
    for fn in ("McpFunction", "AuthorizerFunction"):
        group = res[f"{fn}DeploymentGroup"]["Properties"]
        assert group["DeploymentConfigName"]["Fn::Sub"][1]["ConfigName"] == strategy
        assert (
            group["AutoRollbackConfiguration"]["Enabled"] is True
            and "DEPLOYMENT_STOP_ON_ALARM" in group["AutoRollbackConfiguration"]["Events"]
        )
        names = [a["Name"]["Ref"] for a in group["AlarmConfiguration"]["Alarms"]]
        assert group["AlarmConfiguration"]["Enabled"] is True and names and set(names) <= set(alarms), fn
        alias = res[f"{fn}Aliaslive"]
        assert alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"] == {
            "Ref": f"{fn}DeploymentGroup"
        }
    # the MCP function's own alarm reads the alias (the version being shifted to), not the function
    errors = alarms["McpFunctionErrorsAlarm"]
    assert {d["Name"]: d["Value"] for d in errors["Dimensions"]}["Resource"] == {"Fn::Sub": "${McpFunction}:live"}
    # a refused token is a function error of the authorizer, so its errors cannot gate a rollback
    auth_alarms = [
        a["Name"]["Ref"] for a in res["AuthorizerFunctionDeploymentGroup"]["Properties"]["AlarmConfiguration"]["Alarms"]
    ]
    assert "AuthorizerFailureAlarm" in auth_alarms
    assert all(metric != "Errors" for a in auth_alarms for _, metric, _ in _watched(alarms[a]))


def test_dashboard_is_valid_json_and_shows_every_alarm_and_function(out):
    dash = out["Resources"]["OperationsDashboard"]["Properties"]
    text, variables = dash["DashboardBody"]["Fn::Sub"]
    refs = set(re.findall(r"\$\{([\w:.]+)\}", text))
    body = json.loads(re.sub(r"\$\{([\w:.]+)\}", lambda m: f"SUB-{m.group(1)}", text))
    (alarm_widget,) = [w for w in body["widgets"] if w["type"] == "alarm"]
    assert {a.removeprefix("SUB-").removesuffix(".Arn") for a in alarm_widget["properties"]["alarms"]} == set(
        _alarms(out)
    )
    assert {
        "McpFunction",
        "AuthorizerFunction",
        "WebFunction",
        "SearchStreamFunction",
        "AppTable",
        "SearchStreamFailureQueue.QueueName",
        "ApiName",
    } <= refs
    assert set(variables) == {"ApiName"} and variables["ApiName"] == {"Fn::Sub": "${AWS::StackName}-mcp"}
    # the API's metrics are found by the name the API really has
    (api,) = _of_type(out, "AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["Name"] == {"Fn::Sub": "${AWS::StackName}-mcp"}
    five = _alarms(out)["ApiServerErrorRateAlarm"]
    assert {d["Name"]: d["Value"] for d in five["Dimensions"]} == {
        "ApiName": {"Fn::Sub": "${AWS::StackName}-mcp"},
        "Stage": {"Ref": "StageName"},
    }


def test_waf_is_optional_and_limits_tokens_by_hash_without_api_keys(out):
    res = out["Resources"]
    acl, association = res["McpWebAcl"], res["McpWebAclAssociation"]
    assert acl["Condition"] == association["Condition"] == "UseWaf"
    assert (
        out["Conditions"]["UseWaf"] == {"Fn::Equals": [{"Ref": "WafEnabled"}, "true"]}
        and out["Parameters"]["WafEnabled"]["Default"] == "false"
    )
    rules = {r["Name"]: r for r in acl["Properties"]["Rules"]}
    token = rules["PerTokenRate"]["Statement"]["RateBasedStatement"]
    (key,) = token["CustomKeys"]
    assert key["Header"]["Name"].lower() == "authorization" and key["Header"]["TextTransformations"] == [
        {"Priority": 0, "Type": "MD5"}
    ]
    assert rules["PerIpRate"]["Statement"]["RateBasedStatement"]["AggregateKeyType"] == "IP"
    stage = re.search(
        r"/restapis/\$\{McpApi\}/stages/\$\{(\w+)\}$", association["Properties"]["ResourceArn"]["Fn::Sub"]
    ).group(1)
    assert res[stage]["Type"] == "AWS::ApiGateway::Stage"
    # the app's own window answers first: WAF's 5-minute bound is above 5 minutes of the app's limit
    params = out["Parameters"]
    assert params["WafRequestsPer5MinPerToken"]["Default"] > 5 * params["RateLimitPerMinute"]["Default"]
    # a blocked client reads a JSON-RPC error with the envelope
    body = json.loads(acl["Properties"]["CustomResponseBodies"]["RateLimited"]["Content"])
    envelope = body["error"]["data"]["error"]
    assert body["jsonrpc"] == "2.0" and envelope["code"] == ErrorCode.RATE_LIMITED.value and envelope["hint"]
    for rule in rules.values():
        assert rule["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 429


def test_every_checkov_finding_left_is_explained_in_the_template_and_in_the_docs():
    """checkov (run as docs/deploy.md, "Static checks", says) reports no failure: every finding
    not fixed is skipped in the resource's Metadata with a reason, and listed in the docs."""
    raw = cfn_yaml.load(str(ROOT / "template.yaml"))
    docs = (ROOT / "docs" / "deploy.md").read_text()
    skipped = 0
    for name, resource in raw["Resources"].items():
        for skip in (resource.get("Metadata") or {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV_AWS_\d+", skip["id"]) and len(skip["comment"]) > 40, (name, skip)
            assert re.search(rf"^\| `{skip['id']}`[^|\n]*\|[^|\n]*\b{name}\b", docs, re.MULTILINE), (
                f"{skip['id']} on {name} is not in docs/deploy.md"
            )
            skipped += 1
    assert skipped  # the table exists because there are findings to explain


def test_the_monthly_quota_lets_a_token_use_its_window_all_month(out):
    """An agent inside the app's per-minute window never meets QUOTA_EXCEEDED (200,000 ran out
    after ~28 hours at 120 calls a minute)."""
    params = out["Parameters"]
    month = params["RateLimitPerMinute"]["Default"] * 60 * 24 * 31
    assert params["UsagePlanMonthlyQuota"]["Default"] >= month
    (plan,) = _of_type(out, "AWS::ApiGateway::UsagePlan").values()
    assert plan["Properties"]["Quota"] == {"Limit": {"Ref": "UsagePlanMonthlyQuota"}, "Period": "MONTH"}
