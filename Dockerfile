# The operator image: runtime dependencies only, a non-root user, the command the
# Deployment runs. Build: docker build -t jobarchive:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1

RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin jobarchive

WORKDIR /app
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN pip install --no-compile .

USER 10001
# Kopf's health endpoint, the Prometheus metrics and the API (the operator's 8081;
# `jobarchive serve` in manifests/reader/ on 8080). A test reads these against the
# manifests' containerPorts.
EXPOSE 8080 8000 8081
CMD ["kopf", "run", "--all-namespaces", "--peering=jobarchive", \
     "--liveness=http://0.0.0.0:8080/healthz", "operator/main.py"]
