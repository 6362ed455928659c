"""Secrets in source files: where they are, so the `code_secrets` stage can redact them.

Detection is Yelp's detect-secrets (the detector BigCode ran over The Stack for StarCoder's PII
pass), used as a library: its token plugins (AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid,
npm, PyPI, OpenAI, Discord, Telegram, Azure storage, Artifactory, Square, JWT, basic-auth URLs...)
run over the whole file; its keyword plugin (`password = "..."`, `api_key: ...`, `secret=...`,
with its per-file-type assignment rules) over the lines that name a keyword, followed by the
heuristic filters detect-secrets itself applies to keyword hits (templates like `{{ pw }}` or
`${PW}`, indirect references `password = get_password()`, identifiers, sequences, UUIDs). The
entropy plugins stay off, as BigCode needed a gibberish model and hash heuristics on top of them.

Private keys are found as whole PEM/OpenSSH/PGP blocks (BEGIN line, base64 body, END line; or the
body lines after a BEGIN whose END is missing), not just the header line detect-secrets flags, and
only with a body of 64+ base64 characters, so parsers that hold the header strings are untouched.
Token matches are redacted where they are; keyword values on the line that assigns them, every one of it.
Scans are linear in the file: a 1 MB file of `eyJ` runs is read in a fraction of a second.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

KINDS = ("private_key", "aws", "github", "gitlab", "slack", "jwt", "password", "api_key")

_KIND_BY_TYPE = {
    "AWS Access Key": "aws", "GitHub Token": "github", "GitLab Token": "gitlab", "Slack Token": "slack",
    "JSON Web Token": "jwt", "Secret Keyword": "password", "Basic Auth Credentials": "password",
}  # fmt: skip
_TOKEN_PLUGINS = (
    "aws.AWSKeyDetector", "github_token.GitHubTokenDetector", "gitlab_token.GitLabTokenDetector",
    "slack.SlackDetector", "jwt.JwtTokenDetector", "stripe.StripeDetector", "twilio.TwilioKeyDetector",
    "sendgrid.SendGridDetector", "npm.NpmDetector", "pypi_token.PypiTokenDetector", "openai.OpenAIDetector",
    "discord.DiscordBotTokenDetector", "telegram_token.TelegramBotTokenDetector",
    "azure_storage_key.AzureStorageKeyDetector", "artifactory.ArtifactoryDetector",
    "square_oauth.SquareOAuthDetector", "basic_auth.BasicAuthDetector", "mailchimp.MailchimpDetector",
)  # fmt: skip
# Literal tests before each token plugin's regexes (Python's re scans slowly without a literal prefix).
_HINTS: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "aws", "AWS", "Aws"),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-",
                            "glptt-", "glagent-", "gloas-"),
    "SlackDetector": ("xox", "XOX", "hooks.slack.com"), "JwtTokenDetector": ("eyJ",),
    "StripeDetector": ("k_live_",), "SendGridDetector": ("SG.",), "NpmDetector": ("_authToken",),
    "PypiTokenDetector": ("pypi-",),
    "OpenAIDetector": ("T3BlbkFJ", "sk-", "hf_", "AIza", "shp", "earer", "EARER", "pi-key", "pi-Key", "PI-KEY", "key-",
                       "npm_", "hvs.", "hvb.", "hvr.", "webhook.office.com", "logic.azure.com"),
    "AzureStorageKeyDetector": ("AccountKey=",),
    "SquareOAuthDetector": ("sq0csp-",),
    "BasicAuthDetector": ("://", "@tcp(", "@unix(", "mysql", "curl", "assword", "ASSWORD", "wd>", "WD>", "wd=", "WD=",
                          "ENV", "dentified", "DENTIFIED", "auth", "Auth", "AUTH"),
    "MailchimpDetector": ("-us",),
    "ArtifactoryDetector": ("AKC", *(f"AP{c}" for c in "0123456789ABCDEF")),
}
# Shapes the plugins' patterns miss: Stripe's keys as issued since 2019 (`sk_live_` and 99 characters: its pattern
# takes 24, and a match inside a longer word is none), URL passwords holding RFC 3986's sub-delimiters (`!$&...`)
_MORE_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "StripeDetector": (re.compile(r"[rs]k_live_[0-9a-zA-Z]{24,}"),),
    "BasicAuthDetector": tuple(re.compile(p) for p in (
        r"://[^\s:/?#\[\]@]*:([^\s/?#\[\]@]+)@",  # a user may be empty: `redis://:SECRET@cache:6379`
        r"[\"'`][\w.-]+:([^\s\"'`@:/]{6,})@(?:tcp|unix)\(",  # Go's MySQL DSN, `user:pass@tcp(host:3306)/db`
        # a password on a command line: `mysql -pSECRET`, `curl -u user:SECRET`
        # (the option within 200 characters of the command: a line of 20,000 `mysql ` took 30 s)
        r"\bmysql(?:dump|admin)?\b[^\n]{0,200}?\s-p([^\s\"'`;|&]{6,})",
        r"\bcurl\b[^\n]{0,200}?\s(?:-u|--user)\s*[\"']?[^\s:\"']+:([^\s\"'`;|&]{6,})",
        # a connection string's password after its host or user (libpq, ADO.NET, JDBC's query), and XML's elements
        # and properties (Maven's settings.xml, Spring's beans)
        r"(?i:(?:host|server|user(?: ?id)?|uid|dbname|database|data source)\s*=[^\n\"']*?[\s;&?])"
        r"(?i:password|pwd)\s*=\s*([^\s;&\"'<>()\[\]{},]{6,})",
        r"<(?i:password|passwd|pwd)>([^<\s]{6,})</",
        r"name=[\"'][\w.-]*(?i:password)[\"']\s+value=[\"']([^\"'\s]{6,})[\"']",
        # Docker's `ENV POSTGRES_PASSWORD value` (no `=`: the keyword plugin reads assignments), SQL's `CREATE USER
        # .. IDENTIFIED BY '...'`, Python's HTTP basic auth (`auth=('admin', '...')`, `HTTPBasicAuth('u', '...')`)
        # and an `Authorization: Basic <base64 of user:password>` header
        r"(?m:^[ \t]*ENV[ \t]+\w*(?i:password|passwd|pwd|secret|token|api_?key)[ \t]+([^\s=\"']{6,})[ \t]*$)",
        # and `ENV MYSQL_USER=app MYSQL_PASSWORD=... MYSQL_DATABASE=shop`: pairs after the first (a line's first secret)
        r"(?m:^[ \t]*ENV[ \t]+(?:[\w.-]+=\S*[ \t]+)+\w*(?i:password|passwd|pwd|secret|token|api_?key)=([^\s\"']{6,}))",
        # (Oracle's may stand unquoted, after `USER name` or `ROLE name`: `CREATE USER app IDENTIFIED BY Pw88x;`, not a
        # bind variable `:pw` or substitution `&pw`; prose says "problems identified by the linter")
        r"(?i:identified\s+by)\s+(?:(?i:password)\s+)?[\"'`]([^\"'`\s]{6,})[\"'`]",
        r"(?i:\b(?:user|role)\s+[\w$#\"]+\s+identified\s+by)\s+([A-Za-z0-9][^\s;,)\"'`]{5,})",
        r"(?:\bauth\s*=\s*\(|HTTP(?:Basic|Digest)Auth\()\s*[\"'][^\"'\n]+[\"']\s*,\s*[\"']([^\"'\s]{6,})[\"']",
        r"(?i:authorization)[\"']?\s*[:=,]\s*[\"']?(?i:basic)\s+([A-Za-z0-9+/]{12,}={0,2})(?![\w+/=])")),
    # a Discord webhook's URL holds its token: whoever has it posts to the channel
    "DiscordBotTokenDetector": (
        re.compile(r"discord(?:app)?\.com/api/webhooks/\d{17,20}/([\w-]{60,80})"),),
    "GitHubTokenDetector": (re.compile(r"github_pat_[0-9A-Za-z]{22}_[0-9A-Za-z]{59}"),),  # fine-grained, since 2022
    # vendors' keys detect-secrets has no plugin for, reported as `api_key` beside OpenAI's: OpenAI's project and
    # service keys, Anthropic's, Hugging Face's, Google Cloud's, Shopify's
    "OpenAIDetector": tuple(re.compile(p) for p in (
        r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}", r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}",
        r"hf_[A-Za-z0-9]{34}", r"AIza[0-9A-Za-z_-]{35}", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        # a token in an HTTP header written into code: `Authorization: Bearer ...`, `X-Api-Key: ...`
        # (with a digit: a phrase of words is no token)
        r"(?i:bearer)\s+((?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)(?![\w${}<])",
        r"(?i:x-api-key)[\"']?\s*[:=,]\s*[\"']((?=[A-Za-z_-]*\d)[A-Za-z0-9_\-]{16,})[\"']",
        # Mailgun's keys before 2019, npm's access tokens since 2021
        r"key-(?=[a-z]*\d)[0-9a-z]{32}", r"npm_[A-Za-z0-9]{36}",
        # HashiCorp Vault's service, batch and recovery tokens (since Vault 1.10); a Teams incoming webhook's URL
        # (the key after `IncomingWebhook/`, and a Power Automate workflow's `sig`): whoever has it posts to the channel
        r"hv[sbr]\.[A-Za-z0-9_-]{24,}", r"webhook\.office\.com/webhookb2/[\w@.-]+/IncomingWebhook/([0-9a-f]{32})/",
        r"logic\.azure\.com[^\s\"'<>]*?[?&]sig=([\w-]{30,})")),
}
# One RE2 pattern (pyarrow, linear time) a file must match before any plugin runs: a superset of
# what the token plugins and private-key blocks find.
TOKEN_HINT = "|".join([
    r"A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA|(?i:aws).{0,20}(?i:key|pwd|pw|pass|token).{0,20}['\"][0-9a-zA-Z/+]{40}",
    r"gh[pousr]_[A-Za-z0-9_]{36}", r"gl[a-z]{2,7}-[A-Za-z0-9_-]{20}|GR1348941", r"(?i:xox[abposr]-)|hooks\.slack\.com",
    r"eyJ[A-Za-z0-9_=-]+\.", r"[rs]k_live_", r"AC[a-z0-9]{32}|SK[a-z0-9]{32}", r"SG\.[\w-]{22}\.", r"_authToken",
    r"pypi-AgE", r"T3BlbkFJ", r"[MNO][\w-]{23,25}\.[\w-]{6}\.", r"\d{8,10}:[\w-]{35}", r"AccountKey=",
    r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}", r"sq0csp-", r"://[^\s:/@]*:[^\s/@]+@", r"[0-9a-z]{32}-us\d",
    r"PRIVATE KEY|PuTTY-User-Key-File", r"github_pat_|sk-(?:proj|svcacct|admin|ant)-|hf_[A-Za-z0-9]{34}|AIza|shp[acps]",
    r"(?i:bearer\s|x-api-key)|key-[0-9a-z]{32}|npm_[A-Za-z0-9]{36}|@(?:tcp|unix)\(|mysql|curl|(?i:password|pwd)\s*[=>]",
    r"(?m:^[ \t]*ENV[ \t]+\w*(?i:password|passwd|pwd|secret|token|api_?key)[ \t])|(?i:identified\s+by)",
    r"\bauth\s*=\s*\(|HTTP(?:Basic|Digest)Auth\(|(?i:basic)\s+[A-Za-z0-9+/]{12}|discord(?:app)?\.com/api/webhooks/",
    r"hv[sbr]\.[\w-]{24}|webhook\.office\.com/|logic\.azure\.com",
])  # fmt: skip
# detect-secrets' keyword names, also in Lisp's kebab case (`api-key`)
KEYWORD_HINT = (r"(?i)(?:api[_-]?key|auth[_-]?key|service[_-]?key|account[_-]?key|db[_-]?key|database[_-]?key|"
                r"priv[_-]?key|private[_-]?key|client[_-]?key|db[_-]?pass|database[_-]?pass|key[_-]?pass|password|passwd|"
                r"pwd|secret|contrase)")
# The files `_placed_values` reads whatever they say: a pgpass line names no keyword (for the stage's prefilter, over
# a document's `meta`)
CREDENTIAL_FILE_HINT = r"netrc|pgpass"
_STEMS = ("key", "pass", "pwd", "secret", "contrase")
_KEYWORD_LINE = re.compile(KEYWORD_HINT)
_PLACEHOLDERS = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "secrets", "changeme", "change_me", "changeit", "example",
    "sample", "test", "testing", "dummy", "fake", "foo", "bar", "foobar", "baz", "xxx", "none", "null", "nil",
    "true", "false", "redacted", "hidden", "masked", "username", "user", "admin", "root", "guest", "yourpassword",
    "your_password", "mypassword", "my_password", "secretkey", "secret_key", "apikey", "api_key", "token", "value",
    "default", "placeholder", "required", "optional", "string", "str", "bytes", "env",
    # the passwords documentation writes as examples (pydantic's `User(password='password1')`): known to all
    "password1", "password123", "passw0rd", "p@ssw0rd", "p@ssword", "secret123", "hunter2", "letmein", "qwerty123",
})
_SEPARATORS = set("_-.:/")
_TIMESTAMP_OR_VERSION = re.compile(r"\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?|v?\d+(?:\.\d+){1,3}")
_WORDISH = re.compile(r"[A-Za-z0-9]")
_DELIMITERS = frozenset(" \t\r\n\"'=:")
_BASE64URL = re.compile(r"[A-Za-z0-9_\-+/=]*")
_BASE64URL_RUN = re.compile(r"[A-Za-z0-9_=-]+")
# Credentials published as examples (AWS's documentation key pair, "...EXAMPLE..." values), as gitleaks allows.
_DOCUMENTED = re.compile(r"EXAMPLE|(?i:example)")
_FILLER = re.compile(r"([Xx*0.])\1{11}")  # a placeholder's run of one character: `hvs.XXXXXXXXXXXXXXXX`, `sk-0000...`
_PEM = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?P<body>(?:[A-Za-z0-9+/=\s:,.\-\"'|]|\\[nr]){0,20000}?)"
    r"-----END (?P=label)-----"
)
_PEM_OPEN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?P<body>(?:\s*(?:\\n)?[A-Za-z0-9+/=]{40,})+)")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d+:[^\n]*\n(?:[^\n]*\n){0,40}?Private-MAC: [0-9a-f]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/]")
# Extensions whose `key = value` lines are configuration (values need no quotes there).
_C_FAMILY = frozenset({"c", "c++", "objective-c", "objective-c++"})
# `#define DB_PASSWORD "..."`: a macro named for a secret, its value a string literal
_DEFINE = re.compile(r"\s*#\s*define\s+(\w*(?i:key|pass|pwd|secret|token)\w*)\s+\"([^\"\\]+)\"")
# `(defparameter *db-password* "...")`, `(setq smtpmail-auth-password "...")`, `(def api-key "...")`: a Lisp
# binding of a name for a secret to a string literal (the keyword plugin reads `name = value` forms only)
_LISP_FAMILY = frozenset({"common-lisp", "emacs-lisp", "clojure", "scheme", "racket"})
_LISP_BINDING = re.compile(r"\(\s*(?:(?:def\w*|setq(?:-default)?|setf)\s+|let\*?\s*[(\[]\s*\(?\s*)\*?"
                           r"([\w\-]*(?i:key|pass|pwd|secret|token)[\w\-]*)\*?\s+\"([^\"\\]+)\"")
# PHP's `define('DB_PASSWORD', '...')` (WordPress's wp-config.php) and a setter given a literal, in any language:
# `ds.setPassword("...")`, `user.set_password('...')`, `client.setApiKey("...")`
_PHP_DEFINE = re.compile(
    r"\bdefine\s*\(\s*[\"'](\w*(?i:key|pass|pwd|secret|token)\w*)[\"']\s*,\s*[\"']([^\"'\\]+)[\"']")
_SETTER = re.compile(r"\bset_?(\w*(?i:password|passwd|pwd|secret|api_?key))\s*\(\s*[\"']([^\"'\\]+)[\"']\s*\)")
# A Kubernetes container's `env:` item, `- name: DB_PASSWORD` over `value: "..."`: the name says what the value is
_NAME_OVER_VALUE = re.compile(r"(?m)^[ \t]*-?[ \t]*name:[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*\n"
                              r"[ \t]*value:[ \t]*[\"']?([^\s\"'#]+)")
# netrc's `machine host login me password SECRET` (ftp, curl, git and pip read it); a libpq password file's
# `host:port:database:user:password` lines (`\:` is a colon inside a field)
_NETRC_PASSWORD = re.compile(r"(?:^|\s)password\s+(\S+)")
_PGPASS_LINE = re.compile(r"(?m)^(?!#)(?:(?:[^:\n\\]|\\.)*:){4}((?:[^\n\\]|\\.)+)$")
_CONFIG_AS = {"dotenv": ".cfg", "ini": ".ini", "shell": ".cfg", "toml": ".toml", "yaml": ".yaml",
              "java-properties": ".properties", "dockerfile": ".cfg", "makefile": ".cfg"}


@functools.cache
def _heuristic() -> Any:
    """detect-secrets' heuristic filters, imported on first use: the package (requests with it) takes ~80 ms
    to import, which every process that imports the stages would pay, a run's workers included."""
    from detect_secrets.filters import heuristic

    return heuristic


@functools.cache
def _plugins() -> tuple[list[tuple[Any, str]], Any]:
    import importlib

    tokens = []
    for dotted in _TOKEN_PLUGINS:
        module, name = dotted.rsplit(".", 1)
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
        tokens.append((plugin, _KIND_BY_TYPE.get(plugin.secret_type, "api_key")))
    keyword = importlib.import_module("detect_secrets.plugins.keyword").KeywordDetector()
    return tokens, keyword


def _private_keys(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for m in _PEM.finditer(text):
        if len(_BASE64.findall(m.group("body"))) >= 64:
            spans.append((m.start(), m.end(), "private_key"))
    for m in _PEM_OPEN.finditer(text):
        if not any(s <= m.start() < e for s, e, _ in spans) and len(_BASE64.findall(m.group("body"))) >= 64:
            spans.append((m.start(), m.end(), "private_key"))
    spans += [(m.start(), m.end(), "private_key") for m in _PUTTY.finditer(text)]
    return spans


def plausible_value(value: str) -> bool:
    """Whether a keyword or URL credential value looks like a real one, not an example or a reference.

    detect-secrets' own filters leave placeholders (`password`, `changeme`, `<password>`), booleans,
    ARNs, paths and words in documentation examples; a credential a person chose has a letter and a
    digit or symbol, no whitespace, and six or more characters.
    """
    if "%" in value:
        value = unquote(value)
    if len(value) < 6 or any(c.isspace() for c in value) or "://" in value:
        return False
    if value.lower().strip("<>{}[]()$*'\"`") in _PLACEHOLDERS or value.startswith(("arn:", "/", "./", "~/")):
        return False
    if _TIMESTAMP_OR_VERSION.fullmatch(value.strip("'\"")):  # `"PasswordLastUsed": "2016-09-08T21:47:36Z"`, `v2.1.0`
        return False
    has_letter = any(c.isalpha() for c in value)
    has_other = any(c.isdigit() or (not c.isalnum() and c not in _SEPARATORS) for c in value)
    return has_letter and has_other


def _token_span(m: re.Match[str]) -> tuple[int, int]:
    """The secret inside a plugin's match: its widest group when that holds the value (AWS secret keys,
    URL passwords), else the whole match without the delimiters some patterns include."""
    groups = [g for g in range(1, (m.re.groups or 0) + 1) if m.group(g)]
    widest = max(groups, key=lambda g: len(m.group(g)), default=None)
    start, end = m.span(widest) if widest is not None and len(m.group(widest)) >= 8 else m.span()
    text = m.string
    while start < end and text[start] in _DELIMITERS:
        start += 1
    while end > start and text[end - 1] in _DELIMITERS:
        end -= 1
    return start, end


def _in_group(m: re.Match[str], start: int) -> bool:
    """Whether the secret starting at `start` is a group of `m` with context of the pattern before it."""
    return any(m.start(g) == start > m.start() for g in range(1, (m.re.groups or 0) + 1) if m.group(g))


def _tokens(text: str) -> list[tuple[int, int, str]]:
    spans = []
    plugins, _ = _plugins()
    heuristic = _heuristic()
    for plugin, kind in plugins:
        hints = _HINTS.get(type(plugin).__name__)
        if hints is not None and not any(h in text for h in hints):
            continue
        if kind == "jwt":
            spans += [(start, end, kind) for start, end in _jwts(text)
                      if plugin.is_formally_valid(text[start:end]) and not _DOCUMENTED.search(text[start:end])]
            continue
        for regex in (*plugin.denylist, *_MORE_PATTERNS.get(type(plugin).__name__, ())):
            for m in regex.finditer(text):
                start, end = _token_span(m)
                value = text[start:end]
                if (len(value) < 8 or heuristic.is_sequential_string(value) or heuristic.is_potential_uuid(value)
                        or _DOCUMENTED.search(value) or _FILLER.search(value)):
                    continue
                if kind == "password" and (not plausible_value(value) or heuristic.is_templated_secret(value)):
                    continue
                # a match inside a longer word or number (a Telegram-shaped run inside an ARN) is none; a value
                # that the pattern's context before it bounds (`mysql -pSECRET`, `://user:SECRET@`) is not
                if not _in_group(m, start) and (
                        (start > 0 and _WORDISH.match(text, start - 1)) or _WORDISH.match(text, end)):
                    continue
                spans.append((start, end, kind))
    return spans


def _jwts(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of what detect-secrets' JWT pattern finds (`eyJ...` header, `.`, payload, `.`, signature), in
    linear time: its regex, tried at every `eyJ` of a run without a dot (`'eyJ' * 200000`), scanned the rest of the
    run from each (a 900 KB file took 6 minutes). A token starts at a run's first `eyJ` after no letter or digit."""
    for run in _BASE64URL_RUN.finditer(text):
        start, end = run.start(), run.end()
        at = text.find("eyJ", start, end - 1)
        while at > start and _WORDISH.match(text, at - 1):
            at = text.find("eyJ", at + 1, end - 1)
        if at < 0 or text[end : end + 1] != "." or not (payload := _BASE64URL_RUN.match(text, end + 1)):
            continue
        end = payload.end()
        if text[end : end + 1] == ".":
            end = _BASE64URL.match(text, end + 1).end()
        yield at, end


def _keyword_filename(path: str, language: str | None) -> str:
    """The name detect-secrets' keyword plugin picks its assignment rules by (config files need no quotes)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name == ".env" or name.startswith(".env.") or name.endswith(".env"):  # dotenv files identify misses
        return "file.cfg"
    if name == "credentials" or path.endswith((".aws/config", ".aws/credentials")):  # AWS's, in ini syntax
        return "file.ini"
    if language in _CONFIG_AS and not name.endswith((".yaml", ".yml", ".ini", ".cfg", ".toml", ".properties")):
        return f"file{_CONFIG_AS[language]}"
    return path or "file.txt"


def _keyword_lines(text: str) -> list[tuple[int, str]]:
    """(offset, line) of the lines naming a secret keyword, found with str.find on the lowercased text."""
    lowered = text.lower()
    starts = set()
    for stem in _STEMS:
        at = lowered.find(stem)
        while at >= 0:
            start = lowered.rfind("\n", 0, at) + 1
            starts.add(start)
            end = lowered.find("\n", at)
            if end < 0:
                break
            at = lowered.find(stem, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
        if len(line) <= 1000 and _KEYWORD_LINE.search(line):
            lines.append((start, line))
    return lines


def _keyword_values(line: str, filename: str, language: str | None) -> list[str]:
    """The values the keyword plugin finds on a line, and those of a C `#define` or a Lisp binding of a keyword's
    name (which it misses); a notebook's line is read with its JSON escapes undone (`"password = \\"...\\"\\n",`)."""
    _, keyword = _plugins()
    if language == "jupyter":
        line, filename = line.replace('\\"', '"'), "cell.py"
    values = [found.secret_value or "" for found in keyword.analyze_line(filename=filename, line=line, line_number=0)]
    if language in _C_FAMILY and (define := _DEFINE.match(line)) and not _about_a_secret(f"{define.group(1)} = "):
        values.append(define.group(2))
    if language in _LISP_FAMILY:
        values += [m.group(2) for m in _LISP_BINDING.finditer(line) if not _about_a_secret(f"{m.group(1)} = ")]
    if language == "php":
        values += [m.group(2) for m in _PHP_DEFINE.finditer(line) if not _about_a_secret(f"{m.group(1)} = ")]
    values += [m.group(2) for m in _SETTER.finditer(line) if not _about_a_secret(f"{m.group(1)} = ")]
    return values


def _placed_values(text: str, path: str, language: str | None) -> list[tuple[int, int, str]]:
    """Passwords a keyword's line does not name: netrc's and pgpass's, and a Kubernetes `env:` item's value."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in {".netrc", "_netrc"}:
        found = [(m.start(1), m.group(1)) for m in _NETRC_PASSWORD.finditer(text)]
    elif name in {".pgpass", "pgpass.conf"}:  # (`CREDENTIAL_FILE_HINT` lets them by the stage's prefilter)
        found = [(m.start(1), m.group(1)) for m in _PGPASS_LINE.finditer(text)]
    elif language == "yaml":
        found = [(m.start(2), m.group(2)) for m in _NAME_OVER_VALUE.finditer(text)
                 if _KEYWORD_LINE.search(m.group(1)) and not _about_a_secret(f"{m.group(1)} = ")]
    else:
        return []
    return [(at, at + len(value), "password") for at, value in found
            if plausible_value(value) and not _heuristic().is_templated_secret(value) and not _DOCUMENTED.search(value)]


def _keywords(text: str, path: str, language: str | None) -> list[tuple[int, int, str]]:
    spans = _placed_values(text, path, language)
    filename = _keyword_filename(path, language)
    for start, line in _keyword_lines(text):
        # the keyword plugin gives a line's first value: the rest of the line is read again after it, so that
        # `connect(password='...', sslpassword='...')` and `{"password": "...", "secret": "..."}` lose both
        offset = 0
        for _ in range(_VALUES_PER_LINE_MAX):
            rest = line[offset:]
            values = _keyword_values(rest, filename, language)
            found = [(at, value) for value in values if (at := rest.find(value)) >= 0]
            spans += [(start + offset + at, start + offset + at + len(value), "password") for at, value in found
                      if _secret_value(value, rest, at)]
            if not found:
                break
            offset += max(at + len(value) for at, value in found)
    return spans


_VALUES_PER_LINE_MAX = 50  # a line is at most 1,000 characters (`_keyword_lines`)


def _secret_value(value: str, line: str, at: int) -> bool:
    """Whether a keyword's `value`, at `at` in `line`, is a credential: no example, template, reference or id."""
    heuristic = _heuristic()
    if (not plausible_value(value) or heuristic.is_templated_secret(value) or _DOCUMENTED.search(value)
            or heuristic.is_prefixed_with_dollar_sign(value) or heuristic.is_likely_id_string(value, line)
            or heuristic.is_sequential_string(value) or heuristic.is_potential_uuid(value)
            or _about_a_secret(line[:at])):
        return False
    # `secret = get_secret()`, `key = request.headers['key']`: a reference, unless the value is a literal in quotes
    # (`connect(host="db", password="...")` holds a call, and a literal password)
    quoted = at > 0 and line[at - 1] in "\"'" and line[at + len(value) : at + len(value) + 1] == line[at - 1]
    return quoted or not heuristic.is_indirect_reference(line)


# Words of a key that name something about a secret, not the secret: `secretName: web-tls-2024` (a Kubernetes
# Secret's name), `secret_version`, `api_key_header_name`, `PasswordLastUsed`, `AWS_ACCESS_KEY_ID`
_ABOUT = frozenset({"name", "names", "version", "header", "id", "ids", "type", "path", "file", "url", "uri", "length",
                    "policy", "last", "used", "date", "time", "expires", "expiry", "field", "label", "ref", "arn",
                    "format", "hint", "prompt", "reset", "strength", "pattern", "regex", "rotation", "hash",
                    # how a secret is made or kept: `SECRET_KEY_ALGORITHM = "HmacSHA256"`, `password_hasher = "argon2"`
                    "algorithm", "algo", "cipher", "hasher", "hashing", "charset", "encoding", "scheme", "digest",
                    "kdf", "backend", "provider", "storage", "store"})
_KEY = re.compile(r"([A-Za-z_][\w.-]*)[\"']?\s*(?::=|=>|[:=])\s*[\"'(]*\s*$")
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _about_a_secret(before: str) -> bool:
    """Whether the key a value is assigned to (the text before the value on its line) names something about a secret
    rather than the secret itself."""
    found = _KEY.search(before)
    return bool(found) and any(w.lower() in _ABOUT for w in _KEY_WORDS.findall(found.group(1)))


def find_secrets(text: str, path: str = "", language: str | None = None, *, tokens: bool = True,
                 keywords: bool = True) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, kind) of the secrets in a file, in text order (longest first on overlap).

    `tokens=False` / `keywords=False` skip the token plugins and private keys / the keyword plugin
    (for files the stage's column-wise prefilter already cleared).
    """
    found = (_private_keys(text) + _tokens(text) if tokens else []) + (
        _keywords(text, path, language) if keywords else [])
    found.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    out: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if out and start < out[-1][1]:
            continue
        out.append((start, end, kind))
    return out
