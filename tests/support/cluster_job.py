"""Run one recipe twice on a `ray.cluster_utils.Cluster` (a head and two worker nodes on this
machine): undisturbed, then with a worker node removed in the middle of the run. Prints one JSON
object comparing the two outputs. Run as a subprocess by tests/test_cluster.py, because a process
can join only one Ray and the test session already has its own.

    python -m tests.support.cluster_job RECIPE OUT
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import ray
from ray.cluster_utils import Cluster

from curation.recipe import load_recipe
from curation.stages.build import build_stages
from pipelines.run import run
from tests.support.stages import NodeRecorder


def documents(job: Path) -> tuple[list[str], set[str]]:
    ids, nodes = [], set()
    for f in sorted((job / "documents").glob("*.parquet")):
        table = pq.read_table(f, columns=["id", "node"])
        ids += table.column("id").to_pylist()
        nodes |= set(table.column("node").to_pylist())
    return ids, nodes


def shard_digests(job: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((job / "shards").glob("*.arrow"))}


def main(recipe_path: str, out: str) -> dict:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    victim = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    recipe = load_recipe(recipe_path)
    stages = [*build_stages(recipe), ("where", NodeRecorder())]
    report: dict = {"nodes": len(ray.nodes())}
    try:
        started = time.time()
        calm = Path(run(recipe, output=f"{out}/calm", quiet=True, stages=stages).job_dir)
        report["calm_seconds"] = time.time() - started

        job = Path(recipe.job_dir(f"{out}/disturbed"))
        removed: dict = {}

        def shards_done() -> int:
            folder = job / "_shards"
            return len(list(folder.glob("*.json"))) if folder.is_dir() else 0

        def remove_when_a_shard_is_done() -> None:
            deadline = time.time() + 300
            while not shards_done() and time.time() < deadline:
                time.sleep(0.05)
            removed["shards_done"] = shards_done()
            removed["at"] = time.time()
            cluster.remove_node(victim)

        watcher = threading.Thread(target=remove_when_a_shard_is_done, daemon=True)
        watcher.start()
        started = time.time()
        result = run(recipe, output=f"{out}/disturbed", quiet=True, stages=stages)
        ended = time.time()
        watcher.join(timeout=5)
        report.update(
            disturbed_seconds=ended - started,
            removed_after_shards=removed.get("shards_done"),
            seconds_after_removal=ended - removed["at"] if removed else None,
            shards_total=result.stats["shards"]["total"],
            alive_nodes_after=sum(1 for n in ray.nodes() if n["Alive"]),
        )
        calm_ids, calm_nodes = documents(calm)
        ids, nodes = documents(job)
        report.update(
            documents_calm=len(calm_ids), documents_disturbed=len(ids),
            lost=len(set(calm_ids) - set(ids)), doubled=len(ids) - len(set(ids)),
            extra=len(set(ids) - set(calm_ids)),
            nodes_used_calm=len(calm_nodes), nodes_used_disturbed=len(nodes),
            same_shards=shard_digests(calm) == shard_digests(job), packed_shards=len(shard_digests(job)),
            same_stats=result.stats["documents"] == json.loads((calm / "stats.json").read_text())["documents"],
        )
    finally:
        ray.shutdown()
        cluster.shutdown()
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
