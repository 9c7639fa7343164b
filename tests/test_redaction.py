"""Secret redaction at ingest (domain/redaction.py) and the checksummed token format (domain/tokens.py).

Every secret below is GENERATED here from the provider's public shape (random characters from
the right alphabet at the right length); none is, or was, a real credential. The prose corpus is
ordinary writing with the things that look a bit like secrets but are not (UUIDs, git SHAs,
URLs without passwords, code that names a password without holding one).
"""

from __future__ import annotations

import base64
import json
import logging
import random
import string

import pytest

from domain import log_redaction, redaction, tokens
from domain.redaction import Redacted, redact

RNG = random.Random(20261201)
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"


def pick(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def jwt() -> str:
    header = b64url({"alg": "HS256", "typ": "JWT"})
    payload = b64url({"sub": pick(string.digits, 10), "name": pick(string.ascii_letters, 8), "iat": 1700000000})
    return f"{header}.{payload}.{pick(B64URL, 43)}"


def pem(kind: str = "RSA ") -> str:
    body = "\n".join(pick(B64, 64) for _ in range(8)) + "\n" + pick(B64, 20) + "=="
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


def legacy_pat() -> str:
    while True:
        body = pick(B64URL, 43)
        if any(c.isupper() for c in body) and any(c.islower() for c in body):
            return "tm_" + body


# (expected rule ids, the line that carries the secret, the secret itself).
# The expected set has more than one id only where two rules see the same span.
def shapes() -> list[tuple[set[str], str, str]]:
    out: list[tuple[set[str], str, str]] = []

    def add(rules: str | set[str], line: str, secret: str) -> None:
        out.append(({rules} if isinstance(rules, str) else rules, line.replace("{s}", secret), secret))

    add("jentrix-token", "export JENTRIX_TOKEN={s}", tokens.mint("tm_"))
    add("jentrix-token", "the oauth access token {s} expires in an hour", tokens.mint("tmo_"))
    add("jentrix-token", "old pat: {s}.", legacy_pat())
    add("auth-header", 'curl -H "Authorization: Bearer {s}" https://api.example.com/v1/me', pick(B64URL, 32))
    add(
        "auth-header",
        "Authorization: Basic {s}",
        base64.b64encode(f"{pick(ALNUM, 8)}:{pick(ALNUM, 12)}".encode()).decode(),
    )
    add("auth-header", '{"headers": {"authorization": "token {s}"}}', pick(ALNUM, 40))
    add("bearer-token", "send it with bearer {s} in the header", pick(B64URL, 28) + "." + pick(B64URL, 12))
    add("url-password", "DATABASE_URL=postgres://app_user:{s}@db.internal:5432/app", pick(ALNUM, 18))
    add("url-password", "redis://:{s}@cache.internal:6379/0", pick(ALNUM + "!$&*", 16))
    add("aws-access-key", "aws_access_key_id = {s}", "AKIA" + pick(UPPER_DIGITS, 16))
    add("aws-access-key", "temporary id {s}", "ASIA" + pick(UPPER_DIGITS, 16))
    add({"aws-secret-key", "aws-access-key"}, "aws_secret_access_key = {s}", pick(B64, 40))
    add({"aws-secret-key", "aws-access-key"}, '"SecretAccessKey": "{s}"', pick(B64, 40))
    add("github-token", "git clone https://x-access-token@github.com/o/r # token {s}", "ghp_" + pick(ALNUM, 36))
    add("github-token", "installation token: {s}", "ghs_" + pick(ALNUM, 36))
    add("github-fine-grained-pat", "GH_TOKEN={s}", "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59))
    add("gitlab-token", "CI_JOB_TOKEN is not {s}", "glpat-" + pick(B64URL, 20))
    add(
        "slack-token",
        "SLACK_BOT_TOKEN={s}",
        f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 13)}-{pick(ALNUM, 24)}",
    )
    add(
        "slack-token",
        "post to {s} when done",
        f"https://hooks.slack.com/services/T{pick(UPPER_DIGITS, 8)}/B{pick(UPPER_DIGITS, 10)}/{pick(ALNUM, 24)}",
    )
    add("stripe-key", "stripe.api_key = '{s}'", "sk_live_" + pick(ALNUM, 24))
    add("stripe-key", "restricted key {s}", "rk_live_" + pick(ALNUM, 24))
    add("jwt", "the id token was {s}.", jwt())
    add("private-key", "key follows:\n{s}\nend of key", pem())
    add("private-key", "deploy key:\n{s}\n", pem("OPENSSH "))
    add("private-key", "ec:\n{s}", pem("EC "))
    add("twilio-key", "account sid {s}", "AC" + pick(LOWER_HEX, 32))
    add("twilio-key", "api key sid {s}", "SK" + pick(LOWER_HEX, 32))
    add("sendgrid-key", "SENDGRID_API_KEY={s}", "SG." + pick(B64URL, 22) + "." + pick(B64URL, 43))
    add("discord-bot-token", "bot token {s}", "M" + pick(B64URL, 23) + "." + pick(B64URL, 6) + "." + pick(B64URL, 27))
    add("npm-token", "//registry.npmjs.org/:_authToken={s}", "npm_" + pick(ALNUM, 36))
    add("mailchimp-key", "mailchimp {s}", pick(LOWER_HEX, 32) + "-us12")
    add("square-oauth", "square secret {s}", "sq0csp-" + pick(B64URL, 43))
    add("artifactory-token", "artifactory api key {s} ", "AKC" + pick(ALNUM, 70))
    add("openai-key", "OPENAI_API_KEY={s}", "sk-proj-" + pick(B64URL, 48))
    add("anthropic-key", "anthropic: {s}", "sk-ant-api03-" + pick(B64URL, 93))
    add("pypi-token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + pick(B64URL, 60))
    add("password-assignment", 'DB_PASSWORD="{s}"', pick(ALNUM + "!@#%^&*", 20))
    add("password-assignment", "db:\n  password: '{s}'\n", pick(ALNUM, 14))
    add("password-assignment", "smtp_password: {s}", pick(string.ascii_lowercase, 6) + pick(string.digits, 4))
    add("password-assignment", '{"client_secret": "{s}"}', pick(B64URL, 32))
    add({"password-assignment", "cloudant"}, "cloudant_password = '{s}'", pick(LOWER_HEX, 64))
    add("ibm-cos-hmac", "cos_hmac_secret_access_key = '{s}'", pick(LOWER_HEX, 48))
    add(
        {"softlayer", "password-assignment"},
        "softlayer_api_key = {s}",
        pick(string.ascii_lowercase + string.digits, 64),
    )
    # issue 24 (items 7 and 8): shapes that used to be stored in clear
    add("aws-secret-key-shape", "I pasted {s} into the runbook by mistake", bare_aws_secret())
    add("jentrix-token", "the token {s} did not work (typo?)", bad_checksum(tokens.mint("tm_")))
    add("jentrix-token", "oauth {s}", bad_checksum(tokens.mint("tmo_")))
    add("private-key", "encrypted key:\n{s}\n", pem("ENCRYPTED "))
    add("google-api-key", "maps.js?key={s}&callback=init", "AIza" + pick(B64URL, 35))
    add("google-api-key", "GOOGLE_API_KEY={s}", "AIza" + pick(B64URL, 35))
    add("stripe-key", "test mode: {s}", "sk_test_" + pick(ALNUM, 24))
    add("stripe-key", "restricted test key {s}", "rk_test_" + pick(ALNUM, 24))
    add(
        "azure-connection-string",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net",
        pick(B64, 86) + "==",
    )
    add(
        "azure-sas-signature",
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig={s}",
        pick(ALNUM, 43) + "%3D",
    )
    add(
        {"npmrc-auth", "npm-token"},
        "//npm.internal.example/:_authToken={s}",
        pick(LOWER_HEX, 8)
        + "-"
        + pick(LOWER_HEX, 4)
        + "-4"
        + pick(LOWER_HEX, 3)
        + "-a"
        + pick(LOWER_HEX, 3)
        + "-"
        + pick(LOWER_HEX, 12),
    )
    add("npmrc-auth", "_auth={s}", base64.b64encode(f"ci:{pick(ALNUM, 16)}".encode()).decode())
    add(
        "url-password",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        pick(ALNUM, 6) + "@" + pick(ALNUM, 6) + "/" + pick(ALNUM, 6),
    )
    add("mysql-password", "mysql -h db.internal -u root -p{s} app < dump.sql", pick(ALNUM, 14))
    add("mysql-password", "mysqldump -u backup -p'{s}' --all-databases", pick(ALNUM, 6) + " " + pick(ALNUM, 6))
    # our rule file (domain/redaction_rules/rules.toml): one case per provider family at least
    add("private-key", "pgp:\n{s}\n", pgp_block())
    add("age-secret-key", "age key {s}", "AGE-SECRET-KEY-1" + pick("023456789ACDEFGHJKLMNPQRSTUVWXYZ", 58))
    add("github-token", "see {s}", "gho_" + pick(ALNUM, 36))
    add("gitlab-token", "deploy token {s}", "gldt-" + pick(B64URL, 20))
    add("gitlab-token", "CI_JOB_TOKEN is not {s}", "glpat-" + pick(B64URL, 20))
    add("npm-token", "token {s} ", "npm_" + pick(string.ascii_lowercase + string.digits, 36))
    add("gem-api-key", "GEM_HOST_API_KEY: {s}", "rubygems_" + pick(LOWER_HEX, 48))
    add("dockerhub-pat", "docker login -u ci -p {s}", "dckr_pat_" + pick(B64URL, 27))
    add("huggingface-token", "HF_TOKEN={s}", "hf_" + pick(string.ascii_letters, 34))
    add("digitalocean-token", "doctl auth init -t {s}", "dop_v1_" + pick(LOWER_HEX, 64))
    add("google-oauth-secret", "client secret {s}", "GOCSPX-" + pick(B64URL, 28))
    add("google-oauth-token", "access {s} expired", "ya29." + pick(B64URL, 60))
    add("azure-ad-client-secret", "app secret {s}", pick(ALNUM, 3) + "8Q~" + pick(ALNUM + "_-", 34))
    add("heroku-key", "heroku api {s}", "HRKU-" + pick(B64URL, 60))
    add(
        "heroku-key",
        "HEROKU_API_KEY={s}",
        f"{pick(LOWER_HEX, 8)}-{pick(LOWER_HEX, 4)}-{pick(LOWER_HEX, 4)}-{pick(LOWER_HEX, 4)}-{pick(LOWER_HEX, 12)}",
    )
    add("databricks-token", "DATABRICKS_TOKEN {s}", "dapi" + pick(LOWER_HEX, 32))
    add("terraform-cloud-token", "credentials {s}", pick(ALNUM, 14) + ".atlasv1." + pick(B64URL, 67))
    add("vault-token", "VAULT_TOKEN={s}", "hvs." + pick(B64URL, 90))
    add("doppler-token", "doppler {s}", "dp.pt." + pick(ALNUM, 43))
    add("pulumi-token", "PULUMI_ACCESS_TOKEN {s}", "pul-" + pick(LOWER_HEX, 40))
    add("flyio-token", "fly token {s}", "fo1_" + pick(B64URL, 43))
    add("netlify-token", "netlify {s}", "nfp_" + pick(ALNUM, 36))
    add("supabase-token", "supabase {s}", "sbp_" + pick(LOWER_HEX, 40))
    add("planetscale-token", "pscale {s}", "pscale_tkn_" + pick(ALNUM, 43))
    add("openai-key", "legacy openai {s}", "sk-" + pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20))
    add("groq-key", "GROQ_API_KEY {s}", "gsk_" + pick(ALNUM, 52))
    add("replicate-token", "replicate {s}", "r8_" + pick(ALNUM, 37))
    add("perplexity-key", "pplx {s}", "pplx-" + pick(ALNUM, 48))
    add("xai-key", "grok {s}", "xai-" + pick(ALNUM, 80))
    add("stripe-key", "webhook signing {s}", "whsec_" + pick(ALNUM, 32))
    add("square-token", "square access {s}", "EAAA" + pick(B64URL, 60))
    add("shopify-token", "shopify admin {s}", "shpat_" + pick(LOWER_HEX, 32))
    add(
        "slack-token",
        "socket mode {s}",
        "xapp-1-A" + pick(UPPER_DIGITS, 10) + "-" + pick(string.digits, 13) + "-" + pick(LOWER_HEX, 64),
    )
    add("telegram-bot-token", "bot {s}", pick(string.digits, 10) + ":AA" + pick(B64URL, 33))
    add("mailgun-key", "mailgun {s}", "key-" + pick(LOWER_HEX, 32))
    add("brevo-key", "brevo {s}", "xkeysib-" + pick(LOWER_HEX, 64) + "-" + pick(ALNUM, 16))
    add("atlassian-token", "jira api token {s}", "ATATT3xFfGF0" + pick(B64URL, 170) + "=" + pick("0123456789ABCDEF", 8))
    add("postman-key", "postman {s}", "PMAK-" + pick(LOWER_HEX, 24) + "-" + pick(LOWER_HEX, 34))
    add("linear-key", "LINEAR_API_KEY={s}", "lin_api_" + pick(ALNUM, 40))
    add("notion-token", "notion integration {s}", "ntn_" + pick(ALNUM, 46))
    add("airtable-token", "airtable {s}", "pat" + pick(ALNUM, 14) + "." + pick(LOWER_HEX, 64))
    add("figma-token", "figma {s}", "figd_" + pick(B64URL, 40))
    add("sentry-token", "SENTRY_AUTH_TOKEN {s}", "sntryu_" + pick(LOWER_HEX, 64))
    add("grafana-token", "grafana {s}", "glsa_" + pick(ALNUM, 32) + "_" + pick(LOWER_HEX, 8))
    add("newrelic-key", "new relic {s}", "NRAK-" + pick(UPPER_DIGITS, 27))
    add("mapbox-secret-token", "mapbox {s}", "sk.eyJ" + pick(B64URL, 60) + "." + pick(B64URL, 22))
    add("dropbox-token", "dropbox {s}", "sl." + pick(B64URL, 140))
    # a random value assigned to any *_TOKEN / *_KEY / *-token name (a provider with no known shape)
    add("token-assignment", "DD_API_TOKEN={s}", pick(LOWER_HEX, 32))
    add("token-assignment", 'cloudflare_key: "{s}"', pick(ALNUM, 37))
    return out


def pgp_block() -> str:
    body = "\n".join(pick(B64, 64) for _ in range(6)) + "\n=" + pick(B64, 4)
    return f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n-----END PGP PRIVATE KEY BLOCK-----"


def bad_checksum(token: str) -> str:
    return token[:-1] + ("A" if token[-1] != "A" else "B")


def bare_aws_secret() -> str:
    while True:
        value = pick(B64, 40)
        if redaction._bare_aws_secret(value):
            return value


SHAPES = shapes()


def leftovers(secret: str, text: str, width: int = 8, ignore: str = "") -> list[str]:
    """Pieces of the secret (``width`` characters or more) still in ``text``; structural
    lines of a PEM block (BEGIN/END) are not secret, nor are pieces that occur in ``ignore``."""
    body = "\n".join(line for line in secret.splitlines() if "PRIVATE KEY" not in line)
    pieces = (body[i : i + width] for i in range(max(1, len(body) - width + 1)))
    return [p for p in pieces if p in text and p.strip() and p not in ignore]


@pytest.mark.parametrize(
    ("rules", "line", "secret"), SHAPES, ids=[f"{min(r)}-{i}" for i, (r, _, _) in enumerate(SHAPES)]
)
def test_each_rule_catches_its_shape_whole(rules: set[str], line: str, secret: str) -> None:
    doc = f"Notes from Tuesday.\n{line}\nThat was all."
    out = redact(doc)
    assert secret not in out.text
    assert leftovers(secret, out.text) == [], out.text
    assert set(out.rule_ids) & rules, (out.rule_ids, out.text)
    assert out.text.startswith("Notes from Tuesday.\n") and out.text.endswith("\nThat was all."), out.text
    assert any(doc[f.start : f.end].find(secret[:8]) >= 0 or secret[:8] in doc[f.start : f.end] for f in out.findings)
    for f in out.findings:  # findings locate the ORIGINAL text and hold no value
        assert 0 <= f.start < f.end <= len(doc)
        assert set(vars(f)) == {"rule_id", "start", "end"}


def test_every_rule_has_a_shape_in_the_corpus() -> None:
    """Every rule, house, detect-secrets and our rule file's, has a shape above."""
    covered = set().union(*(r for r, _, _ in SHAPES))
    assert {r.id for r in redaction.rules()} <= covered


def test_rule_file_loads_and_every_pattern_compiles() -> None:
    """rules.toml is well formed: ids are marker-safe, keywords lowercase (the prefilter lowers
    the text), every pattern compiles, and the file ships with the package data."""
    loaded = redaction.file_rules()
    assert len(loaded) >= 40
    for rule in loaded:
        assert redaction.MARKER.fullmatch(f"[REDACTED:{rule.id}]"), rule.id
        assert rule.keywords and all(k == k.lower() for k in rule.keywords), rule.id
        rule.rx.compiled()
    assert sorted(p.name for p in redaction.RULES_TOML.parent.iterdir() if p.is_file()) == ["README.md", "rules.toml"]


def test_placeholders_and_identifiers_are_not_secrets() -> None:
    """An entropy floor keeps a placeholder of a token's shape; a name ending in _key or _token
    with an identifier or a phrase as its value (not random-looking) keeps it too."""
    assert redact("VAULT_TOKEN=hvs." + "a" * 30).findings == ()
    assert redact("HF_TOKEN=hf_" + "x" * 34).findings == ()
    assert redact("api_version = aaaaaaaaaaaaaaaa").findings == ()
    assert redact("CACHE_KEY=user_profile_settings and sort_key: created_at_desc_order").findings == ()
    # identifiers under a *_key / *_token name are not secrets
    for text in (
        "flag_key: enable_new_board_2026",
        "idempotency_key: req-2024-11-02-abc",
        "lookup_key = cm_w1_b2_17_01j9zk3m4n5p6q7r8s9t0v1w2x",
    ):
        assert redact(text).findings == (), text


def test_widening_recovers_what_the_detector_truncates() -> None:
    """detect-secrets names a GitHub token as 'ghp' and cuts JWT signatures; the span is the whole token."""
    token = "ghp_" + pick(ALNUM, 36)
    text = f"x {token} y"
    (finding,) = redact(text).findings
    assert text[finding.start : finding.end] == token
    value = jwt()
    text = f"Bearer-less id_token={value}; next"
    spans = [text[f.start : f.end] for f in redact(text).findings]
    assert value in spans or any(value in s for s in spans)
    block = pem()
    text = f"a\n{block}\nb"
    (finding,) = redact(text).findings
    assert text[finding.start : finding.end] == block


def test_a_jentrix_token_is_redacted_by_its_shape_whatever_its_checksum() -> None:
    """Issue 24 item 7: a token with a wrong checksum (a typo, a forgery) is still a credential
    attempt; it is redacted like a valid one, in a title as in a body."""
    good = tokens.mint("tm_")
    bad = bad_checksum(good)
    assert not tokens.checksum_ok(bad)
    assert redact(f"t={good}").rule_ids == ("jentrix-token",)
    out = redact(f"see tm_{pick(ALNUM, 42)} and {bad} and {bad_checksum(tokens.mint('tmo_'))}")
    assert out.text == "see [REDACTED:jentrix-token] and [REDACTED:jentrix-token] and [REDACTED:jentrix-token]"
    assert redact("tm_short_identifier and tmo_x").findings == ()


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.mark.parametrize(
    ("secret", "shown"),
    [
        ("AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), lambda s: s[:4] + "\u200b" + s[4:]),
        ("ghp_" + pick(ALNUM, 36), lambda s: "\u200d".join(s[i : i + 6] for i in range(0, len(s), 6))),
        ("ghp_" + pick(ALNUM, 36), fullwidth),
        (
            "AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
            lambda s: fullwidth(s[:10]) + "\u2060" + s[10:15] + "\ufeff" + s[15:],
        ),
        (tokens.mint("tm_"), lambda s: s[:5] + "\u200c" + s[5:]),
    ],
    # fixed ids: a minted token differs per process, and xdist workers must collect the same names
    ids=[
        "aws-key-id-zero-width-space",
        "github-token-zero-width-joiners",
        "github-token-full-width",
        "aws-key-id-mixed",
        "jentrix-token-zwnj",
    ],
)
def test_split_and_full_width_secrets_are_found_and_the_rest_stays_as_written(secret, shown) -> None:
    """Matching runs over the NFKC-folded text without zero-width characters; the replacement is
    made in the text as written, whose other full-width or invisible characters stay."""
    disguised = shown(secret)
    text = f"Ｎｏｔｅ：\u200bsee {disguised} — ｏｋ"
    out = redact(text)
    assert out.changed, out.text
    assert out.text.startswith("Ｎｏｔｅ：\u200bsee [REDACTED:") and out.text.endswith("] — ｏｋ"), out.text
    folded = redaction.normalise(out.text)[0]
    assert secret not in folded and leftovers(secret, folded) == []
    (f,) = out.findings
    assert text[f.start : f.end] == disguised


def test_normalise_maps_every_folded_position_back() -> None:
    text = "ａ\u200bｂ ﬁx"
    folded, origin = redaction.normalise(text)
    assert folded == "ab fix"
    assert [text[i] for i in origin[:-1]] == ["ａ", "ｂ", " ", "ﬁ", "ﬁ", "x"] and origin[-1] == len(text)
    assert redaction.normalise("plain ascii") == ("plain ascii", None)


PROSE = """
# Release notes for the planning board

We moved the sprint review to Thursday. The board now shows a column's WIP limit next to its
title, and the search box understands quoted phrases like "design review" and -excluded words.
Thanks to everyone who filed issues; the secret to a calm release is a boring checklist.

## What changed

- Tasks keep their rank when moved between boards (see commit 9fceb02d0ae598e95dc970b74767f19372d61af8
  and the follow-up 3b18e512dba79e4c8300dd08aeb37f8e728b8dad).
- The import job accepts request ids such as 123e4567-e89b-12d3-a456-426614174000 and
  f47ac10b-58cc-4372-a567-0e02b2c3d479 in its log lines, and prints them unchanged.
- Links to the docs: https://docs.example.com/guide/boards#columns, https://example.org/a/b?c=d&e=f,
  http://localhost:8787/api/mcp and ssh://git@github.com/example/repo.git all stay clickable.
- A password reset email now explains the steps instead of linking to a blank page.
- The token counter in the footer shows how many tokens the last prompt used (about 1,200).

## How to configure

Set the API base in your shell before running the CLI:

    export JENTRIX_API=https://api.example.com
    jentrix board list --workspace acme

The configuration file keeps its defaults:

```yaml
server:
  port: 8787
  host: 127.0.0.1
  password: ${DB_PASSWORD}
  api_key: <your key here>
logging:
  level: info
```

In Python the settings are read from the environment, never written in the file:

```python
import os

password = os.environ["DB_PASSWORD"]
api_key = settings.api_key
token = get_token()
secret = None
client_secret = load_secret(name="payments")
if not password:
    raise SystemExit("set DB_PASSWORD first")
```

And the same idea in JavaScript: `const token = process.env.API_TOKEN;` and
`headers: { Authorization: `Bearer ${token}` }` build the header at run time.

## Questions from the team

**Password:** ask the on-call person; it lives in the vault, not in this document.
Secret: there is no secret, just a habit of writing things down.
Can the key rotation run on Fridays? Yes, but the access token cache must be cleared first.
Who owns the AWS account? Platform does; ask them about the S3 bucket policy and IAM roles.
The bearer of bad news this week is the flaky test in test_tools_tasks.py, again.

| column      | limit | owner   |
|-------------|-------|---------|
| Backlog     | none  | product |
| In progress | 5     | team    |
| Review      | 3     | leads   |

Checksums we publish for the release archive (sha256):
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  jentrix-0.1.0.tar.gz
Commit short ids like 9fceb02 and tags like v0.1.0 are fine to share.

The meeting ended with a plan: write the migration, test it on a copy of the table, and run it
on Monday morning when traffic is low. Nobody volunteered for the retrospective slides, so the
facilitator will pick someone at random, as usual. Base64 of "hello world" is aGVsbG8gd29ybGQ=.
""".strip()


def prose_corpus() -> str:
    # several KB: the notes, plus a stretch of generated ordinary sentences
    words = "the a board task moves to review when its checklist is done and the owner agrees with the plan for next week".split()
    sentences = [" ".join(RNG.choice(words) for _ in range(RNG.randint(8, 18))).capitalize() + "." for _ in range(120)]
    return PROSE + "\n\n" + "\n".join(" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4))


def test_prose_corpus_has_no_findings() -> None:
    text = prose_corpus()
    assert len(text) > 8_000
    out = redact(text)
    assert out.findings == (), [(f.rule_id, text[f.start : f.end]) for f in out.findings]
    assert out.text == text


def test_redacting_twice_is_redacting_once() -> None:
    doc = prose_corpus() + "\n" + "\n".join(line for _, line, _ in SHAPES)
    once = redact(doc)
    twice = redact(once.text)
    assert twice.text == once.text and twice.findings == ()
    for _, _, secret in SHAPES:
        assert leftovers(secret, once.text, ignore=PROSE) == []


def test_adversarial_input_fails_closed_within_the_timeout() -> None:
    """A huge, pattern-dense body cannot be scanned in the time given: the unscanned lines are
    replaced whole (scan-timeout), and a secret hidden at the end does not survive."""
    secret = "ghp_" + pick(ALNUM, 36)
    hostile = ("password=" + "a" * 50 + " xoxb-1-1-1 aws key " + "A" * 60 + "\n") * 40_000 + f"tail {secret}\n"
    out = redact(hostile, timeout=0.05)
    assert secret not in out.text
    assert redaction.TIMEOUT_RULE in out.rule_ids
    assert all(f.rule_id == redaction.TIMEOUT_RULE or f.start < len(hostile) for f in out.findings)


class _SlowOnWholeText:
    """A pattern stand-in: times out over the whole text, and on the line holding 'stuck'."""

    def __init__(self, inner):
        self.inner = inner

    def finditer(self, text, timeout=None):
        if "\n" in text or "stuck" in text:
            raise TimeoutError("regex timed out")
        return self.inner.finditer(text, timeout=timeout)


def test_a_timeout_falls_back_to_lines_and_redacts_the_line_it_cannot_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    import regex

    slow = redaction.Rule(
        "github-token",
        _SlowOnWholeText(regex.compile(r"ghp_[A-Za-z0-9]{36}")),
        ("ghp_",),
        charset=redaction.ALNUM | {"_"},
    )
    monkeypatch.setattr(redaction, "rules", lambda: (slow,))
    token = "ghp_" + pick(ALNUM, 36)
    text = f"first line is fine\nsecond has {token}\nthird is stuck here\nlast"
    out = redact(text)
    assert out.text == "first line is fine\nsecond has [REDACTED:github-token]\n[REDACTED:scan-timeout]\nlast"


def test_markers_and_empty_text() -> None:
    assert redact("") == Redacted("", ())
    assert redact("password = [REDACTED:password-assignment]").findings == ()
    assert redact("Authorization: Bearer [REDACTED:auth-header]").findings == ()


def test_overlapping_findings_merge_into_one_span() -> None:
    key = pick(B64, 40)
    out = redact(f"aws_secret_access_key={key}")
    assert out.text == "aws_secret_access_key=[REDACTED:aws-secret-key]"
    assert len(out.findings) == 1


def test_logging_filter_redacts_message_args_extra_and_exception() -> None:
    token = tokens.mint("tm_")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("jentrix.test-redaction")
    logger.propagate = False
    handler = Keep()
    logger.addHandler(handler)
    log_redaction.install(logger)
    try:
        logger.warning("token %s was sent", token, extra={"body": f"Authorization: Bearer {token}", "n": 3})
        logger.warning({"event": "sent", "header": f"Bearer {token}"})
        try:
            raise ValueError(f"bad header {token}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    first, as_dict, second = records
    assert as_dict.msg == {"event": "sent", "header": "Bearer [REDACTED:jentrix-token]"}
    assert token not in first.getMessage() and "[REDACTED:jentrix-token]" in first.getMessage()
    assert token not in first.body and first.n == 3  # type: ignore[attr-defined]
    formatted = logging.Formatter().format(second)
    assert token not in formatted and "ValueError" in formatted


def test_our_loggers_carry_the_filter() -> None:
    from domain import pipeline

    assert any(isinstance(f, log_redaction.RedactingFilter) for f in logging.getLogger(pipeline.logger.name).filters)


# --- tokens ----------------------------------------------------------------------------------


def test_new_tokens_are_checksummed_and_distinct_from_legacy() -> None:
    for prefix in tokens.PREFIXES:
        t = tokens.mint(prefix)
        assert t.startswith(prefix) and len(t) == len(prefix) + tokens.BODY_CHARS
        assert tokens.shape(t) == "checksummed" and tokens.checksum_ok(t)
    assert tokens.shape(legacy_pat()) == "legacy"
    assert tokens.shape("tm_" + "x" * 43) == "legacy"
    typo = tokens.mint("tm_")
    typo = typo[:10] + ("a" if typo[10] != "a" else "b") + typo[11:]
    assert tokens.shape(typo) == "malformed"
    assert tokens.shape("tm_short") == "malformed" and tokens.shape("Bearer x") == "malformed"


def test_a_mistyped_token_is_refused_without_a_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from domain import auth

    reads: list[str] = []
    monkeypatch.setattr(auth.PatVerifier, "verify", lambda self, secret: reads.append(secret))
    good = tokens.mint("tm_")
    assert auth.authenticate(good[:-1] + ("0" if good[-1] != "0" else "1")) is None
    assert auth.authenticate("tm_" + "y" * 20) is None
    assert reads == []
    auth.authenticate(good)
    auth.authenticate(legacy_pat())
    assert len(reads) == 2  # checksummed and legacy tokens still reach the lookup


def test_a_cached_token_skips_the_checksum(owner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm cache answers before the shape check (a cached secret passed it when first
    read); a miss still checks the shape first, and the cache never outlives its TTL."""
    from domain import auth
    from domain.settings import settings

    monkeypatch.setattr(settings, "token_cache_seconds", 30)
    auth.PAT_VERIFIER.clear()
    shapes: list[str] = []
    real_shape = tokens.shape
    monkeypatch.setattr(tokens, "shape", lambda t: shapes.append(t) or real_shape(t))
    first = auth.authenticate(owner.token)  # a miss: shape, then the GetItem
    assert first is not None and first.user_id == owner.user_id and shapes == [owner.token]
    again = auth.authenticate(owner.token)  # a hit: no shape check, no read
    assert again is first and shapes == [owner.token]
    typo = owner.token[:-1] + ("0" if owner.token[-1] != "0" else "1")
    assert auth.authenticate(typo) is None and shapes[-1] == typo  # a different secret misses the cache
    monkeypatch.setattr(settings, "token_cache_seconds", 0)  # cache off: every call checks and reads
    assert auth.PAT_VERIFIER.cached(owner.token) is None
    assert auth.authenticate(owner.token) is not None and shapes[-1] == owner.token


# --- properties --------------------------------------------------------------------------------

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    pieces = st.sampled_from([line for _, line, _ in SHAPES] + PROSE.splitlines())
    noise = st.text(alphabet=string.ascii_letters + string.digits + " _-=:/.@\"'\n", max_size=40)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.one_of(pieces, noise), min_size=1, max_size=8))
    def test_property_idempotent_and_no_secret_survives(parts: list[str]) -> None:
        text = " ".join(parts)
        once = redact(text)
        assert redact(once.text).text == once.text
        for _, line, secret in SHAPES:
            if line in text:
                assert secret not in once.text
        for f in once.findings:
            assert 0 <= f.start < f.end <= len(text)


def test_powertools_json_line_carries_no_secret() -> None:
    """The pipeline logs through Powertools (JSON lines): message, extra fields and the exception."""
    import io

    from aws_lambda_powertools import Logger

    buf = io.StringIO()
    logger = Logger(service=f"jentrix-probe-{RNG.randint(0, 10**6)}", stream=buf)
    log_redaction.install(logging.getLogger(logger.name))
    token = tokens.mint("tm_")
    try:
        raise RuntimeError(f"boom {token}")
    except RuntimeError:
        logger.exception("failed with %s", token, extra={"body": f"password=hunter2222 {token}"})
    line = json.loads(buf.getvalue().splitlines()[0])
    assert token not in buf.getvalue() and "hunter2222" not in buf.getvalue()
    assert line["message"] == "failed with [REDACTED:jentrix-token]" and "[REDACTED:jentrix-token]" in line["exception"]


def test_the_per_call_log_line_skips_the_scan_but_caller_text_does_not() -> None:
    """The fast path: a lowercase message with server-made extras is passed as is; a secret in
    any other field, or in the message, is still redacted."""
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    plain = logging.makeLogRecord(
        {
            "msg": "tool call",
            "tool": "get_task",
            "principal": "usr_1",
            "token_id": "tok_1",
            "outcome": "OK",
            "latency_ms": 1.5,
            "correlation_id": "c0ffee",
        }
    )
    assert log_redaction._plain(plain)
    assert log_redaction.RedactingFilter().filter(plain) and plain.msg == "tool call"
    leaky = logging.makeLogRecord({"msg": "tool call", "tool": "get_task", "note": f"token {secret}"})
    assert not log_redaction._plain(leaky)
    log_redaction.RedactingFilter().filter(leaky)
    assert secret not in leaky.note
    loud = logging.makeLogRecord({"msg": f"token {secret}"})
    log_redaction.RedactingFilter().filter(loud)
    assert secret not in loud.msg


def test_importing_the_pipeline_does_not_load_the_detectors() -> None:
    """The log filter is installed at import, the detectors load with the first record that needs
    a scan: a fresh interpreter importing the Lambda entry has neither ``domain.redaction`` nor
    ``regex`` loaded (both cost a cold start tens of milliseconds)."""
    import subprocess
    import sys
    from pathlib import Path

    probe = "import sys, functions.lambda_handler; print(sorted(m for m in ('domain.redaction', 'regex', 'detect_secrets') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
