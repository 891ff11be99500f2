"""Kubernetes timestamps: what the status (seconds) and the Lease (microseconds) carry."""

from __future__ import annotations

import datetime


def timestamp(moment: datetime.datetime) -> str:
    """metav1.Time: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_timestamp(moment: datetime.datetime) -> str:
    """metav1.MicroTime, as Lease renewTime and acquireTime want it."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> datetime.datetime | None:
    """Either format back to an aware datetime; None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
