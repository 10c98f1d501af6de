"""Where an SQLite file may still hold erased bytes: the unused space of its live b-tree pages.

``secure_delete`` zeroes a row's cell when it is deleted and a whole page when it is freed, but
not every old byte: when SQLite rebalances a b-tree (a row grew, a page split or merged) it
rebuilds the pages from their cells and leaves the bytes that were there before in the page's
unallocated space, between the cell pointer array and the cell content area (``rebuildPage``
in btree.c does not clear it). Those stale bytes are old copies of rows that lived on the page,
and they stay after the row itself is deleted, so an erased trace's text or its user's name can
survive in a page that still holds other scopes' rows. Only rewriting the file (VACUUM) clears
them: SQL cannot write a page's free space.

``unused_space`` reads the main file (SQLite's documented file format, read-only) and counts the
non-zero bytes in every b-tree page's unallocated space and free blocks. Zero means no page keeps
an old byte there. Not every such byte is a row's: a delete leaves the last cell pointer and a
free block's 4-byte header behind, so any file that saw a delete counts some; the count is what
what the erasure tests measure (tests/test_erasure_free_space.py): the file format is
read by the tests, never by zeromem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The first byte of a b-tree page's header (https://sqlite.org/fileformat2.html, 1.6):
# interior index, interior table, leaf index, leaf table; any other value is an overflow,
# freelist or pointer-map page, which secure_delete zeroes when it is freed.
_BTREE_PAGE_TYPES = {0x02: 12, 0x05: 12, 0x0A: 8, 0x0D: 8}  # type -> header size
_FILE_HEADER = 100  # page 1 starts with the database header
_READ_PAGES = 256  # pages read per call


@dataclass(frozen=True, slots=True)
class UnusedSpace:
    """Non-zero bytes found in the unused space of b-tree pages: how many pages, how many
    bytes (0 and 0 when every such byte is zero), and how many pages were read."""

    pages: int
    bytes: int
    pages_read: int

    @property
    def clean(self) -> bool:
        return self.bytes == 0


def unused_space(path: str | Path) -> UnusedSpace:
    """Count the non-zero bytes in the unused space of every b-tree page of the SQLite file at
    ``path`` (unallocated space and the bodies of free blocks).

    The caller makes the file stable while it reads (it holds the write lock after a WAL
    checkpoint), so no page changes under it.
    """
    dirty_pages = dirty_bytes = pages_read = 0
    with open(path, "rb") as file:
        header = file.read(_FILE_HEADER)
        if len(header) < _FILE_HEADER or not header.startswith(b"SQLite format 3\x00"):
            return UnusedSpace(0, 0, 0)
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        usable = page_size - header[20]
        file.seek(0)
        number = 0
        while chunk := file.read(page_size * _READ_PAGES):
            for start in range(0, len(chunk) - page_size + 1, page_size):
                number += 1
                page = chunk[start:start + page_size]
                found = _page_unused_nonzero(page, _FILE_HEADER if number == 1 else 0, usable)
                pages_read += 1
                if found:
                    dirty_pages += 1
                    dirty_bytes += found
    return UnusedSpace(dirty_pages, dirty_bytes, pages_read)


def _page_unused_nonzero(page: bytes, hdr: int, usable: int) -> int:
    """Non-zero bytes in the unused space of one page (0 for a page that is not a b-tree page
    or whose header does not add up: nothing to check there)."""
    header_size = _BTREE_PAGE_TYPES.get(page[hdr])
    if header_size is None:
        return 0
    cells = int.from_bytes(page[hdr + 3:hdr + 5], "big")
    content = int.from_bytes(page[hdr + 5:hdr + 7], "big") or 65536
    gap_start = hdr + header_size + 2 * cells
    if not gap_start <= content <= usable:
        return 0  # not a b-tree page after all (or a damaged one): SQLite's checks own that
    found = _nonzero(page[gap_start:content])
    block = int.from_bytes(page[hdr + 1:hdr + 3], "big")
    seen = 0
    while block and content <= block <= usable - 4 and seen < usable // 4:
        size = int.from_bytes(page[block + 2:block + 4], "big")
        found += _nonzero(page[block + 4:min(block + size, usable)])  # after its own 4-byte header
        next_block = int.from_bytes(page[block:block + 2], "big")
        if next_block and next_block <= block:
            break  # free blocks are in increasing order; anything else is damage
        block, seen = next_block, seen + 1
    return found


def _nonzero(data: bytes) -> int:
    return len(data) - data.count(0)
