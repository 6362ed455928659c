"""The code recipe end to end through the session's local Ray: a repository folder and a repository archive.

recipes/code.yaml as shipped, less its MinHash stage (see the comment in the test), on a
repository archive made from the installed `requests` and a folder repository holding a copy of
one of its files, a protoc-generated file and a planted token.
"""

from __future__ import annotations

import json
import shutil
import sysconfig
import tarfile
from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curation.recipe import parse_recipe
from pipelines.run import run
from tests.conftest import ROOT

pytestmark = pytest.mark.ray
SITE = Path(sysconfig.get_paths()["purelib"])
TOKEN = "ghp_" + "Zq81" * 9


def private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def stage(stats: dict, name: str) -> dict:
    return next(s for s in stats["stages"] if s["stage"] == name)


def test_code_recipe_on_a_folder_and_an_archive(ray_session, tmp_path: Path):
    archive = tmp_path / "requests.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(SITE / "requests", arcname="requests-main/requests",
                filter=lambda i: None if "__pycache__" in i.name else i)
        for dist in SITE.glob("requests-*.dist-info"):
            tar.add(dist, arcname=f"requests-main/{dist.name}")
    folder = tmp_path / "myrepo"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    shutil.copy(next(SITE.glob("pyyaml-*.dist-info/**/LICENSE")), folder / "LICENSE")
    (folder / "src").mkdir()
    shutil.copy(SITE / "requests" / "api.py", folder / "src" / "api.py")  # the same file as in the archive
    (folder / "src" / "settings.py").write_text(f'"""Settings."""\n\nDEBUG = False\nGITHUB_TOKEN = "{TOKEN}"\n'
                                                "TIMEOUT_SECONDS = 30\n")
    generated = next(SITE.glob("google/api/annotations_pb2.py")).read_text()
    (folder / "src" / "annotations_pb2.py").write_text(generated + f"# {TOKEN}\n")  # dropped, after redaction
    (folder / "src" / "deploy.py").write_text(f'"""Deploy."""\n\nKEY = """{private_key()}"""\n\n\ndef key():\n'
                                              "    return KEY\n")
    recipe = parse_recipe(
        (ROOT / "recipes" / "code.yaml").read_text()
        .replace('["data/repos/*.tar.gz", "data/repos/*.zip"]', json.dumps([str(archive), str(folder)]))
        # MinHash's Ray plan costs several shuffles; test_code_dedup runs code.yaml's settings on real
        # vendored near-copies through its reference, which tests/dedup/test_minhash_dedup holds equal to the Ray plan
        .replace("  - minhash_dedup:", "  # - minhash_dedup:")
    )
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    stats = result.stats
    read = stage(stats, "read")
    assert read["skipped"] == {"empty": 1}  # requests' empty py.typed; the folder's .git/HEAD is no input at all
    filters = stage(stats, "code_filters")
    # the pb2 file; LICENSE and the dist-info's METADATA, RECORD... are no source code
    assert filters["dropped"]["generated"] == 1 and set(filters["dropped"]) == {"generated", "plain_text",
                                                                               "unknown_language"}
    assert stage(stats, "code_secrets")["counts"]["github"] == 2
    assert stage(stats, "exact_dedup")["dropped"] == {"duplicate": 1}
    docs = pq.read_table(Path(result.job_dir) / "documents").to_pylist()
    metas = {json.loads(d["meta"])["path"]: json.loads(d["meta"]) for d in docs}
    assert len(docs) == len(metas) == stats["documents"]["out"]
    assert {m["license"] for p, m in metas.items() if p.startswith("requests/")} == {"Apache-2.0"}
    assert metas["src/settings.py"]["license"] == "MIT" and metas["src/settings.py"]["repo"] == "myrepo"
    settings = next(d["text"] for d in docs if d["title"] == "src/settings.py")
    assert TOKEN not in settings and 'GITHUB_TOKEN = "<SECRET>"' in settings
    # code.yaml redacts before code_filters: a file holding a private key was dropped as `encoded_data` (79% of
    # it base64) with the key in clear in rejects/
    deploy = next(d["text"] for d in docs if d["title"] == "src/deploy.py")
    assert deploy.startswith('"""Deploy."""\n\nKEY = """<SECRET>\n"""')
    rejects = pads.dataset(Path(result.job_dir) / "rejects", format="parquet", partitioning="hive").to_table()
    assert not any(TOKEN in (text or "") for text in rejects.column("text").to_pylist())
    by_reason = {r["reason"]: r for r in rejects.to_pylist()}
    assert "protocol buffer compiler" in by_reason["generated"]["detail"]
    assert by_reason["duplicate"]["detail"].startswith("kept ")
