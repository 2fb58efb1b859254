"""hfstatic: run hf_static programs (LLMs exported to fixed-shape prefill/decode methods) from Python.

The same C++ core as the ``hfstatic`` tool::

    import hfstatic
    runner = hfstatic.Runner()                     # the default program linked into the module
    print(runner.generate("In the beginning", max_tokens=40))
    for piece in runner.stream("And it came to pass", max_tokens=20):
        print(piece, end="", flush=True)

Errors are ``hfstatic.Error`` subclasses carrying the C++ message: ``ContractError`` (a program
that breaks its I/O contract), ``FormatError`` (files that are not valid programs, checkpoints or
tokenizers) and ``UsageError`` (bad arguments, a prompt past the context).
"""

from . import _hfstatic
from ._hfstatic import (
    ContractError,
    Error,
    ExportSummary,
    FormatError,
    Generation,
    Program,
    Tokenizer,
    UsageError,
    checkpoint_presets,
    export,
    make_checkpoint,
    validate,
)

__all__ = [
    "ContractError",
    "Error",
    "ExportSummary",
    "FormatError",
    "Generation",
    "Program",
    "Runner",
    "Tokenizer",
    "UsageError",
    "checkpoint_presets",
    "export",
    "make_checkpoint",
    "validate",
]


class Runner(_hfstatic.Runner):
    """Generates text with a program, keeping its context from call to call.

    ``Runner(path=None, threads=None)`` loads and validates the program at ``path`` (None: the
    default program linked into the module) with ``threads`` compute threads (None: all).
    One Runner serves one call at a time; a second thread gets a UsageError: give each thread
    its own Runner (the model computes without the GIL, so they run in parallel).
    """

    def stream(self, prompt, **options):
        """Yields the text of ``generate(prompt, **options)`` piece by piece as it is generated.

        The pieces join to what ``generate`` returns for the same prompt, context and options.
        The generation runs in a thread of its own and holds the Runner until it ends; leaving the
        loop early, closing or dropping the generator stops it at its next token and waits for it.
        """
        return _iterate(self._stream, prompt, options)

    def chat_stream(self, messages, **options):
        """Yields the reply of ``chat(messages, **options)`` piece by piece as it is generated."""
        return _iterate(self._chat_stream, messages, options)


def _iterate(start, prompt, options):
    stream = start(prompt, **options)
    try:
        while True:
            piece = stream.next()
            if piece is None:
                return
            yield piece
    finally:
        stream.close()
