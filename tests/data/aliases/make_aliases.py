# ruff: noqa: E501  (the data table reads best one entity per line)
"""Writes aliases.jsonl, the labelled entity-resolution dataset, deterministically.

Run: ``.venv/bin/python tests/data/aliases/make_aliases.py``.

Each ENTITIES line is ``gold_id | type | surface forms`` with forms separated by ``;``. A form
may end in ``*N`` (seen in N mentions) and carry ``{a/b}``: aliases the extractor listed with
that mention. Forms were written by hand to look like what an LLM extractor returns from
architecture wikis, incident reports and Russian-language documents: spelling conventions,
abbreviations, typos, Russian case endings, transliterations, translations and acronyms.
Some positives are out of reach of any string method (translations, renames, tickers); they
stay in on purpose so the numbers are honest. Hard negatives are separate gold entities.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

ENTITIES = r"""
auth_service | Service | AuthService*3; auth-svc*2; auth_service; Auth Service; authentication service; AuthenticationService; auth-service; Auth-Svc{OAuth Server}; OAuth Server; сервис аутентификации
authz_service | Service | AuthzService*2; authz-svc; authorization service; Authz Service; AuthorizationService; authz_service
payment_service | Service | PaymentService*3; payment-svc; payments service; Payment Service; payment_service; PaymentSvc
payments_gateway | Service | PaymentsGateway*2; payments-gateway; Payments Gateway; payment gateway; PaymentGateway
user_service | Service | UserService*2; user-service; users service; User Svc; user_svc
user_profile_service | Service | UserProfileService; user-profile-service; profile service{UserProfileService}; Profile Service
notification_service | Service | NotificationService*2; notification-svc; notifications service; Notification Service; notif-svc
notification_worker | Service | NotificationWorker; notification-worker; notifications worker
order_service | Service | OrderService*2; order-service; orders service; Order Svc; OrdersService
orders_db | Database | orders-db*2; OrdersDB; orders database; Orders DB; orders_db
billing_service | Service | BillingService*2; billing-svc; billing service; Billing Svc; биллинг; сервис биллинга
api_gateway | Service | API Gateway*3; api-gateway; ApiGateway; APIGateway; api gw; API-шлюз
search_service | Service | SearchService; search-svc; search service; search_service
inventory_service | Service | InventoryService*2; inventory-svc; inventory service; Inventory Svc; InventorySvc
shipping_service | Service | ShippingService; shipping-service; shipping svc; Shipping Service
catalog_service | Service | CatalogService; catalog-svc; catalogue service; Catalog Service; product catalog service
session_store | Database | session-store; SessionStore; session store; sessions store
audit_log_service | Service | AuditLogService; audit-log-svc; audit log service; audit logging service
rate_limiter | Service | RateLimiter*2; rate-limiter; rate limiter; ratelimiter; Rate Limiting Service
config_service | Service | ConfigService; config-svc; configuration service; Config Service; cfg-service
feature_flags | Service | FeatureFlagService; feature-flag-service; feature flags service; feature flag svc
kubernetes | Technology | Kubernetes*5; K8s*3; k8s; kube; Kuberentes; Кубернетес; kubernetes
docker | Technology | Docker*4; docker; Докер; Docker Engine
postgresql | Database | PostgreSQL*4; Postgres*3; postgres; Postgre SQL; Постгрес; PostgresSQL; psql
mysql | Database | MySQL*2; mysql; My SQL; MySql
mongodb | Database | MongoDB*2; Mongo; mongo db; Монго; MongoDb
redis | Database | Redis*3; redis; Редис; Redis Cluster{Redis}
redux | Technology | Redux*2; redux; Redux Toolkit{Redux}
kafka | Technology | Apache Kafka*3; Kafka*4; kafka; Кафка*2; Кафке; Кафки; Apache Kafka cluster{Kafka}
franz_kafka | Person | Franz Kafka*2; Франц Кафка; F. Kafka
rabbitmq | Technology | RabbitMQ*3; Rabbit MQ; rabbitmq; RabbitMq; Кролик{RabbitMQ}
elasticsearch | Technology | Elasticsearch*3; ElasticSearch; Elastic Search; elastic-search; Эластиксерч; ES{Elasticsearch}
spark | Technology | Apache Spark*2; Spark*2; spark; Спарк
flink | Technology | Apache Flink; Flink*2; Флинк
react | Technology | React*3; ReactJS; React.js; react; Реакт
react_native | Technology | React Native*2; react-native; ReactNative; RN{React Native}
java | Language | Java*4; java; Джава; JAVA
javascript | Language | JavaScript*4; Javascript; JS; javascript; ECMAScript
typescript | Language | TypeScript*3; Typescript; TS; typescript
python2 | Language | Python 2*2; Python2; python 2; Py2
python3 | Language | Python 3*3; Python3; python3; Питон 3
go_lang | Language | Go*3; Golang*2; golang; Go lang
rust | Language | Rust*2; rust; Раст
grafana | Technology | Grafana*3; grafana; Графана
prometheus | Technology | Prometheus*3; prometheus; Прометей; Prometheus server{Prometheus}
terraform | Technology | Terraform*3; terraform; HashiCorp Terraform; TF{Terraform}; Терраформ
nginx | Technology | Nginx*3; NGINX; nginx; Энджинкс; engine x
jenkins | Technology | Jenkins*2; jenkins; Дженкинс; Jenkins CI
gitlab | Product | GitLab*3; Gitlab; gitlab; ГитЛаб; GitLab CI{GitLab}
github | Product | GitHub*3; Github; github; ГитХаб
jira | Product | Jira*3; JIRA; jira; Джира; Atlassian Jira
confluence | Product | Confluence*2; confluence; Конфлюенс; Atlassian Confluence
slack | Product | Slack*2; slack; Слак
oauth2 | Protocol | OAuth 2.0*2; OAuth2*2; OAuth 2; oauth2
saml | Protocol | SAML*2; Security Assertion Markup Language; SAML 2.0{SAML}
grpc | Protocol | gRPC*3; GRPC; grpc; g-RPC
graphql | Technology | GraphQL*3; Graphql; graphql; Graph QL
rest | Concept | REST*2; REST API{REST}; RESTful; Representational State Transfer
iam | Concept | IAM*2; Identity and Access Management*2; identity & access management; Identity and Access Mgmt
sso | Concept | SSO*2; Single Sign-On*2; single sign on; Single-Sign-On; единый вход
ci | Concept | CI*2; Continuous Integration*2; continuous integration; непрерывная интеграция
cd | Concept | CD; Continuous Delivery*2; continuous delivery
mfa | Concept | MFA*2; Multi-Factor Authentication; multi factor authentication; 2FA{MFA}
sla | Concept | SLA*3; Service Level Agreement; service-level agreement; соглашение об уровне обслуживания
pm_role | Role | PM*2; Product Manager*3; product manager; продакт-менеджер; продакт
project_management | Concept | PM; Project Management*2; project management; управление проектами
ai_concept | Concept | AI*3; Artificial Intelligence*2; artificial intelligence; ИИ; искусственный интеллект
adobe_illustrator | Product | AI; Adobe Illustrator*2; Illustrator; Adobe Illustrator CC
aws | Company | AWS*4; Amazon Web Services*2; amazon web services; Amazon AWS
amazon | Company | Amazon*3; Amazon.com; Amazon Inc.; Амазон
amazon_s3 | Product | Amazon S3*2; S3*3; AWS S3; Simple Storage Service
gcp | Product | Google Cloud Platform*2; GCP*3; Google Cloud; gcp
google | Company | Google*4; Google LLC; google; Гугл; Google Inc.
azure | Product | Microsoft Azure*2; Azure*3; azure; Азур
microsoft | Company | Microsoft*3; Microsoft Corporation; Майкрософт; MSFT; Microsoft Corp.
apple_company | Company | Apple*4; Apple Inc.*2; Apple Inc; Эппл
apple_food | Food | apple*2; apples; яблоко; green apple
banana | Food | banana*2; bananas; банан
openai | Company | OpenAI*3; Open AI; openai; ОпенЭйАй
sberbank | Company | Сбербанк*3; Sberbank*2; ПАО Сбербанк*2; Сбербанка; Сбербанком; Сбер; Sberbank of Russia; SberBank
yandex | Company | Яндекс*3; Yandex*3; ООО Яндекс; Яндекса; yandex; Yandex LLC
gazprom | Company | Газпром*2; Gazprom*2; ПАО Газпром; Газпрома; Gazprom PJSC
gazprombank | Company | Газпромбанк*2; Gazprombank; АО Газпромбанк; Газпромбанка
rosatom | Organization | Росатом*2; Rosatom; Госкорпорация Росатом; Росатома
rzd | Company | РЖД*3; Российские железные дороги*2; ОАО РЖД; Russian Railways; RZD
mvd | Organization | МВД*3; Министерство внутренних дел*2; МВД России; Министерства внутренних дел
fns | Organization | ФНС*3; Федеральная налоговая служба*2; ФНС России; Федеральной налоговой службы; FNS
minfin | Organization | Минфин*2; Министерство финансов*2; Министерства финансов; Минфин России; Ministry of Finance
cbr | Organization | Банк России*2; Центральный банк*2; ЦБ РФ; Центробанк; Bank of Russia; ЦБ
tinkoff | Company | Тинькофф*2; Tinkoff*2; Тинькофф Банк; Tinkoff Bank; Т-Банк
kaspersky | Company | Лаборатория Касперского*2; Kaspersky Lab*2; Kaspersky; Касперский
mts | Company | МТС*3; MTS*2; ПАО МТС; Мобильные ТелеСистемы
vk | Company | VK*3; ВКонтакте; VKontakte; ВК; Mail.ru Group{VK}
ozon | Company | Ozon*3; Озон*2; OZON; Ozon.ru
avito | Company | Avito*2; Авито*2; avito.ru
moscow | Location | Москва*3; Moscow*3; Москве; Москвы; г. Москва
saint_petersburg | Location | Санкт-Петербург*2; Saint Petersburg*2; St. Petersburg; Петербург; СПб; Санкт-Петербурге
novosibirsk | Location | Новосибирск*2; Novosibirsk; Новосибирске
kazan | Location | Казань*2; Kazan*2; Казани
london | Location | London*3; Лондон*2; Лондоне
berlin | Location | Berlin*2; Берлин*2; Берлине
ivan_petrov | Person | Иван Петров*3; Ivan Petrov*2; Петров; И. Петров; Ивана Петрова
anna_smirnova | Person | Анна Смирнова*2; Anna Smirnova*2; Смирнова; Анны Смирновой
alexander_ivanov | Person | Alexander Ivanov*2; Александр Иванов*2; Alex Ivanov; Aleksandr Ivanov
alexandra_ivanova | Person | Alexandra Ivanova*2; Александра Иванова*2; Aleksandra Ivanova
john_smith | Person | John Smith*3; J. Smith; Smith; Джон Смит
maria_garcia | Person | Maria Garcia*2; María García; M. Garcia
platform_team | Team | Platform Team*3; platform team; Platform; команда платформы; платформенная команда
sre_team | Team | SRE team*2; SRE*2; Site Reliability Engineering; SRE-команда; site reliability team
data_team | Team | Data Team*2; data team; команда данных; Data Engineering team
security_team | Team | Security Team*2; security team; InfoSec; команда безопасности; ИБ
incident_2023_11 | Event | November 2023 outage*2; Nov 2023 outage; outage of November 2023; инцидент ноября 2023
gdpr | Concept | GDPR*3; General Data Protection Regulation*2; gdpr; ОРПД{GDPR}
fz152 | Concept | 152-ФЗ*3; ФЗ-152*2; Федеральный закон 152-ФЗ; 152-FZ; закон о персональных данных
pci_dss | Concept | PCI DSS*3; PCI-DSS*2; PCI; Payment Card Industry Data Security Standard
iso27001 | Concept | ISO 27001*3; ISO/IEC 27001*2; ISO27001; ISO 27001:2013
iso9001 | Concept | ISO 9001*2; ISO9001; ISO 9001:2015
linux | Technology | Linux*3; linux; Линукс; GNU/Linux
ubuntu | Technology | Ubuntu*3; ubuntu; Убунту; Ubuntu Linux; Ubuntu 22.04{Ubuntu}
windows | Technology | Windows*2; Microsoft Windows*2; windows; Виндоус
ldap | Protocol | LDAP*3; ldap; Lightweight Directory Access Protocol; OpenLDAP{LDAP}
active_directory | Technology | Active Directory*3; AD*2; MS AD; Microsoft Active Directory; Актив Директори
vault | Technology | HashiCorp Vault*2; Vault*3; vault; Волт
consul | Technology | Consul*2; HashiCorp Consul; consul
istio | Technology | Istio*2; istio; Истио; Istio service mesh{Istio}
clickhouse | Database | ClickHouse*3; Clickhouse; clickhouse; Кликхаус; CH{ClickHouse}
airflow | Technology | Apache Airflow*2; Airflow*3; airflow; Эйрфлоу
k8s_eu_1 | Cluster | k8s-eu-1*3; K8s-EU-1; k8s_eu_1; kubernetes-eu-1; k8s-eu-1 cluster{k8s-eu-1}
k8s_ru_1 | Cluster | k8s-ru-1*2; K8S-RU-1; k8s_ru_1; kubernetes-ru-1
k8s_eu_2 | Cluster | k8s-eu-2*2; k8s_eu_2; K8s-EU-2
k8s_us_1 | Cluster | k8s-us-1; k8s_us_1
postgresql_13 | Database | PostgreSQL 13*2; Postgres 13; postgresql-13; PostgreSQL 13.0
postgresql_16 | Database | PostgreSQL 16*2; Postgres 16; postgresql16; Постгрес 16
eu_west | Region | eu-west*2; EU West; eu_west
eu_central | Region | eu-central*2; EU Central; eu_central
us_east_1 | Region | us-east-1*2; US East 1; us_east_1
us_east_2 | Region | us-east-2; US-East-2
ru_central1 | Region | ru-central1*2; ru-central-1
k8s_v1_27 | Version | v1.27*2; V1.27; v1.27.0
k8s_v1_29 | Version | v1.29*2; V1.29
java_17 | Language | Java 17*2; Java17; java 17
java_21 | Language | Java 21; Java21
adam_smith | Person | Adam Smith; A. Smith
"""

_FORM = re.compile(r"^(?P<name>.*?)(?:\{(?P<aliases>[^}]*)\})?(?:\*(?P<n>\d+))?$")


def rows() -> list[dict[str, object]]:
    """Every mention, shuffled with a fixed seed (extraction order is arbitrary too)."""
    out: list[dict[str, object]] = []
    for line in ENTITIES.strip().splitlines():
        gold, etype, forms = (part.strip() for part in line.split("|"))
        for raw in forms.split(";"):
            match = _FORM.match(raw.strip())
            assert match is not None, raw
            name = match["name"].strip()
            aliases = [a.strip() for a in (match["aliases"] or "").split("/") if a.strip()]
            lang = "ru" if re.search("[а-яёА-ЯЁ]", name) else "en"
            for _ in range(int(match["n"] or 1)):
                row: dict[str, object] = {
                    "mention": name,
                    "type": etype,
                    "gold_entity": gold,
                    "lang": lang,
                }
                if aliases:
                    row["aliases"] = aliases
                out.append(row)
    random.Random(20240501).shuffle(out)
    return out


def main() -> None:
    target = Path(__file__).with_name("aliases.jsonl")
    data = rows()
    with target.open("w", encoding="utf-8") as handle:
        for row in data:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    golds = {r["gold_entity"] for r in data}
    print(f"{len(data)} mentions of {len(golds)} entities -> {target}")


if __name__ == "__main__":
    main()
