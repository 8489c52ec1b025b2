"""How a table's columns share a terminal (``cli.widths.fit``, decision 30)."""

from jobarchive.cli.widths import SEPARATOR, Column, cluster, fit, reason

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


def test_a_kept_column_is_never_left_out_and_is_cut_to_its_least() -> None:
    kept = (Column("name", 0), Column("message", 2, least=10, kept=True), Column("uid", 1))
    assert fit(kept, NATURAL, 60) == [20, 60 - 20 - SEPARATOR, None]
    # Where the name and the kept ones pass the room, the line does (the terminal wraps).
    assert fit(kept, (90, 50, 36), 80) == [90, 10, None]


def test_a_remark_cut_keeps_its_reason_and_exit_code() -> None:
    remark = "OOMKilled (exit code 137): the container used more memory than its limit"
    assert reason(remark, 20) == "OOMKilled (exit 137)"
    assert reason(remark, 30) == remark.replace("exit code", "exit")
    assert reason("Error (exit code 1)=10.0; OOMKilled (exit code 137)=5.1", 20) == (
        "Error (exit 1)=10.0; OOMKilled (exit 137)=5.1"
    )
    assert reason("Evicted: the node was low on memory", 10) == "Evicted"


def test_an_unnamed_cluster_is_shown_by_its_uids_first_characters() -> None:
    uid = "d37688f7-f8ba-4d85-8ff1-758281d36dc8"
    assert cluster(uid, wide=False) == "d37688f7"
    assert cluster(uid, wide=True) == uid
    assert cluster("prod-eu-1", wide=False) == "prod-eu-1"
