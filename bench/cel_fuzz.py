"""The apiserver against the webhook on jobs nobody wrote: ``python -m bench.cel_fuzz``.

Starts a control plane of its own (Kubernetes 1.36 with ``manifests/overlays/cel-only``, or with
``--oldest`` 1.30 with ``cel-only-validation``), no webhook, and sends it jobs mutated from the
corpus (the examples and the CEL test vectors of every family whose rules the apiserver enforces).
Each goes through ``envtest/cel_differential.py``: where the catalogue places a rule in the
apiserver, the apiserver must refuse the job at that rule's field; it may refuse nothing the
webhook admits; and a job both admit is stored as ``jobgate default`` prints it.

The jobs (``testkit/fuzzing/cel_cases.py``) keep to what a person could write: values replaced,
keys removed or copied in from another job, list items dropped or repeated, replica types renamed;
one to six mutations per job, a quarter of them UPDATEs of a valid job stored first. Seeded,
bounded in count and time; each disagreement is written to ``--findings`` as the job (and the
stored job) plus what differed.

``--kubeflow``: Kubeflow's policies instead (``manifests/kubeflow-policies`` beside the tests' stand-ins
for Kubeflow's CRDs, envtest/kubeflow_vap.py), jobs mutated from the Kubeflow vectors and examples and
sent as ``jobgate default`` leaves them; the policies' lines are judged too (``policy_problems``).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envtest.cel_differential import Apiserver, Case, defaulted, install, plane_kubectl, run_case
from envtest.harness import ControlPlane
from envtest.kubeflow_vap import corpus as kubeflow_corpus
from envtest.kubeflow_vap import install_policies, policy_problems
from testkit.cel_corpus import wait_for_policies
from testkit.fuzzing.cel_cases import cases

REPO = Path(__file__).resolve().parents[1]

NAMESPACE = "cel-fuzz"
STRICT_DECODING = "strict decoding error: unknown field"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--oldest", action="store_true", help="Kubernetes 1.30 with cel-only-validation")
    parser.add_argument("--kubeflow", action="store_true", help="Kubeflow's policies (manifests/kubeflow-policies)")
    parser.add_argument("--findings", type=Path, default=Path("cel-fuzz-findings"))
    args = parser.parse_args()
    plane = ControlPlane.oldest() if args.oldest else ControlPlane()
    overlay = "cel-only-validation" if args.oldest else "cel-only"
    if args.kubeflow:
        overlay = "kubeflow-policies"
    totals: collections.Counter[str] = collections.Counter()
    by_rule: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    try:
        plane.start()
        kubectl = plane_kubectl(plane)
        apiserver = Apiserver(str(plane.kubeconfig))
        corpus = None
        if args.kubeflow:
            install_policies(kubectl, apiserver, NAMESPACE)
            corpus = [c.obj for c in kubeflow_corpus()]
        else:
            install(kubectl, str(REPO / "manifests/overlays" / overlay))
            kubectl("create", "namespace", NAMESPACE)
            wait_for_policies(apiserver, mutating=not args.oldest, namespace=NAMESPACE)
        for generated in cases(args.seed, args.count, corpus):
            if time.monotonic() - started > args.seconds:
                break
            # No MutatingAdmissionPolicy on 1.30, none for Kubeflow's kinds: sent as jobgate default leaves it.
            case = defaulted(generated) if args.oldest or args.kubeflow else generated
            try:
                outcome = run_case(apiserver, case, NAMESPACE)
            except AssertionError as exc:  # the stored job of an update refused: a finding too
                totals["finding"] += 1
                _save(args.findings, case, [str(exc)])
                continue
            totals["cases"] += 1
            if any(STRICT_DECODING in message for _, message in outcome.apiserver_causes):
                totals["unknown field (the apiserver's strict decoding, not a rule)"] += 1
                continue
            totals["update" if case.old is not None else "create"] += 1
            totals["admitted" if not outcome.webhook_errors else "refused by the webhook"] += 1
            by_rule.update(outcome.enforced_rules)
            disagreements = list(outcome.disagreements)
            if args.kubeflow:
                problems, seen = policy_problems(case, outcome)
                by_rule.update(seen)
                disagreements += [p for p in problems if p not in disagreements]
                totals["refused by a policy"] += bool(seen)
            if disagreements:
                totals["finding"] += 1
                _save(args.findings, case, disagreements)
    finally:
        plane.stop()
    elapsed = time.monotonic() - started
    print(f"cel fuzz ({overlay}, seed {args.seed}): {totals['cases']:,} cases in {elapsed:.0f} s, "
          f"load average {os.getloadavg()}")  # fmt: skip
    for key in sorted(totals):
        print(f"  {key}: {totals[key]:,}")
    print(f"  apiserver rules seen refusing: {len(by_rule)}")
    if totals["finding"]:
        print(f"findings written to {args.findings}/")
    return 1 if totals["finding"] else 0


def _save(findings: Path, case: Case, disagreements: list[str]) -> None:
    findings.mkdir(parents=True, exist_ok=True)
    number = case.name.split(" ", 1)[0].lstrip("#")
    record = {"case": case.name, "disagreements": disagreements, "object": case.obj, "old": case.old}
    (findings / f"{number}.yaml").write_text(yaml.safe_dump(record, sort_keys=False, width=120))
    print(f"FINDING {case.name}\n  " + "\n  ".join(d[:400] for d in disagreements), flush=True)


if __name__ == "__main__":
    sys.exit(main())
