"""Tensor-parallel communication in a decode step (beyond the lecture's roofline).

When a dense model's matmuls are split over the n_chips of a replica in the
Megatron-LM way, every layer ends its attention block and its MLP block with
an all-reduce of the activations of the step's tokens. Those all-reduces sit
on the critical path: the next block needs their result. The lecture's step
time leaves them out; these relations add them so that forward models such as
llm-analysis can be compared on the same footing, and so a user can see when
communication, not HBM, is what a small batch waits on.

Each all-reduce costs a fixed latency plus the bytes one chip sends around a
ring over the scale-up bandwidth (the alpha-beta cost model).
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import paper
from chalk.symbolic.variables import count
from sympy import Integer

TOPIC = "tensor-parallel communication"

chips = count(BY_NAME["n_chips"])
step_tokens = count(BY_NAME["tokens_per_step"])

MEGATRON = paper("Shoeybi et al. 2019, 'Megatron-LM', arXiv:1909.08053, sec. 3 and fig. 3",
                 "https://arxiv.org/abs/1909.08053")
RING = paper("Thakur, Rabenseifner & Gropp 2005, 'Optimization of Collective Communication "
             "Operations in MPICH', IJHPCA 19(1), sec. 4 (ring all-gather and "
             "reduce-scatter); Patarasuk & Yuan 2009, JPDC 69(2)",
             "https://doi.org/10.1177/1094342005051521")
ALPHA_BETA = paper("Hockney 1994, 'The communication challenge for MPP', Parallel "
                   "Computing 20(3): time = latency + bytes / bandwidth",
                   "https://doi.org/10.1016/0167-8191(94)90032-9")

RELATIONS = (
    R("tp_allreduce_bytes",
      q.tp_allreduce_bytes * chips,
      # (chips - 1) multiplied in first: sympy would spread a bare 2 over the difference
      step_tokens * (chips - 1) * Integer(2) * q.d_model * q.activation_bytes,
      "bytes each chip sends in a ring all-reduce of the step's activations: a "
      "reduce-scatter and an all-gather, each passing (n-1)/n of the message",
      RING,
      ("the tensor-parallel group is all n_chips of the replica",
       "one activation vector of d_model elements per token of the step"),
      topic=TOPIC),
    R("t_allreduce",
      q.t_allreduce, q.allreduce_latency + q.tp_allreduce_bytes / q.scale_up_bandwidth,
      "one all-reduce: a fixed latency plus the bytes one chip sends at its one-direction "
      "scale-up bandwidth",
      ALPHA_BETA,
      ("a ring sends and receives at the same time on every link",),
      topic=TOPIC),
    R("t_tp_comm",
      q.t_tp_comm, Integer(2) * q.n_layers * q.t_allreduce,
      "a tensor-parallel layer all-reduces twice in the forward pass: after attention and "
      "after the MLP",
      MEGATRON,
      ("every layer is split over the n_chips (no expert parallelism)",
       "the all-reduces do not overlap with compute or HBM traffic"),
      topic=TOPIC),
    R("step_time_with_comm",
      q.step_time_with_comm, q.step_time + q.t_tp_comm,
      "a decode step with its tensor-parallel all-reduces on the critical path after the "
      "roofline part",
      MEGATRON,
      ("communication and the roofline part run one after the other",),
      topic=TOPIC),
)
