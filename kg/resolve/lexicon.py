"""The Russian-English lexicon of name words, and the well-known short names.

Why a lexicon: a Russian name and its English name share no letters when one translates the
other («сервис аутентификации» / ``AuthService``, «Министерство финансов» / ``Ministry of
Finance``); spelling and transliteration cannot meet them, and a multilingual encoder
proposes such pairs without telling a translation from a neighbour (``authentication`` and
``authorization`` sit close in every embedding space). The words that names are built from
in a company's documents are few (service, gateway, ministry, code, department, regulation,
payment ...): a table of them, read and extended by the team (the ``translations`` and
``names`` sections of ``KG_RESOLVE__ABBREVIATIONS_FILE``), turns both names into one
language-neutral key (``normalize.Normalizer.concept``).

Keys are written in their dictionary form; each word of a key is reduced to its lemma when the
table is built, so «железная дорога» matches «железных дорог». Values are English words; a
value may be empty (the word names no identity: «компания», «город»).

``KNOWN_NAMES`` are short names that stand for a longer one by convention, not by any rule a
resolver could find (``Минфин`` for «Министерство финансов», ``СПб`` for «Санкт-Петербург»):
an entry makes both one name wherever they appear.
"""

from __future__ import annotations

from collections.abc import Mapping

# fmt: off
DEFAULT_TRANSLATIONS: Mapping[str, str] = {
    # software and services
    "сервис": "service", "служба": "service", "микросервис": "service", "система": "system",
    "платформа": "platform", "приложение": "application", "модуль": "module",
    "компонент": "component", "шлюз": "gateway", "база": "database", "база данных": "database",
    "хранилище": "storage", "хранилище данных": "warehouse", "очередь": "queue",
    "кэш": "cache", "кеш": "cache", "журнал": "log", "лог": "log", "логирование": "logging",
    "мониторинг": "monitoring", "аутентификация": "authentication",
    "авторизация": "authorization", "идентификация": "identity", "доступ": "access",
    "управление": "management", "пользователь": "user", "клиент": "client",
    "заказ": "order", "возврат": "return", "поиск": "search", "поисковый": "search",
    "платёж": "payment", "платежный": "payment", "оплата": "payment", "счёт": "account",
    "биллинг": "billing", "уведомление": "notification", "сообщение": "message",
    "рассылка": "mailing", "почта": "mail", "почтовый": "mail", "доставка": "delivery",
    "склад": "warehouse", "складской": "warehouse", "каталог": "catalog",
    "товар": "product", "продукт": "product", "корзина": "cart", "цена": "price",
    "ценообразование": "pricing", "скидка": "discount", "отчёт": "report",
    "отчётность": "reporting", "аналитика": "analytics", "аналитический": "analytics",
    "файл": "file", "файловый": "file", "документ": "document", "документооборот": "document flow",
    "хранение": "storage", "резервный": "backup", "копия": "copy", "конфигурация": "configuration",
    "настройка": "settings", "профиль": "profile", "сессия": "session", "токен": "token",
    "ключ": "key", "секрет": "secret", "сертификат": "certificate", "шифрование": "encryption",
    "безопасность": "security", "информационный": "information", "информация": "information",
    "защита": "protection", "данные": "data", "персональный": "personal", "расписание": "schedule",
    "планировщик": "scheduler", "задача": "task", "обработка": "processing",
    "обработчик": "handler", "интеграция": "integration", "адаптер": "adapter",
    "маршрутизация": "routing", "балансировщик": "balancer", "прокси": "proxy",
    "сеть": "network", "сетевой": "network", "сервер": "server", "кластер": "cluster",
    "инфраструктура": "infrastructure", "развертывание": "deployment", "сборка": "build",
    "тестирование": "testing", "тест": "test", "разработка": "development",
    "рекомендация": "recommendation", "рекомендательный": "recommendation",
    "перевод": "translation", "курс": "rate", "валюта": "currency", "обмен": "exchange",
    "тариф": "tariff", "тарификация": "rating", "подписка": "subscription", "лимит": "limit",
    "ограничение": "limit", "квота": "quota", "событие": "event", "шина": "bus",
    "шина данных": "data bus", "поток": "stream", "контракт": "contract", "договор": "contract",
    "соглашение": "agreement", "справочник": "directory", "реестр": "registry",
    "учёт": "accounting", "учетный": "accounting", "запись": "record", "учётная запись": "account",
    "карта": "card", "кошелёк": "wallet", "касса": "checkout", "чек": "receipt",
    "личный кабинет": "account portal", "портал": "portal", "сайт": "site", "витрина": "storefront",
    "мобильный": "mobile", "веб": "web", "интерфейс": "interface", "панель": "panel",
    "администрирование": "administration", "администратор": "administrator",
    "единый вход": "single sign on", "уровень обслуживания": "service level",
    "проект": "project", "управление проектами": "project management", "команда": "team",
    "платформенный": "platform", "инцидент": "incident", "сбой": "outage",
    "многофакторный": "multi factor", "двухфакторный": "two factor",
    "облако": "cloud", "облачный": "cloud", "реплика": "replica", "репликация": "replication",
    "резервное копирование": "backup", "оповещение": "alerting", "метрика": "metric",
    "дашборд": "dashboard", "конвейер": "pipeline", "релиз": "release", "выпуск": "release",
    "версия": "version", "окружение": "environment", "среда": "environment",
    "продуктивный": "production", "шаблон": "template", "хранилище ключей": "key vault",
    "каталог услуг": "service catalog", "справочная": "help", "база знаний": "knowledge base",
    "вики": "wiki", "чат": "chat", "бот": "bot", "голосовой": "voice", "звонок": "call",
    "колл-центр": "call center", "контакт-центр": "contact center", "заявка": "request",
    "обращение": "ticket", "инцидент-менеджмент": "incident management", "сотрудник": "employee",
    "партнёр": "partner", "контрагент": "counterparty", "заказчик": "customer",
    "покупатель": "customer", "подрядчик": "contractor", "арендатор": "tenant",
    # organisations, departments, roles
    "министерство": "ministry", "министр": "minister", "ведомство": "agency",
    "агентство": "agency", "комитет": "committee", "комиссия": "commission",
    "департамент": "department", "отдел": "department", "управление кадров": "hr",
    "кадры": "hr", "кадровый": "hr", "персонал": "hr", "бухгалтерия": "accounting",
    "бухгалтерский": "accounting", "финансы": "finance", "финансовый": "finance",
    "экономика": "economy", "экономический": "economic", "развитие": "development",
    "торговля": "trade", "промышленность": "industry", "промышленный": "industrial",
    "транспорт": "transport", "транспортный": "transport", "энергетика": "energy",
    "здравоохранение": "health", "образование": "education", "наука": "science",
    "юстиция": "justice", "внутренний": "internal", "иностранный": "foreign", "дело": "affairs",
    "оборона": "defence", "налог": "tax", "налоговый": "tax", "таможня": "customs",
    "таможенный": "customs", "казначейство": "treasury", "пенсионный": "pension",
    "фонд": "fund", "страхование": "insurance", "страховой": "insurance",
    "социальный": "social", "федеральный": "federal", "государственный": "state",
    "муниципальный": "municipal", "региональный": "regional", "центральный": "central",
    "национальный": "national", "предприятие": "enterprise", "банк": "bank",
    "биржа": "exchange", "компания": "",
    "фирма": "", "корпорация": "", "холдинг": "holding", "группа": "group",
    "лаборатория": "lab", "институт": "institute", "университет": "university",
    "академия": "academy", "школа": "school", "центр": "center", "совет": "council",
    "правление": "board", "директор": "director", "генеральный": "general",
    "служба безопасности": "security", "дирекция": "directorate", "филиал": "branch",
    "представительство": "office", "офис": "office", "поддержка": "support",
    "техническая поддержка": "support", "продажа": "sales", "закупка": "procurement",
    "логистика": "logistics", "маркетинг": "marketing", "юридический": "legal",
    "правовой": "legal", "качество": "quality", "железная дорога": "railway",
    "железнодорожный": "railway", "дорога": "road", "авиалиния": "airline",
    "почта россии": "russian post", "связь": "communications", "телеком": "telecom",
    "нефть": "oil", "газ": "gas", "энергия": "energy", "электросеть": "grid",
    "правительство": "government", "администрация": "administration", "мэрия": "city hall",
    "суд": "court", "верховный": "supreme", "арбитражный суд": "arbitration court",
    "прокуратура": "prosecutor", "полиция": "police", "больница": "hospital",
    "поликлиника": "clinic", "музей": "museum", "театр": "theatre", "библиотека": "library",
    "издательство": "publisher", "агрегатор": "aggregator", "маркетплейс": "marketplace",
    "магазин": "store", "интернет-магазин": "online store", "ресторан": "restaurant",
    "авиакомпания": "airline", "аэрофлот": "aeroflot",
    # law and policy
    "кодекс": "code", "трудовой": "labour", "гражданский": "civil", "уголовный": "criminal",
    "административный": "administrative", "земельный": "land", "жилищный": "housing",
    "семейный": "family", "бюджетный": "budget", "арбитражный": "arbitration",
    "процессуальный": "procedure", "закон": "law", "федеральный закон": "federal law",
    "конституция": "constitution", "постановление": "resolution", "приказ": "order",
    "распоряжение": "directive", "указ": "decree", "положение": "regulation",
    "регламент": "regulation", "правило": "rule", "политика": "policy",
    "инструкция": "instruction", "стандарт": "standard", "требование": "requirement",
    "оплата труда": "remuneration", "заработный плата": "salary", "зарплата": "salary",
    "премирование": "bonus", "премия": "bonus", "отпуск": "leave", "командировка": "business trip",
    "увольнение": "dismissal", "найм": "hiring", "обучение": "training",
    "охрана труда": "occupational safety", "конфиденциальность": "confidentiality",
    "коммерческий тайна": "trade secret", "тайна": "secret", "этика": "ethics",
    "деловой": "business", "поведение": "conduct", "кодекс поведения": "code of conduct",
    "соответствие": "compliance", "противодействие": "countering", "коррупция": "corruption",
    "отмывание": "laundering", "аудит": "audit", "проверка": "inspection", "риск": "risk",
    "претензия": "claim", "жалоба": "complaint", "гарантия": "warranty",
    "ответственность": "liability", "поставка": "supply", "поставщик": "supplier",
    "перевозка": "carriage", "перевозчик": "carrier", "груз": "cargo", "грузовой": "cargo",
    "экспедирование": "forwarding", "накладная": "waybill", "счёт-фактура": "invoice",
    "акт": "act", "приложение к договору": "annex", "спецификация": "specification",
    "устав": "charter", "протокол": "protocol", "заявление": "application",
    "справка": "certificate", "доверенность": "power of attorney", "руководство": "guide",
    "стратегия": "strategy", "план": "plan", "программа": "program", "концепция": "concept",
    "методика": "methodology", "порядок": "procedure", "процедура": "procedure",
    "лицензия": "license", "патент": "patent", "сертификация": "certification",
    "персональные данные": "personal data", "добавленная стоимость": "value added",
    "доход": "income", "физическое лицо": "individual", "юридическое лицо": "legal entity",
    "медицинский": "medical", "обязательный": "mandatory", "добровольный": "voluntary",
    "международный стандарт": "international standard",
    "научно-исследовательский": "research", "исследовательский": "research",
    "дорожное движение": "road traffic", "инспекция": "inspectorate",
    "информационные технологии": "information technology",
    # places
    "россия": "russia", "российский": "russian", "российская федерация": "russian federation",
    "рф": "russian federation", "москва": "moscow", "московский": "moscow",
    "санкт-петербург": "saint petersburg", "санкт": "saint", "петербург": "petersburg",
    "петербургский": "petersburg", "ленинградский": "leningrad", "новосибирск": "novosibirsk",
    "екатеринбург": "yekaterinburg", "нижний новгород": "nizhny novgorod",
    "казань": "kazan", "область": "oblast", "край": "krai", "республика": "republic",
    "город": "", "округ": "district", "район": "district", "улица": "street",
    "гостиница": "hotel", "отель": "hotel", "аэропорт": "airport", "вокзал": "station",
    "станция": "station", "порт": "port", "завод": "plant", "фабрика": "factory",
    "северный": "north", "южный": "south", "западный": "west", "восточный": "east",
    "европа": "europe", "европейский": "european", "америка": "america", "китай": "china",
    "китайский": "chinese", "германия": "germany", "казахстан": "kazakhstan",
    "беларусь": "belarus", "украина": "ukraine", "сша": "usa",
    "страна": "country", "река": "river", "озеро": "lake", "гора": "mountain",
    "площадь": "square", "проспект": "avenue", "мост": "bridge", "остров": "island",
    "море": "sea", "залив": "bay", "полуостров": "peninsula", "крым": "crimea",
    "сибирь": "siberia", "урал": "urals", "дальний восток": "far east", "кавказ": "caucasus",
    "англия": "england", "франция": "france", "италия": "italy", "испания": "spain",
    "япония": "japan", "индия": "india", "турция": "turkey", "польша": "poland",
    "финляндия": "finland", "швеция": "sweden", "норвегия": "norway", "грузия": "georgia",
    "армения": "armenia", "узбекистан": "uzbekistan", "киргизия": "kyrgyzstan",
    # common modifiers
    "новый": "new", "старый": "old", "главный": "main", "основной": "main",
    "общий": "general", "единый": "unified", "открытый": "open", "закрытый": "closed",
    "публичный": "public", "частный": "private", "акционерный": "joint stock",
    "международный": "international", "мировой": "world", "первый": "first",
    "второй": "second", "большой": "big", "малый": "small", "средний": "medium",
}

# Short names that stand for longer ones by convention (both directions are one name).
KNOWN_NAMES: Mapping[str, str] = {
    "Минфин": "Министерство финансов", "MinFin": "Ministry of Finance",
    "Минэкономразвития": "Министерство экономического развития",
    "Минэнерго": "Министерство энергетики", "Минтранс": "Министерство транспорта",
    "Минпромторг": "Министерство промышленности и торговли",
    "Минздрав": "Министерство здравоохранения", "Минюст": "Министерство юстиции",
    "Минобороны": "Министерство обороны", "Минтруд": "Министерство труда",
    "Минцифры": "Министерство цифрового развития", "Минобрнауки": "Министерство науки",
    "МИД": "Министерство иностранных дел", "МВД": "Министерство внутренних дел",
    "МЧС": "Министерство по чрезвычайным ситуациям", "ФНС": "Федеральная налоговая служба",
    "ФТС": "Федеральная таможенная служба", "ФАС": "Федеральная антимонопольная служба",
    "ФСБ": "Федеральная служба безопасности", "ЦБ": "Центральный банк",
    "Роскомнадзор": "Федеральная служба по надзору в сфере связи",
    "РКН": "Роскомнадзор", "Росстат": "Федеральная служба государственной статистики",
    "Росреестр": "Федеральная служба государственной регистрации",
    "Сбер": "Сбербанк", "ВТБ": "Внешторгбанк", "РЖД": "Российские железные дороги",
    "СПб": "Санкт-Петербург", "Питер": "Санкт-Петербург", "Петербург": "Санкт-Петербург",
    "Мск": "Москва", "Подмосковье": "Московская область", "Ленобласть": "Ленинградская область",
    "ЕКБ": "Екатеринбург", "Нижний": "Нижний Новгород",
    "ФЗ": "федеральный закон", "FZ": "federal law", "ТК": "Трудовой кодекс",
    "ГК": "Гражданский кодекс", "НК": "Налоговый кодекс", "УК": "Уголовный кодекс",
    "КоАП": "Кодекс об административных правонарушениях",
    "АПК": "Арбитражный процессуальный кодекс",
    "ИБ": "информационная безопасность", "БД": "база данных", "ИТ": "информационные технологии",
    "ПО": "программное обеспечение", "ИС": "информационная система",
    "ЛК": "личный кабинет", "АБ": "банк",
    "НДС": "налог на добавленную стоимость", "VAT": "value added tax",
    "НДФЛ": "налог на доходы физических лиц", "ПФР": "Пенсионный фонд",
    "СФР": "Социальный фонд", "ФСС": "Фонд социального страхования",
    "ОМС": "обязательное медицинское страхование", "ДМС": "добровольное медицинское страхование",
    "МСФО": "международные стандарты финансовой отчётности",
    "IFRS": "international financial reporting standards",
    "ЕГРЮЛ": "Единый государственный реестр юридических лиц",
    "ГИБДД": "Государственная инспекция безопасности дорожного движения",
    "НИИ": "научно-исследовательский институт", "МГУ": "Московский государственный университет",
    "СПбГУ": "Санкт-Петербургский государственный университет",
}
# fmt: on

# English words that name one concept (the lexicon's values use the first).
ENGLISH_SYNONYMS: Mapping[str, str] = {
    "labor": "labour", "railroad": "railway", "railways": "railway", "authn": "authentication",
    "defense": "defence", "center": "centre", "catalogue": "catalog", "personnel": "hr",
    "wage": "salary", "payroll": "salary", "regulations": "regulation", "rules": "rule",
    "st": "saint", "laboratory": "lab", "financial": "finance", "pay": "remuneration",
    "compensation": "remuneration",
    "oblast": "oblast", "region": "oblast", "province": "oblast", "firm": "", "city": "",
    "town": "", "company": "", "department": "", "division": "", "no": "", "nr": "", "number": "",
}  # fmt: skip

# Words that qualify a name by its country inside one country's documents («Банк России» is
# the Bank of Russia, «Трудовой кодекс РФ» the Labour Code): left out of the concept key.
COUNTRY_QUALIFIERS: frozenset[str] = frozenset(
    {"russia", "russian", "federation", "rf", "rossii", "rossiyskoy", "rossiyskaya"}
)
