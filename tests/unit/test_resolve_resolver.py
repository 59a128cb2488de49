"""The resolver end to end (offline): merges, hard negatives, ids, incremental runs, audit."""

from __future__ import annotations

import re

import pytest

from kg.errors import ResolutionError
from kg.models import KnownEntity, Mention
from kg.resolve import Resolution, Resolver, make_embedder
from kg.settings import ResolveSettings

SETTINGS = ResolveSettings()


def resolve(mentions: list[Mention], known: list[KnownEntity] | None = None) -> Resolution:
    resolver = Resolver(SETTINGS, make_embedder(SETTINGS))
    if known:
        resolver.add_known(known)
    return resolver.resolve(mentions)


def ids_of(res: Resolution, mentions: list[Mention], name: str) -> set[str]:
    return {i for m, i in zip(mentions, res.entity_ids, strict=True) if m.name == name}


MUST_MERGE = [
    ("Service", ["auth-svc", "AuthService", "auth_service", "Auth Service"]),
    ("Technology", ["K8s", "Kubernetes", "Кубернетес", "kube"]),
    ("Database", ["Postgres", "PostgreSQL", "Постгрес"]),
    ("Technology", ["Кафка", "Kafka", "Apache Kafka", "Кафке"]),
    ("Concept", ["IAM", "Identity and Access Management"]),
    ("Company", ["Сбербанк", "Sberbank", "ПАО Сбербанк", "Сбербанка"]),
    ("Organization", ["Министерство внутренних дел", "МВД", "МВД России"]),
]

MUST_SPLIT = [
    (("AuthService", "Service"), ("AuthzService", "Service")),
    (("Java", "Language"), ("JavaScript", "Language")),
    (("Apple", "Company"), ("apple", "Food")),
    (("PaymentService", "Service"), ("PaymentsGateway", "Service")),
    (("PM", "Role"), ("PM", "Concept")),
    (("Python 2", "Language"), ("Python 3", "Language")),
    (("Kafka", "Technology"), ("Franz Kafka", "Person")),
]


@pytest.mark.parametrize(("etype", "names"), MUST_MERGE)
def test_must_merge(etype: str, names: list[str]) -> None:
    mentions = [Mention(n, etype) for n in names]
    res = resolve(mentions)
    assert len(set(res.entity_ids)) == 1, res.merges
    entity = res.entities[res.entity_ids[0]]
    assert set(names) <= {entity.name, *entity.aliases}  # every surface form kept


@pytest.mark.parametrize(("a", "b"), MUST_SPLIT)
def test_hard_negatives_stay_apart(a: tuple[str, str], b: tuple[str, str]) -> None:
    res = resolve([Mention(*a), Mention(*b)])
    assert res.entity_ids[0] != res.entity_ids[1]


def test_all_hard_negatives_together_stay_apart() -> None:
    mentions = [Mention(*side) for pair in MUST_SPLIT for side in pair]
    res = resolve(mentions)
    for i in range(0, len(mentions), 2):
        assert res.entity_ids[i] != res.entity_ids[i + 1], mentions[i]


def test_extractor_aliases_join_what_spelling_cannot() -> None:
    mentions = [
        Mention("OAuth Server", "Service"),
        Mention("AuthService", "Service", aliases=("OAuth Server",)),
        Mention("auth-svc", "Service"),
    ]
    res = resolve(mentions)
    assert len(set(res.entity_ids)) == 1
    methods = {m.mention: m.method for m in res.merges}
    assert methods["AuthService"] == "alias"
    # without the alias, spelling alone keeps them apart (and says so honestly)
    bare = resolve([Mention("OAuth Server", "Service"), Mention("AuthService", "Service")])
    assert bare.entity_ids[0] != bare.entity_ids[1]


def test_one_acronym_two_expansions_of_one_type_is_ambiguous() -> None:
    mentions = [
        Mention("Identity and Access Management", "Concept"),
        Mention("Internet Access Monitor", "Concept"),
        Mention("IAM", "Concept"),
    ]
    res = resolve(mentions)
    assert len(set(res.entity_ids)) == 3


def test_an_acronym_anchor_takes_only_one_expansion() -> None:
    mentions = [
        Mention("IAM", "Concept"),
        Mention("Identity and Access Management", "Concept"),
        Mention("Internet Access Monitor", "Concept"),
    ]
    res = resolve(mentions)
    assert res.entity_ids[0] == res.entity_ids[1] != res.entity_ids[2]


def test_no_chaining_through_members() -> None:
    # Each step is a plausible typo of the previous one; the last is far from the anchor.
    chain = ["Kubernetes", "Kuberentes", "Kuberantes", "Kubarantas", "Kabarantas"]
    res = resolve([Mention(n, "Technology") for n in chain])
    anchor = res.entity_ids[0]
    assert res.entity_ids[1] == anchor
    assert res.entity_ids[-1] != anchor


def test_ids_are_deterministic_and_well_formed() -> None:
    mentions = [Mention(n, t) for t, names in MUST_MERGE for n in names]
    first, second = resolve(mentions), resolve(mentions)
    assert first.entity_ids == second.entity_ids
    assert all(re.fullmatch(r"ent_[0-9a-f]{16}", i) for i in first.entity_ids)
    assert first.new_ids == set(first.entity_ids)


def test_spelling_variants_get_the_same_id_in_separate_runs() -> None:
    assert (
        resolve([Mention("auth-svc", "Service")]).entity_ids
        == resolve([Mention("AuthService", "Service")]).entity_ids
    )


def test_second_ingest_joins_the_first() -> None:
    mentions = [Mention(n, t) for t, names in MUST_MERGE for n in names]
    first = resolve(mentions)
    known = [
        KnownEntity(e.id, e.name, e.type, tuple(e.aliases), e.description, tuple(e.embedding or ()))
        for e in first.entities.values()
    ]
    again = resolve(mentions, known)
    assert again.entity_ids == first.entity_ids
    assert again.new_ids == set()
    assert {m.method for m in again.merges} == {"known"}
    later = resolve(
        [Mention("kubernetes", "Technology"), Mention("Kuberentes", "Technology")], known
    )
    assert later.entity_ids[0] == later.entity_ids[1] == first.entity_ids[4]


def test_known_entities_without_embeddings_keep_their_id_and_name() -> None:
    known = [KnownEntity("ent_custom", "Kubernetes", "Technology", aliases=("k8s",))]
    res = resolve([Mention("K8s", "Technology"), Mention("Кубернетес", "Technology")], known)
    assert res.entity_ids == ["ent_custom", "ent_custom"]
    entity = res.entities["ent_custom"]
    assert entity.name == "Kubernetes"
    assert {"k8s", "K8s", "Кубернетес"} <= set(entity.aliases)
    assert entity.embedding is not None
    assert len(entity.embedding) == SETTINGS.embedding_dim
    assert res.new_ids == set()


def test_known_types_do_not_mix() -> None:
    known = [KnownEntity("ent_apple_co", "Apple", "Company")]
    res = resolve([Mention("apple", "Food"), Mention("Apple Inc.", "Company")], known)
    assert res.entity_ids[0] != "ent_apple_co"
    assert res.entity_ids[1] == "ent_apple_co"


def test_canonical_name_rule() -> None:
    mentions = [
        Mention("k8s", "Technology"),
        Mention("Kubernetes", "Technology"),
        Mention("k8s", "Technology"),
        Mention("K8s", "Technology"),
    ]
    assert (
        resolve(mentions).entities[resolve(mentions).entity_ids[0]].name == "k8s"
    )  # most frequent
    tie = resolve([Mention("auth-svc", "Service"), Mention("AuthService", "Service")])
    assert tie.entities[tie.entity_ids[0]].name == "AuthService"  # tie: longest


def test_every_surface_form_is_audited() -> None:
    mentions = [
        Mention(n, "Service") for n in ["AuthService", "auth-svc", "AuthService", "AuthzService"]
    ]
    res = resolve(mentions)
    audited = {(m.mention, m.entity_id) for m in res.merges}
    assert audited == set(zip([m.name for m in mentions], res.entity_ids, strict=True))
    for record in res.merges:
        assert 0.0 <= record.score <= 1.0
        assert record.canonical == res.entities[record.entity_id].name


def test_description_longest_wins() -> None:
    mentions = [
        Mention("Kafka", "Technology", description="A log."),
        Mention("Apache Kafka", "Technology", description="A distributed event log."),
    ]
    res = resolve(mentions)
    assert res.entities[res.entity_ids[0]].description == "A distributed event log."


def test_empty_input_and_empty_names() -> None:
    res = resolve([])
    assert res.entity_ids == []
    assert res.entities == {}
    assert res.merges == []
    with pytest.raises(ResolutionError):
        resolve([Mention("  ", "Service")])


def test_constructor_reads_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = ResolveSettings(abbreviations_file=tmp_path / "missing.yaml")
    Resolver(settings, make_embedder(settings))  # no error until first use
