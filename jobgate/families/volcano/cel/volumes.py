"""The job's volumes (``rules/families/volcano/job.py`` _volume_errors) for the apiserver."""

from __future__ import annotations

from jobgate.families.volcano.cel.common import SPEC
from jobgate.families.volcano.cel.job import SUBDOMAIN_PATTERN, create_only
from jobgate.families.volcano.rules.job import CLAIM_CONFLICT
from jobgate.generate.cel.catalogue import (
    LIST_ITEMS,
    Placement,
    Produces,
    Rule,
    Validation,
    Where,
    cel_raw_string,
    cel_string,
)
from jobgate.rules.names import DNS1123_SUBDOMAIN_MESSAGE, SUBDOMAIN_MAX_LENGTH

VOLUMES = (*SPEC, "volumes")
VOLUME = (*VOLUMES, LIST_ITEMS)


def volume_rules() -> list[Rule]:
    claim_name_set = "has(self.volumeClaimName) && self.volumeClaimName != ''"
    first_duplicate = (
        "self.map(v, has(v.mountPath) ? v.mountPath : '')"
        ".filter(p, p != '' && self.filter(w, has(w.mountPath) && w.mountPath == p).size() > 1)[0]"
    )
    checked_name = f"has(self.volumeClaim) || !({claim_name_set}) || "
    return [
        Rule(
            "volcano/volumes/mount-path",
            "a volume has a mount path",
            Where.SCHEMA,
            (
                Produces("spec.volumes[*].mountPath", "REQUIRED", "^mountPath is required;$"),
                Produces("spec.volumes[*].mountPath", "INVALID", "should be at least 1 chars long$"),
            ),
            (Placement((*VOLUME, "mountPath"), {"minLength": 1}),),
            why="as Volcano's CRD does it (required, minLength 1)",
        ),
        Rule(
            "volcano/volumes/mount-paths-unique",
            "volumes have distinct mount paths",
            Where.CRD_RULE,
            (Produces("spec.volumes[*].mountPath", "DUPLICATE", apiserver_drops=2),),
            (
                Placement(
                    VOLUMES,
                    validation=Validation(
                        rule="self.all(v, !has(v.mountPath) || v.mountPath == '' || "
                        "self.exists_one(w, has(w.mountPath) && w.mountPath == v.mountPath))",
                        message_expression=f"'duplicated mountPath: ' + {first_duplicate} + ';'",
                    ),
                ),
            ),
            why="reported at the list (a rule on a list cannot name the item)",
        ),
        Rule(
            "volcano/volumes/claim-required",
            "a volume has a volumeClaim or a volumeClaimName",
            Where.CRD_RULE,
            (Produces("spec.volumes[*]", "REQUIRED", "^either VolumeClaim or VolumeClaimName must be specified;$"),),
            (
                Placement(
                    VOLUME,
                    validation=Validation(
                        rule=f"has(self.volumeClaim) || ({claim_name_set})",
                        message="either VolumeClaim or VolumeClaimName must be specified;",
                        reason="FieldValueRequired",
                    ),
                ),
            ),
        ),
        Rule(
            "volcano/volumes/claim-conflict",
            "a volume has a volumeClaim or a volumeClaimName, not both",
            Where.CRD_RULE,
            (Produces("spec.volumes[*].volumeClaimName", "INVALID", "^conflict: ", apiserver_drops=2),),
            (
                Placement(
                    SPEC,
                    validation=Validation(
                        rule=create_only(
                            "!has(self.volumes) || !self.volumes.exists(v, has(v.volumeClaim) && "
                            "has(v.volumeClaimName) && v.volumeClaimName != '')"
                        ),
                        message=CLAIM_CONFLICT,
                        field_path=".volumes",
                        optional_old_self=True,
                    ),
                ),
            ),
            why="CREATE only (the controller writes the name of the claim it creates); reported at the volumes "
            "(a rule on a list cannot name the item)",
        ),
        Rule(
            "volcano/volumes/claim-name",
            "a volumeClaimName (without a volumeClaim) is a DNS-1123 subdomain",
            Where.CRD_RULE,
            (Produces("spec.volumes[*].volumeClaimName", "INVALID", "^invalid VolumeClaimName "),),
            tuple(
                Placement(
                    VOLUME,
                    validation=Validation(
                        rule=checked_name + rule,
                        message_expression=f"'invalid VolumeClaimName ' + self.volumeClaimName + "
                        f"{cel_string(' : [' + problem + ']')}",
                        field_path=".volumeClaimName",
                    ),
                )
                for rule, problem in (
                    (
                        f"size(self.volumeClaimName) <= {SUBDOMAIN_MAX_LENGTH}",
                        f"must be no more than {SUBDOMAIN_MAX_LENGTH} characters",
                    ),
                    (f"self.volumeClaimName.matches({cel_raw_string(SUBDOMAIN_PATTERN)})", DNS1123_SUBDOMAIN_MESSAGE),
                )
            ),
            why="not with a volumeClaim, whose claim's name the controller writes on UPDATE",
        ),
    ]
