from jobarchive.core.bounded import Lru, chunks


def test_chunks_cover_every_item_once_in_order_and_none_is_over_the_size() -> None:
    items = list(range(1203))
    pieces = list(chunks(items, 500))
    assert [len(piece) for piece in pieces] == [500, 500, 203]
    assert [item for piece in pieces for item in piece] == items
    assert list(chunks([], 500)) == []


def test_an_lru_forgets_the_least_recently_written_and_says_so() -> None:
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1
    assert not lru.forgot
    lru.put("a", 3)
    lru.put("c", 4)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (3, None, 4)
    assert lru.forgot


def test_removing_from_an_lru_is_not_forgetting() -> None:
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    assert lru.pop("a") == 1
    assert lru.pop("a") is None
    assert lru.get("a") is None
    assert not lru.forgot
