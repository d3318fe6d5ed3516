# `orc serve` for Azure Container Apps (or any container host): the pinned requirements, then orc itself.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# A Unicode font for conversation exports as PDF (without one, non-Latin-1 characters are replaced).
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY pyproject.toml README.md ./
COPY orc ./orc
COPY mcp_server ./mcp_server
COPY prompts ./prompts
RUN pip install --no-deps . \
    && useradd --create-home --uid 10001 orc

USER orc
WORKDIR /home/orc
ENV ORC_HOME=/home/orc/.orc
EXPOSE 8000
CMD ["orc", "serve", "--host", "0.0.0.0", "--port", "8000"]
