"""Pair scores: strong evidence high, hard negatives never above the merge threshold."""

from __future__ import annotations

import pytest

from kg.resolve import HashingEmbedder
from kg.resolve.abbreviations import AbbreviationTable
from kg.resolve.normalize import Normalizer
from kg.resolve.score import score_pair

N = Normalizer(AbbreviationTable())
E = HashingEmbedder(256)
MERGE = 0.86


def _score(a: str, b: str):  # type: ignore[no-untyped-def]
    v = E.embed([a, b])
    return score_pair(N.form(a), N.form(b), float(v[0] @ v[1]), MERGE)


@pytest.mark.parametrize(
    ("a", "b", "method"),
    [
        ("auth-svc", "AuthService", "exact-normalized"),
        ("Apache Kafka", "Kafka", "exact-core"),
        ("Докер", "Docker", "transliteration"),
        ("Сбербанка", "Сбербанк", "inflection"),
        ("IAM", "Identity and Access Management", "acronym"),
        ("J. Smith", "John Smith", "initials"),
        ("Kuberentes", "Kubernetes", "embedding+string"),
    ],
)
def test_positives_reach_the_merge_threshold(a: str, b: str, method: str) -> None:
    score = _score(a, b)
    assert score.value >= MERGE
    assert score.method == method


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("AuthService", "AuthzService"),
        ("Java", "JavaScript"),
        ("PaymentService", "PaymentsGateway"),
        ("UserService", "UserProfileService"),
        ("Python 2", "Python 3"),
        ("Gazprom", "Gazprombank"),
        ("Redis", "Redux"),
        ("Google Cloud", "Amazon Cloud"),
        ("React", "React Native"),
        ("ISO 9001", "ISO 27001"),
    ],
)
def test_hard_negatives_stay_below_the_merge_threshold(a: str, b: str) -> None:
    score = _score(a, b)
    assert score.value < MERGE, score
