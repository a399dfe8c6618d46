"""AWS EFA interface count rules: mandatory for the types of groups that run RDMA, advisory for
the rest.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

from aws_rule_args import LT, efa_interfaces, validate

REQUIRED = {"rdmaInUseInstanceTypes": ["p5.48xlarge"]}


def test_efa_full_layout_passes():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(32)}
    assert validate("aws-efa-interface-count", LT, props, REQUIRED) == []


def test_efa_missing_interfaces_fail_when_required():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(31)}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert message.startswith("p5.48xlarge takes 32 EFA interfaces but the template declares 31")


def test_efa_duplicate_card_and_missing_primary_fail():
    cards = [0, *range(1, 31), 30]
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(32, cards)}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert "use each network_card_index 0..31 exactly once" in message
    interfaces = efa_interfaces(32)
    interfaces[0]["deviceIndex"] = 1
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": interfaces}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert "set device_index = 0 on card 0" in message


def test_efa_required_on_type_without_efa_fails():
    props = {"instanceType": "g4dn.xlarge", "networkInterfaces": []}
    (message,) = validate(
        "aws-efa-interface-count", LT, props, {"rdmaInUseInstanceTypes": ["g4dn.xlarge"]}
    )
    assert "no EFA in the catalog, yet its group runs RDMA" in message


def test_efa_count_rules_split_required_and_other_types():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": []}
    assert validate("aws-efa-interface-count", LT, props, {"rdmaInUseInstanceTypes": []}) == []
    (message,) = validate("aws-efa-interface-count-advisory", LT, props, {"rdmaInUseInstanceTypes": []})
    assert "takes 32 EFA interfaces but the template declares 0" in message
    assert validate("aws-efa-interface-count-advisory", LT, props, REQUIRED) == []
