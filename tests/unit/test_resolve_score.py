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
        # the morphology gives the nominative first, so an inflected form is the same key
        ("Сбербанка", "Сбербанк", "exact-normalized"),
        ("Газпром нефти", "Газпром нефть", "inflection"),
        ("IAM", "Identity and Access Management", "acronym"),
        ("J. Smith", "John Smith", "initials"),
        ("Kuberentes", "Kubernetes", "embedding+string"),
        ("ГитХаб", "GitHub", "transliteration"),
        ("Раст", "Rust", "transliteration"),
        ("Волт", "Vault", "transliteration"),
        ("Виндоус", "Windows", "transliteration"),
        ("Эйрфлоу", "Airflow", "transliteration"),
        ("Кликхаус", "ClickHouse", "transliteration"),
        ("Прометей", "Prometheus", "transliteration"),
        ("Docker Engine", "Docker", "exact-core"),
        ("Jenkins CI", "Jenkins", "exact-core"),
        ("Kaspersky Lab", "Kaspersky", "exact-core"),
        ("audit logging service", "AuditLogService", "derivation"),
        ("Rate Limiting Service", "RateLimiter", "derivation"),
        ("Яндекса", "Яндекс", "exact-normalized"),
        # across languages: the concept key (lexicon), abbreviations in either script
        ("сервис аутентификации", "AuthService", "translation"),
        ("Министерство финансов Российской Федерации", "Ministry of Finance", "translation"),
        ("Минфин", "Ministry of Finance", "translation"),
        ("служба ИБ", "Служба информационной безопасности", "translation"),
        ("1С:Предприятие", "1C:Enterprise", "translation"),
        ("Лаборатории Касперского", "Kaspersky", "transliteration"),
        ("ОАО «РЖД»", "RZD", "transliteration"),
        ("ТК РФ", "Трудовой кодекс Российской Федерации", "translation"),
        ("ТК РФ", "Labour Code of the Russian Federation", "translation"),
        ("ТКРФ", "Трудовой кодекс Российской Федерации", "acronym"),
        ("Россия", "Russian Federation", "translation"),  # the country itself
        ("Банк России", "Bank of Russia", "exact-core"),  # the country is generic there
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
        # identifiers that differ in one code or digit (seen merged on real data)
        ("k8s-eu-1", "k8s-ru-1"),
        ("k8s-eu-1", "k8s-us-1"),
        ("k8s-eu-1", "k8s-eu-2"),
        ("k8s-ru-1", "k8s-1"),
        # Russian hard negatives: another concept, another quoted name, another code
        ("сервис аутентификации", "сервис авторизации"),
        ("сервис аутентификации", "AuthzService"),
        ("Банк России", "Банк «Россия»"),
        ("Банк России", "Bank Rossiya"),
        ("Минфин", "Минэкономразвития"),
        ("ТК РФ", "ГК РФ"),
        ("Трудовой кодекс", "Налоговый кодекс"),
        ("152-ФЗ", "149-ФЗ"),
        ("Газпром", "Газпромбанк"),
        ("Газпром нефть", "Газпромбанк"),
        ("Контур.Диадок", "Контур.Экстерн"),
        ("1С:Предприятие", "1С:Бухгалтерия"),
        ("Положение об оплате труда", "Положение о премировании"),
        ("платёжный шлюз", "API-шлюз"),
        ("PostgreSQL 13", "PostgreSQL 16"),
        ("eu-west", "eu-central"),
        ("eu-west-1", "us-west-1"),
        ("v1.27", "v1.29"),
        ("J. Smith", "A. Smith"),
        # the skeleton is only for another script, and only with 3+ consonants
        ("Эппл", "Apple"),
        ("Rust", "Rest"),
        # derivational endings only between descriptive (multi-word) names
        ("Docker", "Dock"),
        ("Packer", "Pack"),
    ],
)
def test_hard_negatives_stay_below_the_merge_threshold(a: str, b: str) -> None:
    score = _score(a, b)
    assert score.value < MERGE, score


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Python3", "Питон 3"),  # glued and spaced versions carry the same codes
        ("152-FZ", "ФЗ-152"),
        ("v1.27", "v1.27.0"),
        ("AWS S3", "S3"),  # vendors are not codes
        ("ЦБ РФ", "ЦБ"),  # a generic token is not a code outside identifiers
    ],
)
def test_equal_codes_do_not_block(a: str, b: str) -> None:
    assert N.form(a).codes == N.form(b).codes
    assert _score(a, b).value >= MERGE


def test_codes_of_an_identifier() -> None:
    assert N.form("k8s-ru-1").codes == ("1", "ru")  # "ru" is generic, but not in identifiers
    assert N.form("Ozon.ru").codes == ()
    assert N.form("J. Smith").codes == ("j",)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Петров Иван Иванович", "И. И. Петров"),
        ("Петров И.И.", "Ivan Petrov"),
        ("Петрову И. И.", "Петров Иван Иванович"),  # dative, back to the nominative
        ("Ivan Petrov", "Петров Иван Иванович"),
        ("Анны Волковой", "Анна Сергеевна Волкова"),  # genitive, a woman's surname kept
        ("Пётр Ильич Чайковский", "Tchaikovsky P.I."),
        ("Fedor Dostoyevsky", "Фёдор Михайлович Достоевский"),
        ("Aleksei Sokolov", "А. Ю. Соколов"),
    ],
)
def test_people_meet_by_surname_and_initials(a: str, b: str) -> None:
    v = E.embed([a, b])
    score = score_pair(N.form(a), N.form(b), float(v[0] @ v[1]), MERGE, person=True)
    assert score.value >= MERGE
    assert score.method == "person-name"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Петров И. И.", "Петрова И. И."),  # a surname's gender: two people
        ("Петровой И. И.", "Петров Иван Иванович"),
        ("Ivan Petrov", "Igor Petrov"),
        ("Петров И. И.", "Петров А. И."),
        ("Irina Petrova", "Ivan Petrov"),
    ],
)
def test_people_stay_apart_by_gender_and_initials(a: str, b: str) -> None:
    v = E.embed([a, b])
    score = score_pair(N.form(a), N.form(b), float(v[0] @ v[1]), MERGE, person=True)
    assert score.value < MERGE, score
