"""Type stubs of the hfstatic package: the extension's classes and functions, and Runner's streams."""

from typing import Any, Iterator, Sequence

from . import _hfstatic as _hfstatic
from ._hfstatic import (
    ContractError as ContractError,
    Error as Error,
    ExportSummary as ExportSummary,
    FormatError as FormatError,
    Generation as Generation,
    Program as Program,
    Tokenizer as Tokenizer,
    UsageError as UsageError,
    checkpoint_presets as checkpoint_presets,
    export as export,
    make_checkpoint as make_checkpoint,
    validate as validate,
)

__all__: list[str]

class Runner(_hfstatic.Runner):
    """Generates text with a program, keeping its context from call to call."""

    def stream(self, prompt: str | Sequence[int], **options: Any) -> Iterator[str]:
        """Yields the text of generate(prompt, **options) piece by piece as it is generated."""
    def chat_stream(self, messages: Sequence[dict[str, str]], **options: Any) -> Iterator[str]:
        """Yields the reply of chat(messages, **options) piece by piece as it is generated."""
