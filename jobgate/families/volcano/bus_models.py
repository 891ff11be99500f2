"""``bus.volcano.sh/v1alpha1`` Command: Volcano's request to act on a job or a queue (volcano-sh/apis
``pkg/apis/bus/v1alpha1``).

``vcctl job suspend|resume`` writes one per request; jobgate's controller takes (deletes) those whose
``target`` is a job it serves and carries out the action once. A Command is not a job: no webhook
reviews it and no family serves it, so it is absent from the registry and gets its CRD from
``generate.manifests.command_custom_resource_definition``. The wire names are Volcano's: the target
is ``target`` (the Go field ``TargetObject``), and ``action`` is a free string, as in Volcano's CRD,
because queue commands (``OpenQueue``, ``CloseQueue``) share the API.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from jobgate.api.common import WireModel

GROUP = "bus.volcano.sh"
VERSION = "v1alpha1"
KIND = "Command"
PLURAL = "commands"


class OwnerReference(WireModel):
    """A reference to the object the command acts on (a metav1.OwnerReference).

    Atomic, as metav1.OwnerReference is: a server-side apply replaces it whole, never field by field.
    """

    # Merged with WireModel's configuration by pydantic.
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    apiVersion: str = Field(description="API version of the referent.")
    kind: str = Field(description="Kind of the referent.")
    name: str = Field(description="Name of the referent.")
    uid: str = Field(description="UID of the referent.")
    controller: bool | None = Field(None, description="If true, this reference points to the managing controller.")
    blockOwnerDeletion: bool | None = Field(
        None, description="If true, the owner cannot be deleted before this reference is removed (foreground)."
    )


class Command(WireModel):
    """The fields of a Command besides its type and object metadata."""

    action: str | None = Field(
        None,
        description="Action to take on the target: AbortJob (suspend) or ResumeJob for a job; "
        "OpenQueue or CloseQueue for a queue.",
    )
    target: OwnerReference | None = Field(None, description="The object this command acts on.")
    reason: str | None = Field(None, description="Unique, one-word, CamelCase reason for this command.")
    message: str | None = Field(None, description="Human-readable message indicating details of this command.")
