"""`code_secrets`: planted keys of the common kinds in real installed files are all redacted, and nothing else.

Secrets are made up here (random, seeded; a real RSA key from `cryptography`) and planted as new
lines at random places in real files of several languages; the redacted file must equal the
planted file with each secret replaced by the placeholder, byte for byte. Then every hand-written
file of a set of installed libraries (auth and HTTP code included) goes through the stage and must
come out unchanged. No Ray.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sysconfig
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from curation import schema
from curation.apply import run_stage
from curation.code.secrets import find_secrets
from curation.code.source_language import detect_language
from curation.stages.code_secrets import CodeSecrets

SITE = Path(sysconfig.get_paths()["purelib"])
RNG = random.Random(8)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def jwt() -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': rand(10), 'admin': True})}.{rand(43)}"


def password() -> str:
    return rand(6, string.ascii_letters) + rand(2, string.digits) + RNG.choice("!#%&*+?") + rand(3)


def url_password() -> str:  # URL-safe characters only: a URL percent-encodes the rest
    return rand(8, string.ascii_letters) + rand(3, string.digits) + RNG.choice("-._~")


# kind -> (secret maker, line templates per language; {s} is the secret)
PLANTS: dict[str, tuple[Callable[[], str], dict[str, str]]] = {
    "aws": (lambda: "AKIA" + rand(16, string.ascii_uppercase + "234567"), {
        "python": 'AWS_ACCESS_KEY_ID = "{s}"', "javascript": 'const accessKeyId = "{s}";',
        "yaml": "aws_access_key_id: {s}", "ini": "aws_access_key_id = {s}", "shell": "export AWS_ACCESS_KEY_ID={s}"}),
    "github": (lambda: "ghp_" + rand(36), {
        "python": 'token = "{s}"', "javascript": 'headers.Authorization = "token {s}";',
        "yaml": "github_token: {s}", "ini": "token = {s}", "shell": "export GITHUB_TOKEN={s}"}),
    "gitlab": (lambda: "glpat-" + rand(20), {"python": 'GITLAB = "{s}"', "yaml": "gitlab: {s}", "shell": "GL={s}"}),
    "slack": (lambda: f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}", {
        "python": 'SLACK_BOT_TOKEN = "{s}"', "javascript": 'const slack = "{s}";', "yaml": "slack: {s}"}),
    "jwt": (jwt, {
        "python": 'AUTH_HEADER = "Bearer {s}"', "yaml": "bearer: {s}",
        "javascript": 'fetch(url, {{headers: {{Authorization: "Bearer {s}"}}}});'}),
    "password": (password, {
        "python": 'password = "{s}"', "javascript": 'const dbPassword = "{s}";', "yaml": 'db_password: "{s}"',
        "ini": "password = {s}", "shell": "DB_PASSWORD={s}"}),
    "url_password": (url_password, {
        "python": 'DSN = "postgresql://app:{s}@db.internal:5432/app"',
        "yaml": "url: https://deploy:{s}@git.internal/repo.git"}),
    "api_key": (lambda: "sk_live_" + rand(24), {
        "python": 'stripe.api_key = "{s}"', "yaml": "stripe: {s}", "javascript": 'const stripeKey = "{s}";'}),
    # Stripe's keys as issued since 2019 (99 characters), URL passwords holding RFC 3986's sub-delimiters: both
    # were left in clear by detect-secrets' own patterns
    "api_key_2019": (lambda: RNG.choice(["sk", "rk"]) + "_live_" + rand(99), {
        "python": 'STRIPE_SECRET = "{s}"', "yaml": "stripe_secret: {s}"}),
    "url_password_subdelims": (lambda: rand(6, string.ascii_letters) + rand(2, string.digits) + RNG.choice("!$&*+;=")
                               + rand(3), {"python": 'BROKER = "amqp://app:{s}@mq.internal/vhost"',
                                           "yaml": "cache: redis://app:{s}@cache.internal:6379/0"}),
}  # fmt: skip
REAL_FILES = {  # language -> real files to plant into
    "python": ["requests/sessions.py", "click/core.py", "flask/app.py", "yaml/__init__.py", "httpx/_client.py"],
    "javascript": ["matplotlib/backends/web_backend/js/mpl.js", "werkzeug/debug/shared/debugger.js"],
    "yaml": ["ray/autoscaler/gcp/defaults.yaml", "markdown_it/port.yaml"],
    "ini": ["trafilatura/settings.cfg"],
    "shell": ["tqdm/completion.sh"],
}


def documents(files: dict[str, str]) -> pa.Table:
    table = schema.documents_table(list(files.values()))
    metas = [json.dumps({"path": p, "language": detect_language(p, t[:100])}) for p, t in files.items()]
    return table.set_column(table.schema.get_field_index("meta"), "meta", pa.array(metas))


def plant(text: str, lines: list[str]) -> tuple[str, list[int]]:
    """`text` with each line inserted at a random line boundary (seeded); the insertion order is kept."""
    rows = text.split("\n")
    places = sorted(RNG.randrange(1, len(rows)) for _ in lines)
    for offset, (at, line) in enumerate(zip(places, lines, strict=True)):
        rows.insert(at + offset, line)
    return "\n".join(rows), places


def test_planted_secrets_are_all_redacted_and_nothing_else_changes():
    planted, expected, secrets = {}, {}, []
    key = private_key()
    for language, paths in REAL_FILES.items():
        for path in paths:
            original = (SITE / path).read_text(encoding="utf-8")
            lines, redacted_lines = [], []
            for kind, (make, templates) in PLANTS.items():
                if language in templates:
                    secret = make()
                    lines.append(templates[language].format(s=secret))
                    redacted_lines.append(templates[language].format(s="<SECRET>"))
                    secrets.append((kind, secret))
            if language in ("python", "yaml"):  # a whole PEM block, as a YAML literal or a Python string
                indent = "  " if language == "yaml" else ""
                body = key.strip().replace("\n", "\n" + indent)
                lines.append(f"private_key: |\n{indent}{body}" if language == "yaml" else f'KEY = """{body}\n"""')
                redacted_lines.append(f"private_key: |\n{indent}<SECRET>" if language == "yaml" else
                                      'KEY = """<SECRET>\n"""')
                secrets.append(("private_key", key))
            state = RNG.getstate()
            planted[path], _ = plant(original, lines)
            RNG.setstate(state)
            expected[path], _ = plant(original, redacted_lines)
    env = "\n".join(["# local settings", "DEBUG=1", *(f"API_{i}=x" for i in range(3))])
    env_secret = password()
    planted[".env"], expected[".env"] = env + f"\nDB_PASSWORD={env_secret}\n", env + "\nDB_PASSWORD=<SECRET>\n"
    secrets.append(("password", env_secret))
    out = run_stage(CodeSecrets(), documents(planted))
    texts = dict(zip(planted, out.column("text").to_pylist(), strict=True))
    leaked = [(kind, s[:20]) for kind, s in secrets if any(s.strip() in t for t in texts.values())]
    assert leaked == []
    assert texts == expected  # every secret, and only the secrets, became the placeholder
    counts = Counter()
    for kind in ("private_key", "aws", "github", "gitlab", "slack", "jwt", "password", "api_key"):
        counts[kind] = sum(out.column(schema.count_column("code_secrets", kind)).to_pylist())
    planted_kinds = Counter("password" if k.startswith("url_password") else "api_key" if k.startswith("api_key")
                            else k for k, _ in secrets)
    assert counts == planted_kinds
    assert len(secrets) >= 50


# Library code, not test suites: tests hold credentials for their local servers on purpose (pyarrow's
# tests log into MinIO with `secret_key='limited123'`), and those are redacted like any other.
HAND_WRITTEN = ["requests", "urllib3", "httpx", "flask", "werkzeug", "click", "yaml", "jinja2", "itsdangerous",
                "packaging", "starlette", "fastapi", "google/auth", "google/oauth2", "botocore", "boto3",
                "cryptography", "pyarrow", "aiohttp", "huggingface_hub"]


def test_no_false_redaction_in_hand_written_files():
    files = {}
    for package in HAND_WRITTEN:
        for path in sorted((SITE / package).rglob("*")):
            wanted = path.suffix in (".py", ".js", ".cfg", ".yaml", ".sh") and "_pb2" not in path.name
            if wanted and not {"__pycache__", "tests"} & set(path.parts) and path.stat().st_size < 1_000_000:
                files[path.relative_to(SITE).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    assert len(files) >= 800
    out = run_stage(CodeSecrets(), documents(files))
    changed = [p for p, t in zip(files, out.column("text").to_pylist(), strict=True) if t != files[p]]
    assert changed == []
    assert out.column(schema.REASON).null_count == out.num_rows


def test_parsers_holding_pem_headers_and_placeholders_stay():
    texts = {
        "pem.py": 'HEADER = "-----BEGIN RSA PRIVATE KEY-----"\nFOOTER = "-----END RSA PRIVATE KEY-----"\n',
        "conf.yaml": "password: ${DB_PASSWORD}\nsecret: changeme\napi_key: <your-api-key>\n",
        "app.py": 'password = os.environ["PASSWORD"]\nsecret = get_secret("name")\npassword = ""\n',
        "docs.py": '"""Example: https://user:password@host/ and AKIAIOSFODNN7EXAMPLE."""\n',
    }
    out = run_stage(CodeSecrets(), documents(texts))
    assert out.column("text").to_pylist() == list(texts.values())


@pytest.mark.parametrize(("params", "expected"), [
    ({"redact": ["github"]}, 'a = "<SECRET>"\npassword = "Hunter22!x"\n'),
    ({"placeholder": "[KEY]", "placeholders": {"password": "[PW]"}}, 'a = "[KEY]"\npassword = "[PW]"\n'),
])
def test_kinds_placeholders_and_drop_option(params: dict, expected: str):
    text = f'a = "ghp_{"A1b2C3d4" * 4}Z9y8"\npassword = "Hunter22!x"\n'
    out = run_stage(CodeSecrets(**params), documents({"x.py": text}))
    assert out.column("text").to_pylist() == [expected]
    dropped = run_stage(CodeSecrets(max_secrets=1), documents({"x.py": text, "y.py": "x = 1\n"}))
    assert dropped.column(schema.REASON).to_pylist() == ["too_many_secrets", None]


def test_keys_of_the_vendors_a_model_team_uses_are_redacted():
    """GitHub's fine-grained tokens, OpenAI's project keys, Anthropic's, Hugging Face's, Google Cloud's and Shopify's
    keys, and tokens in `Authorization: Bearer` and `X-Api-Key` headers, were left in clear; `hf_hub_download` and
    `sk-learn` are no keys."""
    alnum = string.ascii_letters + string.digits

    def r(n: int, alphabet: str = alnum) -> str:
        return "".join(RNG.choice(alphabet) for _ in range(n))

    keys = [f"github_pat_{r(22)}_{r(59)}", f"sk-proj-{r(60, alnum + '_-')}", f"sk-ant-api03-{r(93, alnum + '_-')}",
            f"hf_{r(34)}", f"AIza{r(35)}", f"shpat_{r(32, '0123456789abcdef')}"]
    code = "from huggingface_hub import hf_hub_download\nmodel = 'sk-learn'\n" + "".join(
        f'KEY_{i} = connect("{key}")\n' for i, key in enumerate(keys))
    # tokens in HTTP headers written into code; a header built from a variable, and words after "bearer", stay
    bearer, api_key = r(40, alnum + "._-") + "7", r(24) + "3"
    code += (f'headers = {{"Authorization": "Bearer {bearer}", "X-Api-Key": "{api_key}"}}\n'
             'later = {"Authorization": f"Bearer {token}"}\nscheme = "bearer authentication_scheme_default"\n')
    out = run_stage(CodeSecrets(), documents({"client.py": code})).column("text").to_pylist()[0]
    assert not any(key in out for key in [*keys, bearer, api_key]), out
    assert out.count("<SECRET>") == len(keys) + 2 and "hf_hub_download" in out and "'sk-learn'" in out
    assert 'f"Bearer {token}"' in out and "bearer authentication_scheme_default" in out


def test_values_about_a_secret_are_not_redacted():
    """A Kubernetes Secret's name, a version, a header's name, a password's last-used time and an access key's id were
    redacted as passwords; the passwords beside them still are."""
    files = {"tls.yaml": "spec:\n  secretName: web-tls-2024\n",
             "client.py": 'secret_version = "v2.1.0"\napi_key_header_name = "X-Api-Key-2"\n'
                          'DB_PASSWORD = "S3cr3tP4ss99"\n',
             "user.json": '{\n  "PasswordLastUsed": "2016-09-08T21:47:36Z",\n  "Password": "hunter2X!9"\n}\n',
             ".env": "AWS_ACCESS_KEY_ID=notthesecret123\nDB_PASS=hunter2X!9\n"}
    out = dict(zip(files, run_stage(CodeSecrets(), documents(files)).column("text").to_pylist(), strict=True))
    assert out["tls.yaml"] == files["tls.yaml"]
    assert out["client.py"] == files["client.py"].replace("S3cr3tP4ss99", "<SECRET>")
    assert out["user.json"] == files["user.json"].replace("hunter2X!9", "<SECRET>")
    assert out[".env"] == files[".env"].replace("hunter2X!9", "<SECRET>")


@pytest.mark.parametrize(("path", "text", "secret"), [
    # a literal password in a call: detect-secrets' "indirect reference" rule skipped the whole line
    ("db.py", 'conn = psycopg2.connect(host="db.internal", user="app", password="Xk9#mQ2vLp7w")', "Xk9#mQ2vLp7w"),
    ("cfg.h", '#define DB_PASSWORD "Xk9#mQ2vLp7w"', "Xk9#mQ2vLp7w"),  # C macros: the plugin has no rule for them
    ("db.lisp", '(defparameter *db-password* "Xk9#mQ2vLp7w")', "Xk9#mQ2vLp7w"),  # Lisp bindings: nor for them
    ("init.el", '(setq smtpmail-auth-password "Xk9#mQ2vLp7w")', "Xk9#mQ2vLp7w"),
    ("core.clj", '(let [api-key "AKzz9x8c7v6b5n4m"] (call api-key))', "AKzz9x8c7v6b5n4m"),  # kebab-case names
    ("nb.ipynb", '    "password = \\"Xk9#mQ2vLp7w\\"\\n",', "Xk9#mQ2vLp7w"),  # a notebook's JSON-escaped source
    ("mail.py", 'MAILGUN = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"', "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"),
    (".npmrc.js", 'const t = "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";', "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("main.go", 'sql.Open("mysql", "root:Xk9mQ2vLp7w@tcp(127.0.0.1:3306)/db")', "Xk9mQ2vLp7w"),
    ("backup.sh", "mysqldump -u root -pXk9mQ2vLp7w shop > shop.sql", "Xk9mQ2vLp7w"),
    ("deploy.sh", 'curl -u "deploy:Xk9mQ2vLp7w" https://ci.internal/api', "Xk9mQ2vLp7w"),
    ("cache.py", 'r = redis.from_url("redis://:Qm4Zr8Tx2x@cache:6379/0")', "Qm4Zr8Tx2x"),  # a URL's empty user
    ("db.go", 'dsn := "host=db user=app password=Xq7Lm2Pw9 dbname=app"', "Xq7Lm2Pw9"),  # libpq's key=value
    ("Db.cs", 'var cs = "Server=db;Database=app;User Id=sa;Password=Xq7Lm2Pw9;";', "Xq7Lm2Pw9"),  # ADO.NET
    ("Db.java", 'url = "jdbc:mysql://db:3306/app?user=root&password=Xq7Lm2Pw9";', "Xq7Lm2Pw9"),  # JDBC's query
    ("settings.xml", "<server><id>repo</id><password>XmlPw9981z</password></server>", "XmlPw9981z"),  # Maven
    ("beans.xml", '<property name="db.password" value="XmlPw9981z"/>', "XmlPw9981z"),  # Spring
    ("Dockerfile", "FROM postgres:16\nENV POSTGRES_PASSWORD DockerPw77x\n", "DockerPw77x"),  # ENV's form without =
    ("Dockerfile", "ENV MYSQL_USER=app MYSQL_PASSWORD=DockerPw88y MYSQL_DATABASE=shop\n", "DockerPw88y"),  # pairs
    ("init.sql", "CREATE USER app IDENTIFIED BY 'SqlIdentPw88';", "SqlIdentPw88"),
    ("client.py", "r = requests.get(url, auth=('admin', 'ReqAuthPw99'))", "ReqAuthPw99"),
    ("client.py", "s.auth = HTTPBasicAuth('admin', 'ReqAuthPw99')", "ReqAuthPw99"),
    ("client.py", 'h = {"Authorization": "Basic YWRtaW46UzNjcmV0QmFzaWM="}', "YWRtaW46UzNjcmV0QmFzaWM"),
    ("hook.py", 'URL = "https://discord.com/api/webhooks/123456789012345678/' + "aB3_-" * 14 + '"', "aB3_-" * 14),
    (".aws/credentials", "[default]\naws_secret_access_key = IDnOdcX7wJalrXUtnFEMIK7MDENGbPxRfiCYzzzz\n",
     "IDnOdcX7wJalrXUtnFEMIK7MDENGbPxRfiCYzzzz"),  # AWS's credentials file, in ini syntax (only its key id went)
    ("init.sql", "CREATE USER app IDENTIFIED BY OraPw88x;", "OraPw88x"),  # Oracle's, unquoted
    ("wp-config.php", "define( 'DB_PASSWORD', 'WpDbPw77z' );", "WpDbPw77z"),  # WordPress's configuration
    ("Ds.java", 'ds.setPassword("JdbcPw99q");', "JdbcPw99q"),  # setters given a literal
    ("t.py", "user.set_password('Tr0ub4dor&3')", "Tr0ub4dor&3"),
    ("deploy.yaml", "env:\n  - name: DB_PASSWORD\n    value: \"K8sPw55xy\"\n  - name: LOG_LEVEL\n    value: debug9x\n",
     "K8sPw55xy"),  # a Kubernetes env item: its name over its value
    ("v.py", 'VAULT_TOKEN = "hvs.CAESIJ3mK9x2Lq7wPz8Rt4Yb1Nc6Vd5Fg0Hj2Kl4Mn6Pq8Rs"',
     "hvs.CAESIJ3mK9x2Lq7wPz8Rt4Yb1Nc6Vd5Fg0Hj2Kl4Mn6Pq8Rs"),  # HashiCorp Vault's tokens
    ("n.py", 'URL = "https://contoso.webhook.office.com/webhookb2/0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e@72f988bf-86f1-'
     '41af-91ab-2d7cd011db47/IncomingWebhook/9a8b7c6d5e4f30211203f4e5d6c7b8a9/1f2e3d4c-5b6a-7980-a1b2-c3d4e5f6a7b8"',
     "9a8b7c6d5e4f30211203f4e5d6c7b8a9"),  # a Teams webhook's key
    ("n.py", 'URL = "https://prod-12.westus.logic.azure.com:443/workflows/abc123/triggers/manual/paths/invoke?api-'
     'version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=Xy7_Kq2LmN9pQr4StUv6WxYz0AbCdEfGhIjKlMnOpQr"',
     "Xy7_Kq2LmN9pQr4StUv6WxYz0AbCdEfGhIjKlMnOpQr"),  # and a Teams workflow's signature
])  # fmt: skip
def test_secrets_detect_secrets_misses_are_found(path: str, text: str, secret: str):
    found = find_secrets(text, path, detect_language(path, text))
    assert [text[s:e] for s, e, _ in found] == [secret]


@pytest.mark.parametrize(("path", "text", "secrets"), [
    ("db.py", "c = psycopg2.connect(host='db', user='app', password='FirstPw11xx', sslpassword='KwargPwSecond22')",
     ["FirstPw11xx", "KwargPwSecond22"]),
    ("db.py", 'CONFIG = {"user": "svc", "password": "DictFirst33x", "secret": "DictSecretSecond44"}',
     ["DictFirst33x", "DictSecretSecond44"]),
    ("c.ts", "export const creds = { apiKey: 'TsFirst55abc1', secret: 'TsSecretSecond66yy' };",
     ["TsFirst55abc1", "TsSecretSecond66yy"]),
])
def test_every_secret_of_a_line_is_found_not_only_its_first(path: str, text: str, secrets: list[str]):
    """detect-secrets' keyword plugin gives a line's first value: the second reached the documents in clear."""
    assert [text[s:e] for s, e, _ in find_secrets(text, path, detect_language(path, text))] == secrets


def test_a_url_password_with_an_empty_user_passes_the_stage_s_prefilter():
    """`redis://:SECRET@cache` was found by `find_secrets`, but the stage's prefilter wanted a user before the colon:
    the file never reached it, and the password stayed."""
    text = 'r = redis.from_url("redis://:Tr0ub4dorQ1x9@cache:6379/0")\n'
    table = documents({"cache.py": text})
    assert run_stage(CodeSecrets(), table).column("text").to_pylist() == [text.replace("Tr0ub4dorQ1x9", "<SECRET>")]


def test_netrc_and_pgpass_passwords_are_redacted_though_no_keyword_names_them():
    """A netrc's `password` is no assignment, and a pgpass line (`host:port:db:user:password`) names no keyword: both
    files reached the documents whole, and a pgpass one passed the stage's prefilter untouched."""
    files = {"home/.netrc": "machine api.example.com login me password NetrcPw4u\nmachine b login x\n"
                            "  password Ot7pw!x\n",
             "home/.pgpass": "# host:port:db:user:password\ndb.internal:5432:*:app:PgPassPw9\n"
                             "localhost:*:*:me:pa\\:ss99x\n"}
    out = run_stage(CodeSecrets(), documents(files)).column("text").to_pylist()
    assert out == [files["home/.netrc"].replace("NetrcPw4u", "<SECRET>").replace("Ot7pw!x", "<SECRET>"),
                   files["home/.pgpass"].replace("PgPassPw9", "<SECRET>").replace("pa\\:ss99x", "<SECRET>")]


def test_a_token_after_a_long_run_of_its_prefix_is_found():
    """The JWT pattern, tried at each `eyJ` of a run without a dot, scanned the rest of the run from each: a 900 KB
    fixture of them took minutes. The run is no token; the real one after it is, whole."""
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    jwt = f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': '42'})}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    text = f"x = '{'eyJ' * 30000}'\ny = 'a-{'eyJ-' * 30000}.q'\ntoken = \"{jwt}\"  # eyJ\n"
    assert [(text[s:e], kind) for s, e, kind in find_secrets(text, "f.py", "python")] == [(jwt, "jwt")]


@pytest.mark.parametrize(("path", "text"), [
    ("db.py", "password = get_secret('db')"), ("db.py", "key = request.headers['key']"),
    ("docs.py", "user = User(username='scolvin', password='password1')"),  # documentation's example password
    ("cfg.h", '#define KEY_NAME "my-key-name-01"'), ("run.sh", "mysql -u root -p shop"),
    ("x.scm", '(define password-prompt "Enter your password: ")'), ("x.el", '(defvar my-password "password")'),
    ("run.sh", "mysql -p${DB_PASS} shop"), ("run.sh", "curl -u admin:$PASSWORD https://x.internal"),
    ("db.py", "conn = connect(host=host, user=user, password=self.password)"),  # references, not literals
    ("db.py", 'conn = connect(host="db", user="app", password=os.environ["DB_PASSWORD"])'),
    ("Dockerfile", "ENV PASSWORD_FILE /run/secrets/db\nENV API_KEY ${API_KEY}"),  # a path and a reference
    ("auth.md", "HTTP Basic authentication; the Authorization header says Basic and a base64 string"),
    ("settings.py", 'SECRET_KEY_ALGORITHM = "HmacSHA256"\npassword_hasher = "argon2id"\nPASSWORD_CHARSET = "latin1"'),
    ("init.sql", "ALTER USER app IDENTIFIED BY :newpw;\nALTER USER b IDENTIFIED BY &pw1;\nCREATE USER c IDENTIFIED BY "
     "VALUES 'S:ABC';"),  # a bind variable, a substitution variable, a stored hash
    ("index.js", "// fixes problems identified by validate(), accepts\n# identified by ISO-639-1 codes"),  # prose
    ("v.py", 'VAULT_TOKEN = "hvs.XXXXXXXXXXXXXXXXXXXXXXXXXXXX"  # a placeholder'),
    ("wp-config.php", "define( 'DB_PASSWORD', 'password_here' );\ndefine('SECRET_NAME', 'web-tls-2024');"),
    ("t.py", "user.set_password(password)\nuser.set_password('password1')"),
    ("deploy.yaml", "env:\n  - name: SECRET_NAME\n    value: web-tls-2024\n  - name: DB_PASSWORD\n    valueFrom:\n"
     "      secretKeyRef: {name: db, key: pw}\n"),
])  # fmt: skip
def test_references_names_and_examples_are_no_secrets(path: str, text: str):
    assert find_secrets(text, path, detect_language(path, text)) == []
