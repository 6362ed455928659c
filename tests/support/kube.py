"""Schema checks for deploy/k8s: Kubernetes objects against a pinned Kubernetes version's JSON Schema (the
strict, closed variant shipped by kubernetes-validate), KubeRay's custom resources against our own schema
(deploy/schemas/kuberay-v1.schema.json, written from KubeRay's documented ray.io/v1 API).

Each check returns every problem as "path: message", so a test can show them all at once.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

# The oldest Kubernetes the manifests must be valid for (the schema of that minor version is used).
K8S_VERSION = "1.30.0"
DEFINITIONS = "https://kubernetes.io/api/_definitions.json"
KUBERAY_SCHEMA = Path(__file__).resolve().parents[2] / "deploy" / "schemas" / "kuberay-v1.schema.json"


def _schema_dir() -> Any:
    folder = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{K8S_VERSION}-local-strict"
    if not folder.is_dir():
        msg = f"kubernetes-validate has no schema for Kubernetes {K8S_VERSION}"
        raise LookupError(msg)
    return folder


@functools.cache
def _registry() -> Registry:
    definitions = json.loads((_schema_dir() / "_definitions.json").read_text())
    assert definitions["$id"] == DEFINITIONS, definitions["$id"]
    return Resource.from_contents(definitions) @ Registry()


@functools.cache
def _validator(filename: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((_schema_dir() / filename).read_text())
    return jsonschema.Draft202012Validator(schema, registry=_registry())


def _messages(validator: jsonschema.protocols.Validator, instance: Any, prefix: str = "") -> list[str]:
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{prefix}{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def schema_file(api_version: str, kind: str) -> str:
    """kubernetes-validate's file for a kind: `deployment-apps-v1.json`, `service-v1.json`."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


def k8s_object_errors(obj: dict[str, Any]) -> list[str]:
    """Problems of a standard Kubernetes object (Deployment, Service, ConfigMap, Secret, ...)."""
    return _messages(_validator(schema_file(obj["apiVersion"], obj["kind"])), obj)


POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def _definition_validator(definition: str) -> jsonschema.Draft202012Validator:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": f"{DEFINITIONS}#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(schema, registry=_registry())


def k8s_type_errors(instance: Any, definition: str, where: str = "") -> list[str]:
    """Problems of a value of a Kubernetes type, named as in the OpenAPI definitions (`POD_TEMPLATE_SPEC`)."""
    return _messages(_definition_validator(definition), instance, f"{where}." if where else "")


@functools.cache
def kuberay_schema() -> dict[str, Any]:
    return json.loads(KUBERAY_SCHEMA.read_text())


def kuberay_errors(obj: dict[str, Any]) -> list[str]:
    """Problems of a RayCluster or RayJob against our schema (the definition named by its kind)."""
    schema = kuberay_schema()
    if obj.get("kind") not in schema["$defs"]:
        return [f"kind: {obj.get('kind')!r} is not modelled in {KUBERAY_SCHEMA.name}"]
    sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{obj['kind']}"}
    return _messages(jsonschema.Draft202012Validator(sub), obj)


def pod_templates(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, template) of every pod template inside a RayCluster, RayJob or workload object."""
    spec = obj.get("spec") or {}
    out: list[tuple[str, dict[str, Any]]] = []
    if obj["kind"] == "RayJob":
        if "submitterPodTemplate" in spec:
            out.append(("spec.submitterPodTemplate", spec["submitterPodTemplate"]))
        if "rayClusterSpec" in spec:
            out += [(f"spec.rayClusterSpec.{w}", t) for w, t in _cluster_templates(spec["rayClusterSpec"])]
    elif obj["kind"] == "RayCluster":
        out += [(f"spec.{w}", t) for w, t in _cluster_templates(spec)]
    elif "template" in spec:
        out.append(("spec.template", spec["template"]))
    return out


def _cluster_templates(cluster: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [("headGroupSpec.template", (cluster.get("headGroupSpec") or {}).get("template"))]
    for i, group in enumerate(cluster.get("workerGroupSpecs") or []):
        out.append((f"workerGroupSpecs[{i}].template", group.get("template")))
    return [(where, t) for where, t in out if t is not None]
