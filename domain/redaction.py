"""Secret redaction at ingest: text bodies and log lines lose their secrets before storage.

:func:`redact` returns a :class:`Redacted`: the text with every secret replaced by
``[REDACTED:<rule-id>]``, and the findings (rule id and offsets in the ORIGINAL text, never the
value). Three sources of rules run over the text:

* **Provider detectors** from ``bc-detect-secrets`` (the maintained fork of Yelp's
  detect-secrets, a runtime dependency): the regex plugins for AWS key ids, GitHub, Slack,
  Stripe, JWT, private keys, Twilio, SendGrid, Discord, npm, Mailchimp, Square, Artifactory and
  the IBM/Cloudant/SoftLayer assignments. The entropy plugins are left out (they flag ordinary
  prose), and so is the keyword plugin (our house rules cover assignments with fewer false hits).
  Each plugin's own patterns are compiled with the ``regex`` module so that they run under a
  time bound and give offsets; the plugin's ``analyze_string`` then confirms each match (so
  its validity checks, e.g. that a JWT's parts decode, still apply) and names the value.
  detect-secrets reports values, sometimes only a piece of the secret (a GitHub token comes
  back as ``ghp``, a JWT without its signature, a PEM block as its header), so each value is
  located inside its match and widened to the whole token it sits in; a private key widens to
  its whole ``BEGIN … END`` block.
* **House rules** (ours): Jentrix tokens (``tm_``/``tmo_`` by shape, whatever their checksum,
  and legacy PATs), ``Authorization: Bearer|Basic|token …``, passwords in URL userinfo (also
  when they hold ``@`` or ``/``), AWS secret access keys next to their name and bare ones (40
  base64 characters of high entropy), ``mysql -pPASSWORD``, ``.npmrc`` auth lines, Azure
  connection-string keys and SAS signatures, generic ``password=``/``secret:`` assignments, and
  a few provider shapes detect-secrets lacks (GitHub fine-grained PATs,
  PyPI tokens, Google API keys anywhere in a text).
* **Our rule file** (``domain/redaction_rules/rules.toml``, :func:`file_rules`): a few dozen
  provider token shapes (cloud, source hosting, package registries, AI, payments, messaging,
  SaaS), each written here from the provider's public description of its token format, with
  lowercase keywords, an optional capture group and an optional entropy floor. The file is
  parsed on the first redaction, and each pattern is compiled only when one of its keywords
  occurs in a text.

Matching runs over a normalised copy of the text (NFKC, which folds full-width and other
compatibility characters, with zero-width characters removed), so a secret split by U+200B or
written in full-width letters is found; the spans are mapped back and replaced in the text as it
was written, which otherwise stays unchanged.

Every pattern runs under one deadline per call (``timeout``, seconds). When a pattern runs out
of time over the whole text, the rest of the text is scanned line by line; a line that cannot be
scanned in time is replaced whole (rule ``scan-timeout``): the redactor fails closed.

Spans are merged and replaced right to left. Redacting twice gives the same text as once:
markers are never matched again.
"""

from __future__ import annotations

import bisect
import functools
import math
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

DEFAULT_TIMEOUT = 2.0  # seconds for one redact() call, all rules together
MAX_WIDEN = 4096  # characters a value may grow by on each side
TIMEOUT_RULE = "scan-timeout"
MARKER = regex.compile(r"\[REDACTED:[a-z0-9-]+\]")
_FLAGS = regex.IGNORECASE | regex.MULTILINE | regex.DOTALL | regex.VERBOSE

# Characters a token may be made of, per family, for widening a reported value.
B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
TOKEN = B64URL | frozenset("+/=.")
JWT_CHARS = B64URL | frozenset(".=")
ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@dataclass(frozen=True)
class Finding:
    """One redacted span: which rule, and where it was in the original text (never the value)."""

    rule_id: str
    start: int
    end: int


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[Finding, ...]

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(sorted({f.rule_id for f in self.findings}))

    @property
    def changed(self) -> bool:
        return bool(self.findings)


@dataclass(frozen=True)
class Rule:
    """A compiled pattern. ``group`` names the secret inside a house rule's match (0 = all);
    ``plugin`` (detector rules) confirms a match and names its values; ``charset`` is what a value
    widens over; ``keywords`` (lowercase) skip the rule when none occurs in the text; ``accept``
    vets the final value."""

    id: str
    rx: Any
    keywords: tuple[str, ...] = ()
    group: int = 0
    plugin: Any = None  # a detect_secrets RegexBasedDetector
    charset: frozenset[str] = TOKEN
    accept: Callable[[str], bool] | None = None
    pem: bool = False


class Lazy:
    """A pattern compiled on first use (``regex.compile(pattern, flags)``); quacks like the
    compiled pattern for ``finditer``/``search``/``fullmatch``. :meth:`ready` compiles it and
    returns the seconds that took (0.0 once compiled)."""

    __slots__ = ("_rx", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._rx: Any = None  # the compiled `regex` pattern (an untyped library), built on first use

    def ready(self) -> float:
        if self._rx is not None:
            return 0.0
        began = time.monotonic()
        self._rx = regex.compile(self.pattern, self.flags)
        return time.monotonic() - began

    def compiled(self) -> Any:
        self.ready()
        return self._rx

    def finditer(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().finditer(*args, **kwargs)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().search(*args, **kwargs)

    def fullmatch(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled().fullmatch(*args, **kwargs)


def _not_hex(value: str) -> bool:
    """An AWS secret is 40 base64 characters; 40 hex characters is a git SHA, not a key."""
    return not regex.fullmatch(r"[0-9a-f]{40}|[0-9A-F]{40}", value)


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _bare_aws_secret(value: str) -> bool:
    """A 40-character base64 run alone in prose counts as an AWS secret key when it looks random."""
    return (
        _not_hex(value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and value.count("/") <= 3
        and entropy(value) > 4.25
    )


def _not_a_port(value: str) -> bool:
    return not value.startswith("/") and not regex.fullmatch(r"\d{1,5}(?:/.*)?", value, regex.DOTALL)


def _mixed(value: str) -> bool:
    """Random 43-char url-safe bodies virtually always hold both cases; identifiers rarely do."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _plugin_rules() -> list[Rule]:
    # Imported here: detect-secrets (and the requests it pulls in) costs ~0.2 s, paid on the
    # first redaction rather than on every cold start that never redacts.
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    table: list[tuple[str, Any, tuple[str, ...], frozenset[str], Callable[[str], bool] | None]] = [
        (
            "aws-access-key",
            AWSKeyDetector,
            ("akia", "asia", "abia", "acca", "a3t", "aws"),
            TOKEN - {".", "-", "_", "="},
            _not_hex,
        ),
        ("github-token", GitHubTokenDetector, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ALNUM | {"_"}, None),
        ("slack-token", SlackDetector, ("xox", "hooks.slack.com"), ALNUM | {"-"}, None),
        ("stripe-key", StripeDetector, ("k_live_",), ALNUM | {"_"}, None),
        ("jwt", JwtTokenDetector, ("eyj",), JWT_CHARS, None),
        ("private-key", PrivateKeyDetector, ("private key", "putty-user-key"), TOKEN, None),
        ("twilio-key", TwilioKeyDetector, ("ac", "sk"), ALNUM, None),
        ("sendgrid-key", SendGridDetector, ("sg.",), B64URL | {"."}, None),
        ("discord-bot-token", DiscordBotTokenDetector, (), B64URL | {"."}, None),
        ("npm-token", NpmDetector, ("npm",), B64URL, None),
        ("mailchimp-key", MailchimpDetector, ("-us",), ALNUM | {"-"}, None),
        ("square-oauth", SquareOAuthDetector, ("sq0csp-",), B64URL, None),
        ("artifactory-token", ArtifactoryDetector, ("akc", "ap"), ALNUM, None),
        ("ibm-cos-hmac", IbmCosHmacDetector, ("secret",), ALNUM, None),
        ("cloudant", CloudantDetector, ("cl",), ALNUM, None),
        ("softlayer", SoftlayerDetector, ("sl", "softlayer"), ALNUM, None),
    ]
    rules = []
    for rule_id, cls, keywords, charset, accept in table:
        plugin = cls()
        for pattern in cls.denylist:
            rx = regex.compile(pattern.pattern, (pattern.flags & _FLAGS) | regex.V0)
            rules.append(
                Rule(rule_id, rx, keywords, plugin=plugin, charset=charset, accept=accept, pem=rule_id == "private-key")
            )
    return rules


_NAME = r"(?i)\b(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret|client_secret|api_?key|access_?token|auth_?token)[\"']?"
_VALUE = r"([^\s\"'`,;]{6,256})"
_WORDS = ("pass", "pwd", "secret", "key", "token")


def _literal(value: str) -> bool:
    return not _looks_like_code(value)


# A value that starts with a lowercase word and a separator is an identifier or a phrase
# (``enable_new_board_2026``, ``req-2024-11-02-abc``, our ``tsk_…``/``cm_…`` ids), not a secret.
_WORDY = regex.compile(r"[a-z]{1,12}[_-]")


def _random_literal(value: str) -> bool:
    """A value that reads as a generated secret, not a reference (``settings.api_key``, ``${X}``):
    letters and digits with entropy above 3 bits per character (random hex reaches about
    3.5-3.9), or both letter cases with entropy above 4 bits (random base62 reaches about 4.5-5)."""
    if _looks_like_code(value) or _WORDY.match(value):
        return False
    h = entropy(value)
    digits_and_letters = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return (digits_and_letters and h > 3.0) or (_mixed(value) and h > 4.0)


def _house_rules() -> list[Rule]:
    not_marker = r"(?!\[REDACTED:)"
    house = [
        # Ours first: a checksummed tm_/tmo_ token (verified below), then legacy PATs by shape.
        # By shape: a token with a wrong checksum (mistyped, truncated by one, or forged) is still
        # somebody's credential attempt and is not stored either.
        Rule("jentrix-token", regex.compile(r"(?<![A-Za-z0-9_-])tmo?_[A-Za-z0-9]{42}(?![A-Za-z0-9_-])"), ("tm",)),
        Rule(
            "jentrix-token",
            regex.compile(r"(?<![A-Za-z0-9_-])tm_([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])"),
            ("tm_",),
            group=0,
            accept=lambda v: _mixed(v[3:]),
        ),
        Rule(
            "auth-header",
            regex.compile(
                r"(?i)\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)\s+"
                + not_marker
                + r"([^\s\"'<>,;]{8,})"
            ),
            ("authorization",),
            group=1,
        ),
        Rule(
            "bearer-token",
            regex.compile(r"(?i)\bbearer\s+" + not_marker + r"([A-Za-z0-9._~+/-]{16,}=*)"),
            ("bearer",),
            group=1,
        ),
        # The password ends at the last '@' before the host, so it may hold '@' and '/' itself;
        # a port ("host:443/@user") or a query ("?mail=a@b.c") is not a password.
        Rule(
            "url-password",
            regex.compile(
                r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@\[\]\"'<>]{0,256}:"
                + not_marker
                + r"([^\s\"'<>?#]{1,256})@(?=[a-z0-9\[][a-z0-9.\[\]:-]{0,253}(?:[/?#:\s\"'<>),;]|$))"
            ),
            ("://",),
            group=1,
            charset=frozenset(),
            accept=_not_a_port,
        ),
        Rule(
            "aws-secret-key",
            regex.compile(
                r"(?i)(?:aws_?)?secret_?(?:access_?)?key[\"']?\s*(?::=|=>|[:=])\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
            ),
            ("secret",),
            group=1,
            accept=_not_hex,
        ),
        # A bare AWS secret access key in prose: 40 base64 characters alone, of high entropy, with
        # both cases and a digit (a hex run is a git SHA; a path has many slashes and low entropy).
        Rule(
            "aws-secret-key-shape",
            regex.compile(r"(?<![A-Za-z0-9/+_-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_-])"),
            (),
            accept=_bare_aws_secret,
            charset=frozenset(),
        ),
        # mysql/mariadb clients take the password glued to -p ("-p secret" would prompt instead).
        Rule(
            "mysql-password",
            regex.compile(
                r"(?i)\b(?:mysql(?:dump|admin|import|sh)?|mariadb(?:-dump|-admin)?)\b[^\n]{0,256}?[ \t](?-i:-p)"
                + not_marker
                + r"(\"[^\"\n]{1,128}\"|'[^'\n]{1,128}'|[^\s\"'-][^\s]{0,127})"
            ),
            ("mysql", "mariadb"),
            group=1,
            charset=frozenset(),
        ),
        # .npmrc: "//registry.example.com/:_authToken=…", "_auth=…", "_password=…".
        Rule(
            "npmrc-auth",
            regex.compile(
                r"(?im)(?:^|[\s:\"'])_(?:authtoken|auth|password)[ \t]*=[ \t]*[\"']?"
                + not_marker
                + r"([^\s\"'$]{6,512})"
            ),
            ("_auth", "_password"),
            group=1,
            charset=frozenset(),
        ),
        # Azure storage / Service Bus connection strings and SAS signatures.
        Rule(
            "azure-connection-string",
            regex.compile(
                r"(?i)\b(?:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)[ \t]*=[ \t]*"
                + not_marker
                + r"([A-Za-z0-9+/]{20,}={0,2})"
            ),
            ("accountkey", "sharedaccesskey", "primarykey", "secondarykey"),
            group=1,
            charset=frozenset(),
        ),
        Rule(
            "azure-sas-signature",
            regex.compile(
                r"(?i)(?:[?&;]|\bSharedAccessSignature=)(?:[^\s&;]*&)?sig="
                + not_marker
                + r"([A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})"
            ),
            ("sig=",),
            group=1,
            charset=frozenset(),
        ),
        Rule(
            "password-assignment",
            regex.compile(_NAME + r"\s*(?::=|=>|=)\s*(?:\"|'|)" + not_marker + _VALUE),
            _WORDS,
            group=1,
            charset=frozenset(),
            accept=_literal,
        ),
        # Any other prefixed *_TOKEN / *_KEY name with a random-looking literal value: a
        # provider with no known shape (DD_API_TOKEN=…, cloudflare_key: "…"). Prose and code pass:
        # the value must be 16+ characters of letters and digits together, of high entropy.
        Rule(
            "token-assignment",
            regex.compile(
                r"(?i)\b(?:[a-z0-9]+[_-])+(?:token|key)[\"']?\s*(?::=|=>|=|:)\s*[\"']?"
                + not_marker
                + r"([A-Za-z0-9][A-Za-z0-9_+/.=-]{15,255})(?![A-Za-z0-9_+/.=-])"
            ),
            ("token", "key"),
            group=1,
            charset=frozenset(),
            accept=_random_literal,
        ),
        # With a colon (YAML, JSON, prose): quoted, or holding a digit or symbol, so "Password: see the vault" stays.
        Rule(
            "password-assignment",
            regex.compile(_NAME + r"\s*:\s*[\"']" + not_marker + _VALUE),
            _WORDS,
            group=1,
            charset=frozenset(),
            accept=_literal,
        ),
        Rule(
            "password-assignment",
            regex.compile(_NAME + r"\s*:[ \t]*" + not_marker + r"(?=[^\s]*[0-9!#$%&*+?@^~])" + _VALUE),
            _WORDS,
            group=1,
            charset=frozenset(),
            accept=_literal,
        ),
        Rule(
            "github-fine-grained-pat",
            regex.compile(r"github_pat_[A-Za-z0-9_]{22,255}"),
            ("github_pat_",),
            charset=ALNUM | {"_"},
        ),
        # Google API keys are exactly AIza + 35, anywhere: also inside a URL query ("?key=AIza…&cb=").
        Rule(
            "google-api-key",
            regex.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
            ("aiza",),
            charset=frozenset(),
        ),
        Rule("pypi-token", regex.compile(r"pypi-AgE[A-Za-z0-9_-]{50,}"), ("pypi-",), charset=B64URL),
    ]
    return house


_CODE_VALUE = regex.compile(
    r"(?:[A-Za-z_][A-Za-z0-9_.]*\(.*|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\[.*)?|[A-Za-z_][A-Za-z0-9_]*\[.*|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%[sd]|None|null|true|false|undefined|\*+|x{6,}|\.{3,}|<redacted>|redacted|changeme)"
)


def _looks_like_code(value: str) -> bool:
    """A value that reads as a reference, not a literal: ``get_password()``, ``os.environ``,
    ``${DB_PASSWORD}``, ``<password>``, ``None``, ``******`` ..."""
    try:
        return bool(_CODE_VALUE.fullmatch(value, timeout=0.05))
    except TimeoutError:
        return False


# -- our rule file ---------------------------------------------------------------------------------
RULES_TOML = Path(__file__).with_name("redaction_rules") / "rules.toml"


def _above(threshold: float) -> Callable[[str], bool]:
    return lambda value: entropy(value) > threshold


@functools.cache
def file_rules() -> tuple[Rule, ...]:
    """The provider rules of ``domain/redaction_rules/rules.toml`` (ours, written from each
    provider's public token format; the file's header documents its fields). Parsed once, on the
    first redaction; each pattern compiles the first time one of its keywords occurs in a text.
    Raises ``KeyError``/``tomllib.TOMLDecodeError`` on a malformed file (a packaging defect,
    caught by tests/test_redaction.py)."""
    import tomllib  # deferred with the rest: parsed on the first redaction only

    with RULES_TOML.open("rb") as fh:
        data = tomllib.load(fh)
    out = []
    for spec in data["rules"]:
        threshold = float(spec.get("entropy", 0.0))
        out.append(
            Rule(
                spec["id"],
                Lazy(spec["regex"]),
                tuple(k.lower() for k in spec["keywords"]),
                group=int(spec.get("group", 0)),
                charset=frozenset(),
                accept=_above(threshold) if threshold else None,
                pem=bool(spec.get("pem", False)),
            )
        )
    return tuple(out)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Every rule: house rules, then the detect-secrets plugins, then our rule file's (built once,
    on first use; the file's patterns compile lazily)."""
    return tuple(_house_rules() + _plugin_rules()) + file_rules()


class _Clock:
    def __init__(self, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout

    def left(self) -> float:
        return self.deadline - time.monotonic()


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _matches(rule: Rule, text: str, clock: _Clock, failed: list[tuple[int, int]]) -> Iterator[tuple[int, Any]]:
    """Matches of one rule as (offset, match). On a timeout, fall back to lines; once time is
    up, the text this rule has not scanned is appended to ``failed`` as one range (its lines
    are replaced whole later), so the work after the deadline stays linear."""
    resume = 0
    try:
        if clock.left() <= 0:
            raise TimeoutError
        for m in rule.rx.finditer(text, timeout=clock.left()):
            resume = m.end()
            yield 0, m
            if clock.left() <= 0:  # handling the matches used the time up
                failed.append((resume, len(text)))
                return
        return
    except TimeoutError:
        pass
    begin = _line_start(text, resume)
    while begin < len(text):
        end = _line_end(text, begin)
        if clock.left() <= 0:
            failed.append((begin, len(text)))
            return
        try:
            found = list(rule.rx.finditer(text[begin:end], timeout=clock.left()))
        except TimeoutError:
            failed.append((begin, end))
            found = []
        for m in found:
            if m.start() + begin >= resume:
                yield begin, m
        begin = end + 1


def _failed_lines(text: str, failed: list[tuple[int, int]]) -> list[Finding]:
    """The whole lines the unscanned ranges touch, one finding per run of adjacent lines."""
    out: list[Finding] = []
    for start, end in sorted(failed):
        begin = _line_start(text, start)
        stop = _line_end(text, max(start, end - 1))
        if out and begin <= out[-1].end + 1:
            if stop > out[-1].end:
                out[-1] = Finding(TIMEOUT_RULE, out[-1].start, stop)
            continue
        if stop > begin:
            out.append(Finding(TIMEOUT_RULE, begin, stop))
    return out


def _widen(text: str, start: int, end: int, charset: frozenset[str]) -> tuple[int, int]:
    if charset:
        floor = max(0, start - MAX_WIDEN)
        while (
            start > floor and text[start - 1] in charset and text[start - 1] != "="
        ):  # '=' pads a token's end; on its left it assigns
            start -= 1
        ceiling = min(len(text), end + MAX_WIDEN)
        while end < ceiling and text[end] in charset:
            end += 1
    while end > start and text[end - 1] == ".":  # a sentence's full stop is not part of a token
        end -= 1
    return start, end


_PEM_BEGIN = regex.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d:")
_PEM_END = regex.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|Private-MAC:[ \t]*[0-9a-fA-F]+")


def _pem_block(text: str, start: int, end: int) -> tuple[int, int]:
    """A private key redacts as its whole block: from its BEGIN line to the matching END line,
    or, when the END is missing, to the end of the key's base64 lines."""
    head = text.rfind("-----BEGIN", max(0, start - 64), start + 16)
    if head < 0:
        head = text.rfind("PuTTY-User-Key-File", max(0, start - 64), start + 32)
    if head >= 0:
        start = min(start, head)
    try:
        tail = _PEM_END.search(text, end, min(len(text), end + 64 * 1024), timeout=0.2)
    except TimeoutError:
        tail = None
    if tail is not None and not _PEM_BEGIN.search(text, end, tail.start()):
        return start, tail.end()
    charset = TOKEN | {"\n", "\r", "\\", ":", " "}
    ceiling = min(len(text), end + 64 * 1024)
    while end < ceiling and text[end] in charset:
        end += 1
    while end > start and text[end - 1] in " \n\r":
        end -= 1
    return start, end


def _spans(rule: Rule, base: int, m: Any, text: str) -> Iterable[tuple[int, int]]:
    if rule.plugin is None:
        s, e = m.span(rule.group)
        if s < 0:  # the group sits in an alternative that did not match: the match is the secret
            s, e = m.span()
        s, e = s + base, e + base
        if rule.accept and not rule.accept(text[s:e]):
            return
        yield _pem_block(text, s, e) if rule.pem else _widen(text, s, e, rule.charset)
        return
    ms, me = m.start() + base, m.end() + base
    chunk = text[ms:me]
    values = list(rule.plugin.analyze_string(chunk))  # the detector's own verdict
    if not values:
        return
    if not any(values):  # it matched, but reported an empty group: the match is the secret
        values = [chunk]
    for value in filter(None, values):
        if rule.accept and not rule.accept(value):
            continue
        at = chunk.find(value)
        while at >= 0:
            s, e = ms + at, ms + at + len(value)
            yield _pem_block(text, s, e) if rule.pem else _widen(text, s, e, rule.charset)
            at = chunk.find(value, at + len(value))


GENERIC = frozenset(
    {
        "password-assignment",
        "token-assignment",
        "bearer-token",
        "auth-header",
        "url-password",
        "aws-secret-key-shape",
        "npmrc-auth",
        TIMEOUT_RULE,
    }
)


def _name(a: Finding, b: Finding) -> str:
    """The id a merged span keeps: ``scan-timeout`` over everything (the span was not fully
    scanned), a provider's rule over a generic one (an ``api_key = sk_live_…`` is a Stripe key),
    else the wider span's."""
    if TIMEOUT_RULE in (a.rule_id, b.rule_id):
        return TIMEOUT_RULE
    if (a.rule_id in GENERIC) != (b.rule_id in GENERIC):
        return b.rule_id if a.rule_id in GENERIC else a.rule_id
    return b.rule_id if (b.end - b.start) > (a.end - a.start) else a.rule_id


def _merge(found: list[Finding]) -> list[Finding]:
    merged: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and f.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = Finding(_name(last, f), last.start, max(last.end, f.end))
            continue
        merged.append(f)
    return merged


def _inside(markers: list[tuple[int, int]], start: int, end: int) -> bool:
    i = bisect.bisect_right(markers, (start, _FAR)) - 1
    return i >= 0 and markers[i][0] <= start and end <= markers[i][1]


_FAR = 1 << 62


# Invisible characters that can split a secret without showing: zero-width space, non-joiner,
# joiner, word joiner, the BOM / zero-width no-break space, and the soft hyphen.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")


def normalise(text: str) -> tuple[str, list[int] | None]:
    """``(folded, origin)``: ``text`` with each character NFKC-folded (full-width and other
    compatibility forms become ASCII) and zero-width characters removed, and for every position
    of the folded text the position in ``text`` it came from (plus one past the end). ``origin``
    is ``None`` when nothing changed (ASCII text, the common case, costs one check)."""
    if text.isascii() or (unicodedata.is_normalized("NFKC", text) and not any(c in ZERO_WIDTH for c in text)):
        return text, None
    out: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(text):
        if c in ZERO_WIDTH:
            continue
        folded = c if c < "\x80" else unicodedata.normalize("NFKC", c)
        out.append(folded)
        origin.extend([i] * len(folded))
    origin.append(len(text))
    return "".join(out), origin


def _scan(text: str, clock: _Clock) -> list[Finding]:
    """The merged findings in ``text`` (offsets in ``text``)."""
    ruleset = rules()
    low = text.lower()
    markers = [m.span() for m in MARKER.finditer(text)]
    found: list[Finding] = []
    failed: list[tuple[int, int]] = []
    for rule in ruleset:
        if clock.left() <= 0:  # out of time: what this rule would have scanned is unscanned
            failed.append((0, len(text)))
            continue
        if rule.keywords and not any(k in low for k in rule.keywords):
            continue
        if isinstance(rule.rx, Lazy):
            clock.deadline += rule.rx.ready()  # compiling a pattern is not scanning: not on the clock
        for base, m in _matches(rule, text, clock, failed):
            for s, e in _spans(rule, base, m, text):
                if e <= s or _inside(markers, s, e):
                    continue  # empty, or inside a marker an earlier pass wrote
                found.append(Finding(rule.id, s, e))
    found.extend(_failed_lines(text, failed))
    return _merge(found)


def redact(text: str, *, timeout: float | None = None) -> Redacted:
    """Replace the secrets in ``text``; see the module docstring. Never raises on content.

    Matching runs over :func:`normalise`'s folded copy; each span found there is mapped back to
    the characters of ``text`` it came from (zero-width characters inside it included), and only
    those are replaced: the rest of ``text`` keeps its full-width letters or invisible marks."""
    if not text:
        return Redacted(text, ())
    rules()  # built (once) before the clock starts: loading rules is not scanning
    clock = _Clock(DEFAULT_TIMEOUT if timeout is None else timeout)
    folded, origin = normalise(text)
    findings = _scan(folded, clock)
    if origin is not None:
        findings = _merge([Finding(f.rule_id, origin[f.start], origin[f.end - 1] + 1) for f in findings])
    parts: list[str] = []
    tail = len(text)
    for f in reversed(findings):  # right to left: earlier offsets stay valid
        parts.append(text[f.end : tail])
        parts.append(f"[REDACTED:{f.rule_id}]")
        tail = f.start
    parts.append(text[:tail])
    return Redacted("".join(reversed(parts)), tuple(findings))


def redact_text(text: str) -> str:
    return redact(text).text


_USERINFO = regex.compile(
    r"(?i)([a-z][a-z0-9+.-]{0,20}://)([^\s/?#:@]*):([^\s?#]*)@(?=[a-z0-9\[][a-z0-9.\[\]:-]{0,253}(?:[/?#]|$))"
)


def redact_url(url: str, *, timeout: float | None = None) -> Redacted:
    """A link as it is stored: a ``user:password@`` userinfo is removed whole (the link keeps
    scheme, host and the rest; the password may hold ``@`` or ``/``), then the rest is redacted
    like any text (a token in a query string, say). Findings name ``url-password`` for the
    userinfo; offsets are in ``url``."""
    found: list[Finding] = []
    m = _USERINFO.match(url)
    if m is not None and _not_a_port(m.group(3)) and (m.group(2) or m.group(3)):
        found.append(Finding("url-password", m.start(2), m.end(0)))
        url_rest = m.group(1) + url[m.end(0) :]
        rest = redact(url_rest, timeout=timeout)
        return Redacted(rest.text, tuple(found) + rest.findings)
    return redact(url, timeout=timeout)
