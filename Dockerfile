# The operator image, in two stages. The first installs the pinned runtime dependencies
# (requirements.lock) and then the package itself, without dependencies, into a venv;
# the second keeps only that venv and operator/main.py, at the path the Deployment names,
# so that Kopf, which puts the script's folder first on sys.path, finds no copy of the
# package beside it and runs the installed one. Build:
#   docker build --build-arg VERSION=0.2.0 -t jobarchive:0.2.0 .
# VERSION is the package's version where no .git is copied in (setuptools-scm's
# SETUPTOOLS_SCM_PRETEND_VERSION); it defaults to the newest release.
FROM python:3.11-slim AS build

ARG VERSION=0.2.0
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SETUPTOOLS_SCM_PRETEND_VERSION=${VERSION}

RUN python -m venv /venv
WORKDIR /src
COPY requirements.lock ./
RUN /venv/bin/pip install --no-compile -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY operator/ operator/
RUN /venv/bin/pip install --no-compile --no-deps .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/venv/bin:$PATH

RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin jobarchive

COPY --from=build /venv /venv
WORKDIR /app
COPY operator/main.py operator/main.py

USER 10001
# Kopf's health endpoint, the Prometheus metrics and the API (the operator's 8081;
# `jobarchive serve` in manifests/reader/ on 8080). A test reads these against the
# manifests' containerPorts.
EXPOSE 8080 8000 8081
CMD ["kopf", "run", "--all-namespaces", "--peering=jobarchive", \
     "--liveness=http://0.0.0.0:8080/healthz", "operator/main.py"]
