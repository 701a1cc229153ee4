"""Published serving measurements as questions chalk answers at any efficiencies.

Each measurement (a record of ``knowledge/data/serving_measurements.yaml``, read by
:func:`chalk.knowledge.data.serving_measurements`) becomes one compiled question: the
row's chip at the precision it ran, its model and precision presets, its conditions
pinned (see :func:`measurement_question`) and the efficiencies pinned so that they
can be moved. :meth:`Row.log_rates` is chalk's own answer for the row at the
efficiencies asked, in the row's metric (total, per chip or per user), never a formula
written beside the relations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from chalk.symbolic.errors import ChalkError, DataError, UnknownNameError, UsageError

# The efficiencies a calibration fits: the step's achieved FLOP/s and HBM bandwidth over
# the peaks (the relations of knowledge/batch.py take them), and the achieved fraction of
# the scale-up links' peak in the expert-parallel all-to-all (knowledge/moe.py), which
# only rows with a stated expert-parallel layout depend on.
EFFICIENCIES = ("flops_efficiency", "hbm_bandwidth_efficiency",
                "scale_up_bandwidth_efficiency")
COMMUNICATION = ("scale_up_bandwidth_efficiency",)  # may be absent from every row
ARCHITECTURES = ("dense", "moe")  # architecture_of's answers; the first is the reference
# Facts of a measurement that pin its layout as published (knowledge/data.py).
LAYOUT_FACTS = ("expert_parallelism", "attention_tensor_parallelism")
STEP = 1e-4  # log step of the finite differences (downward: an efficiency is at most 1)
KNOWN = 256  # answers a row keeps by point (then it starts again): see Row.known


def measured_tokens(record, fact: str) -> float | None:
    """A measurement's token count (``input_tokens``, ``output_tokens``), None if not
    published."""
    value = record.facts.get(fact)
    return None if value is None else value.quantity().to("token").magnitude


def decode_question(record) -> tuple[list[str], dict[str, str], list]:
    """The targets, pins and presets that ask chalk for a measurement's decode bound.

    ``context_length`` is input + output / 2, the mean context over a request's decode
    (the input alone where no output length is published); ``batch_size`` as published,
    else ``memory_fill = 1``, the largest batch whose KV cache fits beside the weights.
    The layout (:data:`LAYOUT_FACTS`) is pinned where the source states it: the expert
    parallelism sets the all-to-all the step waits on (``t_ep_comm``), attention data
    parallel has each group read its own attention weights. Elsewhere the conventions'
    layout stands: attention tensor-parallel over the replica (Megatron's) and a MoE
    model's experts over every chip of a stage, so a MoE row on several chips waits on an
    all-to-all over all of them.
    """
    from chalk.knowledge.presets import chip_preset

    input_tokens = measured_tokens(record, "input_tokens")
    output_tokens = measured_tokens(record, "output_tokens") or 0.0
    given = {"n_chips": record.facts["n_chips"].text,
             "context_length": f"{input_tokens + output_tokens / 2:g} token"}
    targets = ["tokens_per_second", "t_compute", "t_memory"]
    for stated in LAYOUT_FACTS:  # the expert-parallel layout, where the source states it
        if stated in record.facts:
            given[stated] = record.facts[stated].text
    if "batch_size" in record.facts:
        given["batch_size"] = record.facts["batch_size"].text
    else:
        given["memory_fill"] = "1"
        targets.append("batch_size")
    fields = record.fields
    presets = [chip_preset(fields["chip"], fields["precision"]), fields["model"],
               fields["precision"]]
    return targets, given, presets


def request_question(record) -> tuple[list[str], dict[str, str], list] | None:
    """The whole-request question of a measurement, or None where its rate is a decode
    rate: no published output length (a decode instance), or a rate one user's stream
    sees (the speed between its tokens, which a decode step bounds).

    It is :func:`decode_question` with the prompt and output lengths pinned in place of
    the mean context they give (relation ``request_context``), asking first for
    ``output_tokens_per_second``: the replica prefills each prompt, at its compute bound,
    between decode steps (``knowledge/requests.py``), as an engine measured at full load
    does. The decode step inside it is the same step as the decode bound's.
    """
    if (measured_tokens(record, "output_tokens") is None
            or record.fields["metric"] == "per_user"):
        return None
    targets, given, presets = decode_question(record)
    del given["context_length"]
    given["prompt_tokens"] = record.facts["input_tokens"].text
    given["output_tokens"] = record.facts["output_tokens"].text
    return ["output_tokens_per_second", *targets], given, presets


def measurement_question(record) -> tuple[list[str], dict[str, str], list]:
    """The question whose first target is the rate a measurement reports, at the replica:
    the whole-request throughput where the source gives both lengths and a total or
    per-chip rate (:func:`request_question`), else the decode rate
    (:func:`decode_question`). A calibration fits its efficiencies to these answers, so
    a prefill-heavy row (2,048 in, 128 out) is not asked for a decode rate its chips
    spend most of their time not producing."""
    return request_question(record) or decode_question(record)


def group_of(record, by_architecture: bool = False) -> str:
    """The calibration group of a measurement: its chip and engine, ``chip/engine``, and
    with ``by_architecture`` its model's architecture too (``chip/engine/moe``)."""
    group = f"{record.fields['chip']}/{record.fields['engine']}"
    return f"{group}/{architecture_of(record.fields['model'])}" if by_architecture else group


def architecture_of(model: str) -> str:
    """``moe`` for a model preset with routed experts, else ``dense``.

    Why it may deserve its own efficiencies: a mixture of experts splits each step's
    tokens over many small expert matrix products (fewer rows each, so lower achieved
    FLOP/s than one dense product) and, over several chips, waits for the all-to-all that
    the bound leaves out (``t_alltoall`` is 0 in the conventions).
    """
    from chalk.knowledge import data

    experts = data.models()[model].facts.get("n_experts")
    return "moe" if experts is not None and experts.value > 1 else "dense"


def by_architecture(rows: Iterable[Row]) -> list[Row]:
    """The rows grouped by chip, engine and architecture (``chip/engine/dense``)."""
    return [replace(r, group=f"{r.group}/{r.architecture}") for r in rows]


@dataclass(frozen=True)
class Row:
    """One measurement with its question compiled once.

    Attributes
    ----------
    id, group, source : str
        The record's id (empty for a question asked of a calibration), ``chip/engine``
        and the source it was published in.
    measured : float
        The published output rate (token/s, in the row's metric).
    metric : str
        ``total``, ``per_chip`` or ``per_user``.
    question : CompiledQuestion
        The row's question with every efficiency pinned (at 1); its first target is
        the rate (token/s over the replica).
    """

    id: str
    group: str
    source: str
    measured: float
    metric: str
    question: object = field(repr=False, compare=False)
    chips: float = 1.0
    batch: float | None = None  # as published; None: the HBM-filling batch chalk solves
    architecture: str = "dense"  # of the row's model: dense or moe (architecture_of)
    # log rates and slopes already found, by point: each cross-validation refit starts
    # where the fit on every row ended, so its first evaluation of a row is that fit's last
    known: dict = field(default_factory=dict, repr=False, compare=False)

    def rates(self, log_efficiencies: np.ndarray, strict: bool = True) -> np.ndarray:
        """The row's rate (token/s in its metric) at each row of ``log_efficiencies``
        (n × J: the log of each of :data:`EFFICIENCIES`).

        Parameters
        ----------
        strict : bool
            Raise where chalk refuses the question at some point; False gives NaN there
            (a fit's trial steps, which it then does not take).

        Raises
        ------
        UsageError
            Where chalk refuses the row's question at some point (``strict``).
        """
        points = np.exp(np.atleast_2d(log_efficiencies))
        evaluation = self.question.evaluate(dict(zip(EFFICIENCIES, points.T, strict=True)))
        if not strict:
            missing = evaluation.unsettled.copy()
            missing[list(evaluation.refusals)] = True
            return np.where(missing, np.nan, self._in_metric(evaluation))
        if evaluation.refusals or evaluation.unsettled.any():
            index = (min(evaluation.refusals) if evaluation.refusals
                     else int(np.argmax(evaluation.unsettled)))
            reason = (evaluation.refusals[index].message if evaluation.refusals
                      else "not settled")
            what = f"measurement {self.id!r}" if self.id else "the question"
            raise UsageError(f"{what}: chalk has no answer at efficiencies "
                             f"{points[index].round(4).tolist()}: {reason}")
        return self._in_metric(evaluation)

    def _in_metric(self, evaluation) -> np.ndarray:
        """The evaluated replica rate in the row's metric."""
        total = evaluation.values[self.question.targets[0]]
        if self.metric == "total":
            return total
        if self.metric == "per_chip":
            return total / self.chips
        batch = self.batch if self.batch is not None else evaluation.values["batch_size"]
        return total / batch

    def log_rates_and_slopes(self, log_efficiencies: np.ndarray, strict: bool = True
                             ) -> tuple[np.ndarray, np.ndarray]:
        """The row's log rate at each of m points (m × J log efficiencies) and its slopes
        d log rate / d log efficiency there (m × J), in one evaluation: one-sided
        differences below each point, so no efficiency passes 1 (``strict`` as for
        :meth:`rates`)."""
        x = np.atleast_2d(np.asarray(log_efficiencies, dtype=float))
        # the metric and batch too: a row copied with another keeps the same dictionary
        keys = [(self.metric, self.chips, self.batch, point.tobytes()) for point in x]
        if all(key in self.known for key in keys):
            return (np.array([self.known[key][0] for key in keys]),
                    np.array([self.known[key][1] for key in keys]))
        steps = STEP * np.eye(x.shape[1])
        points = np.concatenate([x] + [x - step for step in steps])
        logs = np.log(self.rates(points, strict)).reshape(1 + len(steps), len(x))
        slopes = (logs[0] - logs[1:]).T / STEP
        if len(self.known) > KNOWN:
            self.known.clear()
        for key, value, slope in zip(keys, logs[0], slopes, strict=True):
            if np.isfinite(value) and np.isfinite(slope).all():  # a refusal is not kept
                self.known[key] = (value, slope)
        return logs[0], slopes


def _answered(targets: list[str]) -> list[str]:
    """What a row's rate is made of: the replica's rate (the question's first target) and
    the batch where chalk solves it (a per-user rate divides by it)."""
    return [targets[0]] + [t for t in targets[1:] if t == "batch_size"]


def compile_rows(records: Iterable) -> list[Row]:
    """Each record's question compiled once (efficiencies pinned at 1, to be moved)."""
    from chalk.compiled import compile_question

    rows = []
    for record in records:
        targets, given, presets = measurement_question(record)
        given.update(dict.fromkeys(EFFICIENCIES, "1"))
        batch = record.facts.get("batch_size")
        rows.append(Row(
            id=record.id, group=group_of(record), source=str(record.fields["source"]),
            measured=record.facts["measured"].quantity().to("token/s").magnitude,
            metric=record.fields["metric"],
            question=compile_question(_answered(targets), given, presets),
            chips=record.facts["n_chips"].quantity().to("chip").magnitude,
            batch=None if batch is None else batch.quantity().to("sequence").magnitude,
            architecture=architecture_of(record.fields["model"])))
    return rows


def shipped_records(ids: Iterable[str] | None = None, data=None) -> list:
    """The shipped measurements, or a user's file of them (``data``, a path read by the
    same strict reader): all, or those with the given ids, in file order.

    Raises
    ------
    DataError
        A file that breaks the measurements' schema (file, entry and field named).
    UsageError
        An id the file does not hold.
    """
    from chalk.knowledge import data as knowledge_data
    from chalk.knowledge.files import shown_name

    records: Mapping = knowledge_data.serving_measurements(data)
    shown = "serving_measurements.yaml" if data is None else shown_name(data)
    for record in records.values():
        _check_presets(record, shown)
    if ids is None:
        return list(records.values())
    wanted = list(ids)
    unknown = [i for i in wanted if i not in records]
    if unknown:
        where = "knowledge/data/serving_measurements.yaml" if data is None else str(data)
        raise UsageError(f"no measurement {unknown[0]!r} in {where}")
    return [records[i] for i in wanted]


def _check_presets(record, shown: str) -> None:
    """Refuse a measurement whose model, chip or precision names no preset: its question
    is asked of that model on that chip at that number format.

    Raises
    ------
    DataError
        Naming the file, the entry and the field.
    """
    from chalk.knowledge import data
    from chalk.knowledge.presets import chip_preset

    fields = record.fields
    if fields["model"] not in data.models():
        raise DataError(shown, record.id, "model", f"{fields['model']!r} is not a model chalk "
                                                   "knows; run 'chalk list presets'")
    try:
        chip_preset(fields["chip"], fields["precision"])
    except UnknownNameError as exc:
        field = "precision" if "precision" in exc.kind else "chip"
        raise DataError(shown, record.id, field, exc.message) from None
    except ChalkError as exc:  # a format the chip's datasheet gives no peak for
        raise DataError(shown, record.id, "precision", exc.message.split(";")[0]
                        + "; give the format the run used") from None
