"""Section 5 of the lecture (1:18:59-1:32:44): training compute and the model's lifetime.

Pre-training costs 6 FLOP per active parameter per token; RL rollouts cost 2-6
and run at decode's lower utilisation; serving costs 2 per token, also at
decode utilisation. The lecture's heuristic is that a well-run lab spends about
equally on the three, which ties pre-training data to the traffic a model
serves and says how far past Chinchilla-optimal models are trained.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import lecture, paper
from chalk.symbolic.variables import count

TOPIC = "training and the model's lifetime"

cluster = count(BY_NAME["training_chips"])

RELATIONS = (
    R("train_flops",
      q.train_flops, q.train_flops_per_param * q.active_params * q.pretrain_tokens,
      "pre-training compute: 6 N D",
      paper("Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1; lecture 1:21:57-1:22:29"),
      ("attention FLOPs left out",),
      topic=TOPIC),
    R("rl_compute",
      q.rl_compute,
      q.rl_flops_per_param * q.decode_inefficiency * q.active_params * q.rl_tokens,
      "RL cost: 2-6 FLOP per parameter per rollout token, at decode's lower utilisation",
      lecture("1:22:29", "1:23:28"),
      topic=TOPIC),
    R("inference_compute",
      q.inference_compute,
      q.decode_inefficiency * q.flops_per_token * q.inference_tokens,
      "serving cost: a forward pass per token, at decode's lower utilisation",
      lecture("1:23:28", "1:25:44"),
      topic=TOPIC),
    R("rl_cost_ratio",
      q.rl_cost_ratio, q.rl_compute / q.train_flops,
      "RL spend relative to pre-training spend (1 in the lecture's equal split)",
      lecture("1:20:29", "1:24:52"),
      topic=TOPIC),
    R("inference_cost_ratio",
      q.inference_cost_ratio, q.inference_compute / q.train_flops,
      "serving spend relative to pre-training spend (1 in the lecture's equal split)",
      lecture("1:20:29", "1:24:52"),
      topic=TOPIC),
    R("inference_tokens",
      q.inference_tokens, q.serving_rate * q.deployment_time,
      "tokens served over a deployment: global traffic times time in service",
      lecture("1:29:49", "1:31:00"),
      topic=TOPIC),
    R("chinchilla_tokens",
      q.chinchilla_tokens, q.chinchilla_tokens_per_param * q.active_params,
      "compute-optimal pre-training data: about 20 tokens per parameter",
      paper("Hoffmann et al. 2022, arXiv:2203.15556; lecture 1:31:38-1:31:52"),
      ("for an MoE the lecture applies it to active parameters",),
      topic=TOPIC),
    R("overtrain_factor",
      q.overtrain_factor, q.pretrain_tokens / q.chinchilla_tokens,
      "how far past Chinchilla-optimal the model was trained",
      lecture("1:32:03", "1:32:22"),
      topic=TOPIC),
    R("chinchilla_loss",
      q.loss,
      q.fit_e + q.fit_a / count(BY_NAME["active_params"]) ** q.fit_alpha
      + q.fit_b / count(BY_NAME["pretrain_tokens"]) ** q.fit_beta,
      "loss of a model of N parameters trained on D tokens: L = E + A/N^alpha + B/D^beta",
      paper("Hoffmann et al. 2022, arXiv:2203.15556, eq. 2 (approach 3); Besiroglu et al. "
            "2024, arXiv:2404.10102"),
      ("N counts the parameters a token uses",),
      topic=TOPIC),
    R("training_time",
      q.training_time * cluster * q.chip_flops * q.mfu, q.train_flops,
      "wall time of pre-training on a cluster at a given utilisation",
      paper("definition of model FLOP utilisation (Chowdhery et al. 2022, arXiv:2204.02311, "
            "sec. 4.1)"),
      topic=TOPIC),
)
