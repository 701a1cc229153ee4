"""Speculative and multi-token decoding: more than one token per sequence per step.

A draft (a small model, or multi-token-prediction heads) proposes k tokens; the target
model runs those k and one more in a single step and keeps the longest prefix it agrees
with, plus one token of its own. With each drafted token accepted independently with
probability alpha, a step gives (1 - alpha^(k+1)) / (1 - alpha) tokens on average
(Leviathan et al. 2023). The step pays for it twice: the target's matmuls run k + 1
tokens per sequence whatever is accepted, and the draft's k steps come first. Without
speculation (the conventions' default: nothing accepted, nothing thrown away) a step gives
and computes one token.
"""

from __future__ import annotations

from chalk.knowledge.quantities import q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import paper
from chalk.symbolic.variables import unit_constant
from sympy import Max

TOPIC = "speculative decoding"

one_token = unit_constant("token").symbol
one_sequence = unit_constant("sequence").symbol
per_sequence = one_token / one_sequence
drafted = q.draft_tokens / per_sequence  # k, a plain number

LEVIATHAN = "Leviathan, Kalman and Matias 2023, 'Fast Inference from Transformers via " \
            "Speculative Decoding', arXiv:2211.17192"

RELATIONS = (
    R("decode_tokens_per_step",
      q.decode_tokens_per_step, per_sequence + q.accepted_tokens_per_step,
      "a step gives each sequence the target model's own next token and the drafted tokens "
      "it accepts",
      paper(f"{LEVIATHAN}, sec. 2 (each iteration adds the accepted prefix and one token "
            "sampled from the target)", "https://arxiv.org/abs/2211.17192"),
      topic=TOPIC),
    R("accepted_tokens_per_step",
      # written as a quotient, not multiplied out: alpha = 1 would solve the product form
      # for any count, and is no answer
      q.accepted_tokens_per_step,
      q.acceptance_rate * (1 - q.acceptance_rate ** drafted) / (1 - q.acceptance_rate)
      * per_sequence,
      "expected drafted tokens kept: the first is accepted with probability alpha, the first "
      "two with alpha^2, and so on up to k; with the target's own token, (1 - alpha^(k+1)) / "
      "(1 - alpha) tokens a step",
      paper(f"{LEVIATHAN}, sec. 3.3, eq. 1 (less the target's own token)",
            "https://arxiv.org/abs/2211.17192"),
      ("each drafted token is accepted independently with the same probability alpha "
       "(the paper's simplifying assumption)",
       "alpha below 1 (at 1 every drafted token is kept)"),
      topic=TOPIC),
    R("draft_tokens",
      q.draft_tokens, q.accepted_tokens_per_step + q.rejected_tokens_per_step,
      "each drafted token is either kept or thrown away",
      paper(f"{LEVIATHAN}, sec. 2 (tokens after the first rejection are discarded)",
            "https://arxiv.org/abs/2211.17192"),
      topic=TOPIC),
    R("verify_tokens_per_step",
      q.verify_tokens_per_step, q.decode_tokens_per_step + q.rejected_tokens_per_step,
      "the target model runs its own next token and every drafted one, kept or not, in one "
      "forward pass: k + 1 tokens a sequence",
      paper(f"{LEVIATHAN}, sec. 3.5 (the target runs gamma + 1 tokens in parallel)",
            "https://arxiv.org/abs/2211.17192"),
      ("every drafted token is verified, also those after the first rejection",),
      topic=TOPIC),
    R("t_draft_step",
      q.t_draft_step,
      Max(q.draft_params * q.bytes_per_param / q.replica_hbm_bandwidth,
          q.batch_size * per_sequence * q.draft_params * q.flops_per_param / q.replica_flops),
      "one draft step for the whole batch: the slower of reading the draft's weights and its "
      "matmuls (the draft's own roofline)",
      paper(f"{LEVIATHAN}, sec. 3.4 (the cost coefficient c: a draft step's time over the "
            "target's); lecture 2:34-3:19 for the roofline",
            "https://arxiv.org/abs/2211.17192"),
      ("the draft runs on the replica's chips at the target's precision",
       "its KV cache and attention are left out (small next to its weights)"),
      regimes=(("draft memory-bound", q.draft_params * q.bytes_per_param
                / q.replica_hbm_bandwidth),
               ("draft compute-bound", q.batch_size * per_sequence * q.draft_params
                * q.flops_per_param / q.replica_flops)),
      topic=TOPIC),
    R("t_draft",
      q.t_draft, drafted * q.t_draft_step,
      "the draft proposes its k tokens one after another, each a step of its own",
      paper(f"{LEVIATHAN}, sec. 3.4 (gamma serial runs of the approximation model per "
            "iteration)", "https://arxiv.org/abs/2211.17192"),
      ("a multi-token-prediction module counts as a draft model of its own parameters",),
      topic=TOPIC),
)

__all__ = ["RELATIONS", "TOPIC"]
