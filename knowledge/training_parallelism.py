"""Communication in training at scale: data, FSDP, tensor and expert parallelism.

A training step on a cluster of ``training_chips`` does two things per chip: its
share of the 6 N D matmuls, and the collectives its parallelism needs. Each
collective is costed with the alpha-beta model: a fixed latency per message
step plus the bytes one chip sends over its link. Comparing the two says whether
the step waits on compute or on the network, and, for data parallelism and FSDP,
from which batch per chip the compute is long enough to hide the network.

Everything here is about the training cluster. The serving quantities (``n_chips``
of one replica, ``batch_size``, ``step_time``) are never used: a training step has
its own degrees (``train_data_parallelism``, ``train_fsdp_parallelism``,
``train_tensor_parallelism``, ``train_expert_parallelism``) and its own batch per
chip (``train_tokens_per_chip``, the global batch over ``training_chips``).

Conventions, stated once:

- Compute is the step's matmul time on one chip at peak FLOP/s
  (``t_train_compute``); the ratios compare each kind of communication with that
  whole-step compute. Utilisation below peak only raises the compute time, so a
  kind that is compute-bound at peak stays so.
- Rings send in one direction at the link's one-direction bandwidth, the GPU
  (NCCL) convention also used by ``tensor_parallel``. The scaling book's TPU rings
  run both ways and halve the bandwidth term.
- Which network each kind crosses is an assumption of its relation: data
  parallelism and FSDP span nodes (``scale_out_bandwidth``); tensor and expert
  parallelism stay inside a scale-up domain (``scale_up_bandwidth``). A cluster
  laid out otherwise pins that bandwidth to what its groups actually see.
- A ratio below 1 says the kind's collectives fit inside the compute; whether they
  then cost nothing depends on overlap, which differs by kind (see each relation).
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import book, paper
from chalk.symbolic.variables import count
from sympy import Integer

TOPIC = "communication in training"

cluster = count(BY_NAME["training_chips"])
dp = count(BY_NAME["train_data_parallelism"])
fsdp = count(BY_NAME["train_fsdp_parallelism"])
tp = count(BY_NAME["train_tensor_parallelism"])
ep = count(BY_NAME["train_expert_parallelism"])
chip_tokens = count(BY_NAME["train_tokens_per_chip"])
alpha = q.train_hop_latency

SCALING_BOOK = "https://jax-ml.github.io/scaling-book/training/"
BOOK_TRAINING = book("Austin et al. 2025, 'How to Scale Your Model', part 5 'How to "
                     "Parallelize a Transformer for Training'", SCALING_BOOK)
BOOK_DP = book("Austin et al. 2025, 'How to Scale Your Model', part 5, 'Data Parallelism' "
               "(gradient AllReduce in the backward pass; compute-bound when B/X > C/W)",
               SCALING_BOOK)
BOOK_FSDP = book("Austin et al. 2025, 'How to Scale Your Model', part 5, 'Fully-Sharded "
                 "Data Parallelism (FSDP)' (compute-bound when B/X > C/W); Rajbhandari et "
                 "al. 2020, 'ZeRO', arXiv:1910.02054, sec. 7.2 (3 Psi with parameters "
                 "partitioned, 1.5x data parallelism's 2 Psi)", SCALING_BOOK)
RING = paper("Patarasuk & Yuan 2009, 'Bandwidth optimal all-reduce algorithms for clusters "
             "of workstations', JPDC 69(2): a ring all-reduce sends 2(N-1)/N of the message "
             "per process in 2(N-1) steps; Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1), "
             "sec. 4; latency per step after Hockney 1994, Parallel Computing 20(3)",
             "https://doi.org/10.1016/j.jpdc.2008.09.002")
MEGATRON = paper("Shoeybi et al. 2019, 'Megatron-LM', arXiv:1909.08053, sec. 3 and fig. 4: "
                 "two all-reduces per layer in the forward pass and two in the backward",
                 "https://arxiv.org/abs/1909.08053")
ALLTOALL = paper("Lepikhin et al. 2020, 'GShard', arXiv:2006.16668, sec. 3 (experts sharded "
                 "over devices: one AllToAll dispatches tokens, one combines them; the "
                 "backward pass runs the reverse pair); pairwise-exchange all-to-all cost "
                 "(N-1)(alpha + m/(N W)) from Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
                 "https://arxiv.org/abs/2006.16668")

RELATIONS = (
    R("train_tokens_per_chip",
      q.train_tokens_per_chip * cluster, q.train_batch_tokens,
      "the batch per chip: a step's global batch spread over the training cluster",
      BOOK_TRAINING,
      ("every chip of the cluster does an equal share of the step's matmuls",
       "no pipeline stages idle (pipeline parallelism is not modelled here)"),
      topic=TOPIC),
    R("t_train_compute",
      q.t_train_compute * q.chip_flops,
      q.train_flops_per_param * q.active_params * q.train_tokens_per_chip,
      "one chip's matmuls in a training step: 6 FLOP per active parameter per token of "
      "its share of the batch, at peak FLOP/s",
      paper("Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (6 N per token); Austin et "
            "al. 2025, 'How to Scale Your Model', part 5 (T_math at the chip's peak C)",
            SCALING_BOOK),
      ("attention FLOPs left out", "at peak FLOP/s: an MFU below 1 lengthens the compute "
       "and only makes a step more compute-bound"),
      topic=TOPIC),
    R("t_train_dp_comm",
      q.t_train_dp_comm,
      # (N - 1) times the bracket first: sympy would spread a bare 2 over the difference
      (dp - 1) * (alpha + q.total_params * q.train_gradient_bytes_per_param
                  / (dp * q.scale_out_bandwidth)) * Integer(2),
      "ring all-reduce of every gradient over the data-parallel group: 2(N-1) steps, each "
      "a hop latency plus 1/N of the gradients at the one-direction scale-out bandwidth",
      RING,
      ("every data-parallel chip holds the whole model (no FSDP, tensor or expert sharding)",
       "the group spans nodes, so each chip's scale-out link is the ring's bottleneck",
       "the gradients go as one message (bucketing adds a latency per bucket)"),
      topic=TOPIC),
    R("t_train_fsdp_comm",
      q.t_train_fsdp_comm,
      (fsdp - 1) * (Integer(3) * q.n_layers * alpha
                    + q.total_params * (Integer(2) * q.bytes_per_param
                                        + q.train_gradient_bytes_per_param)
                    / (fsdp * q.scale_out_bandwidth)),
      "FSDP (ZeRO-3): each layer's weights are all-gathered for the forward pass and again "
      "for the backward, and its gradients reduce-scattered; each ring collective takes "
      "N-1 steps and passes (N-1)/N of its message",
      BOOK_FSDP,
      ("one FSDP unit per layer: three collectives per layer",
       "weights gathered at their storage precision bytes_per_param",
       "the group spans nodes, so each chip's scale-out link is the ring's bottleneck",
       "no tensor or expert sharding inside the FSDP group"),
      topic=TOPIC),
    R("t_train_tp_comm",
      q.t_train_tp_comm,
      Integer(4) * q.n_layers * (tp - 1) * Integer(2)
      * (alpha + chip_tokens * q.d_model * q.activation_bytes / q.scale_up_bandwidth),
      "Megatron tensor parallelism all-reduces the activations of the group's tokens "
      "(train_tokens_per_chip x train_tensor_parallelism of them) twice per layer forward "
      "and twice backward; a ring all-reduce passes 2(N-1)/N of each",
      MEGATRON,
      ("the tensor-parallel group sits inside one scale-up domain",
       "the cluster is data-parallel groups times tensor-parallel groups, so a group "
       "processes train_tokens_per_chip x train_tensor_parallelism tokens",
       "no activation recomputation (it repeats the forward all-reduces); sequence "
       "parallelism moves the same bytes",
       "the all-reduces block the next matmul: they add to the step rather than hide"),
      topic=TOPIC),
    R("t_train_ep_comm",
      q.t_train_ep_comm,
      Integer(4) * q.n_layers * (ep - 1)
      * (alpha + chip_tokens * q.n_active_experts * q.d_model * q.activation_bytes
         / (ep * q.scale_up_bandwidth)),
      "each MoE layer dispatches every token's activation to its chosen experts and "
      "combines the results, an all-to-all each way, forward and backward; a pairwise "
      "all-to-all takes N-1 steps and sends (N-1)/N of a chip's message off the chip",
      ALLTOALL,
      ("every layer is an MoE layer",
       "routing spreads tokens evenly over the expert-parallel chips (no capacity "
       "padding or dropped tokens, no de-duplication of a token sent to two experts on "
       "one chip)",
       "the expert-parallel group sits inside one scale-up domain",
       "no tensor parallelism inside the experts"),
      topic=TOPIC),
    R("train_dp_comm_ratio",
      q.train_dp_comm_ratio * q.t_train_compute, q.t_train_dp_comm,
      "is a data-parallel step communication-bound? the gradient all-reduce over the "
      "step's compute",
      BOOK_DP,
      ("the all-reduce can overlap only the backward pass (4 of the 6 FLOP per parameter "
       "per token), so hiding it fully needs the ratio below 2/3",),
      topic=TOPIC),
    R("train_fsdp_comm_ratio",
      q.train_fsdp_comm_ratio * q.t_train_compute, q.t_train_fsdp_comm,
      "is an FSDP step communication-bound? its gathers and scatters over the step's "
      "compute",
      BOOK_FSDP,
      ("the forward gathers overlap the forward pass and the backward gathers and "
       "scatters the backward pass, in the same proportion as the FLOPs",),
      topic=TOPIC),
    R("train_tp_comm_ratio",
      q.train_tp_comm_ratio * q.t_train_compute, q.t_train_tp_comm,
      "how much tensor parallelism adds to a step: its blocking all-reduces over the "
      "step's compute",
      BOOK_TRAINING,
      ("with blocking all-reduces the step takes (1 + ratio) times its compute",),
      topic=TOPIC),
    R("train_ep_comm_ratio",
      q.train_ep_comm_ratio * q.t_train_compute, q.t_train_ep_comm,
      "is an expert-parallel step communication-bound? its all-to-alls over the step's "
      "compute",
      ALLTOALL,
      topic=TOPIC),
    R("train_dp_critical_tokens_per_chip",
      q.train_dp_critical_tokens_per_chip * q.train_flops_per_param * q.active_params,
      q.t_train_dp_comm * q.chip_flops,
      "the batch per chip from which a data-parallel step stops being communication-bound: "
      "its compute equals the gradient all-reduce, which does not grow with the batch",
      BOOK_DP,
      ("compared with the whole step's compute; against the backward pass alone it is "
       "1.5 times larger",),
      topic=TOPIC),
    R("train_fsdp_critical_tokens_per_chip",
      q.train_fsdp_critical_tokens_per_chip * q.train_flops_per_param * q.active_params,
      q.t_train_fsdp_comm * q.chip_flops,
      "the batch per chip from which an FSDP step stops being communication-bound: its "
      "compute equals the gathers and scatters, which do not grow with the batch",
      BOOK_FSDP,
      topic=TOPIC),
)
