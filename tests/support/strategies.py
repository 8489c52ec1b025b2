"""Hypothesis strategies shared by the property-based tests."""

from hypothesis import strategies as st

# Every Unicode plane, lone surrogates included, and the strings that break SQL or JSON.
hostile_text = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), max_size=50),
    st.sampled_from(
        [
            "'; DROP TABLE job_info; --",
            "\\",
            '"',
            "\x00",
            "\ud800",
            "Robert'); --",
            "%s",
            "?",
            "...",
        ]
    ),
    st.integers(min_value=200, max_value=260).map(lambda n: "n" * n),
)
