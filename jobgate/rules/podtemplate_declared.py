"""The pod template's declared rules (docs/rule-forms.md): per-entry scopes, whose paths are
relative to one entry (a template, its pod spec, a container, a port, a mount, a variable, a volume),
checked by ``jobgate/rules/podtemplate.py``'s loops through the generated
``jobgate/_generated/scoped_rules.py`` where the hand-written checks of the entry ran, and placed at
every template of every kind by ``jobgate/generate/cel/podtemplate.py``. Data only: read by the
generators, never when a job is checked.

``{list}`` in an id or summary is the container list of the site: ``containers`` or
``initContainers``, which the generated functions read from the entry's path (the scope's ``words``).
A loop that reports something of its own between two checks of one entry (a container's name used
twice, between its name's and its image's errors) calls two scopes, one before and one after; the
declarations of one id are one rule of the catalogue however many scopes hold them.

The fields are strings and integers that the CRDs keep whole (``x-kubernetes-preserve-unknown-fields``):
no structural schema check reads their types, so the declarations say them (``string``, ``integer``).
"""

from __future__ import annotations

from jobgate.forms.fields import FieldBound, RequiredField, StringField
from jobgate.forms.scopes import Scope
from jobgate.rules.podtemplate import POD_RESTART_POLICIES, PORT_PROTOCOLS

PORT_RANGE = "must be between 1 and 65535, inclusive"

TEMPLATE = Scope(
    "template",
    "pod template",
    (RequiredField("pod-template/spec", "a template has a pod spec", "spec"),),
)
POD_SPEC = Scope(
    "pod_spec",
    "pod spec",
    (
        StringField(
            "pod-template/restart-policy",
            "the pod's restartPolicy is Always, OnFailure or Never",
            "restartPolicy",
            enum=POD_RESTART_POLICIES,
            string=True,
        ),
    ),
)
# The container's name, then (after the loop's check of a name used twice) the rest of it.
CONTAINER_NAME = Scope(
    "container_name",
    "container",
    (
        RequiredField(
            "pod-template/{list}/name", "{list}: a name, a DNS-1123 label", "name", empty_is_unset=True, string=True
        ),
        StringField("pod-template/{list}/name", "{list}: a name, a DNS-1123 label", "name", label=True),
    ),
    words=(("list", -2),),  # ...containers[0]
)
CONTAINER = Scope(
    "container",
    "container",
    (RequiredField("pod-template/{list}/image", "{list}: an image", "image", empty_is_unset=True, string=True),),
    words=(("list", -2),),
)
_PORTS = "pod-template/{list}/ports"
_PORTS_SUMMARY = "{list}: container ports 1-65535, host ports 0-65535, protocols TCP/UDP/SCTP, IANA port names"
PORT = Scope(
    "container_port",
    "container port",
    (
        RequiredField(_PORTS, _PORTS_SUMMARY, "containerPort"),
        FieldBound(_PORTS, _PORTS_SUMMARY, "containerPort", 1, 65535, PORT_RANGE, integer=True, keyword=True),
        # 0 is no host port; the message says Kubernetes' words, which do not mention it.
        FieldBound(_PORTS, _PORTS_SUMMARY, "hostPort", 0, 65535, PORT_RANGE, integer=True, keyword=True),
        StringField(_PORTS, _PORTS_SUMMARY, "protocol", enum=PORT_PROTOCOLS, string=True),
        StringField(_PORTS, _PORTS_SUMMARY, "name", syntax="port-name", string=True),
    ),
    words=(("list", -4),),  # ...containers[0].ports[1]
    each=True,
    unique="name",
    unique_rule="pod-template/{list}/port-names-unique",
)
_MOUNTS = "pod-template/{list}/mounts"
_MOUNTS_SUMMARY = "{list}: volume mounts name a volume and a mount path"
MOUNT = Scope(
    "volume_mount",
    "volume mount",
    (
        RequiredField(_MOUNTS, _MOUNTS_SUMMARY, "name", empty_is_unset=True, string=True),
        RequiredField(_MOUNTS, _MOUNTS_SUMMARY, "mountPath", empty_is_unset=True, string=True),
    ),
    words=(("list", -4),),
    each=True,
    refers=("name", "no volume of that name in the pod"),
    refers_rule="pod-template/{list}/mounted-volumes",
)
_ENV = "pod-template/{list}/env"
_ENV_SUMMARY = "{list}: environment variable names are printable ASCII without '='"
ENV_VAR = Scope(
    "env_var",
    "environment variable",
    (
        RequiredField(_ENV, _ENV_SUMMARY, "name", empty_is_unset=True, string=True),
        StringField(_ENV, _ENV_SUMMARY, "name", syntax="env-var-name"),
    ),
    each=True,
    words=(("list", -4),),
)
_VOLUMES = "pod-template/volumes"
_VOLUMES_SUMMARY = "volumes have names, DNS-1123 labels"
VOLUME = Scope(
    "volume",
    "volume",
    (
        RequiredField(_VOLUMES, _VOLUMES_SUMMARY, "name", empty_is_unset=True, string=True),
        StringField(_VOLUMES, _VOLUMES_SUMMARY, "name", label=True),
    ),
    each=True,
    unique="name",
    unique_rule="pod-template/volume-names-unique",
)

SCOPES = (TEMPLATE, POD_SPEC, CONTAINER_NAME, CONTAINER, PORT, MOUNT, ENV_VAR, VOLUME)
