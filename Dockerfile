# The kg API service (see compose.yaml). Neo4j runs in its own container.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md ./
COPY kg ./kg
COPY api ./api
COPY cli ./cli
COPY schema ./schema
COPY neo4j-server ./neo4j-server
RUN pip install --no-cache-dir . && useradd --create-home kg
USER kg
EXPOSE 8000
CMD ["kg", "serve", "--host", "0.0.0.0", "--port", "8000"]
