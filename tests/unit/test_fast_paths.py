"""The validate path's shortcuts for common valid values answer exactly as the long way does."""

from __future__ import annotations

from typing import Any

from jobgate.webhook.rules import names
from jobgate.webhook.rules.names import is_dns1123_label, is_env_var_name, is_port_name
from jobgate.webhook.rules.podtemplate import check_pod_template


def test_remembered_names_are_bounded_and_never_change_an_answer() -> None:
    for index in range(names._KNOWN_NAMES_MAX + 100):
        assert is_dns1123_label(f"volume-{index}")
        assert is_port_name(f"p{index % 10000}")
        assert is_env_var_name(f"VAR_{index}")
    assert len(names._known_labels) <= names._KNOWN_NAMES_MAX
    assert len(names._known_port_names) <= names._KNOWN_NAMES_MAX
    assert len(names._known_env_var_names) <= names._KNOWN_NAMES_MAX
    # Asked twice: a remembered valid name stays valid, an invalid one is never remembered.
    for _ in range(2):
        assert is_dns1123_label("volume-1") and not is_dns1123_label("Volume-1")
        assert not is_dns1123_label("a" * 64)
        assert is_port_name("p1") and not is_port_name("p--1")
        assert is_env_var_name("VAR_1") and not is_env_var_name("A=B")
    assert "Volume-1" not in names._known_labels
    long_name = "V" * (names._KNOWN_ENV_VAR_NAME_MAX_LENGTH + 1)
    names._known_env_var_names.clear()
    assert is_env_var_name(long_name)
    assert long_name not in names._known_env_var_names


def _template(volumes: list[Any], mounts: list[Any], env: list[Any]) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "volumeMounts": mounts, "env": env}
    return {"spec": {"containers": [container], "volumes": volumes}}


def test_the_second_of_two_equal_valid_names_is_still_a_duplicate() -> None:
    volumes = [{"name": "data"}, {"name": "data"}, {"name": "Data"}, "x"]
    mounts = [{"name": "data", "mountPath": "/d"}, {"name": "gone", "mountPath": "/g"}, {"name": "data"}]
    env = [{"name": "OK"}, {"name": "A=B"}, {"name": ""}, 3]
    for _ in range(2):  # the second time every valid name is a remembered one
        found = check_pod_template(_template(volumes, mounts, env), ("t",), where="w", replica_restart_policy=None)
        assert [str(e) for e in found.errors] == [
            't.spec.volumes[1].name: Duplicate value: "data"',
            't.spec.volumes[2].name: Invalid value: "Data": ' + names.DNS1123_LABEL_MESSAGE,
            't.spec.volumes[3]: Invalid value: "x": must be of type object',
            't.spec.containers[0].volumeMounts[1].name: Not found: "gone": no volume of that name in the pod',
            "t.spec.containers[0].volumeMounts[2].mountPath: Required value",
            't.spec.containers[0].env[1].name: Invalid value: "A=B": ' + names.ENV_VAR_NAME_MESSAGE,
            "t.spec.containers[0].env[2].name: Required value",
            "t.spec.containers[0].env[3]: Invalid value: 3: must be of type object",
        ]
