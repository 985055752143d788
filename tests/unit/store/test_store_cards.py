"""Table ``cards``: the encoders' family groups and datasets' label names travel in the store,
and a store written before the table existed still reads (groups left out with a note)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from crsbench.stats.operating_points import output_names
from crsbench.stats.shift import default_groups
from crsbench.store import CardFacts, load_runs, read_card_facts
from crsbench.store.cards import ENCODER_GROUP_COLUMN
from crsbench.testing.simulated_store import SIMULATED_CONFIG_HASH, simulate_runs, split_card_facts


def _write(store_dir: Path, facts: CardFacts | None) -> pd.DataFrame:
    from crsbench.store.writer import ResultsStore

    rows = simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=1)
    frame, _ = split_card_facts(rows)
    with ResultsStore(store_dir, SIMULATED_CONFIG_HASH, config_json="{}") as store:
        store.append_frame(frame)
        if facts is not None:
            store.record_cards(facts)
    return frame


def test_cards_round_trip_and_groups_reach_the_analyses(tmp_path: Path) -> None:
    facts = CardFacts({"resnet50": "general", "vit_b16": "baseline", "clip": "medical"},
                      {"isic2019": ("MEL", "NV")})  # fmt: skip
    _write(tmp_path, facts)
    back = read_card_facts(tmp_path)
    assert back == CardFacts(dict(facts.encoder_groups), {"isic2019": ("MEL", "NV")})
    runs = load_runs(tmp_path)
    assert dict(zip(runs["encoder"], runs[ENCODER_GROUP_COLUMN], strict=True)) == dict(
        facts.encoder_groups
    )
    # a baseline is neither general nor medical (the protocol's COMPARISON_GROUP)
    assert default_groups(["resnet50", "vit_b16", "clip"], runs) == {
        "resnet50": "general", "vit_b16": "baseline", "clip": "medical"}  # fmt: skip


def test_recording_twice_replaces_the_fact(tmp_path: Path) -> None:
    from crsbench.store.writer import ResultsStore

    _write(tmp_path, CardFacts({"resnet50": "general"}))
    with ResultsStore(tmp_path, SIMULATED_CONFIG_HASH, config_json="{}") as store:
        store.record_cards(CardFacts({"resnet50": "medical"}))
    assert read_card_facts(tmp_path) == CardFacts({"resnet50": "medical"}, {})


def test_an_old_store_without_cards_reads_and_says_why_groups_are_missing(tmp_path: Path) -> None:
    _write(tmp_path, None)
    assert read_card_facts(tmp_path) is None
    runs = load_runs(tmp_path)
    assert ENCODER_GROUP_COLUMN not in runs
    with pytest.warns(UserWarning, match=r"no 'cards' table.*crsbench run"):
        assert default_groups(["resnet50"], runs) == {}


def test_output_names_fall_back_to_positions_when_the_store_has_none() -> None:
    assert output_names(("MEL", "NV"), 2) == ["MEL", "NV"]
    assert output_names((), 3) == ["output 0", "output 1", "output 2"]
    assert output_names(("MEL",), 2) == ["output 0", "output 1"]
