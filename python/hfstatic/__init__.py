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


class _Failure:
    """An exception raised in the streaming thread, handed to the consumer."""

    def __init__(self, error):
        self.error = error


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
        Leaving the loop early stops the generation at its next token.
        """
        return self._stream(self.generate, prompt, options)

    def chat_stream(self, messages, **options):
        """Yields the reply of ``chat(messages, **options)`` piece by piece as it is generated."""
        return self._stream(self.chat, messages, options)

    def _stream(self, method, prompt, options):
        if "on_text" in options:
            raise UsageError("stream() yields the text itself; on_text is for generate() and chat()")
        import queue  # here rather than at the top: importing hfstatic stays as quick as loading the tool
        import threading

        pieces = queue.SimpleQueue()
        finished = object()
        cancelled = threading.Event()

        def on_text(piece):
            pieces.put(piece)
            if cancelled.is_set():
                self.stop()

        def work():
            try:
                method(prompt, on_text=on_text, **options)
                pieces.put(finished)
            except BaseException as error:  # handed to the consumer, raised there
                pieces.put(_Failure(error))

        worker = threading.Thread(target=work, name="hfstatic-stream", daemon=True)
        worker.start()
        try:
            while True:
                item = pieces.get()
                if item is finished:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            cancelled.set()
            self.stop()
            worker.join()
