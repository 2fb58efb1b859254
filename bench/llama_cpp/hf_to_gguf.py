#!/usr/bin/env python3
"""Writes a Hugging Face llama checkpoint (config.json, safetensors, tokenizer.json) as a GGUF
file for llama.cpp: float16 matrices, float32 norms, so that llama-quantize makes Q8_0 and Q4_0
from the same weights hfstatic exports to int8 and int4. Only what llama-bench needs: the
tokenizer is the checkpoint's byte-level BPE vocabulary, padded with unused tokens to the
model's vocab_size (llama-bench feeds random ids and never tokenizes text).

Usage: PYTHONPATH=LLAMA_CPP_SRC/gguf-py /usr/bin/python3 bench/llama_cpp/hf_to_gguf.py HF_DIR OUT.gguf
(Debian's python3: it has NumPy; gguf-py is the fetched llama.cpp snapshot's own package.)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
from hf_reference import load_checkpoint  # noqa: E402

import gguf  # noqa: E402


def fail(msg):
    sys.exit("hf_to_gguf.py: " + msg)


def interleave_rope_rows(w, n_heads):
    """HF's rotate-half order of a q/k projection's rows (each head's first half pairs with its
    second) to GGUF's adjacent pairs, which llama.cpp's rope for the llama architecture expects."""
    head_dim = w.shape[0] // n_heads
    return w.reshape(n_heads, 2, head_dim // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def token_table(hf_dir, vocab_size):
    with open(os.path.join(hf_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    model = tok.get("model", {})
    if model.get("type") != "BPE":
        fail("%s/tokenizer.json: model.type %r, only BPE is written" % (hf_dir, model.get("type")))
    tokens = [None] * vocab_size
    types = [gguf.TokenType.UNUSED] * vocab_size
    for text, i in model["vocab"].items():
        if i >= vocab_size:
            fail("%s/tokenizer.json: token id %d is past vocab_size %d" % (hf_dir, i, vocab_size))
        tokens[i], types[i] = text, gguf.TokenType.NORMAL
    for added in tok.get("added_tokens", []):
        i = added["id"]
        tokens[i] = added["content"]
        types[i] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    for i, t in enumerate(tokens):
        if t is None:
            tokens[i] = "<unused%d>" % i
    merges = model.get("merges") or []
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    if not merges:  # llama.cpp requires the key; one merge of two existing tokens serves
        first = tokens[types.index(gguf.TokenType.NORMAL)]
        merges = [first + " " + first]
    return tokens, types, merges


def main():
    if len(sys.argv) != 3:
        fail("usage: hf_to_gguf.py HF_DIR OUT.gguf")
    hf_dir, out = sys.argv[1], sys.argv[2]
    config, weights = load_checkpoint(hf_dir)
    if config.get("model_type") not in ("llama", "smollm3", "mistral") or config.get("attention_bias"):
        fail("%s/config.json: model_type %r; only llama-architecture checkpoints without biases are written"
             % (hf_dir, config.get("model_type")))
    hidden = config["hidden_size"]
    n_heads = config["num_attention_heads"]
    n_kv = config.get("num_key_value_heads", n_heads)
    head_dim = config.get("head_dim") or hidden // n_heads
    vocab_size = config["vocab_size"]
    n_layers = config["num_hidden_layers"]

    w = gguf.GGUFWriter(out, "llama")
    w.add_name(os.path.basename(os.path.normpath(hf_dir)))
    w.add_context_length(config.get("max_position_embeddings", 4096))
    w.add_embedding_length(hidden)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(n_heads)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    w.add_vocab_size(vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    tokens, types, merges = token_table(hf_dir, vocab_size)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if config.get("bos_token_id") is not None:
        w.add_bos_token_id(config["bos_token_id"])
    if config.get("eos_token_id") is not None:
        w.add_eos_token_id(config["eos_token_id"] if isinstance(config["eos_token_id"], int)
                           else config["eos_token_id"][0])

    def matrix(name):
        return weights[name].astype(np.float16)

    def vector(name):
        return weights[name].astype(np.float32)

    w.add_tensor("token_embd.weight", matrix("model.embed_tokens.weight"))
    w.add_tensor("output_norm.weight", vector("model.norm.weight"))
    if not config.get("tie_word_embeddings", False):
        w.add_tensor("output.weight", matrix("lm_head.weight"))
    for i in range(n_layers):
        p = "model.layers.%d." % i
        b = "blk.%d." % i
        w.add_tensor(b + "attn_norm.weight", vector(p + "input_layernorm.weight"))
        w.add_tensor(b + "attn_q.weight", interleave_rope_rows(matrix(p + "self_attn.q_proj.weight"), n_heads))
        w.add_tensor(b + "attn_k.weight", interleave_rope_rows(matrix(p + "self_attn.k_proj.weight"), n_kv))
        w.add_tensor(b + "attn_v.weight", matrix(p + "self_attn.v_proj.weight"))
        w.add_tensor(b + "attn_output.weight", matrix(p + "self_attn.o_proj.weight"))
        w.add_tensor(b + "ffn_norm.weight", vector(p + "post_attention_layernorm.weight"))
        w.add_tensor(b + "ffn_gate.weight", matrix(p + "mlp.gate_proj.weight"))
        w.add_tensor(b + "ffn_up.weight", matrix(p + "mlp.up_proj.weight"))
        w.add_tensor(b + "ffn_down.weight", matrix(p + "mlp.down_proj.weight"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d layers, vocab %d, float16)" % (out, n_layers, vocab_size))


if __name__ == "__main__":
    main()
