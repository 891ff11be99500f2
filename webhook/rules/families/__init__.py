"""One module per API family; importing them registers their kinds."""

from jobgate.webhook.rules.families import diengine, kubedl, mlkube, t9k, volcano

__all__ = ["diengine", "kubedl", "mlkube", "t9k", "volcano"]
