"""The job image's test program (envtest/jobimage/rendezvous.py): plans per family, and real
rendezvous between processes on loopback, as the replicas do across the node's bridge."""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from envtest.jobimage import rendezvous

PROGRAM = Path(rendezvous.__file__)


def args(**options: object) -> argparse.Namespace:
    """The command-line options a planner reads, with the parser's defaults."""
    return argparse.Namespace(**{"port": None, "hosts": "", "index": 0, **options})


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for sock in sockets:
        sock.close()
    return ports


def test_tf_plan_calls_every_other_member_and_waits_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"cluster": {"ps": ["p0:2222"], "worker": ["w0:2222", "w1:2223"]}, "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    plan = rendezvous.plan_tf(args())
    assert plan.identity == "worker:1" and plan.listen_port == 2223
    assert plan.calls == {"ps:0": ("p0", 2222), "worker:0": ("w0", 2222)}
    assert not plan.inbound_done({"ps:0"}) and plan.inbound_done({"ps:0", "worker:0"})


def test_tf_evaluator_outside_the_cluster_only_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"cluster": {"worker": ["w0:2222"]}, "task": {"type": "evaluator", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    plan = rendezvous.plan_tf(args())
    assert plan.listen_port is None and plan.calls == {"worker:0": ("w0", 2222)}


def test_master_plan_rank_zero_waits_for_all_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"MASTER_ADDR": "localhost", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "0"}.items():
        monkeypatch.setenv(name, value)
    plan = rendezvous.plan_master(args())
    assert plan.listen_port == 23456 and plan.calls == {}
    assert not plan.inbound_done({"rank1"}) and plan.inbound_done({"rank1", "rank2"})
    monkeypatch.setenv("RANK", "2")
    assert rendezvous.plan_master(args()).calls == {"rank0": ("localhost", 23456)}


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"MASTER_ADDR": "m", "WORLD_SIZE": "2", "RANK": "1"}, "MASTER_PORT is not set"),
        ({"MASTER_ADDR": "m", "MASTER_PORT": "1", "WORLD_SIZE": "2", "RANK": "2"}, "outside WORLD_SIZE"),
        ({"MASTER_ADDR": "m", "MASTER_PORT": "x", "WORLD_SIZE": "2", "RANK": "1"}, "not an integer"),
    ],
)
def test_master_plan_rejects_a_wrong_environment(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], message: str
) -> None:
    for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(rendezvous.BadEnvironment, match=message):
        rendezvous.plan_master(args())


def test_mxnet_scheduler_counts_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {"DMLC_PS_ROOT_URI": "s", "DMLC_PS_ROOT_PORT": "9091", "DMLC_NUM_SERVER": "1", "DMLC_NUM_WORKER": "2"}
    for name, value in {**variables, "DMLC_ROLE": "scheduler"}.items():
        monkeypatch.setenv(name, value)
    plan = rendezvous.plan_mxnet(args())
    assert not plan.inbound_done({"server@a", "worker@b"})
    assert plan.inbound_done({"server@a", "worker@b", "worker@c"})
    monkeypatch.setenv("DMLC_ROLE", "worker")
    assert rendezvous.plan_mxnet(args()).calls == {"scheduler": ("s", 9091)}


def test_mpi_launcher_reads_both_hostfile_styles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("job-worker-0 slots=1\n# comment\njob-worker-1:2\n")
    monkeypatch.setenv("OMPI_MCA_orte_default_hostfile", str(hostfile))
    plan = rendezvous.plan_mpi_launcher(args(port=2222))
    assert plan.calls == {"job-worker-0": ("job-worker-0", 2222), "job-worker-1": ("job-worker-1", 2222)}


def test_hosts_plan_uses_the_default_port_where_none_is_named() -> None:
    plan = rendezvous.plan_hosts(args(hosts="a,b:7000,c", index=1, port=2222))
    assert plan.identity == "member1" and plan.listen_port == 7000
    assert plan.calls == {"member0": ("a", 2222), "member2": ("c", 2222)}


def run_replicas(
    environments: list[dict[str, str]], *extra: str, mode: str = "tf"
) -> list[subprocess.CompletedProcess]:
    processes = [
        subprocess.Popen(
            [sys.executable, str(PROGRAM), mode, "--timeout", "20", *extra],
            env={"PATH": "/usr/bin:/bin", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for env in environments
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def test_tf_mesh_between_real_processes() -> None:
    ports = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
    tasks = [("ps", 0), ("worker", 0), ("worker", 1)]
    environments = [{"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": t, "index": i}})} for t, i in tasks]
    results = run_replicas(environments)
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "rendezvous complete" in result.stdout and result.stdout.count("reached ") == 2


def test_a_missing_peer_times_out_with_a_clear_message() -> None:
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    env = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})}
    [result] = run_replicas([env], "--timeout", "2")
    assert result.returncode == rendezvous.EXIT_TIMEOUT
    assert "could not reach worker:1" in result.stderr


def test_fail_once_exits_with_the_code_then_runs(tmp_path: Path) -> None:
    ports = free_ports(1)
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(ports[0]), "WORLD_SIZE": "1", "RANK": "0"}
    first = run_replicas([env], "--fail-once", "137", "--state-dir", str(tmp_path), mode="pytorch")[0]
    second = run_replicas([env], "--fail-once", "137", "--state-dir", str(tmp_path), mode="pytorch")[0]
    assert first.returncode == 137
    assert second.returncode == 0 and "runs again" in second.stdout


def test_bad_environment_exits_with_its_own_code() -> None:
    [result] = run_replicas([{}], mode="pytorch")
    assert result.returncode == rendezvous.EXIT_BAD_ENVIRONMENT
    assert "MASTER_ADDR is not set" in result.stderr
