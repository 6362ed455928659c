"""`/metrics`: every job's progress and per-stage counters in the Prometheus text format.

Collected at scrape time from the same cached answers as the JSON endpoints, into a registry of
our own (not prometheus_client's global one, which Ray's libraries may also fill). Every count is a gauge: it
is what the job folder holds now, and a run killed with shards in flight leaves their live counts behind when
it is resumed (a Prometheus counter that goes down reads as a reset, and `rate()` over-counts).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pipelines.service.jobs import Jobs

STATES = ("pending", "running", "done", "failed", "interrupted")
STAGE_COUNTS = {
    "docs_in": "Documents a stage received.",
    "docs_out": "Documents a stage kept.",
    "bytes_in": "Text bytes a stage received.",
    "bytes_out": "Text bytes a stage kept.",
    "seconds": "Seconds spent in a stage (summed over workers).",
}
TRAIN_GAUGES = ("loss", "loss_smoothed", "val_loss", "lr", "grad_norm", "tokens_per_s")


class JobsCollector(Collector):
    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs

    def collect(self) -> Iterator[Metric]:
        state = GaugeMetricFamily("curation_job_state", "1 for the job's current state.", labels=["job", "state"])
        percent = GaugeMetricFamily("curation_job_progress_percent", "Shards and corpus steps done, in %.",
                                    labels=["job"])
        shards = GaugeMetricFamily("curation_job_shards", "Input shards, total and done.", labels=["job", "kind"])
        records = GaugeMetricFamily("curation_job_records_read", "Input records read.", labels=["job"])
        documents = GaugeMetricFamily("curation_job_documents_kept", "Documents kept so far.", labels=["job"])
        rate = GaugeMetricFamily("curation_job_records_per_second", "Records read per second, last 10 s.",
                                 labels=["job"])
        eta = GaugeMetricFamily("curation_job_eta_seconds", "Estimated seconds left in the document stages.",
                                labels=["job"])
        stage = {k: GaugeMetricFamily(f"curation_stage_{k}", h, labels=["job", "stage"])
                 for k, h in STAGE_COUNTS.items()}
        dropped = GaugeMetricFamily("curation_stage_dropped", "Documents a stage dropped, per reason.",
                                      labels=["job", "stage", "reason"])
        # docs_in = docs_out + dropped + skipped: records that are no documents (a WARC request, a binary file)
        skipped = GaugeMetricFamily("curation_stage_skipped", "Records a stage set aside as no documents, per "
                                    "reason.", labels=["job", "stage", "reason"])
        bypassed = GaugeMetricFamily("curation_stage_bypassed", "Documents that went by a stage unjudged (`only:`, a "
                                     "language it does not judge), per reason; not in docs_in.",
                                     labels=["job", "stage", "reason"])
        step = GaugeMetricFamily("curation_train_step", "Last training step logged.", labels=["job"])
        train = {k: GaugeMetricFamily(f"curation_train_{k}", f"Training {k} at the last step.", labels=["job"])
                 for k in TRAIN_GAUGES}
        for job_id in self.jobs.ids():
            folder = self.jobs.get(job_id)
            if folder is None:
                continue
            status = self.jobs.cached(("status-dict", job_id), folder.status)
            for s in STATES:
                state.add_metric([job_id, s], 1.0 if status["state"] == s else 0.0)
            percent.add_metric([job_id], status["percent"])
            shards.add_metric([job_id, "total"], status["shards"]["total"])
            shards.add_metric([job_id, "done"], status["shards"]["done"])
            records.add_metric([job_id], status["records"])
            documents.add_metric([job_id], status["documents"])
            if status["rate"]["records_per_s"] is not None:
                rate.add_metric([job_id], status["rate"]["records_per_s"])
            if status["eta_seconds"] is not None:
                eta.add_metric([job_id], status["eta_seconds"])
            for row in self.jobs.cached(("funnel-rows", job_id), folder.funnel):
                for key, family in stage.items():
                    family.add_metric([job_id, row["stage"]], row.get(key) or 0)
                for family, key in ((dropped, "dropped"), (skipped, "skipped"), (bypassed, "bypassed")):
                    for reason, n in (row.get(key) or {}).items():
                        family.add_metric([job_id, row["stage"], reason], n)
            if status["has"]["train"]:
                rows = self.jobs.cached(("train-rows", job_id), folder.train_metrics)
                if rows:
                    step.add_metric([job_id], rows[-1]["step"])
                    for key, family in train.items():
                        value = rows[-1].get(key)
                        if isinstance(value, int | float):
                            family.add_metric([job_id], value)
        yield from (state, percent, shards, records, documents, rate, eta, *stage.values(), dropped, skipped, bypassed,
                    step,
                    *train.values())


def registry(jobs: Jobs) -> CollectorRegistry:
    out = CollectorRegistry(auto_describe=False)
    out.register(JobsCollector(jobs))
    return out


def exposition(jobs: Jobs, reg: CollectorRegistry) -> bytes:
    return jobs.cached(("metrics",), lambda: generate_latest(reg))
