"""`jentrix token create|revoke --aws` against moto's API Gateway and DynamoDB (in-process).

moto is the only stand-in for AWS here: it keeps API keys, usage plans and their keys like the
service. The whole --aws path runs (no endpoint: boto3 and PynamoDB talk to "AWS", which moto
intercepts), then the store is pointed back at the session's DynamoDB Local.
"""

from __future__ import annotations

import json
import os

import pytest

moto = pytest.importorskip("moto")

REGION = "eu-west-1"


@pytest.fixture
def aws(stack, monkeypatch):
    from domain import auth
    from domain.store import db

    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_SESSION_TOKEN", "testing"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # db.use() (here and in every `--aws --region` CLI run) writes these to os.environ for child
    # processes; put them back afterwards, or a later test's `jentrix dev` inherits eu-west-1.
    for name in ("AWS_REGION", "JENTRIX_TABLE", "JENTRIX_IDEMPOTENCY_TABLE", "JENTRIX_DYNAMODB_ENDPOINT"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
        if not os.environ[name]:
            monkeypatch.delenv(name)
    with moto.mock_aws():
        import boto3

        db.use(None, table="jx-app", idempotency_table="jx-idem", region=REGION)
        db.create_tables()
        api = boto3.client("apigateway", region_name=REGION)
        rest = api.create_rest_api(name="jx")
        root = api.get_resources(restApiId=rest["id"])["items"][0]["id"]
        api.put_method(restApiId=rest["id"], resourceId=root, httpMethod="POST", authorizationType="NONE")
        api.put_integration(restApiId=rest["id"], resourceId=root, httpMethod="POST", type="MOCK")
        api.create_deployment(restApiId=rest["id"], stageName="prod")
        plan = api.create_usage_plan(
            name="jx-default",
            apiStages=[{"apiId": rest["id"], "stage": "prod"}],
            throttle={"rateLimit": 20, "burstLimit": 40},
        )
        yield api, plan["id"], auth
    db.use(
        stack["JENTRIX_DYNAMODB_ENDPOINT"],
        table=stack["JENTRIX_TABLE"],
        idempotency_table=stack["JENTRIX_IDEMPOTENCY_TABLE"],
        region="us-east-1",
    )


def _run(capsys, *argv):
    from functions.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_create_attaches_a_key_and_revoke_removes_it(aws, capsys):
    api, plan_id, auth = aws
    target = ["--aws", "--region", REGION, "--table", "jx-app"]
    code, out, err = _run(
        capsys,
        "token",
        "create",
        "--user-email",
        "ops@example.com",
        "--create-user",
        "--scopes",
        "admin",
        "--usage-plan",
        plan_id,
        "--json",
        *target,
    )
    assert code == 0, err
    created = json.loads(out)
    (key,) = api.get_usage_plan_keys(usagePlanId=plan_id)["items"]
    assert key["id"] == created["usageKeyId"] and key["type"] == "API_KEY"
    stored = api.get_api_key(apiKey=key["id"], includeValue=True)
    assert stored["name"] == f"jentrix-{created['id']}" and stored["enabled"]
    # The authorizer returns the stored value as usageIdentifierKey.
    principal = auth.authenticate(created["token"])
    assert principal is not None and principal.usage_key == stored["value"]
    assert stored["value"] not in out  # the key value is never printed

    code, out, err = _run(capsys, "token", "revoke", "--user-email", "ops@example.com", created["id"], *target)
    assert code == 0, err
    assert api.get_usage_plan_keys(usagePlanId=plan_id)["items"] == []
    assert all(k["id"] != key["id"] for k in api.get_api_keys()["items"])
    assert auth.authenticate(created["token"]) is None


def test_aws_needs_a_usage_plan_and_an_unknown_plan_creates_nothing(aws, capsys):
    api, _, _ = aws
    target = ["--aws", "--region", REGION, "--table", "jx-app"]
    code, _, err = _run(capsys, "token", "create", "--user-email", "a@example.com", "--create-user", *target)
    assert code == 2 and "--usage-plan" in err
    code, _, err = _run(
        capsys, "token", "create", "--user-email", "a@example.com", "--create-user", "--usage-plan", "nope", *target
    )
    assert code == 1 and "UsagePlanId" in err
    assert api.get_api_keys()["items"] == []


def test_usage_plan_flag_without_aws_is_refused(stack, capsys):
    code, _, err = _run(
        capsys,
        "token",
        "create",
        "--user-email",
        "b@example.com",
        "--create-user",
        "--usage-plan",
        "p1",
        "--endpoint",
        stack["JENTRIX_DYNAMODB_ENDPOINT"],
        "--table",
        stack["JENTRIX_TABLE"],
    )
    assert code == 2 and "--aws" in err


@pytest.mark.parametrize("per", ["plan", "user"])
def test_shared_usage_keys_are_reused_and_outlive_a_revoke(aws, capsys, per):
    """Past API Gateway's 10,000 keys per account and Region: tokens share the plan's key (or
    their user's), so the number of keys no longer grows with the number of tokens."""
    api, plan_id, auth = aws
    target = ["--aws", "--region", REGION, "--table", "jx-app"]
    made = []
    for email in ("one@example.com", "one@example.com", "two@example.com"):
        code, out, err = _run(
            capsys,
            "token",
            "create",
            "--user-email",
            email,
            "--create-user",
            "--usage-plan",
            plan_id,
            "--usage-key",
            per,
            "--json",
            *target,
        )
        assert code == 0, err
        made.append(json.loads(out))
    keys = {m["usageKeyId"] for m in made}
    assert len(keys) == (1 if per == "plan" else 2)
    assert made[0]["usageKeyId"] == made[1]["usageKeyId"]
    assert {k["id"] for k in api.get_usage_plan_keys(usagePlanId=plan_id)["items"]} == keys
    values = {auth.authenticate(m["token"]).usage_key for m in made}
    assert len(values) == len(keys)  # the authorizer hands the shared value as usageIdentifierKey

    code, out, err = _run(capsys, "token", "revoke", "--user-email", "one@example.com", made[0]["id"], *target)
    assert code == 0, err
    assert "shared" in out
    assert {k["id"] for k in api.get_usage_plan_keys(usagePlanId=plan_id)["items"]} == keys  # kept for the others
    assert auth.authenticate(made[0]["token"]) is None and auth.authenticate(made[1]["token"]).usage_key in values
    assert "AuthorizerCacheSeconds" in out  # on AWS the gateway's cache is the revocation delay


def test_without_region_the_profiles_region_is_used_never_us_east_1(aws, capsys, monkeypatch, tmp_path):
    """`sam deploy` put the stack in the profile's region; token commands follow the same one."""
    api, plan_id, _ = aws
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    profile = tmp_path / "profile-config"
    profile.write_text(
        f"[default]\nregion = {REGION}\n"
    )  # the region lives only in the profile, as `aws configure` writes it
    monkeypatch.setenv("AWS_CONFIG_FILE", str(profile))
    code, _out, err = _run(
        capsys,
        "token",
        "create",
        "--user-email",
        "r@example.com",
        "--create-user",
        "--usage-plan",
        plan_id,
        "--json",
        "--aws",
        "--table",
        "jx-app",
    )
    assert code == 0, err  # the plan and the table exist only in REGION
    assert api.get_usage_plan_keys(usagePlanId=plan_id)["items"]
    empty = tmp_path / "config"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    code, _, err = _run(
        capsys,
        "token",
        "create",
        "--user-email",
        "r@example.com",
        "--usage-plan",
        plan_id,
        "--aws",
        "--table",
        "jx-app",
    )
    assert code == 2 and "--region" in err
