"""Whole requests: a prompt in, a generation out, and what a replica can serve of them.

A request is a prefill and then decode steps. Its first token waits for the prefill,
which does the prompt's FLOPs and reads the weights once (the slower of the two sets
the time to first token); every later token waits for a decode step, taken at the
average context of the generation, since the prompt grows by one token a step. A
replica that prefills and decodes on the same chips spends, per request, the prefill
and the request's share of the decode steps it rides in with the rest of the batch. A
disaggregated layout gives prefill its own chips, and the pair serves at the rate of
the slower pool. With chunked prefill (Sarathi-Serve) a prompt is cut into chunks
that ride along decode steps: each such step does its decodes and one chunk, reading the
weights once for both, so the stream's TPOT rises by the chunk's work and the first token
waits for as many of these mixed steps as the prompt has chunks.
"""

from __future__ import annotations

from chalk.knowledge.quantities import BY_NAME, q
from chalk.symbolic.relations import Relation as R
from chalk.symbolic.relations import Source, definition, lecture, paper
from chalk.symbolic.variables import count, unit_constant
from sympy import Integer, Max, Min, Rational, ceiling

TOPIC = "whole requests"

one_token = unit_constant("token").symbol
one_sequence = unit_constant("sequence").symbol
chips = count(BY_NAME["n_chips"])
prefill_chips = count(BY_NAME["prefill_chips"])

DISTSERVE = paper("Zhong et al. 2024, 'DistServe: Disaggregating Prefill and Decoding for "
                  "Goodput-optimized Large Language Model Serving', arXiv:2401.09670, sec. 2 "
                  "(TTFT and TPOT; prefill compute-bound, decode memory-bound)",
                  "https://arxiv.org/abs/2401.09670")
SARATHI = paper("Agrawal et al. 2024, 'Taming Throughput-Latency Tradeoff in LLM Inference "
                "with Sarathi-Serve', arXiv:2403.02310, sec. 2-3 (a prefill pauses the "
                "decodes batched with it; prefill reads the weights once for the whole "
                "prompt)", "https://arxiv.org/abs/2403.02310")
CHUNKED = paper(
    "Agrawal et al. 2024, 'Taming Throughput-Latency Tradeoff in LLM Inference with "
    "Sarathi-Serve', OSDI 2024, arXiv:2403.02310, sec. 4 (chunked prefills and stall-free "
    "batching: a step carries the batch's decodes and a prefill chunk, the weights read once "
    "for both, so TPOT rises by the chunk's work and a prompt of n chunks waits n steps); "
    "vLLM, 'Optimization and Tuning: Chunked Prefill', docs.vllm.ai/en/latest/configuration/"
    "optimization.html (decodes first, prefill chunks in the rest of max_num_batched_tokens)",
    "https://arxiv.org/abs/2403.02310")

RELATIONS = (
    R("decoded_tokens",
      q.decoded_tokens + one_token, q.output_tokens,
      "prefill emits a request's first token; decode steps give the rest",
      DISTSERVE,
      ("TPOT is counted over the tokens after the first, as DistServe defines it",),
      topic=TOPIC),
    R("t_prefill_memory",
      q.t_prefill_memory * q.replica_hbm_bandwidth,
      (q.total_params - q.input_embedding_params) * q.bytes_per_param
      + q.prompt_tokens * q.kv_bytes_per_token * q.kv_cache_copies,
      "the memory side of a prefill: every weight read once for the whole prompt (the "
      "input-embedding table only looked up) and the prompt's KV cache written once, by "
      "every chip that holds a copy",
      SARATHI,
      ("the prompt's tokens touch every routed expert (for 8 of 256 experts, 128 tokens "
       "leave 1.7% unpicked, 2,048 none to speak of)",
       "activations stay on chip"),
      topic=TOPIC),
    R("time_to_first_token",
      q.time_to_first_token, Max(q.t_prefill_compute, q.t_prefill_memory),
      "a prefill takes the slower of its compute and its HBM traffic (a roofline over the "
      "prompt)",
      Source("lecture 1:41:50-1:43:20 (prefill's compute); Zhong et al. 2024, DistServe, "
             "arXiv:2401.09670, sec. 2 (TTFT)", "paper"),
      ("one prompt on its own: no queueing, no chunking, no other prompt sharing the weight "
       "read", "compute and memory traffic overlap"),
      regimes=(("prefill compute-bound", q.t_prefill_compute),
               ("prefill memory-bound", q.t_prefill_memory)),
      topic=TOPIC),
    R("t_chunk_compute",
      q.t_chunk_compute * q.prompt_tokens, q.prefill_chunk_tokens * q.t_prefill_compute,
      "a chunk of C prompt tokens does C / prompt of the prompt's prefill compute",
      CHUNKED,
      ("the mean chunk: a late chunk attends to more of the prompt than an early one, and "
       "the chunks of a prompt together do its prefill attention",),
      topic=TOPIC),
    R("t_chunk_memory",
      q.t_chunk_memory * q.replica_hbm_bandwidth,
      Rational(1, 2) * q.kv_bytes_per_token * q.kv_cache_copies
      * (q.prompt_tokens + q.prefill_chunk_tokens),
      "HBM traffic a chunk adds beside the step's weight read (which it shares): its own "
      "C tokens of KV written, and its attention reading the KV of the prompt's earlier "
      "chunks, (prompt - C) / 2 tokens on average: (prompt + C) / 2 tokens in all",
      Source("derivation: chunk k of n = prompt / C reads the (k - 1) C tokens before it, "
             "whose mean over k is (prompt - C) / 2, and writes C; Agrawal et al. 2024, "
             "Sarathi-Serve, arXiv:2403.02310, sec. 4 (a chunk's attention reads the KV "
             "cache of the prompt's earlier chunks)", "derivation"),
      ("the weights are read once per step for decodes and chunk together",
       "activations stay on chip"),
      topic=TOPIC),
    R("mixed_step_time",
      q.mixed_step_time,
      Max(q.t_compute + q.t_chunk_compute, q.t_memory + q.t_chunk_memory) + q.t_ep_comm
      + q.t_draft,
      "a step with a prefill chunk takes the slower of its compute (the decodes' and the "
      "chunk's) and its memory traffic (the weights once, the decodes' KV, the chunk's KV), "
      "as a decode step does",
      CHUNKED,
      ("compute and memory traffic overlap perfectly",
       "the all-to-all and the draft as in step_time"),
      regimes=(("chunk compute-bound", q.t_compute + q.t_chunk_compute),
               ("chunk memory-bound", q.t_memory + q.t_chunk_memory)),
      topic=TOPIC),
    R("chunked_time_per_output_token",
      q.chunked_time_per_output_token * q.decode_tokens_per_step * one_sequence,
      q.mixed_step_time,
      "with a chunk in every decode step, a stream's tokens come one mixed step apart",
      CHUNKED,
      ("every decode step carries a chunk: a prompt is always waiting (a loaded replica)",),
      topic=TOPIC),
    R("prefill_chunks",
      q.prefill_chunks, ceiling(q.prompt_tokens / q.prefill_chunk_tokens),
      "a prompt of P tokens in chunks of C takes P / C steps, the last chunk partial: "
      "rounded up",
      CHUNKED,
      ("one chunk of a prompt per step",),
      topic=TOPIC),
    R("chunked_time_to_first_token",
      q.chunked_time_to_first_token, q.prefill_chunks * q.mixed_step_time,
      "the first token comes with the prompt's last chunk: one mixed step per chunk",
      CHUNKED,
      ("the chunks run in consecutive steps, no queueing before the first",
       "every step at the mean chunk's time, the last (partial) chunk's included"),
      topic=TOPIC),
    R("request_context",
      Integer(2) * q.context_length, Integer(2) * q.prompt_tokens + q.output_tokens,
      "a request's decode steps see its context grow from the prompt by one token a step, "
      "so on average they attend to the prompt and half the output",
      Source("derivation: the context runs from prompt_tokens to prompt_tokens + "
             "output_tokens; a decode step's KV reads and attention FLOPs grow linearly "
             "with it (lecture 5:30-5:56), so the mean step is the step at the mean context "
             "while one term dominates, and no longer than it otherwise (the max of linear "
             "terms is convex)", "derivation"),
      ("every sequence of the batch is a request of this shape, at a random point of its "
       "generation",),
      topic=TOPIC),
    R("time_per_output_token",
      q.time_per_output_token * q.tokens_per_second_per_user, Integer(1),
      "the time between a stream's tokens is the inverse of the speed it sees",
      DISTSERVE,
      ("TPOT averaged over a step's accepted tokens",),
      topic=TOPIC),
    R("request_latency",
      q.request_latency, q.time_to_first_token + q.decoded_tokens * q.time_per_output_token,
      "a request waits for its prefill and then for each decoded token",
      DISTSERVE,
      ("no queueing before the prefill or between the phases",),
      topic=TOPIC),
    R("t_request_decode",
      q.t_request_decode * q.tokens_per_step, q.decoded_tokens * q.step_time,
      "a request's share of the replica's decode time: its decode steps, each shared with "
      "the batch, so one step's time over the tokens the step gives",
      lecture("12:58", "13:37"),
      ("the batch stays full: a finished request's slot is refilled at once (continuous "
       "batching)",),
      topic=TOPIC),
    R("replica_time_per_request",
      q.replica_time_per_request, q.t_prefill_compute + q.t_request_decode,
      "prefill and decode take turns on the same chips: a request costs the replica its "
      "prefill and its share of the decode steps",
      SARATHI,
      ("prompts are prefilled in batches large enough to be compute-bound (the weight read "
       "shared among them)", "a prefill step carries no decodes and a decode step no "
       "prefill (no chunked prefill)"),
      topic=TOPIC),
    R("requests_per_second",
      q.requests_per_second * q.replica_time_per_request, Integer(1),
      "a replica busy all the time completes one request per request's worth of its time",
      definition("requests per second of a replica that is never idle"),
      topic=TOPIC),
    R("output_tokens_per_second",
      q.output_tokens_per_second, q.requests_per_second * q.output_tokens,
      "output tokens a replica delivers: its requests times their output",
      definition("output throughput of a request mix"),
      topic=TOPIC),
    R("output_tokens_per_second_per_chip",
      q.output_tokens_per_second_per_chip * BY_NAME["n_chips"].symbol,
      q.output_tokens_per_second,
      "output throughput shared over the replica's chips",
      definition("throughput per chip"),
      topic=TOPIC),
    R("request_cost_per_token",
      q.request_cost_per_token * q.output_tokens_per_second, chips * q.chip_price,
      "chip rental per output token when the replica does its own prefills",
      lecture("12:58", "13:37"),
      ("the chips are rented all the time and never idle",),
      topic=TOPIC),
    R("prefill_requests_per_second",
      q.prefill_requests_per_second * q.prompt_tokens * q.prefill_flops_per_token,
      prefill_chips * q.chip_flops,
      "prompts a disaggregated prefill instance takes in per second: its FLOP/s over one "
      "prompt's FLOPs",
      DISTSERVE,
      ("prompts are batched so the prefill chips are compute-bound at peak FLOP/s",),
      topic=TOPIC),
    R("decode_requests_per_second",
      q.decode_requests_per_second * q.decoded_tokens, q.tokens_per_second,
      "requests the decode replica finishes: its decode throughput over each request's "
      "decoded tokens",
      DISTSERVE,
      ("the decode replica's batch stays full",),
      topic=TOPIC),
    R("disaggregated_requests_per_second",
      q.disaggregated_requests_per_second,
      Min(q.prefill_requests_per_second, q.decode_requests_per_second),
      "with prefill and decode on separate chips, the pair serves at the slower pool's rate",
      paper("Zhong et al. 2024, DistServe, arXiv:2401.09670, sec. 3-4 (prefill and decode "
            "instances sized apart); Patel et al. 2024, 'Splitwise: Efficient Generative LLM "
            "Inference Using Phase Splitting', arXiv:2311.18677, sec. 4",
            "https://arxiv.org/abs/2401.09670"),
      ("moving the KV cache from the prefill chips to the decode chips is hidden (DistServe "
       "places the two on NVLink-connected chips, where its latency breakdown finds the "
       "transfer a small share)",),
      regimes=(("prefill-bound", q.prefill_requests_per_second),
               ("decode-bound", q.decode_requests_per_second)),
      topic=TOPIC),
    R("disaggregated_tokens_per_second_per_chip",
      q.disaggregated_tokens_per_second_per_chip
      * (BY_NAME["n_chips"].symbol + BY_NAME["prefill_chips"].symbol),
      q.disaggregated_requests_per_second * q.output_tokens,
      "output throughput of a disaggregated pair over every chip it holds",
      definition("throughput per chip over both pools"),
      topic=TOPIC),
)

__all__ = ["RELATIONS", "TOPIC"]
