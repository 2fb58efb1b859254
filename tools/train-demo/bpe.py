"""Byte-level BPE (GPT-2 style), trained here and written as a Hugging Face tokenizer.json.

Pre-tokenization is the GPT-2 split pattern followed by the ByteLevel byte-to-unicode map, the
same as the `ByteLevel` pre-tokenizer with `use_regex: true`. Python's `re` has no \\p{L} / \\p{N}
classes, so letters are `[^\\W\\d_]` and numbers `\\d`; the training text is normalised to ASCII,
where both spellings agree.
"""
import collections
import json
import re

GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")

ENDOFTEXT = "<|endoftext|>"


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}


def pretokenize(text):
    pieces = GPT2_SPLIT.findall(text)
    assert "".join(pieces) == text, "split pattern lost characters"
    return ["".join(BYTE_ENCODER[b] for b in p.encode("utf-8")) for p in pieces]


def train(texts, vocab_size, log=print):
    """Returns (vocab: token -> id, merges: list of (a, b)). Ids: 256 bytes, merges, then specials."""
    word_freq = collections.Counter()
    for t in texts:
        word_freq.update(pretokenize(t))
    alphabet = sorted(BYTE_ENCODER.values(), key=lambda c: BYTE_DECODER[c])
    vocab = {c: i for i, c in enumerate(alphabet)}
    words = [list(w) for w in word_freq]
    freqs = [word_freq[w] for w in word_freq]
    pair_count = collections.Counter()
    pair_where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freqs[wi]
            pair_where[(a, b)].add(wi)
    merges = []
    n_merges = vocab_size - len(vocab) - 1  # one id left for <|endoftext|>
    while len(merges) < n_merges and pair_count:
        # Most frequent pair; ties broken by the pair itself so training is deterministic.
        best = max(pair_count.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if pair_count[best] < 2:
            break
        a, b = best
        merged = a + b
        merges.append(best)
        vocab[merged] = len(vocab)
        for wi in list(pair_where[best]):
            w = words[wi]
            f = freqs[wi]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= f
                if pair_count[(x, y)] <= 0:
                    del pair_count[(x, y)]
                pair_where[(x, y)].discard(wi)
            out = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += f
                pair_where[(x, y)].add(wi)
        pair_where.pop(best, None)
        if len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges")
    vocab[ENDOFTEXT] = len(vocab)
    return vocab, merges


class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.inv = {i: t for t, i in vocab.items()}
        self.ranks = {tuple(m): r for r, m in enumerate(merges)}
        self.cache = {}

    def _bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = parts[best], parts[best + 1]
            out, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == a and parts[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(parts[i])
                    i += 1
            parts = out
        ids = [self.vocab[p] for p in parts]
        self.cache[word] = ids
        return ids

    def encode(self, text):
        ids = []
        for w in pretokenize(text):
            ids.extend(self._bpe(w))
        return ids

    def decode(self, ids):
        s = "".join(self.inv[i] for i in ids if self.inv[i] != ENDOFTEXT)
        return bytes(BYTE_DECODER[c] for c in s).decode("utf-8", errors="replace")


def tokenizer_json(vocab, merges):
    eot = vocab[ENDOFTEXT]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": ENDOFTEXT, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


def tokenizer_config(vocab):
    eot = vocab[ENDOFTEXT]
    return {
        "add_bos_token": False,
        "add_eos_token": False,
        "added_tokens_decoder": {str(eot): {"content": ENDOFTEXT, "lstrip": False, "normalized": False,
                                            "rstrip": False, "single_word": False, "special": True}},
        "bos_token": ENDOFTEXT,
        "eos_token": ENDOFTEXT,
        "unk_token": ENDOFTEXT,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 512,
        "tokenizer_class": "GPT2Tokenizer",
    }


def save(folder, vocab, merges):
    with open(f"{folder}/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False)
    with open(f"{folder}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(vocab), f, indent=2)
