#!/usr/bin/env python3
"""Makes a preset checkpoint, exports it, validates the program and prints a streamed generation.

    PYTHONPATH=build/python python3 examples/export_and_stream.py [--preset smollm2-135m] [--out DIR]

The checkpoint is random-initialised (hfstatic.make_checkpoint), so the text is noise: what
the example shows is the path from a Hugging Face checkpoint folder to streamed tokens. A real
checkpoint folder works the same way with hfstatic.export.
"""

import argparse
import os
import sys
import tempfile
import time

import hfstatic


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tiny", help="one of: " + ", ".join(hfstatic.checkpoint_presets()))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="folder for the checkpoint and the program (default: a temporary one)")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("-n", "--max-tokens", type=int, default=32)
    args = ap.parse_args()

    folder = args.out or tempfile.mkdtemp(prefix="hfstatic-example-")
    os.makedirs(folder, exist_ok=True)
    checkpoint = os.path.join(folder, "checkpoint")
    program = os.path.join(folder, args.preset + ".hfs")
    hfstatic.make_checkpoint(checkpoint, preset=args.preset, seed=args.seed)
    summary = hfstatic.export(checkpoint, program, prefill_len=32, max_context=256)
    print("exported %s: %d tensors, %.1f MiB" % (program, summary.tensors, summary.file_bytes / 2**20))

    problems = hfstatic.validate(program)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print("valid:", hfstatic.Program(program).describe())

    runner = hfstatic.Runner(program)
    start = time.perf_counter()
    print(args.prompt, end="", flush=True)
    for piece in runner.stream(args.prompt, max_tokens=args.max_tokens, temperature=0.8, top_k=40, seed=args.seed):
        print(piece, end="", flush=True)
    stats = runner.last.stats
    print("\n%d tokens in %.0f ms (%.1f tokens/s)" % (stats["generated_tokens"], (time.perf_counter() - start) * 1000,
                                                      stats["decode_tokens_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
