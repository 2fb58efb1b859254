#!/usr/bin/python3
"""Trains the demo model of hfstatic: a byte-level BPE tokenizer and a small Llama on the King James
Bible (Debian package bible-kjv-text), written as a Hugging Face checkpoint folder.

usage: /usr/bin/python3 tools/train-demo/train.py [--out models/demo] [--minutes 55]
"""
import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
from model import LlamaForCausalLM, load_safetensors, save_safetensors  # noqa: E402

def log(*a):
    print(*a, flush=True)


def normalise(line):
    line = line.replace("\t", " ").replace("`", "'")
    line = line.encode("ascii", "ignore").decode()
    return re.sub(r" +", " ", line).strip()


def read_kjv():
    """Verses in canonical order, one a line, without their references. The text of bible-kjv-text is
    a compressed data file (/usr/lib/bible.data) that the `bible` program (package bible-kjv) decodes;
    it prints one verse a line as "Ge1:1 In the beginning ..."."""
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], capture_output=True, text=True, errors="replace",
                         env=dict(os.environ, COLUMNS="100000")).stdout
    verses = []
    for raw in out.splitlines():
        m = re.match(r"^\S+?\d+:\d+ (.*)$", raw)
        if m:
            verses.append(m.group(1))
        elif raw.strip() and verses:
            verses[-1] += " " + raw.strip()
    return [v for v in (normalise(v) for v in verses) if v]


def read_fortunes():
    lines = []
    d = "/usr/share/games/fortunes"
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p) and "." not in name:
            with open(p, encoding="utf-8", errors="ignore") as f:
                lines.extend(l for l in (normalise(x) for x in f.read().replace("%\n", "\n").splitlines()) if l)
    return lines


def lr_at(frac, peak, warmup_frac, floor):
    if frac < warmup_frac:
        return peak * frac / warmup_frac
    p = min(1.0, (frac - warmup_frac) / (1 - warmup_frac))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * p))


def window_nll(model, tokens, window):
    """Sum of next-token NLL over tokens[1:], fed in windows that each start at position 0:
    window k feeds tokens[w*k : w*k + w] (w = `window` <= max_context - 1) and scores the next token after
    each, so every token but the first is scored exactly once. Returns (sum_nll, count)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(tokens) - 1, window):
            chunk = tokens[s:s + window + 1]
            x = torch.tensor([chunk[:-1]])
            y = torch.tensor(chunk[1:])
            logits = model(x)[0].double()
            total += F.cross_entropy(logits, y, reduction="sum").item()
            count += len(y)
    return total, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "models", "demo"))
    ap.add_argument("--source", choices=["kjv", "fortunes"], default="kjv")
    ap.add_argument("--minutes", type=float, default=55.0, help="wall-clock training budget")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--intermediate", type=int, default=704)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--heldout-frac", type=float, default=0.02)
    ap.add_argument("--heldout-tokens", type=int, default=3000, help="size of heldout.txt, in tokens")
    ap.add_argument("--eval-window", type=int, default=511)
    ap.add_argument("--dtype", choices=["float16", "bfloat16"], default="float16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    t_start = time.time()

    # --- data ---
    lines = read_kjv() if args.source == "kjv" else read_fortunes()
    if args.source == "kjv" and len(lines) < 30000:
        log(f"bible gave only {len(lines)} verses; falling back to fortunes")
        lines, args.source = read_fortunes(), "fortunes"
    n_held = max(1, int(len(lines) * args.heldout_frac))
    train_lines, held_lines = lines[:-n_held], lines[-n_held:]
    log(f"data: {args.source}, {len(lines)} lines, {sum(map(len, lines))} chars; held out the last {n_held} lines")

    # --- tokenizer ---
    t0 = time.time()
    vocab, merges = bpe.train(["\n".join(train_lines) + "\n"], args.vocab, log=log)
    tok = bpe.Tokenizer(vocab, merges)
    bpe.save(out, vocab, merges)
    log(f"bpe: vocab {len(vocab)} ({len(merges)} merges) in {time.time() - t0:.0f}s")
    train_ids = tok.encode("\n".join(train_lines) + "\n")
    held_all = tok.encode("\n".join(held_lines) + "\n")
    log(f"tokens: train {len(train_ids)}, held-out {len(held_all)}")
    # heldout.txt: the first lines of the held-out slice, about --heldout-tokens tokens.
    held_text, n = "", 0
    for l in held_lines:
        k = len(tok.encode(l + "\n"))
        if n + k > args.heldout_tokens:
            break
        held_text += l + "\n"
        n += k
    held_ids = tok.encode(held_text)
    assert tok.decode(held_ids) == held_text

    # --- model ---
    V = (len(vocab) + 63) // 64 * 64
    eot = vocab[bpe.ENDOFTEXT]
    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": eot,
        "eos_token_id": eot,
        "head_dim": args.hidden // args.heads,
        "hidden_act": "silu",
        "hidden_size": args.hidden,
        "initializer_range": 0.02,
        "intermediate_size": args.intermediate,
        "max_position_embeddings": 512,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": args.heads,
        "num_hidden_layers": args.layers,
        "num_key_value_heads": args.kv_heads,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-5,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "torch_dtype": args.dtype,
        "transformers_version": "4.44.2",
        "use_cache": True,
        "vocab_size": V,
    }
    model = LlamaForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params / 1e6:.2f}M parameters, vocab {V}")
    decay = [p for n_, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n_, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    data = torch.tensor(train_ids)
    held_eval = torch.tensor(held_all)

    def eval_loss(max_windows=16):
        model.eval()
        tot, cnt = 0.0, 0
        with torch.no_grad():
            for s in range(0, min(len(held_eval) - 1, max_windows * args.seq), args.seq):
                c = held_eval[s:s + args.seq + 1]
                logits = model(c[None, :-1])[0]
                tot += F.cross_entropy(logits, c[1:], reduction="sum").item()
                cnt += len(c) - 1
        model.train()
        return tot / cnt

    budget = args.minutes * 60
    t_train = time.time()
    step, ema = 0, None
    history = []
    model.train()
    while True:
        frac = (time.time() - t_train) / budget
        if frac >= 1:
            break
        lr = lr_at(frac, args.lr, 0.03, args.lr * 0.05)
        for g in opt.param_groups:
            g["lr"] = lr
        ix = torch.randint(0, len(data) - args.seq - 1, (args.batch,))
        x = torch.stack([data[i:i + args.seq] for i in ix])
        y = torch.stack([data[i + 1:i + args.seq + 1] for i in ix])
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 25 == 0:
            el = eval_loss(4)
            log(f"step {step} t={time.time() - t_train:.0f}s lr={lr:.2e} train {ema:.3f} eval {el:.3f}")
            history.append({"step": step, "seconds": round(time.time() - t_train), "train_loss": round(ema, 4),
                            "eval_loss": round(el, 4)})
    train_seconds = time.time() - t_train
    final_eval = eval_loss(10**9)
    log(f"trained {step} steps ({step * args.batch * args.seq} tokens) in {train_seconds:.0f}s; "
        f"train loss {ema:.3f}, eval loss {final_eval:.3f} over {len(held_all)} held-out tokens")

    # --- checkpoint ---
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[args.dtype]
    save_safetensors(os.path.join(out, "model.safetensors"), model.hf_state_dict(), dt)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "bos_token_id": eot, "eos_token_id": eot,
                   "transformers_version": "4.44.2"}, f, indent=2)

    # --- evaluation artefacts, from the saved (rounded) weights ---
    reloaded = LlamaForCausalLM(config)
    reloaded.load_state_dict(load_safetensors(os.path.join(out, "model.safetensors")))
    reloaded.eval()
    nll, cnt = window_nll(reloaded, held_ids, args.eval_window)
    ppl = math.exp(nll / cnt)
    with open(os.path.join(out, "heldout.txt"), "w") as f:
        f.write(held_text)
    with open(os.path.join(out, "heldout_tokens.txt"), "w") as f:
        f.write(" ".join(map(str, held_ids)) + "\n")
    ev = {
        "perplexity": ppl,
        "mean_nll": nll / cnt,
        "scored_tokens": cnt,
        "tokens": len(held_ids),
        "window": args.eval_window,
        "windowing": f"window k feeds tokens[{args.eval_window}*k : {args.eval_window}*k + {args.eval_window}] "
                     "from position 0 with a fresh cache and scores the next token after each; every token but "
                     "the first is scored once",
        "weights": f"{args.dtype} from model.safetensors, computed in float32",
        "source": args.source,
        "heldout": f"first {len(held_ids)} tokens' worth of lines of the last {args.heldout_frac:.0%} of the text",
        "training": {"steps": step, "seconds": round(train_seconds), "batch": args.batch, "seq": args.seq,
                     "lr": args.lr, "tokens_seen": step * args.batch * args.seq, "train_tokens": len(train_ids),
                     "final_train_loss": round(ema, 4), "final_eval_loss": round(final_eval, 4),
                     "parameters": n_params, "history": history},
    }
    with open(os.path.join(out, "heldout_eval.json"), "w") as f:
        json.dump(ev, f, indent=2)
    log(f"held-out perplexity {ppl:.4f} over {cnt} tokens (saved weights); total time {time.time() - t_start:.0f}s")

    # A sample, greedy with a repetition-free top-k, to eyeball.
    ids = tok.encode("And God said")
    with torch.no_grad():
        for _ in range(40):
            logits = reloaded(torch.tensor([ids[-511:]]))[0, -1, :len(vocab)]
            p = F.softmax(logits / 0.8, -1)
            ids.append(int(torch.multinomial(p, 1)))
    log("sample:", tok.decode(ids))


if __name__ == "__main__":
    main()
