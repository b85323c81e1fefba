"""A protocol's groups drive FairSWAP's group key and the fused sampler (paper 001 Sec. III-C, V)."""

import dataclasses
from pathlib import Path

import pytest

from fairforensics.configs import ConfigError
from fairforensics.fairness.protocols import (
    SubProtocol,
    load_protocol,
    protocol_train_overrides,
    run_protocol,
)
from fairforensics.training.config import load_train_config
from tests.test_fairness_protocols import celeb_index  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[1]
PROTOCOLS = REPO / "configs" / "fairness"


@pytest.mark.parametrize(
    ("name", "key"),
    [("protocol_1", "gender"), ("protocol_2", "occlusion"), ("protocol_3", "gender")],
)
def test_each_protocol_swaps_across_its_own_groups(name, key):
    protocol = load_protocol(PROTOCOLS / f"{name}.yaml")
    assert protocol.swap_key == key
    for sub in protocol.subprotocols:
        overrides = protocol_train_overrides(protocol, sub)
        assert overrides["train"]["fairswap"]["group_key"] == key
        # the overrides are a valid trainer layer and reach the resolved config
        cfg = load_train_config("pad_resnet50", overrides=overrides)
        assert cfg.train.fairswap.group_key == key


def test_fused_training_oversamples_label_x_gender_and_single_group_runs_do_not():
    protocol = load_protocol(PROTOCOLS / "protocol_1.yaml")
    by_id = {s.id: protocol_train_overrides(protocol, s)["train"] for s in protocol.subprotocols}
    assert by_id["1.1"]["sampler"] == "class_group_balanced"
    assert by_id["1.1"]["group_key"] == "gender"
    assert "sampler" not in by_id["1.2"] and "sampler" not in by_id["1.3"]
    p2 = load_protocol(PROTOCOLS / "protocol_2.yaml")
    fused = protocol_train_overrides(p2, SubProtocol(id="2.1"))["train"]
    assert (fused["sampler"], fused["group_key"], fused["fairswap"]["group_key"]) == (
        "class_group_balanced",
        "gender",
        "occlusion",
    )


def test_explicit_key_and_protocol_train_section():
    protocol = load_protocol(
        PROTOCOLS / "protocol_2.yaml",
        overrides=["fairswap_group_key=beard", "train={train: {epochs: 3, sampler: shuffle}}"],
    )
    over = protocol_train_overrides(protocol, protocol.subprotocols[0])["train"]
    assert over["fairswap"]["group_key"] == "beard"
    assert over["epochs"] == 3 and over["sampler"] == "shuffle"  # the protocol's train: wins


def test_a_group_key_that_could_disagree_is_rejected(tmp_path):
    with pytest.raises(ConfigError, match="fairswap_group_key"):
        load_protocol(
            PROTOCOLS / "protocol_2.yaml",
            overrides=["train={train: {fairswap: {group_key: gender}}}"],
        )
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "name: x\ntest_attributes: [beard]\ndetectors: [meso4]\nsubprotocols: [{id: a}]\n"
        "fairswap: [false, true]\n"
    )
    with pytest.raises(ConfigError, match="train_attribute or fairswap_group_key"):
        load_protocol(bad)
    bad.write_text(bad.read_text().replace("[false, true]", "[false]"))
    assert load_protocol(bad).swap_key is None


def test_run_protocol_hands_each_training_its_groups(celeb_index, tmp_path):  # noqa: F811
    protocol = load_protocol(PROTOCOLS / "protocol_2.yaml", overrides=["fairswap=[true]"])
    seen = {}

    def record(detector, data_root, dataset, fairswap, out_dir, run_name, configs, overrides):
        seen[dataset] = overrides["train"]
        raise _Stop

    for sub in protocol.subprotocols:
        one = dataclasses.replace(protocol, subprotocols=[sub])
        with pytest.raises(_Stop):
            run_protocol(
                one, celeb_index, "celeb", tmp_path / sub.id, detectors=["lbp_mlp"], train_fn=record
            )
    assert {d: t["fairswap"]["group_key"] for d, t in seen.items()} == {
        "celeb_p2_1": "occlusion",
        "celeb_p2_2": "occlusion",
        "celeb_p2_3": "occlusion",
    }
    assert seen["celeb_p2_1"]["sampler"] == "class_group_balanced"
    assert "sampler" not in seen["celeb_p2_2"]


class _Stop(Exception):
    """Stops a protocol run after its first training call."""
