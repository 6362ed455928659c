"""Joining a Ray: which one was joined is said."""

from __future__ import annotations

from types import SimpleNamespace

import ray

from pipelines.executors import ray as ray_executor


def test_joining_a_ray_by_address_says_which_cluster(monkeypatch, capsys):
    """`--address auto` joins whichever Ray runs on the machine (another user's pytest Ray, once), without a word."""
    monkeypatch.setattr(ray, "init", lambda **options: None)
    monkeypatch.setattr(ray, "nodes", lambda: [{"Alive": True}, {"Alive": True}, {"Alive": False}])
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 48.0})
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(gcs_address="10.0.0.5:6379"))
    ray_executor.join_ray({"address": "auto"})
    assert capsys.readouterr().err == "joined the Ray cluster at 10.0.0.5:6379 (2 node(s), 48 CPUs)\n"
    ray_executor.join_ray({"address": "local", "num_cpus": 2})  # its own Ray: nothing to say
    assert capsys.readouterr().err == ""
