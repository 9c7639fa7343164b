"""template.yaml expanded offline by the SAM translator (what CloudFormation would deploy).

``sam deploy`` uploads the code and replaces ``CodeUri`` by an S3 URI before the transform; the
fixture does the same with a dummy URI, then asserts on the generated resources: the authorizer
and its identity source and cache TTL, API key source AUTHORIZER, the usage plan on the stage,
the gateway responses MCP clients read, least-privilege IAM, the table, stream and bucket.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from domain.errors import ErrorCode
from domain.store.models import Row
from tests.gateway_support import GATEWAY_MESSAGES, REQUEST_ID
from tests.gateway_support import render as _render

ROOT = Path(__file__).resolve().parent.parent
CODES = {code.value for code in ErrorCode}  # every envelope code has its gateway response
XRAY_WRITE = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def expand(parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    raw = json.loads(json.dumps(cfn_yaml.load(str(ROOT / "template.yaml"))))
    raw["Globals"]["Function"]["CodeUri"] = "s3://deploy-bucket/jentrix.zip"
    pseudo = {
        "AWS::Region": "eu-west-1",
        "AWS::AccountId": "123456789012",
        "AWS::Partition": "aws",
        "AWS::StackName": "jx",
    }
    return transform(copy.deepcopy(raw), {**pseudo, **(parameters or {})}, _NoManagedPolicies())


@pytest.fixture(scope="module")
def out(monkeypatch_module: pytest.MonkeyPatch) -> dict[str, Any]:
    return expand({"AuthorizerCacheSeconds": 7})


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    mp.setenv("AWS_DEFAULT_REGION", "eu-west-1")  # the translator's boto session wants one
    yield mp
    mp.undo()


def _of_type(out: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in out["Resources"].items() if v["Type"] == type_}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _body(out: dict[str, Any]) -> dict[str, Any]:
    (api,) = _of_type(out, "AWS::ApiGateway::RestApi").values()
    return api["Properties"]["Body"]


def test_rest_api_takes_api_keys_from_the_authorizer(out):
    (api,) = _of_type(out, "AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["ApiKeySourceType"] == "AUTHORIZER"
    assert api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}


def test_authorizer_is_wired_with_its_identity_source_and_cache(out):
    body = _body(out)
    auth = body["securityDefinitions"]["TokenAuthorizer"]["x-amazon-apigateway-authorizer"]
    assert auth["type"] == "request"
    assert auth["identitySource"] == "method.request.header.Authorization"
    assert auth["authorizerResultTtlInSeconds"] == 7  # the AuthorizerCacheSeconds parameter
    assert auth["authorizerUri"]["Fn::Sub"][1]["__FunctionArn__"] == {
        "Ref": "AuthorizerFunctionAliaslive"
    }  # the published (SnapStart) version
    routes = {(path, verb) for path, methods in body["paths"].items() for verb in methods}
    web = {
        ("/.well-known/{proxy+}", "get"),
        ("/oauth/{proxy+}", "x-amazon-apigateway-any-method"),
        ("/console", "get"),
        ("/console/{proxy+}", "x-amazon-apigateway-any-method"),
    }
    assert routes == {
        ("/api/mcp", "post"),
        ("/api/mcp", "x-amazon-apigateway-any-method"),
        ("/api/mcp/{selection+}", "post"),
        ("/api/artifacts/upload-grant", "post"),
        ("/api/tasks/{taskId}/attachments", "post"),
        *web,
    }
    for path, methods in body["paths"].items():
        for verb, method in methods.items():
            if (path, verb) in web:
                # the OAuth endpoints and console pages are public: no authorizer, no API key, the web function
                assert method.get("security") in (None, [], [{"NONE": []}]), (path, verb, method.get("security"))
                assert (
                    "/functions/${WebFunction.Arn}/invocations"
                    in method["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
                ), (path, verb)
                continue
            # every route: our authorizer and the usage plan's API key (sourced from the authorizer)
            assert method["security"] == [{"TokenAuthorizer": []}, {"api_key": []}], (path, verb)
            assert method["x-amazon-apigateway-integration"]["type"] == "aws_proxy"
            # the alias of the published (SnapStart) version, never $LATEST
            assert (
                "/functions/${McpFunctionAliaslive}/invocations"
                in method["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
            )
    perms = _of_type(out, "AWS::Lambda::Permission")
    assert any(p["Properties"]["FunctionName"] == {"Ref": "AuthorizerFunctionAliaslive"} for p in perms.values())


@pytest.mark.parametrize("apply_on", ["PublishedVersions", "None"])
def test_functions_behind_the_gateway_are_served_through_published_aliases_with_snapstart(apply_on, monkeypatch_module):
    """SnapStart only applies to published versions: the gateway must invoke the aliases SAM
    moves to each deploy's versions (the MCP function and the authorizer), with permissions on
    those aliases, not on the functions."""
    out = expand({"SnapStart": apply_on})
    res = out["Resources"]
    assert out["Parameters"]["SnapStart"]["Default"] == "PublishedVersions"
    assert set(out["Parameters"]["SnapStart"]["AllowedValues"]) == {"PublishedVersions", "None"}
    invokes = [
        p["Properties"]
        for p in _of_type(out, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    for name, permissions in (("McpFunction", 5), ("AuthorizerFunction", 1)):
        fn = res[name]["Properties"]
        assert fn["SnapStart"] == {"ApplyOn": {"Ref": "SnapStart"}}, name
        (version_id,) = [
            k
            for k, v in _of_type(out, "AWS::Lambda::Version").items()
            if v["Properties"]["FunctionName"] == {"Ref": name}
        ]
        alias = res[f"{name}Aliaslive"]
        assert alias["Type"] == "AWS::Lambda::Alias" and alias["Properties"]["FunctionVersion"] == {
            "Fn::GetAtt": [version_id, "Version"]
        }
        mine = [
            p
            for p in invokes
            if p["FunctionName"] in ({"Ref": f"{name}Aliaslive"}, {"Ref": name}, {"Fn::GetAtt": [name, "Arn"]})
        ]
        assert len(mine) == permissions and all(p["FunctionName"] == {"Ref": f"{name}Aliaslive"} for p in mine), (
            name,
            mine,
        )
        # SnapStart cannot be combined with these (AWS Lambda developer guide, SnapStart limitations)
        assert "ProvisionedConcurrencyConfig" not in json.dumps(alias) and "FileSystemConfigs" not in fn, name
        assert fn.get("EphemeralStorage", {"Size": 512})["Size"] <= 512, name
    assert (
        "SnapStart" not in res["SearchStreamFunction"]["Properties"]
    )  # a stream consumer: nobody waits on its cold start


def test_usage_plan_is_attached_to_the_stage(out):
    (plan,) = _of_type(out, "AWS::ApiGateway::UsagePlan").values()
    stages = _of_type(out, "AWS::ApiGateway::Stage")
    (stage_stanza,) = plan["Properties"]["ApiStages"]
    assert stage_stanza["ApiId"] == {"Ref": "McpApi"}
    stage = stages[stage_stanza["Stage"]["Ref"]]
    assert stage["Properties"]["RestApiId"] == {"Ref": "McpApi"} and stage["Properties"]["StageName"] == {
        "Ref": "StageName"
    }
    assert stage["Properties"]["TracingEnabled"] is True
    assert plan["Properties"]["Throttle"] == {
        "RateLimit": {"Ref": "UsagePlanRateLimit"},
        "BurstLimit": {"Ref": "UsagePlanBurstLimit"},
    }
    assert plan["Properties"]["Quota"] == {"Limit": {"Ref": "UsagePlanMonthlyQuota"}, "Period": "MONTH"}
    # One API key in the template, shared by OAuth access tokens (the authorizer assigns it);
    # each PAT brings its own (jentrix token create --aws).
    (key,) = _of_type(out, "AWS::ApiGateway::ApiKey").values()
    (plan_key,) = _of_type(out, "AWS::ApiGateway::UsagePlanKey").values()
    assert plan_key["Properties"]["UsagePlanId"] == {"Ref": "McpUsagePlan"} and plan_key["Properties"]["KeyId"] == {
        "Ref": "OAuthClientsApiKey"
    }
    auth_env = out["Resources"]["AuthorizerFunction"]["Properties"]["Environment"]["Variables"]
    assert auth_env["JENTRIX_OAUTH_USAGE_KEY"] == key["Properties"]["Value"]
    assert out["Outputs"]["UsagePlanId"]["Value"] == {"Ref": "McpUsagePlan"}


EXPECTED_RESPONSES = {
    # type: (status, envelope code, Retry-After header or None)
    "UNAUTHORIZED": ("401", "FORBIDDEN", None),
    "ACCESS_DENIED": ("403", "FORBIDDEN", None),
    "INVALID_API_KEY": ("403", "FORBIDDEN", None),
    "MISSING_AUTHENTICATION_TOKEN": ("404", "NOT_FOUND", None),  # API Gateway's answer for a route it does not have
    "THROTTLED": ("429", "RATE_LIMITED", "1"),
    "QUOTA_EXCEEDED": ("429", "RATE_LIMITED", None),  # resets at the month's end: no honest wait to give
    "DEFAULT_4XX": (None, "INVALID_INPUT", None),
    "DEFAULT_5XX": (None, "INTERNAL", "5"),
}


@pytest.mark.parametrize("gateway_message", GATEWAY_MESSAGES, ids=["plain", "quotes-backslash", "newlines-dollar"])
def test_gateway_responses_are_json_rpc_errors_carrying_the_envelope(out, gateway_message):
    responses = _body(out)["x-amazon-apigateway-gateway-responses"]
    assert set(EXPECTED_RESPONSES) == set(responses)
    for kind, (status, code, retry_after) in EXPECTED_RESPONSES.items():
        resp = responses[kind]
        assert resp.get("statusCode") == status, kind
        headers = resp.get("responseParameters", {})
        assert set(resp["responseTemplates"]) == {"application/json"}, kind
        rendered = _render(resp["responseTemplates"]["application/json"], message=gateway_message, response_type=kind)
        message = json.loads(rendered)  # the whole point: a client can parse it
        assert message["jsonrpc"] == "2.0" and message["id"] is None, kind
        error = message["error"]
        assert isinstance(error["code"], int) and error["message"], kind
        envelope = error["data"]["error"]
        assert envelope["code"] == code and envelope["code"] in CODES and envelope["message"] and envelope["hint"], kind
        assert error["data"]["correlationId"] == REQUEST_ID, kind
        # the gateway's own words arrive intact, as data
        assert error["data"]["gateway"] == {"responseType": kind, "message": gateway_message}, kind
        if retry_after is None:
            assert "gatewayresponse.header.Retry-After" not in headers, kind
            assert "retryAfterSeconds" not in envelope, kind
        else:
            assert headers["gatewayresponse.header.Retry-After"] == f"'{retry_after}'", kind
            assert envelope["retryAfterSeconds"] == int(retry_after), kind
    challenge = responses["UNAUTHORIZED"]["responseParameters"]["gatewayresponse.header.WWW-Authenticate"]
    condition, with_url, without = challenge["Fn::If"]
    assert condition == "HasPublicUrl"
    described = r"error=\"invalid_token\", error_description=\"[^\"']+\"'"
    assert re.fullmatch(r"'Bearer realm=\"jentrix\", " + described, without), without
    # the custom-domain branch names the metadata the app serves (tests/test_oauth_flow.py)
    rendered = with_url["Fn::Sub"].replace("${PublicUrl}", "https://mcp.example.com/jentrix")
    assert re.fullmatch(
        r"'Bearer realm=\"jentrix\", resource_metadata=\"https://mcp\.example\.com/jentrix"
        r"/\.well-known/oauth-protected-resource/api/mcp\", " + described,
        rendered,
    ), rendered


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),
        ("https://mcp.example.com", True),
        ("https://mcp.example.com/jentrix", True),
        ("https://mcp.example.com/", False),  # the challenge and the issuer would hold "//"
        ("http://mcp.example.com", False),
        ("https://mcp.example.com/a b", False),
    ],
)
def test_public_url_is_an_https_base_without_a_trailing_slash(value, allowed):
    """CloudFormation checks AllowedPattern as a full match (Java regex, same syntax here)."""
    pattern = cfn_yaml.load(str(ROOT / "template.yaml"))["Parameters"]["PublicUrl"]["AllowedPattern"]
    assert (re.fullmatch(pattern, value) is not None) is allowed


def test_the_renderer_sees_what_quoting_messagestring_would_break():
    """The check above can fail: the old 5xx template, which put messageString inside a JSON
    string, renders to something no JSON parser accepts."""
    old = '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"The gateway could not complete the call: $context.error.messageString"}}'
    with pytest.raises(json.JSONDecodeError):
        json.loads(_render(old))


def _named(resource: Any, out: dict[str, Any]) -> set[str]:
    """The logical ids a Resource entry points at (GetAtt / Sub with ${X.Arn})."""
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        return {resource["Fn::GetAtt"][0]}
    if isinstance(resource, dict) and "Fn::Sub" in resource:
        return set(re.findall(r"\$\{(\w+)\.(?:Arn|StreamArn)\}", resource["Fn::Sub"]))
    return set()


def test_iam_is_scoped_to_named_resources(out):
    roles = _of_type(out, "AWS::IAM::Role")
    functions = _of_type(out, "AWS::Lambda::Function")
    # Two roles serve no function: SAM's CodeDeploy role (gradual deploys; the AWS-managed
    # policy made for it) and the region's API Gateway logging role (tests/test_template_ops.py).
    services = {
        name: role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"]
        for name, role in roles.items()
    }
    assert _list(services.pop("CodeDeployServiceRole")) == ["codedeploy.amazonaws.com"]
    assert roles["CodeDeployServiceRole"]["Properties"]["ManagedPolicyArns"] == [
        "arn:aws:iam::aws:policy/service-role/AWSCodeDeployRoleForLambda"
    ]
    assert _list(services.pop("ApiGatewayLogsRole")) == ["apigateway.amazonaws.com"]
    roles = {name: roles[name] for name in services}
    assert {f["Properties"]["Role"]["Fn::GetAtt"][0] for f in functions.values()} == set(roles)
    allowed = {
        "AppTable",
        "IdempotencyTable",
        "ArtifactBucket",
        "McpFunctionLogGroup",
        "AuthorizerFunctionLogGroup",
        "SearchStreamFunctionLogGroup",
        "SearchStreamFailureQueue",
        "WebFunctionLogGroup",
    }
    for name, role in roles.items():
        props = role["Properties"]
        assert not props.get("ManagedPolicyArns"), f"{name}: managed policies grant on '*'"
        for policy in props["Policies"]:
            for st in policy["PolicyDocument"]["Statement"]:
                actions = set(_list(st["Action"]))
                assert st["Effect"] == "Allow"
                assert all("*" not in a for a in actions), (name, st)
                assert "dynamodb:Scan" not in actions and not any(
                    a.startswith(("dynamodb:Create", "dynamodb:Delete" + "Table", "dynamodb:Update" + "Table"))
                    for a in actions
                )
                resources = _list(st["Resource"])
                if "*" in resources:
                    assert resources == ["*"] and actions <= XRAY_WRITE, (name, st)
                    continue
                for r in resources:
                    targets = _named(r, out)
                    assert targets and targets <= allowed, (name, st["Sid"], r)
    mcp = {
        s["Sid"]: s
        for p in roles["McpFunctionRole"]["Properties"]["Policies"]
        for s in p["PolicyDocument"]["Statement"]
    }
    # exactly the model's indexes, by name (a new GSI in models.py needs its line in the role)
    indexes = [g["index_name"] for g in Row._get_schema()["global_secondary_indexes"]]
    assert sorted(r["Fn::Sub"] for r in mcp["AppTableIndexes"]["Resource"]) == sorted(
        f"${{AppTable.Arn}}/index/{i}" for i in indexes
    )
    assert mcp["PendingUploads"]["Resource"] == {"Fn::Sub": "${ArtifactBucket.Arn}/pending/*"}
    assert mcp["StoredObjects"]["Resource"] == {"Fn::Sub": "${ArtifactBucket.Arn}/objects/*"}
    # listing (so S3 answers 404, not 403, for an upload not there yet) only under the two prefixes
    assert mcp["UploadPrefixListing"]["Action"] == "s3:ListBucket" and mcp["UploadPrefixListing"]["Resource"] == {
        "Fn::GetAtt": ["ArtifactBucket", "Arn"]
    }
    assert mcp["UploadPrefixListing"]["Condition"] == {"StringLike": {"s3:prefix": ["pending/*", "objects/*"]}}
    auth = [
        s for p in roles["AuthorizerFunctionRole"]["Properties"]["Policies"] for s in p["PolicyDocument"]["Statement"]
    ]
    assert {a for s in auth for a in _list(s["Action"]) if a.startswith("dynamodb:")} == {"dynamodb:GetItem"}


def test_functions_runtime_tracing_timeout_and_powertools(out):
    functions = _of_type(out, "AWS::Lambda::Function")
    assert set(functions) == {"McpFunction", "AuthorizerFunction", "SearchStreamFunction", "WebFunction"}
    for name, fn in functions.items():
        p = fn["Properties"]
        assert p["Runtime"] == "python3.12" and p["Architectures"] == ["arm64"], name
        assert p["Timeout"] < 29, name  # below API Gateway's integration timeout
        assert p["TracingConfig"] == {"Mode": "Active"}, name
        env = p["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] and env["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}, name
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "jentrix", name
        group = out["Resources"][p["LoggingConfig"]["LogGroup"]["Ref"]]
        assert group["Type"] == "AWS::Logs::LogGroup" and group["Properties"]["RetentionInDays"] == {
            "Ref": "LogRetentionDays"
        }, name
    mcp = functions["McpFunction"]["Properties"]["Environment"]["Variables"]
    assert mcp["JENTRIX_BASE_PATH"] == {"Ref": "BasePath"}
    assert mcp["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"  # never a body in a trace
    # sam local start-api: endpoint overrides from parameters, local table names when set
    assert mcp["JENTRIX_DYNAMODB_ENDPOINT"] == {"Ref": "DynamoDbEndpoint"} and mcp["JENTRIX_S3_ENDPOINT"] == {
        "Ref": "S3Endpoint"
    }
    assert mcp["JENTRIX_TABLE"] == {"Fn::If": ["UseLocalDynamoDb", "jentrix", {"Ref": "AppTable"}]}
    assert functions["AuthorizerFunction"]["Properties"]["Handler"] == "functions.authorizer.handler"
    auth_env = functions["AuthorizerFunction"]["Properties"]["Environment"]["Variables"]
    assert auth_env["JENTRIX_TOKEN_CACHE_SECONDS"] == "0"
    assert auth_env["JENTRIX_REQUIRE_USAGE_KEY"] == {"Fn::If": ["UseLocalDynamoDb", "false", "true"]}


def test_table_keys_gsis_and_stream_equal_the_models(out):
    table = out["Resources"]["AppTable"]["Properties"]
    schema = Row._get_schema()
    keys = lambda ks: [(k["AttributeName"], k["KeyType"]) for k in ks]  # noqa: E731
    assert keys(table["KeySchema"]) == keys(schema["key_schema"])
    assert {g["IndexName"]: keys(g["KeySchema"]) for g in table["GlobalSecondaryIndexes"]} == {
        g["index_name"]: keys(g["key_schema"]) for g in schema["global_secondary_indexes"]
    }
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["DeletionProtectionEnabled"] == {"Ref": "TableDeletionProtection"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": Row.ttl.attr_name, "Enabled": True}
    (mapping,) = _of_type(out, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["EventSourceArn"] == {"Fn::GetAtt": ["AppTable", "StreamArn"]}
    assert mapping["Properties"]["FunctionName"] == {"Ref": "SearchStreamFunction"}


def test_bucket_blocks_public_access_forces_tls_and_expires_only_pending_uploads(out):
    bucket = out["Resources"]["ArtifactBucket"]["Properties"]
    assert (
        set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
        and len(bucket["PublicAccessBlockConfiguration"]) == 4
    )
    (sse,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    (cors,) = bucket["CorsConfiguration"]["CorsRules"]
    assert (
        cors["AllowedMethods"] == ["PUT"]
        and "content-type" in cors["AllowedHeaders"]
        and "x-amz-checksum-sha256" in cors["AllowedHeaders"]
    )
    rules = bucket["LifecycleConfiguration"]["Rules"]
    expiring = [r for r in rules if "ExpirationInDays" in r or "ExpirationDate" in r]
    (rule,) = expiring
    # Only never-attached uploads expire: the rule's filter is exactly the pending/ prefix.
    prefix = rule.get("Prefix", (rule.get("Filter") or {}).get("Prefix"))
    assert prefix == "pending/" and rule["Status"] == "Enabled"
    assert not (rule.get("Filter") or {}).get("Tag") and "TagFilters" not in rule
    policy = out["Resources"]["ArtifactBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (tls,) = [s for s in policy if s["Effect"] == "Deny"]
    assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and tls["Principal"] == "*"
    assert {json.dumps(r) for r in tls["Resource"]} == {
        json.dumps({"Fn::GetAtt": ["ArtifactBucket", "Arn"]}),
        json.dumps({"Fn::Sub": "${ArtifactBucket.Arn}/*"}),
    }


def test_outputs(out):
    assert {"McpUrl", "AppTableName", "IdempotencyTableName", "ArtifactBucketName", "UsagePlanId"} <= set(
        out["Outputs"]
    )
    assert out["Outputs"]["McpUrl"]["Value"]["Fn::Sub"].endswith("/${StageName}/api/mcp")
