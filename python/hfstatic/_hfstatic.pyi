"""Type stubs of the compiled core of hfstatic (import hfstatic instead)."""

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, os.PathLike]
_Prompt = Union[str, Sequence[int]]
_Stop = Union[str, Sequence[str], None]
_Message = Dict[str, str]

class Error(Exception):
    """Base class of every error hfstatic raises; str(e) is the C++ message."""

class ContractError(Error):
    """A program that breaks its I/O contract (hf_static v1); the message lists every violation."""

class FormatError(Error):
    """A file that cannot be read or is not a valid program, checkpoint or tokenizer."""

class UsageError(Error):
    """Bad arguments: a value out of range, a prompt past the context, an id outside the vocabulary."""

class ExportSummary:
    """What export() wrote."""

    @property
    def file_bytes(self) -> int:
        """Bytes of the program file."""
    @property
    def weight_bytes(self) -> int:
        """Bytes of its weights."""
    @property
    def tensors(self) -> int:
        """Number of tensors."""
    @property
    def skipped_tensors(self) -> int:
        """Tensors of a multimodal checkpoint's other towers, not exported."""
    @property
    def skipped(self) -> str:
        """What those are ('' when none)."""

class Program:
    """A program file, mapped and checked for structure (not yet against its contract)."""

    def __init__(self, path: Optional[_Path] = None) -> None:
        """Loads the program at `path` (None: the default program linked into the module)."""
    @property
    def path(self) -> str:
        """The file's path."""
    @property
    def file_size(self) -> int:
        """Bytes of the file."""
    @property
    def weight_bytes(self) -> int:
        """Bytes of its weight tensors."""
    @property
    def metadata(self) -> Dict[str, Any]:
        """The model and contract metadata."""
    @property
    def methods(self) -> List[Dict[str, Any]]:
        """Each method's name, inputs and outputs (name, dtype, shape; outputs also memory) and node count."""
    def embedded_file(self, name: str) -> bytes:
        """Bytes of a file embedded in the program, such as 'tokenizer.json' (empty when absent)."""
    def validate(self) -> List[str]:
        """Every contract violation and graph problem of the program; empty when it is valid."""
    def describe(self) -> str:
        """A one-line summary of a valid program."""

def validate(path: _Path, *, check_weights: bool = False) -> List[str]:
    """Every contract violation and graph problem of the program at `path` (empty: valid), as `hfstatic validate`;
    check_weights=True also reports NaN and infinity in its weights (`--check-weights`)."""

def export(
    hf_dir: _Path,
    out: _Path,
    *,
    prefill_len: Optional[int] = None,
    max_context: int = 512,
    weights_dtype: Optional[str] = None,
    group_size: Optional[int] = None,
    cache_dtype: str = "float32",
    repeat_state: bool = False,
    mutation_order: str = "input",
    progress: Optional[Callable[[int, int], None]] = None,
) -> ExportSummary:
    """Exports a Hugging Face checkpoint folder to a program file, as `hfstatic export` does."""

def make_checkpoint(
    out: _Path, *, preset: str = "tiny", seed: int = 0, dtype: Optional[str] = None, shard_mib: int = 0
) -> None:
    """Writes a random-initialised Hugging Face checkpoint of a preset, as `hfstatic make-checkpoint` does."""

def checkpoint_presets() -> Dict[str, str]:
    """The presets make_checkpoint() knows: {name: description}."""

class Tokenizer:
    """A Hugging Face tokenizer.json tokenizer (BPE)."""

    def __init__(self, program: Optional[_Path] = None) -> None:
        """The tokenizer embedded in the program at `program` (None: the default program)."""
    @staticmethod
    def from_file(path: _Path) -> "Tokenizer":
        """Reads a tokenizer.json (and a tokenizer_config.json beside it, when there is one)."""
    @staticmethod
    def from_json(tokenizer_json: str, tokenizer_config_json: str = "") -> "Tokenizer":
        """A tokenizer from the text of a tokenizer.json (and of a tokenizer_config.json)."""
    def encode(self, text: str, add_special_tokens: bool = True, *, max_tokens: Optional[int] = None) -> List[int]:
        """Token ids of `text`; add_special_tokens applies the post-processor (a bos, for instance).
        max_tokens: UsageError ('more than N tokens') as soon as the ids pass it."""
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of `ids`; UsageError for an id outside the vocabulary."""
    def apply_chat_template(self, messages: Sequence[_Message], add_generation_prompt: bool = True) -> str:
        """Renders `messages` ({'role', 'content'} dicts) with the tokenizer's chat template."""
    def token(self, id: int) -> str:
        """The vocabulary string of an id."""
    def token_id(self, token: str) -> Optional[int]:
        """The id of a vocabulary string, or None."""
    def is_special(self, id: int) -> bool:
        """Whether the id is a special added token."""
    @property
    def vocab_size(self) -> int:
        """Number of ids."""
    @property
    def bos_id(self) -> Optional[int]:
        """The beginning-of-sequence id, or None."""
    @property
    def eos_id(self) -> Optional[int]:
        """The end-of-sequence id, or None."""
    @property
    def chat_template(self) -> str:
        """The chat template's source (empty when none)."""

class Generation:
    """What the last generation of a Runner produced."""

    @property
    def text(self) -> str:
        """The decoded text (stop strings cut off)."""
    @property
    def tokens(self) -> List[int]:
        """The sampled token ids."""
    @property
    def stop_reason(self) -> str:
        """eos, stop_token, stop_string, length, context_full or stopped."""
    @property
    def stats(self) -> Dict[str, float]:
        """Timings (ms), token counts, speeds, peak memory, and steps, drafted and accepted tokens."""

class Runner:
    """Generates text with a program, keeping its context from call to call."""

    def __init__(
        self,
        path: Optional[_Path] = None,
        threads: Optional[int] = None,
        *,
        isa: Optional[str] = None,
        active_rows: Optional[bool] = None,
        fold_ops: Optional[bool] = None,
        huge_pages: Optional[bool] = None,
        idle_prefetch: Optional[bool] = None,
        max_buffer_mib: Optional[int] = None,
    ) -> None:
        """Loads the program at `path` (None: the default program) with `threads` threads (None: all).

        Runtime options (None: the environment's setting): isa ('scalar', 'avx2', 'avx2-vnni',
        'avx512', 'avx512-vnni', 'avx512-vnni-512') caps the kernels' ISA; active_rows, fold_ops, huge_pages, idle_prefetch switch those optimisations;
        max_buffer_mib bounds the buffers a program may ask for."""
    def generate(
        self,
        prompt: _Prompt,
        *,
        max_tokens: Optional[int] = None,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repeat_penalty: float = 1.0,
        seed: int = 0,
        stop: _Stop = None,
        ignore_eos: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
        lookup: Optional[int] = None,
        draft: Optional[_Path] = None,
        draft_max: Optional[int] = None,
    ) -> str:
        """Continues the context with `prompt` (text or token ids); returns the generated text."""
    def chat(
        self,
        messages: Sequence[_Message],
        *,
        max_tokens: Optional[int] = None,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repeat_penalty: float = 1.0,
        seed: int = 0,
        stop: _Stop = None,
        ignore_eos: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
        lookup: Optional[int] = None,
        draft: Optional[_Path] = None,
        draft_max: Optional[int] = None,
    ) -> str:
        """Answers a conversation rendered with the chat template; the context starts over with it."""
    def prefill(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """Feeds ids without sampling; the next-token logits as a read-only view, valid until the next step."""
    def decode(self, id: int) -> npt.NDArray[np.float32]:
        """Feeds one token with a decode step; the next-token logits as prefill() returns them."""
    def reset(self) -> None:
        """Forgets the context."""
    def rewind(self, n: int) -> None:
        """Forgets the last n tokens of the context."""
    def stop(self) -> None:
        """Ends the running generation at its next token; safe from any thread."""
    @property
    def position(self) -> int:
        """Tokens the model has seen."""
    @property
    def context(self) -> List[int]:
        """The context's token ids: those fed and the pending sampled one."""
    @property
    def model(self) -> Dict[str, Any]:
        """What the runner knows of the model."""
    @property
    def tokenizer(self) -> Optional[Tokenizer]:
        """The program's tokenizer, or None."""
    @property
    def load_ms(self) -> float:
        """Milliseconds the load took."""
    @property
    def last(self) -> Optional[Generation]:
        """The last generate() or chat() result."""
