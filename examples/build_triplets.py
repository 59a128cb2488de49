#!/usr/bin/env python3
"""Build ``platform-docs.triplets.jsonl`` from the documents in ``platform-docs/``.

The triplets are hand-written below, one list per document, using the surface forms each
document itself uses ("auth-svc", "AuthService", "OAuth Server", "Postgres"/"PostgreSQL",
"K8s"/"Kubernetes", "Кафка" ...), so that entity resolution has real work to do. The text of
each record is read from the file, so it is always exactly the file's content.

Run from anywhere:

    python examples/build_triplets.py            # writes examples/platform-docs.triplets.jsonl
    python examples/build_triplets.py --check    # fails if the JSONL on disk is out of date
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "platform-docs"
OUT = HERE / "platform-docs.triplets.jsonl"

TYPES = {
    "Service", "Team", "Database", "Topic", "Cluster", "Region",
    "Person", "Incident", "Product", "Library",
}  # fmt: skip


def t(
    subject: str,
    predicate: str,
    obj: str,
    subject_type: str,
    object_type: str,
    description: str,
    weight: float = 0.9,
    valid_from: str | None = None,
    valid_to: str | None = None,
) -> dict:
    row = {
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "subject_type": subject_type,
        "object_type": object_type,
        "description": description,
        "weight": weight,
    }
    if valid_from:
        row["valid_from"] = valid_from
    if valid_to:
        row["valid_to"] = valid_to
    return row


S, TM, DB, TP, CL, RG, PR, INC, PD, LIB = (
    "Service", "Team", "Database", "Topic", "Cluster", "Region",
    "Person", "Incident", "Product", "Library",
)  # fmt: skip

TRIPLETS: dict[str, list[dict]] = {
    # ------------------------------------------------------------------ architecture overview
    "architecture-overview.md": [
        t("Checkout Web", "owned by", "Team Storefront", S, TM,
          "Checkout Web is the customer-facing checkout application owned by Team Storefront.", 0.9),
        t("Checkout Web", "calls", "Payments API", S, S,
          "When the buyer confirms an order, Checkout Web calls the Payments API to authorize and capture the payment.", 1.0),
        t("Payments API", "depends on", "AuthService", S, S,
          "The Payments API depends on AuthService: it will not move money until the caller's OAuth access token has been validated.", 1.0),
        t("AuthService", "stores data in", "PostgreSQL", S, DB,
          "AuthService stores its registered clients, refresh tokens and signing keys in PostgreSQL, the shared relational database.", 1.0),
        t("PostgreSQL", "runs on", "k8s-eu-1", DB, CL,
          "The shared PostgreSQL cluster runs on the Kubernetes cluster k8s-eu-1.", 1.0),
        t("k8s-eu-1", "located in", "eu-central", CL, RG,
          "k8s-eu-1 is in the eu-central region (Frankfurt).", 0.9),
        t("INC-2024-0514", "affected", "Checkout Web", INC, S,
          "The May 2024 checkout outage INC-2024-0514 was a failure of the chain from Checkout Web down to PostgreSQL.", 0.8),
        t("Payments API", "calls", "AuthzService", S, S,
          "The Payments API calls AuthzService, the policy engine, to check whether a merchant user may issue a refund.", 0.9),
        t("AuthzService", "stores data in", "Redis", S, DB,
          "AuthzService keeps its policies in Redis.", 0.9),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "AuthzService is not part of AuthService and has its own owner, Team Identity.", 0.9),
        t("Payments API", "stores data in", "PostgreSQL 16", S, DB,
          "The Payments API keeps its transactional data in a dedicated PostgreSQL 16 cluster, migrated there on 2024-06-15.", 0.9,
          valid_from="2024-06-15"),
        t("Payments API", "stores data in", "PostgreSQL 13", S, DB,
          "The Payments API was migrated from PostgreSQL 13 to PostgreSQL 16 on 2024-06-15.", 0.8,
          valid_to="2024-06-15"),
        t("Payments API", "publishes to", "payments.completed", S, TP,
          "Once a payment is captured, the Payments API publishes a payments.completed event to Kafka.", 0.9),
        t("Ledger Service", "consumes from", "payments.completed", S, TP,
          "The Ledger Service consumes payments.completed to write double-entry records.", 0.9),
        t("Billing Service", "consumes from", "payments.completed", S, TP,
          "The Billing Service consumes payments.completed to produce merchant invoices.", 0.9),
        t("Billing Service", "owned by", "Команда биллинга", S, TM,
          "The Billing Service is run by the Moscow team, Команда биллинга.", 0.8),
        t("Kafka", "runs on", "k8s-eu-1", PD, CL,
          "Kafka itself also runs on k8s-eu-1.", 0.9),
        t("Ledger Service", "runs on", "k8s-eu-1", S, CL,
          "Since 2024-09-10 the Ledger Service runs on k8s-eu-1, next to its database, instead of in Dublin.", 0.9,
          valid_from="2024-09-10"),
        t("AuthService", "owned by", "Team Platform Security", S, TM,
          "AuthService belongs to Team Platform Security, which took it over from Team Identity on 2024-03-01.", 1.0,
          valid_from="2024-03-01"),
        t("AuthService", "owned by", "Team Identity", S, TM,
          "Team Identity owned AuthService until Team Platform Security took it over on 2024-03-01.", 0.9,
          valid_to="2024-03-01"),
    ],
    # ------------------------------------------------------------------ incident report
    "incidents/2024-05-14-checkout-outage.md": [
        t("INC-2024-0514", "affected", "Checkout Web", INC, S,
          "For 47 minutes on 2024-05-14 buyers could not complete purchases in Checkout Web.", 1.0),
        t("INC-2024-0514", "caused by", "Postgres", INC, DB,
          "The root cause was that the shared Postgres cluster stopped accepting connections after the primary's data volume filled up.", 1.0),
        t("Priya Raman", "incident commander of", "INC-2024-0514", PR, INC,
          "Priya Raman (Team Platform Security) was the incident commander.", 0.9),
        t("Priya Raman", "member of", "Team Platform Security", PR, TM,
          "Priya Raman is from Team Platform Security.", 0.8),
        t("Postgres", "runs on", "k8s-eu-1", DB, CL,
          "Postgres runs as a StatefulSet on the K8s cluster k8s-eu-1.", 1.0),
        t("k8s-eu-1", "instance of", "K8s", CL, PD,
          "k8s-eu-1 is a K8s cluster.", 0.7),
        t("auth-svc", "stores data in", "Postgres", S, DB,
          "auth-svc keeps client records and refresh tokens in Postgres.", 1.0),
        t("payments-api", "depends on", "auth-svc", S, S,
          "payments-api depends on auth-svc to validate every incoming access token.", 1.0),
        t("Checkout Web", "calls", "payments-api", S, S,
          "Checkout Web calls payments-api synchronously.", 1.0),
        t("INC-2024-0514", "affected", "auth-svc", INC, S,
          "auth-svc began failing token introspection; its error rate on /oauth/introspect jumped to 100%.", 0.9),
        t("INC-2024-0514", "affected", "payments-api", INC, S,
          "payments-api rejected all payment requests with HTTP 503.", 0.9),
        t("payments-api", "stores data in", "PostgreSQL 13", S, DB,
          "payments-api's own database was still PostgreSQL 13 at the time and never reported an error.", 0.8),
        t("AuthzService", "stores data in", "Redis", S, DB,
          "AuthzService, the policy engine, keeps its data in Redis and kept answering throughout.", 0.9),
        t("Team Platform Infrastructure", "operates", "Postgres", TM, DB,
          "Team Platform Infrastructure found the replication slot, dropped it and grew the Postgres volume.", 0.7),
        t("payments-api", "uses", "nw-auth-client", S, LIB,
          "Action item: move payments-api to local token validation with the nw-auth-client library.", 0.6),
    ],
    # ------------------------------------------------------------------ clusters and regions
    "infrastructure/clusters-and-regions.md": [
        t("Jonas Weber", "leads", "Team Platform Infrastructure", PR, TM,
          "Team Platform Infrastructure is led by Jonas Weber.", 0.9),
        t("Team Platform Infrastructure", "operates", "Kubernetes", TM, PD,
          "Team Platform Infrastructure operates the Kubernetes clusters itself on bare-metal nodes.", 0.9),
        t("k8s-eu-1", "located in", "eu-central", CL, RG,
          "k8s-eu-1 is located in eu-central, the primary region in Frankfurt.", 1.0),
        t("k8s-eu-2", "located in", "eu-west", CL, RG,
          "k8s-eu-2 is located in eu-west (Dublin).", 1.0),
        t("k8s-ru-1", "located in", "ru-central", CL, RG,
          "k8s-ru-1 is located in ru-central (Moscow).", 1.0),
        t("Postgres", "runs on", "k8s-eu-1", DB, CL,
          "k8s-eu-1 runs the shared Postgres cluster through the CloudNativePG operator.", 1.0),
        t("Kafka", "runs on", "k8s-eu-1", PD, CL,
          "k8s-eu-1 runs the Kafka brokers.", 1.0),
        t("AuthService", "runs on", "k8s-eu-1", S, CL,
          "k8s-eu-1 runs AuthService.", 0.9),
        t("Payments API", "runs on", "k8s-eu-1", S, CL,
          "k8s-eu-1 runs the Payments API.", 0.9),
        t("Checkout Web", "runs on", "k8s-eu-1", S, CL,
          "k8s-eu-1 runs Checkout Web.", 0.9),
        t("k8s-eu-1", "has version", "Kubernetes 1.27", CL, PD,
          "The k8s-eu-1 control plane ran Kubernetes 1.27 until the upgrade on 2024-08-20.", 0.9,
          valid_to="2024-08-20"),
        t("k8s-eu-1", "has version", "Kubernetes 1.29", CL, PD,
          "The k8s-eu-1 control plane was upgraded to Kubernetes 1.29 on 2024-08-20.", 1.0,
          valid_from="2024-08-20"),
        t("Billing Service", "runs on", "k8s-ru-1", S, CL,
          "k8s-ru-1 runs the Billing Service.", 1.0),
        t("Billing Service", "owned by", "Команда биллинга", S, TM,
          "The Billing Service is owned by Команда биллинга.", 0.9),
        t("Ledger Service", "runs on", "k8s-eu-2", S, CL,
          "Until 2024-09-10 the Ledger Service ran on k8s-eu-2 in eu-west.", 1.0,
          valid_to="2024-09-10"),
        t("Ledger Service", "runs on", "k8s-eu-1", S, CL,
          "On 2024-09-10 Team Payments redeployed the Ledger Service onto k8s-eu-1 in eu-central.", 1.0,
          valid_from="2024-09-10"),
        t("Ledger Service", "located in", "eu-west", S, RG,
          "The Ledger Service ran in eu-west (Dublin) until 2024-09-10.", 0.9,
          valid_to="2024-09-10"),
        t("Ledger Service", "located in", "eu-central", S, RG,
          "Since 2024-09-10 the Ledger Service runs in eu-central (Frankfurt).", 0.9,
          valid_from="2024-09-10"),
        t("Ledger Service", "stores data in", "Postgres", S, DB,
          "The Ledger Service's database has always been the shared Postgres in Frankfurt.", 1.0),
        t("Ledger Service", "owned by", "Team Payments", S, TM,
          "Team Payments redeployed the Ledger Service (implied owner).", 0.6),
    ],
    # ------------------------------------------------------------------ Kafka topics
    "messaging/kafka-topics.md": [
        t("Kafka", "runs on", "k8s-eu-1", PD, CL,
          "We run a single Kafka cluster, on k8s-eu-1.", 1.0),
        t("Team Platform Infrastructure", "operates", "Kafka", TM, PD,
          "The Kafka cluster is operated by Team Platform Infrastructure.", 1.0),
        t("auth.user-events", "part of", "Kafka", TP, PD,
          "auth.user-events is a Kafka topic.", 0.8),
        t("AuthService", "publishes to", "auth.user-events", S, TP,
          "auth.user-events is published by AuthService whenever a user is created, disabled or has roles changed.", 1.0),
        t("AuthzService", "consumes from", "auth.user-events", S, TP,
          "AuthzService consumes auth.user-events to keep its role bindings current.", 1.0),
        t("auth.user-events", "owned by", "Team Platform Security", TP, TM,
          "The data owner of the auth.user-events topic is Team Platform Security.", 0.8),
        t("orders.created", "part of", "Kafka", TP, PD,
          "orders.created is a Kafka topic.", 0.8),
        t("Checkout Web", "publishes to", "orders.created", S, TP,
          "orders.created is published by Checkout Web as soon as a buyer submits an order.", 1.0),
        t("Notification Service", "consumes from", "orders.created", S, TP,
          "The Notification Service consumes orders.created to send the order-received e-mail.", 1.0),
        t("payments.completed", "part of", "Kafka", TP, PD,
          "payments.completed is a Kafka topic.", 0.8),
        t("Payments API", "publishes to", "payments.completed", S, TP,
          "payments.completed is published by the Payments API once a payment has been captured.", 1.0),
        t("Ledger Service", "consumes from", "payments.completed", S, TP,
          "The Ledger Service consumes payments.completed to write double-entry bookkeeping records.", 1.0),
        t("Billing Service", "consumes from", "payments.completed", S, TP,
          "The Billing Service consumes payments.completed to aggregate payments into merchant invoices.", 1.0),
        t("Billing Service", "runs on", "k8s-ru-1", S, CL,
          "The Billing Service consumer group reads from k8s-ru-1 in Moscow.", 0.7),
        t("INC-2024-1003", "affected", "Billing Service", INC, S,
          "The October 2024 lag incident INC-2024-1003 showed what happens when the Billing Service consumer falls behind.", 0.7),
        t("billing.invoices", "part of", "Kafka", TP, PD,
          "billing.invoices is a Kafka topic.", 0.8),
        t("Billing Service", "publishes to", "billing.invoices", S, TP,
          "billing.invoices is published by the Billing Service when an invoice is issued or corrected.", 1.0),
        t("Notification Service", "consumes from", "billing.invoices", S, TP,
          "The Notification Service consumes billing.invoices and e-mails the invoice PDF to the merchant.", 1.0),
    ],
    # ------------------------------------------------------------------ migration plan
    "plans/payments-postgres16-migration.md": [
        t("Elena Petrova", "member of", "Team Payments", PR, TM,
          "The plan's author, Elena Petrova, is on Team Payments.", 0.9),
        t("Payments API", "stores data in", "PostgreSQL 13", S, DB,
          "The Payments API stored its data in a dedicated PostgreSQL 13 instance from 2021 until the cutover on 2024-06-15.", 1.0,
          valid_to="2024-06-15"),
        t("Payments API", "stores data in", "PostgreSQL 16", S, DB,
          "Since 2024-06-15 the Payments API stores its data exclusively in PostgreSQL 16.", 1.0,
          valid_from="2024-06-15"),
        t("PostgreSQL 13", "located in", "eu-central", DB, RG,
          "The PostgreSQL 13 instance runs on two virtual machines in eu-central, outside K8s.", 0.8),
        t("PostgreSQL 16", "runs on", "k8s-eu-1", DB, CL,
          "The target is a dedicated PostgreSQL 16 cluster on the K8s cluster k8s-eu-1.", 1.0),
        t("k8s-eu-1", "instance of", "K8s", CL, PD,
          "k8s-eu-1 is a K8s cluster.", 0.7),
        t("Team Platform Infrastructure", "operates", "PostgreSQL 16", TM, DB,
          "Team Platform Infrastructure provisions and operates the new PostgreSQL 16 cluster.", 0.9),
        t("Payments API", "owned by", "Team Payments", S, TM,
          "Team Payments continues to own the schema and the data of the Payments API.", 0.7),
        t("AuthService", "stores data in", "Postgres", S, DB,
          "Payments data must not share a failure domain with AuthService's database, the shared Postgres.", 0.7),
        t("PostgreSQL 13", "replicates to", "PostgreSQL 16", DB, DB,
          "Logical replication from PostgreSQL 13 to PostgreSQL 16 ran from 2024-06-03 until the cutover on 2024-06-15.", 0.8,
          valid_from="2024-06-03", valid_to="2024-06-15"),
        t("Ledger Service", "consumes from", "payments.completed", S, TP,
          "The Ledger Service consumes payments.completed events and stores payment ids.", 0.9),
        t("payments-api", "uses", "nw-auth-client", S, LIB,
          "The nw-auth-client library inside payments-api is unaffected by the migration.", 0.8),
        t("Payments API", "depends on", "AuthService", S, S,
          "Authentication for payments-api goes through AuthService rather than through the payments database.", 0.7),
    ],
    # ------------------------------------------------------------------ release notes
    "releases/release-notes-2024.txt": [
        t("OAuth Server", "owned by", "Team Identity", S, TM,
          "On 2024-03-01 ownership of the OAuth Server moved away from Team Identity.", 1.0,
          valid_to="2024-03-01"),
        t("OAuth Server", "owned by", "Team Platform Security", S, TM,
          "On 2024-03-01 ownership of the OAuth Server moved to Team Platform Security.", 1.0,
          valid_from="2024-03-01"),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "Team Identity keeps AuthzService.", 0.8),
        t("INC-2024-0514", "caused by", "Postgres", INC, DB,
          "INC-2024-0514 was the checkout outage that began when the shared Postgres cluster ran out of disk.", 0.9),
        t("Payments API", "stores data in", "PostgreSQL 16", S, DB,
          "Since 2024-06-15 the Payments API stores its data in a dedicated PostgreSQL 16 cluster.", 1.0,
          valid_from="2024-06-15"),
        t("Payments API", "stores data in", "PostgreSQL 13", S, DB,
          "The old PostgreSQL 13 instance stayed read-only after the 2024-06-15 move.", 0.8,
          valid_to="2024-06-15"),
        t("PostgreSQL 16", "runs on", "k8s-eu-1", DB, CL,
          "The dedicated PostgreSQL 16 cluster is on k8s-eu-1.", 0.9),
        t("nw-auth-client", "depends on", "OAuth Server", LIB, S,
          "nw-auth-client 3.0 validates JWTs locally using signing keys it fetches from the OAuth Server.", 0.8),
        t("Payments API", "uses", "nw-auth-client", S, LIB,
          "On 2024-07-22 the Payments API switched to nw-auth-client 3.0.", 1.0,
          valid_from="2024-07-22"),
        t("Payments API", "depends on", "OAuth Server", S, S,
          "The Payments API still depends on the OAuth Server for signing keys and token issuance.", 0.9),
        t("k8s-eu-1", "has version", "Kubernetes 1.27", CL, PD,
          "k8s-eu-1 ran Kubernetes 1.27 until the 2024-08-20 upgrade.", 0.9,
          valid_to="2024-08-20"),
        t("k8s-eu-1", "has version", "Kubernetes 1.29", CL, PD,
          "The k8s-eu-1 cluster was upgraded to Kubernetes 1.29 on 2024-08-20.", 1.0,
          valid_from="2024-08-20"),
        t("Ledger Service", "runs on", "k8s-eu-1", S, CL,
          "Since 2024-09-10 the Ledger Service runs on k8s-eu-1 in eu-central.", 1.0,
          valid_from="2024-09-10"),
        t("Ledger Service", "runs on", "k8s-eu-2", S, CL,
          "Before 2024-09-10 the Ledger Service ran on k8s-eu-2 in eu-west.", 0.9,
          valid_to="2024-09-10"),
        t("Ledger Service", "located in", "eu-central", S, RG,
          "The Ledger Service moved to eu-central on 2024-09-10.", 0.9,
          valid_from="2024-09-10"),
        t("Ledger Service", "located in", "eu-west", S, RG,
          "The Ledger Service was in eu-west until 2024-09-10.", 0.9,
          valid_to="2024-09-10"),
        t("INC-2024-1003", "affected", "Billing Service", INC, S,
          "After INC-2024-1003 the Billing Service consumer was hardened so a Kafka rolling restart no longer stalls invoicing.", 0.8),
        t("Billing Service", "consumes from", "payments.completed", S, TP,
          "The Billing Service is a consumer of payments.completed.", 0.9),
    ],
    # ------------------------------------------------------------------ Russian runbook
    "ru/billing-runbook-moscow.md": [
        t("Billing Service", "является частью", "Northwind Cloud", S, PD,
          "Billing Service формирует счета для мерчантов и является частью платформы Northwind Cloud.", 1.0),
        t("Billing Service", "owned by", "Команда биллинга", S, TM,
          "С 1 ноября 2023 года (2023-11-01) сервисом владеет Команда биллинга.", 1.0,
          valid_from="2023-11-01"),
        t("Billing Service", "owned by", "Team Payments", S, TM,
          "До 1 ноября 2023 года Billing Service принадлежал Team Payments.", 0.9,
          valid_to="2023-11-01"),
        t("Анна Смирнова", "руководит", "Команда биллинга", PR, TM,
          "Руководитель Команды биллинга — Анна Смирнова.", 0.9),
        t("Команда биллинга", "является частью", "Finance Engineering", TM, TM,
          "Команда биллинга является частью направления Finance Engineering.", 1.0),
        t("Billing Service", "работает в", "k8s-ru-1", S, CL,
          "Сервис работает в кластере k8s-ru-1.", 1.0),
        t("k8s-ru-1", "находится в", "ru-central", CL, RG,
          "Кластер k8s-ru-1 находится в регионе ru-central (Москва).", 1.0),
        t("Billing Service", "потребляет из", "payments.completed", S, TP,
          "Billing Service читает события об оплатах из топика payments.completed в Кафке.", 1.0),
        t("payments.completed", "является частью", "Кафка", TP, PD,
          "Топик payments.completed находится в Кафке.", 0.8),
        t("Billing Service", "публикует в", "billing.invoices", S, TP,
          "Billing Service публикует готовые счета в топик billing.invoices.", 1.0),
        t("Billing Service", "хранит данные в", "PostgreSQL", S, DB,
          "Данные о счетах Billing Service хранит в PostgreSQL — общем кластере во Франкфурте.", 1.0),
        t("Billing Service", "зависит от", "Кафка", S, PD,
          "Billing Service зависит от Кафки: если консьюмер отстаёт, счета задерживаются.", 1.0),
        t("Billing Service", "зависит от", "PostgreSQL", S, DB,
          "Billing Service зависит от PostgreSQL: без базы сервис не может сохранить ни одного счёта.", 1.0),
        t("Billing Service", "зависит от", "AuthService", S, S,
          "Billing Service зависит от AuthService, у которого получает сервисные токены.", 1.0),
        t("AuthService", "owned by", "Team Platform Security", S, TM,
          "С 1 марта 2024 года AuthService обслуживает Team Platform Security.", 0.9,
          valid_from="2024-03-01"),
        t("Team Platform Infrastructure", "обслуживает", "Кафка", TM, PD,
          "Дашборд Кафки ведёт Team Platform Infrastructure; проблемы брокеров эскалируются их дежурному.", 0.7),
    ],
    # ------------------------------------------------------------------ Russian postmortem
    "ru/postmortem-kafka-2024-10-03.md": [
        t("INC-2024-1003", "затронул", "сервис биллинга", INC, S,
          "3 октября 2024 года сервис биллинга больше шести часов не выставлял счета мерчантам.", 1.0),
        t("Дмитрий Орлов", "входит в", "Команда биллинга", PR, TM,
          "Автор постмортема — Дмитрий Орлов (Команда биллинга).", 0.8),
        t("Team Platform Infrastructure", "обслуживает", "Кафка", TM, PD,
          "Плановый перезапуск брокеров Кафки проводила Team Platform Infrastructure.", 0.8),
        t("Кафка", "работает в", "k8s-eu-1", PD, CL,
          "Кафка работает на k8s-eu-1.", 1.0),
        t("Payments API", "публикует в", "payments.completed", S, TP,
          "Payments API продолжал публиковать события в топик payments.completed.", 0.9),
        t("Ledger Service", "потребляет из", "payments.completed", S, TP,
          "Ledger Service тоже читает топик payments.completed и догнал его за несколько минут.", 0.9),
        t("сервис биллинга", "работает в", "k8s-ru-1", S, CL,
          "Сервис биллинга работает в кластере k8s-ru-1 в Москве.", 1.0),
        t("сервис биллинга", "потребляет из", "payments.completed", S, TP,
          "Сервис биллинга читает топик payments.completed через межрегиональный канал.", 1.0),
        t("сервис биллинга", "зависит от", "Кафка", S, PD,
          "Сервис биллинга зависит от Кафки.", 1.0),
        t("сервис биллинга", "зависит от", "PostgreSQL", S, DB,
          "Сервис биллинга зависит от PostgreSQL.", 1.0),
        t("сервис биллинга", "зависит от", "AuthService", S, S,
          "Для вызовов других сервисов сервис биллинга зависит ещё и от AuthService.", 0.9),
        t("AuthService", "хранит данные в", "PostgreSQL", S, DB,
          "AuthService хранит данные в том же общем PostgreSQL.", 1.0),
        t("INC-2024-1003", "затронул", "AuthService", INC, S,
          "Общий PostgreSQL упёрся в лимит соединений, и на четыре минуты AuthService начал отвечать ошибками.", 0.7),
        t("payments.completed", "является частью", "Кафка", TP, PD,
          "Топик payments.completed является частью Кафки.", 1.0),
        t("Команда биллинга", "является частью", "Finance Engineering", TM, TM,
          "Команда биллинга является частью Finance Engineering.", 1.0),
        t("Анна Смирнова", "руководит", "Команда биллинга", PR, TM,
          "Результаты разбора переданы руководителю команды Анне Смирновой.", 0.8),
    ],
    # ------------------------------------------------------------------ auth-svc runbook
    "runbooks/auth-svc-oncall.md": [
        t("auth-svc", "owned by", "Team Platform Security", S, TM,
          "The owning team of auth-svc is Team Platform Security since 2024-03-01.", 1.0,
          valid_from="2024-03-01"),
        t("auth-svc", "owned by", "Team Identity", S, TM,
          "Before 2024-03-01 auth-svc was owned by Team Identity.", 0.9,
          valid_to="2024-03-01"),
        t("auth-svc", "runs on", "k8s-eu-1", S, CL,
          "auth-svc runs as a Deployment with six replicas in the identity namespace of the K8s cluster k8s-eu-1.", 1.0),
        t("k8s-eu-1", "instance of", "K8s", CL, PD,
          "k8s-eu-1 is a K8s cluster.", 0.7),
        t("auth-svc", "stores data in", "Postgres", S, DB,
          "auth-svc stores clients, refresh tokens and signing keys in the shared Postgres cluster (database auth).", 1.0),
        t("auth-svc", "publishes to", "auth.user-events", S, TP,
          "User lifecycle events are published to the Kafka topic auth.user-events.", 1.0),
        t("payments-api", "calls", "auth-svc", S, S,
          "payments-api is one of the main callers of auth-svc, though far less since July 2024.", 0.8),
        t("Billing Service", "calls", "auth-svc", S, S,
          "The Billing Service is one of the main callers of auth-svc.", 0.8),
        t("Checkout Web", "calls", "auth-svc", S, S,
          "Checkout Web uses auth-svc for buyer login.", 0.8),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "AuthzService, the policy engine, is owned by Team Identity and its alerts go to their rotation.", 0.9),
        t("Team Platform Infrastructure", "operates", "Postgres", TM, DB,
          "If Postgres is unhealthy, page Team Platform Infrastructure, who operate it.", 0.9),
        t("INC-2024-0514", "caused by", "Postgres", INC, DB,
          "Most auth-svc outages so far have really been Postgres outages (see INC-2024-0514).", 0.6),
        t("Priya Raman", "leads", "Team Platform Security", PR, TM,
          "Priya Raman leads Team Platform Security.", 1.0),
    ],
    # ------------------------------------------------------------------ AuthService catalog
    "services/auth-service.md": [
        t("AuthService", "part of", "Northwind Cloud", S, PD,
          "AuthService is Northwind Cloud's authentication service, the OAuth 2.0 / OpenID Connect authorization server.", 0.8),
        t("AuthService", "owned by", "Team Identity", S, TM,
          "Team Identity built AuthService in 2021 and owned it until 2024-03-01.", 1.0,
          valid_to="2024-03-01"),
        t("AuthService", "owned by", "Team Platform Security", S, TM,
          "From 2024-03-01 AuthService is owned by Team Platform Security.", 1.0,
          valid_from="2024-03-01"),
        t("nw-auth-client", "owned by", "Team Platform Security", LIB, TM,
          "Team Platform Security also maintains the nw-auth-client library that most callers use.", 0.9),
        t("AuthService", "publishes to", "auth.user-events", S, TP,
          "Whenever a user is created, disabled or changes roles, AuthService publishes an event to auth.user-events.", 1.0),
        t("AuthService", "stores data in", "Postgres", S, DB,
          "AuthService stores its data in Postgres, the shared cluster.", 1.0),
        t("Postgres", "runs on", "k8s-eu-1", DB, CL,
          "The shared Postgres cluster runs on k8s-eu-1.", 1.0),
        t("AuthService", "runs on", "k8s-eu-1", S, CL,
          "AuthService itself runs on k8s-eu-1 as well.", 1.0),
        t("AuthzService", "consumes from", "auth.user-events", S, TP,
          "AuthzService consumes auth.user-events; AuthService does not call AuthzService.", 0.9),
        t("Payments API", "depends on", "AuthService", S, S,
          "The Payments API depends on AuthService to authenticate every payment request.", 1.0),
        t("Payments API", "uses", "nw-auth-client", S, LIB,
          "The Payments API uses nw-auth-client to authenticate requests against AuthService.", 0.9),
        t("Billing Service", "depends on", "AuthService", S, S,
          "The Billing Service depends on AuthService for service-to-service tokens.", 1.0),
        t("Checkout Web", "depends on", "AuthService", S, S,
          "Checkout Web depends on AuthService for buyer login.", 1.0),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "AuthzService is the authorization policy engine, owned by Team Identity.", 0.9),
    ],
    # ------------------------------------------------------------------ AuthzService catalog (rst)
    "services/authz-service.rst": [
        t("AuthzService", "part of", "Northwind Cloud", S, PD,
          "AuthzService is Northwind Cloud's authorization service, a policy engine.", 0.8),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "AuthzService is owned by Team Identity and stayed with it when AuthService moved on 2024-03-01.", 1.0),
        t("Marcus Lee", "leads", "Team Identity", PR, TM,
          "Team Identity is led by Marcus Lee.", 1.0),
        t("AuthService", "owned by", "Team Platform Security", S, TM,
          "AuthService moved to Team Platform Security on 2024-03-01.", 0.9,
          valid_from="2024-03-01"),
        t("AuthzService", "runs on", "k8s-eu-1", S, CL,
          "AuthzService runs on the k8s-eu-1 cluster.", 1.0),
        t("AuthzService", "stores data in", "Redis", S, DB,
          "AuthzService keeps its compiled policy bundles and role bindings in Redis.", 1.0),
        t("AuthzService", "consumes from", "auth.user-events", S, TP,
          "Role bindings are kept up to date by consuming the auth.user-events topic from Kafka.", 1.0),
        t("auth.user-events", "part of", "Kafka", TP, PD,
          "auth.user-events is a Kafka topic.", 0.8),
        t("AuthService", "publishes to", "auth.user-events", S, TP,
          "AuthService publishes the auth.user-events topic.", 0.9),
        t("AuthService", "stores data in", "Postgres", S, DB,
          "AuthzService never reads AuthService's Postgres database.", 0.7),
        t("Payments API", "calls", "AuthzService", S, S,
          "The Payments API calls AuthzService before refunds, payouts and changes to bank details.", 1.0),
        t("Admin Console", "calls", "AuthzService", S, S,
          "The Admin Console calls AuthzService on every page load.", 1.0),
    ],
    # ------------------------------------------------------------------ Payments API catalog
    "services/payments-api.md": [
        t("Payments API", "part of", "Northwind Cloud", S, PD,
          "The Payments API authorizes, captures and refunds payments for merchants on Northwind Cloud.", 0.8),
        t("Payments API", "owned by", "Team Payments", S, TM,
          "The Payments API is owned by Team Payments.", 1.0),
        t("Elena Petrova", "leads", "Team Payments", PR, TM,
          "Elena Petrova is the tech lead of Team Payments.", 0.9),
        t("Team Payments", "part of", "Finance Engineering", TM, TM,
          "Team Payments is part of the Finance Engineering group.", 1.0),
        t("Checkout Web", "calls", "Payments API", S, S,
          "Checkout Web calls the Payments API to authorize and capture the payment for every order.", 1.0),
        t("Admin Console", "calls", "Payments API", S, S,
          "The Admin Console calls the Payments API for refunds and payment history screens.", 1.0),
        t("Payments API", "depends on", "AuthService", S, S,
          "The Payments API depends on AuthService for authentication.", 1.0),
        t("INC-2024-0514", "affected", "Payments API", INC, S,
          "INC-2024-0514 took the Payments API down because it called AuthService introspection on every request.", 0.9),
        t("Payments API", "uses", "nw-auth-client", S, LIB,
          "Since 2024-07-22 the Payments API validates JWT access tokens locally with nw-auth-client 3.0.", 1.0,
          valid_from="2024-07-22"),
        t("Payments API", "calls", "AuthzService", S, S,
          "For authorization the Payments API calls AuthzService.", 1.0),
        t("Payments API", "stores data in", "PostgreSQL 16", S, DB,
          "Since 2024-06-15 the Payments API stores its data in a dedicated PostgreSQL 16 cluster.", 1.0,
          valid_from="2024-06-15"),
        t("Payments API", "stores data in", "PostgreSQL 13", S, DB,
          "Before 2024-06-15 the Payments API used a PostgreSQL 13 instance on virtual machines.", 1.0,
          valid_to="2024-06-15"),
        t("PostgreSQL 16", "runs on", "k8s-eu-1", DB, CL,
          "The dedicated PostgreSQL 16 cluster runs on k8s-eu-1.", 1.0),
        t("Payments API", "publishes to", "payments.completed", S, TP,
          "When a payment is captured, the Payments API publishes a payments.completed event to Kafka.", 1.0),
        t("payments.completed", "part of", "Kafka", TP, PD,
          "payments.completed is a Kafka topic.", 0.8),
        t("Ledger Service", "consumes from", "payments.completed", S, TP,
          "The Ledger Service consumes payments.completed.", 0.9),
        t("Billing Service", "consumes from", "payments.completed", S, TP,
          "The Billing Service consumes payments.completed.", 0.9),
        t("payments-api", "runs on", "k8s-eu-1", S, CL,
          "payments-api runs with twelve replicas on k8s-eu-1.", 1.0),
        t("k8s-eu-1", "located in", "eu-central", CL, RG,
          "k8s-eu-1 is in eu-central.", 0.9),
    ],
    # ------------------------------------------------------------------ ownership change memo
    "teams/ownership-change-memo.md": [
        t("OAuth Server", "owned by", "Team Identity", S, TM,
          "Team Identity has owned the OAuth Server since building it in 2021 and remains its owner until 2024-03-01.", 1.0,
          valid_to="2024-03-01"),
        t("OAuth Server", "owned by", "Team Platform Security", S, TM,
          "Starting 2024-03-01, the OAuth Server moves from Team Identity to Team Platform Security.", 1.0,
          valid_from="2024-03-01"),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "Team Identity keeps AuthzService.", 0.9),
        t("Priya Raman", "leads", "Team Platform Security", PR, TM,
          "Priya Raman leads Team Platform Security and becomes the accountable owner of the OAuth Server.", 1.0),
        t("Marcus Lee", "member of", "Team Identity", PR, TM,
          "Marcus Lee and Team Identity will pair with Team Platform Security through March.", 0.7),
        t("nw-auth-client", "owned by", "Team Identity", LIB, TM,
          "The nw-auth-client library moves with the service, so it was Team Identity's until 2024-03-01.", 0.7,
          valid_to="2024-03-01"),
        t("nw-auth-client", "owned by", "Team Platform Security", LIB, TM,
          "The nw-auth-client library is owned by Team Platform Security from 2024-03-01.", 1.0,
          valid_from="2024-03-01"),
        t("OAuth Server", "publishes to", "auth.user-events", S, TP,
          "The OAuth Server publishes the auth.user-events topic.", 1.0),
        t("auth.user-events", "owned by", "Team Platform Security", TP, TM,
          "Data ownership of the auth.user-events topic moves to Team Platform Security on 2024-03-01.", 0.8,
          valid_from="2024-03-01"),
        t("auth.user-events", "owned by", "Team Identity", TP, TM,
          "Data ownership of auth.user-events moves away from Team Identity on 2024-03-01.", 0.6,
          valid_to="2024-03-01"),
        t("OAuth Server", "runs on", "k8s-eu-1", S, CL,
          "The OAuth Server keeps running on k8s-eu-1.", 1.0),
        t("OAuth Server", "stores data in", "Postgres", S, DB,
          "The OAuth Server keeps storing its data in Postgres.", 1.0),
        t("OAuth Server", "part of", "Northwind Cloud", S, PD,
          "The OAuth Server issues and validates every access token on Northwind Cloud.", 0.7),
    ],
    # ------------------------------------------------------------------ team directory
    "teams/team-directory.txt": [
        t("Tom Becker", "leads", "Team Storefront", PR, TM,
          "Team Storefront is led by Tom Becker.", 1.0),
        t("Checkout Web", "owned by", "Team Storefront", S, TM,
          "Team Storefront owns Checkout Web.", 1.0),
        t("Admin Console", "owned by", "Team Storefront", S, TM,
          "Team Storefront owns the Admin Console.", 1.0),
        t("Notification Service", "owned by", "Team Storefront", S, TM,
          "Team Storefront owns the Notification Service, which sends order and invoice e-mails.", 1.0),
        t("Elena Petrova", "leads", "Team Payments", PR, TM,
          "Team Payments is led by Elena Petrova.", 1.0),
        t("Team Payments", "part of", "Finance Engineering", TM, TM,
          "Team Payments is part of the Finance Engineering group.", 1.0),
        t("Payments API", "owned by", "Team Payments", S, TM,
          "Team Payments owns the Payments API.", 1.0),
        t("Ledger Service", "owned by", "Team Payments", S, TM,
          "Team Payments owns the Ledger Service.", 1.0),
        t("Billing Service", "owned by", "Team Payments", S, TM,
          "Team Payments owned the Billing Service until 2023-11-01.", 1.0,
          valid_to="2023-11-01"),
        t("Billing Service", "owned by", "Команда биллинга", S, TM,
          "Команда биллинга has owned the Billing Service since 2023-11-01.", 1.0,
          valid_from="2023-11-01"),
        t("Анна Смирнова", "leads", "Команда биллинга", PR, TM,
          "Команда биллинга is led by Анна Смирнова.", 1.0),
        t("Команда биллинга", "part of", "Finance Engineering", TM, TM,
          "Команда биллинга is, like Team Payments, part of Finance Engineering.", 1.0),
        t("Marcus Lee", "leads", "Team Identity", PR, TM,
          "Team Identity is led by Marcus Lee.", 1.0),
        t("AuthzService", "owned by", "Team Identity", S, TM,
          "Team Identity owns AuthzService, the authorization policy engine.", 1.0),
        t("AuthService", "owned by", "Team Identity", S, TM,
          "Team Identity owned AuthService from 2021 until 2024-03-01.", 1.0,
          valid_to="2024-03-01"),
        t("AuthService", "owned by", "Team Platform Security", S, TM,
          "Team Platform Security has owned AuthService since 2024-03-01.", 1.0,
          valid_from="2024-03-01"),
        t("Priya Raman", "leads", "Team Platform Security", PR, TM,
          "Team Platform Security is led by Priya Raman.", 1.0),
        t("nw-auth-client", "owned by", "Team Platform Security", LIB, TM,
          "Team Platform Security owns the nw-auth-client library.", 0.9),
        t("Jonas Weber", "leads", "Team Platform Infrastructure", PR, TM,
          "Team Platform Infrastructure is led by Jonas Weber.", 1.0),
        t("Team Platform Infrastructure", "operates", "Kubernetes", TM, PD,
          "Team Platform Infrastructure operates the Kubernetes clusters k8s-eu-1, k8s-eu-2 and k8s-ru-1.", 1.0),
    ],
}


# ---------------------------------------------------------------------------- titles


def _title(rel: str, text: str) -> str:
    """Same rule as ``kg.documents``: ATX heading for Markdown, setext for reST, else the stem."""
    suffix = Path(rel).suffix.lower()
    if suffix == ".md":
        m = re.search(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", text, re.MULTILINE)
        if m:
            return m.group(2).strip()
    if suffix in {".md", ".rst"}:
        lines = text.split("\n")
        for i in range(len(lines) - 1):
            title, under = lines[i].rstrip(), lines[i + 1].rstrip()
            if (
                title.strip()
                and len(set(under)) == 1
                and under[0] in "=-~^*+#"
                and len(under) >= len(title.strip())
            ):
                return title.strip()
    return Path(rel).stem


# ---------------------------------------------------------------------------- build


def _doc_paths() -> list[str]:
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file())


def _validate(rel: str, rows: list[dict]) -> None:
    for i, row in enumerate(rows):
        where = f"{rel} triplet {i}"
        for key in ("subject", "predicate", "object", "description"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise SystemExit(f"{where}: empty {key}")
        for key in ("subject_type", "object_type"):
            if row[key] not in TYPES:
                raise SystemExit(f"{where}: unknown {key} {row[key]!r}")
        if not 0.0 <= row["weight"] <= 1.0:
            raise SystemExit(f"{where}: weight out of range")
        for key in ("valid_from", "valid_to"):
            if key in row and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", row[key]):
                raise SystemExit(f"{where}: bad {key} {row[key]!r}")
        if "valid_from" in row and "valid_to" in row and row["valid_to"] < row["valid_from"]:
            raise SystemExit(f"{where}: valid_to before valid_from")


# Other names a document itself states for an entity ("All three names refer to this one
# service."): written as the optional "entities" declarations of the import format.
ENTITIES: dict[str, list[dict[str, object]]] = {
    "services/auth-service.md": [
        {"name": "AuthService", "type": "Service", "aliases": ["OAuth Server", "auth-svc"],
         "description": "Northwind Cloud's OAuth 2.0 / OpenID Connect authorization server."},
    ],
}


def build() -> str:
    paths = _doc_paths()
    missing = sorted(set(paths) - set(TRIPLETS))
    extra = sorted(set(TRIPLETS) - set(paths))
    if missing or extra:
        raise SystemExit(f"documents without triplets: {missing}; triplets without documents: {extra}")
    lines = []
    for rel in paths:
        text = (DOCS / rel).read_text(encoding="utf-8")
        rows = TRIPLETS[rel]
        _validate(rel, rows)
        record: dict[str, object] = {"id": rel, "title": _title(rel, text), "text": text}
        if rel in ENTITIES:
            record["entities"] = ENTITIES[rel]
        record["triplets"] = rows
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    content = build()
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != content:
            print(f"{OUT.name} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{OUT.name} is up to date")
        return 0
    OUT.write_text(content, encoding="utf-8")
    for rel in _doc_paths():
        print(f"{len(TRIPLETS[rel]):3d}  {rel}")
    print(f"{sum(len(v) for v in TRIPLETS.values()):3d}  total -> {OUT.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
