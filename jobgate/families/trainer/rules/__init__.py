"""The trainer family's rules (Kubeflow Trainer v2.3.0): importing this package registers TrainJob,
TrainingRuntime and ClusterTrainingRuntime (kinds.py). Beside them: Trainer's webhook and plugin checks
(checks.py), its CRDs' CEL rules (cel_rules.py), the runtimes a TrainJob is judged against and the
family's own view of a runtime's JobSet template (runtimes.py), the pods a TrainJob implies (pods.py),
with the runtimes written beside the jobs read by jobgate/offline/trainer_runtimes.py."""

from jobgate.families.trainer.rules.kinds import KINDS

__all__ = ["KINDS"]
