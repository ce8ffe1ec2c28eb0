# tcfl API: slim, non-root, two stages (build the virtualenv, then copy only it).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY prompts ./prompts
RUN pip install ".[postgres]"

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TCFL_DATABASE_URL=sqlite:////data/tcfl.db
RUN groupadd --system tcfl && useradd --system --gid tcfl --home-dir /data --shell /usr/sbin/nologin tcfl \
    && mkdir -p /data && chown tcfl:tcfl /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /data
USER tcfl
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=8).status == 200 else 1)"]
CMD ["tcfl", "serve", "--host", "0.0.0.0", "--port", "8000"]
