"""``explain``: the effective policy as text, each value with the policy that gave it."""

from __future__ import annotations

from jobgate.policy.gpu import DEFAULT_GPU_DEVICE_CLASSES, DEFAULT_GPU_RESOURCES
from jobgate.policy.resolve import ALLOW_FIELDS, EffectivePolicy, Sourced


def _tiers(entries: list[Sourced]) -> str:
    parts = []
    for e in entries:
        value = "" if e.value is True else f"{e.value} "
        parts.append(f"{value}from {e.source} [{e.action}, existingViolations {e.existing_violations}]")
    return "; ".join(parts)


def explain_text(effective: EffectivePolicy) -> str:
    """The effective policy: which policies apply, every value with its source, and the conflicts."""
    lines = [f"Namespace: {effective.namespace or '(cluster)'}"]
    lines.append("Policies:" if effective.policies else "Policies: none apply")
    lines.extend(f"  {ref}" for ref in effective.policies)
    lines.append("Defaults (CREATE only, where the job leaves the field unset):")
    n = len(lines)
    for name, chosen in sorted(effective.defaults.items()):
        lines.append(f"  {name}: {chosen.value!r} from {chosen.source}")
    for key, chosen in sorted(effective.default_labels.items()):
        lines.append(f"  labels[{key}]: {chosen.value!r} from {chosen.source}")
    if len(lines) == n:
        lines.append("  none")
    lines.append("Limits (the most restrictive per action):")
    n = len(lines)
    for name, entries in sorted(effective.limits.items()):
        lines.append(f"  {name}: {_tiers(entries)}")
    if effective.limits.get("maxGPUsPerPod") or effective.limits.get("maxGPUsPerJob"):
        for field, counted_list, given_by, builtin in (
            ("gpuResources", effective.gpu_resources, effective.gpu_resources_sources, DEFAULT_GPU_RESOURCES),
            (
                "gpuDeviceClasses",
                effective.gpu_device_classes,
                effective.gpu_device_classes_sources,
                DEFAULT_GPU_DEVICE_CLASSES,
            ),
        ):
            if given_by:
                sources = ", ".join(str(s) for s in given_by)
                counted = ", ".join(f"{name}×{weight:g}" for name, weight in counted_list if weight)
                excluded = [name for name, weight in counted_list if not weight]
                off = f"; excluded: {', '.join(excluded)}" if excluded else ""
                lines.append(f"  {field}: {counted}{off} (built-in list with {sources})")
            else:
                counted = ", ".join(name for name, _ in builtin)
                lines.append(f"  {field}: {counted} (built-in list)")
    if len(lines) == n:
        lines.append("  none")
    lines.append("Requirements (each policy's own; a job must satisfy all):")
    n = len(lines)
    for name, entries in sorted(effective.required_fields.items()):
        if name == "fitsQueue":
            lines.append(f"  the job must fit its queue (fitsQueue): {_tiers(entries)}")
            continue
        lines.append(f"  {name} must be set: {_tiers(entries)}")
    for name in ALLOW_FIELDS:
        for e in effective.allow.get(name, []):
            lines.append(f"  {name}: {', '.join(e.value)} from {e.source} [{e.action}]")
    for key, entries in sorted(effective.required_labels.items()):
        for e in entries:
            values = f" in ({', '.join(e.value)})" if e.value is not None else ""
            lines.append(f"  label {key}{values} from {e.source} [{e.action}]")
    for item, entries in sorted(effective.forbid.items()):
        lines.append(f"  forbid {item}: {_tiers(entries)}")
    if len(lines) == n:
        lines.append("  none")
    lines.append("Conflicts:" if effective.conflicts else "Conflicts: none")
    for c in effective.conflicts:
        lines.append(f"  {c.field}: {', '.join(str(p) for p in c.policies)}: {c.message}")
    return "\n".join(lines) + "\n"
