"""The rules of a log's cap: where the head ends, how much is cut, the marker, when to look."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.logcap import (
    LATEST,
    SOONEST,
    bytes_to_cut,
    head_end,
    marker,
    marker_cut,
    next_look,
)

MiB = 1 << 20
BLOCK = 4096


def test_the_head_is_half_the_cap_down_to_a_whole_block() -> None:
    """File systems cut whole blocks, so the head ends on a block boundary."""
    assert [512 * 1024, 32 * MiB, 8192, BLOCK] == [
        head_end(MiB, BLOCK), head_end(64 * MiB, BLOCK), head_end(5 * BLOCK + 100, BLOCK),
        head_end(BLOCK, BLOCK)]


def test_the_marker_says_how_many_bytes_were_cut_and_under_which_cap() -> None:
    """One line of its own, whatever the head's last line was."""
    assert b"\n[cronduit: 123456789 bytes cut here; max_log 64MiB]\n" == marker(
        123456789, 64 * MiB)


def test_the_count_is_read_back_from_the_bytes_the_marker_ends() -> None:
    """A second attempt, or another supervisor, adds to the count in the file."""
    head_tail = b"x" * 200 + marker(4096, MiB)
    assert [4096, 0, 0] == [
        marker_cut(head_tail),
        marker_cut(b"x" * 200),
        marker_cut(head_tail + b"more"),  # a marker that does not end the head is none
    ]


def test_a_log_within_its_cap_is_not_cut() -> None:
    """Up to the cap itself, nothing goes, running or ended."""
    assert [0, 0] == [bytes_to_cut(MiB, MiB, BLOCK, final=False),
                      bytes_to_cut(MiB, MiB, BLOCK, final=True)]


def test_a_running_cut_leaves_the_head_and_an_eighth_of_the_cap() -> None:
    """While the job writes, the tail is cut to an eighth so the next cut is far off."""
    kept = 5 * MiB
    cut = bytes_to_cut(kept, MiB, BLOCK, final=False)
    assert (0, MiB // 2 + MiB // 8) == (cut % BLOCK, kept - cut)


def test_a_log_that_will_pass_its_cap_before_the_next_look_is_cut_now() -> None:
    """A fast writer is cut ahead of the cap, not only once it is past."""
    kept = MiB - 1000
    left = kept - bytes_to_cut(kept, MiB, BLOCK, final=False, coming=2000)
    assert (0, True) == (bytes_to_cut(kept, MiB, BLOCK, final=False),
                         0 <= left - (MiB // 2 + MiB // 8) < BLOCK)


def test_a_final_cut_leaves_as_much_tail_as_fits() -> None:
    """Once the job has ended, only the excess goes, in whole blocks."""
    kept = MiB + 1
    assert BLOCK == bytes_to_cut(kept, MiB, BLOCK, final=True)


@given(kept=st.integers(min_value=MiB + 1, max_value=64 * MiB),
       cap=st.integers(min_value=MiB // 4, max_value=MiB), final=st.booleans())
def test_every_cut_is_whole_blocks_short_of_the_end_and_brings_the_log_within_its_cap(
    kept: int, cap: int, final: bool,
) -> None:
    """Whatever the sizes: whole blocks, less than the tail, and the log left fits."""
    cut = bytes_to_cut(kept, cap, BLOCK, final=final)
    assert (0, True, True) == (
        cut % BLOCK, 0 < cut < kept - head_end(cap, BLOCK), kept - cut <= cap)


def test_a_log_is_looked_at_again_before_its_growth_could_reach_the_cap() -> None:
    """Half the time to the cap, between the soonest and the latest wait."""
    assert [0.05, SOONEST, LATEST, LATEST] == [
        next_look(10 * MiB, 100 * MiB),
        next_look(MiB, 1000 * MiB),
        next_look(64 * MiB, 1000.0),
        next_look(64 * MiB, 0.0),
    ]
