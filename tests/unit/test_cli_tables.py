"""How a table's columns share a terminal (``cli.tables.fit``, decision 30)."""

from jobarchive.cli.tables import SEPARATOR, Column, fit

COLUMNS = (Column("name", 0), Column("message", 2, least=10), Column("uid", 1))
NATURAL = (20, 50, 36)


def test_with_room_or_no_limit_every_column_has_its_natural_width() -> None:
    assert fit(COLUMNS, NATURAL, None) == list(NATURAL)
    assert fit(COLUMNS, NATURAL, 200) == list(NATURAL)


def test_narrow_a_cuttable_column_gives_way_first_and_never_below_its_least() -> None:
    widths = fit(COLUMNS, NATURAL, 80)
    assert widths == [20, 80 - 20 - 36 - 2 * SEPARATOR, 36]
    assert fit(COLUMNS, NATURAL, 20 + 36 + 10 + 2 * SEPARATOR) == [20, 10, 36]


def test_narrower_still_a_column_is_left_out_and_a_uid_is_never_cut() -> None:
    assert fit(COLUMNS, NATURAL, 60) == [20, None, 36]
    assert fit(COLUMNS, NATURAL, 40) == [20, 40 - 20 - SEPARATOR, None]


def test_the_first_column_is_shown_whole_even_where_it_does_not_fit() -> None:
    assert fit(COLUMNS, (90, 50, 36), 80) == [90, None, None]
