"""Code curation quality on real installed code: keep/drop rates per class, licence coverage, secrets.

Data: the project's own virtual environment (`site-packages`), nothing downloaded:

- **hand-written**: every `.py` file of the libraries in `HAND_WRITTEN` (requests, PyYAML, click,
  jinja2, flask, ... and pyarrow's top-level modules; the set the tests use) and, separately, a
  broad set (`BROAD`: 30 more libraries, whose files include data tables and version files that
  generators wrote, so not every drop there is a mistake: each is listed with its reason);
- **generated**: every `*_pb2.py` (protocol-buffer compiler output: googleapis-common-protos,
  protobuf, opentelemetry, ray...);
- **minified**: the JavaScript/CSS bundles plotly and ray's dashboard ship.

Figures, each beside its target and a peer measured in the same run:

1. Share kept per class by `code_filters` (defaults), with the drop reasons. Peer: BigCode's basic
   filter alone (longest line <= 1000, mean line <= 100, alphanumeric share >= 0.25; Codex / The
   Stack), which knows nothing of generators. Targets: hand-written kept >= 95%, generated and
   minified dropped >= 95%.
2. Licence coverage: every installed package that ships a licence file in its `.dist-info`
   (target 100%), the licences and classes found, and how (licence texts, notices, names).
3. Secrets: recall on secrets of eight kinds planted into real files (python, JS, YAML, INI,
   shell; target 100%, whole secret redacted) and files changed among the hand-written files
   (target 0). Peer: detect-secrets as shipped (all its plugins, its default filters, entropy
   detectors included), run on the same planted and hand-written files.

    .venv/bin/python benchmarks/code_filters.py [--peer-files 400]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import string
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa

from curation import schema
from curation.apply import run_stage
from curation.code.licenses import is_license_file, license_class, licenses_in_file
from curation.code.repository import RepoLicenses
from curation.readers.code import CodeOptions, CodeReader
from curation.stages.code_filters import CodeFilters
from curation.stages.code_secrets import CodeSecrets

try:  # `python benchmarks/<name>.py` puts benchmarks/ on sys.path
    from _results import LOAD_AT_START, code_version, figure, write_results
except ImportError:  # imported as benchmarks.<name>
    from benchmarks._results import LOAD_AT_START, code_version, figure, write_results

SITE = Path(sysconfig.get_paths()["purelib"])
HAND_WRITTEN = ["requests", "yaml", "click", "jinja2", "flask", "itsdangerous", "packaging", "urllib3", "httpx",
                "starlette", "werkzeug", "attr", "fastapi"]
BROAD = ["pydantic", "rich", "tqdm", "uvicorn", "charset_normalizer", "datasketch", "ftfy", "trafilatura",
         "jsonschema", "google/protobuf", "google/auth", "botocore", "boto3", "aiohttp", "multidict", "yarl",
         "fsspec", "huggingface_hub", "datasets", "pandas/core", "numpy/lib", "networkx/algorithms", "sympy/core",
         "IPython/core", "jedi", "pygments/lexers", "idna", "markdown_it", "lxml/html", "dateutil"]
MINIFIED = ["plotly/package_data/*.js", "plotly/labextension/static/*.js", "ray/dashboard/client/build/**/*.js",
            "ray/dashboard/client/build/**/*.css"]


def site_files(patterns: list[str]) -> list[Path]:
    return sorted({p for pattern in patterns for p in SITE.glob(pattern) if p.is_file()})


def python_files(packages: list[str], *, top_level_pyarrow: bool = False) -> list[Path]:
    files = [p for pkg in packages for p in (SITE / pkg).rglob("*.py") if "_pb2" not in p.name]
    if top_level_pyarrow:
        files += sorted((SITE / "pyarrow").glob("*.py"))
    return sorted(set(files))


def as_documents(files: list[Path], max_file_bytes: int = 1_000_000) -> tuple[pa.Table, Counter]:
    """Files read as the `code` reader reads them (language, size, skips), as one batch of documents."""
    reader = CodeReader(code=CodeOptions(max_file_bytes=max_file_bytes))
    texts, metas, skipped = [], [], Counter()
    for i, path in enumerate(files):
        relative = path.relative_to(SITE).as_posix()
        record = reader.document(i, relative.split("/")[0], relative, path.read_bytes(), None)
        if record.reason:
            skipped[record.reason] += 1
            continue
        texts.append(record.text)
        metas.append(json.dumps(record.meta))
    table = schema.documents_table(texts)
    return table.set_column(table.schema.get_field_index("meta"), "meta", pa.array(metas, pa.string())), skipped


def basic_filter_keeps(table: pa.Table) -> list[bool]:
    """BigCode's basic filter (the peer): longest line, mean line and alphanumeric share only."""
    out = []
    for text in table.column("text").to_pylist():
        lines = text.splitlines() or [""]
        lengths = [len(line) for line in lines]
        alnum = sum(c.isalnum() for c in text) / max(len(text), 1)
        out.append(max(lengths) <= 1000 and sum(lengths) / len(lengths) <= 100 and alnum >= 0.25)
    return out


def quality(label: str, files: list[Path], target: str, *, max_file_bytes: int = 1_000_000,
            show_drops: bool = False) -> dict:
    table, skipped = as_documents(files, max_file_bytes)
    started = time.process_time()
    out = run_stage(CodeFilters(), table)
    seconds = time.process_time() - started
    reasons = out.column(schema.REASON).to_pylist()
    details = out.column(schema.DETAIL).to_pylist()
    paths = [json.loads(m)["path"] for m in table.column("meta").to_pylist()]
    kept = reasons.count(None) / max(len(reasons), 1)
    peer = basic_filter_keeps(table)
    peer_kept = sum(peer) / max(len(peer), 1)
    wanted_keep = target == "keep"
    ours, theirs = (kept, peer_kept) if wanted_keep else (1 - kept, 1 - peer_kept)
    verb = "kept" if wanted_keep else "dropped"
    print(f"{label}: {len(files)} files ({sum(skipped.values())} skipped when read: {dict(skipped)}), "
          f"{sum(len(t) for t in table.column('text').to_pylist()) / 1e6:.1f} MB")
    print(f"  code_filters {verb} {ours:.1%}  |  peer (basic filter) {verb} {theirs:.1%}  |  target >= 95%  |  "
          f"ours / peer = {ours / theirs if theirs else float('inf'):.2f}")
    print(f"  drop reasons: {dict(Counter(r for r in reasons if r))}; {len(reasons) / seconds:,.0f} files/s CPU")
    if show_drops:
        for reason, detail, path in zip(reasons, details, paths, strict=True):
            if reason:
                print(f"    {reason:16} {path}  [{detail}]")
    return {"class": label, "files": len(reasons), verb: ours, "peer " + verb: theirs}


def licence_coverage() -> dict:
    found, methods, classes, missing = {}, Counter(), Counter(), []
    for dist in sorted(SITE.glob("*.dist-info")):
        texts = {p.relative_to(dist).as_posix(): p.read_text(encoding="utf-8", errors="replace")
                 for p in dist.rglob("*") if p.is_file() and is_license_file(p.relative_to(dist).as_posix())}
        if not texts:
            continue
        expression = RepoLicenses({f"{dist.name}/{k}": v for k, v in texts.items()}).for_path("pkg/x.py")[0]
        found[dist.name] = expression
        if not expression:
            missing.append(dist.name)
            continue
        classes[license_class(expression)] += 1
        for text in texts.values():
            words = len(text.split())
            if licenses_in_file(text):
                methods["name only" if words <= 8 else "text or notice"] += 1
    with_licence = len(found)
    covered = with_licence - len(missing)
    licences = Counter(e for e in found.values() if e)
    print(f"licences: {covered}/{with_licence} packages with a licence file got one = {covered / with_licence:.1%} "
          f"(target 100%); classes {dict(classes)}")
    print(f"  most common: {licences.most_common(8)}; licence files matched: {dict(methods)}")
    if missing:
        print(f"  no licence found for: {missing}")
    return {"packages with a licence file": with_licence, "licence found": covered}


def _rand(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def planted_files(rng: random.Random) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Real files with one secret of each kind planted on a new line at a random place (seeded)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode().strip()
    head = _b64('{"alg":"HS256","typ":"JWT"}')
    makers = {
        "aws": lambda: ("AKIA" + _rand(rng, 16, string.ascii_uppercase + "234567"), 'AWS_ACCESS_KEY_ID = "{s}"'),
        "github": lambda: ("ghp_" + _rand(rng, 36), 'token = "{s}"'),
        "slack": lambda: (f"xoxb-{_rand(rng, 12, string.digits)}-{_rand(rng, 13, string.digits)}-{_rand(rng, 24)}",
                          'SLACK = "{s}"'),
        "jwt": lambda: (f"{head}.{_b64(json.dumps({'sub': _rand(rng, 12), 'admin': True}))}.{_rand(rng, 43)}",
                        'AUTH = "Bearer {s}"'),
        "password": lambda: (_rand(rng, 7, string.ascii_letters) + _rand(rng, 2, string.digits) + "!",
                             'password = "{s}"'),
        "stripe": lambda: ("sk_live_" + _rand(rng, 24), 'stripe.api_key = "{s}"'),
        "url": lambda: (_rand(rng, 9) + "7", 'DSN = "postgresql://app:{s}@db.internal/app"'),
        "private_key": lambda: (pem, 'KEY = """{s}\n"""'),
    }
    files, secrets = {}, []
    for path in [p for p in python_files(HAND_WRITTEN) if p.stat().st_size > 2000][::5][:40]:
        rows = path.read_text(encoding="utf-8").split("\n")
        for kind, make in makers.items():
            secret, template = make()
            rows.insert(rng.randrange(1, len(rows)), template.format(s=secret))
            secrets.append((kind, secret))
        files[path.relative_to(SITE).as_posix()] = "\n".join(rows)
    return files, secrets


def documents(files: dict[str, str]) -> pa.Table:
    table = schema.documents_table(list(files.values()))
    metas = [json.dumps({"path": p, "language": "python"}) for p in files]
    return table.set_column(table.schema.get_field_index("meta"), "meta", pa.array(metas))


def detect_secrets_peer(files: dict[str, str], tmp: Path) -> dict[str, set[str]]:
    """detect-secrets as shipped (every plugin, default filters) over files on disk: path -> flagged values."""
    for name, text in files.items():
        target = tmp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "detect_secrets", "scan", "--all-files", "."], cwd=tmp,
                         capture_output=True, text=True, check=True)
    results = json.loads(out.stdout)["results"]
    flagged: dict[str, set[str]] = {}
    for name, hits in results.items():
        text = (tmp / name).read_text(encoding="utf-8")
        lines = text.split("\n")
        flagged[name] = {lines[h["line_number"] - 1] for h in hits}  # detect-secrets reports lines, not spans
    return flagged


def secrets(peer_files: int) -> dict:
    import tempfile

    rng = random.Random(8)
    planted, truth = planted_files(rng)
    out = run_stage(CodeSecrets(), documents(planted))
    redacted = "\n".join(out.column("text").to_pylist())
    found = [s for _, s in truth if s not in redacted]
    per_kind = Counter(k for k, s in truth if s not in redacted)
    hand = {p.relative_to(SITE).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in python_files(HAND_WRITTEN, top_level_pyarrow=True)}
    started = time.process_time()
    cleaned = run_stage(CodeSecrets(), documents(hand)).column("text").to_pylist()
    seconds = time.process_time() - started
    changed = [p for p, t in zip(hand, cleaned, strict=True) if t != hand[p]]
    size = sum(len(t) for t in hand.values()) / 1e6
    print(f"secrets: planted {len(truth)} in {len(planted)} real files ({len(makers_of(truth))} kinds): "
          f"redacted {len(found)}/{len(truth)} = {len(found) / len(truth):.1%} (target 100%); "
          f"per kind {dict(per_kind)}")
    print(f"  hand-written files changed: {len(changed)}/{len(hand)} (target 0) {changed[:5]}; "
          f"{size / seconds:.1f} MB/s CPU")
    with tempfile.TemporaryDirectory() as tmp:
        sample = dict(list(hand.items())[:peer_files])
        peer_hand = detect_secrets_peer(sample, Path(tmp) / "hand")
        peer_planted = detect_secrets_peer(planted, Path(tmp) / "planted")
    peer_fp = sum(1 for lines in peer_hand.values() if lines)
    flagged_lines = "\n".join(line for lines in peer_planted.values() for line in lines)
    peer_recall = sum(1 for _, s in truth if s.split("\n")[0] in flagged_lines) / len(truth)
    body_leak = sum(1 for k, s in truth if k == "private_key" and s.split("\n")[1] not in flagged_lines)
    print(f"  peer detect-secrets (all plugins): flags a line holding {peer_recall:.1%} of the planted secrets "
          f"(private-key bodies not flagged: {body_leak}/{sum(k == 'private_key' for k, _ in truth)}); "
          f"flags {peer_fp}/{len(sample)} hand-written files (ours: "
          f"{sum(1 for p in changed if p in sample)}/{len(sample)})")
    return {"recall": len(found) / len(truth), "false files": len(changed), "peer false files": peer_fp}


def makers_of(truth: list[tuple[str, str]]) -> set[str]:
    return {k for k, _ in truth}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-files", type=int, default=400, help="hand-written files detect-secrets scans")
    args = parser.parse_args()
    print(f"load average {LOAD_AT_START:.2f}; commit {code_version()}; site-packages {SITE}")
    classes = [
        quality("hand-written (the tests' set)", python_files(HAND_WRITTEN, top_level_pyarrow=True), "keep",
                show_drops=True),
        quality("hand-written, broad (30 more libraries)", python_files(BROAD), "keep", show_drops=True),
        quality("generated (*_pb2.py)", sorted(SITE.rglob("*_pb2.py")), "drop"),
        quality("minified (plotly, ray dashboard)", site_files(MINIFIED), "drop", max_file_bytes=8_000_000,
                show_drops=True),
    ]
    licences = licence_coverage()
    found = secrets(args.peer_files)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    figures = [figure(f"{c['class']}: {verb} ({c['files']} files)", c[verb], "share", "basic filter",
                      c["peer " + verb], target=">= 95%", met=c[verb] >= 0.95)
               for c in classes for verb in ("kept", "dropped") if verb in c]
    figures += [
        figure("packages with a licence file that get a licence", licences["licence found"], "packages", "all",
               licences["packages with a licence file"], target="100%",
               met=licences["licence found"] == licences["packages with a licence file"]),
        figure("planted secrets redacted", found["recall"], "share", target="100%", met=found["recall"] == 1),
        figure("hand-written files changed by code_secrets", found["false files"], "files", "detect-secrets (flagged)",
               found["peer false files"], target="0", met=found["false files"] == 0),
    ]
    write_results("code_filters", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
