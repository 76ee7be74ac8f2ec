"""deploy/kubernetes/, checked offline: every document parses into the `kubernetes`
client's model of its kind, refusing a field the model lacks and a value of the wrong
type; the probes, the migration Job and the budget say what docs/deploy.md says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes.client as k8s
import pytest
import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
PRIMITIVES: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float), "object": (object,)}


def _model(api_version: str, kind: str) -> type:
    version = api_version.rpartition("/")[2]  # apps/v1 -> V1Deployment
    model: type = getattr(k8s, f"{version.capitalize()}{kind}")
    return model


def check(value: Any, type_name: str, where: str) -> None:
    """Refuse unknown fields and wrong types the way the API server's schema would."""
    listed = re.fullmatch(r"(?:list|List)\[(.+)\]", type_name)
    mapped = re.fullmatch(r"(?:dict\(str, (.+)\)|[Dd]ict\[str, (.+)\])", type_name)  # the client writes all three
    if listed:
        assert isinstance(value, list), f"{where}: a list expected, got {value!r}"
        for index, item in enumerate(value):
            check(item, listed.group(1), f"{where}[{index}]")
    elif mapped:
        assert isinstance(value, dict), f"{where}: a mapping expected"
        for key, item in value.items():
            check(item, mapped.group(1) or mapped.group(2), f"{where}.{key}")
    elif type_name in PRIMITIVES:
        assert isinstance(value, PRIMITIVES[type_name]) and not (type_name == "int" and isinstance(value, bool)), f"{where}: {type_name} expected, got {value!r}"
    else:
        model = getattr(k8s, type_name)
        assert isinstance(value, dict), f"{where}: an object ({type_name}) expected, got {value!r}"
        fields = {wire: name for name, wire in model.attribute_map.items()}
        for key, item in value.items():
            assert key in fields, f"{where}: {type_name} has no field {key!r}"
            check(item, model.openapi_types[fields[key]], f"{where}.{key}")


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            found.append((path.name, document))
    return found


@pytest.mark.parametrize(("name", "document"), documents(), ids=lambda value: value if isinstance(value, str) else value["kind"])
def test_every_manifest_fits_its_model(name: str, document: dict[str, Any]) -> None:
    model = _model(document["apiVersion"], document["kind"])
    check(document, model.__name__, name)
    k8s.ApiClient()._ApiClient__deserialize(document, model.__name__)  # type: ignore[attr-defined]  # the client's own parse too


def test_the_checker_refuses_unknown_fields_and_wrong_types() -> None:
    with pytest.raises(AssertionError, match="no field 'replica'"):
        check({"spec": {"replica": 2, "selector": {}, "template": {}}}, "V1Deployment", "x")
    with pytest.raises(AssertionError, match="int expected"):
        check({"spec": {"replicas": "2"}}, "V1Deployment", "x")


def test_the_set_is_whole_and_consistent() -> None:
    kinds = {document["kind"]: document for _, document in documents()}
    assert set(kinds) == {"ConfigMap", "Secret", "Deployment", "Service", "Job", "PodDisruptionBudget"}
    pod = kinds["Deployment"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["requests"]["memory"] == "128Mi"
    assert kinds["Job"]["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    labels = pod["metadata"]["labels"]
    for selector in (kinds["Service"]["spec"]["selector"], kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= labels.items()
    assert kinds["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert int(kinds["ConfigMap"]["data"]["RELAYGATE_PORT"]) == container["ports"][0]["containerPort"]
