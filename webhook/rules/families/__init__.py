"""One module per API family; importing them registers their kinds."""

from webhook.rules.families import kubedl, mlkube, volcano

__all__ = ["kubedl", "mlkube", "volcano"]
