#!/usr/bin/env python3
"""The job image's test program: replicas find each other from the environment jobgate wrote.

Run inside a replica as ``python3 /usr/local/bin/rendezvous.py <mode> [options]``. Each mode
reads one family's variables (never a hard-coded host), turns them into "who am I, whom do
I call, who must call me", and then every replica:

- listens on its own port (when someone must call it),
- calls each peer it was told about over TCP, sends its identity as one JSON line and
  checks that the peer answers with the identity the environment promised,
- waits until every replica that must call it has done so,
- prints what happened and exits 0; on timeout it prints who is missing and exits 3.

Modes (add one parser per family; ``hosts`` covers any comma-separated host list):

  tf            TF_CONFIG: full mesh over cluster.<type>[i] = host:port, task = {type, index}
  pytorch       MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK: ranks > 0 call rank 0
  xgboost       the same variables as pytorch
  mxnet         DMLC_PS_ROOT_URI/PORT, DMLC_NUM_SERVER/WORKER, DMLC_ROLE: all call the scheduler
  mpi-launcher  the hostfile named by OMPI_MCA_orte_default_hostfile (or I_MPI_HYDRA_HOST_FILE,
                HYDRA_HOST_FILE): the launcher calls every worker on --port
  mpi-worker    listens on --port until the launcher has called
  hosts         --hosts "h0,h1:port,..." and --index i (e.g. from Volcano's VC_<TASK>_HOSTS or a
                substituted variable): full mesh, port --port where a host names none

Failure injection for restart-policy tests (the state directory is a hostPath, so it
outlives the pod): ``--fail-once CODE --state-dir DIR`` exits CODE on the first run of this
replica (keyed by hostname) and runs normally afterwards; ``--exit CODE`` exits CODE after
the rendezvous; ``--sleep S`` sleeps first; ``--linger S`` stays up S seconds after it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

EXIT_TIMEOUT = 3
EXIT_BAD_ENVIRONMENT = 4


@dataclass
class Plan:
    """One replica's part in the rendezvous."""

    identity: str
    listen_port: int | None = None
    # identity -> (host, port) of every replica this one calls
    calls: dict[str, tuple[str, int]] = field(default_factory=dict)
    # given the identities that called so far, is everyone who must call here?
    inbound_done: Callable[[set[str]], bool] = lambda seen: True
    inbound_description: str = "nobody"


class BadEnvironment(Exception):
    pass


def _env(name: str) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        raise BadEnvironment(f"{name} is not set")
    return value


def _int_env(name: str) -> int:
    value = _env(name)
    try:
        return int(value)
    except ValueError:
        raise BadEnvironment(f"{name}={value!r} is not an integer") from None


def _split_host_port(text: str, default_port: int | None) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit():
        return host, int(port)
    if default_port is None:
        raise BadEnvironment(f"{text!r} names no port and no --port was given")
    return text, default_port


def _expect(identities: set[str]) -> Callable[[set[str]], bool]:
    return lambda seen: identities <= seen


def plan_tf(args: argparse.Namespace) -> Plan:
    try:
        config = json.loads(_env("TF_CONFIG"))
        cluster: dict[str, list[str]] = config["cluster"]
        task_type, task_index = config["task"]["type"], int(config["task"]["index"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BadEnvironment(f"TF_CONFIG is not a cluster spec: {exc}") from None
    members = {
        f"{kind}:{i}": _split_host_port(hp, None) for kind, hosts in cluster.items() for i, hp in enumerate(hosts)
    }
    me = f"{task_type}:{task_index}"
    if me not in members:  # an evaluator: not part of the cluster, it only calls
        return Plan(identity=me, calls=members)
    others = {k: v for k, v in members.items() if k != me}
    return Plan(me, members[me][1], others, _expect(set(others)), ", ".join(sorted(others)) or "nobody")


def plan_master(args: argparse.Namespace) -> Plan:
    address, port = _env("MASTER_ADDR"), _int_env("MASTER_PORT")
    world, rank = _int_env("WORLD_SIZE"), _int_env("RANK")
    if not 0 <= rank < world:
        raise BadEnvironment(f"RANK={rank} is outside WORLD_SIZE={world}")
    me = f"rank{rank}"
    if rank == 0:
        expected = {f"rank{r}" for r in range(1, world)}
        return Plan(me, port, {}, _expect(expected), ", ".join(sorted(expected)) or "nobody")
    return Plan(me, calls={"rank0": (address, port)})


def plan_mxnet(args: argparse.Namespace) -> Plan:
    root, port = _env("DMLC_PS_ROOT_URI"), _int_env("DMLC_PS_ROOT_PORT")
    servers, workers = _int_env("DMLC_NUM_SERVER"), _int_env("DMLC_NUM_WORKER")
    role = _env("DMLC_ROLE").lower()
    if role == "scheduler":

        def done(seen: set[str]) -> bool:
            roles = [identity.split("@")[0] for identity in seen]
            return roles.count("server") >= servers and roles.count("worker") >= workers

        return Plan("scheduler", port, {}, done, f"{servers} server(s) and {workers} worker(s)")
    if role not in ("server", "worker"):
        raise BadEnvironment(f"DMLC_ROLE={role!r} is none of scheduler, server, worker")
    return Plan(f"{role}@{socket.gethostname()}", calls={"scheduler": (root, port)})


def _hostfile_hosts(path: str) -> list[str]:
    hosts = []
    with open(path) as handle:
        for raw in handle:
            entry = raw.split("#")[0].strip()
            if entry:
                # OpenMPI "host slots=N", Intel MPI / MPICH "host:N"
                hosts.append(entry.split()[0].split(":")[0])
    return hosts


def plan_mpi_launcher(args: argparse.Namespace) -> Plan:
    for variable in ("OMPI_MCA_orte_default_hostfile", "I_MPI_HYDRA_HOST_FILE", "HYDRA_HOST_FILE"):
        if os.environ.get(variable):
            hosts = _hostfile_hosts(os.environ[variable])
            break
    else:
        raise BadEnvironment("no MPI hostfile variable is set")
    if not hosts:
        raise BadEnvironment("the hostfile lists no host")
    return Plan("launcher", calls={host: (host, args.port) for host in hosts})


def plan_mpi_worker(args: argparse.Namespace) -> Plan:
    return Plan(socket.gethostname(), args.port, {}, _expect({"launcher"}), "launcher")


def plan_hosts(args: argparse.Namespace) -> Plan:
    if not args.hosts:
        raise BadEnvironment("--hosts is empty")
    entries = [h.strip() for h in args.hosts.split(",") if h.strip()]
    members = {f"member{i}": _split_host_port(entry, args.port) for i, entry in enumerate(entries)}
    me = f"member{args.index}"
    if me not in members:
        raise BadEnvironment(f"--index {args.index} is outside the {len(members)} hosts")
    others = {k: v for k, v in members.items() if k != me}
    return Plan(me, members[me][1], others, _expect(set(others)), ", ".join(sorted(others)) or "nobody")


PLANNERS: dict[str, Callable[[argparse.Namespace], Plan]] = {
    "tf": plan_tf,
    "pytorch": plan_master,
    "xgboost": plan_master,
    "mxnet": plan_mxnet,
    "mpi-launcher": plan_mpi_launcher,
    "mpi-worker": plan_mpi_worker,
    "hosts": plan_hosts,
}


class Listener:
    """Answers every caller with our identity and records theirs."""

    def __init__(self, identity: str, port: int) -> None:
        self.identity = identity
        self.seen: set[str] = set()
        self.changed = threading.Condition()
        self.sock = socket.create_server(("", port), reuse_port=False)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            connection, address = self.sock.accept()
            threading.Thread(target=self._answer, args=(connection, address), daemon=True).start()

    def _answer(self, connection: socket.socket, address: tuple[str, int]) -> None:
        with connection:
            connection.settimeout(10)
            try:
                line = connection.makefile("r").readline()
                caller = json.loads(line)["from"]
                connection.sendall((json.dumps({"from": self.identity}) + "\n").encode())
            except (OSError, ValueError, KeyError):
                return
        print(f"called by {caller} from {address[0]}", flush=True)
        with self.changed:
            self.seen.add(caller)
            self.changed.notify_all()

    def wait(self, done: Callable[[set[str]], bool], deadline: float) -> bool:
        with self.changed:
            while not done(self.seen):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.changed.wait(min(remaining, 1.0))
            return True


def call(identity: str, peer: str, host: str, port: int, deadline: float) -> str | None:
    """Call a peer until it answers (its name may not resolve yet, its port may not be open)."""
    last = "not tried"
    while time.monotonic() < deadline:
        try:
            address = socket.gethostbyname(host)
            with socket.create_connection((address, port), timeout=5) as connection:
                connection.sendall((json.dumps({"from": identity}) + "\n").encode())
                answer = json.loads(connection.makefile("r").readline())["from"]
            if answer != peer:
                return f"{host}:{port} answered as {answer!r}, the environment says it is {peer!r}"
            print(f"reached {peer} at {host}:{port} ({address})", flush=True)
            return None
        except (OSError, ValueError, KeyError) as exc:
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
    return f"could not reach {peer} at {host}:{port}: {last}"


def fail_once(code: int, state_dir: str) -> None:
    marker = os.path.join(state_dir, f"failed-once-{socket.gethostname()}")
    if not os.path.exists(marker):
        with open(marker, "w") as handle:
            handle.write(str(os.getpid()))
        print(f"first run of {socket.gethostname()}: exiting with {code} as asked", flush=True)
        sys.exit(code)
    print(f"{socket.gethostname()} runs again after its injected failure", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=sorted(PLANNERS))
    parser.add_argument("--port", type=int, default=None, help="port for modes whose hosts carry none")
    parser.add_argument("--hosts", default="", help="hosts mode: comma-separated host[:port] list")
    parser.add_argument("--index", type=int, default=0, help="hosts mode: this replica's position")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--fail-once", type=int, default=None, metavar="CODE")
    parser.add_argument("--state-dir", default="/state")
    parser.add_argument("--exit", type=int, default=0, metavar="CODE", help="exit code after the rendezvous")
    parser.add_argument("--linger", type=float, default=0.0, help="stay up this long after (a server that serves on)")
    args = parser.parse_args(argv)
    if args.sleep:
        time.sleep(args.sleep)
    if args.fail_once is not None:
        fail_once(args.fail_once, args.state_dir)
    try:
        plan = PLANNERS[args.mode](args)
    except (BadEnvironment, OSError) as exc:
        print(f"rendezvous: bad environment: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_ENVIRONMENT
    print(f"{plan.identity}: calls {sorted(plan.calls) or 'nobody'}, waits for {plan.inbound_description}", flush=True)
    deadline = time.monotonic() + args.timeout
    listener = Listener(plan.identity, plan.listen_port) if plan.listen_port is not None else None
    errors = [e for peer, (h, p) in sorted(plan.calls.items()) if (e := call(plan.identity, peer, h, p, deadline))]
    if listener is not None and not listener.wait(plan.inbound_done, deadline):
        errors.append(f"waited for {plan.inbound_description}; only {sorted(listener.seen)} called")
    if errors:
        for error in errors:
            print(f"rendezvous failed: {error}", file=sys.stderr, flush=True)
        return EXIT_TIMEOUT
    print(f"rendezvous complete: {plan.identity} with {len(plan.calls)} call(s) out", flush=True)
    if args.linger:
        time.sleep(args.linger)
    return args.exit


def run() -> None:
    """Exit with main()'s code without interpreter finalization: listener threads may still be
    answering, and a finalizing interpreter under daemon threads once turned an intended exit
    code 137 into a SIGSEGV (139) on the node, which a restart-policy test must never see."""
    try:
        code = main()
    except SystemExit as exit_request:
        code = exit_request.code if isinstance(exit_request.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
