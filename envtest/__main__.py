"""``python -m envtest``: build the binaries, or run a control plane to explore by hand.

python -m envtest build          build (or find) the cached binaries
     [--oldest | --version V]    of the oldest supported release (envtest/versions.py) or of
                                 release V instead: etcd, kube-apiserver and kubectl only
python -m envtest up [--dir D]   start etcd + kube-apiserver + kube-controller-manager,
                                 print the kubeconfig, keep running until Ctrl-C
     [--oldest | --version V]    etcd + kube-apiserver of that release instead (no controller-manager)
python -m envtest node-deps      install the node's Debian packages (containerd, runc, CNI plugins)
                                 and the Dockerfile build's (buildah, mmdebstrap)
python -m envtest build-node     build (or find) kubelet, kube-scheduler, kube-proxy, CoreDNS and the images
python -m envtest build-tools    build (or find) helm and the helm-unittest plugin (envtest/tools.py)
python -m envtest build-image    build (or find) jobgate's image jobgate.local/jobgate:<version>, an OCI
     [--rebuild]                 archive (Debian 12 root filesystem + the compiled wheel; envtest/image.py)
python -m envtest build-dockerfile  build (or find) the repository's Dockerfile with buildah, as
     [--rebuild]                 jobgate.local/jobgate-dockerfile:<version> (envtest/dockerfile.py)
python -m envtest up --node      the control plane plus a real node (kubelet, containerd, bridge
                                 CNI, cluster DNS, scheduler); Ctrl-C tears it all down
     [--jobgate]                 and jobgate: CRDs, webhook and controller, ready for jobs
     [--in-cluster]              the node in in-cluster mode: apiserver on the bridge address,
                                 service-account tokens, kube-proxy, workload controllers
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from envtest.build import add_version_arguments, release_problem
from envtest.build import main as build_main
from envtest.versions import KUBERNETES_VERSION


def up(directory: Path | None, version: str = KUBERNETES_VERSION) -> int:
    # Imported here, not above: the harness needs jobgate installed (its certificates), and
    # build-image and build-dockerfile must run from a checkout with nothing but python3.
    from envtest.harness import ControlPlane

    # Only the pinned release runs a controller-manager; another one (--oldest) serves the API only.
    plane = ControlPlane(
        work_dir=directory,
        keep_work_dir=directory is not None,
        version=version,
        controller_manager=version == KUBERNETES_VERSION,
    )
    if plane.controller_manager:
        print("starting etcd, kube-apiserver and kube-controller-manager ...", flush=True)
    else:
        print(f"building (or finding) and starting etcd and kube-apiserver {version} ...", flush=True)
    try:
        plane.start()
    except RuntimeError as exc:  # ControlPlaneError, or a failed build (envtest.build)
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


def up_node(with_jobgate: bool, in_cluster: bool = False, deploy_overlay: str | None = None) -> int:
    from envtest.harness import ControlPlaneError
    from envtest.jobgate_local import JobgateError, start_jobgate
    from envtest.node import JOB_IMAGE, NODE_IP, NODE_NAME, Node, NodeError

    node = Node(in_cluster=in_cluster)
    jobgate: dict = {}
    print("building (or finding) the node, starting control plane, containerd, DNS, scheduler, kubelet ...", flush=True)
    try:
        node.start()
    except (NodeError, ControlPlaneError, RuntimeError) as exc:
        print(f"node failed: {exc}", file=sys.stderr)
        return 1
    assert node.plane is not None and node.work_dir is not None
    if with_jobgate:
        try:
            jobgate = start_jobgate(node.plane, node.work_dir)
        except (JobgateError, OSError) as exc:
            print(f"jobgate failed: {exc}", file=sys.stderr)
            node.stop()
            return 1
        if node.record is not None:  # so that a killed run's leftovers are found by the next start
            node.record.pids.extend(process.pid for process in jobgate.values())
            node.record.save()
        print("jobgate:    CRDs and webhooks installed; jobgate webhook and controller running locally")
    if deploy_overlay is not None:
        from envtest.deploy import DeployError, deploy

        try:
            image = deploy(node, deploy_overlay)
        except (DeployError, RuntimeError, OSError) as exc:
            print(f"deploying jobgate failed: {exc}", file=sys.stderr)
            node.stop()
            return 1
        print(f"jobgate:    deployed in jobgate-system from {image} (manifests/overlays/{deploy_overlay})")
    kubectl = node.plane.kubectl
    print(f"\napiserver:  {node.plane.server}\nkubeconfig: {node.kubeconfig}\nkubectl:    {kubectl}")
    print(f"node:       {NODE_NAME} ({NODE_IP}); cluster DNS {NODE_IP}:53; image {JOB_IMAGE} (imagePullPolicy: Never)")
    if in_cluster:
        from envtest.node import SERVICE_CIDR

        print(f"in-cluster: kube-proxy (iptables); Services {SERVICE_CIDR} reachable from pods and this host")
    print(f"logs:       {node.work_dir}/*.log\n")
    print(f"  export KUBECONFIG={node.kubeconfig}\n  {kubectl} get nodes -o wide\n")
    print("running; Ctrl-C (or SIGTERM) stops everything and restores the host.", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            watched = [*node.processes.items(), *node.plane.processes.items(), *jobgate.items()]
            for name, process in watched:
                if process.poll() is not None:
                    print(f"{name} exited with {process.returncode}", file=sys.stderr)
                    return 1
    finally:
        for process in jobgate.values():
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=20)
        node.stop()
        for problem in node.teardown_problems:
            print(f"teardown: {problem}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envtest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build or find the cached binaries")
    add_version_arguments(build)
    start = commands.add_parser("up", help="run a control plane until interrupted")
    add_version_arguments(start)
    start.add_argument("--dir", type=Path, help="state directory to use and keep (default: a temporary one)")
    start.add_argument("--node", action="store_true", help="add a real node (root; see docs/testing.md)")
    start.add_argument(
        "--jobgate", action="store_true", help="with --node: install jobgate's CRDs and run its webhook and controller"
    )
    start.add_argument(
        "--in-cluster",
        action="store_true",
        help="with --node: apiserver on the node's address, service-account tokens, kube-proxy (pods use the cluster)",
    )
    start.add_argument(
        "--deploy",
        nargs="?",
        const="self-signed",
        metavar="OVERLAY",
        help="with --node --in-cluster: deploy jobgate from its image with manifests/overlays/OVERLAY "
        "(default self-signed), as users apply it",
    )
    commands.add_parser("node-deps", help="apt-get install the node's Debian packages and buildah")
    commands.add_parser("build-node", help="build or find the node's binaries and images")
    commands.add_parser("build-tools", help="build or find helm and the helm-unittest plugin")
    image = commands.add_parser("build-image", help="build or find jobgate's container image (OCI archive)")
    image.add_argument("--rebuild", action="store_true", help="ignore the cache: take Debian's and PyPI's newest")
    dockerfile = commands.add_parser("build-dockerfile", help="build or find the Dockerfile's image (buildah)")
    dockerfile.add_argument("--rebuild", action="store_true", help="ignore the cache: take Debian's and PyPI's newest")
    args = parser.parse_args()
    if args.command == "build":
        return build_main(["--version", args.version])
    if args.command == "node-deps":
        from envtest import dockerfile
        from envtest.node_build import install_packages

        try:
            install_packages()
            # Not the node's, but installed with them: the test of the Dockerfile builds with buildah.
            dockerfile.install_packages()
        except RuntimeError as exc:
            print(f"package installation failed: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "build-image":
        from envtest.image import main as build_image_main

        return build_image_main(["build", *(["--rebuild"] if args.rebuild else [])])
    if args.command == "build-dockerfile":
        from envtest.dockerfile import main as build_dockerfile_main

        return build_dockerfile_main(["--rebuild"] if args.rebuild else [])
    if args.command == "build-tools":
        from envtest.tools import main as build_tools_main

        return build_tools_main()
    if args.command == "build-node":
        from envtest.node_build import main as build_node_main

        return build_node_main()
    if args.version != KUBERNETES_VERSION and (args.node or args.jobgate or args.in_cluster or args.deploy):
        print(f"--oldest/--version run etcd and kube-apiserver only; the node and jobgate need {KUBERNETES_VERSION}",
              file=sys.stderr)  # fmt: skip
        return 2
    problem = release_problem(args.version)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if args.node:
        if args.dir is not None:
            print("--dir is not supported with --node (the node uses its own directory)", file=sys.stderr)
            return 2
        if args.deploy is not None and (args.jobgate or not args.in_cluster):
            print("--deploy needs --in-cluster, and runs jobgate in pods instead of --jobgate's local processes",
                  file=sys.stderr)  # fmt: skip
            return 2
        return up_node(args.jobgate, args.in_cluster, args.deploy)
    if args.in_cluster:
        print("--in-cluster needs --node", file=sys.stderr)
        return 2
    return up(args.dir, args.version)


if __name__ == "__main__":
    sys.exit(main())
