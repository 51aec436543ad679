"""spaces/yourbisect.py: which refs git reads from HEAD."""

import pytest

from bisectk.spaces.yourbisect import names_head


@pytest.mark.parametrize("ref", ["HEAD", "@", "HEAD~3", "HEAD^2", "@~1", "@{1}", "HEAD@{2}", "@^"])
def test_refs_read_from_head(ref):
    assert names_head(ref)


@pytest.mark.parametrize("ref", ["main", "v1.0", "HEADS", "head", "refs/bisect/bad", "a08415c0", "@{-1}", "x@{1}",
                                 "ORIG_HEAD", "FETCH_HEAD"])
def test_refs_not_read_from_head(ref):
    assert not names_head(ref)
