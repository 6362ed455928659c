"""deploy/: the container images and the KubeRay manifests, checked without Docker or a cluster.

- Dockerfiles: their pip steps are the Makefile's (so the image installs what `make test` tested), the pins
  agree with pyproject.toml and with the manifests' rayVersion, the user is not root, what they copy exists
  and is not kept out of the build context.
- Manifests: every standard object against the Kubernetes schema of a pinned version (strict: unknown keys
  are errors), every pod template inside the KubeRay resources as a `PodTemplateSpec`, the RayCluster and
  RayJob against our own schema of KubeRay's v1 API; then the cross-references: Services select the pods of
  a Deployment, every ConfigMap / Secret / claim referred to exists, images are the built ones, the GPU group
  asks for GPUs, the RayJob's recipe and the training recipe pass the project's own parsers.
"""

from __future__ import annotations

import copy
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.conftest import ROOT
from tests.support import kube

DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
STANDARD_KINDS = {"Namespace", "Deployment", "Service", "ConfigMap", "Secret", "PersistentVolumeClaim"}
RAY_KINDS = {"RayCluster", "RayJob"}


# ------------------------------------------------------------------------------------------ reading files


def kustomization() -> dict[str, Any]:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


def manifests() -> list[dict[str, Any]]:
    """Every object of the files kustomization.yaml lists, in order."""
    return [doc for name in kustomization()["resources"]
            for doc in yaml.safe_load_all((K8S / name).read_text()) if doc]


def by_kind(kind: str, objects: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [o for o in (manifests() if objects is None else objects) if o["kind"] == kind]


def named(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in by_kind(kind) if o["metadata"]["name"] == name]
    return obj


def parse_recipe(text: str, file: str = "<recipe>", *, check_paths: bool = True) -> Any:
    from curation.recipe import parse_recipe  # imports every stage: only the tests that need it pay

    return parse_recipe(text, file, check_paths=check_paths)


def parse_train_recipe(text: str, file: str, *, check_paths: bool = True) -> Any:
    from curation.train.config import parse_train_recipe  # imports torch

    return parse_train_recipe(text, file, check_paths=check_paths)


def cli_parser() -> Any:
    from pipelines.cli import parser

    return parser()


def built_images() -> dict[str, str]:
    """Image name in the manifests -> the image it becomes (kustomization's `images:`)."""
    return {i["name"]: f"{i['newName']}:{i['newTag']}" for i in kustomization()["images"]}


def containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    spec = template["spec"]
    return list(spec.get("initContainers") or []) + list(spec["containers"])


def all_pod_templates() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{o['kind']}/{o['metadata']['name']} {where}", t)
            for o in manifests() for where, t in kube.pod_templates(o)]


def ray_cluster_specs() -> list[tuple[str, dict[str, Any]]]:
    out = [(f"RayCluster/{o['metadata']['name']}", o["spec"]) for o in by_kind("RayCluster")]
    out += [(f"RayJob/{o['metadata']['name']}", o["spec"]["rayClusterSpec"])
            for o in by_kind("RayJob") if "rayClusterSpec" in o["spec"]]
    return out


def mount_of(container: dict[str, Any], template: dict[str, Any], source: str, name_key: str, name: str) -> str:
    """Where `container` mounts the volume whose `source` (configMap, persistentVolumeClaim) is `name`."""
    volumes = [v["name"] for v in template["spec"].get("volumes", []) if (v.get(source) or {}).get(name_key) == name]
    mounts = [m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] in volumes]
    assert mounts, f"{container['name']} does not mount {source} {name}"
    return mounts[0]


def logical_lines(text: str) -> list[str]:
    """Dockerfile / Makefile lines with backslash continuations joined and comments dropped."""
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or not (line or current):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    return out


def dockerfile(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile."""
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "")
            for ln in logical_lines((DEPLOY / name).read_text())]


def arg_default(instructions: list[tuple[str, str]], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for i, a in instructions if i == "ARG" and a.startswith(f"{name}=")]
    return value


def pip_installs(commands: list[str]) -> list[list[str]]:
    """The arguments of every `pip install` in shell command lines (after `install`)."""
    out = []
    for line in commands:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = [*list(lexer), ";"]
        for i in range(len(words) - 1):
            if words[i] == "pip" and words[i + 1] == "install":
                end = next(j for j in range(i + 2, len(words)) if words[j] in {"&&", ";", "||", "|"})
                out.append(words[i + 2:end])
    return out


def normalize_pip(args: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """(the install's meaningful flags and requirements, options that may differ between the Makefile and an
    image). The project itself becomes `PROJECT[extras]`; quiet and editable do not change what is installed."""
    kept, options, i = [], {}, 0
    while i < len(args):
        a = args[i]
        if a in {"-q", "--quiet", "-e", "--editable", "--no-cache-dir"}:
            pass
        elif a in {"-c", "--constraint", "--index-url", "-i"}:
            options[a.lstrip("-")] = args[i + 1]
            i += 1
        elif re.match(r"^(\.|/[\w./-]*)(\[[\w,]*\])?$", a):
            extras = re.search(r"\[([\w,]*)\]", a)
            kept.append("PROJECT[" + ",".join(sorted(filter(None, extras.group(1).split(",") if extras else []))) + "]")
        else:
            kept.append(a)
        i += 1
    return tuple(kept), options


def makefile_pip_steps() -> list[list[str]]:
    lines = logical_lines((ROOT / "Makefile").read_text())
    steps = [ln.split("/python", 1)[1] for ln in lines if "-m pip install" in ln]
    return pip_installs([s.replace("-m pip", "pip", 1) for s in steps])


def docker_pip_steps(name: str) -> list[list[str]]:
    runs = [a for i, a in dockerfile(name) if i == "RUN"]
    return pip_installs([r.replace("python -m pip", "pip") for r in runs])


def train_extra_pin(package: str) -> str:
    (req,) = [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["train"]
              if Requirement(r).name == package]
    (spec,) = req.specifier
    assert spec.operator == "==", f"the train extra should pin {package} exactly, not {spec}"
    return spec.version


def without_dev(word: str) -> str:
    """`PROJECT[dev,train]` -> `PROJECT[train]`; other words unchanged."""
    if not word.startswith("PROJECT["):
        return word
    return "PROJECT[" + ",".join(e for e in word[8:-1].split(",") if e and e != "dev") + "]"


def is_torch_step(args: list[str]) -> bool:
    kept, _ = normalize_pip(args)
    return len(kept) == 1 and re.match(r"torch\b", kept[0]) is not None


# ------------------------------------------------------------------------------------------ images


def test_image_pip_steps_are_the_makefiles():
    make = [normalize_pip(a) for a in makefile_pip_steps()]
    docker = [normalize_pip(a) for a in docker_pip_steps("Dockerfile") if not is_torch_step(a)]
    assert make, "no `pip install` found in the Makefile"
    # The image installs the project without the test tools (`dev`); everything else is the Makefile's.
    expected = [tuple(without_dev(w) for w in kept) for kept, _ in make]
    assert [kept for kept, _ in docker] == expected
    for kept, options in docker:
        assert set(options) <= {"c"}, f"{kept}: only a constraints file may be added to the Makefile's step"
        if "c" in options:
            assert (DEPLOY / "constraints.txt").is_file()
    assert any(k == "PROJECT[train]" for kept, _ in docker for k in kept), "the image needs the train extra"


def test_image_torch_is_the_train_extras_torch():
    pin = f"torch=={train_extra_pin('torch')}"
    for name, index in (("Dockerfile", "download.pytorch.org/whl/cpu"), ("Dockerfile.cuda", "")):
        steps = [normalize_pip(a) for a in docker_pip_steps(name) if is_torch_step(a)]
        assert steps, f"{name} installs no torch of its own"
        for kept, options in steps:
            assert kept == (pin,), f"{name}: {kept} is not the train extra's {pin}"
            url = options.get("index-url", "")
            default = arg_default(dockerfile(name), url.strip("${}")) if url.startswith("$") else url
            assert index in default, f"{name}: torch from {default}"


def test_ray_pin_is_the_manifests_rayversion():
    pins = [Requirement(ln) for ln in (DEPLOY / "constraints.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]
    (ray,) = [r for r in pins if r.name == "ray"]
    (spec,) = ray.specifier
    (declared,) = [Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "ray"]
    assert declared.specifier.contains(Version(spec.version)), f"{ray} does not satisfy pyproject's {declared}"
    for where, cluster in ray_cluster_specs():
        assert cluster["rayVersion"] == spec.version, f"{where}: rayVersion {cluster['rayVersion']} != {ray}"


def test_cpu_image():
    steps = dockerfile("Dockerfile")
    froms = [a for i, a in steps if i == "FROM"]
    assert froms == ["${PYTHON_IMAGE}"]
    base = arg_default(steps, "PYTHON_IMAGE")
    python = re.fullmatch(r"python:(3\.\d+)[\d.]*-slim(-\w+)?", base)
    assert python, f"{base}: not an official slim Python image"
    assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(python.group(1)), base
    runs = " ".join(a for i, a in steps if i == "RUN")
    assert re.search(r"apt-get install .*\bwget\b", runs), "KubeRay's default probes run wget in Ray containers"
    assert "ray --version" in runs and "curate " in runs, "the build checks that ray and curate are on PATH"
    users = [a for i, a in steps if i == "USER"]
    assert users and re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]), f"must end as a numeric non-root user: {users}"
    # Every COPY source exists and is let into the build context by Dockerfile.dockerignore.
    ignore = [ln.strip() for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert ignore[0] == "*", "the ignore file lets in only what is listed"
    allowed = {p[1:] for p in ignore if p.startswith("!")}
    for i, args in steps:
        if i == "COPY":
            words = [w for w in shlex.split(args) if not w.startswith("--")]
            for src in words[:-1]:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert src in allowed, f"COPY {src}: kept out of the build context by Dockerfile.dockerignore"


def test_package_data_covers_every_data_file():
    """The image installs the project as a package, not editable: a data file that package-data does not
    name would be missing there although every test here passes."""
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]
    for package in ("curation", "pipelines"):
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts:
                relative = path.relative_to(ROOT / package)
                assert any(relative.match(p) for p in patterns.get(package, [])), f"{package}/{relative}"


def test_cuda_image_is_the_cpu_image_with_cuda_torch():
    steps = dockerfile("Dockerfile.cuda")
    assert [a for i, a in steps if i == "FROM"] == ["${BASE_IMAGE}"]
    # FROM the CPU image: Ray refuses nodes whose Python differs from the head's, to the patch version.
    assert arg_default(steps, "BASE_IMAGE") == built_images()["curation"]
    assert not [a for i, a in steps if i in {"COPY", "ADD"}]
    runs = " ".join(a for i, a in steps if i == "RUN")
    assert "pip uninstall -q -y torch" in runs, "the CPU build satisfies ==pin: it has to go first"
    assert "torch.version.cuda" in runs, "the build checks that torch is a CUDA build"
    users = [a for i, a in steps if i == "USER"]
    assert users[-1] == [a for i, a in dockerfile("Dockerfile") if i == "USER"][-1]
    assert built_images()["curation-cuda"].endswith(":" + built_images()["curation"].split(":")[1])


def test_image_names_and_tag():
    images = built_images()
    assert set(images) == {"curation", "curation-cuda"}
    name, tag = images["curation"].rsplit(":", 1)
    assert tag == PYPROJECT["project"]["version"], "the image tag is the project's version"
    assert images["curation-cuda"] == f"{name}-cuda:{tag}"


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_deploy_makefile_builds_the_kustomization_images():
    out = subprocess.run(["make", "-s", "-n", "-C", str(DEPLOY), "image-cuda", "push"], capture_output=True,
                         text=True, check=True).stdout
    cpu, cuda = built_images()["curation"], built_images()["curation-cuda"]
    assert f"build -f Dockerfile -t {cpu} .." in out
    assert f"build -f Dockerfile.cuda --build-arg BASE_IMAGE={cpu} -t {cuda} ." in out
    assert f"push {cpu}" in out and f"push {cuda}" in out


# ------------------------------------------------------------------------------------------ schemas


def test_every_manifest_is_listed_and_of_a_known_kind():
    listed = set(kustomization()["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    kinds = {o["kind"] for o in manifests()}
    assert kinds <= STANDARD_KINDS | RAY_KINDS, kinds - STANDARD_KINDS - RAY_KINDS
    assert {"Deployment", "Service", "ConfigMap", "Secret", "RayCluster", "RayJob"} <= kinds


def test_standard_objects_validate_against_kubernetes():
    objects = [o for o in manifests() if o["kind"] in STANDARD_KINDS]
    problems = [f"{o['kind']}/{o['metadata']['name']} {p}" for o in objects for p in kube.k8s_object_errors(o)]
    assert not problems, "\n".join(problems)
    # The same verdict through kubernetes-validate's own entry point (which stops at the first problem).
    import kubernetes_validate

    for o in objects:
        assert kubernetes_validate.validate(o, kube.K8S_VERSION, strict=True) == kube.K8S_VERSION.rsplit(".", 1)[0]


def test_pod_templates_validate_as_pod_template_specs():
    templates = all_pod_templates()
    assert len(templates) >= 6  # RayCluster head, cpu, gpu; RayJob head, cpu; the status Deployment
    problems = [p for where, t in templates for p in kube.k8s_type_errors(t, kube.POD_TEMPLATE_SPEC, where)]
    problems += [p for o in manifests() if o["kind"] in RAY_KINDS
                 for p in kube.k8s_type_errors(o["metadata"], kube.OBJECT_META, f"{o['kind']} metadata")]
    assert not problems, "\n".join(problems)


def test_kuberay_resources_validate_against_our_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(kube.kuberay_schema())
    assert "additionalProperties" not in kube.kuberay_schema()["$defs"]["k8sObject"]
    for o in manifests():
        if o["kind"] in RAY_KINDS:
            problems = kube.kuberay_errors(o)
            assert not problems, f"{o['kind']}/{o['metadata']['name']}:\n" + "\n".join(problems)


def _edit(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = obj
    for k in parents:
        node = node[k]
    node[last] = value
    return obj


@pytest.mark.parametrize(("kind", "path", "value", "expected"), [
    ("RayCluster", "spec.workerGroupSpecs.0.maxReplica", 3, "'maxReplica' was unexpected"),
    ("RayCluster", "spec.headGroupSpec.rayStartParams.num-cpus", 0, "0 is not of type 'string'"),
    ("RayCluster", "spec.headGroupSpec.serviceType", "Ingress", "is not one of"),
    ("RayCluster", "spec.rayVersion", "latest", "does not match"),
    ("RayJob", "spec.submissionMode", "K8sMode", "is not one of"),
    ("RayJob", "spec.clusterSelector", {"ray.io/cluster": "curation"}, "is not valid under any of"),
    ("RayJob", "spec.runtimeEnv", "pip: [x]", "'runtimeEnv' was unexpected"),
])
def test_our_kuberay_schema_rejects_mistakes(kind, path, value, expected):
    problems = kube.kuberay_errors(_edit(by_kind(kind)[0], path, value))
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("spec.containers.0.imagePullPolicy", 1, "is not of type 'string'"),
    ("spec.containers.0.resource", {}, "'resource' was unexpected"),
    ("spec.containers.0.ports.0.containerPort", "6379", "is not of type 'integer'"),
    ("spec.tolerations", {"key": "nvidia.com/gpu"}, "is not of type 'array'"),
])
def test_kubernetes_schema_rejects_pod_template_mistakes(path, value, expected):
    template = by_kind("RayCluster")[0]["spec"]["headGroupSpec"]["template"]
    problems = kube.k8s_type_errors(_edit(template, path, value), kube.POD_TEMPLATE_SPEC)
    assert any(expected in p for p in problems), problems


def test_kubernetes_schema_rejects_object_mistakes():
    deployment = by_kind("Deployment")[0]
    assert any("'replica' was unexpected" in p for p in kube.k8s_object_errors(_edit(deployment, "spec.replica", 1)))
    service = by_kind("Service")[0]
    problems = kube.k8s_object_errors(_edit(service, "spec.ports.0.port", "8000"))
    assert any("is not of type 'integer'" in p for p in problems), problems


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) not installed")
def test_rendered_kustomization_validates():
    """What `kubectl apply -k deploy/k8s` sends: images substituted in every pod template, CRDs included."""
    out = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, check=True, timeout=60)
    objects = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert sorted(o["kind"] for o in objects) == sorted(o["kind"] for o in manifests())
    built = set(built_images().values())
    problems = []
    for o in objects:
        assert o["kind"] == "Namespace" or o["metadata"].get("namespace") == kustomization()["namespace"]
        problems += kube.kuberay_errors(o) if o["kind"] in RAY_KINDS else kube.k8s_object_errors(o)
        for where, template in kube.pod_templates(o):
            problems += kube.k8s_type_errors(template, kube.POD_TEMPLATE_SPEC, where)
            problems += [f"{where}: image {c['image']} is not a built image"
                         for c in containers(template) if c["image"] not in built]
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------ cross-references


def test_services_select_the_pods_of_a_deployment():
    for service in by_kind("Service"):
        selector = service["spec"]["selector"]
        matches = [d for d in by_kind("Deployment")
                   if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert matches, f"Service/{service['metadata']['name']} selects no Deployment's pods"
        for deployment in matches:
            template = deployment["spec"]["template"]
            assert deployment["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
            ports = {p["name"] for c in containers(template) for p in c.get("ports", [])}
            numbers = {p["containerPort"] for c in containers(template) for p in c.get("ports", [])}
            for port in service["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                assert target in ports | numbers, f"Service port {port} targets no container port"


def test_referenced_configmaps_secrets_and_claims_exist():
    existing = {kind: {o["metadata"]["name"] for o in by_kind(kind)}
                for kind in ("ConfigMap", "Secret", "PersistentVolumeClaim")}
    refs: list[tuple[str, str, str]] = []
    for where, template in all_pod_templates():
        for v in template["spec"].get("volumes", []):
            if "configMap" in v:
                refs.append((where, "ConfigMap", v["configMap"]["name"]))
            if "secret" in v:
                refs.append((where, "Secret", v["secret"]["secretName"]))
            if "persistentVolumeClaim" in v:
                refs.append((where, "PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"]))
        for c in containers(template):
            for source in c.get("envFrom", []):
                refs += [(where, "Secret", source["secretRef"]["name"])] if "secretRef" in source else []
                refs += [(where, "ConfigMap", source["configMapRef"]["name"])] if "configMapRef" in source else []
            for env in c.get("env", []):
                ref = env.get("valueFrom", {})
                refs += [(where, "Secret", ref["secretKeyRef"]["name"])] if "secretKeyRef" in ref else []
                refs += [(where, "ConfigMap", ref["configMapKeyRef"]["name"])] if "configMapKeyRef" in ref else []
            names = {v["name"] for v in template["spec"].get("volumes", [])}
            for mount in c.get("volumeMounts", []):
                assert mount["name"] in names, f"{where}: {c['name']} mounts undeclared volume {mount['name']}"
    assert refs
    missing = [r for r in refs if r[2] not in existing[r[1]]]
    assert not missing, missing


def test_containers_run_the_built_images():
    names = set(built_images())
    for where, template in all_pod_templates():
        for c in containers(template):
            assert c["image"] in names, f"{where}: {c['name']} runs {c['image']}, not an image deploy/ builds"


def test_every_ray_container_gets_object_storage_and_the_jobs_volume():
    (secret,) = by_kind("Secret")
    (claim,) = by_kind("PersistentVolumeClaim")
    assert "ReadWriteMany" in claim["spec"]["accessModes"], "drivers and workers on many nodes write job folders"
    jobs_paths = set()
    for where, cluster in ray_cluster_specs():
        groups = [("head", cluster["headGroupSpec"])] + [(g["groupName"], g) for g in cluster["workerGroupSpecs"]]
        for group, spec in groups:
            template = spec["template"]
            (ray,) = [c for c in template["spec"]["containers"] if c["name"].startswith("ray-")]
            refs = [s["secretRef"]["name"] for s in ray.get("envFrom", []) if "secretRef" in s]
            assert secret["metadata"]["name"] in refs, f"{where} {group}: no object-store credentials"
            jobs_paths.add(mount_of(ray, template, "persistentVolumeClaim", "claimName", claim["metadata"]["name"]))
            assert any(m["mountPath"] == "/dev/shm" for m in ray.get("volumeMounts", [])), f"{where} {group}: /dev/shm"
            resources = ray["resources"]
            assert resources["requests"] == resources["limits"], f"{where} {group}: Ray sizes itself from limits"
            if group == "head":
                assert spec["rayStartParams"].get("num-cpus") == "0", "the head runs drivers, not tasks"
    assert len(jobs_paths) == 1, f"the jobs volume must be at one path everywhere: {jobs_paths}"


def test_object_store_secret_holds_what_the_project_reads():
    (secret,) = by_kind("Secret")
    keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    known = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION",
             "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= keys <= known, keys
    io_source = (ROOT / "curation" / "storage.py").read_text()
    for key in keys & {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}:
        assert f'"{key}"' in io_source, f"curation/storage.py no longer reads {key}"
        assert re.fullmatch(r"https?://[\w.-]+(:\d+)?/?", secret["stringData"][key])


def test_gpu_group_asks_for_gpus_and_tolerates_gpu_nodes():
    (cluster,) = by_kind("RayCluster")
    groups = {g["groupName"]: g for g in cluster["spec"]["workerGroupSpecs"]}
    assert {"cpu", "gpu"} <= set(groups)
    for name, group in groups.items():
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"], name
        (worker,) = group["template"]["spec"]["containers"]
        gpus = int(worker["resources"]["limits"].get("nvidia.com/gpu", 0))
        assert (gpus > 0) == (name == "gpu"), f"{name}: {gpus} GPUs"
        assert worker["image"] == ("curation-cuda" if name == "gpu" else "curation")
    gpu = groups["gpu"]
    (worker,) = gpu["template"]["spec"]["containers"]
    assert worker["resources"]["requests"]["nvidia.com/gpu"] == worker["resources"]["limits"]["nvidia.com/gpu"]
    tolerations = gpu["template"]["spec"]["tolerations"]
    assert any(t["key"] == "nvidia.com/gpu" and t["effect"] == "NoSchedule" for t in tolerations)
    assert cluster["spec"]["enableInTreeAutoscaling"], "GPU workers scale from zero only with the autoscaler"


def rayjob_command(job: dict[str, Any]) -> Any:
    """The RayJob's entrypoint parsed by the `curate` CLI's own parser (`python -m pipelines.cli` or `curate`)."""
    words = shlex.split(job["spec"]["entrypoint"])
    if words[:3] == ["python", "-m", "pipelines.cli"]:
        words = words[3:]
    else:
        assert words[0] == "curate", f"entrypoint {words}: neither curate nor python -m pipelines.cli"
        words = words[1:]
    return cli_parser().parse_args(words)


def test_rayjob_runs_a_valid_recipe_from_the_configmap():
    (job,) = by_kind("RayJob")
    spec = job["spec"]
    assert spec["shutdownAfterJobFinishes"] and spec["submissionMode"] == "K8sJobMode"
    args = rayjob_command(job)
    assert args.command == "run" and args.address == "auto" and args.executor == "ray", args
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]
    (ray,) = head["spec"]["containers"]
    mounted = [v["configMap"]["name"] for v in head["spec"]["volumes"] if "configMap" in v]
    recipe_path = Path(args.recipe)
    (configmap,) = [named("ConfigMap", name) for name in mounted
                    if Path(mount_of(ray, head, "configMap", "name", name)) == recipe_path.parent]
    text = configmap["data"][recipe_path.name]
    recipe = parse_recipe(text, f"{configmap['metadata']['name']}/{recipe_path.name}", check_paths=False)
    claim = by_kind("PersistentVolumeClaim")[0]["metadata"]["name"]
    jobs = mount_of(ray, head, "persistentVolumeClaim", "claimName", claim)
    assert Path(args.output or recipe.output) == Path(jobs), "the job folder must land on the shared jobs volume"
    assert all(p.startswith("s3://") for s in recipe.sources for p in s.paths), "inputs from object storage"


def test_training_recipe_fits_the_gpu_group():
    (cluster,) = by_kind("RayCluster")
    head = cluster["spec"]["headGroupSpec"]["template"]
    (ray,) = head["spec"]["containers"]
    (configmap,) = by_kind("ConfigMap")
    where = Path(mount_of(ray, head, "configMap", "name", configmap["metadata"]["name"]))
    train = parse_train_recipe(configmap["data"]["train.yaml"], "train.yaml", check_paths=False)
    assert Path(train.job).parent == where and Path(train.job).name in configmap["data"]
    curation = parse_recipe(configmap["data"][Path(train.job).name], check_paths=False)
    assert curation.tokenizer is not None and curation.pack is not None, "training reads packed shards"
    (gpu,) = [g for g in cluster["spec"]["workerGroupSpecs"] if g["groupName"] == "gpu"]
    (worker,) = gpu["template"]["spec"]["containers"]
    limits = worker["resources"]["limits"]
    assert train.use_gpu
    assert train.workers <= gpu["maxReplicas"] * int(limits["nvidia.com/gpu"]), "more trainers than GPUs"
    per_gpu_cpus = float(limits["cpu"]) / int(limits["nvidia.com/gpu"])
    assert train.cpus_per_worker <= per_gpu_cpus, "a trainer asks for more CPUs than its GPU's share"


def test_status_service_serves_the_jobs_volume():
    (deployment,) = by_kind("Deployment")
    template = deployment["spec"]["template"]
    (container,) = template["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["curate", "serve"]
    args = cli_parser().parse_args(command[1:])
    assert args.host == "0.0.0.0"
    assert args.port in {p["containerPort"] for p in container["ports"]}
    claim = by_kind("PersistentVolumeClaim")[0]["metadata"]["name"]
    assert args.jobs == mount_of(container, template, "persistentVolumeClaim", "claimName", claim)
    assert {m["mountPath"]: m.get("readOnly") for m in container["volumeMounts"]}[args.jobs], "the service only reads"
    (job,) = by_kind("RayJob")
    (configmap,) = by_kind("ConfigMap")
    run = rayjob_command(job)
    output = run.output or parse_recipe(configmap["data"][Path(run.recipe).name], check_paths=False).output
    assert output == args.jobs, "the status service must see the RayJob's job folders"
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz" and get["port"] in {p["name"] for p in container["ports"]}


def test_sizing_names_benchmarks_that_exist():
    """deploy/README.md's sizing figures each name the benchmark that measures them, and those scripts exist."""
    text = (DEPLOY / "README.md").read_text()
    sizing = text.split("\n## Sizing\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(\w+\.py)`", sizing))
    assert len(named) >= 5
    missing = sorted(n for n in named if not (ROOT / "benchmarks" / n).is_file())
    assert not missing, f"deploy/README.md's sizing names benchmarks that do not exist: {missing}"
    assert "benchmarks/RESULTS.md" in sizing
