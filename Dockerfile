# The fieldguide app. Weaviate runs in its own container (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DISABLE_TELEMETRY=true \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    FIELDGUIDE_WEAVIATE_URL=http://weaviate:8080 \
    FIELDGUIDE_WEAVIATE_GRPC_PORT=50051

# llama-cpp-python builds from source on slim images
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY . /app
# CPU-only torch wheels keep the image small
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu .

EXPOSE 8000
CMD ["sh", "-c", "fieldguide ingest \"${FIELDGUIDE_DOCS_DIR:-/docs}\" && exec fieldguide serve --host 0.0.0.0 --port 8000"]
