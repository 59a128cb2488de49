# The kg API service (see compose.yaml and docs/api.md). Neo4j runs in its own container.
# Binding 0.0.0.0 turns bearer-key auth on: set KG_API__API_KEYS or the server refuses to start.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md ./
COPY kg ./kg
COPY api ./api
COPY cli ./cli
COPY schema ./schema
COPY neo4j-server ./neo4j-server
RUN pip install --no-cache-dir '.[otlp]' && useradd --create-home kg
USER kg
EXPOSE 8000
# /health needs no key; 503 (Neo4j down) counts as unhealthy
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]
CMD ["kg", "serve", "--host", "0.0.0.0", "--port", "8000"]
