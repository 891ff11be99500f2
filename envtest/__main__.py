"""``python -m envtest``: build the binaries, or run a control plane to explore by hand.

python -m envtest build          build (or find) the cached binaries
python -m envtest up [--dir D]   start etcd + kube-apiserver + kube-controller-manager,
                                 print the kubeconfig, keep running until Ctrl-C
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from envtest.build import main as build_main
from envtest.harness import ControlPlane, ControlPlaneError


def up(directory: Path | None) -> int:
    plane = ControlPlane(work_dir=directory, keep_work_dir=directory is not None)
    print("starting etcd, kube-apiserver and kube-controller-manager ...", flush=True)
    try:
        plane.start()
    except ControlPlaneError as exc:
        print(f"control plane failed: {exc}", file=sys.stderr)
        return 1
    kubectl = plane.kubectl
    print(f"\napiserver:  {plane.server}\nkubeconfig: {plane.kubeconfig}\nkubectl:    {kubectl}\n")
    print(f"  export KUBECONFIG={plane.kubeconfig}\n  {kubectl} get --raw /readyz\n")
    print("running; Ctrl-C (or SIGTERM) stops everything and removes the state directory.", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            for name, process in plane.processes.items():
                if process.poll() is not None:
                    print(f"{name} exited with {process.returncode}:\n{plane.log_tail(name)}", file=sys.stderr)
                    return 1
    finally:
        plane.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envtest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build or find the cached binaries")
    start = commands.add_parser("up", help="run a control plane until interrupted")
    start.add_argument("--dir", type=Path, help="state directory to use and keep (default: a temporary one)")
    args = parser.parse_args()
    if args.command == "build":
        return build_main()
    return up(args.dir)


if __name__ == "__main__":
    sys.exit(main())
