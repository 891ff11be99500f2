"""Pod-template checks: what the apiserver would refuse later, at pod creation."""

from __future__ import annotations

import pytest

from testkit.builders import container, errors_of, replica, review, tfjob

PREFIX = "spec.tfReplicaSpecs[Worker].template.spec"


def worker(*containers, **pod_spec):
    return tfjob({"Worker": replica(*containers, pod_spec=pod_spec)})


def test_container_name_required():
    assert errors_of(worker(container(), {"image": "x"})) == [f"{PREFIX}.containers[1].name: Required value"]


def test_container_image_required():
    assert errors_of(worker(container(image=None))) == [f"{PREFIX}.containers[0].image: Required value"]


def test_container_name_is_a_dns1123_label():
    (error,) = errors_of(worker(container(), container("Side_Car")))
    assert error.startswith(f'{PREFIX}.containers[1].name: Invalid value: "Side_Car": a lowercase RFC 1123 label')


def test_container_names_are_unique_across_init_containers():
    obj = worker(container(), initContainers=[container("tensorflow")])
    assert errors_of(obj) == [f'{PREFIX}.containers[0].name: Duplicate value: "tensorflow"']


@pytest.mark.parametrize("number", [0, 65536, -1, "80"])
def test_container_port_range(number):
    assert errors_of(worker(container(ports=[{"containerPort": number}]))) == [
        f"{PREFIX}.containers[0].ports[0].containerPort: Invalid value: {number!r}: must be between 1 and 65535, "
        "inclusive".replace("'", '"')
    ]


def test_container_port_required():
    assert errors_of(worker(container(ports=[{"name": "http"}]))) == [
        f"{PREFIX}.containers[0].ports[0].containerPort: Required value"
    ]


def test_port_names_unique_within_a_container():
    ports = [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}]
    assert errors_of(worker(container(ports=ports))) == [
        f'{PREFIX}.containers[0].ports[1].name: Duplicate value: "http"'
    ]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a-very-long-port-name", "must be no more than 15 characters"),
        ("HTTP", "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
        ("8080", "must contain at least one letter (a-z)"),
        ("my--port", "must not contain consecutive hyphens"),
        ("-port", "must not begin or end with a hyphen"),
    ],
)
def test_port_name_rules(name, problem):
    errors = errors_of(worker(container(ports=[{"name": name, "containerPort": 80}])))
    assert f'{PREFIX}.containers[0].ports[0].name: Invalid value: "{name}": {problem}' in errors


def test_port_protocol_enum():
    assert errors_of(worker(container(ports=[{"containerPort": 80, "protocol": "HTTP"}]))) == [
        f'{PREFIX}.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"'
    ]


def test_requests_at_most_limits():
    resources = {"requests": {"cpu": "1500m", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2048Mi"}}
    assert errors_of(worker(container(resources=resources))) == [
        f'{PREFIX}.containers[0].resources.requests[cpu]: Invalid value: "1500m": must be less than or equal to cpu '
        "limit of 1 (container tensorflow)"
    ]


def test_requests_equal_to_limits_are_fine():
    resources = {"requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": 1, "memory": "1073741824"}}
    assert errors_of(worker(container(resources=resources))) == []


def test_invalid_quantity():
    (error,) = errors_of(worker(container(resources={"limits": {"memory": "lots"}})))
    assert error.startswith(f'{PREFIX}.containers[0].resources.limits[memory]: Invalid value: "lots": quantities must')


def test_negative_quantity():
    assert errors_of(worker(container(resources={"requests": {"cpu": "-1"}}))) == [
        f'{PREFIX}.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_extended_resources_are_whole_and_requests_equal_limits():
    resources = {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}}
    assert errors_of(worker(container(resources=resources))) == [
        f"{PREFIX}.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: 1: must be equal to nvidia.com/gpu "
        "limit of 2 (container tensorflow)"
    ]
    assert errors_of(worker(container(resources={"limits": {"nvidia.com/gpu": "500m"}}))) == [
        f'{PREFIX}.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer'
    ]


def test_volume_mounts_name_a_volume():
    mount = {"name": "data", "mountPath": "/data"}
    assert errors_of(worker(container(volumeMounts=[mount]))) == [
        f'{PREFIX}.containers[0].volumeMounts[0].name: Not found: "data": no volume of that name in the pod'
    ]
    assert errors_of(worker(container(volumeMounts=[mount]), volumes=[{"name": "data", "emptyDir": {}}])) == []


def test_volume_mount_needs_a_path():
    obj = worker(container(volumeMounts=[{"name": "data"}]), volumes=[{"name": "data"}])
    assert errors_of(obj) == [f"{PREFIX}.containers[0].volumeMounts[0].mountPath: Required value"]


def test_a_mount_reports_its_name_then_its_path():
    """A mount of no volume (the loop's) and the mount's own fields (its scope's) in the order of the fields."""
    mounts = [{"name": "gone"}, {"name": ""}, {"mountPath": 3}]
    assert errors_of(worker(container(volumeMounts=mounts), volumes=[{"name": "data"}])) == [
        f'{PREFIX}.containers[0].volumeMounts[0].name: Not found: "gone": no volume of that name in the pod',
        f"{PREFIX}.containers[0].volumeMounts[0].mountPath: Required value",
        f"{PREFIX}.containers[0].volumeMounts[1].name: Required value",
        f"{PREFIX}.containers[0].volumeMounts[1].mountPath: Required value",
        f"{PREFIX}.containers[0].volumeMounts[2].name: Required value",
        f"{PREFIX}.containers[0].volumeMounts[2].mountPath: Invalid value: 3: must be of type string",
    ]


def test_volume_names_unique_labels():
    obj = worker(container(), volumes=[{"name": "data"}, {"name": "data"}, {"name": "Bad"}])
    errors = errors_of(obj)
    assert f'{PREFIX}.volumes[1].name: Duplicate value: "data"' in errors
    assert any(e.startswith(f'{PREFIX}.volumes[2].name: Invalid value: "Bad"') for e in errors)


@pytest.mark.parametrize("name", ["A=B", "", "tab\there", "ünicode"])
def test_env_var_names(name):
    errors = errors_of(worker(container(env=[{"name": name, "value": "1"}])))
    if name == "":
        assert errors == [f"{PREFIX}.containers[0].env[0].name: Required value"]
    else:
        assert errors == [
            f"{PREFIX}.containers[0].env[0].name: Invalid value: {name!r}: a valid environment variable name must "
            "consist only of printable ASCII characters other than '='".replace(repr(name), f'"{name}"')
            if "\t" not in name
            else f'{PREFIX}.containers[0].env[0].name: Invalid value: "tab\\there": a valid environment variable name '
            "must consist only of printable ASCII characters other than '='"
        ]


@pytest.mark.parametrize("name", ["MY_VAR", "my.var-1", "1ST", "with space"])
def test_relaxed_env_var_names_are_accepted(name):
    assert errors_of(worker(container(env=[{"name": name, "value": "x"}]))) == []


def test_pod_restart_policy_enum():
    assert errors_of(worker(container(), restartPolicy="Sometimes")) == [
        f'{PREFIX}.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    ]


@pytest.mark.parametrize(
    ("pod_spec", "error"),
    [
        ({"containers": "tensorflow"}, f'{PREFIX}.containers: Invalid value: "tensorflow": must be of type array'),
        ({"containers": [7]}, f"{PREFIX}.containers[0]: Invalid value: 7: must be of type object"),
    ],
)
def test_wrong_types_inside_templates(pod_spec, error):
    obj = tfjob({"Worker": {"template": {"spec": pod_spec}}})
    assert error in errors_of(obj)


def test_wrong_typed_template_spec():
    assert errors_of(tfjob({"Worker": {"template": {"spec": []}}})) == [
        f"{PREFIX}: Invalid value: []: must be of type object"
    ]


def test_warnings_do_not_deny():
    obj = worker(container(resources={"requests": {"cpu": 1}}), restartPolicy="OnFailure")
    verdict = review(obj)
    assert verdict.allowed
    assert len(verdict.warnings) == 1


# --- resources Kubernetes cannot overcommit: a request needs its limit ------------------------------


def test_extended_resource_requested_without_a_limit_is_refused_naming_container_and_resource():
    obj = worker(container(), container("trainer", resources={"requests": {"cpu": 1, "nvidia.com/gpu": 2}}))
    assert errors_of(obj) == [
        f"{PREFIX}.containers[1].resources.limits[nvidia.com/gpu]: Required value: nvidia.com/gpu is requested "
        "without a limit (container trainer): Limit must be set for non overcommitable resources"
    ]


def test_hugepages_and_init_containers_need_a_limit_too():
    init = container("setup", resources={"requests": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}, "limits": {}})
    (error,) = errors_of(worker(container(), initContainers=[init]))
    assert error.startswith(f"{PREFIX}.initContainers[0].resources.limits[hugepages-2Mi]: Required value: ")
    assert "(container setup)" in error


@pytest.mark.parametrize(
    "resource",
    # Native resources (no prefix, or under kubernetes.io/) can be overcommitted, as the apiserver's
    # IsOvercommitAllowed says: the DRA implicit name deviceclass.resource.kubernetes.io/<class> is one.
    ["cpu", "memory", "ephemeral-storage", "deviceclass.resource.kubernetes.io/gpu.nvidia.com"],
)
def test_overcommittable_requests_need_no_limit(resource):
    assert errors_of(worker(container(resources={"requests": {resource: 1}}))) == []


def test_limit_alone_or_equal_request_is_fine():
    assert errors_of(worker(container(resources={"limits": {"nvidia.com/gpu": 2}}))) == []
    both = {"requests": {"example.com/fpga": 1}, "limits": {"example.com/fpga": "1"}}
    assert errors_of(worker(container(resources=both))) == []


def test_a_limit_with_a_wrong_value_is_still_a_limit():
    resources = {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": "lots"}}
    (error,) = errors_of(worker(container(resources=resources)))
    assert error.startswith(f'{PREFIX}.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "lots"')


def test_a_request_with_a_wrong_value_still_needs_its_limit():
    errors = errors_of(worker(container(resources={"requests": {"nvidia.com/gpu": "-1"}})))
    assert any("limits[nvidia.com/gpu]: Required value" in e for e in errors)
    assert any("requests[nvidia.com/gpu]: Invalid value" in e for e in errors)


def test_an_unnamed_container_is_named_by_its_path_only():
    errors = errors_of(worker(container(), {"image": "x", "resources": {"requests": {"example.com/fpga": 1}}}))
    assert errors[0] == f"{PREFIX}.containers[1].name: Required value"
    assert errors[1].endswith(
        "example.com/fpga is requested without a limit: Limit must be set for non overcommitable resources"
    )
