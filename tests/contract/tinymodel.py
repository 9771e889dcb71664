"""A tiny llama-architecture GGUF that answers one fixed sentence, then ends.

The contract suite needs a real server whose answers are known token for token, at any
temperature, and a model small enough to write in milliseconds (about 0.2 MB). The weights are
set by hand so that the next token depends only on the current one:

- every token's embedding is a one-hot over ``n_embd`` dimensions: answer token ``i`` is hot in
  dimension ``i``, every other token (the prompt's characters, the specials) in the last answer
  dimension + 1 (the "anything else" state);
- attention and feed-forward weights are zero, so the residual stream carries the embedding
  through the one block unchanged; RMSNorm weights are ones, so the one-hot survives
  normalisation (scaled by ``sqrt(n_embd)``);
- the output matrix maps state ``i`` to a logit of ``PEAK * sqrt(n_embd)`` on the successor:
  answer token ``i + 1``, end-of-sequence after the last, and the first answer token after
  anything else. Every other logit is 0, so even at temperature 2 the runner-up is ~e^-180
  as likely.

The chat template ends every prompt with the ``<|a|>`` control token, followed by the content
of a trailing assistant message (a prefill), so a fresh request answers the whole sentence and
a prefill of its first ``k`` tokens is continued with the rest: continuations stitch exactly.

The tokenizer is SentencePiece-style (``llama``): the 256 byte tokens (so any prompt text
tokenizes), printable ASCII and ``▁`` as single characters, and every prefix of every answer
word, so the sentence (and any token-aligned prefix of it) tokenizes back to exactly its answer
tokens. ``add_space_prefix`` is off, so text after a control token is tokenized as written.

Run as a script to write the file: ``python -m tests.contract.tinymodel OUT.gguf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

#: The one answer, 27 tokens: the first word, then 26 words each with its leading space.
ANSWER = (
    "The tiny review model found no defects: every function checks its input, names each"
    " error, and writes files atomically, so this change looks ready to merge now."
)

SPACE = "\u2581"  # SentencePiece's visible space
PEAK = 64.0
N_CTX_TRAIN = 4096

UNK, BOS, EOS, USER, ASSISTANT = "<unk>", "<s>", "</s>", "<|u|>", "<|a|>"
# GGUF token types (gguf.TokenType); spelled here so importing this module needs no gguf.
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}<|a|>{% else %}<|u|>{% endif %}"
    "{{ message['content'] }}"
    "{% if message['role'] == 'assistant' and not loop.last %}</s>{% endif %}"
    "{% endfor %}"
    "{% if messages[-1]['role'] != 'assistant' %}<|a|>{% endif %}"
)


def answer_pieces() -> list[str]:
    """The answer as its tokens' pieces (spaces as ``▁``), in order; all distinct."""
    words = ANSWER.split(" ")
    pieces = [words[0]] + [SPACE + w for w in words[1:]]
    if len(set(pieces)) != len(pieces):
        raise ValueError("every answer token must be distinct: the next token is a function of it")
    return pieces


def answer_texts() -> list[str]:
    """The answer as the text of each token, which concatenate to ``ANSWER``."""
    return [p.replace(SPACE, " ") for p in answer_pieces()]


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and token types, specials first."""
    tokens = [UNK, BOS, EOS, USER, ASSISTANT]
    types = [UNKNOWN, CONTROL, CONTROL, CONTROL, CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    pieces: list[str] = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]
    for word in answer_pieces():
        pieces += [word[:n] for n in range(2, len(word) + 1)]
    seen: set[str] = set()
    for piece in pieces:
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(NORMAL)
    # SentencePiece merges the highest-scoring pair first; longer pieces win.
    scores = [float(len(tok)) if t == NORMAL else 0.0 for tok, t in zip(tokens, types, strict=True)]
    return tokens, scores, types


def write(path: Path) -> Path:
    """Write the model to ``path`` (created or replaced) and return it."""
    import gguf  # the contract extra; imported here so collecting the suite needs neither
    import numpy as np

    tokens, scores, types = vocabulary()
    index = {tok: i for i, tok in enumerate(tokens)}
    answer = [index[p] for p in answer_pieces()]
    other = len(answer)  # the state of every token that is not part of the answer
    n_embd = 32 * math.ceil((other + 1) / 32)
    n_vocab = len(tokens)

    state = np.full(n_vocab, other, dtype=np.int64)
    state[answer] = np.arange(len(answer))
    embeddings = np.zeros((n_vocab, n_embd), dtype=np.float32)
    embeddings[np.arange(n_vocab), state] = 1.0

    successors = [*answer[1:], index[EOS]]
    output = np.zeros((n_vocab, n_embd), dtype=np.float32)
    for i, nxt in enumerate(successors):
        output[nxt, i] = PEAK
    output[answer[0], other] = PEAK

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("deepseek-review contract test model")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(1)
    writer.add_feed_forward_length(n_embd)
    writer.add_head_count(1)
    writer.add_head_count_kv(1)
    writer.add_rope_dimension_count(n_embd)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(index[UNK])
    writer.add_bos_token_id(index[BOS])
    writer.add_eos_token_id(index[EOS])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    ones = np.ones(n_embd, dtype=np.float32)
    square = np.zeros((n_embd, n_embd), dtype=np.float32)
    writer.add_tensor("token_embd.weight", embeddings)
    writer.add_tensor("blk.0.attn_norm.weight", ones)
    for name in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
        writer.add_tensor(f"blk.0.{name}.weight", square)
    writer.add_tensor("blk.0.ffn_norm.weight", ones)
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
